//! The monitor form: every field of a monitor as `PUT /task` takes it, as the text a person
//! typed ([`Fields`]), read from a posted form (fields named by their JSON paths, so
//! `alerts[1].value` or `headers[0].key`), turned into the API's [`Monitor`] and back, and
//! rendered with the API's validation messages at the fields they concern ([`Problems`]).
//! Rows left empty are dropped before the monitor is built and the form shows the remaining
//! rows in the same order, so an API error's row index is the row shown.

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

/// Most rows of one list a posted form may carry (the API allows 50 alerts, 50 headers, 50
/// endpoints and 100 URL filters; rows past this are refused before anything is built).
pub const MAX_ROWS: usize = 120;

/// The recurrence presets: seconds and words.
pub const PRESETS: &[(i32, &str)] = &[
    (300, "Every 5 minutes"),
    (3600, "Every hour"),
    (86_400, "Every day"),
    (0, "Paused"),
];

/// One alert row.
#[derive(Debug, Clone, Default)]
pub struct AlertRow {
    /// The alert type's name; empty for "no alert" (the row is dropped).
    pub kind: String,
    /// The compare type's name.
    pub compare: String,
    /// The operand; for Unchanged, how long in words (`30 d`) or seconds.
    pub value: String,
    /// How often an Error alert reminds while the failure lasts, in words (`6 h`) or seconds;
    /// empty for never.
    pub remind: String,
}

/// A row of two texts: a header (name, value), an endpoint (type, value) or a URL filter
/// (type, filter).
#[derive(Debug, Clone, Default)]
pub struct Pair {
    /// Header name, endpoint type or filter type.
    pub first: String,
    /// Header value, endpoint value or filter text.
    pub second: String,
}

/// One noise mask row: a pattern, whether wachet learned it (then its pattern is shown, not
/// edited, and it is switched off rather than removed), the text it masked when learned.
#[derive(Debug, Clone, Default)]
pub struct NoiseRow {
    pub pattern: String,
    pub learned: bool,
    pub active: bool,
    pub example: String,
}

/// The form's fields, as typed.
#[derive(Debug, Clone, Default)]
pub struct Fields {
    /// The monitor's id when editing.
    pub id: Option<String>,
    pub name: String,
    pub url: String,
    /// `SinglePage` or `Portal`.
    pub job_type: String,
    pub x_path: String,
    pub exclude_x_path: String,
    pub regex: String,
    pub alerts: Vec<AlertRow>,
    /// A preset's seconds, or `custom`.
    pub recurrence: String,
    /// The seconds when `recurrence` is `custom`.
    pub recurrence_custom: String,
    pub endpoints: Vec<Pair>,
    pub location: String,
    /// Proxy locations, separated by commas.
    pub proxies: String,
    pub dynamic_content: bool,
    pub scroll_page: bool,
    /// Notifications kept on the list and sent nowhere.
    pub muted: bool,
    pub headers: Vec<Pair>,
    pub method: String,
    pub body: String,
    pub collect_raw_html: bool,
    pub note: String,
    /// The folder's id; empty for the root.
    pub folder: String,
    pub crawling_depth: String,
    /// Failed checks in a row before Error raises; empty for the service's default.
    pub error_after_failures: String,
    pub include: Vec<Pair>,
    pub exclude: Vec<Pair>,
    pub all_domains: bool,
    pub ignore_invalid_pages: bool,
    pub binary: bool,
    /// The noise masks, in the monitor's order.
    pub noise: Vec<NoiseRow>,
    /// A pattern to add as the person's own mask.
    pub noise_add: String,
    /// `ordered` or `set`.
    pub compare_lines: String,
    /// `selected` (the default), `all` or `none`: which links show their targets.
    pub watch_links: String,
    /// What wachet found about the value's noise (read-only, shown in the Noise section).
    pub noise_notice: Option<String>,
    /// The browser steps and sign-in.
    pub steps: super::steps_form::StepFields,
}

/// What the posted form carried besides the fields.
#[derive(Debug, Default)]
pub struct Posted {
    pub fields: Fields,
    pub csrf: Option<String>,
    /// The one-time token of a new monitor's form.
    pub token: Option<String>,
    /// An "Add another" button: the list to grow by an empty row.
    pub add: Option<String>,
    /// A "Remove" button: the row to drop, such as `noise[2]`.
    pub remove: Option<String>,
}

/// Field problems, by slot (the name of the control, or of the group, that shows them).
#[derive(Debug, Clone, Default)]
pub struct Problems(pub BTreeMap<String, Vec<String>>);

impl Problems {
    /// Adds a message at `slot`.
    pub fn add(&mut self, slot: impl Into<String>, message: impl Into<String>) {
        self.0.entry(slot.into()).or_default().push(message.into());
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn at(&self, slot: &str) -> Option<&[String]> {
        self.0.get(slot).map(Vec::as_slice)
    }
}

impl Fields {
    /// A new monitor's form: hourly (or the service's minimum), alerting on every change, as
    /// the quick-add does.
    pub fn new_monitor(min_recurrence: i32) -> Fields {
        let hourly = 3600.max(min_recurrence);
        Fields {
            job_type: ClientJobType::SinglePage.name().into(),
            alerts: vec![AlertRow {
                kind: AlertType::NotEq.name().into(),
                compare: CompareType::All.name().into(),
                value: String::new(),
                remind: String::new(),
            }],
            recurrence: preset_or_custom(hourly).0,
            recurrence_custom: preset_or_custom(hourly).1,
            location: LocationCode::Default.name().into(),
            method: "GET".into(),
            crawling_depth: "2".into(),
            ..Fields::default()
        }
    }

