//! `json://` and `jsons://`: any HTTP endpoint, sent Apprise's JSON
//! (`{"version": "1.0", "title", "message", "attachments": [], "type": "info"}`).
//! `json(s)://[user[:password]@]host[:port][/path]?method=POST&+Header=value&-param=value&:field=name`:
//! `+` adds a header, `-` a query parameter, `:` renames a field (to nothing: drops it) or adds
//! one. The user and password go as Basic authorization.

use super::{NotifyUrl, Part, Sending, Service, at, basic, needs};
use crate::notify::SendError;
use crate::notify::channel::{Outgoing, header};
use serde_json::{Map, Value, json};

/// How long a message custom endpoints get.
pub(super) const TEXT_CHARS: usize = 32_000;
/// The methods a custom endpoint may be sent with.
const METHODS: &[&str] = &["POST", "GET", "PUT", "PATCH", "DELETE", "HEAD"];

/// Generic JSON.
pub struct Json;

impl Service for Json {
    fn schemes(&self) -> &'static [&'static str] {
        &["json", "jsons"]
    }

    fn check(&self, url: &NotifyUrl) -> Result<(), String> {
        check_custom(url)
    }

    fn secrets(&self, _: &NotifyUrl) -> Vec<Part> {
        vec![Part::Password, Part::QueryPrefix("+")]
    }

    fn prepare(&self, sending: &Sending<'_>) -> Result<Vec<Outgoing>, SendError> {
        let fields = payload(sending);
        let body = serde_json::to_string(&Value::Object(fields))
            .map_err(|e| SendError::from(e.to_string()))?;
        Ok(vec![custom(sending, body, "application/json")?])
    }
}

/// Checks what `json://`, `form://` and the like share: a host and a known method.
pub(super) fn check_custom(url: &NotifyUrl) -> Result<(), String> {
    needs(!url.host.is_empty(), "a host")?;
    if let Some(method) = url.param("method")
        && !METHODS.contains(&method.to_ascii_uppercase().as_str())
    {
        return Err(format!(
            "method {method} is not one of {}",
            METHODS.join(", ")
        ));
    }
    Ok(())
}

/// Apprise's fields, with the URL's `:` renames applied.
pub(super) fn payload(sending: &Sending<'_>) -> Map<String, Value> {
    let message = &sending.message;
    let mut fields = json!({
        "version": "1.0",
        "title": message.title,
        "message": message.plain(TEXT_CHARS),
        "attachments": [],
        "type": "info",
    });
    let Some(fields) = fields.as_object_mut().map(std::mem::take) else {
        return Map::new();
    };
    let mut fields = fields;
    for (name, value) in &sending.url.query {
        let Some(field) = name.strip_prefix(':') else {
            continue;
        };
        match fields.remove(field) {
            Some(moved) if !value.is_empty() => {
                fields.insert(value.clone(), moved);
            }
            Some(_) => {}
            None => {
                fields.insert(field.to_string(), Value::String(value.clone()));
            }
        }
    }
    fields
}

/// The request of a custom endpoint: `body` of type `content_type` sent with the URL's method,
/// headers, query parameters and Basic authorization.
pub(super) fn custom(
    sending: &Sending<'_>,
    body: String,
    content_type: &str,
) -> Result<Outgoing, SendError> {
    let url = &sending.url;
    let mut target = at(&url.origin(), &url.segments, "")?;
    if url.segments.is_empty() {
        target.set_path("/");
    }
    {
        let mut query = target.query_pairs_mut();
        for (name, value) in &url.query {
            if let Some(name) = name.strip_prefix('-') {
                query.append_pair(name, value);
            }
        }
    }
    if target.query() == Some("") {
        target.set_query(None);
    }
    let mut request = crate::notify::channel::post(target, body, content_type, sending.delivery)?;
    let method = url.param("method").unwrap_or("POST").to_ascii_uppercase();
    request.method = method
        .parse()
        .map_err(|_| SendError::from(format!("bad method {method}")))?;
    if let Some(user) = &url.user {
        let authorization = basic(user, url.password.as_deref().unwrap_or(""));
        header(&mut request, "authorization", &authorization)?;
    }
    for (name, value) in &url.query {
        if let Some(name) = name.strip_prefix('+') {
            header(&mut request, name, value)?;
        }
    }
    Ok(Outgoing::Http(request))
}
