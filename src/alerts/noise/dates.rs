//! Reading the calendar day a date span shows, for two questions: does this span show the day
//! of the check ([`shows`])? Did it move as a clock moves it, or to another day ([`jumped`])?
//! And reading how long ago a relative time says ([`ago`]), for one: did it only grow older
//! ([`aged`])?
//! Numeric forms (ISO 8601, `2026/12/31`, `31.12.2026`, `12/31/2026`, Japanese
//! `2026年12月31日`), month names in English, German, French and Spanish, and weekday names
//! alone are read; a form that is ambiguous (day and month both at most 12) is read both ways.

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

/// Weekday names and their numbers from Monday (0), by the first letters that tell them
/// apart, in English, German, French and Spanish.
const WEEKDAYS: [(&str, u32); 28] = [
    ("mon", 0),
    ("tue", 1),
    ("wed", 2),
    ("thu", 3),
    ("fri", 4),
    ("sat", 5),
    ("sun", 6),
    ("montag", 0),
    ("dienstag", 1),
    ("mittwoch", 2),
    ("donnerstag", 3),
    ("freitag", 4),
    ("samstag", 5),
    ("sonntag", 6),
    ("lundi", 0),
    ("mardi", 1),
    ("mercredi", 2),
    ("jeudi", 3),
    ("vendredi", 4),
    ("samedi", 5),
    ("dimanche", 6),
    ("lunes", 0),
    ("martes", 1),
    ("miércoles", 2),
    ("jueves", 3),
    ("viernes", 4),
    ("sábado", 5),
    ("domingo", 6),
];

/// The weekday a span names: its first word of letters, when that is a weekday's name or the
/// start of one ("Friday", "Fri", "freitags", "Friday 2" as a line may run a weekday into the
/// count after it).
fn weekday(text: &str) -> Option<u32> {
    let word = text
        .split(|c: char| !c.is_alphabetic())
        .find(|w| !w.is_empty())?
        .to_lowercase();
    if word.chars().count() < 3 {
        return None;
    }
    WEEKDAYS
        .iter()
        .find(|(name, _)| word.starts_with(name) || (name.len() > 3 && name.starts_with(&word)))
        .map(|(_, n)| *n)
}

/// Whether the date span `old` became `new` by a move no clock makes: both show a day (or a
/// weekday alone), and no reading of them moves by zero days (a time beside the date changed)
/// or one day forward (the page's day turned, in whatever time zone it keeps). "until Friday"
/// becoming "until Monday" jumped; "Thu 31 Dec" becoming "Fri 1 Jan" did not. A span either
/// side cannot read (a clock time) never jumped; the caller leaves relative times out.
pub(crate) fn jumped(old: &str, new: &str) -> bool {
    // Any year will do for dates written without one, and the next for a new year between.
    const YEAR: i32 = 2001;
    let (before, after) = (read(old, YEAR), read(new, YEAR));
    if before.is_empty() || after.is_empty() {
        return match (weekday(old), weekday(new)) {
            (Some(a), Some(b)) => !matches!((b + 7 - a) % 7, 0 | 1),
            _ => false,
        };
    }
    let later = read(new, YEAR + 1);
    !before.iter().any(|o| {
        after
            .iter()
            .chain(&later)
            .any(|n| matches!((*n - *o).num_days(), 0 | 1))
    })
}

/// The day a date span names, in one spelling: the days it may show (ISO 8601), else its
/// weekday, else the span itself. "Monday 7" and "Monday 8" name one day, as do "12.03.2027"
/// and "12.03.2027, 14:05".
pub(crate) fn day(text: &str) -> String {
    // Any year will do: two spans of one page are read alike.
    let days = read(text, 2001);
    if !days.is_empty() {
        let mut days: Vec<String> = days.iter().map(NaiveDate::to_string).collect();
        days.sort();
        days.dedup();
        return days.join(" ");
    }
    match weekday(text) {
        Some(n) => format!("weekday {n}"),
        None => text.to_string(),
    }
}

