//! Paging: page sizes and continuation tokens. A token is the keyset position where the next
//! page starts, bound to the list it came from (user and list id) and signed with the store's
//! paging secret, so it is opaque to clients, stable while new entries are written, and a
//! tampered token or one from another list is a 400, never a peek at other data.

use super::OpError;
use crate::store::{TimeKey, TimePage};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde::Serialize;
use serde::de::DeserializeOwned;
use sha2::Sha256;

/// Page size when `count` is not given.
pub const DEFAULT_COUNT: u32 = 50;
/// Largest page size.
pub const MAX_COUNT: u32 = 500;

/// Longest continuation token accepted (they are far shorter; this bounds the work on junk).
const MAX_TOKEN_LEN: usize = 2048;

/// The page size asked for, checked: 1 to 500, default 50.
pub fn page_size(count: Option<i64>) -> Result<u32, OpError> {
    match count {
        None => Ok(DEFAULT_COUNT),
        Some(n) if (1..=i64::from(MAX_COUNT)).contains(&n) => Ok(n as u32),
        Some(n) => Err(OpError::field(
            "count",
            format!("must be between 1 and {MAX_COUNT}, not {n}"),
        )),
    }
}

/// Reads a date-time query parameter ([`super::query::date_time`]) into UTC milliseconds.
pub fn date_time(field: &str, value: Option<&str>) -> Result<Option<i64>, OpError> {
    value
        .map(|v| {
            super::query::date_time(v)
                .map(|t| t.timestamp_millis())
                .map_err(|err| OpError::field(field, err))
        })
        .transpose()
}

/// A page of a newest-first list as a client asks for it: a time range, a size and where the
/// page starts (the previous page's token).
#[derive(Debug, Clone, Copy, Default)]
pub struct PageQuery<'a> {
    /// Oldest time included (a date-time as [`super::query::date_time`] reads it).
    pub from: Option<&'a str>,
    /// Newest time included.
    pub to: Option<&'a str>,
    /// Entries asked for, 1 to [`MAX_COUNT`], default [`DEFAULT_COUNT`].
    pub count: Option<i64>,
    /// The previous page's continuation token.
    pub token: Option<&'a str>,
}

/// Seals and opens continuation tokens with the service's paging secret.
#[derive(Clone)]
pub struct Cursors {
    keyed: Hmac<Sha256>,
}

impl Cursors {
    /// Tokens signed with `secret`.
    pub fn new(secret: &[u8]) -> Result<Self, String> {
        let keyed = <Hmac<Sha256> as Mac>::new_from_slice(secret)
            .map_err(|err| format!("paging secret: {err}"))?;
        Ok(Cursors { keyed })
    }

    fn mac(&self, scope: &str, payload: &[u8]) -> Hmac<Sha256> {
        let mut mac = self.keyed.clone();
        mac.update(scope.as_bytes());
        mac.update(&[0]);
        mac.update(payload);
        mac
    }

    /// A token for `key` in the list `scope`.
    pub fn seal<T: Serialize>(&self, scope: &str, key: &T) -> String {
        let payload = serde_json::to_vec(key).unwrap_or_default();
        let tag = self.mac(scope, &payload).finalize().into_bytes();
        format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(&payload),
            URL_SAFE_NO_PAD.encode(&tag[..16])
        )
    }

    /// The key in `token`, if it was sealed for `scope`; otherwise a 400 on `continuationToken`.
    pub fn open<T: DeserializeOwned>(&self, scope: &str, token: &str) -> Result<T, OpError> {
        let invalid =
            || OpError::field("continuationToken", "not a continuation token of this list");
        if token.len() > MAX_TOKEN_LEN {
            return Err(invalid());
        }
        let (payload, tag) = token.split_once('.').ok_or_else(invalid)?;
        let payload = URL_SAFE_NO_PAD.decode(payload).map_err(|_| invalid())?;
        let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| invalid())?;
        if tag.len() != 16 {
            return Err(invalid());
        }
        self.mac(scope, &payload)
            .verify_truncated_left(&tag)
            .map_err(|_| invalid())?;
        serde_json::from_slice(&payload).map_err(|_| invalid())
    }
}

impl Cursors {
    /// The page of a newest-first list asked for by these query parameters.
    pub fn time_page(
        &self,
        scope: &str,
        from: Option<&str>,
        to: Option<&str>,
        count: Option<i64>,
        token: Option<&str>,
    ) -> Result<TimePage, OpError> {
        Ok(TimePage {
            from: date_time("from", from)?,
            to: date_time("to", to)?,
            after: token.map(|t| self.open(scope, t)).transpose()?,
            limit: page_size(count)?,
        })
    }

    /// Cuts `rows` (up to `limit + 1`, as stores return them) to the page and returns what lay
    /// past it with the token of the next page, when there is one.
    pub fn page_end<T>(
        &self,
        scope: &str,
        rows: &mut Vec<(TimeKey, T)>,
        limit: u32,
    ) -> (Vec<(TimeKey, T)>, Option<String>) {
        let beyond = rows.split_off(rows.len().min(limit as usize));
        let next = match (beyond.is_empty(), rows.last()) {
            (false, Some((key, _))) => Some(self.seal(scope, key)),
            _ => None,
        };
        (beyond, next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::TimeKey;

    #[test]
    fn tokens_open_only_in_their_own_list() {
        let cursors = Cursors::new(b"0123456789abcdef0123456789abcdef").unwrap();
        let key = TimeKey {
            at: 1_700_000_000_000,
            id: "0192b5d4-0000-7000-8000-000000000000".into(),
        };
        let token = cursors.seal("data:u1:t1", &key);
        assert_eq!(cursors.open::<TimeKey>("data:u1:t1", &token).unwrap(), key);
        assert!(cursors.open::<TimeKey>("data:u2:t1", &token).is_err());
        let mut tampered = token.clone().into_bytes();
        tampered[3] ^= 1;
        let tampered = String::from_utf8(tampered).unwrap();
        assert!(cursors.open::<TimeKey>("data:u1:t1", &tampered).is_err());
        assert!(cursors.open::<TimeKey>("data:u1:t1", "junk").is_err());
        assert!(cursors.open::<TimeKey>("data:u1:t1", "").is_err());
        let other = Cursors::new(b"another secret of thirty-two by!").unwrap();
        assert!(other.open::<TimeKey>("data:u1:t1", &token).is_err());
    }

    #[test]
    fn page_sizes() {
        assert_eq!(page_size(None).unwrap(), 50);
        assert_eq!(page_size(Some(500)).unwrap(), 500);
        for bad in [0, -1, 501, i64::MAX] {
            assert!(page_size(Some(bad)).is_err());
        }
    }
}
