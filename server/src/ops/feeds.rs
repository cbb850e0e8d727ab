//! Atom feeds of changes: a user's feeds (of all monitors, a folder with its subfolders, or one
//! monitor), each reached by a secret address; create or renew one (a new secret, the old
//! address stops working), delete one, find whose feed a secret opens, and the latest changes
//! a feed shows. The secret is kept as its hash and sealed with the service's key, so the
//! owner's pages can show the address again.

use super::{Ctx, OpError, UserId};
use crate::store::{FeedChange, FeedRecord, FeedScope, FeedSecret, now_millis};

/// Where the feed of `scope` is served (without its secret).
pub fn path(scope: &FeedScope) -> String {
    match scope {
        FeedScope::All => "/feeds/all.atom".to_string(),
        FeedScope::Folder(id) => format!("/feeds/folders/{id}.atom"),
        FeedScope::Monitor(id) => format!("/feeds/monitors/{id}.atom"),
    }
}

/// The feed's whole address with its secret, for a feed reader, on the service at `base`.
pub fn url(base: &str, scope: &FeedScope, secret: &str) -> String {
    format!("{base}{}?key={secret}", path(scope))
}

/// The scope a request names: `all`, or `folder` or `monitor` with the target's id.
pub fn scope(kind: Option<&str>, target: Option<String>) -> Result<FeedScope, OpError> {
    let target = target.filter(|t| !t.trim().is_empty());
    match (kind.unwrap_or("").trim(), target) {
        ("all", _) => Ok(FeedScope::All),
        ("folder", Some(id)) => Ok(FeedScope::Folder(id)),
        ("monitor", Some(id)) => Ok(FeedScope::Monitor(id)),
        ("folder" | "monitor", None) => Err(OpError::field("targetId", "is required")),
        _ => Err(OpError::field("scope", "must be all, folder or monitor")),
    }
}

/// The user's feeds, without their secrets.
pub async fn list(ctx: &Ctx, user: &UserId) -> Result<Vec<FeedRecord>, OpError> {
    Ok(ctx.store().feeds(user).await?)
}

/// Gives the user's feed of `scope` a new secret (creating the feed); the feed and its address
/// on the service at `base`. Another user's folder or monitor is [`OpError::NotFound`].
pub async fn renew(
    ctx: &Ctx,
    user: &UserId,
    scope: &FeedScope,
    base: &str,
) -> Result<(FeedRecord, String), OpError> {
    let secret = crate::secrets::new_token();
    let sealed = ctx
        .sealer()
        .seal(&secret, &seal_context(user, scope))
        .map_err(OpError::Internal)?;
    let stored = FeedSecret {
        hash: crate::secrets::sha256_hex(&secret),
        sealed,
    };
    let feed = ctx
        .store()
        .renew_feed(user, scope, &stored, now_millis())
        .await?;
    let url = url(base, &feed.scope, &secret);
    Ok((feed, url))
}

/// Deletes the user's feed `id`; its address is unknown from now on.
pub async fn delete(ctx: &Ctx, user: &UserId, id: &str) -> Result<(), OpError> {
    Ok(ctx.store().delete_feed(user, id).await?)
}

/// What the user's feed of `scope` is: none, one whose address (on the service at `base`) can
/// be shown, or one whose secret was kept only as its hash.
pub async fn shown(
    ctx: &Ctx,
    user: &UserId,
    scope: &FeedScope,
    base: &str,
) -> Result<Shown, OpError> {
    let feeds = list(ctx, user).await?;
    let Some(feed) = feeds.into_iter().find(|feed| &feed.scope == scope) else {
        return Ok(Shown::None);
    };
    let secret = feed
        .sealed_secret
        .as_deref()
        .and_then(|sealed| ctx.sealer().open(sealed, &seal_context(user, scope)));
    Ok(match secret {
        Some(secret) => Shown::Address(url(base, scope, &secret)),
        None => Shown::Hidden,
    })
}

/// What a page knows of the user's feed of its scope.
pub enum Shown {
    /// The user has none.
    None,
    /// One, with its whole address (with its secret).
    Address(String),
    /// One whose secret was kept only as its hash (made before secrets were sealed): its
    /// address cannot be shown again, only renewed.
    Hidden,
}

/// Whose feed of `scope` a reader may read: the owner of the feed whose secret is `key`, or
/// (`key` none) `signed_in` when that user has a feed of that scope.
pub async fn reader(
    ctx: &Ctx,
    scope: &FeedScope,
    key: Option<&str>,
    signed_in: Option<&UserId>,
) -> Result<Option<String>, OpError> {
    match key {
        Some(key) => {
            let hash = crate::secrets::sha256_hex(key);
            Ok(ctx
                .store()
                .feed_by_secret(&hash)
                .await?
                .filter(|feed| &feed.scope == scope)
                .map(|feed| feed.user_id))
        }
        None => {
            let Some(user) = signed_in else {
                return Ok(None);
            };
            let feeds = list(ctx, user).await?;
            Ok(feeds
                .iter()
                .any(|feed| &feed.scope == scope)
                .then(|| user.to_string()))
        }
    }
}

/// The latest `limit` changes of the monitors the user's feed of `scope` covers, newest first.
pub async fn changes(
    ctx: &Ctx,
    user: &UserId,
    scope: &FeedScope,
    limit: u32,
) -> Result<Vec<FeedChange>, OpError> {
    Ok(ctx.store().feed_changes(user, scope, limit).await?)
}

/// What the context of a feed's sealed secret is: its owner and address, so a sealed copy
/// opens only for the feed it was made for.
pub(super) fn seal_context(user: &UserId, scope: &FeedScope) -> String {
    format!("{user}\n{}", path(scope))
}
