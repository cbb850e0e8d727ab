//! The user's folder tree as the move and delete pages need it: the folders below a folder
//! (or the root), in order with their paths of names, and optionally the monitors in
//! them, walked through the store's own folder listing ([`crate::store::FolderStore::list_folder`],
//! what `GET /folder/list` reads) a page at a time, and bounded in folders and monitors.

use crate::ops::Ctx;
use crate::ops::OpError;
use crate::store::FolderKey;
use wachet::model::Folder;

/// Most folders walked; past it the tree is cut short (and says so).
pub(crate) const MAX_FOLDERS: usize = 2000;
/// Most monitor ids collected.
pub(crate) const MAX_MONITORS: usize = 10_000;
/// Items read per listing call.
const WALK_PAGE: u32 = 100;

/// A folder of the tree.
#[derive(Debug, Clone)]
pub(crate) struct TreeFolder {
    pub(crate) id: String,
    /// Its names from the walk's start down to it, `Shops / Tea`.
    pub(crate) path: String,
}

/// What a walk found.
#[derive(Debug, Default)]
pub(crate) struct Tree {
    /// Depth first, each folder's subfolders by name.
    pub(crate) folders: Vec<TreeFolder>,
    /// Monitors of the start folder and of every folder below, when asked for.
    pub(crate) monitors: Vec<String>,
    /// Whether a bound cut the walk short.
    pub(crate) capped: bool,
}

impl Tree {
    /// Whether `id` is one of the walked folders.
    pub(crate) fn contains(&self, id: &str) -> bool {
        self.folders.iter().any(|f| f.id == id)
    }

    /// The path of names of folder `id`.
    pub(crate) fn path_of(&self, id: &str) -> Option<&str> {
        self.folders
            .iter()
            .find(|f| f.id == id)
            .map(|f| f.path.as_str())
    }
}

/// A folder's name as shown.
pub(crate) fn name_of(folder: &Folder) -> &str {
    folder.name.as_deref().unwrap_or("(unnamed)")
}

/// Walks the folders below `start` (the root when `None`), with their monitors when
/// `monitors`. `NotFound` when `start` is not the user's.
pub(crate) async fn walk(
    state: &Ctx,
    user: &str,
    start: Option<&str>,
    monitors: bool,
) -> Result<Tree, OpError> {
    let mut tree = Tree::default();
    // Folders to visit, with their paths; the start is visited but not part of the result.
    let mut stack: Vec<(Option<String>, String)> = vec![(start.map(str::to_string), String::new())];
    let mut visiting_start = true;
    while let Some((folder, path)) = stack.pop() {
        if let (false, Some(id)) = (visiting_start, &folder) {
            tree.folders.push(TreeFolder {
                id: id.clone(),
                path: path.clone(),
            });
        }
        visiting_start = false;
        let mut children = Vec::new();
        let mut after: Option<FolderKey> = None;
        loop {
            let listing = crate::ops::folders::contents(
                state,
                user,
                folder.as_deref(),
                after.as_ref(),
                WALK_PAGE,
            )
            .await?;
            children.extend(listing.subfolders);
            if monitors {
                for task in listing.tasks {
                    if tree.monitors.len() >= MAX_MONITORS {
                        tree.capped = true;
                        break;
                    }
                    tree.monitors.extend(task.monitor().id.clone());
                }
            }
            match listing.next {
                // The subfolders come first; without monitors, their pages are all we need.
                Some(next) if (monitors || !next.in_tasks) && !tree.capped => after = Some(next),
                _ => break,
            }
        }
        // Depth first in name order: the stack takes the children last to first.
        for child in children.into_iter().rev() {
            if tree.folders.len() + stack.len() >= MAX_FOLDERS {
                tree.capped = true;
                continue;
            }
            let Some(id) = child.id.clone() else { continue };
            let child_path = if path.is_empty() {
                name_of(&child).to_string()
            } else {
                format!("{path} / {}", name_of(&child))
            };
            stack.push((Some(id), child_path));
        }
    }
    Ok(tree)
}
