//! changedetection.io backups: the zip its Backups page makes, in either layout. Since 0.53
//! each watch is `<uuid>/watch.json` and each tag (group) `<uuid>/tag.json`, with the settings
//! in `changedetection.json`; before, one `url-watches.json` held the settings, the tags (in
//! `settings.application.tags`) and the watches (`watching`). A bare `url-watches.json` is read
//! too. Watches become monitors, tags folders; each watch's history is `<uuid>/history.txt`
//! (`timestamp,file` lines) naming its snapshots, plain text or brotli-compressed.
//!
//! What maps: `title`, `url`, `paused`, `method`, `body`, `headers`, `include_filters` (XPath,
//! `xpath:`/`xpath1:` prefixed, CSS converted to XPath where it can be; several become a
//! union), `subtractive_selectors` (`excludeXPath`), `time_between_check` (or the settings'
//! default), `fetch_backend` `html_webdriver` (`dynamicContent`). Everything else a watch sets
//! is named as not carried over: `jq:` filters, browser steps, conditions, notification URLs,
//! text triggers and ignores, proxies, schedules, the restock processor.

use super::archive::{self, Archive};
use super::css::xpath_or_css;
use super::{Format, Plan, PlannedMonitor, ReadError, ReadOptions, given_name, watch_of};
use serde_json::{Map, Value};
use wachet::model::{ClientData, HeaderPair};

/// The newest settings schema this reader knows (changedetection.io 0.60.10 writes 33).
pub const KNOWN_SCHEMA: i64 = 33;
/// The interval changedetection.io checks at when neither the watch nor the settings say.
const DEFAULT_INTERVAL_SECONDS: i64 = 3 * 3600;

/// Whether `bytes` look like a changedetection.io backup: a zip that is not a workbook, or a
/// bare `url-watches.json`.
pub fn sniff(bytes: &[u8]) -> bool {
    if archive::is_zip(bytes) {
        return !super::wachete_xlsx::sniff(bytes);
    }
    let start = String::from_utf8_lossy(&bytes[..bytes.len().min(64 * 1024)]).into_owned();
    start.trim_start().starts_with('{') && start.contains("\"watching\"")
}

/// One watch as read, before mapping.
struct Watch {
    uuid: String,
    data: Map<String, Value>,
}

pub fn read(bytes: &[u8], options: &ReadOptions) -> Result<Plan, ReadError> {
    if !archive::is_zip(bytes) {
        let whole: Value = serde_json::from_slice(bytes)
            .map_err(|err| ReadError::Invalid(format!("url-watches.json is not JSON: {err}")))?;
        return plan(&whole, old_watches(&whole)?, None, options);
    }
    let mut zip = Archive::open(bytes)?;
    if let Some(settings) = zip.read("changedetection.json")? {
        let settings = json(&settings, "changedetection.json")?;
        check_version(&settings)?;
        let mut dirs: Vec<String> = zip
            .names()
            .filter_map(|name| {
                name.strip_suffix("/watch.json")
                    .or(name.strip_suffix("/tag.json"))
            })
            .filter(|dir| !dir.contains('/'))
            .map(str::to_string)
            .collect();
        dirs.sort();
        dirs.dedup();
        let mut watches = Vec::new();
        let mut tags = Map::new();
        for dir in dirs {
            if let Some(tag) = zip.read(&format!("{dir}/tag.json"))? {
                tags.insert(dir.clone(), json(&tag, &format!("{dir}/tag.json"))?);
            }
            if let Some(watch) = zip.read(&format!("{dir}/watch.json"))? {
                let Value::Object(data) = json(&watch, &format!("{dir}/watch.json"))? else {
                    return Err(ReadError::Invalid(format!(
                        "{dir}/watch.json is not an object"
                    )));
                };
                watches.push(Watch { uuid: dir, data });
            }
        }
        return plan(&settings, watches, Some((&mut zip, tags)), options);
    }
    if let Some(whole) = zip.read("url-watches.json")? {
        let whole = json(&whole, "url-watches.json")?;
        let watches = old_watches(&whole)?;
        let tags = whole
            .pointer("/settings/application/tags")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        return plan(&whole, watches, Some((&mut zip, tags)), options);
    }
    Err(ReadError::Unknown(
        "the zip has neither changedetection.json nor url-watches.json: it is not a \
         changedetection.io backup"
            .into(),
    ))
}

