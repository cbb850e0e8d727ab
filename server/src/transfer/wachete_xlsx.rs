//! Wachete's XLSX export: a header row, then one watch a row, in the columns Name, URL, XPath,
//! Interval (min), Dynamic Wachet and Folder (matched in any case, in any order). URL is
//! required; any other column is named as not carried over. The workbook is a zip, checked as
//! every archive is ([`super::archive`]) before the spreadsheet reader opens it.

use super::archive::{self, Archive};
use super::{Format, Plan, PlannedMonitor, ReadError, given_name, watch_of};
use calamine::{Data, Reader};

/// Whether `bytes` are an XLSX workbook.
pub fn sniff(bytes: &[u8]) -> bool {
    archive::is_zip(bytes) && bytes.windows(15).any(|w| w == b"xl/workbook.xml")
}

/// The columns Wachete writes, lower-cased.
const COLUMNS: [&str; 6] = [
    "name",
    "url",
    "xpath",
    "interval (min)",
    "dynamic wachet",
    "folder",
];

pub fn read(bytes: &[u8]) -> Result<Plan, ReadError> {
    Archive::open(bytes)?;
    let mut book: calamine::Xlsx<_> = calamine::open_workbook_from_rs(std::io::Cursor::new(bytes))
        .map_err(|err| ReadError::Invalid(format!("the workbook cannot be read: {err}")))?;
    let sheet = book
        .worksheet_range_at(0)
        .ok_or_else(|| ReadError::Invalid("the workbook has no sheet".into()))?
        .map_err(|err| ReadError::Invalid(format!("the workbook's first sheet: {err}")))?;
    let mut rows = sheet.rows();
    let header: Vec<String> = rows
        .next()
        .ok_or_else(|| ReadError::Invalid("the sheet is empty".into()))?
        .iter()
        .map(|c| cell_text(c).trim().to_ascii_lowercase())
        .collect();
    let column = |name: &str| header.iter().position(|h| h == name);
    if column("url").is_none() {
        return Err(ReadError::Invalid(format!(
            "the sheet has no URL column (its columns: {}); a Wachete export has {}",
            header.join(", "),
            "Name, URL, XPath, Interval (min), Dynamic Wachet, Folder"
        )));
    }
    let mut plan = Plan::new(Format::WacheteXlsx);
    for extra in header
        .iter()
        .filter(|h| !h.is_empty() && !COLUMNS.contains(&h.as_str()))
    {
        plan.leave_out(
            "the sheet",
            format!("column {extra}"),
            "not a column of Wachete's export: its values are not read",
        );
    }
    for (i, row) in rows.enumerate() {
        // Row 1 is the header; a person counts from it.
        let number = i + 2;
        let at = |name: &str| {
            column(name)
                .and_then(|c| row.get(c))
                .filter(|c| !matches!(c, Data::Empty))
        };
        let url = at("url").map(cell_text).unwrap_or_default();
        let name = given_name(at("name").map(cell_text).as_deref());
        let item = match &name {
            Some(name) => format!("row {number} \"{name}\""),
            None => format!("row {number}"),
        };
        if url.trim().is_empty() {
            if row.iter().any(|c| !matches!(c, Data::Empty)) {
                plan.leave_out(&item, "the whole row", "it has no URL");
            }
            continue;
        }
        let mut monitor = watch_of(&url);
        if name.is_some() {
            monitor.name = name;
        }
        monitor.x_path = at("xpath")
            .map(cell_text)
            .map(|x| x.trim().to_string())
            .filter(|x| !x.is_empty());
        if let Some(minutes) = at("interval (min)") {
            match cell_number(minutes) {
                Some(m) if m >= 0.0 => {
                    let seconds = (m * 60.0).round().min(f64::from(i32::MAX));
                    // Whole seconds of a bounded, non-negative number.
                    monitor.recurrence_in_seconds = Some(seconds as i32);
                }
                _ => plan.leave_out(
                    &item,
                    format!("interval {}", cell_text(minutes)),
                    "not a number of minutes: the interval is the service's default",
                ),
            }
        }
        monitor.dynamic_content = at("dynamic wachet").is_some_and(cell_true);
        let folder = at("folder")
            .map(cell_text)
            .filter(|f| !f.trim().is_empty())
            .map(|f| plan.root_folder(&f));
        plan.monitors.push(PlannedMonitor {
            item,
            monitor,
            folder,
            history: Vec::new(),
        });
    }
    Ok(plan)
}

fn cell_text(cell: &Data) -> String {
    match cell {
        Data::String(s) => s.clone(),
        Data::Empty => String::new(),
        other => other.to_string(),
    }
}

fn cell_number(cell: &Data) -> Option<f64> {
    match cell {
        Data::Int(n) => Some(*n as f64),
        Data::Float(f) => Some(*f),
        Data::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Wachete and spreadsheet programs write a true cell as a boolean, `TRUE`, `=TRUE()` or 1.
fn cell_true(cell: &Data) -> bool {
    match cell {
        Data::Bool(b) => *b,
        Data::Int(n) => *n == 1,
        Data::Float(f) => *f == 1.0,
        Data::String(s) => {
            let s = s.trim().to_ascii_lowercase();
            s.contains("true") || s == "1" || s == "yes"
        }
        _ => false,
    }
}
