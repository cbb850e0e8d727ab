//! The values of query parameters that are more than text, read as the clients of the
//! specification send them: date-times in the ISO 8601 forms ASP.NET reads (a Python client's
//! `datetime.utcnow().isoformat()` has no offset and six fractional digits), and booleans in any
//! case or as `1`/`0` (Python's `requests` sends `True`).

use chrono::{DateTime, NaiveDate, NaiveTime, Utc};
use serde::{Deserialize, Deserializer};

/// The spellings a date-time may take, for error messages.
const DATE_TIME_FORMS: &str = "RFC 3339 (ISO 8601) such as 2026-12-06T02:00:00Z, \
     2026-12-06T03:00:00.123+01:00, 2026-12-06T02:00:00 (UTC) or 2026-12-06 (midnight UTC)";

/// An ISO 8601 date-time as a point in time: a date with a time (`T`, `t` or a space between)
/// of hours and minutes, optionally seconds with 0 to 9 fractional digits (after `.` or `,`),
/// and an offset (`Z`, `±hh:mm`, `±hhmm`, `±hh`) or none (UTC); or a bare date (its midnight,
/// UTC). A `+` sent unencoded in a query reads as a space, and is read back as the `+` it was.
/// The error says what is wrong and which forms are read.
pub fn date_time(text: &str) -> Result<DateTime<Utc>, String> {
    parse(text.trim())
        .map_err(|why| format!("{why}: {text:?} is not a date-time; send {DATE_TIME_FORMS}"))
}

fn parse(text: &str) -> Result<DateTime<Utc>, &'static str> {
    let bytes = text.as_bytes();
    let number = |from: usize, len: usize| -> Option<u32> {
        let digits = bytes.get(from..from + len)?;
        digits
            .iter()
            .all(u8::is_ascii_digit)
            .then(|| digits.iter().fold(0, |n, d| n * 10 + u32::from(d - b'0')))
    };
    let shape = "not in the form YYYY-MM-DD[THH:MM[:SS[.fraction]][offset]]";
    let (Some(year), Some(month), Some(day)) = (number(0, 4), number(5, 2), number(8, 2)) else {
        return Err(shape);
    };
    if bytes.get(4) != Some(&b'-') || bytes.get(7) != Some(&b'-') {
        return Err(shape);
    }
    let date = NaiveDate::from_ymd_opt(year as i32, month, day).ok_or("no such date")?;
    if bytes.len() == 10 {
        return Ok(date.and_time(NaiveTime::MIN).and_utc());
    }
    if !matches!(bytes[10], b'T' | b't' | b' ') {
        return Err(shape);
    }
    let (Some(hour), Some(minute)) = (number(11, 2), number(14, 2)) else {
        return Err(shape);
    };
    if bytes.get(13) != Some(&b':') {
        return Err(shape);
    }
    let mut at = 16;
    let (mut second, mut nanos) = (0, 0);
    if bytes.get(at) == Some(&b':') {
        second = number(at + 1, 2).ok_or(shape)?;
        at += 3;
        if matches!(bytes.get(at), Some(b'.' | b',')) {
            let digits = bytes[at + 1..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count();
            if digits == 0 || digits > 9 {
                return Err("the fraction of a second has 1 to 9 digits");
            }
            nanos = number(at + 1, digits).ok_or(shape)? * 10u32.pow(9 - digits as u32);
            at += 1 + digits;
        }
    }
    let time = NaiveTime::from_hms_nano_opt(hour, minute, second, nanos).ok_or("no such time")?;
    let local = date.and_time(time);
    let offset_seconds = match &bytes[at..] {
        [] | [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-' | b' '), rest @ ..] => {
            let (hours, minutes) = match rest {
                [h1, h2] => ([*h1, *h2], [b'0', b'0']),
                [h1, h2, b':', m1, m2] | [h1, h2, m1, m2] => ([*h1, *h2], [*m1, *m2]),
                _ => return Err("the offset is not Z, ±hh:mm, ±hhmm or ±hh"),
            };
            let two = |d: [u8; 2]| {
                d.iter()
                    .all(u8::is_ascii_digit)
                    .then(|| i64::from(d[0] - b'0') * 10 + i64::from(d[1] - b'0'))
            };
            let (Some(hours), Some(minutes)) = (two(hours), two(minutes)) else {
                return Err("the offset is not Z, ±hh:mm, ±hhmm or ±hh");
            };
            if hours > 23 || minutes > 59 {
                return Err("the offset is out of range");
            }
            let seconds = hours * 3600 + minutes * 60;
            if *sign == b'-' { -seconds } else { seconds }
        }
        _ => return Err(shape),
    };
    let utc = local - chrono::Duration::seconds(offset_seconds);
    Ok(utc.and_utc())
}

