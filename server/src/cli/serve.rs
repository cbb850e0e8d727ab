//! `wachet serve`: the REST service on a SQLite file or a PostgreSQL database. Every setting is a flag and a `WACHET_*`
//! environment variable. On a database without users it creates one and prints its four lines
//! (`user id:`, `email:`, `password:`, `api key:`) once, then where it listens.

use crate::api::{ApiSettings, LimitSettings};
use crate::connections::ConnectionSettings;
use crate::notify::deliver::DeliverySettings;
use crate::notify::email::{SmtpSettings, SmtpTls};
use crate::ops::account::create_account;
use crate::schedule::ScheduleSettings;
use crate::service;
use crate::store::postgres::{self, PgStore};
use crate::store::sqlite::{
    DEFAULT_DELIVERIES_PER_HOUR, DEFAULT_HISTORY_RETENTION, SqliteStore, StoreSettings,
};
use crate::store::{Locations, Quotas, Store};
use anyhow::Context;
use clap::Args;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use wachet::Engine;
use wachet::model::LocationCode;

/// Settings of `wachet serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "WACHET_LISTEN", default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// An address to answer the health probes on (`/healthz`, `/readyz`) besides the API's: how
    /// a process without the `api` role is probed (with it, the API's address answers them
    /// too).
    #[arg(long, env = "WACHET_HEALTH_LISTEN")]
    health_listen: Option<SocketAddr>,
    /// What this process does, any of: `api` (the REST API and the web interface), `worker`
    /// (checks monitors), `deliver` (sends notifications). Any number of processes of each
    /// share one PostgreSQL database.
    #[arg(
        long,
        env = "WACHET_ROLES",
        value_enum,
        value_delimiter = ',',
        default_value = "api,worker,deliver"
    )]
    roles: Vec<Role>,
    /// The location this worker checks from (`us`, `gb`, `de`, `sg`, `au`): it checks only the
    /// monitors of that location (and of the locations it has a `--proxy` for), directly.
    /// Without it, the monitors of the default location.
    #[arg(long, env = "WACHET_LOCATION", value_parser = parse_location)]
    location: Option<LocationCode>,
    /// The kinds of checks this worker runs: `plain` (HTTP), `browser` (rendered in Chromium,
    /// `dynamicContent`); Chromium is started only where browser checks are taken.
    #[arg(
        long,
        env = "WACHET_KINDS",
        value_enum,
        value_delimiter = ',',
        default_value = "plain,browser"
    )]
    kinds: Vec<Kind>,
    #[command(flatten)]
    db: DbArg,
    /// The address people reach the service at, such as `https://watch.example.com`, when a
    /// proxy stands in front; optional. An https address makes the web interface's session
    /// cookie `Secure`, and forms posted from it are accepted.
    #[arg(long, env = "WACHET_PUBLIC_URL", value_parser = parse_public_url)]
    public_url: Option<String>,
    /// A host name the service answers to besides the `--public-url` host and the listening
    /// address (and, listening on loopback, `localhost` and the loopback addresses); requests
    /// naming any other `Host` are answered 421, so DNS rebinding cannot reach the service;
    /// repeatable (comma-separated in the variable).
    #[arg(
        long = "allowed-host",
        env = "WACHET_ALLOWED_HOSTS",
        value_name = "HOST",
        value_delimiter = ',',
        value_parser = crate::hosts::parse_name
    )]
    allowed_hosts: Vec<String>,
    /// Seconds a web interface session lasts at most after signing in (30 days at most).
    #[arg(long, env = "WACHET_SESSION_LIFETIME",
          default_value_t = crate::ops::settings::DEFAULT_LIFETIME_SECONDS,
          value_parser = clap::value_parser!(i64).range(60..=crate::ops::account::MAX_TOKEN_SECONDS))]
    session_lifetime: i64,
    /// Seconds a web interface session lasts without being used.
    #[arg(long, env = "WACHET_SESSION_IDLE",
          default_value_t = crate::ops::settings::DEFAULT_IDLE_SECONDS,
          value_parser = clap::value_parser!(i64).range(60..=crate::ops::account::MAX_TOKEN_SECONDS))]
    session_idle: i64,
    /// Allow monitors (and webhooks) to reach private, loopback and link-local addresses.
    #[arg(long, env = "WACHET_ALLOW_PRIVATE_NETWORKS")]
    allow_private_networks: bool,
    /// A proxy for a location, such as `us=http://proxy:3128` (`http`, `https`, `socks5` or
    /// `socks5h`; `user:password@` for credentials); repeatable (comma-separated in the
    /// variable).
    #[arg(
        long = "proxy",
        env = "WACHET_PROXIES",
        value_name = "LOCATION=URL",
        value_delimiter = ','
    )]
    proxies: Vec<String>,
    /// A PEM file of certificate authorities to trust for https besides the system's (an
    /// internal CA); repeatable (comma-separated in the variable).
    #[arg(
        long = "root-certificate",
        value_name = "FILE",
        env = "WACHET_ROOT_CERTIFICATES",
        value_delimiter = ','
    )]
    root_certificates: Vec<std::path::PathBuf>,
    /// Shortest recurrence of an active monitor, in seconds.
    #[arg(long, env = "WACHET_MIN_RECURRENCE", default_value_t = 60,
          value_parser = clap::value_parser!(i32).range(1..))]
    min_recurrence: i32,
    /// API requests per second per user (0: unlimited).
    #[arg(long, env = "WACHET_RATE_LIMIT", default_value_t = LimitSettings::default().requests_per_second)]
    rate_limit: u32,
    /// API requests a user may send at once above the rate.
    #[arg(long, env = "WACHET_RATE_BURST", default_value_t = LimitSettings::default().burst)]
    rate_burst: u32,
    /// Failed logins per minute for one account from one client network (an IPv4 address, an
    /// IPv6 /64) before that pair is blocked, twice as long each time (0: unlimited).
    #[arg(long, env = "WACHET_LOGIN_FAILURES", default_value_t = LimitSettings::default().login_failures_per_minute)]
    login_failures: u32,
    /// Failed logins per minute from one client network, whatever the accounts (0: unlimited).
    #[arg(long, env = "WACHET_NETWORK_LOGIN_FAILURES", default_value_t = LimitSettings::default().network_login_failures_per_minute)]
    network_login_failures: u32,
    /// Password hashes (argon2) computed at once (0: one per core); API-key logins never wait
    /// for them.
    #[arg(long, env = "WACHET_PASSWORD_CHECKS", default_value_t = LimitSettings::default().password_checks)]
    password_checks: usize,
    /// Requests in flight at once to one host (host and port), across every check, crawl and
    /// webhook delivery of this process, checks of one host's monitors running at once, and
    /// deliveries in flight to one host, so a slow or hanging host's monitors or endpoints never
    /// hold the slots of others (0: no limit).
    #[arg(long, env = "WACHET_PER_HOST_CONCURRENCY", default_value_t = wachet::fetch::hosts::HostLimits::default().concurrency)]
    per_host_concurrency: usize,
    /// Requests started per second to one host, across every check, crawl and webhook
    /// delivery of this process (0: no limit).
    #[arg(long, env = "WACHET_PER_HOST_RPS", default_value_t = wachet::fetch::hosts::HostLimits::default().rps)]
    per_host_rps: u32,
    /// Plain checks running at once, shared fairly among users: while one user's checks hold
    /// them all, other users' checks start in up to as many slots again (0: this process runs
    /// no checks, only the API).
    #[arg(long, env = "WACHET_CHECKS_IN_FLIGHT", default_value_t = ScheduleSettings::default().checks_in_flight)]
    checks_in_flight: usize,
    /// Checks rendering in Chromium (dynamicContent) at once, besides the plain ones, shared
    /// fairly among users as the plain ones are.
    #[arg(long, env = "WACHET_BROWSER_CHECKS_IN_FLIGHT", default_value_t = ScheduleSettings::default().browser_checks_in_flight)]
    browser_checks_in_flight: usize,
    /// Seconds a check or a delivery stays claimed past this process's last heartbeat before
    /// another process may take it over: the checks and deliveries of a process that died are
    /// taken over at most this long after.
    #[arg(long, env = "WACHET_CHECK_LEASE", default_value_t = ScheduleSettings::default().lease.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..))]
    check_lease: u64,
    /// Seconds between two heartbeats of this process, each renewing the claims it holds (at
    /// most a third of `--check-lease`: a shorter lease makes beats more frequent).
    #[arg(long, env = "WACHET_HEARTBEAT", default_value_t = crate::worker::DEFAULT_HEARTBEAT.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..))]
    heartbeat: u64,
    /// History entries kept for each monitor (and each page a Portal monitor crawls); a check
    /// beyond it deletes the oldest.
    #[arg(long, env = "WACHET_HISTORY_RETENTION", default_value_t = DEFAULT_HISTORY_RETENTION,
          value_parser = clap::value_parser!(u32).range(1..))]
    history_retention: u32,
    // --- quotas per user (defaults a personal server never reaches)
    /// Monitors one user may have; creating one more answers 400 naming `maxMonitorsPerUser`.
    #[arg(long, env = "WACHET_MAX_MONITORS_PER_USER", default_value_t = Quotas::default().monitors,
          value_parser = clap::value_parser!(u64).range(1..))]
    max_monitors_per_user: u64,
    /// Bytes one user's history may take (distinct values at their stored size, plus 160 bytes
    /// an entry); a new value beyond it is not kept and its check records an error instead.
    #[arg(long, env = "WACHET_MAX_STORED_BYTES_PER_USER", default_value_t = Quotas::default().stored_bytes)]
    max_stored_bytes_per_user: u64,
    /// Bytes of one value (a check's, or a crawled page's); a larger one is stored as a failed
    /// check ("the value is N bytes, above the limit of M bytes"), never cut.
    #[arg(long, env = "WACHET_MAX_VALUE_BYTES", default_value_t = ScheduleSettings::default().max_value_bytes)]
    max_value_bytes: usize,
    /// Seconds between a check that waits for confirmation (a changed value, a failure not yet
    /// raised) and the check that confirms it; never later than the monitor's next check.
    #[arg(long, env = "WACHET_CONFIRM_AFTER", default_value_t = ScheduleSettings::default().confirm_after.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    confirm_after: u64,
    /// Notifications one user's monitors may raise in any hour; beyond it one more says how
    /// many alerts were not sent, and the rest of the hour's are left out.
    #[arg(long, env = "WACHET_MAX_NOTIFICATIONS_PER_HOUR", default_value_t = Quotas::default().notifications_per_hour)]
    max_notifications_per_hour: u32,
    // --- end of quotas
    /// Seconds one delivery try (a webhook's answer, an SMTP exchange) may take before it is
    /// retried (a delivery lost with its process is tried again once its `--check-lease` ran out).
    #[arg(long, env = "WACHET_DELIVERY_TIMEOUT", default_value_t = DeliverySettings::default().attempt_timeout.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..))]
    delivery_timeout: u64,
    /// Notification deliveries (webhooks, e-mails, chats) sent per user in any hour; more wait,
    /// pending, until the hour has room: none is dropped (0: no limit).
    #[arg(long, env = "WACHET_DELIVERIES_PER_HOUR", default_value_t = DEFAULT_DELIVERIES_PER_HOUR)]
    deliveries_per_hour: u32,
    /// SMTP server for e-mail notifications (none: e-mail deliveries fail).
    #[arg(long, env = "WACHET_SMTP_HOST")]
    smtp_host: Option<String>,
    /// SMTP port.
    #[arg(long, env = "WACHET_SMTP_PORT", default_value_t = 587)]
    smtp_port: u16,
    /// SMTP transport security.
    #[arg(long, env = "WACHET_SMTP_TLS", value_enum, default_value_t = SmtpTls::Starttls)]
    smtp_tls: SmtpTls,
    /// SMTP user, when the server wants a login.
    #[arg(long, env = "WACHET_SMTP_USER")]
    smtp_user: Option<String>,
    /// SMTP password (prefer the variable: a flag shows in the process list).
    #[arg(long, env = "WACHET_SMTP_PASSWORD", hide_env_values = true)]
    smtp_password: Option<String>,
    /// Sender address of notification e-mails.
    #[arg(long, env = "WACHET_SMTP_FROM", default_value = "wachet@localhost")]
    smtp_from: String,
    /// Another base address for a notification URL service that names no host, as
    /// SERVICE=URL (repeatable; the variable takes them comma-separated): tgram, slack,
    /// discord, pover, gchat, workflows or ntfy (`ntfy://topic`), such as a compatible
    /// self-hosted server; requests keep the service's documented paths under it.
    #[arg(long = "channel-base", env = "WACHET_CHANNEL_BASES", value_delimiter = ',',
          value_parser = crate::notify::channel::url::Bases::parse)]
    channel_base: Vec<(String, url::Url)>,
    /// E-mail address of the user created on a database without users.
    #[arg(long, env = "WACHET_ADMIN_EMAIL", default_value = "admin@localhost")]
    admin_email: String,
    #[command(flatten)]
    connections: ConnectionArgs,
}

