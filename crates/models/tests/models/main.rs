//! The model providers against local stand-in servers, one module per
//! provider, in one test binary.

mod support;

mod anthropic;
mod factory;
mod openai;
mod scripted;
