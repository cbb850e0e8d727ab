//! What every page of the web interface shares: the layout, error pages and their type, the
//! sign-in session and the extractors that read it once, form reading, the one-use tokens and
//! turns, the folder tree walked once, an endpoint's schedule fields, and the words and formats
//! the pages write.

pub(crate) mod clock;
pub(crate) mod difference;
pub(crate) mod error;
pub(crate) mod extract;
pub(crate) mod form;
pub(crate) mod format;
pub(crate) mod layout;
pub(crate) mod once;
pub(crate) mod pages;
pub(crate) mod schedule;
pub(crate) mod session;
pub(crate) mod tree;
pub(crate) mod turns;
pub(crate) mod words;
