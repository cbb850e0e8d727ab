//! What the service's frontends are configured with: the API's minimum recurrence and rate
//! limits, connection bounds, the web interface's public address and session lifetimes. One
//! value for both frontends, built by `wachet serve` from its flags.

use super::limits::LimitSettings;

/// How long a browser session lasts at most by default: the API's 30-day bound on tokens.
pub const DEFAULT_LIFETIME_SECONDS: i64 = 30 * 86_400;
/// How long a browser session lasts without use by default: a week.
pub const DEFAULT_IDLE_SECONDS: i64 = 7 * 86_400;

/// The frontends' settings (the API's name for them is `ApiSettings`).
#[derive(Debug, Clone)]
pub struct Settings {
    /// Shortest recurrence of an active monitor, in seconds.
    pub min_recurrence: i32,
    /// Rate limits.
    pub limits: LimitSettings,
    /// Bounds on connections and how long a request may take to arrive.
    pub connections: crate::connections::ConnectionSettings,
    /// The web interface's settings.
    pub web: WebSettings,
    /// Host names answered besides the public URL's, the listening address and (listening on
    /// loopback) the loopback names ([`crate::hosts`]).
    pub allowed_hosts: Vec<String>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            min_recurrence: 60,
            limits: LimitSettings::default(),
            connections: crate::connections::ConnectionSettings::default(),
            web: WebSettings::default(),
            allowed_hosts: Vec::new(),
        }
    }
}

/// What the web interface needs from the service's settings.
#[derive(Debug, Clone)]
pub struct WebSettings {
    /// The address people reach the service at (`https://watch.example.com`), when it differs
    /// from the listening address (behind a proxy). An https address marks the session cookie
    /// `Secure` and is an accepted `Origin` of forms.
    pub public_url: Option<String>,
    /// Seconds a browser session lasts at most from its sign-in (at most the API's 30-day
    /// bound on tokens).
    pub session_lifetime: i64,
    /// Seconds a browser session lasts without use.
    pub session_idle: i64,
}

impl Default for WebSettings {
    fn default() -> Self {
        WebSettings {
            public_url: None,
            session_lifetime: DEFAULT_LIFETIME_SECONDS,
            session_idle: DEFAULT_IDLE_SECONDS,
        }
    }
}