    /// The form of a stored monitor.
    pub fn from_monitor(monitor: &Monitor) -> Fields {
        let seconds = monitor.recurrence_in_seconds.unwrap_or(0).max(0);
        let (recurrence, recurrence_custom) = preset_or_custom(seconds);
        let filters = |list: &Option<Vec<UrlFilterValue>>| -> Vec<Pair> {
            list.iter()
                .flatten()
                .map(|f| Pair {
                    first: f.kind.name().into(),
                    second: f.filter.clone().unwrap_or_default(),
                })
                .collect()
        };
        let filter = monitor.url_filter.clone().unwrap_or_default();
        Fields {
            id: monitor.id.clone(),
            name: monitor.name.clone().unwrap_or_default(),
            url: monitor.url.clone().unwrap_or_default(),
            job_type: monitor.job_type.name().into(),
            x_path: monitor.x_path.clone().unwrap_or_default(),
            exclude_x_path: monitor.exclude_x_path.clone().unwrap_or_default(),
            regex: monitor.regex.clone().unwrap_or_default(),
            alerts: monitor
                .alerts
                .iter()
                .flatten()
                .map(|a| AlertRow {
                    kind: a.kind.name().into(),
                    compare: a
                        .parameters
                        .as_ref()
                        .map_or(CompareType::All, |p| p.compare)
                        .name()
                        .into(),
                    value: match (a.kind, lasting::unchanged_seconds(a)) {
                        (AlertType::Unchanged, Some(seconds)) => lasting::exact_words(seconds),
                        _ => wachet::alerts::operand(a).to_string(),
                    },
                    remind: a
                        .remind_every_seconds
                        .map(lasting::exact_words)
                        .unwrap_or_default(),
                })
                .collect(),
            recurrence,
            recurrence_custom,
            endpoints: monitor
                .notification_endpoints
                .iter()
                .flatten()
                .map(|e| Pair {
                    first: e.kind.name().into(),
                    second: e.value.clone().unwrap_or_default(),
                })
                .collect(),
            location: monitor.location.name().into(),
            proxies: monitor
                .proxies
                .iter()
                .flatten()
                .filter_map(|p| p.location.clone())
                .collect::<Vec<_>>()
                .join(", "),
            dynamic_content: monitor.dynamic_content,
            scroll_page: monitor.scroll_page,
            muted: monitor.muted == Some(true),
            headers: monitor
                .headers
                .iter()
                .flatten()
                .map(|h| Pair {
                    first: h.key.clone().unwrap_or_default(),
                    second: h.value.clone().unwrap_or_default(),
                })
                .collect(),
            method: monitor.method.clone().unwrap_or_else(|| "GET".into()),
            body: monitor.body.clone().unwrap_or_default(),
            collect_raw_html: monitor.collect_raw_html,
            note: monitor.note.clone().unwrap_or_default(),
            folder: monitor.folder_id.clone().unwrap_or_default(),
            crawling_depth: monitor.effective_crawling_depth().to_string(),
            error_after_failures: monitor
                .error_after_failures
                .map(|n| n.to_string())
                .unwrap_or_default(),
            include: filters(&filter.include),
            exclude: filters(&filter.exclude),
            all_domains: monitor.crawl_pages_from_all_domains,
            ignore_invalid_pages: monitor.ignore_invalid_pages,
            binary: monitor.crawl_binary_content,
            noise: monitor
                .noise
                .iter()
                .flatten()
                .map(|m| NoiseRow {
                    pattern: m.pattern.clone(),
                    learned: m.learned,
                    active: m.active,
                    example: m.example.clone().unwrap_or_default(),
                })
                .collect(),
            noise_add: String::new(),
            compare_lines: line_order_name(monitor.compare_lines.unwrap_or_default()).into(),
            watch_links: links_name(monitor.watch_links).into(),
            noise_notice: monitor.noise_notice.clone(),
            steps: super::steps_form::StepFields::of(monitor),
        }
    }

    /// Whether this is a Portal monitor's form.
    pub fn is_portal(&self) -> bool {
        ClientJobType::parse(&self.job_type) == Some(ClientJobType::Portal)
    }

    /// Drops the rows left empty, so the rows shown are the monitor's, index for index.
    pub fn compact(&mut self) {
        self.alerts.retain(|a| !a.kind.trim().is_empty());
        self.endpoints.retain(|e| !e.second.trim().is_empty());
        self.headers
            .retain(|h| !h.first.trim().is_empty() || !h.second.trim().is_empty());
        self.include.retain(|f| !f.second.is_empty());
        self.exclude.retain(|f| !f.second.is_empty());
        // An emptied pattern removes its row, as an emptied header does; the pattern typed in
        // the add field becomes the last row, so its errors land on a row like the others'.
        self.noise.retain(|m| !m.pattern.trim().is_empty());
        self.steps.compact();
        if !self.noise_add.trim().is_empty() {
            self.noise.push(NoiseRow {
                pattern: std::mem::take(&mut self.noise_add),
                learned: false,
                active: true,
                example: String::new(),
            });
        }
    }

    /// Drops the row a "Remove" button names (`noise[2]`); nothing for another name.
    pub fn remove_row(&mut self, row: &str) {
        if self.steps.remove_row(row) {
            return;
        }
        let index = row
            .strip_prefix("noise[")
            .and_then(|rest| rest.strip_suffix(']'))
            .and_then(|n| n.parse::<usize>().ok());
        if let Some(index) = index.filter(|i| *i < self.noise.len()) {
            self.noise.remove(index);
        }
    }

    /// Adds an empty row to the list named `list` (an "Add another" button's value).
    pub fn add_row(&mut self, list: &str) {
        match list {
            "alerts" => self.alerts.push(AlertRow {
                kind: String::new(),
                compare: CompareType::All.name().into(),
                value: String::new(),
                remind: String::new(),
            }),
            "headers" => self.headers.push(Pair::default()),
            "notificationEndpoints" => self.endpoints.push(Pair {
                first: MessagingServiceType::Email.name().into(),
                second: String::new(),
            }),
            "urlFilter.include" => self.include.push(Pair::default()),
            "urlFilter.exclude" => self.exclude.push(Pair::default()),
            other => {
                self.steps.add_row(other);
            }
        }
    }