fn json(bytes: &[u8], name: &str) -> Result<Value, ReadError> {
    serde_json::from_slice(bytes)
        .map_err(|err| ReadError::Invalid(format!("{name} is not valid JSON: {err}")))
}

/// The watches of the older layout, with its version checked.
fn old_watches(whole: &Value) -> Result<Vec<Watch>, ReadError> {
    check_version(whole)?;
    let watching = whole
        .get("watching")
        .and_then(Value::as_object)
        .ok_or_else(|| ReadError::Invalid("url-watches.json has no \"watching\" object".into()))?;
    Ok(watching
        .iter()
        .filter_map(|(uuid, data)| {
            data.as_object().map(|data| Watch {
                uuid: uuid.clone(),
                data: data.clone(),
            })
        })
        .collect())
}

/// Refuses settings written by a newer changedetection.io than this reader knows.
fn check_version(settings: &Value) -> Result<(), ReadError> {
    let schema = settings
        .pointer("/settings/application/schema_version")
        .and_then(Value::as_i64);
    match schema {
        Some(found) if found > KNOWN_SCHEMA => Err(ReadError::Newer(format!(
            "the backup was made by a newer changedetection.io (settings schema {found}) than \
             this wachet reads (up to schema {KNOWN_SCHEMA}, changedetection.io 0.60.10); \
             nothing was imported"
        ))),
        _ => Ok(()),
    }
}

