//! Reading a posted monitor form: fields named by their JSON paths (`alerts[1].value`,
//! `headers[0].key`) read into [`Fields`], and the API's validation errors put at the fields
//! they concern, in the order the form shows them.

use super::*;

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
    let mut endpoints: BTreeMap<usize, EndpointRow> = BTreeMap::new();
    let mut lists: [BTreeMap<usize, Pair>; 3] = Default::default();
    const LISTS: [&str; 3] = ["headers", "urlFilter.include", "urlFilter.exclude"];
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
            "recording" => f.steps.recording = value,
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
                for list in crate::web::monitors::steps_form::LISTS {
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
                if let Some((index, part)) = row_of(&name, "notificationEndpoints")? {
                    let row = endpoints.entry(index).or_default();
                    match part {
                        "type" => row.kind = value,
                        "value" => row.value = value,
                        other => {
                            row.schedule.read(other, value);
                        }
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
    let [headers, include, exclude] = lists;
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
pub(super) fn row_of<'a>(
    name: &'a str,
    prefix: &str,
) -> Result<Option<(usize, &'a str)>, FormError> {
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

pub(super) fn slot_of(path: &str, fields: &Fields) -> String {
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
pub(super) fn in_form_order<'a>(
    problems: &'a Problems,
    fields: &Fields,
) -> Vec<(&'a String, &'a Vec<String>)> {
    let order = slots(fields);
    let mut listed: Vec<(&String, &Vec<String>)> = problems.0.iter().collect();
    listed.sort_by_key(|(slot, _)| order.iter().position(|s| s == *slot).unwrap_or(usize::MAX));
    listed
}

/// Every slot this form shows messages at, in the order the form shows them.
pub(super) fn slots(fields: &Fields) -> Vec<String> {
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
        for part in [
            "digest",
            "digest.everyMinutes",
            "digest.dailyAt",
            "quietHours.from",
            "quietHours.to",
        ] {
            rows.push(format!("notificationEndpoints[{i}].{part}"));
        }
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
pub(super) fn label_of(slot: &str) -> String {
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