/// Bounds on the API's connections (slow and greedy clients).
#[derive(Debug, Args)]
pub struct ConnectionArgs {
    /// Seconds a request head may take from its first byte to its last; past it the connection
    /// is closed.
    #[arg(long, env = "WACHET_HEADER_READ_TIMEOUT", default_value_t = ConnectionSettings::default().header_read_timeout.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..))]
    header_read_timeout: u64,
    /// Seconds a request body may take to arrive; past it the answer is 408 and the connection
    /// is closed.
    #[arg(long, env = "WACHET_BODY_READ_TIMEOUT", default_value_t = ConnectionSettings::default().body_read_timeout.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..))]
    body_read_timeout: u64,
    /// Seconds a connection may stay without a byte moving while none of its requests is being
    /// handled (a kept-alive connection between requests, a client not reading its answer).
    #[arg(long, env = "WACHET_IDLE_TIMEOUT", default_value_t = ConnectionSettings::default().idle_timeout.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..))]
    idle_timeout: u64,
    /// Most connections open at once; more are closed as soon as accepted.
    #[arg(long, env = "WACHET_MAX_CONNECTIONS", default_value_t = ConnectionSettings::default().max_connections,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    max_connections: usize,
    /// Most connections open at once from one client network (an IPv4 address, an IPv6 /64);
    /// behind a reverse proxy every client is the proxy's address.
    #[arg(long, env = "WACHET_MAX_CONNECTIONS_PER_CLIENT", default_value_t = ConnectionSettings::default().max_connections_per_client,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    max_connections_per_client: usize,
}

