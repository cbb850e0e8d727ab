//! The service's own rules for what it stores, on top of the engine's validation of a monitor:
//! paused or a recurrence of at least the minimum, bounded lengths and counts, and notification
//! endpoints this server can deliver to. Every problem is reported with its field.

use super::OpError;
use crate::notify::channel::Refusal;
use wachet::Checker;
use wachet::alerts::compare::{Comparator, CompareError, MAX_MASKS};
use wachet::model::{Folder, Monitor, NoiseMask, NotificationEndpoint};
use wachet::validate::FieldError;

/// Longest name of a monitor or folder.
pub const MAX_NAME_CHARS: usize = 256;
/// Longest note.
pub const MAX_NOTE_CHARS: usize = 4096;
/// Largest request body a monitor sends.
pub const MAX_BODY_BYTES: usize = 64 * 1024;
/// Most alerts on one monitor.
pub const MAX_ALERTS: usize = 50;
/// Most notification endpoints in one list.
pub const MAX_ENDPOINTS: usize = 50;
/// Longest alert operand.
const MAX_OPERAND_CHARS: usize = 4096;

struct Problems(Vec<FieldError>);

impl Problems {
    fn add(&mut self, field: impl Into<String>, message: impl Into<String>) {
        self.0.push(FieldError {
            field: field.into(),
            message: message.into(),
        });
    }

    fn too_long(&mut self, field: &str, value: Option<&str>, max: usize) {
        if value.is_some_and(|v| v.chars().count() > max) {
            self.add(field, format!("must be at most {max} characters"));
        }
    }

    fn finish(self) -> Result<(), OpError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(OpError::fields(self.0))
        }
    }
}

/// Checks a monitor for storing: the engine's validation and the rules above.
pub fn monitor(
    checker: &dyn Checker,
    monitor: &Monitor,
    min_recurrence: i32,
) -> Result<(), OpError> {
    let mut problems = Problems(Vec::new());
    problems.too_long("name", monitor.name.as_deref(), MAX_NAME_CHARS);
    problems.too_long("note", monitor.note.as_deref(), MAX_NOTE_CHARS);
    match monitor.recurrence_in_seconds {
        None | Some(0) => {}
        Some(r) if r < 0 => problems.add(
            "recurrenceInSeconds",
            "must be 0 or null (paused) or a number of seconds",
        ),
        Some(r) if r < min_recurrence => problems.add(
            "recurrenceInSeconds",
            format!("must be at least {min_recurrence} seconds (or 0 to pause), not {r}"),
        ),
        Some(_) => {}
    }
    let most = wachet::alerts::confirm::Confirmation::MAX_ERROR_AFTER_FAILURES;
    if let Some(n) = monitor.error_after_failures
        && !(1..=i64::from(most)).contains(&i64::from(n))
    {
        problems.add(
            "errorAfterFailures",
            format!("must be from 1 to {most} failed checks in a row (or null for 2), not {n}"),
        );
    }
    noise(monitor, &mut problems);
    // The engine's validation bounds the headers, URL filters and patterns
    // (`wachet::validate::MAX_HEADERS` and the rest).
    if monitor
        .body
        .as_ref()
        .is_some_and(|b| b.len() > MAX_BODY_BYTES)
    {
        problems.add(
            "body",
            format!("must be at most {} KiB", MAX_BODY_BYTES / 1024),
        );
    }
    let alerts = monitor.alerts.as_deref().unwrap_or_default();
    if alerts.len() > MAX_ALERTS {
        problems.add("alerts", format!("at most {MAX_ALERTS} alerts"));
    }
    for (i, alert) in alerts.iter().enumerate() {
        problems.too_long(
            &format!("alerts[{i}].value"),
            alert.value.as_deref(),
            MAX_OPERAND_CHARS,
        );
        let parameter = alert.parameters.as_ref().and_then(|p| p.value.as_deref());
        problems.too_long(
            &format!("alerts[{i}].parameters.value"),
            parameter,
            MAX_OPERAND_CHARS,
        );
        for (field, message) in wachet::alerts::lasting::problems(alert) {
            problems.add(format!("alerts[{i}].{field}"), message);
        }
    }
    endpoints(
        "notificationEndpoints",
        monitor
            .notification_endpoints
            .as_deref()
            .unwrap_or_default(),
        &mut problems,
    );
    if let Err(invalid) = checker.validate(monitor) {
        problems.0.extend(invalid.errors);
    }
    problems.finish()
}

