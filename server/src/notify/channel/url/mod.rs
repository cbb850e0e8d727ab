//! Notification URLs (`{"type": "Url", "value": "tgram://..."}`) in Apprise's syntax: one
//! module per service ([`SERVICES`]), each saying which schemes it answers, how its URL is
//! checked, which parts are secret and what it sends.
//!
//! A URL is read leniently, as Apprise reads it: `scheme://[user[:password]@]host[:port]/
//! segment/...?name=value&...`, where a host may hold a colon (a Telegram bot token) and `#` is
//! part of a segment (a channel). Its secret parts (tokens, passwords, keys) are sealed when it
//! is saved ([`seal`]): each is replaced by `sealed~` and the part sealed with the service's key
//! for the user ([`crate::secrets::Sealer`]), so what is stored, shown, logged and given back is
//! the URL with its secrets sealed; given back unchanged, it keeps them. Only delivery opens
//! them ([`open`]).
//!
//! A service whose URL names no host (Telegram, Slack, Discord, Pushover, Google Chat, Teams
//! workflows' base) is reached at its public API, or at the base `--channel-base` gives it
//! ([`Bases`]), under the same documented paths.

mod apprise;
mod discord;
mod form;
mod gchat;
mod gotify;
mod hassio;
mod json;
mod mailto;
mod matrix;
mod mattermost;
mod ntfy;
mod pushover;
mod rocket;
mod slack;
mod telegram;
mod workflows;

use super::{Channel, Context, Message, Outgoing, Verdict, judge_api};
use crate::notify::SendError;
use crate::store::Delivery;
use async_trait::async_trait;
use std::collections::BTreeMap;
use wachet::fetch::FetchedPage;
use wachet::model::{MessageFormat, MessagingServiceType};

/// Every service a notification URL may name, in the order the guide lists them.
static SERVICES: &[&dyn Service] = &[
    &json::Json,
    &form::Form,
    &telegram::Telegram,
    &ntfy::Ntfy,
    &gotify::Gotify,
    &discord::Discord,
    &slack::Slack,
    &pushover::Pushover,
    &matrix::Matrix,
    &mattermost::Mattermost,
    &rocket::Rocket,
    &gchat::GoogleChat,
    &workflows::Workflows,
    &hassio::HomeAssistant,
    &mailto::Mailto,
    &apprise::Apprise,
];

/// What marks a sealed part.
const SEALED: &str = "sealed~";
/// Longest notification URL.
const MAX_URL_CHARS: usize = 2048;

/// The service of `scheme` (lower case), if any.
fn service(scheme: &str) -> Option<&'static dyn Service> {
    SERVICES
        .iter()
        .copied()
        .find(|s| s.schemes().contains(&scheme))
}

/// Every scheme a notification URL may use.
pub fn schemes() -> impl Iterator<Item = &'static str> {
    SERVICES.iter().flat_map(|s| s.schemes().iter().copied())
}

/// The services `--channel-base` may point elsewhere.
pub fn based_services() -> impl Iterator<Item = &'static str> {
    SERVICES.iter().filter_map(|s| s.based())
}

/// Other base addresses of services whose URL names no host, by service (`tgram`, `slack`,
/// `discord`, `pover`, `gchat`, `workflows`): `--channel-base SERVICE=URL`.
#[derive(Debug, Clone, Default)]
pub struct Bases(BTreeMap<String, ::url::Url>);

impl Bases {
    /// Reads `SERVICE=URL`; an unknown service or a URL that is not http(s) is an error.
    pub fn parse(given: &str) -> Result<(String, ::url::Url), String> {
        let (name, url) = given
            .split_once('=')
            .ok_or_else(|| format!("{given}: expected SERVICE=URL"))?;
        let name = name.trim().to_ascii_lowercase();
        if !based_services().any(|s| s == name) {
            return Err(format!(
                "{name}: not a service with a base address (one of {})",
                based_services().collect::<Vec<_>>().join(", ")
            ));
        }
        let url = ::url::Url::parse(url.trim()).map_err(|err| format!("{given}: {err}"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!("{given}: the base must be an http(s) URL"));
        }
        Ok((name, url))
    }