    /// The monitor the fields describe (after [`Fields::compact`]), or the problems the form
    /// itself finds (a recurrence or depth that is no number, an unknown choice); everything
    /// else is the API's to judge.
    pub fn to_monitor(&self) -> Result<Monitor, Problems> {
        let mut problems = Problems::default();
        let text = |s: &str| Some(s.to_string()).filter(|s| !s.trim().is_empty());
        // A choice left out (a form posted by a script) is its default.
        let job_type = or_default(&self.job_type, ClientJobType::parse).unwrap_or_else(|| {
            problems.add("jobType", "choose SinglePage or Portal");
            ClientJobType::SinglePage
        });
        let recurrence = if self.recurrence == "custom" {
            match self.recurrence_custom.trim().parse::<i32>() {
                Ok(seconds) => Some(seconds),
                Err(_) => {
                    problems.add(
                        "recurrenceInSeconds",
                        "must be a whole number of seconds (0 pauses)",
                    );
                    None
                }
            }
        } else {
            match self.recurrence.trim().parse::<i32>() {
                Ok(seconds) => Some(seconds),
                Err(_) => {
                    problems.add("recurrenceInSeconds", "choose how often to check");
                    None
                }
            }
        };
        let depth = match self.crawling_depth.trim() {
            "" => None,
            depth => match depth.parse::<i32>() {
                Ok(depth) => Some(depth),
                Err(_) => {
                    problems.add("crawlingDepth", "must be 1, 2 or 3");
                    None
                }
            },
        };
        let error_after_failures = match self.error_after_failures.trim() {
            "" => None,
            n => match n.parse::<i32>() {
                Ok(n) => Some(n),
                Err(_) => {
                    problems.add("errorAfterFailures", "must be a number from 1 to 10");
                    None
                }
            },
        };
        let compare_lines = match self.compare_lines.trim() {
            "" | "ordered" => LineOrder::Ordered,
            "set" => LineOrder::Set,
            _ => {
                problems.add("compareLines", "choose in order or as a set");
                LineOrder::Ordered
            }
        };
        let watch_links = match self.watch_links.trim() {
            "" | "selected" => None,
            "all" => Some(true),
            "none" => Some(false),
            _ => {
                problems.add("watchLinks", "choose which links show their targets");
                None
            }
        };
        let location = or_default(&self.location, LocationCode::parse).unwrap_or_else(|| {
            problems.add("location", "choose a location from the list");
            LocationCode::Default
        });
        let mut alerts = Vec::new();
        for (i, row) in self.alerts.iter().enumerate() {
            let Some(kind) = AlertType::parse(&row.kind) else {
                problems.add(format!("alerts[{i}].type"), "choose an alert type");
                continue;
            };
            let compare = or_default(&row.compare, CompareType::parse).unwrap_or_else(|| {
                problems.add(
                    format!("alerts[{i}].parameters.compare"),
                    "choose what to compare",
                );
                CompareType::All
            });
            // Durations are written in words here; the API takes seconds, and a text that is
            // none is passed on for the API's rules to name.
            let value = match (kind, lasting::seconds_in_words(&row.value)) {
                (AlertType::Unchanged, Some(seconds)) => Some(seconds.to_string()),
                _ => text(&row.value).map(|_| row.value.clone()),
            };
            let remind_every_seconds = match row.remind.trim() {
                "" => None,
                words => match lasting::seconds_in_words(words) {
                    Some(seconds) => Some(seconds),
                    None => {
                        problems.add(
                            format!("alerts[{i}].remindEverySeconds"),
                            "write how often, such as 6 h or 30 min",
                        );
                        continue;
                    }
                },
            };
            alerts.push(Alert {
                kind,
                value,
                parameters: (compare != CompareType::All).then_some(AlertParameters {
                    compare,
                    value: None,
                }),
                remind_every_seconds,
            });
        }
        let mut endpoints = Vec::new();
        for (i, row) in self.endpoints.iter().enumerate() {
            match MessagingServiceType::parse(&row.first) {
                Some(kind) => endpoints.push(NotificationEndpoint {
                    kind,
                    value: Some(row.second.trim().to_string()),
                    confirmed: None,
                }),
                None => problems.add(
                    format!("notificationEndpoints[{i}].type"),
                    "choose an endpoint type",
                ),
            }
        }
        let filters = |rows: &[Pair], list: &str, problems: &mut Problems| {
            let mut out = Vec::new();
            for (i, row) in rows.iter().enumerate() {
                match or_default(&row.first, UrlFilterType::parse) {
                    Some(kind) => out.push(UrlFilterValue {
                        filter: Some(row.second.clone()),
                        kind,
                    }),
                    None => problems.add(
                        format!("urlFilter.{list}[{i}].type"),
                        "choose Contains or Regex",
                    ),
                }
            }
            out
        };
        let include = filters(&self.include, "include", &mut problems);
        let exclude = filters(&self.exclude, "exclude", &mut problems);
        let proxies: Vec<Proxy> = self
            .proxies
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|p| Proxy {
                location: Some(p.to_string()),
            })
            .collect();
        let mut stepped = Monitor::default();
        self.steps.apply(&mut stepped, &mut problems);
        if !problems.is_empty() {
            return Err(problems);
        }
        let portal = job_type == ClientJobType::Portal;
        Ok(Monitor {
            id: self.id.clone(),
            name: text(&self.name).map(|n| n.trim().to_string()),
            method: text(&self.method).map(|m| m.trim().to_string()),
            url: Some(self.url.trim().to_string()),
            headers: (!self.headers.is_empty()).then(|| {
                self.headers
                    .iter()
                    .map(|h| HeaderPair::new(h.first.trim(), h.second.clone()))
                    .collect()
            }),
            body: text(&self.body).map(|_| self.body.clone()),
            x_path: text(&self.x_path).map(|x| x.trim().to_string()),
            exclude_x_path: text(&self.exclude_x_path).map(|x| x.trim().to_string()),
            regex: text(&self.regex).map(|_| self.regex.clone()),
            alerts: Some(alerts),
            recurrence_in_seconds: recurrence,
            folder_id: text(&self.folder),
            data: None,
            notification_endpoints: Some(endpoints),
            proxies: (!proxies.is_empty()).then_some(proxies),
            location,
            dynamic_content: self.dynamic_content,
            scroll_page: self.scroll_page,
            muted: self.muted.then_some(true),
            ignore_invalid_pages: self.ignore_invalid_pages,
            collect_raw_html: self.collect_raw_html,
            job_type,
            // The Portal-only fields are kept as typed, but only a Portal monitor sends them.
            crawling_depth: if portal { depth } else { None },
            crawl_binary_content: portal && self.binary,
            url_filter: (portal && !(include.is_empty() && exclude.is_empty())).then(|| {
                UrlFilter {
                    include: (!include.is_empty()).then_some(include),
                    exclude: (!exclude.is_empty()).then_some(exclude),
                }
            }),
            crawl_pages_from_all_domains: portal && self.all_domains,
            note: text(&self.note).map(|_| self.note.clone()),
            // Not on the form yet: a monitor saved here takes the default.
            error_after_failures,
            // The whole list: a learned mask the form did not show (learned since) is kept by
            // the store, and `learned` and `example` are the service's to say.
            noise: Some(
                self.noise
                    .iter()
                    .map(|m| NoiseMask {
                        pattern: m.pattern.clone(),
                        learned: m.learned,
                        active: m.active,
                        example: None,
                    })
                    .collect(),
            ),
            compare_lines: Some(compare_lines),
            watch_links,
            noise_notice: None,
            location_notice: None,
            steps: stepped.steps,
            login: stepped.login,
        })
    }
}

/// The form's name of a line order.
/// The form's name for a monitor's `watchLinks`.
fn links_name(watch_links: Option<bool>) -> &'static str {
    match watch_links {
        None => "selected",
        Some(true) => "all",
        Some(false) => "none",
    }
}