/// The noise masks (extension): each pattern usable as the comparison compiles it
/// ([`Comparator::of`]: syntax, size), none empty, at most [`MAX_MASKS`]. Switched-off masks
/// are checked too: switching one on must not be what breaks the monitor.
fn noise(monitor: &Monitor, problems: &mut Problems) {
    let Some(masks) = monitor.noise.as_deref() else {
        return;
    };
    if masks.len() > MAX_MASKS {
        problems.add(
            "noise",
            format!("at most {MAX_MASKS} masks, not {}", masks.len()),
        );
        return;
    }
    for (i, mask) in masks.iter().enumerate() {
        if mask.pattern.trim().is_empty() {
            problems.add(format!("noise[{i}].pattern"), "must not be empty");
            continue;
        }
        let alone = Monitor {
            noise: Some(vec![NoiseMask {
                active: true,
                ..mask.clone()
            }]),
            ..Monitor::default()
        };
        if let Err(CompareError::Pattern { message, .. }) = Comparator::of(&alone) {
            problems.add(format!("noise[{i}].pattern"), message);
        }
    }
}

/// Checks a folder for storing.
pub fn folder(folder: &Folder) -> Result<(), OpError> {
    let mut problems = Problems(Vec::new());
    problems.too_long("name", folder.name.as_deref(), MAX_NAME_CHARS);
    if let Some(list) = &folder.notification_endpoints {
        endpoints("notificationEndpoints", list, &mut problems);
    }
    problems.finish()
}

/// Checks a user's own list of notification endpoints.
pub fn endpoint_list(list: &[NotificationEndpoint]) -> Result<(), OpError> {
    let mut problems = Problems(Vec::new());
    endpoints("notificationEndpoints", list, &mut problems);
    problems.finish()
}

/// The longest digest window: a week.
const MAX_DIGEST_MINUTES: u32 = 7 * 24 * 60;

fn endpoints(field: &str, list: &[NotificationEndpoint], problems: &mut Problems) {
    if list.len() > MAX_ENDPOINTS {
        problems.add(field, format!("at most {MAX_ENDPOINTS} endpoints"));
        return;
    }
    for (i, endpoint) in list.iter().enumerate() {
        let at = format!("{field}[{i}]");
        let value = endpoint.value.as_deref().unwrap_or("");
        match crate::notify::channel::check(endpoint.kind, value) {
            Ok(()) => {}
            Err(Refusal::Kind(message)) => problems.add(format!("{at}.type"), message),
            Err(Refusal::Value(message)) => problems.add(format!("{at}.value"), message),
        }
        if let Err(err) = crate::notify::template::check(endpoint) {
            problems.add(format!("{at}.{}", err.field), err.message);
        }
        let clock = crate::store::shape_clock;
        if let Some(digest) = &endpoint.digest {
            match (digest.every_minutes, digest.daily_at.as_deref()) {
                (Some(minutes), None) if (1..=MAX_DIGEST_MINUTES).contains(&minutes) => {}
                (Some(_), None) => problems.add(
                    format!("{at}.digest.everyMinutes"),
                    format!("must be 1 to {MAX_DIGEST_MINUTES} minutes"),
                ),
                (None, Some(time)) if clock(time).is_some() => {}
                (None, Some(_)) => problems.add(format!("{at}.digest.dailyAt"), "must be HH:MM"),
                _ => problems.add(
                    format!("{at}.digest"),
                    "give everyMinutes or dailyAt (one of them)",
                ),
            }
        }
        if let Some(quiet) = &endpoint.quiet_hours {
            for (name, time) in [("from", &quiet.from), ("to", &quiet.to)] {
                if clock(time).is_none() {
                    problems.add(format!("{at}.quietHours.{name}"), "must be HH:MM");
                }
            }
            if clock(&quiet.from).is_some() && clock(&quiet.from) == clock(&quiet.to) {
                problems.add(format!("{at}.quietHours.to"), "must differ from from");
            }
        }
    }
}

/// A plausible e-mail address ([`crate::notify::channel::is_email`]).
pub fn is_email(value: &str) -> bool {
    crate::notify::channel::is_email(value)
}