    /// Points `service` at `base`.
    pub fn insert(&mut self, service: String, base: ::url::Url) {
        self.0.insert(service, base);
    }

    /// The address of `path` (starting with `/`) at `service`'s base, `default` unless
    /// `--channel-base` gave another.
    pub fn at(&self, service: &str, default: &str, path: &str) -> Result<::url::Url, SendError> {
        let base = self
            .0
            .get(service)
            .map(|u| u.as_str().trim_end_matches('/').to_string())
            .unwrap_or_else(|| default.trim_end_matches('/').to_string());
        permanent(::url::Url::parse(&format!("{base}{path}")))
    }
}

/// A parse error as a permanent delivery error.
fn permanent<T, E: std::fmt::Display>(result: Result<T, E>) -> Result<T, SendError> {
    result.map_err(|err| SendError {
        message: err.to_string(),
        permanent: true,
    })
}

/// A notification URL taken apart, its parts percent-decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotifyUrl {
    /// The scheme, lower case.
    pub scheme: String,
    /// The user, if any.
    pub user: Option<String>,
    /// The password, if any.
    pub password: Option<String>,
    /// The host (IPv6 in brackets); may hold a colon (a bot token).
    pub host: String,
    /// The port, if given.
    pub port: Option<u16>,
    /// The path's segments, none empty.
    pub segments: Vec<String>,
    /// The query's pairs, in order; names as given.
    pub query: Vec<(String, String)>,
}

