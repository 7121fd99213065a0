//! Sandbox port: what every sandbox backend offers.
