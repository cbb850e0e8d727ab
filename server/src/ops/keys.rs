//! The service's secret key and its rotation. The key every process seals with (step secrets,
//! kept browser sessions, feed keys, the secret parts of notification URLs:
//! [`crate::secrets::Sealer`]) is made from the random secret the database keeps (which also
//! signs continuation tokens). A rotation ([`rotate`], `wachet rotate-key`) makes a new secret
//! and seals every sealed value again with the key made from it, in the same transaction that
//! stores the new secret ([`crate::store::UserStore::rotate_secret`]): because the secret lives
//! in the database beside the values, one transaction is enough to be crash-safe: a rotation
//! that stops half way (a crash, a failed write) leaves the old secret and every value as it
//! was, and running it again does the whole. No process may run on the database meanwhile
//! (each holds the key it read at start): [`rotate`] refuses while a worker beats.

use crate::notify::channel::url;
use crate::secrets::{Resealed, Sealer};
use crate::store::{Reseal, Rotation, SealedIn, Store, StoreError};

/// Why a rotation changed nothing.
#[derive(Debug, thiserror::Error)]
pub enum RotateError {
    /// Processes of the service run on the database: they would go on sealing with the old key.
    #[error(
        "{0} process(es) of the service run on this database ({1}): stop every `wachet serve` \
         first (a process killed without stopping counts for 30 s after its last beat)"
    )]
    Running(usize, String),
    /// A key could not be made.
    #[error("{0}")]
    Key(String),
    /// The store failed; nothing was changed.
    #[error("{0}; nothing was changed")]
    Store(#[from] StoreError),
}

/// Opens with the old key and seals with the new, under the context each value was sealed for.
struct Resealer {
    old: Sealer,
    new: Sealer,
}

impl Resealer {
    /// A value sealed whole (a feed's key, a session) under `context`.
    fn whole(&self, text: &str, context: &str) -> Resealed {
        let again = self
            .old
            .open(text, context)
            .and_then(|opened| self.new.seal(&opened, context).ok());
        match again {
            Some(text) => Resealed {
                text,
                resealed: 1,
                unopened: 0,
            },
            None => Resealed {
                text: text.to_string(),
                resealed: 0,
                unopened: 1,
            },
        }
    }
}

impl Reseal for Resealer {
    fn reseal(&self, place: SealedIn<'_>, text: &str) -> Resealed {
        match place {
            SealedIn::Text { user } => {
                let contexts = [crate::secrets::step_context(user), url::seal_context(user)];
                crate::secrets::reseal_text(&self.old, &self.new, text, &contexts)
            }
            SealedIn::Feed { user, scope } => {
                self.whole(text, &super::feeds::seal_context(user, scope))
            }
            SealedIn::Session { task } => self.whole(text, &crate::secrets::session_context(task)),
        }
    }
}

/// Replaces the service's secret with a new random one and seals every sealed value again with
/// the key made from it, all in one transaction; refused while a process of the service runs on
/// the store. What was sealed again, and what did not open with the old key either (left as it
/// was: it was of no use before).
pub async fn rotate(store: &dyn Store) -> Result<Rotation, RotateError> {
    let live = store.live_workers(crate::worker::LIVE).await?;
    if !live.is_empty() {
        let named: Vec<String> = live
            .iter()
            .map(|w| format!("{} pid {}", w.info.host, w.info.pid))
            .collect();
        return Err(RotateError::Running(live.len(), named.join(", ")));
    }
    let old_secret = store.paging_secret().await?;
    let new_secret = crate::secrets::random_hex(32);
    let resealer = Resealer {
        old: Sealer::new(&old_secret).map_err(RotateError::Key)?,
        new: Sealer::new(new_secret.as_bytes()).map_err(RotateError::Key)?,
    };
    Ok(store
        .rotate_secret(&old_secret, &new_secret, &resealer)
        .await?)
}