fn plan(
    settings: &Value,
    mut watches: Vec<Watch>,
    mut archive: Option<(&mut Archive<'_>, Map<String, Value>)>,
    options: &ReadOptions,
) -> Result<Plan, ReadError> {
    let mut plan = Plan::new(Format::Changedetection);
    let default_interval = settings
        .pointer("/settings/requests/time_between_check")
        .and_then(interval)
        .unwrap_or(DEFAULT_INTERVAL_SECONDS);
    let browser_by_default = settings
        .pointer("/settings/application/fetch_backend")
        .and_then(Value::as_str)
        == Some("html_webdriver");
    // The order a person created them in.
    watches.sort_by(|a, b| {
        let created = |w: &Watch| w.data.get("date_created").and_then(Value::as_i64);
        created(a).cmp(&created(b)).then(a.uuid.cmp(&b.uuid))
    });
    for watch in watches {
        let data = &watch.data;
        let text = |key: &str| data.get(key).and_then(Value::as_str).map(str::to_string);
        let title = given_name(text("title").as_deref());
        let Some(url) = text("url").filter(|u| !u.trim().is_empty()) else {
            let item = format!("watch {}", watch.uuid);
            plan.leave_out(&item, "the whole watch", "it has no URL");
            continue;
        };
        let item = match &title {
            Some(title) => format!("watch \"{title}\""),
            None => format!("watch {url}"),
        };
        let mut monitor = watch_of(&url);
        if title.is_some() {
            monitor.name = title;
        }
        let use_default = data
            .get("time_between_check_use_default")
            .and_then(Value::as_bool)
            .unwrap_or(true);
        let own = data.get("time_between_check").and_then(interval);
        let seconds = match (use_default, own) {
            (false, Some(own)) => own,
            _ => default_interval,
        };
        let paused = data.get("paused").and_then(Value::as_bool).unwrap_or(false);
        monitor.recurrence_in_seconds = Some(match paused {
            true => 0,
            false => i32::try_from(seconds).unwrap_or(i32::MAX),
        });
        monitor.method = text("method")
            .map(|m| m.trim().to_ascii_uppercase())
            .filter(|m| !m.is_empty() && m != "GET");
        monitor.body = text("body").filter(|b| !b.is_empty());
        if let Some(headers) = data.get("headers").and_then(Value::as_object) {
            let pairs: Vec<HeaderPair> = headers
                .iter()
                .map(|(k, v)| HeaderPair::new(k, v.as_str().map_or(v.to_string(), str::to_string)))
                .collect();
            monitor.headers = (!pairs.is_empty()).then_some(pairs);
        }
        monitor.dynamic_content = match data.get("fetch_backend").and_then(Value::as_str) {
            Some("html_webdriver") => true,
            Some("system") | None => browser_by_default,
            Some("html_requests") => false,
            // An extra browser of the user's own: rendered in wachet's.
            Some(_) => true,
        };
        let filters = strings(data.get("include_filters"));
        monitor.x_path = selections(&mut plan, &item, "filter", &filters);
        let removed = strings(data.get("subtractive_selectors"));
        monitor.exclude_x_path = selections(&mut plan, &item, "subtractive selector", &removed);
        unmapped(&mut plan, &item, data);
        let folder = match archive.as_mut() {
            Some((_, tags)) => folder_of(&mut plan, &item, data, tags),
            None => folder_of(&mut plan, &item, data, &Map::new()),
        };
        let history = match (options.history, archive.as_mut()) {
            (true, Some((zip, _))) => snapshots(&mut plan, &item, &watch.uuid, zip)?,
            _ => Vec::new(),
        };
        plan.monitors.push(PlannedMonitor {
            item,
            monitor,
            folder,
            history,
        });
    }
    Ok(plan)
}

/// Seconds of a `{weeks, days, hours, minutes, seconds}` object, `None` when all are empty.
fn interval(value: &Value) -> Option<i64> {
    let units = [
        ("weeks", 604_800),
        ("days", 86_400),
        ("hours", 3_600),
        ("minutes", 60),
        ("seconds", 1),
    ];
    let total: i64 = units
        .iter()
        .map(|(unit, seconds)| {
            let n = value.get(unit).and_then(|v| {
                v.as_i64()
                    .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
            });
            n.unwrap_or(0).saturating_mul(*seconds)
        })
        .fold(0i64, i64::saturating_add);
    (total > 0).then_some(total)
}

fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// The XPath union of `filters`, each XPath, `xpath:`/`xpath1:` prefixed, or CSS; those that
/// do not map are left out with their reason.
fn selections(plan: &mut Plan, item: &str, kind: &str, filters: &[String]) -> Option<String> {
    let mut xpaths = Vec::new();
    for filter in filters {
        let lower = filter.to_ascii_lowercase();
        if lower.starts_with("jq:") || lower.starts_with("jqraw:") {
            plan.leave_out(
                item,
                format!("{kind} {filter}"),
                "a jq filter of JSON has no counterpart in wachet: the whole document is watched",
            );
            continue;
        }
        let stripped = ["xpath1:", "xpath:"].iter().find_map(|p| {
            lower
                .starts_with(p)
                .then(|| filter[p.len()..].trim().to_string())
        });
        match stripped {
            Some(xpath) => xpaths.push(xpath),
            None => match xpath_or_css(filter) {
                Ok(xpath) => xpaths.push(xpath),
                Err(reason) => plan.leave_out(item, format!("{kind} {filter}"), reason),
            },
        }
    }
    (!xpaths.is_empty()).then(|| xpaths.join(" | "))
}

/// Names what a watch sets that has no counterpart.
fn unmapped(plan: &mut Plan, item: &str, data: &Map<String, Value>) {
    let count = |key: &str| -> usize {
        match data.get(key) {
            Some(Value::Array(list)) => list
                .iter()
                .filter(|v| match v {
                    // An empty browser step row is the form's placeholder.
                    Value::Object(row) if row.contains_key("operation") => !matches!(
                        row.get("operation").and_then(Value::as_str),
                        None | Some("") | Some("Choose one")
                    ),
                    Value::Object(row) => row.values().any(|v| match v {
                        Value::String(s) => !s.trim().is_empty(),
                        Value::Null => false,
                        _ => true,
                    }),
                    Value::String(s) => !s.trim().is_empty(),
                    Value::Null => false,
                    _ => true,
                })
                .count(),
            _ => 0,
        }
    };
    let lists = [
        (
            "browser_steps",
            "browser steps",
            "wachet renders the page without them",
        ),
        (
            "conditions",
            "conditions",
            "wachet alerts on any change of the value instead",
        ),
        (
            "notification_urls",
            "notification URLs",
            "add the endpoints in wachet's settings",
        ),
        (
            "ignore_text",
            "ignored text",
            "wachet learns what changes without meaning itself",
        ),
        (
            "trigger_text",
            "trigger text",
            "wachet alerts on any change of the value instead",
        ),
        (
            "text_should_not_be_present",
            "text that should not be present",
            "add a Contains alert instead",
        ),
        (
            "extract_text",
            "extracted text",
            "set the monitor's regular expression instead",
        ),
    ];
    for (key, what, reason) in lists {
        let n = count(key);
        if n > 0 {
            plan.leave_out(item, format!("{what} ({n})"), reason);
        }
    }
    if let Some(processor) = data.get("processor").and_then(Value::as_str)
        && processor != "text_json_diff"
    {
        plan.leave_out(
            item,
            format!("processor {processor}"),
            "wachet watches the page's text instead",
        );
    }
    if data
        .get("proxy")
        .and_then(Value::as_str)
        .is_some_and(|p| !p.is_empty())
    {
        plan.leave_out(item, "proxy", "set the monitor's location instead");
    }
    if data
        .get("webdriver_js_execute_code")
        .and_then(Value::as_str)
        .is_some_and(|s| !s.trim().is_empty())
    {
        plan.leave_out(
            item,
            "JavaScript to run",
            "wachet runs no script of its own on a page",
        );
    }
    let scheduled = data
        .get("time_schedule_limit")
        .and_then(|s| s.get("enabled"))
        .and_then(Value::as_bool);
    if scheduled == Some(true) {
        plan.leave_out(
            item,
            "check schedule",
            "wachet checks at its interval all week",
        );
    }
}

/// The folder of a watch: its first tag; the other tags are named as not carried over.
fn folder_of(
    plan: &mut Plan,
    item: &str,
    data: &Map<String, Value>,
    tags: &Map<String, Value>,
) -> Option<usize> {
    let title = |id: &str| {
        tags.get(id)
            .and_then(|t| t.get("title"))
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_string)
    };
    let mut names: Vec<String> = strings(data.get("tags"))
        .iter()
        .filter_map(|id| title(id))
        .collect();
    // Before tags were objects of their own, a watch named them in one comma-separated text.
    if names.is_empty() {
        names = data
            .get("tag")
            .and_then(Value::as_str)
            .unwrap_or("")
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .collect();
    }
    let mut names = names.into_iter();
    let first = names.next()?;
    for other in names {
        plan.leave_out(
            item,
            format!("tag {other}"),
            format!("a monitor is in one folder: it goes to {first}"),
        );
    }
    Some(plan.root_folder(&first))
}

