//! When an endpoint's messages go, as the web forms edit it: at once, at most one message every
//! N minutes, or daily at HH:MM, and quiet hours (the endpoint's `digest` and `quietHours`).
//! The settings page and the monitor form show the same fields ([`fields`]), named by the
//! endpoint's JSON paths so the API's refusals land at them; a folder's notifications form,
//! one endpoint a line, writes the same in words after the endpoint ([`words`],
//! [`from_words`]). What is typed is judged by the API's own checks, never here.

use maud::{Markup, html};
use wachet::model::{Digest, NotificationEndpoint, QuietHours};

/// An endpoint's schedule as typed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Schedule {
    /// `now`, `every` or `daily`.
    pub when: String,
    /// The minutes of `every`.
    pub every: String,
    /// The time of `daily`.
    pub daily: String,
    /// When quiet hours begin and end (both empty: none).
    pub quiet_from: String,
    pub quiet_to: String,
}

impl Schedule {
    /// The schedule `endpoint` has.
    pub(crate) fn of(endpoint: &NotificationEndpoint) -> Schedule {
        let digest = endpoint.digest.as_ref();
        let every = digest.and_then(|d| d.every_minutes);
        let daily = digest.and_then(|d| d.daily_at.clone());
        Schedule {
            when: match (every, &daily) {
                (Some(_), _) => "every",
                (None, Some(_)) => "daily",
                (None, None) => "now",
            }
            .to_string(),
            every: every.map(|n| n.to_string()).unwrap_or_default(),
            daily: daily.unwrap_or_default(),
            quiet_from: endpoint
                .quiet_hours
                .as_ref()
                .map(|q| q.from.clone())
                .unwrap_or_default(),
            quiet_to: endpoint
                .quiet_hours
                .as_ref()
                .map(|q| q.to.clone())
                .unwrap_or_default(),
        }
    }

    /// Reads the posted field `part` (its name after the endpoint's prefix: `when`,
    /// `digest.everyMinutes`, `digest.dailyAt`, `quietHours.from`, `quietHours.to`); false for
    /// a name that is none of them.
    pub(crate) fn read(&mut self, part: &str, value: String) -> bool {
        match part {
            "when" => self.when = value,
            "digest.everyMinutes" => self.every = value,
            "digest.dailyAt" => self.daily = value,
            "quietHours.from" => self.quiet_from = value,
            "quietHours.to" => self.quiet_to = value,
            _ => return false,
        }
        true
    }

    /// Gives `endpoint` the digest and quiet hours typed. A number that is none is sent as 0,
    /// so the API refuses it at the field as it refuses a window of none.
    pub(crate) fn apply(&self, endpoint: &mut NotificationEndpoint) {
        endpoint.digest = match self.when.as_str() {
            "every" => Some(Digest {
                every_minutes: Some(self.every.trim().parse().unwrap_or(0)),
                daily_at: None,
            }),
            "daily" => Some(Digest {
                every_minutes: None,
                daily_at: Some(self.daily.trim().to_string()),
            }),
            _ => None,
        };
        let (from, to) = (self.quiet_from.trim(), self.quiet_to.trim());
        endpoint.quiet_hours = (!from.is_empty() || !to.is_empty()).then(|| QuietHours {
            from: from.to_string(),
            to: to.to_string(),
        });
    }
}

/// The schedule fields of one endpoint: `prefix` starts each field's name (`""` or
/// `notificationEndpoints[0].`), `id` each element's id (a field's is `id`, a dash and its
/// name with dashes for dots: `{id}-digest-everyMinutes`, so the monitor form's summary of
/// problems links to it); `error` is the message at a field (`digest.everyMinutes`, `digest`,
/// `quietHours.from`, ...), when it has one.
pub(crate) fn fields(
    prefix: &str,
    id: &str,
    schedule: &Schedule,
    error: &dyn Fn(&str) -> Option<String>,
) -> Markup {
    let when = match schedule.when.as_str() {
        "every" | "daily" => schedule.when.as_str(),
        _ => "now",
    };
    let name = |part: &str| format!("{prefix}{part}");
    let digest_error = ["digest", "digest.everyMinutes", "digest.dailyAt"]
        .iter()
        .find_map(|part| error(part));
    let quiet_error = ["quietHours.from", "quietHours.to"]
        .iter()
        .find_map(|part| error(part));
    let invalid = |part: &str| error(part).map(|_| "true");
    html! {
        fieldset.schedule id={ (id) "-schedule" } {
            legend { "When messages go" }
            div.schedule-choices id={ (id) "-digest" } role="radiogroup" aria-label="When messages go" aria-describedby=[digest_error.as_ref().map(|_| format!("{id}-digest-error"))] {
                div.schedule-choice {
                    input id={ (id) "-now" } type="radio" name=(name("when")) value="now" checked[when == "now"];
                    label for={ (id) "-now" } { "At once" }
                }
                div.schedule-choice {
                    input id={ (id) "-every" } type="radio" name=(name("when")) value="every" checked[when == "every"];
                    label for={ (id) "-every" } { "At most one message every" }
                    input id={ (id) "-digest-everyMinutes" } type="number" min="1" max="10080" inputmode="numeric"
                        name=(name("digest.everyMinutes")) value=(schedule.every)
                        aria-label="Minutes between messages" aria-invalid=[invalid("digest.everyMinutes")];
                    span { "minutes" }
                }
                div.schedule-choice {
                    input id={ (id) "-daily" } type="radio" name=(name("when")) value="daily" checked[when == "daily"];
                    label for={ (id) "-daily" } { "One message a day at" }
                    input id={ (id) "-digest-dailyAt" } type="time" name=(name("digest.dailyAt")) value=(schedule.daily)
                        aria-label="Time of the daily message" aria-invalid=[invalid("digest.dailyAt")];
                }
            }
            @if let Some(message) = &digest_error {
                p.field-error id={ (id) "-digest-error" } { (message) }
            }
            div.schedule-quiet {
                span.label { "Quiet hours" }
                label for={ (id) "-quietHours-from" } { "from" }
                input id={ (id) "-quietHours-from" } type="time" name=(name("quietHours.from")) value=(schedule.quiet_from)
                    aria-invalid=[invalid("quietHours.from")];
                label for={ (id) "-quietHours-to" } { "to" }
                input id={ (id) "-quietHours-to" } type="time" name=(name("quietHours.to")) value=(schedule.quiet_to)
                    aria-invalid=[invalid("quietHours.to")];
            }
            @if let Some(message) = &quiet_error {
                p.field-error { (message) }
            } @else {
                p.hint { "In your time zone. Messages held by a window or by quiet hours go as one digest when it ends; quiet hours may span midnight." }
            }
        }
    }
}

