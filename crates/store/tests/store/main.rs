//! The Store contract on SQLite and on Postgres (each engine's module runs
//! every case of `contract`, plus its specifics), in one test binary.

#[macro_use]
mod contract;

mod postgres;
mod sqlite;
