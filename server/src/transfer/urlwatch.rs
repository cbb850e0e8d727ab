//! urlwatch's `urls.yaml` and webchanges' `jobs.yaml`: one YAML document a job. A `url` job
//! becomes a monitor (rendered in the browser with webchanges' `use_browser: true`), a
//! `navigate` job a monitor rendered in the browser; a `command` job (a shell command) is not
//! carried over. `name`, `method`, `data` (text, or a mapping sent as a form), `headers` and
//! `enabled` map; of the filters, `xpath` and `css` (with their `exclude`) become `xPath` and
//! `excludeXPath`, `re.findall` the regular expression, and `html2text`, `strip` and
//! `remove-duplicate-lines`-like clean-ups wachet does anyway pass; any other filter, or a
//! selection after text was already made, is named as not carried over.

use super::css::xpath_or_css;
use super::{Format, Plan, PlannedMonitor, ReadError, given_name, watch_of};
use serde::Deserialize;
use serde_yaml_ng::Value;
use wachet::model::HeaderPair;

/// Whether `bytes` look like a jobs file: text whose YAML has a job's key at the top level.
pub fn sniff(bytes: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return false;
    };
    text.lines().any(|line| {
        ["url:", "navigate:", "command:"]
            .iter()
            .any(|key| line.starts_with(key))
    })
}

/// Filters that only clean text up, which wachet's value already is.
const CLEAN_UPS: [&str; 4] = ["html2text", "strip", "remove_repeated", "beautify"];
/// Keys of a job that change nothing a monitor could carry (urlwatch's own bookkeeping).
const BOOKKEEPING: [&str; 6] = [
    "kind",
    "max_tries",
    "treat_new_as_changed",
    "compared_versions",
    "user_visible_url",
    "index_number",
];

pub fn read(bytes: &[u8]) -> Result<Plan, ReadError> {
    let text = std::str::from_utf8(bytes)
        .map_err(|_| ReadError::Invalid("the jobs file is not UTF-8 text".into()))?;
    let mut plan = Plan::new(Format::Urlwatch);
    for (i, document) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        let number = i + 1;
        let value = Value::deserialize(document)
            .map_err(|err| ReadError::Invalid(format!("job {number} is not valid YAML: {err}")))?;
        let Value::Mapping(job) = value else {
            if matches!(value, Value::Null) {
                continue;
            }
            return Err(ReadError::Invalid(format!("job {number} is not a mapping")));
        };
        job_to_plan(&mut plan, number, &job);
    }
    if plan.monitors.is_empty() && plan.left_out.is_empty() {
        return Err(ReadError::Invalid("the jobs file has no job".into()));
    }
    Ok(plan)
}

fn text(job: &serde_yaml_ng::Mapping, key: &str) -> Option<String> {
    match job.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn job_to_plan(plan: &mut Plan, number: usize, job: &serde_yaml_ng::Mapping) {
    let name = given_name(text(job, "name").as_deref());
    let label = |what: &str| match &name {
        Some(name) => format!("job {number} \"{name}\""),
        None => format!("job {number} ({what})"),
    };
    if let Some(command) = text(job, "command") {
        plan.leave_out(
            &label(&command),
            "the whole job",
            "a shell command job: wachet watches web pages, it runs no commands",
        );
        return;
    }
    let (url, browser) = match (text(job, "url"), text(job, "navigate")) {
        (Some(url), _) => (
            url,
            job.get("use_browser").and_then(Value::as_bool) == Some(true),
        ),
        (None, Some(url)) => (url, true),
        (None, None) => {
            plan.leave_out(
                &label("?"),
                "the whole job",
                "it has no url, navigate or command",
            );
            return;
        }
    };
    let item = label(&url);
    let mut monitor = watch_of(&url);
    if name.is_some() {
        monitor.name = name.clone();
    }
    monitor.dynamic_content = browser;
    monitor.method = text(job, "method")
        .map(|m| m.trim().to_ascii_uppercase())
        .filter(|m| m != "GET");
    monitor.body = match job.get("data") {
        Some(Value::Mapping(form)) => {
            let mut encoded = form_urlencoded::Serializer::new(String::new());
            for (k, v) in form {
                let key = yaml_text(k);
                encoded.append_pair(&key, &yaml_text(v));
            }
            Some(encoded.finish())
        }
        Some(_) => text(job, "data"),
        None => None,
    };
    if monitor.body.is_some() && monitor.method.is_none() {
        // urlwatch posts when a job has data and no method.
        monitor.method = Some("POST".into());
    }
    if let Some(Value::Mapping(headers)) = job.get("headers") {
        let pairs: Vec<HeaderPair> = headers
            .iter()
            .map(|(k, v)| HeaderPair::new(yaml_text(k), yaml_text(v)))
            .collect();
        monitor.headers = (!pairs.is_empty()).then_some(pairs);
    }
    if job.get("enabled").and_then(Value::as_bool) == Some(false) {
        monitor.recurrence_in_seconds = Some(0);
    }
    filters(plan, &item, job.get("filter"), &mut monitor);
    let known = [
        "name",
        "url",
        "navigate",
        "use_browser",
        "method",
        "data",
        "headers",
        "enabled",
        "filter",
    ];
    for (key, _) in job {
        let key = yaml_text(key);
        if !known.contains(&key.as_str()) && !BOOKKEEPING.contains(&key.as_str()) {
            plan.leave_out(&item, format!("setting {key}"), "wachet has no counterpart");
        }
    }
    plan.monitors.push(PlannedMonitor {
        item,
        monitor,
        folder: None,
        history: Vec::new(),
    });
}

fn yaml_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => serde_yaml_ng::to_string(other)
            .unwrap_or_default()
            .trim()
            .to_string(),
    }
}

