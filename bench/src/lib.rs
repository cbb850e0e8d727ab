//! Crawl benchmarks of wachet against spider: a deterministic site generator ([`site`]), a
//! static server run as a separate process, both crawlers and the `compare` driver
//! ([`harness`]), and the rendered-crawl comparison with spider's chrome crawl ([`render`]). Used by the `wachet-bench` binary and the `crawl_vs_spider` criterion bench.
//! [`api`] loads the REST service (`wachet serve`) beside a static-file ceiling; [`schedule`]
//! runs its scheduler over thousands of monitors; [`noise`] scores false and missed alerts of
//! wachet and changedetection.io on a corpus of noisy pages; [`history`] weighs delta history
//! against the same history stored whole; [`steps`] weighs a check with a login and browser
//! steps, its session kept or not, against the same page rendered without; [`soak`] runs the
//! service for minutes under faulty hosts, API clients and a `kill -9`, and watches its memory,
//! descriptors and database; [`scale`] checks 10,000 monitors on SQLite and on PostgreSQL with
//! one to three worker processes.

pub mod api;
pub mod harness;
pub mod history;
pub mod noise;
pub mod parse_cost;
pub mod proc;
pub mod render;
pub mod scale;
pub mod schedule;
pub mod site;
pub mod soak;
pub mod steps;
