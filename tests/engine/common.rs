//! What the engine's integration tests share: engines for the fixture servers on loopback and
//! the monitors the tests build. One test binary holds every test file as a module (so the
//! crate is linked once); helpers used by more than one file live here.

use std::time::Duration;
use wachet::model::ClientJobType;
use wachet::{Engine, Monitor};

/// An engine that may fetch loopback addresses (the fixture servers), giving up on a check
/// after `total`.
pub fn engine(total: Duration) -> Engine {
    Engine::builder()
        .allow_private_networks(true)
        .total_timeout(total)
        .build()
        .expect("an engine with the defaults builds")
}

/// A Portal monitor of `url` that follows links `depth` hops.
pub fn portal(url: impl Into<String>, depth: i32) -> Monitor {
    let mut m = Monitor::new(url);
    m.job_type = ClientJobType::Portal;
    m.crawling_depth = Some(depth);
    m
}

/// A monitor of `url` rendered by the browser.
pub fn dynamic(url: impl Into<String>) -> Monitor {
    let mut m = Monitor::new(url);
    m.dynamic_content = true;
    m
}