/// How long ago, in seconds, a relative time in the past says ("just now" 0, "12 min ago"
/// 720, "vor 2 Stunden" 7,200, "yesterday" a day, "3日前" three days); `None` for one this
/// cannot read or one in the future ("in 5 minutes", "tomorrow").
pub(crate) fn ago(text: &str) -> Option<i64> {
    const NOW: [&str; 13] = [
        "just now",
        "right now",
        "moment",
        "few seconds ago",
        "gerade eben",
        "soeben",
        "vorhin",
        "à l'instant",
        "à l’instant",
        "ahora mismo",
        "hace un momento",
        "hace un rato",
        "たった今",
    ];
    const DAY: i64 = 86_400;
    let text = text.trim().to_lowercase();
    if NOW.iter().any(|w| text.contains(w)) {
        return Some(0);
    }
    match text.as_str() {
        "today" | "heute" | "aujourd'hui" | "hoy" | "今日" => return Some(0),
        "yesterday" | "gestern" | "hier" | "ayer" | "昨日" | "last night" => return Some(DAY),
        "last week" => return Some(7 * DAY),
        "last month" => return Some(30 * DAY),
        "last year" => return Some(365 * DAY),
        _ => {}
    }
    let past = text.ends_with("ago")
        || text.ends_with('前')
        || text.starts_with("vor ")
        || text.starts_with("il y a ")
        || text.starts_with("hace ");
    if !past {
        return None;
    }
    let digits: String = text
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(char::is_ascii_digit)
        .collect();
    let count: i64 = match digits.parse() {
        Ok(n) => n,
        Err(_) if text.contains("few") || text.contains("quelques") || text.contains("unos") => 3,
        Err(_) if text.contains("two") => 2,
        Err(_) if text.contains("three") => 3,
        // "an hour ago", "vor einer Stunde", "il y a une heure", "hace un día".
        Err(_) => 1,
    };
    // Counts spelled out, which are no unit.
    const SPELLED: [&str; 15] = [
        "a", "an", "one", "two", "three", "few", "einer", "einem", "eine", "une", "un", "quelques",
        "una", "unos", "unas",
    ];
    // The unit is the first word of letters after the count (or after the marker word for
    // counts spelled out); Japanese units stand before 前.
    let unit = text
        .trim_start_matches("il y a ")
        .trim_start_matches("vor ")
        .trim_start_matches("hace ")
        .split(|c: char| !c.is_alphabetic())
        .find(|w| !w.is_empty() && !SPELLED.contains(w))?
        .to_string();
    let starts = |names: &[&str]| names.iter().any(|n| unit.starts_with(n));
    let per = if unit == "s" || starts(&["sec", "sek", "seg", "秒"]) {
        1
    } else if unit == "m" || starts(&["min", "分"]) {
        60
    } else if starts(&["h", "std", "stund", "時"]) {
        3_600
    } else if starts(&["d", "tag", "jour", "日"]) {
        DAY
    } else if starts(&["w", "woch", "semain", "semana", "週"]) {
        7 * DAY
    } else if starts(&["mo", "mes", "か月", "ヶ月"]) {
        30 * DAY
    } else if starts(&["y", "jahr", "an", "año", "年"]) {
        365 * DAY
    } else {
        return None;
    };
    Some(count * per)
}

/// Whether the relative time `old` became `new` only by growing older as the clock runs ("12
/// min ago" then "13 min ago", "59 min ago" then "1 hour ago", "just now" then "2 min ago"), or
/// stayed as old in other words: what the same item shows a little later, never news. One that
/// grew younger ("3 hours ago" then "just now": the item was posted again) or that this cannot
/// read is not.
pub(crate) fn aged(old: &str, new: &str) -> bool {
    match (ago(old), ago(new)) {
        (Some(a), Some(b)) => b >= a,
        _ => false,
    }
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

    #[test]
    fn a_date_moved_by_the_clock_did_not_jump_and_one_moved_by_a_person_did() {
        for (old, new) in [
            ("Friday", "Saturday"),
            ("Sun", "Mon"),
            ("Thu 31 Dec", "Fri 1 Jan"),
            ("31.12.2026", "01.01.2027"),
            ("12月31日", "1月1日"),
            ("14 February 2027, 10:00", "14 February 2027, 11:00"),
            ("14:05", "09:30"),
        ] {
            assert!(!jumped(old, new), "{old} -> {new}");
        }
        for (old, new) in [
            ("Friday", "Monday"),
            ("freitag", "Montag"),
            ("Friday 2", "Monday 14"),
            ("14 February 2027", "28 February 2027"),
            ("12.03.2027", "19.03.2027"),
            ("Thu 31 Dec", "Wed 30 Dec"),
        ] {
            assert!(jumped(old, new), "{old} -> {new}");
        }
    }

    #[test]
    fn relative_times_are_read_and_one_that_only_grew_older_aged() {
        for (text, seconds) in [
            ("just now", 0),
            ("12 min ago", 720),
            ("1 h ago", 3_600),
            ("an hour ago", 3_600),
            ("2 hours ago", 7_200),
            ("3d ago", 3 * 86_400),
            ("yesterday", 86_400),
            ("vor 2 Stunden", 7_200),
            ("vor einer Minute", 60),
            ("il y a 5 minutes", 300),
            ("hace 3 días", 3 * 86_400),
            ("hace un día", 86_400),
            ("hace un momento", 0),
            ("3日前", 3 * 86_400),
            ("5分前", 300),
        ] {
            assert_eq!(ago(text), Some(seconds), "{text}");
        }
        for text in ["in 5 minutes", "tomorrow", "dans 2 jours", "a while"] {
            assert_eq!(ago(text), None, "{text}");
        }
        for (old, new) in [
            ("12 min ago", "13 min ago"),
            ("59 min ago", "1 h ago"),
            ("just now", "2 min ago"),
            ("4 min ago", "4 minutes ago"),
            ("vor 59 Minuten", "vor einer Stunde"),
        ] {
            assert!(aged(old, new), "{old} -> {new}");
        }
        for (old, new) in [
            ("3 hours ago", "just now"),
            ("2 days ago", "5 min ago"),
            ("5 min ago", "in 5 minutes"),
        ] {
            assert!(!aged(old, new), "{old} -> {new}");
        }
    }

    #[test]
    fn a_day_is_named_alike_whatever_runs_into_it() {
        assert_eq!(day("Monday 7"), day("Monday 8"));
        assert_eq!(day("Monday"), day("montag"));
        assert_ne!(day("Monday 7"), day("Friday 7"));
        assert_eq!(day("12.03.2027"), day("12.03.2027, 14:05"));
        assert_ne!(day("12.03.2027"), day("19.03.2027"));
        assert_eq!(day("14 February 2027"), "2027-02-14");
    }
}
