//! Reading the calendar day a date span shows, for one question: does this span show the day
//! of the check ([`shows`])? Numeric forms (ISO 8601, `2026/12/31`, `31.12.2026`,
//! `12/31/2026`, Japanese `2026年12月31日`) and month names in English, German, French and
//! Spanish are read; a form that is ambiguous (day and month both at most 12) is read both
//! ways.

use chrono::{Datelike, NaiveDate};
use regex::Regex;
use std::sync::LazyLock;

static YMD: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(\d{4})[-/年](\d{1,2})[-/月](\d{1,2})").ok());
static DMY: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"\b(\d{1,2})[./](\d{1,2})[./](\d{4}|\d{2})\b").ok());
static MD_JA: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(\d{1,2})月(\d{1,2})日").ok());
static WORD: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(?i)\b(\p{L}+|\d+)(h\d|:\d)?").ok());

/// Month names and their numbers (the first three letters of most are enough; the rest are
/// listed whole).
const MONTHS: [(&str, u32); 36] = [
    ("jan", 1),
    ("ene", 1),
    ("feb", 2),
    ("fév", 2),
    ("fev", 2),
    ("mar", 3),
    ("mär", 3),
    ("apr", 4),
    ("avr", 4),
    ("abr", 4),
    ("may", 5),
    ("mai", 5),
    ("mayo", 5),
    ("jun", 6),
    ("juin", 6),
    ("jul", 7),
    ("juil", 7),
    ("aug", 8),
    ("aoû", 8),
    ("aou", 8),
    ("ago", 8),
    ("sep", 9),
    ("oct", 10),
    ("okt", 10),
    ("nov", 11),
    ("dec", 12),
    ("dez", 12),
    ("déc", 12),
    ("dic", 12),
    ("janv", 1),
    ("févr", 2),
    ("mars", 3),
    ("avril", 4),
    ("juni", 6),
    ("juli", 7),
    ("juillet", 7),
];

/// Whether `text` shows `day`, give or take one day (the page's time zone is not known).
pub(crate) fn shows(text: &str, day: NaiveDate) -> bool {
    let near = |d: NaiveDate| (d - day).num_days().abs() <= 1;
    read(text, day.year()).into_iter().any(near)
}

/// The days `text` may show; a date without a year is taken in `year`.
pub(crate) fn read(text: &str, year: i32) -> Vec<NaiveDate> {
    let mut out = Vec::new();
    let num = |s: &str| s.parse::<u32>().ok();
    if let Some(re) = YMD.as_ref() {
        for c in re.captures_iter(text) {
            if let (Some(y), Some(m), Some(d)) = (num(&c[1]), num(&c[2]), num(&c[3])) {
                out.extend(date(y as i32, m, d));
            }
        }
    }
    if let Some(re) = DMY.as_ref() {
        for c in re.captures_iter(text) {
            if let (Some(a), Some(b), Some(y)) = (num(&c[1]), num(&c[2]), num(&c[3])) {
                let y = if y < 100 { 2000 + y as i32 } else { y as i32 };
                out.extend(date(y, b, a));
                out.extend(date(y, a, b));
            }
        }
    }
    if out.is_empty()
        && let Some(re) = MD_JA.as_ref()
    {
        for c in re.captures_iter(text) {
            if let (Some(m), Some(d)) = (num(&c[1]), num(&c[2])) {
                out.extend(date(year, m, d));
            }
        }
    }
    if out.is_empty() {
        out.extend(named(text, year));
    }
    out
}

/// A date written with a month name: the month, a day number (1 to 31, not a clock's hour) and
/// a four-digit year when there is one.
fn named(text: &str, year: i32) -> Option<NaiveDate> {
    let re = WORD.as_ref()?;
    let mut month = None;
    let mut day = None;
    let mut y = None;
    for c in re.captures_iter(text) {
        let word = c[1].to_lowercase();
        if c.get(2).is_some() {
            continue; // 14:05 or 14h05: a clock
        }
        if let Ok(n) = word.parse::<u32>() {
            match (word.len(), n) {
                (4, _) => y = y.or(Some(n as i32)),
                (1 | 2, 1..=31) => day = day.or(Some(n)),
                _ => {}
            }
        } else if month.is_none() {
            month = MONTHS
                .iter()
                .filter(|(name, _)| word.starts_with(name) && word.chars().count() >= 3)
                .map(|(_, m)| *m)
                .next();
        }
    }
    date(y.unwrap_or(year), month?, day?)
}

fn date(y: i32, m: u32, d: u32) -> Option<NaiveDate> {
    NaiveDate::from_ymd_opt(y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_in_several_forms_are_read() {
        let day = NaiveDate::from_ymd_opt(2026, 12, 31).unwrap();
        for text in [
            "2026-12-31T08:00:00Z",
            "31.12.2026, 14:05 Uhr",
            "12/31/2026",
            "2026年12月31日 14:05",
            "Thursday, December 31, 2026",
            "31 décembre 2026 à 14h05",
            "31. Dezember 2026",
            "31 de diciembre de 2026",
            "Thu 31 Dec",
            "January 1, 2027",
        ] {
            assert!(shows(text, day), "{text}");
        }
        for text in ["March 3, 2026", "03.03.2026", "14:05", "Sat 10 Jan"] {
            assert!(!shows(text, day), "{text}");
        }
    }
}
