//! [`Seed`](crate::store::testing::Seed) on SQLite, written once for both backends in
//! [`crate::store::both::testing`].

use super::SqliteStore;

crate::store::both::testing::seed!(SqliteStore);
