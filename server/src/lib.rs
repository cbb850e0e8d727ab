//! The `wachet` command line and REST service (`wachet serve`), frontends of the wachet engine.
//!
//! The data flows one way: [`cli`] parses what the user typed and starts [`service`], which
//! serves the [`api`] and the [`web`] interface; the API keeps everything in a [`store::Store`] and reaches the engine only
//! through its public API (`wachet::Checker`, `wachet::model`, `wachet::diff`).

pub mod api;
pub mod cli;
pub mod connections;
pub mod metrics;
pub mod notify;
pub mod schedule;
pub mod secrets;
pub mod service;
pub mod store;
pub mod web;
