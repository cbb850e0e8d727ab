//! The monitor form's fields: every field of a monitor as the text a person typed ([`Fields`]),
//! made from a [`Monitor`] and turned back into one, with the rows of alerts, headers, noise
//! masks and endpoints, and the messages at each field ([`Problems`]).

use super::*;

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

/// A row of two texts: a header (name, value) or a URL filter (type, filter).
#[derive(Debug, Clone, Default)]
pub struct Pair {
    /// Header name or filter type.
    pub first: String,
    /// Header value or filter text.
    pub second: String,
}

/// An endpoint row: its type, its address and when its messages go.
#[derive(Debug, Clone, Default)]
pub struct EndpointRow {
    /// The endpoint type's name.
    pub kind: String,
    /// Its URL or address.
    pub value: String,
    /// At once, a digest, quiet hours.
    pub schedule: Schedule,
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
    pub endpoints: Vec<EndpointRow>,
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
    pub steps: crate::web::monitors::steps_form::StepFields,
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

    pub(super) fn at(&self, slot: &str) -> Option<&[String]> {
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
                .map(|e| EndpointRow {
                    kind: e.kind.name().into(),
                    value: e.value.clone().unwrap_or_default(),
                    schedule: Schedule::of(e),
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
            steps: crate::web::monitors::steps_form::StepFields::of(monitor),
        }
    }

    /// Whether this is a Portal monitor's form.
    pub fn is_portal(&self) -> bool {
        ClientJobType::parse(&self.job_type) == Some(ClientJobType::Portal)
    }

    /// Drops the rows left empty, so the rows shown are the monitor's, index for index.
    pub fn compact(&mut self) {
        self.alerts.retain(|a| !a.kind.trim().is_empty());
        self.endpoints.retain(|e| !e.value.trim().is_empty());
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
            "notificationEndpoints" => self.endpoints.push(EndpointRow {
                kind: MessagingServiceType::Email.name().into(),
                ..EndpointRow::default()
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
            match MessagingServiceType::parse(&row.kind) {
                Some(kind) => {
                    let mut endpoint =
                        NotificationEndpoint::new(kind, Some(row.value.trim().to_string()));
                    row.schedule.apply(&mut endpoint);
                    endpoints.push(endpoint);
                }
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
pub(super) fn links_name(watch_links: Option<bool>) -> &'static str {
    match watch_links {
        None => "selected",
        Some(true) => "all",
        Some(false) => "none",
    }
}

/// The choice to show checked: what was posted, the default when nothing or nonsense was.
pub(super) fn links_chosen(posted: &str) -> &str {
    match posted {
        "all" | "none" => posted,
        _ => "selected",
    }
}

pub(super) fn line_order_name(order: LineOrder) -> &'static str {
    match order {
        LineOrder::Ordered => "ordered",
        LineOrder::Set => "set",
    }
}

/// The choice `text` names, or the default when it names none.
pub(super) fn or_default<T: Default>(text: &str, parse: fn(&str) -> Option<T>) -> Option<T> {
    if text.trim().is_empty() {
        Some(T::default())
    } else {
        parse(text)
    }
}

/// The preset value and custom seconds showing `seconds`.
pub(super) fn preset_or_custom(seconds: i32) -> (String, String) {
    if PRESETS.iter().any(|(s, _)| *s == seconds) {
        (seconds.to_string(), String::new())
    } else {
        ("custom".into(), seconds.to_string())
    }
}
