//! Times as a page shows them: "5 min ago" for reading at a glance, and the exact time in the
//! user's own time zone (the settings page's, `UTC` until chosen) for hovering and for the
//! places that show it whole. The machine-readable `datetime` attribute stays in UTC.

use super::session::Session;
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use maud::{Markup, html};

/// The moment a page is rendered, and the zone it shows times in.
#[derive(Debug, Clone, Copy)]
pub struct Now {
    /// When the page is rendered.
    pub at: DateTime<Utc>,
    /// The user's time zone.
    pub zone: Tz,
}

impl Now {
    /// Now, for the user of `session`.
    pub fn of(session: &Session) -> Self {
        Now {
            at: Utc::now(),
            zone: session.zone,
        }
    }

    /// `at` in full in the user's zone: `2026-03-29 03:30:00 CEST`.
    pub fn exact(&self, at: DateTime<Utc>) -> String {
        at.with_timezone(&self.zone)
            .format("%Y-%m-%d %H:%M:%S %Z")
            .to_string()
    }

    /// `at` as "5 min ago", with the exact time for hovering and machines.
    pub fn when(&self, at: Option<DateTime<Utc>>) -> Markup {
        let Some(at) = at else {
            return html! { "never" };
        };
        let seconds = (self.at - at).num_seconds().max(0);
        let relative = match seconds {
            0..60 => "just now".to_string(),
            60..3600 => format!("{} min ago", seconds / 60),
            3600..86_400 => format!("{} h ago", seconds / 3600),
            _ => format!("{} d ago", seconds / 86_400),
        };
        html! {
            time datetime=(at.to_rfc3339()) title=(self.exact(at)) { (relative) }
        }
    }

    /// `at` in full in the user's zone.
    pub fn exact_time(&self, at: DateTime<Utc>) -> Markup {
        html! { time datetime=(at.to_rfc3339()) { (self.exact(at)) } }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_times_follow_the_zone_across_a_clock_change() {
        let zone = Now {
            at: Utc::now(),
            zone: Tz::Europe__Berlin,
        };
        let before = DateTime::parse_from_rfc3339("2026-03-29T00:59:00Z")
            .map(|t| t.with_timezone(&Utc))
            .expect("time");
        let after = before + chrono::Duration::minutes(2);
        assert_eq!(zone.exact(before), "2026-03-29 01:59:00 CET");
        assert_eq!(zone.exact(after), "2026-03-29 03:01:00 CEST");
    }
}
