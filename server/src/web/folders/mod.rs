//! The folder pages: the listing of a folder (the root too) with quick-add, its forms to create,
//! rename, move and delete folders, where its notifications go, and the bulk actions on the monitors selected in a listing.

pub(crate) mod bulk;
pub(crate) mod edit;
pub(crate) mod list;
pub(crate) mod notify;