/// The choice to show checked: what was posted, the default when nothing or nonsense was.
fn links_chosen(posted: &str) -> &str {
    match posted {
        "all" | "none" => posted,
        _ => "selected",
    }
}

fn line_order_name(order: LineOrder) -> &'static str {
    match order {
        LineOrder::Ordered => "ordered",
        LineOrder::Set => "set",
    }
}

/// The choice `text` names, or the default when it names none.
fn or_default<T: Default>(text: &str, parse: fn(&str) -> Option<T>) -> Option<T> {
    if text.trim().is_empty() {
        Some(T::default())
    } else {
        parse(text)
    }
}

/// The preset value and custom seconds showing `seconds`.
fn preset_or_custom(seconds: i32) -> (String, String) {
    if PRESETS.iter().any(|(s, _)| *s == seconds) {
        (seconds.to_string(), String::new())
    } else {
        ("custom".into(), seconds.to_string())
    }
}

/// Why a posted form could not be read at all.
#[derive(Debug, thiserror::Error)]
pub enum FormError {
    /// A list carried a row index past [`MAX_ROWS`].
    #[error("the form has more than {MAX_ROWS} rows in one list")]
    TooManyRows,
}

/// Reads a posted form's name/value pairs. Unknown names are ignored.
pub fn parse(pairs: Vec<(String, String)>) -> Result<Posted, FormError> {
    let mut posted = Posted::default();
    let mut alerts: BTreeMap<usize, AlertRow> = BTreeMap::new();
    let mut noise: BTreeMap<usize, NoiseRow> = BTreeMap::new();
    let mut lists: [BTreeMap<usize, Pair>; 4] = Default::default();
    const LISTS: [&str; 4] = [
        "headers",
        "notificationEndpoints",
        "urlFilter.include",
        "urlFilter.exclude",
    ];
    for (name, value) in pairs {
        let f = &mut posted.fields;
        match name.as_str() {
            "csrf" => posted.csrf = Some(value),
            "token" => posted.token = Some(value),
            "add" => posted.add = Some(value),
            "remove" => posted.remove = Some(value),
            "noiseAdd" => f.noise_add = value,
            "compareLines" => f.compare_lines = value,
            "watchLinks" => f.watch_links = value,
            "loggedInWhen" => f.steps.logged_in_when = value,
            "id" => f.id = Some(value).filter(|v| !v.is_empty()),
            "name" => f.name = value,
            "url" => f.url = value,
            "jobType" => f.job_type = value,
            "xPath" => f.x_path = value,
            "excludeXPath" => f.exclude_x_path = value,
            "regex" => f.regex = value,
            "recurrence" => f.recurrence = value,
            "recurrenceCustom" => f.recurrence_custom = value,
            "location" => f.location = value,
            "proxies" => f.proxies = value,
            "method" => f.method = value,
            "body" => f.body = value,
            "note" => f.note = value,
            "folderId" => f.folder = value,
            "crawlingDepth" => f.crawling_depth = value,
            "errorAfterFailures" => f.error_after_failures = value,
            "dynamicContent" => f.dynamic_content = true,
            "muted" => f.muted = true,
            "scrollPage" => f.scroll_page = true,
            "collectRawHtml" => f.collect_raw_html = true,
            "crawlPagesFromAllDomains" => f.all_domains = true,
            "ignoreInvalidPages" => f.ignore_invalid_pages = true,
            "crawlBinaryContent" => f.binary = true,
            _ => {
                let mut step = None;
                for list in super::steps_form::LISTS {
                    if let Some((index, part)) = row_of(&name, list)? {
                        step = Some((list, index, part.to_string()));
                    }
                }
                if let Some((list, index, part)) = step {
                    f.steps.read(list, index, &part, value);
                    continue;
                }
                if let Some((index, part)) = row_of(&name, "alerts")? {
                    let row = alerts.entry(index).or_default();
                    match part {
                        "type" => row.kind = value,
                        "parameters.compare" => row.compare = value,
                        "value" => row.value = value,
                        "remindEverySeconds" => row.remind = value,
                        _ => {}
                    }
                    continue;
                }
                if let Some((index, part)) = row_of(&name, "noise")? {
                    let row = noise.entry(index).or_default();
                    match part {
                        "pattern" => row.pattern = value,
                        "active" => row.active = true,
                        "learned" => row.learned = value == "true",
                        "example" => row.example = value,
                        _ => {}
                    }
                    continue;
                }
                for (list, prefix) in lists.iter_mut().zip(LISTS) {
                    if let Some((index, part)) = row_of(&name, prefix)? {
                        let row = list.entry(index).or_default();
                        match part {
                            "key" | "type" => row.first = value,
                            "value" | "filter" => row.second = value,
                            _ => {}
                        }
                        break;
                    }
                }
            }
        }
    }
    let [headers, endpoints, include, exclude] = lists;
    let f = &mut posted.fields;
    f.alerts = alerts.into_values().collect();
    f.noise = noise.into_values().collect();
    f.headers = headers.into_values().collect();
    f.endpoints = endpoints.into_values().collect();
    f.include = include.into_values().collect();
    f.exclude = exclude.into_values().collect();
    Ok(posted)
}

/// `("1", "value")` of `alerts[1].value` under the prefix `alerts`.
fn row_of<'a>(name: &'a str, prefix: &str) -> Result<Option<(usize, &'a str)>, FormError> {
    let Some(rest) = name
        .strip_prefix(prefix)
        .and_then(|rest| rest.strip_prefix('['))
    else {
        return Ok(None);
    };
    let Some((index, part)) = rest.split_once("].") else {
        return Ok(None);
    };
    let Ok(index) = index.parse::<usize>() else {
        return Ok(None);
    };
    if index >= MAX_ROWS {
        return Err(FormError::TooManyRows);
    }
    Ok(Some((index, part)))
}

/// The API's field errors (`alerts[0].parameters.value`, `proxies[1].location`, ...) at the
/// slots of this form. A path with no control of its own goes to the nearest enclosing one
/// (`proxies[1].location` to `proxies`); what fits none goes to the form as a whole.
pub fn from_error(errors: BTreeMap<String, Vec<String>>, fields: &Fields) -> Problems {
    let mut problems = Problems::default();
    for (path, messages) in errors {
        let slot = slot_of(&path, fields);
        for message in messages {
            problems.add(slot.clone(), message);
        }
    }
    problems
}

fn slot_of(path: &str, fields: &Fields) -> String {
    let known = slots(fields);
    let aliased = path.replace(".parameters.value", ".value");
    let mut candidate = aliased.as_str();
    loop {
        if known.iter().any(|k| k == candidate) {
            return candidate.to_string();
        }
        match candidate.rfind(['.', '[']) {
            Some(cut) if cut > 0 => candidate = &candidate[..cut],
            _ => return "form".into(),
        }
    }
}

