//! The agent runtime: a goal comes in, a model plans and calls tools that run
//! inside the session's sandbox under a policy, and every step is persisted as
//! an event before it is published.

pub mod tools;
