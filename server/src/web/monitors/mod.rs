//! A monitor's pages: its own page with pausing and resuming, the form that creates and edits
//! it with its preview, point-and-click picker and step recorder, its history and differences, a Portal
//! monitor's crawled pages, deleting it, and the live updates of its state.

pub(crate) mod delete;
pub(crate) mod diff;
pub(crate) mod edit;
pub(crate) mod form;
pub(crate) mod history;
pub(crate) mod live;
pub(crate) mod page;
pub(crate) mod pages;
pub(crate) mod pick_store;
pub(crate) mod picker;
pub(crate) mod picker_page;
pub(crate) mod portal;
pub(crate) mod preview;
pub(crate) mod record;
pub(crate) mod record_page;
pub(crate) mod record_store;
pub(crate) mod show;
pub(crate) mod steps_form;