/// The problems in the order their fields appear, what fits no field last.
fn in_form_order<'a>(
    problems: &'a Problems,
    fields: &Fields,
) -> Vec<(&'a String, &'a Vec<String>)> {
    let order = slots(fields);
    let mut listed: Vec<(&String, &Vec<String>)> = problems.0.iter().collect();
    listed.sort_by_key(|(slot, _)| order.iter().position(|s| s == *slot).unwrap_or(usize::MAX));
    listed
}

/// Every slot this form shows messages at, in the order the form shows them.
fn slots(fields: &Fields) -> Vec<String> {
    let mut all: Vec<String> = [
        "url",
        "name",
        "jobType",
        "xPath",
        "excludeXPath",
        "regex",
        "alerts",
        "noise",
        "noiseAdd",
        "compareLines",
        "watchLinks",
        "recurrenceInSeconds",
        "notificationEndpoints",
        "urlFilter",
        "crawlingDepth",
        "method",
        "location",
        "proxies",
        "headers",
        "body",
        "folderId",
        "note",
    ]
    .map(String::from)
    .to_vec();
    // Rows go right after their group.
    let mut rows = Vec::new();
    for i in 0..fields.alerts.len() {
        rows.push(format!("alerts[{i}].type"));
        rows.push(format!("alerts[{i}].parameters.compare"));
        rows.push(format!("alerts[{i}].value"));
        rows.push(format!("alerts[{i}].remindEverySeconds"));
    }
    for i in 0..fields.noise.len() {
        rows.push(format!("noise[{i}].pattern"));
    }
    for i in 0..fields.headers.len() {
        rows.push(format!("headers[{i}].key"));
        rows.push(format!("headers[{i}].value"));
    }
    for i in 0..fields.endpoints.len() {
        rows.push(format!("notificationEndpoints[{i}].type"));
        rows.push(format!("notificationEndpoints[{i}].value"));
    }
    for (list, filters) in [("include", &fields.include), ("exclude", &fields.exclude)] {
        for i in 0..filters.len() {
            rows.push(format!("urlFilter.{list}[{i}].type"));
            rows.push(format!("urlFilter.{list}[{i}].filter"));
        }
    }
    if let Some(at) = all.iter().position(|s| s == "watchLinks") {
        all.splice(at + 1..at + 1, fields.steps.slots());
    }
    for row in rows {
        let group = row.split(['[', '.']).next().unwrap_or_default().to_string();
        let at = all
            .iter()
            .rposition(|slot| slot.starts_with(&group))
            .map_or(all.len(), |at| at + 1);
        all.insert(at, row);
    }
    all
}

/// The element id of a slot: `f-` and the path with every other character a dash.
pub fn id_of(slot: &str) -> String {
    let mut id = String::from("f-");
    id.extend(
        slot.chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }),
    );
    id
}

/// The label of a slot in the summary of problems.
fn label_of(slot: &str) -> String {
    let top = slot.split(['.', '[']).next().unwrap_or(slot);
    let row = slot
        .split_once('[')
        .and_then(|(_, rest)| rest.split_once(']'))
        .and_then(|(n, _)| n.parse::<usize>().ok())
        .map(|n| format!(" (row {})", n + 1))
        .unwrap_or_default();
    let name = match top {
        "name" => "Name",
        "url" => "URL",
        "jobType" => "Kind",
        "xPath" => "XPath",
        "excludeXPath" => "Exclude XPath",
        "regex" => "Regex",
        "alerts" => "Alerts",
        "noise" | "noiseAdd" => "Noise",
        "steps" => "Browser steps",
        "login" => "Sign-in",
        "compareLines" => "Compare lines",
        "recurrenceInSeconds" => "Checked",
        "notificationEndpoints" => "Notifications",
        "location" => "Location",
        "proxies" => "Proxy locations",
        "headers" => "Headers",
        "method" => "Method",
        "body" => "Body",
        "note" => "Note",
        "folderId" => "Folder",
        "crawlingDepth" => "Depth",
        "urlFilter" if slot.contains("exclude") => "Exclude links",
        "urlFilter" => "Follow links",
        _ => "The monitor",
    };
    format!("{name}{row}")
}

/// What the form is rendered with besides its fields.
pub struct Context<'a> {
    pub session: &'a Session,
    /// Where the form posts to save (`/monitors/new` or `/monitors/{id}/edit`).
    pub action: String,
    /// The one-time token of a new monitor's form.
    pub token: Option<&'a str>,
    /// The user's folders: id and path in words.
    pub folders: &'a [(String, String)],
    /// Where notifications go when the monitor names no endpoints, in words: the endpoints
    /// of the nearest folder up the tree naming some (with its name), else the user's own.
    pub default_endpoints: &'a [String],
    /// The folder `default_endpoints` come from; `None`: they are the user's own.
    pub inherited_from: Option<&'a str>,
    /// The service's shortest recurrence.
    pub min_recurrence: i32,
}

/// The name of the button that leads to point-and-click selection (see [`crate::web::monitors::edit`]).
pub const PICK_BUTTON: &str = "pick";