/// The snapshots of watch `uuid`, oldest first, from its `history.txt`.
fn snapshots(
    plan: &mut Plan,
    item: &str,
    uuid: &str,
    zip: &mut Archive<'_>,
) -> Result<Vec<ClientData>, ReadError> {
    let Some(index) = zip.read(&format!("{uuid}/history.txt"))? else {
        return Ok(Vec::new());
    };
    let mut entries = Vec::new();
    let mut compressed = 0;
    for line in String::from_utf8_lossy(&index).lines() {
        let Some((at, file)) = line.split_once(',') else {
            continue;
        };
        let Some(at) = at
            .trim()
            .parse::<f64>()
            .ok()
            .and_then(|s| chrono::DateTime::from_timestamp(s as i64, 0))
        else {
            continue;
        };
        // Older versions wrote the snapshot's whole path.
        let file = file.trim().rsplit('/').next().unwrap_or("");
        if file.ends_with(".br") {
            compressed += 1;
            continue;
        }
        let Some(text) = zip.read(&format!("{uuid}/{file}"))? else {
            continue;
        };
        entries.push(ClientData {
            last_check_timestamp: at,
            value_changed_timestamp: Some(at),
            raw: Some(String::from_utf8_lossy(&text).into_owned()),
            error: None,
            diff: None,
            logged_in: false,
        });
    }
    if compressed > 0 {
        plan.leave_out(
            item,
            format!("{compressed} history snapshot(s)"),
            "they are brotli-compressed, which this wachet does not unpack",
        );
    }
    entries.sort_by_key(|e| e.last_check_timestamp);
    Ok(entries)
}
