//! Rebuilds the server when a migration is added or removed: `sqlx::migrate!` embeds the files
//! it finds, and cargo tracks those files but not their folder, so a new migration alone would
//! leave a binary that never runs it.
fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
