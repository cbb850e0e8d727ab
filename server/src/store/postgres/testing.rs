//! [`Seed`](crate::store::testing::Seed) on PostgreSQL, written once for both backends in
//! [`crate::store::both::testing`].

use super::PgStore;

crate::store::both::testing::seed!(PgStore);
