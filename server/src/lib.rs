//! The `wachet` command line and REST service (`wachet serve`), frontends of the wachet engine.
//!
//! # Map
//!
//! - [`cli`]: the command line. `serve` turns its flags into one [`service::Settings`];
//!   `check`, `crawl`, `fixtures` and `user` run without a service.
//! - [`service`]: the running service. [`service::start`] starts every part over one store and
//!   engine, [`service::Running::shutdown`] stops them in order; the binary and every test
//!   start the service so.
//! - [`ops`]: what the service does for a user, once for every frontend: monitors, folders,
//!   accounts, endpoints, feeds, notifications, history, with the validation rules and limits.
//!   The only callers of the store among the frontends' code; [`ops::OpError`] says what went
//!   wrong.
//! - [`api`]: the REST API under `/thirdparty/v1`: JSON in, operations called, JSON and
//!   problem+json out; the OpenAPI document.
//! - [`web`]: the web interface at `/`, rendered on the server: forms in, the same operations
//!   called, pages out.
//! - [`http`]: the one router composing the API and the web interface (they never import each
//!   other), with the health probes ([`probes`]) beside them and every request's id and span
//!   ([`trace`]) around them.
//! - [`connections`]: the listener's connections: how many, how slow, drained on shutdown.
//! - [`hosts`]: the `Host` names the service answers to, checked before any route;
//!   [`origin`]: the address a request reached the service at, for the links handed out.
//! - [`store`]: everything kept, behind one trait per resource ([`store::UserStore`],
//!   [`store::TaskStore`], [`store::FolderStore`], [`store::HistoryStore`],
//!   [`store::NotificationStore`], [`store::ScheduleStore`], [`store::OutboxStore`],
//!   [`store::FeedStore`]; [`store::Store`] is all of them), on SQLite in [`store::sqlite`] with
//!   its cache inside; a part takes the resources it uses (the scheduler a `ScheduleStore`,
//!   delivery an `OutboxStore`). The types it keeps are its own, such as a notification's
//!   [`store::Explanation`], so it imports none of the modules above it. Also the collection
//!   of values no entry names ([`store::gc`]).
//! - [`schedule`]: the scheduler. It claims due monitors, checks them through the engine,
//!   raises their alerts and records each check.
//! - [`notify`]: what a raised alert becomes (a notification, its HTML, its deliveries), and
//!   delivery to webhooks, chats and e-mail ([`notify::deliver`]).
//! - [`worker`]: this process as a worker of the service: its heartbeat, the leases and host
//!   buckets it holds, handed back when it stops.
//! - [`transfer`]: moving in and out: a user's export, and imports from wachet,
//!   changedetection.io, urlwatch and Wachete files, stored all or nothing, each monitor checked
//!   by the rules the operations give it ([`ops::transfer`]).
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
//!    most so many first tries per user and hour and a few in flight per receiving host.
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
pub mod download;
pub mod hosts;
pub mod http;
pub mod metrics;
pub mod notify;
pub mod ops;
pub mod origin;
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

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::Path;

    /// Every `.rs` file below `dir`.
    fn files_below(dir: &Path) -> Vec<std::path::PathBuf> {
        fn walk(dir: &Path, files: &mut Vec<std::path::PathBuf>) {
            for entry in std::fs::read_dir(dir).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    walk(&path, files);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    files.push(path);
                }
            }
        }
        let mut files = Vec::new();
        walk(dir, &mut files);
        files
    }

    /// The paths a file names after `prefix` (`crate::` or `crate::web::`), each as the words
    /// joined by `::` that follow it, read from the code before the file's tests (comments
    /// dropped).
    fn named_after(path: &Path, prefix: &str) -> Vec<String> {
        let text = std::fs::read_to_string(path).unwrap();
        let mut named = Vec::new();
        for line in text.lines().take_while(|l| !l.starts_with("#[cfg(test)]")) {
            let code = line.split("//").next().unwrap_or("");
            for (at, _) in code.match_indices(prefix) {
                let rest = &code[at + prefix.len()..];
                let end = rest
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                    .unwrap_or(rest.len());
                named.push(rest[..end].trim_end_matches(':').to_string());
            }
        }
        named
    }

    /// Which top-level modules each top-level module of this crate names (`crate::x`).
    fn import_graph() -> BTreeMap<String, BTreeSet<String>> {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for path in files_below(&src) {
            let relative = path.strip_prefix(&src).unwrap();
            let first = relative.components().next().unwrap().as_os_str();
            let module = first.to_string_lossy().trim_end_matches(".rs").to_string();
            if matches!(module.as_str(), "lib" | "main") {
                continue;
            }
            let named = graph.entry(module.clone()).or_default();
            for other in named_after(&path, "crate::") {
                let other = other.split("::").next().unwrap_or("");
                if !other.is_empty() && other != module {
                    named.insert(other.to_string());
                }
            }
        }
        graph
    }

    /// Which page modules of the web interface (`monitors::show`, `shared::layout`, ...) each
    /// one names through `crate::web::`.
    fn web_graph() -> BTreeMap<String, BTreeSet<String>> {
        let web = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/web");
        let module_of = |path: &Path| {
            let relative = path.strip_prefix(&web).unwrap().with_extension("");
            let words: Vec<String> = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .filter(|w| w != "mod")
                .collect();
            words.join("::")
        };
        let files = files_below(&web);
        let modules: BTreeSet<String> = files.iter().map(|p| module_of(p)).collect();
        let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for path in &files {
            let module = module_of(path);
            if module.is_empty() {
                continue; // the router: it names every page
            }
            let named = graph.entry(module.clone()).or_default();
            for other in named_after(path, "crate::web::") {
                // The longest leading path that is a module: `shared::pages::bad_input` is
                // `shared::pages`.
                let words: Vec<&str> = other.split("::").collect();
                if let Some(found) = (1..=words.len())
                    .rev()
                    .map(|n| words[..n].join("::"))
                    .find(|candidate| modules.contains(candidate))
                    && found != module
                    && !matches!(
                        found.as_str(),
                        "account" | "folders" | "monitors" | "shared"
                    )
                {
                    named.insert(found);
                }
            }
        }
        graph
    }

    /// The modules reached from `from` through its imports.
    fn reach(graph: &BTreeMap<String, BTreeSet<String>>, from: &str) -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.to_string()];
        while let Some(module) = stack.pop() {
            for next in graph.get(&module).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    stack.push(next.clone());
                }
            }
        }
        seen
    }

    /// Each module that reaches itself back, named with the modules its circle runs through.
    fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
        graph
            .keys()
            .filter_map(|module| {
                let through = cycle_through(graph, module);
                (!through.is_empty()).then(|| format!("{module} through {through:?}"))
            })
            .collect()
    }

    /// The modules of the circles through `from` (empty when `from` is in none).
    fn cycle_through(graph: &BTreeMap<String, BTreeSet<String>>, from: &str) -> Vec<String> {
        reach(graph, from)
            .into_iter()
            .filter(|module| reach(graph, module).contains(from))
            .collect()
    }

    /// Imports run one way between the service's top-level modules: none reaches itself
    /// through others, so the graph of `crate::` names between them has no cycle. Each circle
    /// found is named with the modules it runs through.
    #[test]
    fn top_level_modules_import_one_way() {
        let graph = import_graph();
        for needed in ["api", "web", "ops", "store", "http", "notify", "worker"] {
            assert!(graph.contains_key(needed), "no module {needed} read");
        }
        assert!(
            graph["notify"].contains("store"),
            "the imports were not read: notify uses the store's types"
        );
        let circles = circles(&graph);
        assert!(
            circles.is_empty(),
            "modules that import themselves back: {circles:?}"
        );
    }

    /// The web interface's pages import one way too: no page module reaches itself through
    /// others, so each can be read, tested and changed alone.
    #[test]
    fn web_pages_import_one_way() {
        let graph = web_graph();
        assert!(
            graph
                .get("monitors::show")
                .is_some_and(|named| named.contains("shared::layout")),
            "the imports were not read: a monitor's page uses the layout"
        );
        let circles = circles(&graph);
        assert!(
            circles.is_empty(),
            "page modules that import themselves back: {circles:?}"
        );
    }
}