/// A part of a notification URL (what a service names as secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// The user.
    User,
    /// The password.
    Password,
    /// The host.
    Host,
    /// A path segment.
    Segment(usize),
    /// A query value, by name (every pair of that name).
    Query(&'static str),
    /// Every query value whose name starts with this (`+` for headers).
    QueryPrefix(&'static str),
}

impl NotifyUrl {
    /// Takes `raw` apart; the message says what is wrong with it.
    pub fn parse(raw: &str) -> Result<NotifyUrl, String> {
        let raw = raw.trim();
        if raw.chars().count() > MAX_URL_CHARS {
            return Err(format!("at most {MAX_URL_CHARS} characters"));
        }
        if raw.chars().any(|c| c.is_control() || c.is_whitespace()) {
            return Err("must not hold spaces or control characters".into());
        }
        let (scheme, rest) = raw
            .split_once("://")
            .ok_or("must be a notification URL such as tgram://bottoken/chat_id")?;
        if scheme.is_empty()
            || !scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        {
            return Err(format!("{scheme:?} is not a URL scheme"));
        }
        let (rest, query) = match rest.split_once('?') {
            Some((rest, query)) => (rest, query),
            None => (rest, ""),
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        let (userinfo, hostport) = match authority.rsplit_once('@') {
            Some((userinfo, hostport)) => (Some(userinfo), hostport),
            None => (None, authority),
        };
        let (user, password) = match userinfo {
            None => (None, None),
            Some(info) => match info.split_once(':') {
                Some((user, password)) => (Some(decode(user)?), Some(decode(password)?)),
                None => (Some(decode(info)?), None),
            },
        };
        let (host, port) = if hostport.starts_with('[') {
            let end = hostport.find(']').ok_or("an IPv6 host lacks its ']'")?;
            let port = hostport[end + 1..].strip_prefix(':');
            (hostport[..=end].to_string(), port)
        } else {
            match hostport.rsplit_once(':') {
                Some((host, port))
                    if !port.is_empty() && port.chars().all(|c| c.is_ascii_digit()) =>
                {
                    (decode(host)?, Some(port))
                }
                _ => (decode(hostport)?, None),
            }
        };
        let port = port
            .map(|p| {
                p.parse::<u16>()
                    .ok()
                    .filter(|p| *p > 0)
                    .ok_or_else(|| format!("{p} is not a port"))
            })
            .transpose()?;
        let segments = path
            .split('/')
            .filter(|s| !s.is_empty())
            .map(decode)
            .collect::<Result<Vec<_>, _>>()?;
        let mut pairs = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            pairs.push((decode(name)?, decode(value)?));
        }
        Ok(NotifyUrl {
            scheme: scheme.to_ascii_lowercase(),
            user: user.filter(|u| !u.is_empty()),
            password,
            host,
            port,
            segments,
            query: pairs,
        })
    }

    /// The URL written back, its parts percent-encoded where they must be.
    pub fn write(&self) -> String {
        let mut out = format!("{}://", self.scheme);
        if let Some(user) = &self.user {
            out.push_str(&encode(user));
            if let Some(password) = &self.password {
                out.push(':');
                out.push_str(&encode(password));
            }
            out.push('@');
        }
        match self.host.starts_with('[') {
            true => out.push_str(&self.host),
            false => out.push_str(&encode(&self.host)),
        }
        if let Some(port) = self.port {
            out.push_str(&format!(":{port}"));
        }
        for segment in &self.segments {
            out.push('/');
            out.push_str(&encode(segment));
        }
        for (i, (name, value)) in self.query.iter().enumerate() {
            out.push(if i == 0 { '?' } else { '&' });
            out.push_str(&encode(name));
            out.push('=');
            out.push_str(&encode(value));
        }
        out
    }

    /// Whether the scheme is the secure one of its service (`jsons`, `ntfys`, ...): https.
    pub fn secure(&self) -> bool {
        self.scheme.ends_with('s') && self.scheme != "workflows"
    }

    /// The value of the query parameter `name` (any case), if given.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Whether the flag `name` is on (`yes`, `true`, `1`, `on`), `default` when not given.
    pub fn flag(&self, name: &str, default: bool) -> bool {
        match self.param(name) {
            None => default,
            Some(v) => matches!(
                v.to_ascii_lowercase().as_str(),
                "yes" | "true" | "1" | "on" | ""
            ),
        }
    }

    /// `http(s)://host[:port]` of a service with a host, https when the scheme is the secure
    /// one.
    pub fn origin(&self) -> String {
        let scheme = if self.secure() { "https" } else { "http" };
        match self.port {
            Some(port) => format!("{scheme}://{}:{port}", self.host),
            None => format!("{scheme}://{}", self.host),
        }
    }

    /// The values of the parts `parts` names, mutably.
    fn parts_mut(&mut self, parts: &[Part]) -> Vec<&mut String> {
        let mut out: Vec<&mut String> = Vec::new();
        let wants = |p: &Part| parts.contains(p);
        let NotifyUrl {
            user,
            password,
            host,
            segments,
            query,
            ..
        } = self;
        if wants(&Part::User)
            && let Some(user) = user.as_mut()
        {
            out.push(user);
        }
        if wants(&Part::Password)
            && let Some(password) = password.as_mut()
        {
            out.push(password);
        }
        if wants(&Part::Host) {
            out.push(host);
        }
        for (i, segment) in segments.iter_mut().enumerate() {
            if wants(&Part::Segment(i)) {
                out.push(segment);
            }
        }
        for (name, value) in query.iter_mut() {
            let named = parts.iter().any(|p| match p {
                Part::Query(n) => name.eq_ignore_ascii_case(n),
                Part::QueryPrefix(prefix) => name.starts_with(prefix),
                _ => false,
            });
            if named {
                out.push(value);
            }
        }
        out
    }

    /// Every part's value, mutably (to open whatever is sealed).
    fn all_mut(&mut self) -> Vec<&mut String> {
        let mut out: Vec<&mut String> = Vec::new();
        out.extend(self.user.as_mut());
        out.extend(self.password.as_mut());
        out.push(&mut self.host);
        out.extend(self.segments.iter_mut());
        out.extend(self.query.iter_mut().map(|(_, v)| v));
        out
    }
}

/// Percent-decodes `text` (a `+` stays a `+`); bytes that are not UTF-8 are an error.
fn decode(text: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("{text}: a % not followed by two hex digits"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("{text}: not UTF-8 once decoded"))
}

/// Percent-encodes what would split a part: `%`, `/`, `?`, `@`, `:`, `&`, `=`, `+` and
/// anything outside printable ASCII.
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'%' | b'/' | b'?' | b'@' | b':' | b'&' | b'=' | b'+' | b'"' | b'<' | b'>' | b'\\'
            | b'`' | b' ' => out.push_str(&format!("%{byte:02X}")),
            0x21..=0x7e => out.push(byte as char),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

/// What the sealed parts of a user's URLs are bound to.
pub(crate) fn seal_context(user: &str) -> String {
    format!("{user}\nnotification-url")
}

/// Checks `value` as a notification URL: its scheme names a service and the service finds
/// every part it needs. Sealed parts are taken as given (they are checked when sealing).
pub fn check(value: &str) -> Result<(), String> {
    let url = NotifyUrl::parse(value)?;
    let service = service(&url.scheme).ok_or_else(|| {
        format!(
            "{}:// is not a notification URL this server knows (one of {})",
            url.scheme,
            schemes().collect::<Vec<_>>().join(", ")
        )
    })?;
    service.check(&url)
}

/// `value` with its service's secret parts sealed for `user`; parts sealed already are kept
/// when they open for `user` (a URL given back as shown), refused otherwise.
pub fn seal(sealer: &crate::secrets::Sealer, user: &str, value: &str) -> Result<String, String> {
    check(value)?;
    let mut url = NotifyUrl::parse(value)?;
    let service = service(&url.scheme).ok_or("unknown scheme")?;
    let context = seal_context(user);
    // Whatever is sealed must open for this user, whether the service calls it secret or not.
    for part in url.clone().all_mut() {
        if let Some(sealed) = part.strip_prefix(SEALED)
            && sealer.open(sealed, &context).is_none()
        {
            return Err(
                "holds a sealed part that is not this account's: give the whole URL again".into(),
            );
        }
    }
    let secrets = service.secrets(&url);
    for part in url.parts_mut(&secrets) {
        if !part.starts_with(SEALED) && !part.is_empty() {
            *part = format!("{SEALED}{}", sealer.seal(part, &context)?);
        }
    }
    Ok(url.write())
}

/// `value` with its sealed parts opened for `user`.
pub fn open(
    sealer: Option<&crate::secrets::Sealer>,
    user: &str,
    value: &str,
) -> Result<NotifyUrl, SendError> {
    let mut url = permanent(NotifyUrl::parse(value))?;
    let context = seal_context(user);
    for part in url.all_mut() {
        if let Some(sealed) = part.strip_prefix(SEALED) {
            let opened = sealer
                .and_then(|s| s.open(sealed, &context))
                .ok_or_else(|| SendError {
                    message: "a sealed part of the notification URL does not open with this \
                              service's key"
                        .into(),
                    permanent: true,
                })?;
            *part = opened;
        }
    }
    Ok(url)
}

/// Whether endpoints of `kind` are notification URLs (sealed when saved).
pub fn is_url_kind(kind: MessagingServiceType) -> bool {
    matches!(
        kind,
        MessagingServiceType::Url | MessagingServiceType::Telegram
    )
}

/// Refuses a URL whose host is an address `policy` does not let the service reach (an IP
/// literal or `localhost`; a name that resolves inside is refused when sent, by the fetcher).
pub fn check_host(value: &str, policy: &wachet::fetch::NetworkPolicy) -> Result<(), String> {
    let url = NotifyUrl::parse(value)?;
    let Some(host) = service(&url.scheme).and_then(|s| s.host(&url)) else {
        return Ok(());
    };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let address = match bare.eq_ignore_ascii_case("localhost") {
        true => Some(std::net::IpAddr::from([127, 0, 0, 1])),
        false => bare.parse().ok(),
    };
    match address {
        Some(address) => policy
            .check(host, address)
            .map_err(|refused| refused.to_string()),
        None => Ok(()),
    }
}

/// Seals the secret parts of every notification URL among `endpoints`, for `user`, once its
/// host passes `policy`: the index and the message of the first that cannot be.
pub fn seal_endpoints<'a>(
    sealer: &crate::secrets::Sealer,
    policy: &wachet::fetch::NetworkPolicy,
    user: &str,
    endpoints: impl IntoIterator<Item = &'a mut wachet::model::NotificationEndpoint>,
) -> Result<(), (usize, String)> {
    for (i, endpoint) in endpoints.into_iter().enumerate() {
        if is_url_kind(endpoint.kind)
            && let Some(value) = endpoint.value.as_mut()
        {
            check_host(value, policy).map_err(|message| (i, message))?;
            *value = seal(sealer, user, value).map_err(|message| (i, message))?;
        }
    }
    Ok(())
}

