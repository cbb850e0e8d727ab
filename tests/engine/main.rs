//! The engine's integration tests, one module a concern, in one test binary so the crate and
//! its dependencies are linked once: `cargo test --test engine` runs them all,
//! `cargo test --test engine render::` one module.

mod common;

mod alerts;
mod crawl;
mod engine_api;
mod extract_budget;
mod fetch;
mod fixtures;
mod location_proxies;
mod model;
mod news;
mod noise;
mod politeness;
mod render;
mod render_hostile;
mod render_inside;
mod render_tls;
mod steps;
mod validate;
mod xpath_conformance;
mod xpath_tree;