/// The whole form, with `problems` at their fields and summed up at the top.
pub fn render(fields: &Fields, problems: &Problems, ctx: &Context<'_>) -> Markup {
    let portal = fields.is_portal();
    html! {
        form.card.monitor-form #monitor-form method="post" action=(ctx.action) novalidate {
            // Enter in a text field submits with the first button: make that one Save.
            button.visually-hidden type="submit" tabindex="-1" aria-hidden="true" { "Save" }
            input type="hidden" name="csrf" value=(ctx.session.csrf);
            @if let Some(token) = ctx.token { input type="hidden" name="token" value=(token); }
            @if let Some(id) = &fields.id { input type="hidden" name="id" value=(id); }
            @if !problems.is_empty() {
                div.alert.problems #problems role="alert" tabindex="-1" {
                    p { "The monitor was not saved. Please correct:" }
                    ul {
                        @for (slot, messages) in in_form_order(problems, fields) {
                            @for message in messages {
                                li { a href={ "#" (id_of(slot)) } { (label_of(slot)) ": " (message) } }
                            }
                        }
                    }
                }
            }
            fieldset.group {
                legend { "Page" }
                (text_field("url", "URL", &fields.url, "url", problems, Some("The page to watch, or where a Portal crawl starts.")))
                (text_field("name", "Name", &fields.name, "text", problems, Some("Shown in the list; the page's host when left empty.")))
                div.field {
                    span.label #jobType-label { "Kind" }
                    div.choices role="radiogroup" aria-labelledby="jobType-label" {
                        label.choice {
                            input type="radio" name="jobType" value="SinglePage" checked[!portal];
                            " One page"
                        }
                        label.choice {
                            input type="radio" name="jobType" value="Portal" checked[portal];
                            " Portal: a site, crawled from the URL"
                        }
                    }
                    (message("jobType", problems))
                }
            }
            fieldset.group {
                legend { "What to watch" }
                (text_field("xPath", "XPath", &fields.x_path, "text", problems, Some("The part of the page to watch, such as //p[@class='price']; the whole page when empty.")))
                (text_field("excludeXPath", "Exclude XPath", &fields.exclude_x_path, "text", problems, Some("Parts removed before the XPath applies (ads, clocks).")))
                p.pick-row {
                    button.button name=(PICK_BUTTON) value="1" type="submit" formnovalidate { "Pick with the mouse" }
                    span.hint { "Opens the page of the URL above: click what to watch or to ignore." }
                }
                (text_field("regex", "Regex", &fields.regex, "text", problems, Some("A regular expression applied to the text; its first group (or the match) is the value.")))
            }
            (alerts_group(fields, problems))
            (noise_group(fields, problems))
            (fields.steps.render(problems))
            fieldset.group {
                legend { "Schedule" }
                div.field {
                    label for=(id_of("recurrenceInSeconds")) { "Checked" }
                    select id=(id_of("recurrenceInSeconds")) name="recurrence"
                        aria-invalid=[invalid("recurrenceInSeconds", problems)]
                        aria-describedby=(describedby("recurrenceInSeconds", problems, true)) {
                        @for (seconds, words) in PRESETS {
                            option value=(seconds) selected[fields.recurrence == seconds.to_string()] { (words) }
                        }
                        option value="custom" selected[fields.recurrence == "custom"] { "Every … seconds (below)" }
                    }
                    (message("recurrenceInSeconds", problems))
                    p.hint id=(format!("{}-hint", id_of("recurrenceInSeconds"))) { "This server checks at most every " (ctx.min_recurrence) " s." }
                }
                div.field {
                    label for="f-recurrenceCustom" { "Custom interval (seconds)" }
                    input #f-recurrenceCustom type="text" inputmode="numeric" name="recurrenceCustom" value=(fields.recurrence_custom);
                }
            }
            (endpoints_group(fields, problems, ctx))
            (portal_group(fields, problems))
            details.group.more open[advanced_open(fields, problems)] {
                summary { "Request, location and more" }
                div.details-body {
                    div.row2 {
                        (text_field("method", "Method", &fields.method, "text", problems, None))
                        div.field {
                            label for=(id_of("location")) { "Location" }
                            select id=(id_of("location")) name="location"
                                aria-invalid=[invalid("location", problems)]
                                aria-describedby=[describedby_opt("location", problems)] {
                                @for code in LocationCode::ALL {
                                    option value=(code.name()) selected[LocationCode::parse(&fields.location) == Some(*code)] { (location_words(*code)) }
                                }
                            }
                            (message("location", problems))
                        }
                    }
                    (text_field("proxies", "Proxy locations", &fields.proxies, "text", problems, Some("Location codes of the server's proxies, separated by commas (such as us, gb).")))
                    (pairs_group("headers", "Headers", "Name", "Value", &fields.headers, None, problems))
                    (textarea("body", "Body", &fields.body, 4, problems, Some("Sent with the request (POST and the like).")))
                    div.checks {
                        (checkbox("dynamicContent", "Render the page in a browser (for pages built by scripts)", fields.dynamic_content))
                        (checkbox("scrollPage", "Scroll rendered pages to the bottom first", fields.scroll_page))
                        (checkbox("collectRawHtml", "Keep the raw HTML of each check", fields.collect_raw_html))
                    }
                }
            }
            fieldset.group {
                legend { "Filing" }
                div.field {
                    label for=(id_of("folderId")) { "Folder" }
                    select id=(id_of("folderId")) name="folderId"
                        aria-invalid=[invalid("folderId", problems)]
                        aria-describedby=[describedby_opt("folderId", problems)] {
                        option value="" selected[fields.folder.is_empty()] { "All monitors (top level)" }
                        @if !fields.folder.is_empty() && !ctx.folders.iter().any(|(id, _)| *id == fields.folder) {
                            // Deeper than the folders listed: kept, not moved to the top level.
                            option value=(fields.folder) selected { "Its current folder" }
                        }
                        @for (id, path) in ctx.folders {
                            option value=(id) selected[&fields.folder == id] { (path) }
                        }
                    }
                    (message("folderId", problems))
                }
                (textarea("note", "Note", &fields.note, 3, problems, None))
            }
            (message("form", problems))
            div.form-actions {
                button.button.primary type="submit" { "Save monitor" }
                button.button #preview-button type="submit" formaction="/monitors/preview#preview" { "Preview" }
                a.button.quiet href=(cancel_link(fields)) { "Cancel" }
            }
        }
    }
}

fn cancel_link(fields: &Fields) -> String {
    match (&fields.id, fields.folder.is_empty()) {
        (Some(id), _) => format!("/monitors/{id}"),
        (None, false) => format!("/folders/{}", fields.folder),
        (None, true) => "/".into(),
    }
}

fn advanced_open(fields: &Fields, problems: &Problems) -> bool {
    let used = fields.method.trim() != "GET" && !fields.method.trim().is_empty()
        || !fields.headers.is_empty()
        || !fields.body.is_empty()
        || !fields.proxies.trim().is_empty()
        || LocationCode::parse(&fields.location).is_some_and(|l| l != LocationCode::Default)
        || fields.dynamic_content
        || fields.scroll_page
        || fields.collect_raw_html;
    used || problems.0.keys().any(|slot| {
        ["method", "location", "proxies", "headers", "body"]
            .iter()
            .any(|p| slot.starts_with(p))
    })
}