impl ConnectionArgs {
    fn settings(&self) -> ConnectionSettings {
        ConnectionSettings {
            header_read_timeout: Duration::from_secs(self.header_read_timeout),
            body_read_timeout: Duration::from_secs(self.body_read_timeout),
            idle_timeout: Duration::from_secs(self.idle_timeout),
            max_connections: self.max_connections,
            max_connections_per_client: self.max_connections_per_client,
        }
    }
}

/// The database, shared by the subcommands that open it.
#[derive(Debug, Args)]
pub struct DbArg {
    /// The database: a SQLite file (created if missing), or a PostgreSQL URL
    /// (`postgres://user:password@host/database`).
    #[arg(long = "db", env = "WACHET_DB", default_value = "wachet.db")]
    pub db: String,
}

/// An open store of either backend.
pub enum OpenStore {
    /// A SQLite file.
    Sqlite(SqliteStore),
    /// A PostgreSQL database.
    Postgres(PgStore),
}

impl OpenStore {
    /// The store, for the calls every backend answers.
    pub fn store(&self) -> &dyn Store {
        match self {
            OpenStore::Sqlite(store) => store,
            OpenStore::Postgres(store) => store,
        }
    }

    /// The store, shared with the parts of the service.
    pub fn shared(&self) -> Arc<dyn Store> {
        match self {
            OpenStore::Sqlite(store) => Arc::new(store.clone()),
            OpenStore::Postgres(store) => Arc::new(store.clone()),
        }
    }