/// An endpoint's schedule in the words a folder's form writes after it (`every 30 min`,
/// `daily at 08:00`, `quiet 22:00-07:00`, separated by ` | `); empty when it goes at once.
pub(crate) fn words(endpoint: &NotificationEndpoint) -> String {
    let mut parts = Vec::new();
    match endpoint.digest.as_ref() {
        Some(Digest {
            every_minutes: Some(n),
            ..
        }) => parts.push(format!("every {n} min")),
        Some(Digest {
            daily_at: Some(at), ..
        }) => parts.push(format!("daily at {at}")),
        _ => {}
    }
    if let Some(quiet) = &endpoint.quiet_hours {
        parts.push(format!("quiet {}-{}", quiet.from, quiet.to));
    }
    parts.join(" | ")
}

/// Gives `endpoint` the schedule `parts` say (each `every N min`, `daily at HH:MM` or
/// `quiet HH:MM-HH:MM`), or says which part is none of them.
pub(crate) fn from_words<'a>(
    endpoint: &mut NotificationEndpoint,
    parts: impl Iterator<Item = &'a str>,
) -> Result<(), String> {
    for part in parts.map(str::trim).filter(|p| !p.is_empty()) {
        let lower = part.to_lowercase();
        let words: Vec<&str> = lower.split_whitespace().collect();
        match words.as_slice() {
            ["every", n, unit] if unit.starts_with("min") => {
                endpoint.digest = Some(Digest {
                    every_minutes: Some(n.parse().unwrap_or(0)),
                    daily_at: None,
                });
            }
            ["daily", "at", at] => {
                endpoint.digest = Some(Digest {
                    every_minutes: None,
                    daily_at: Some(at.to_string()),
                });
            }
            ["quiet", span] => {
                let (from, to) = span.split_once(['-', '–']).unwrap_or((span, ""));
                endpoint.quiet_hours = Some(QuietHours {
                    from: from.to_string(),
                    to: to.to_string(),
                });
            }
            _ => {
                return Err(format!(
                    "“{part}” says no time: write “every 30 min”, “daily at 08:00” or “quiet 22:00-07:00”."
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use wachet::model::MessagingServiceType;

    #[test]
    fn a_schedule_typed_becomes_the_endpoints_digest_and_quiet_hours_and_back() {
        let mut endpoint = NotificationEndpoint::new(MessagingServiceType::Webhook, None);
        let mut typed = Schedule::default();
        for (part, value) in [
            ("when", "every"),
            ("digest.everyMinutes", "30"),
            ("digest.dailyAt", "08:00"),
            ("quietHours.from", "22:00"),
            ("quietHours.to", "07:00"),
        ] {
            assert!(typed.read(part, value.to_string()));
        }
        assert!(!typed.read("value", String::new()));
        typed.apply(&mut endpoint);
        assert_eq!(endpoint.digest.as_ref().unwrap().every_minutes, Some(30));
        assert_eq!(endpoint.digest.as_ref().unwrap().daily_at, None);
        assert_eq!(words(&endpoint), "every 30 min | quiet 22:00-07:00");
        let back = Schedule::of(&endpoint);
        assert_eq!((back.when.as_str(), back.every.as_str()), ("every", "30"));
        // At once, no quiet hours: none of either.
        Schedule::default().apply(&mut endpoint);
        assert_eq!((endpoint.digest, endpoint.quiet_hours), (None, None));

        let mut endpoint = NotificationEndpoint::new(MessagingServiceType::Webhook, None);
        from_words(
            &mut endpoint,
            "daily at 08:00 | Quiet 23:00-06:30".split('|'),
        )
        .unwrap();
        assert_eq!(words(&endpoint), "daily at 08:00 | quiet 23:00-06:30");
        assert!(from_words(&mut endpoint, ["weekly"].into_iter()).is_err());
    }
}