fn alerts_group(fields: &Fields, problems: &Problems) -> Markup {
    html! {
        fieldset.group id=(id_of("alerts")) aria-describedby=[describedby_opt("alerts", problems)] {
            legend { "Alerts" }
            p.hint { "Tell me when… (choose “No alert” to remove a row). “Stays the same for” takes a time such as 30 d or 12 h." }
            (message("alerts", problems))
            @for (i, row) in fields.alerts.iter().enumerate() {
                @let kind = format!("alerts[{i}].type");
                @let compare = format!("alerts[{i}].parameters.compare");
                @let value = format!("alerts[{i}].value");
                @let remind = format!("alerts[{i}].remindEverySeconds");
                div.row {
                    div.field {
                        label for=(id_of(&kind)) { "Alert " (i + 1) }
                        select id=(id_of(&kind)) name=(kind)
                            aria-invalid=[invalid(&kind, problems)]
                            aria-describedby=[describedby_opt(&kind, problems)] {
                            option value="" selected[row.kind.is_empty()] { "No alert" }
                            @for t in AlertType::ALL {
                                option value=(t.name()) selected[AlertType::parse(&row.kind) == Some(*t)] { (alert_words(*t)) }
                            }
                        }
                        (message(&kind, problems))
                    }
                    div.field {
                        label for=(id_of(&compare)) { "Compared with" }
                        select id=(id_of(&compare)) name=(compare)
                            aria-invalid=[invalid(&compare, problems)]
                            aria-describedby=[describedby_opt(&compare, problems)] {
                            @for c in CompareType::ALL {
                                option value=(c.name()) selected[CompareType::parse(&row.compare).unwrap_or_default() == *c] { (compare_words(*c)) }
                            }
                        }
                        (message(&compare, problems))
                    }
                    (text_field(&value, "Value", &row.value, "text", problems, None))
                    (text_field(&remind, "Remind while failing", &row.remind, "text", problems, Some("Error alerts: every 6 h, say. Empty: never.")))
                }
            }
            button.button.quiet type="submit" name="add" value="alerts" { "Add another alert" }
            (text_field("errorAfterFailures", "Failed checks in a row before an Error alert", &fields.error_after_failures, "number", problems, Some("Empty: 2, the second an early retry, so one passing failure never alerts. 1 alerts on the first failure.")))
        }
    }
}