    /// Closes its connections.
    pub async fn close(&self) {
        match self {
            OpenStore::Sqlite(store) => store.close().await,
            OpenStore::Postgres(store) => store.close().await,
        }
    }
}

impl DbArg {
    /// Opens and migrates the database with the default settings.
    pub async fn open(&self) -> anyhow::Result<OpenStore> {
        self.open_with(&StoreSettings::default()).await
    }

    /// Opens and migrates the database: a `postgres://` or `postgresql://` URL is PostgreSQL,
    /// anything else the path of a SQLite file.
    pub async fn open_with(&self, settings: &StoreSettings) -> anyhow::Result<OpenStore> {
        if !postgres::is_url(&self.db) {
            let store = SqliteStore::open_with(std::path::Path::new(&self.db), settings).await?;
            return Ok(OpenStore::Sqlite(store));
        }
        Ok(OpenStore::Postgres(
            PgStore::connect(&self.db, settings).await?,
        ))
    }
}

fn engine(args: &ServeArgs) -> anyhow::Result<Engine> {
    let mut builder = Engine::builder()
        .allow_private_networks(args.allow_private_networks)
        .per_host_concurrency(args.per_host_concurrency)
        .per_host_rps(args.per_host_rps)
        .location(args.location.unwrap_or_default())
        .render_settings(wachet::render::RenderSettings {
            // Shared out per user by the service's count of tabs (`crate::tabs`), which has
            // as many: a user rendering alone holds half at most, for their browser checks
            // and a preview or pick, so another user's render finds a tab free.
            tabs: crate::tabs::renderer_tabs(args.browser_checks_in_flight),
            ..Default::default()
        });
    for proxy in &args.proxies {
        let (location, url) = proxy
            .split_once('=')
            .with_context(|| format!("--proxy {proxy}: expected LOCATION=URL"))?;
        builder = builder.proxy(location.trim(), url.trim());
    }
    let builder = super::page::trust_root_certificates(builder, &args.root_certificates)?;
    Ok(builder.build()?)
}

