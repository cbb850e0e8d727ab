//! `matrix(s)://token@host[:port]/room[/room...]` (an access token) and
//! `matrix(s)://user:password@host[:port]/room[/...]` (a password login first,
//! `POST /_matrix/client/v3/login`): the client-server API's
//! `PUT /_matrix/client/v3/rooms/{roomId}/send/m.room.message/{txnId}` with `Authorization:
//! Bearer`, `msgtype` `m.text`, `body` and its HTML as `formatted_body`
//! (`org.matrix.custom.html`). A room is an id (`!id:server`) or an alias (`#alias:server`,
//! `#alias` or `alias` on the URL's host), resolved with `GET /_matrix/client/v3/directory/room/`.
//! The transaction id is the delivery's, so a retry with the same token is not posted twice.

use super::{NotifyUrl, Part, Sending, Service, at, json_post, needs};
use crate::notify::SendError;
use crate::notify::channel::{Outgoing, Verdict, header, judge_api};
use async_trait::async_trait;
use serde_json::{Value, json};
use wachet::fetch::FetchRequest;

/// How much text an event carries (events are at most 65,536 bytes).
const TEXT_CHARS: usize = 12_000;

/// Matrix.
pub struct Matrix;

#[async_trait]
impl Service for Matrix {
    fn schemes(&self) -> &'static [&'static str] {
        &["matrix", "matrixs"]
    }

    fn check(&self, url: &NotifyUrl) -> Result<(), String> {
        needs(!url.host.is_empty(), "a host")?;
        needs(
            url.user.is_some(),
            "an access token or a user and password (matrixs://token@host/!room:host)",
        )?;
        needs(
            !url.segments.is_empty(),
            "a room (matrixs://token@host/#room:host)",
        )
    }

    fn secrets(&self, url: &NotifyUrl) -> Vec<Part> {
        match url.password {
            Some(_) => vec![Part::Password],
            None => vec![Part::User],
        }
    }

    fn prepare(&self, _: &Sending<'_>) -> Result<Vec<Outgoing>, SendError> {
        Err(SendError {
            message: "Matrix is sent step by step".into(),
            permanent: true,
        })
    }

    async fn send(&self, sending: &Sending<'_>) -> Verdict {
        match send(sending).await {
            Ok(verdict) => verdict,
            Err(err) => err.into(),
        }
    }
}

/// Logs in when the URL has a password, resolves each room and posts to it.
async fn send(sending: &Sending<'_>) -> Result<Verdict, SendError> {
    let url = &sending.url;
    let origin = url.origin();
    let context = sending.context;
    let token = match (&url.user, &url.password) {
        (Some(user), Some(password)) => {
            let body = json!({
                "type": "m.login.password",
                "identifier": {"type": "m.id.user", "user": user},
                "password": password,
            });
            let login = json_post(
                at(&origin, &[], "/_matrix/client/v3/login")?,
                &body,
                sending,
            )?;
            let (verdict, said) = ask(context, &login).await?;
            if verdict != Verdict::Delivered {
                return Ok(verdict);
            }
            said["access_token"]
                .as_str()
                .map(str::to_string)
                .ok_or_else(|| SendError {
                    message: "the Matrix login gave no access_token".into(),
                    permanent: true,
                })?
        }
        (Some(token), None) => token.clone(),
        _ => return Err("no access token".into()),
    };
    let message = &sending.message;
    let body = json!({
        "msgtype": "m.text",
        "body": message.plain(TEXT_CHARS),
        "format": "org.matrix.custom.html",
        "formatted_body": message.html(TEXT_CHARS),
    });
    for (i, room) in url.segments.iter().enumerate() {
        let room = match room.starts_with('!') {
            true => room.clone(),
            false => {
                let alias = alias(room, &url.host);
                let path = format!(
                    "/_matrix/client/v3/directory/room/{}",
                    escape_segment(&alias)
                );
                let mut request = FetchRequest::get(at(&origin, &[], &path)?);
                header(&mut request, "authorization", &format!("Bearer {token}"))?;
                let (verdict, said) = ask(context, &request).await?;
                if verdict != Verdict::Delivered {
                    return Ok(verdict);
                }
                said["room_id"]
                    .as_str()
                    .map(str::to_string)
                    .ok_or_else(|| SendError {
                        message: format!("the room {alias} has no room_id"),
                        permanent: true,
                    })?
            }
        };
        let txn = format!("{}-{i}", sending.delivery.id);
        let path = format!(
            "/_matrix/client/v3/rooms/{}/send/m.room.message/{}",
            escape_segment(&room),
            escape_segment(&txn)
        );
        let mut request = json_post(at(&origin, &[], &path)?, &body, sending)?;
        request.method = wachet::fetch::Method::PUT;
        header(&mut request, "authorization", &format!("Bearer {token}"))?;
        let (verdict, _) = ask(context, &request).await?;
        if verdict != Verdict::Delivered {
            return Ok(verdict);
        }
    }
    Ok(Verdict::Delivered)
}

/// Sends `request`: the verdict on its answer and the answer's JSON.
async fn ask(
    context: &crate::notify::channel::Context<'_>,
    request: &FetchRequest,
) -> Result<(Verdict, Value), SendError> {
    let answer = context.fetch(request).await?;
    let said = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
    Ok((judge_api(&answer), said))
}

/// A room alias in full: `#name:server`, on `host` when the URL names no server.
fn alias(room: &str, host: &str) -> String {
    let name = room.trim_start_matches('#');
    match name.contains(':') {
        true => format!("#{name}"),
        false => format!("#{name}:{host}"),
    }
}

/// Percent-encodes a path segment (room ids and aliases hold `!`, `#` and `:`).
fn escape_segment(text: &str) -> String {
    let mut out = String::new();
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(byte as char)
            }
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}
