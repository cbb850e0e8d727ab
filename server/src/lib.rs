//! The `wachet` command line and REST service (`wachet serve`), frontends of the wachet engine.
//!
//! # Map
//!
//! - [`cli`]: the command line. `serve` turns its flags into one [`service::Settings`];
//!   `check`, `crawl`, `fixtures` and `user` run without a service.
//! - [`service`]: the running service. [`service::start`] starts every part over one store and
//!   engine, [`service::Running::shutdown`] stops them in order; the binary and every test
//!   start the service so.
//! - [`api`]: the REST API under `/thirdparty/v1`: routing, logins and limits, validation,
//!   problem+json errors, the OpenAPI document.
//! - [`web`]: the web interface at `/`, rendered on the server, reaching data only through the
//!   API's own code.
//! - [`connections`]: the listener's connections: how many, how slow, drained on shutdown.
//! - [`hosts`]: the `Host` names the service answers to, checked before any route.
//! - [`store`]: everything kept, behind one trait per resource ([`store::UserStore`],
//!   [`store::TaskStore`], [`store::FolderStore`], [`store::HistoryStore`],
//!   [`store::NotificationStore`], [`store::ScheduleStore`], [`store::OutboxStore`],
//!   [`store::FeedStore`]; [`store::Store`] is all of them), on SQLite in [`store::sqlite`] with
//!   its cache inside; a part takes the resources it uses (the scheduler a `ScheduleStore`,
//!   delivery an `OutboxStore`). Also the collection of values no entry names ([`store::gc`]).
//! - [`schedule`]: the scheduler. It claims due monitors, checks them through the engine,
//!   raises their alerts and records each check.
//! - [`notify`]: what a raised alert becomes (a notification, its HTML, its deliveries), and
//!   delivery to webhooks, chats and e-mail ([`notify::deliver`]).
//! - [`worker`]: this process as a worker of the service: its heartbeat, the leases and host
//!   buckets it holds, handed back when it stops.
//! - [`transfer`]: moving in and out: a user's export, and imports from wachet,
//!   changedetection.io, urlwatch and Wachete files, stored all or nothing.
//! - [`metrics`]: `/metrics`. [`secrets`]: how tokens, keys and passwords are made and kept.
//!
//! The engine (`wachet`) is reached only through its public API: [`wachet::Checker`] to
//! validate, prepare and check, [`wachet::PortalFold`] for what a Portal check's value is,
//! [`wachet::alerts`] for what raises, [`wachet::diff`] for what changed.
//!
//! # A check, from due to stored
//!
//! 1. [`schedule::run`] claims the monitors that are due under a lease (the store's
//!    `claim_due`), fairly shared among their owners.
//! 2. Each is prepared once per version ([`schedule::prepared`]) and checked by the engine; a
//!    Portal monitor's pages stream from the crawl, folded into the monitor's own value by
//!    [`wachet::PortalFold`]. The worker's beats renew the lease while the check runs; a claim
//!    taken over meanwhile stops it.
//! 3. Its alerts decide against the alert states the store keeps (`alert_states`): a change or
//!    a failure first waits for a confirming check ([`wachet::alerts::confirm`]).
//! 4. The store's `record_checks` stores it all in one transaction: the entries of the
//!    monitor's series and of each page's, the notifications with their deliveries in the
//!    outbox, the alert states, the next due time, the lease freed. Checks that end while a
//!    group is being written are written next, together ([`schedule::group`]); a check counts
//!    as stored only once its group committed. A check of a version that is no longer current,
//!    or whose claim was taken over (its fencing token), stores nothing.
//! 5. The check is announced ([`schedule::events`]) for the web interface's live pages.
//!
//! # A notification, from raised to delivered
//!
//! 1. A raised alert becomes a notification ([`notify::notification`]) with its HTML content
//!    and one delivery per endpoint, stored with the check (step 4 above).
//! 2. [`notify::deliver::run`] claims due deliveries under a lease (`claim_deliveries`), at
//!    most so many first tries per user and hour.
//! 3. Each is sent through the engine's fetcher (the checks' network policy applies) or over
//!    SMTP, and its outcome stored (`finish_delivery`): delivered, retried later (doubling
//!    waits), or failed.
//!
//! # Glossary
//!
//! - **task**: a monitor. The API spells it `task` (`PUT /task`, `taskId`); the code says
//!   monitor ([`wachet::Monitor`]) and the store `task`.
//! - **series**: the history of one thing checked: a monitor's own, or one page a Portal
//!   monitor crawls ([`store::Series`]).
//! - **entry**: one check's result in a series (value or error, check time, time the value
//!   last changed); values are stored once however many entries name them.
//! - **own**: a monitor's own result or series, as against its crawled pages'. **owner**: the
//!   user whose monitor, folder or notification it is; a store call made for a user answers
//!   only with that user's rows.
//! - **version**: the version of a monitor's definition (the time it was last written); a check
//!   made of an older version stores nothing.
//! - **lease**: how long a claimed check or delivery is held past its worker's last beat
//!   ([`service::Settings`]' `schedule.lease`), so one lost with its process is taken up again
//!   once its lease runs out; on PostgreSQL on the database's clock.
//! - **worker**: a process that checks or delivers ([`worker`]); its beats mark it live, renew
//!   its leases and balance the host buckets it holds. **fencing token**: raised by each claim
//!   of a monitor or delivery; only the claim holding the current one stores what it did.
//! - **host bucket**: one of 64 slices of the hosts monitors watch; each is checked by one
//!   worker of a location at a time, so per-host limits hold across processes.
//! - **confirmation**: a changed value or a failure is raised only once a check soon after
//!   (`confirm_after`) agrees. Also: an e-mail address other than the account's own gets
//!   notifications only once its owner confirmed it with a code.
//! - **outbox**: the deliveries waiting to be sent, stored in the same transaction as the
//!   check that raised them, so none is lost or sent for a check that was not stored.
//! - **delivery**: one notification to one endpoint (a webhook, a chat, an e-mail address),
//!   with its tries; receivers drop duplicates by `X-Wachet-Delivery`.
//! - **part**: one of what [`service::start`] runs: the API, the scheduler, delivery,
//!   collection ([`service::Parts`]); `wachet serve --roles` picks them (`api`, `worker`: the
//!   scheduler and collection, `deliver`).

pub mod api;
pub mod cli;
pub mod connections;
pub mod hosts;
pub mod metrics;
pub mod notify;
pub mod probes;
pub mod schedule;
pub mod secrets;
pub mod service;
pub mod store;
pub mod tabs;
pub mod trace;
pub mod transfer;
pub mod web;
pub mod worker;