pub async fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let engine = engine(&args)?;
    let store = args
        .db
        .open_with(&StoreSettings {
            history_retention: args.history_retention,
            deliveries_per_hour: args.deliveries_per_hour,
            quotas: Quotas {
                monitors: args.max_monitors_per_user,
                stored_bytes: args.max_stored_bytes_per_user,
                notifications_per_hour: args.max_notifications_per_hour,
            },
        })
        .await?;
    if store.store().user_count().await? == 0 {
        let account = create_account(store.store(), &args.admin_email, None)
            .await
            .context("cannot create the first user")?;
        println!("{account}");
    }
    let running = service::start(settings(&args), store.shared(), &engine).await?;
    let signal = service::shutdown_signal().context("cannot install the signal handlers")?;
    // One write for both lines, and no panic if it fails: a script that stops reading at
    // "listening on" closes the pipe, and a later write would fail with EPIPE.
    let lines = match running.addr() {
        Some(addr) => {
            let interface = args
                .public_url
                .clone()
                .unwrap_or_else(|| format!("http://{addr}"));
            format!(
                "listening on http://{addr}\nweb interface: {}/\n",
                interface.trim_end_matches('/')
            )
        }
        None => format!(
            "running without the api: {}\n{}",
            settings(&args).parts.roles(),
            running
                .health_addr()
                .map(|addr| format!("health probes on http://{addr}\n"))
                .unwrap_or_default()
        ),
    };
    {
        use std::io::Write;
        let mut stdout = std::io::stdout().lock();
        let _ = stdout
            .write_all(lines.as_bytes())
            .and_then(|()| stdout.flush());
    }
    running.until(signal).await.context("the server failed")?;
    store.close().await;
    Ok(ExitCode::SUCCESS)
}