/// One filter of a chain: its name and its argument.
fn filter_list(filter: Option<&Value>) -> Vec<(String, Value)> {
    match filter {
        // The older form: `xpath://div,html2text`.
        Some(Value::String(chain)) => chain
            .split(',')
            .map(str::trim)
            .filter(|f| !f.is_empty())
            .map(|f| match f.split_once(':') {
                Some((name, arg)) => (name.trim().to_string(), Value::String(arg.to_string())),
                None => (f.to_string(), Value::Null),
            })
            .collect(),
        Some(Value::Sequence(list)) => list
            .iter()
            .filter_map(|f| match f {
                Value::String(name) => Some((name.clone(), Value::Null)),
                Value::Mapping(m) => m.iter().next().map(|(k, v)| (yaml_text(k), v.clone())),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn filters(plan: &mut Plan, item: &str, filter: Option<&Value>, monitor: &mut wachet::Monitor) {
    // Selections apply to the page, so only before text was made from it.
    let mut text_made = false;
    for (name, arg) in filter_list(filter) {
        let what = format!("filter {name}");
        let field = |key: &str| match &arg {
            Value::String(s) if key == "main" => Some(s.clone()),
            Value::Mapping(m) => m.get(key).map(yaml_text),
            _ => None,
        };
        match name.as_str() {
            "xpath" | "css" if text_made || monitor.x_path.is_some() => plan.leave_out(
                item,
                what,
                "a selection after another filter does not map: wachet selects once, from the page",
            ),
            "xpath" | "css" => {
                let main = field("main").or_else(|| field(if name == "css" { "selector" } else { "path" }));
                let Some(main) = main else {
                    plan.leave_out(item, what, "it names no selector");
                    continue;
                };
                let convert = |s: &str| match name.as_str() {
                    "xpath" => Ok(s.trim().to_string()),
                    _ => xpath_or_css(s),
                };
                match convert(&main) {
                    Ok(xpath) => monitor.x_path = Some(xpath),
                    Err(reason) => {
                        plan.leave_out(item, format!("{what} {main}"), reason);
                        continue;
                    }
                }
                if let Some(exclude) = field("exclude") {
                    match convert(&exclude) {
                        Ok(xpath) => monitor.exclude_x_path = Some(xpath),
                        Err(reason) => plan.leave_out(item, format!("{what} exclude {exclude}"), reason),
                    }
                }
            }
            "re.findall" if monitor.regex.is_none() => {
                match field("main").or_else(|| field("pattern")) {
                    Some(pattern) => {
                        monitor.regex = Some(pattern);
                        text_made = true;
                    }
                    None => plan.leave_out(item, what, "it names no pattern"),
                }
            }
            clean if CLEAN_UPS.contains(&clean) => text_made = true,
            "re.sub" => plan.leave_out(
                item,
                what,
                "a replacement changes the text rather than selecting from it: wachet has no counterpart",
            ),
            _ => plan.leave_out(item, what, "wachet has no counterpart to this filter"),
        }
    }
}