/// A query boolean: `true`/`false` in any case, or `1`/`0`.
pub fn boolean(text: &str) -> Result<bool, String> {
    match text.trim() {
        t if t.eq_ignore_ascii_case("true") || t == "1" => Ok(true),
        t if t.eq_ignore_ascii_case("false") || t == "0" => Ok(false),
        _ => Err(format!(
            "{text:?} is not a boolean; send true or false (in any case), 1 or 0"
        )),
    }
}

/// Reads an optional query boolean with [`boolean`], for `#[serde(default, deserialize_with)]`.
pub fn deserialize_boolean<'de, D: Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    let text = std::borrow::Cow::<str>::deserialize(deserializer)?;
    boolean(&text).map_err(serde::de::Error::custom)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn millis(text: &str) -> i64 {
        date_time(text)
            .unwrap_or_else(|err| panic!("{text}: {err}"))
            .timestamp_millis()
    }

    #[test]
    fn every_iso_8601_spelling_reads_as_its_instant() {
        let two = millis("2026-12-06T02:00:00Z");
        for same in [
            "2026-12-06T02:00:00Z",
            "2026-12-06t02:00:00z",
            "2026-12-06 02:00:00Z",
            "2026-12-06T02:00:00",
            "2026-12-06T02:00",
            "2026-12-06T02:00:00.0",
            "2026-12-06T02:00:00,000",
            "2026-12-06T02:00:00.000000000",
            "2026-12-06T03:00:00+01:00",
            "2026-12-06T03:00:00+0100",
            "2026-12-06T03:00:00+01",
            "2026-12-06T03:00:00 01:00",
            "2026-12-05T21:30:00-04:30",
            " 2026-12-06T02:00:00Z ",
        ] {
            assert_eq!(millis(same), two, "{same}");
        }
        assert_eq!(millis("2026-12-06T02:00:00.123456"), two + 123);
        assert_eq!(millis("2026-12-06T02:00:00.1"), two + 100);
        assert_eq!(millis("2026-12-06T02:00:00.123456789Z"), two + 123);
        assert_eq!(millis("2026-12-06"), two - 2 * 3_600_000);
    }

    #[test]
    fn what_is_no_date_time_says_why_and_what_is_read() {
        for (bad, why) in [
            ("2026-13-40", "no such date"),
            ("2026-02-30T00:00:00Z", "no such date"),
            ("yesterday", "not in the form"),
            ("", "not in the form"),
            ("2026-12-06T25:00:00Z", "no such time"),
            ("2026-12-06T02:00:00.1234567890Z", "1 to 9 digits"),
            ("2026-12-06T02:00:00+1", "offset"),
            ("2026-12-06T02:00:00+24:00", "out of range"),
            ("2026-12-06T02:00:00Zjunk", "not in the form"),
            ("1733450400", "not in the form"),
        ] {
            let err = date_time(bad).unwrap_err();
            assert!(err.contains(why), "{bad}: {err}");
            assert!(
                err.contains("RFC 3339") && err.contains("2026-12-06T02:00:00Z"),
                "{err}"
            );
        }
    }

    #[test]
    fn booleans_in_any_case_or_as_digits() {
        for (text, value) in [
            ("true", true),
            ("True", true),
            ("TRUE", true),
            ("1", true),
            ("false", false),
            ("False", false),
            ("0", false),
        ] {
            assert_eq!(boolean(text), Ok(value), "{text}");
        }
        for bad in ["maybe", "", "yes", "2", "tru"] {
            assert!(boolean(bad).unwrap_err().contains("true or false"), "{bad}");
        }
    }
}
