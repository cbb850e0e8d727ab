//! The monitor form: every field of a monitor as `PUT /task` takes it, as the text a person
//! typed ([`Fields`]), read from a posted form (fields named by their JSON paths, so
//! `alerts[1].value` or `headers[0].key`), turned into the API's [`Monitor`] and back, and
//! rendered with the API's validation messages at the fields they concern ([`Problems`]).
//! Rows left empty are dropped before the monitor is built and the form shows the remaining
//! rows in the same order, so an API error's row index is the row shown.

// The three jobs of the form, each in its file; what callers use is re-exported here.
mod fields;
mod parse;
mod render;

use crate::web::shared::schedule::Schedule;
use crate::web::shared::session::Session;
use crate::web::shared::words::{alert_words, compare_words, location_words};
use maud::{Markup, html};
use std::collections::BTreeMap;
use wachet::alerts::lasting;
use wachet::model::{
    Alert, AlertParameters, AlertType, ClientJobType, CompareType, HeaderPair, LineOrder,
    LocationCode, MessagingServiceType, Monitor, NoiseMask, NotificationEndpoint, Proxy, UrlFilter,
    UrlFilterType, UrlFilterValue,
};

pub use fields::*;
pub use parse::*;
pub use render::*;

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_monitor_goes_through_the_form_and_back_unchanged() {
        let mut monitor = Monitor::new("https://example.com/a");
        monitor.name = Some("A".into());
        monitor.x_path = Some("//p".into());
        monitor.alerts = Some(vec![Alert {
            kind: AlertType::Gt,
            value: Some("3".into()),
            parameters: Some(AlertParameters {
                compare: CompareType::Added,
                value: None,
            }),
            remind_every_seconds: None,
        }]);
        // Durations are shown in words and read back as seconds.
        monitor.alerts.get_or_insert_default().extend([
            Alert {
                kind: AlertType::Error,
                value: None,
                parameters: None,
                remind_every_seconds: Some(6 * 3600),
            },
            Alert {
                kind: AlertType::Unchanged,
                value: Some("2592000".into()),
                parameters: None,
                remind_every_seconds: None,
            },
        ]);
        monitor.recurrence_in_seconds = Some(120);
        monitor.headers = Some(vec![HeaderPair::new("X-A", "b")]);
        monitor.job_type = ClientJobType::Portal;
        monitor.crawling_depth = Some(3);
        monitor.url_filter = Some(UrlFilter {
            include: Some(vec![UrlFilterValue {
                filter: Some("/news/".into()),
                kind: UrlFilterType::Contains,
            }]),
            exclude: None,
        });
        monitor.notification_endpoints = Some(vec![]);
        monitor.method = Some("GET".into());
        monitor.error_after_failures = Some(3);
        monitor.noise = Some(vec![
            NoiseMask {
                pattern: r"(\d+) views".into(),
                learned: true,
                active: false,
                example: None,
            },
            NoiseMask {
                pattern: "token=\\w+".into(),
                learned: false,
                active: true,
                example: None,
            },
        ]);
        monitor.compare_lines = Some(LineOrder::Set);
        let fields = Fields::from_monitor(&monitor);
        assert_eq!(fields.recurrence, "custom");
        assert_eq!(
            (
                fields.alerts[1].remind.as_str(),
                fields.alerts[2].value.as_str()
            ),
            ("6 h", "30 d")
        );
        assert_eq!(fields.to_monitor().unwrap(), monitor);
    }

    #[test]
    fn rows_are_read_by_index_and_empty_ones_dropped() {
        let mut posted = parse(pairs(&[
            ("url", "https://e.com"),
            ("headers[1].key", "B"),
            ("headers[1].value", "2"),
            ("headers[0].key", ""),
            ("headers[0].value", ""),
            ("alerts[0].type", ""),
            ("alerts[1].type", "Contains"),
            ("alerts[1].value", "x"),
            ("recurrence", "3600"),
            ("add", "headers"),
        ]))
        .unwrap();
        assert_eq!(posted.add.as_deref(), Some("headers"));
        posted.fields.compact();
        let monitor = posted.fields.to_monitor().unwrap();
        assert_eq!(monitor.headers, Some(vec![HeaderPair::new("B", "2")]));
        assert_eq!(monitor.alerts.unwrap()[0].kind, AlertType::Contains);
        assert!(matches!(
            parse(pairs(&[("headers[500].key", "x")])),
            Err(FormError::TooManyRows)
        ));
    }

    #[test]
    fn noise_rows_are_read_removed_and_added() {
        let mut posted = parse(pairs(&[
            ("url", "https://e.com"),
            ("recurrence", "3600"),
            ("noise[0].pattern", "a"),
            ("noise[0].learned", "true"),
            ("noise[0].active", "true"),
            ("noise[1].pattern", "b"),
            ("noise[2].pattern", ""),
            ("noiseAdd", "c"),
            ("compareLines", "set"),
            ("remove", "noise[5]"),
        ]))
        .unwrap();
        posted.fields.compact();
        posted.fields.remove_row("noise[5]");
        let monitor = posted.fields.to_monitor().unwrap();
        let masks: Vec<(&str, bool, bool)> = monitor
            .noise
            .iter()
            .flatten()
            .map(|m| (m.pattern.as_str(), m.learned, m.active))
            .collect();
        assert_eq!(
            masks,
            [("a", true, true), ("b", false, false), ("c", false, true)]
        );
        assert_eq!(monitor.compare_lines, Some(LineOrder::Set));
        posted.fields.remove_row("noise[1]");
        assert_eq!(posted.fields.noise.len(), 2);
        assert_eq!(posted.fields.noise[1].pattern, "c");
    }

    #[test]
    fn api_errors_land_at_their_fields() {
        let mut fields = Fields::new_monitor(60);
        fields.proxies = "zz".into();
        let mut errors = BTreeMap::new();
        errors.insert("proxies[0].location".to_string(), vec!["no".to_string()]);
        errors.insert("alerts[0].parameters.value".to_string(), vec!["bad".into()]);
        errors.insert("xPath".to_string(), vec!["broken".into()]);
        errors.insert("somethingElse".to_string(), vec!["?".into()]);
        let problems = from_error(errors, &fields);
        let slots: Vec<&str> = problems.0.keys().map(String::as_str).collect();
        assert_eq!(
            slots,
            ["alerts[0].value", "form", "proxies", "xPath"],
            "{problems:?}"
        );
        assert_eq!(id_of("alerts[0].value"), "f-alerts-0--value");
    }
}