/// The Noise section: the masks (pattern, whose, example, an active checkbox; a person's with
/// a remove button), a field to add a pattern, and the line order.
fn noise_group(fields: &Fields, problems: &Problems) -> Markup {
    html! {
        fieldset.group.noise id=(id_of("noise")) aria-describedby=[describedby_opt("noise", problems)] {
            legend { "Noise" }
            p.hint #noise-hint {
                "Parts of the value that change without meaning (a clock, a counter, a token) are masked when checks are compared, so they never alert; a real change beside them still does. "
                "wachet learns them from a few quick checks when the monitor is new or what it watches changes, and from later checks. "
                "Switch a learned one off rather than removing it: removed, it would be learned again."
            }
            @if let Some(notice) = &fields.noise_notice {
                p.notice.noise-notice role="status" { (notice) }
            }
            (message("noise", problems))
            @if fields.noise.is_empty() {
                p.empty { "No masks yet." }
            } @else {
                ul.masks {
                    @for (i, row) in fields.noise.iter().enumerate() {
                        @let pattern = format!("noise[{i}].pattern");
                        @let id = id_of(&pattern);
                        li.mask {
                            @if row.learned {
                                input type="hidden" name=(pattern) value=(row.pattern);
                                input type="hidden" name=(format!("noise[{i}].learned")) value="true";
                                input type="hidden" name=(format!("noise[{i}].example")) value=(row.example);
                                div.mask-head {
                                    span.label id=(id) { "Mask " (i + 1) ", learned: " }
                                    code.pattern { (row.pattern) }
                                }
                                @if !row.example.is_empty() {
                                    p.hint { "It masked: " q.example { (row.example) } }
                                }
                                (message(&pattern, problems))
                            } @else {
                                (text_field(&pattern, &format!("Mask {}, yours", i + 1), &row.pattern, "text", problems, None))
                            }
                            div.mask-actions {
                                label.check {
                                    input type="checkbox" name=(format!("noise[{i}].active")) value="true" checked[row.active];
                                    " Active"
                                    span.visually-hidden { " (mask " (i + 1) ")" }
                                }
                                @if !row.learned {
                                    button.button.quiet type="submit" name="remove" value=(format!("noise[{i}]")) {
                                        "Remove" span.visually-hidden { " mask " (i + 1) }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            (text_field("noiseAdd", "Add a pattern", &fields.noise_add, "text", problems, Some("A regular expression over the value's text, one line at a time, such as (\\d+) people are looking: with a group, only the group is masked.")))
            div.field {
                span.label #compareLines-label { "Compare lines" }
                div.choices role="radiogroup" aria-labelledby="compareLines-label" aria-describedby="compareLines-hint" {
                    label.choice {
                        input type="radio" name="compareLines" value="ordered" checked[fields.compare_lines != "set"];
                        " In order"
                    }
                    label.choice {
                        input type="radio" name="compareLines" value="set" checked[fields.compare_lines == "set"];
                        " As a set"
                    }
                }
                (message("compareLines", problems))
                p.hint #compareLines-hint { "As a set: a list shown in another order is no change; a line added or removed is." }
            }
            div.field {
                span.label #watchLinks-label { "Link targets" }
                div.choices role="radiogroup" aria-labelledby="watchLinks-label" aria-describedby="watchLinks-hint" {
                    @for (value, label) in [("selected", "Links the xPath selects"), ("all", "Every link"), ("none", "None")] {
                        label.choice {
                            input type="radio" name="watchLinks" value=(value) checked[links_chosen(&fields.watch_links) == value];
                            " " (label)
                        }
                    }
                }
                (message("watchLinks", problems))
                p.hint #watchLinks-hint { "A link's target is shown after its text, so a button whose text stays while its address changes is a change. Every link: also on a whole page, where tracking parameters in links are noise." }
            }
        }
    }
}

fn endpoints_group(fields: &Fields, problems: &Problems, ctx: &Context<'_>) -> Markup {
    html! {
        fieldset.group id=(id_of("notificationEndpoints")) aria-describedby=[describedby_opt("notificationEndpoints", problems)] {
            legend { "Notifications" }
            p.hint {
                "Where alerts go. Without any here, they go to "
                @if let Some(folder) = ctx.inherited_from {
                    "the endpoints of the folder “" (folder) "”: " (ctx.default_endpoints.join(", ")) "."
                } @else if ctx.default_endpoints.is_empty() {
                    "your own endpoints (you have none yet: the settings page sets them)."
                } @else {
                    "your own endpoints: " (ctx.default_endpoints.join(", ")) "."
                }
                " An address other than your account's is sent a confirmation code first."
            }
            (message("notificationEndpoints", problems))
            @for (i, row) in fields.endpoints.iter().enumerate() {
                @let kind = format!("notificationEndpoints[{i}].type");
                @let value = format!("notificationEndpoints[{i}].value");
                div.row.row2 {
                    div.field {
                        label for=(id_of(&kind)) { "Endpoint " (i + 1) " type" }
                        select id=(id_of(&kind)) name=(kind)
                            aria-invalid=[invalid(&kind, problems)]
                            aria-describedby=[describedby_opt(&kind, problems)] {
                            @for t in crate::notify::channel::offered() {
                                option value=(t.name()) selected[MessagingServiceType::parse(&row.first) == Some(t)] { (t.name()) }
                            }
                        }
                        (message(&kind, problems))
                    }
                    (text_field(&value, "Address or URL", &row.second, "text", problems, None))
                }
            }
            button.button.quiet type="submit" name="add" value="notificationEndpoints" { "Add an endpoint" }
            (checkbox("muted", "Muted: keep this monitor's notifications on the Notifications page and send them nowhere", fields.muted))
        }
    }
}

fn portal_group(fields: &Fields, problems: &Problems) -> Markup {
    html! {
        fieldset.group.portal id=(id_of("urlFilter")) aria-describedby=[describedby_opt("urlFilter", problems)] {
            legend { "Portal only" }
            p.hint { "Used when the kind is Portal: the crawl follows links from the URL and watches every page it finds." }
            (message("urlFilter", problems))
            div.field {
                label for=(id_of("crawlingDepth")) { "Depth (links followed from the URL)" }
                select id=(id_of("crawlingDepth")) name="crawlingDepth"
                    aria-invalid=[invalid("crawlingDepth", problems)]
                    aria-describedby=[describedby_opt("crawlingDepth", problems)] {
                    @for depth in ["1", "2", "3"] {
                        option value=(depth) selected[fields.crawling_depth.trim() == depth] { (depth) }
                    }
                }
                (message("crawlingDepth", problems))
            }
            (pairs_group("urlFilter.include", "Follow only links matching", "Match", "Text or pattern", &fields.include, Some(&["Contains", "Regex"]), problems))
            (pairs_group("urlFilter.exclude", "Never follow links matching", "Match", "Text or pattern", &fields.exclude, Some(&["Contains", "Regex"]), problems))
            div.checks {
                (checkbox("crawlPagesFromAllDomains", "Follow links to other sites", fields.all_domains))
                (checkbox("ignoreInvalidPages", "Leave out pages that answer with an error (4xx, 5xx)", fields.ignore_invalid_pages))
                (checkbox("crawlBinaryContent", "Keep files that are not web pages (PDF, images)", fields.binary))
            }
        }
    }
}

/// Rows of two fields (headers, URL filters), the first a choice when `choices` is given.
fn pairs_group(
    list: &str,
    title: &str,
    first_label: &str,
    second_label: &str,
    rows: &[Pair],
    choices: Option<&[&str]>,
    problems: &Problems,
) -> Markup {
    let (first_part, second_part) = if choices.is_some() {
        ("type", "filter")
    } else {
        ("key", "value")
    };
    let shown: Vec<Pair> = if rows.is_empty() {
        vec![Pair::default()]
    } else {
        rows.to_vec()
    };
    html! {
        fieldset.subgroup id=(id_of(list)) {
            legend { (title) }
            (message(list, problems))
            @for (i, row) in shown.iter().enumerate() {
                @let first = format!("{list}[{i}].{first_part}");
                @let second = format!("{list}[{i}].{second_part}");
                div.row.row2 {
                    @if let Some(choices) = choices {
                        div.field {
                            label for=(id_of(&first)) { (first_label) " " (i + 1) }
                            select id=(id_of(&first)) name=(first)
                                aria-invalid=[invalid(&first, problems)]
                                aria-describedby=[describedby_opt(&first, problems)] {
                                @for choice in choices {
                                    option value=(choice) selected[row.first.eq_ignore_ascii_case(choice)] { (choice) }
                                }
                            }
                            (message(&first, problems))
                        }
                    } @else {
                        (text_field(&first, &format!("{first_label} {}", i + 1), &row.first, "text", problems, None))
                    }
                    (text_field(&second, second_label, &row.second, "text", problems, None))
                }
            }
            button.button.quiet type="submit" name="add" value=(list) { "Add another" }
        }
    }
}

fn invalid(slot: &str, problems: &Problems) -> Option<&'static str> {
    problems.at(slot).map(|_| "true")
}

fn describedby_opt(slot: &str, problems: &Problems) -> Option<String> {
    problems.at(slot).map(|_| format!("{}-error", id_of(slot)))
}

fn describedby(slot: &str, problems: &Problems, has_hint: bool) -> String {
    let id = id_of(slot);
    match (problems.at(slot).is_some(), has_hint) {
        (true, true) => format!("{id}-error {id}-hint"),
        (true, false) => format!("{id}-error"),
        (false, _) => format!("{id}-hint"),
    }
}

/// The `aria-describedby` of a control: its message when it has one, and its hint.
fn described_by(slot: &str, problems: &Problems, has_hint: bool) -> Option<String> {
    (problems.at(slot).is_some() || has_hint).then(|| describedby(slot, problems, has_hint))
}

fn message(slot: &str, problems: &Problems) -> Markup {
    html! {
        @if let Some(messages) = problems.at(slot) {
            p.field-error id=(format!("{}-error", id_of(slot))) {
                @for (i, m) in messages.iter().enumerate() {
                    @if i > 0 { br; }
                    (m)
                }
            }
        }
    }
}

fn text_field(
    slot: &str,
    label: &str,
    value: &str,
    kind: &str,
    problems: &Problems,
    hint: Option<&str>,
) -> Markup {
    let id = id_of(slot);
    let described = described_by(slot, problems, hint.is_some());
    html! {
        div.field {
            label for=(id) { (label) }
            input id=(id) type=(kind) name=(slot) value=(value)
                aria-invalid=[invalid(slot, problems)]
                aria-describedby=[described]
                autocomplete="off" spellcheck="false";
            (message(slot, problems))
            @if let Some(hint) = hint { p.hint id=(format!("{id}-hint")) { (hint) } }
        }
    }
}

fn textarea(
    slot: &str,
    label: &str,
    value: &str,
    rows: u8,
    problems: &Problems,
    hint: Option<&str>,
) -> Markup {
    let id = id_of(slot);
    let described = described_by(slot, problems, hint.is_some());
    html! {
        div.field {
            label for=(id) { (label) }
            textarea id=(id) name=(slot) rows=(rows)
                aria-invalid=[invalid(slot, problems)]
                aria-describedby=[described] { (value) }
            (message(slot, problems))
            @if let Some(hint) = hint { p.hint id=(format!("{id}-hint")) { (hint) } }
        }
    }
}

fn checkbox(name: &str, label: &str, checked: bool) -> Markup {
    html! {
        label.check {
            input type="checkbox" name=(name) value="true" checked[checked];
            " " (label)
        }
    }
}

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