/// A delivery to a notification URL, as its service sees it.
pub struct Sending<'a> {
    /// The URL, opened.
    pub url: NotifyUrl,
    /// The delivery.
    pub delivery: &'a Delivery,
    /// What to say.
    pub message: Message,
    /// What to send with.
    pub context: &'a Context<'a>,
}

/// A service a notification URL names.
#[async_trait]
trait Service: Send + Sync {
    /// Its schemes, lower case.
    fn schemes(&self) -> &'static [&'static str];

    /// The name `--channel-base` knows it by, when its URL names no host.
    fn based(&self) -> Option<&'static str> {
        None
    }

    /// The host the service connects to as the URL names it, checked against the network
    /// policy at save; none for a service reached at its public API (or `--channel-base`).
    fn host<'u>(&self, url: &'u NotifyUrl) -> Option<&'u str> {
        match self.based() {
            Some(_) => None,
            None => Some(&url.host),
        }
    }

    /// Checks what the URL must hold: the message says what is missing or wrong.
    fn check(&self, url: &NotifyUrl) -> Result<(), String>;

    /// The parts to seal.
    fn secrets(&self, url: &NotifyUrl) -> Vec<Part>;

    /// What the delivery becomes: one request or e-mail a target, sent in order.
    fn prepare(&self, sending: &Sending<'_>) -> Result<Vec<Outgoing>, SendError>;

    /// How the answer ends the try; by default as a documented API ([`judge_api`]).
    fn judge(&self, answer: &FetchedPage) -> Verdict {
        judge_api(answer)
    }

    /// Sends: [`Service::prepare`], then each request judged by [`Service::judge`], stopping
    /// at the first that is not delivered (a retry sends them all again). A service that logs
    /// in first overrides it.
    async fn send(&self, sending: &Sending<'_>) -> Verdict {
        let all = match self.prepare(sending) {
            Ok(all) => all,
            Err(err) => return err.into(),
        };
        for outgoing in all {
            let verdict = sending.context.transmit(outgoing, |a| self.judge(a)).await;
            if verdict != Verdict::Delivered {
                return verdict;
            }
        }
        Verdict::Delivered
    }
}

