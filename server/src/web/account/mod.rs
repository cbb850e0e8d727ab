//! The person's own pages: signing in and out, settings (notification endpoints, secrets,
//! password, sessions, feeds), the notifications with their deliveries, the Atom feeds, and
//! moving monitors in and out (import and export).

pub(crate) mod feeds;
pub(crate) mod notifications;
pub(crate) mod settings;
pub(crate) mod signin;
pub(crate) mod transfer;
