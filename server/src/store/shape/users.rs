//! Users as stored: the row of a user, the rules of e-mail confirmation (how long an address
//! waits, how often it is mailed, how many may wait) and the cached owner of a token.

use crate::store::cache::Caches;
use crate::store::{EmailAddress, Millis, StoreError, UserRecord};
use wachet::model::NotificationEndpoint;

/// A user's row as [`USER_COLUMNS`] reads it.
pub(crate) type UserRow = (String, String, String, String, String, String, i64, String);

/// The columns of [`UserRow`], in its order.
pub(crate) const USER_COLUMNS: &str = "id, email, password_hash, api_key_hash, webhook_secret, \
                                       notification_endpoints, created_at, time_zone";

/// The user of `row`.
pub(crate) fn user(row: UserRow) -> Result<UserRecord, StoreError> {
    let (id, email, password_hash, api_key_hash, webhook_secret, endpoints, created_at, time_zone) =
        row;
    let notification_endpoints = serde_json::from_str(&endpoints)
        .map_err(|err| StoreError::Backend(format!("stored endpoints of user {id}: {err}")))?;
    Ok(UserRecord {
        id,
        email,
        password_hash,
        api_key_hash,
        webhook_secret,
        notification_endpoints,
        created_at,
        time_zone,
    })
}

/// A new user's endpoints as stored, once its e-mail address is found storable.
pub(crate) fn new_user_endpoints(user: &UserRecord) -> Result<String, StoreError> {
    super::refuse_nul("email", Some(&user.email))?;
    endpoints_json(&user.notification_endpoints)
}

/// Endpoints as stored (JSON).
pub(crate) fn endpoints_json(endpoints: &[NotificationEndpoint]) -> Result<String, StoreError> {
    serde_json::to_string(endpoints).map_err(|err| StoreError::Backend(err.to_string()))
}

/// What a new user whose e-mail address is taken gets.
pub(crate) fn email_taken() -> StoreError {
    StoreError::invalid("email", "a user with this e-mail address exists")
}

/// An e-mail address as its row `(address, confirmed_at, last_error)` gives it.
pub(crate) fn email_address(
    (address, confirmed_at, last_error): (String, Option<Millis>, Option<String>),
) -> EmailAddress {
    EmailAddress {
        address,
        confirmed: confirmed_at.is_some(),
        last_error,
    }
}

/// How long an unconfirmed address counts as waiting; after it, it may be asked for again.
const PENDING_FOR: Millis = 7 * 86_400_000;
/// The shortest time between two confirmation messages to one address.
const RESEND_AFTER: Millis = 3_600_000;
/// Most addresses of one user waiting for confirmation at once.
pub const MAX_PENDING_ADDRESSES: i64 = 20;

/// Whether a confirmation message to an address whose row says `known` (`confirmed_at`,
/// `requested_at`; `None` when it was never asked for) is to be asked for at `now`: not when
/// the address is confirmed or one went out within the hour. `resend` says the user asked
/// explicitly, so an address asked for lately is an error rather than nothing to do.
pub(crate) fn to_ask(
    known: Option<(Option<Millis>, Millis)>,
    now: Millis,
    resend: bool,
) -> Result<bool, StoreError> {
    match known {
        Some((Some(_), _)) => Ok(false),
        Some((None, requested_at)) if requested_at > now - RESEND_AFTER => {
            if resend {
                Err(StoreError::invalid(
                    "address",
                    "a confirmation message went to this address less than an hour ago",
                ))
            } else {
                Ok(false)
            }
        }
        _ => Ok(true),
    }
}

/// Addresses asked for after this time are still waiting at `now`.
pub(crate) fn waiting_since(now: Millis) -> Millis {
    now - PENDING_FOR
}

/// Refuses one more address when `pending` others of the user wait already.
pub(crate) fn room_to_wait(pending: i64) -> Result<(), StoreError> {
    if pending >= MAX_PENDING_ADDRESSES {
        return Err(StoreError::invalid(
            "notificationEndpoints",
            format!(
                "at most {MAX_PENDING_ADDRESSES} e-mail addresses may wait for confirmation at \
                 once"
            ),
        ));
    }
    Ok(())
}

/// The owner of the token `hash` at `now` as cached: `Some(answer)` when the cache knows,
/// `None` when the database is to be asked.
pub(crate) fn cached_owner(
    caches: &Caches,
    hash: &str,
    now: Millis,
) -> Option<Option<(String, Millis)>> {
    caches
        .tokens
        .get(hash)
        .map(|(owner, expires_at)| (expires_at > now).then_some((owner, expires_at)))
}

/// Keeps the owner of the token `hash` as read from the database.
pub(crate) fn cache_owner(caches: &Caches, hash: &str, found: &Option<(String, Millis)>) {
    if let Some(owner) = found {
        caches.tokens.put(hash, owner.clone());
    }
}
