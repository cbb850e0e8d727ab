//! `rocket(s)://webhook@host[:port][/#channel...]` (an incoming webhook, `POST /hooks/{webhook}`)
//! and `rocket(s)://user:password@host[:port]/#channel[/...]` (a login first,
//! `POST /api/v1/login`, then `POST /api/v1/chat.postMessage` with `X-Auth-Token` and
//! `X-User-Id`; with `?mode=token` the password is a personal access token and no login is
//! needed): JSON `text` and `channel` (`#channel` or `@user`; anything else is a room id,
//! `roomId`).

use super::{NotifyUrl, Part, Sending, Service, at, json_post, needs};
use crate::notify::SendError;
use crate::notify::channel::{Outgoing, Verdict, header, judge_api};
use async_trait::async_trait;
use serde_json::{Value, json};

/// How long a message Rocket.Chat gets (its default limit is 5,000 characters).
const TEXT_CHARS: usize = 5000;

/// Rocket.Chat.
pub struct Rocket;

#[async_trait]
impl Service for Rocket {
    fn schemes(&self) -> &'static [&'static str] {
        &["rocket", "rockets"]
    }

    fn check(&self, url: &NotifyUrl) -> Result<(), String> {
        needs(!url.host.is_empty(), "a host")?;
        needs(
            url.user.is_some(),
            "a webhook or a user and password (rockets://webhook@host)",
        )?;
        if url.password.is_some() {
            needs(
                !url.segments.is_empty(),
                "a channel (rockets://user:password@host/#channel)",
            )?;
        }
        Ok(())
    }

    fn secrets(&self, url: &NotifyUrl) -> Vec<Part> {
        match url.password {
            Some(_) => vec![Part::Password],
            None => vec![Part::User],
        }
    }

    fn prepare(&self, _: &Sending<'_>) -> Result<Vec<Outgoing>, SendError> {
        Err(SendError {
            message: "Rocket.Chat is sent step by step".into(),
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

/// The JSON of a message to `target` (none: the webhook's own channel).
fn payload(text: &str, target: Option<&str>) -> Value {
    let mut body = json!({"text": text});
    match target {
        Some(t) if t.starts_with('#') || t.starts_with('@') => body["channel"] = t.into(),
        Some(t) => body["roomId"] = t.into(),
        None => {}
    }
    body
}

async fn send(sending: &Sending<'_>) -> Result<Verdict, SendError> {
    let url = &sending.url;
    let origin = url.origin();
    let text = sending.message.markdown(TEXT_CHARS);
    let targets: Vec<Option<&str>> = match url.segments.is_empty() {
        true => vec![None],
        false => url.segments.iter().map(|s| Some(s.as_str())).collect(),
    };
    let context = sending.context;
    let Some(user) = &url.user else {
        return Err("no webhook".into());
    };
    let Some(password) = &url.password else {
        for target in targets {
            let request = json_post(
                at(&origin, &[], &format!("/hooks/{user}"))?,
                &payload(&text, target),
                sending,
            )?;
            let verdict = judge_api(&context.fetch(&request).await?);
            if verdict != Verdict::Delivered {
                return Ok(verdict);
            }
        }
        return Ok(Verdict::Delivered);
    };
    let (token, id) = match url.param("mode") {
        Some("token") => (password.clone(), user.clone()),
        _ => {
            let login = json_post(
                at(&origin, &[], "/api/v1/login")?,
                &json!({"user": user, "password": password}),
                sending,
            )?;
            let answer = context.fetch(&login).await?;
            let verdict = judge_api(&answer);
            if verdict != Verdict::Delivered {
                return Ok(verdict);
            }
            let said: Value = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
            match (
                said["data"]["authToken"].as_str(),
                said["data"]["userId"].as_str(),
            ) {
                (Some(token), Some(id)) => (token.to_string(), id.to_string()),
                _ => {
                    return Err(SendError {
                        message: "the Rocket.Chat login gave no authToken and userId".into(),
                        permanent: true,
                    });
                }
            }
        }
    };
    for target in targets {
        let mut request = json_post(
            at(&origin, &[], "/api/v1/chat.postMessage")?,
            &payload(&text, target),
            sending,
        )?;
        header(&mut request, "x-auth-token", &token)?;
        header(&mut request, "x-user-id", &id)?;
        let verdict = judge_api(&context.fetch(&request).await?);
        if verdict != Verdict::Delivered {
            return Ok(verdict);
        }
    }
    Ok(Verdict::Delivered)
}