/// `Basic` authorization of `user` and `password`.
fn basic(user: &str, password: &str) -> String {
    use base64::Engine as _;
    let pair = format!("{user}:{password}");
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    )
}

/// `origin` followed by `prefix` (path segments, encoded) and `path` (from `/`).
fn at(origin: &str, prefix: &[String], path: &str) -> Result<::url::Url, SendError> {
    let mut out = origin.trim_end_matches('/').to_string();
    for segment in prefix {
        out.push('/');
        out.push_str(&encode(segment));
    }
    out.push_str(path);
    permanent(::url::Url::parse(&out))
}

/// Whether `part` is sealed (its form cannot be checked before delivery opens it).
fn sealed(part: &str) -> bool {
    part.starts_with(SEALED)
}

/// A JSON POST of `body` to `url` for `sending`.
fn json_post(
    url: ::url::Url,
    body: &serde_json::Value,
    sending: &Sending<'_>,
) -> Result<wachet::fetch::FetchRequest, SendError> {
    super::post_json(url, body, sending.delivery)
}

/// Requires `what` to be given, else says it is missing.
fn needs(given: bool, what: &str) -> Result<(), String> {
    match given {
        true => Ok(()),
        false => Err(format!("lacks {what}")),
    }
}

/// An endpoint given as a notification URL.
pub struct NotificationUrl;

#[async_trait]
impl Channel for NotificationUrl {
    fn kind(&self) -> MessagingServiceType {
        MessagingServiceType::Url
    }

