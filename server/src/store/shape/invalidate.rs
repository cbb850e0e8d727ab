//! What each write invalidates in a store's [`Caches`], named for the write and called right
//! after its commit, so every backend forgets the same answers. A backend that keeps no
//! folder pages loses nothing by moving its (empty) listings on.

use crate::store::cache::Caches;

/// A new monitor: the folder pages that list, or count, it.
pub(crate) fn tasks_created(caches: &Caches) {
    caches.listings.moved_on();
}

/// The monitor `id` changed (its definition, folder, data or state) or went: it, and the
/// folder pages that show it.
pub(crate) fn task_changed(caches: &Caches, id: &str) {
    caches.tasks.invalidate(id);
    caches.listings.moved_on();
}

/// Monitors moved between folders: each of them, and every folder page.
pub(crate) fn tasks_moved<'a>(caches: &Caches, ids: impl IntoIterator<Item = &'a str>) {
    for id in ids {
        caches.tasks.invalidate(id);
    }
    caches.listings.moved_on();
}

/// A folder went with whatever it held: every monitor (which ones went is not read back) and
/// every folder page.
pub(crate) fn folder_deleted(caches: &Caches) {
    caches.tasks.clear();
    caches.listings.moved_on();
}

/// Folders were created, renamed or moved: every folder page.
pub(crate) fn folders_changed(caches: &Caches) {
    caches.listings.moved_on();
}

/// The service's secret was rotated: every monitor's definition may have been sealed again.
pub(crate) fn secret_rotated(caches: &Caches) {
    caches.tasks.clear();
    caches.listings.moved_on();
}

/// Every token of `user` went (a sign-out everywhere).
pub(crate) fn tokens_of(caches: &Caches, user: &str) {
    caches
        .tokens
        .invalidate_where(|_, (owner, _)| owner == user);
}

/// The token `hash` went.
pub(crate) fn token(caches: &Caches, hash: &str) {
    caches.tokens.invalidate(hash);
}

/// Every token of `user` but `keep` went (a new password).
pub(crate) fn tokens_but(caches: &Caches, user: &str, keep: &str) {
    caches
        .tokens
        .invalidate_where(|hash, (owner, _)| owner == user && hash != keep);
}

/// A check of the monitor `task` was stored: its latest data, noise notice and masks are the
/// check's now. Whether it moved a folder's counts of failing monitors (and so the folder
/// pages) only the backend can tell, and says so itself.
pub(crate) fn checked(caches: &Caches, task: &str) {
    caches.tasks.invalidate(task);
}
