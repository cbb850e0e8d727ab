//! The words the pages use for the service's enums and states, written once: a monitor's state,
//! its recurrence and alerts, the alert types, comparisons and locations the monitor form
//! offers, a delivery's state and tries.

use wachet::model::{Alert, AlertType, CompareType, LocationCode, Monitor, NotificationEndpoint};

/// "every hour", "every 5 minutes", "paused".
pub(crate) fn recurrence_in_words(seconds: i32) -> String {
    let plural = |n: i32, unit: &str| {
        if n == 1 {
            format!("every {unit}")
        } else {
            format!("every {n} {unit}s")
        }
    };
    match seconds {
        ..=0 => "paused".to_string(),
        s if s % 86_400 == 0 => plural(s / 86_400, "day"),
        s if s % 3600 == 0 => plural(s / 3600, "hour"),
        s if s % 60 == 0 => plural(s / 60, "minute"),
        s => plural(s, "second"),
    }
}

/// An alert in words: "on every change", "when the number is above 3 (ignoring case)".
pub(crate) fn alert_in_words(alert: &Alert) -> String {
    let operand = alert
        .value
        .as_deref()
        .or(alert.parameters.as_ref().and_then(|p| p.value.as_deref()))
        .unwrap_or("");
    let what = match alert.kind {
        AlertType::Error => "when a check fails or recovers".to_string(),
        AlertType::NotEq => "on every change".to_string(),
        AlertType::Eq => format!("when the value is “{operand}”"),
        AlertType::Contains => format!("when the value contains “{operand}”"),
        AlertType::NotContains => format!("when the value does not contain “{operand}”"),
        AlertType::Gt => format!("when the number is above {operand}"),
        AlertType::Lt => format!("when the number is below {operand}"),
        AlertType::Increased => format!("when the number rises by more than {operand}"),
        AlertType::Decreased => format!("when the number falls by more than {operand}"),
        AlertType::Added => format!("when “{operand}” is added"),
        AlertType::Removed => format!("when “{operand}” is removed"),
        AlertType::Unchanged => match wachet::alerts::lasting::unchanged_seconds(alert) {
            Some(seconds) => format!(
                "when the value stays the same for {}",
                wachet::alerts::lasting::exact_words(seconds)
            ),
            None => format!("when the value stays the same for {operand} s"),
        },
    };
    let what = match (alert.kind, alert.remind_every_seconds) {
        (AlertType::Error, Some(every)) => format!(
            "{what}, reminding every {} while it fails",
            wachet::alerts::lasting::exact_words(every)
        ),
        _ => what,
    };
    let compare = alert
        .parameters
        .as_ref()
        .map_or_else(CompareType::default, |p| p.compare);
    match compare {
        CompareType::All => what,
        CompareType::Added => format!("{what} (in added text)"),
        CompareType::Removed => format!("{what} (in removed text)"),
        CompareType::CaseInsensitive => format!("{what} (ignoring case)"),
    }
}

/// The state of a monitor as a badge's class and label: paused, not checked yet, failed, ok.
pub(crate) fn state_of(monitor: &Monitor) -> (&'static str, &'static str) {
    let paused = monitor.recurrence_in_seconds.unwrap_or(0) == 0;
    let error = monitor.data.as_ref().and_then(|d| d.error.as_deref());
    match (paused, &monitor.data, error) {
        (true, _, _) => ("badge paused", "Paused"),
        (false, None, _) => ("badge pending", "Not checked yet"),
        (false, Some(_), Some(_)) => ("badge failed", "Failed"),
        (false, Some(_), None) => ("badge ok", "OK"),
    }
}

/// A delivery's badge class and label.
pub(crate) fn delivery_badge(state: &str) -> (&'static str, &'static str) {
    match state {
        "delivered" => ("badge ok", "Delivered"),
        "failed" => ("badge failed", "Failed"),
        _ => ("badge pending", "Pending"),
    }
}

pub(crate) fn tries(attempts: u32) -> String {
    match attempts {
        0 => "not tried yet".to_string(),
        1 => "1 try".to_string(),
        n => format!("{n} tries"),
    }
}

/// A location's name in the monitor form: the country and its code.
pub(crate) fn location_words(code: LocationCode) -> &'static str {
    match code {
        LocationCode::Default => "Where this server runs",
        LocationCode::Us => "United States (us)",
        LocationCode::Gb => "Great Britain (gb)",
        LocationCode::De => "Germany (de)",
        LocationCode::Sg => "Singapore (sg)",
        LocationCode::Au => "Australia (au)",
    }
}

/// An alert type as the monitor form offers it.
pub(crate) fn alert_words(kind: AlertType) -> &'static str {
    match kind {
        AlertType::Error => "A check fails or recovers",
        AlertType::NotEq => "The value changes",
        AlertType::Eq => "The value is …",
        AlertType::Contains => "The value contains …",
        AlertType::NotContains => "The value does not contain …",
        AlertType::Gt => "The number is above …",
        AlertType::Lt => "The number is below …",
        AlertType::Increased => "The number rises by more than …",
        AlertType::Decreased => "The number falls by more than …",
        AlertType::Added => "Text is added (containing …)",
        AlertType::Removed => "Text is removed (containing …)",
        AlertType::Unchanged => "The value stays the same for …",
    }
}

/// What an alert compares, as the monitor form offers it.
pub(crate) fn compare_words(compare: CompareType) -> &'static str {
    match compare {
        CompareType::All => "the whole value",
        CompareType::Added => "only added text",
        CompareType::Removed => "only removed text",
        CompareType::CaseInsensitive => "the value, ignoring case",
    }
}

/// An endpoint as the forms write it, one a line: its type and its value (`Webhook https://…`).
pub(crate) fn endpoint_words(endpoint: &NotificationEndpoint) -> String {
    format!(
        "{} {}",
        endpoint.kind,
        endpoint.value.as_deref().unwrap_or("")
    )
}