    fn validate(&self, value: &str) -> Result<(), String> {
        check(value)
    }

    /// By the URL's scheme: HTML where the service reads HTML (Telegram, Matrix, e-mail),
    /// Markdown where it reads Markdown (the chat services, Home Assistant), else text.
    fn format(&self, target: &str) -> MessageFormat {
        let scheme = target
            .split_once("://")
            .map(|(scheme, _)| scheme.trim().to_ascii_lowercase())
            .unwrap_or_default();
        match scheme.trim_end_matches('s') {
            "tgram" | "matrix" | "mailto" => MessageFormat::Html,
            "slack" | "discord" | "mmost" | "rocket" | "gchat" | "workflow" | "hassio" => {
                MessageFormat::Markdown
            }
            _ => MessageFormat::Text,
        }
    }

    fn prepare(&self, _: &Delivery, _: &Context<'_>) -> Result<Outgoing, SendError> {
        Err(SendError {
            message: "a notification URL is sent by its service".into(),
            permanent: true,
        })
    }

    async fn send(&self, delivery: &Delivery, context: &Context<'_>) -> Verdict {
        let url = match open(context.sealer, &delivery.user, &delivery.target) {
            Ok(url) => url,
            Err(err) => return err.into(),
        };
        let Some(service) = service(&url.scheme) else {
            return Verdict::Failed(format!("{}:// is not a known service", url.scheme));
        };
        // Opened, the URL is checked again: the services read the parts it promises.
        if let Err(message) = service.check(&url) {
            return Verdict::Failed(format!("the notification URL {message}"));
        }
        let sending = Sending {
            url,
            delivery,
            message: Message::of(delivery, context.links),
            context,
        };
        service.send(&sending).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_read_as_apprise_reads_them_and_written_back() {
        let url = NotifyUrl::parse("tgram://123456:AAbb-cc/-100200/@channel?format=html").unwrap();
        assert_eq!(url.host, "123456:AAbb-cc");
        assert_eq!(url.port, None);
        assert_eq!(url.segments, ["-100200", "@channel"]);
        assert_eq!(url.param("FORMAT"), Some("html"));
        assert_eq!(NotifyUrl::parse(&url.write()).unwrap(), url);
        let url = NotifyUrl::parse("jsons://me:p%40ss@example.com:8443/a/b?+X-Key=1+2").unwrap();
        assert_eq!(
            (url.user.as_deref(), url.password.as_deref()),
            (Some("me"), Some("p@ss"))
        );
        assert_eq!((url.host.as_str(), url.port), ("example.com", Some(8443)));
        assert_eq!(url.query, [("+X-Key".to_string(), "1+2".to_string())]);
        assert_eq!(NotifyUrl::parse(&url.write()).unwrap(), url);
        let url = NotifyUrl::parse("slack://T1/B2/C3/#general").unwrap();
        assert_eq!(url.segments, ["B2", "C3", "#general"]);
        for bad in [
            "",
            "tgram:/x",
            "://x",
            "json://h:99999/",
            "json://a b",
            "json://%zz",
        ] {
            assert!(NotifyUrl::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn secrets_are_sealed_for_one_user_and_kept_when_given_back() {
        let sealer = crate::secrets::Sealer::new(b"k").unwrap();
        let sealed = seal(&sealer, "u1", "tgram://123456:SECRETtoken/987").unwrap();
        assert!(!sealed.contains("SECRETtoken"), "{sealed}");
        assert!(sealed.starts_with("tgram://sealed~") && sealed.ends_with("/987"));
        // Given back as shown, it stays as it was (the same secret inside).
        let again = seal(&sealer, "u1", &sealed).unwrap();
        assert_eq!(again, sealed);
        let opened = open(Some(&sealer), "u1", &again).unwrap();
        assert_eq!(opened.host, "123456:SECRETtoken");
        // Another user cannot take it over.
        assert!(seal(&sealer, "u2", &sealed).is_err());
        assert!(open(Some(&sealer), "u2", &sealed).is_err());
    }
}