/// The locations whose monitors this process checks: its own and those it has a proxy for.
fn served_locations(args: &ServeArgs) -> Vec<LocationCode> {
    let proxied = args
        .proxies
        .iter()
        .filter_map(|proxy| proxy.split_once('='))
        .filter_map(|(location, _)| LocationCode::parse(location));
    std::iter::once(args.location.unwrap_or_default())
        .chain(proxied)
        .collect()
}

/// The service's settings from the flags.
fn settings(args: &ServeArgs) -> service::Settings {
    let api = ApiSettings {
        min_recurrence: args.min_recurrence,
        limits: LimitSettings {
            requests_per_second: args.rate_limit,
            burst: args.rate_burst,
            login_failures_per_minute: args.login_failures,
            network_login_failures_per_minute: args.network_login_failures,
            password_checks: args.password_checks,
        },
        connections: args.connections.settings(),
        allowed_hosts: args.allowed_hosts.clone(),
        web: crate::ops::WebSettings {
            public_url: args.public_url.clone(),
            session_lifetime: args.session_lifetime,
            session_idle: args.session_idle,
        },
    };
    let schedule = ScheduleSettings {
        checks_in_flight: args.checks_in_flight,
        browser_checks_in_flight: args.browser_checks_in_flight,
        lease: Duration::from_secs(args.check_lease),
        min_recurrence: args.min_recurrence,
        max_value_bytes: args.max_value_bytes,
        confirm_after: Duration::from_secs(args.confirm_after),
        locations: Locations::of(served_locations(args)),
        plain: args.kinds.contains(&Kind::Plain),
        browser: args.kinds.contains(&Kind::Browser),
        ..ScheduleSettings::default()
    };
    let smtp = args.smtp_host.clone().map(|host| SmtpSettings {
        host,
        port: args.smtp_port,
        tls: args.smtp_tls,
        credentials: args.smtp_user.clone().zip(args.smtp_password.clone()),
        from: args.smtp_from.clone(),
    });
    let mut bases = crate::notify::channel::url::Bases::default();
    for (service, base) in &args.channel_base {
        bases.insert(service.clone(), base.clone());
    }
    let delivery = DeliverySettings {
        smtp,
        bases,
        attempt_timeout: Duration::from_secs(args.delivery_timeout),
        per_host: args.per_host_concurrency,
        ..DeliverySettings::default()
    };
    let has = |role| args.roles.contains(&role);
    service::Settings {
        listen: args.listen,
        health_listen: args.health_listen,
        api,
        parts: service::Parts {
            api: has(Role::Api),
            checks: has(Role::Worker),
            delivery: has(Role::Deliver),
            collection: has(Role::Worker),
        },
        location: args.location,
        schedule,
        delivery,
        collect_every: service::COLLECT_EVERY,
        heartbeat: Duration::from_secs(args.heartbeat),
    }
}

/// A role of `wachet serve --roles`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Role {
    /// The REST API and the web interface.
    Api,
    /// Checks monitors.
    Worker,
    /// Sends notifications.
    Deliver,
}

/// A kind of check of `wachet serve --kinds`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Kind {
    /// Fetched over HTTP.
    Plain,
    /// Rendered in Chromium.
    Browser,
}

/// A location named as the API names it (`us`, `Gb`, or its code).
fn parse_location(value: &str) -> Result<LocationCode, String> {
    LocationCode::parse(value).ok_or_else(|| {
        let names: Vec<String> = LocationCode::ALL
            .iter()
            .map(|l| l.name().to_ascii_lowercase())
            .collect();
        format!("not a location; one of {}", names.join(", "))
    })
}

/// A public URL: http or https, with a host, without path, query or fragment (it is compared
/// with browsers' `Origin`, which has none).
fn parse_public_url(value: &str) -> Result<String, String> {
    let trimmed = value.trim().trim_end_matches('/');
    let rest = trimmed
        .strip_prefix("https://")
        .or_else(|| trimmed.strip_prefix("http://"))
        .ok_or("must start with http:// or https://")?;
    if rest.is_empty() || rest.contains(['/', '?', '#', ' ', '@']) {
        return Err("must be scheme://host[:port] with nothing after it".into());
    }
    Ok(trimmed.to_ascii_lowercase())
}
