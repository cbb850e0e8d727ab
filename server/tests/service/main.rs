//! The service's integration tests: what `wachet serve` does over real HTTP, through a real
//! browser and on both databases. `api/` drives the REST API (and, for what the API starts,
//! the scheduler and delivery) as a user's script would; `web/` drives the web interface, over
//! HTTP and in real headless Chromium; `store/` holds the store's contract, every trait's
//! methods run on SQLite and on PostgreSQL alike; `support/` starts services, databases and
//! browsers for all of them.
//!
//! A test declared with [`both!`] runs twice, as `<name>::sqlite` on a temporary SQLite file
//! and as `<name>::postgres` on a fresh database of the private PostgreSQL cluster
//! ([`support::pg`]): every service or store it opens is of that backend. A test declared with
//! [`in_browser!`] runs on SQLite only; one declared with `#[tokio::test]` runs on SQLite only
//! and says why.

// Before the modules: each test file declares its tests with them.
/// One test on each backend, named `name::sqlite` and `name::postgres`:
/// - `both!(name)` or `both!(name, multi_thread)` (two worker threads) above `async fn name()`:
///   each service it starts runs on that backend ([`Backend::current`]);
/// - `both!(name, |store| async move { ... })`, or `both!(name, settings, |store| ...)`: a
///   store test, given a fresh store of that backend opened with `settings` (the defaults
///   when left out); a closure `|store, sql|` is also given a connection of its own to the
///   same database ([`Sql`]), for what no store call shows.
///
/// The PostgreSQL run is skipped, saying so, when PostgreSQL is not installed and `CI` is not
/// set ([`support::pg::available`]).
macro_rules! both {
    ($name:ident) => {
        both!(@ $name, #[tokio::test]);
    };
    ($name:ident, multi_thread) => {
        both!(@ $name, #[tokio::test(flavor = "multi_thread", worker_threads = 2)]);
    };
    (@ $name:ident, #[$test:meta]) => {
        mod $name {
            #[$test]
            async fn sqlite() {
                $crate::Backend::Sqlite.run(super::$name()).await;
            }

            #[$test]
            async fn postgres() {
                if $crate::support::pg::available() {
                    $crate::Backend::Postgres.run(super::$name()).await;
                }
            }
        }
    };
    ($name:ident, |$store:ident $(: $st:ty)?, $sql:ident $(: $qt:ty)?| $body:expr) => {
        both!(@store $name, ::wachet_server::store::sqlite::StoreSettings::default(),
            |$store $(: $st)?, $sql $(: $qt)?| $body);
    };
    ($name:ident, |$store:ident $(: $st:ty)?| $body:expr) => {
        both!(@store $name, ::wachet_server::store::sqlite::StoreSettings::default(),
            |$store $(: $st)?, _: $crate::Sql| $body);
    };
    ($name:ident, $settings:expr, |$store:ident $(: $st:ty)?, $sql:ident $(: $qt:ty)?| $body:expr) => {
        both!(@store $name, $settings, |$store $(: $st)?, $sql $(: $qt)?| $body);
    };
    ($name:ident, $settings:expr, |$store:ident $(: $st:ty)?| $body:expr) => {
        both!(@store $name, $settings, |$store $(: $st)?, _: $crate::Sql| $body);
    };
    (@store $name:ident, $settings:expr, $test:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            #[tokio::test]
            async fn sqlite() {
                $crate::store::on($crate::Backend::Sqlite, $settings, $test).await;
            }

            #[tokio::test]
            async fn postgres() {
                $crate::store::on($crate::Backend::Postgres, $settings, $test).await;
            }
        }
    };
}

/// A test that drives a real browser through the web interface, run on SQLite only (named
/// `NAME::sqlite` as [`both!`] names it): the pages reach the store through the same calls on
/// both backends, which the API's and the store's tests run on each, and a browser's minutes
/// are spent once.
macro_rules! in_browser {
    ($name:ident) => {
        in_browser!(@ $name, #[tokio::test]);
    };
    ($name:ident, multi_thread) => {
        in_browser!(@ $name, #[tokio::test(flavor = "multi_thread", worker_threads = 2)]);
    };
    (@ $name:ident, #[$test:meta]) => {
        mod $name {
            #[$test]
            async fn sqlite() {
                $crate::Backend::Sqlite.run(super::$name()).await;
            }
        }
    };
}

mod api;
mod store;
mod support;
mod web;

use support::*;
