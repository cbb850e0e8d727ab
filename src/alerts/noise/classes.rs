//! The kinds of volatile spans learning recognises ([`Class`]): dates and times in common
//! formats and locales, relative times, UUIDs, numbers and counters, hex hashes, tokens and
//! ids, currency marks, and, when none fits, the varying words between stable text. Each kind
//! is a regular-expression fragment without capture groups, so a mask can put one group
//! around it; [`Class::covering`] finds the kind that explains a difference seen in two lines.

use regex::Regex;
use std::ops::Range;
use std::sync::LazyLock;

/// A kind of volatile span, most specific first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Class {
    /// A date, a time or both, with weekday and month names in English, German, French and
    /// Spanish, numeric forms (ISO 8601, `31.12.2026`, `12/31/2026`), 12 and 24 h clocks and
    /// Japanese `2026年12月31日`.
    DateTime,
    /// "3 minutes ago", "vor 5 Minuten", "il y a 2 heures", "hace 3 días", "3分前", "just now",
    /// "yesterday".
    Relative,
    /// A UUID.
    Uuid,
    /// A number in any grouping (`1,234`, `1.234`, `1 234`), with decimals, sign and percent.
    Number,
    /// A hex hash of seven digits or more.
    Hex,
    /// An id, token, nonce or hashed name: letters and digits (base64 included) with at least
    /// one digit or a capital after a small letter (never a plain word).
    Token,
    /// A currency sign or code.
    Currency,
    /// Any text on the line between stable anchors (a rotating ad, a word that varies).
    Words,
}

const MONTHS: &str = "january|february|march|april|may|june|july|august|september|october|\
november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec|januar|februar|märz|mär|\
mai|juni|juli|oktober|okt|dezember|dez|janvier|janv|février|févr|fév|mars|avril|avr|juin|\
juillet|juil|août|septembre|octobre|novembre|décembre|déc|enero|febrero|marzo|abril|mayo|\
junio|julio|agosto|septiembre|setiembre|octubre|noviembre|diciembre|ene|abr|ago|dic";

const WEEKDAYS: &str = "monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tues|tue|\
wed|thurs|thur|thu|fri|sat|sun|montag|dienstag|mittwoch|donnerstag|freitag|samstag|sonntag|\
lundi|mardi|mercredi|jeudi|vendredi|samedi|dimanche|lun|mer|jeu|ven|sam|dim|lunes|martes|\
miércoles|miercoles|jueves|viernes|sábado|sabado|domingo";

const UNITS_EN: &str =
    "seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|weeks?|months?|years?|[smhdwy]";
const UNITS_DE: &str =
    "Sekunden?|Sek\\.?|Minuten?|Min\\.?|Stunden?|Std\\.?|Tagen?|Wochen?|Monaten?|Jahren?";
const UNITS_FR: &str = "secondes?|s|minutes?|min|heures?|h|jours?|semaines?|mois|ans?";
const UNITS_ES: &str = "segundos?|minutos?|min|horas?|h|días?|dias?|semanas?|mes(?:es)?|años?";

/// The date-time fragment: a run of date and time parts (a weekday, a month, a numeric date,
/// a clock, a plain number such as a day or a year) that holds at least one part only a date
/// or a time has, so a lone number is never a date.
fn date_time() -> String {
    let month = format!("(?:{MONTHS})(?-u:\\b)\\.?");
    let weekday = format!("(?:{WEEKDAYS})(?-u:\\b)\\.?");
    let numeric = "(?:[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[T ][0-9]{1,2}:[0-9]{2}(?::[0-9]{2}(?:[.,][0-9]+)?)?\
(?:Z|[+-][0-9]{2}:?[0-9]{2})?)?|[0-9]{1,2}[./][0-9]{1,2}[./][0-9]{2,4}|[0-9]{4}/[0-9]{1,2}/[0-9]{1,2})";
    let clock = "(?:[0-9]{1,2}:[0-9]{2}(?::[0-9]{2})?(?:[.,][0-9]+)?(?: ?[ap]\\.?m(?-u:\\b)\\.?)?|[0-9]{1,2}h[0-9]{2}\
|[0-9]{1,2} ?[ap]\\.?m(?-u:\\b)\\.?)(?: ?(?:Uhr|UTC|GMT|CET|CEST|[ECMP][SD]T|BST|Z|[+-][0-9]{2}:?[0-9]{2}))?";
    let japanese = "(?:(?:[0-9]{4}年)?[0-9]{1,2}月[0-9]{1,2}日(?: ?[(（][月火水木金土日][)）])?\
|[0-9]{1,2}時[0-9]{1,2}分(?:[0-9]{1,2}秒)?)";
    let marker = format!("(?:{numeric}|{clock}|{japanese}|{weekday}|{month})");
    let plain = "[0-9]{1,4}(?:st|nd|rd|th|er|e)?\\.?";
    let atom = format!("(?:{marker}|{plain})");
    let sep = "(?:, ?| (?:à|at|um|de|del|le|the|a las|à partir de|-|–) | |T)";
    format!("(?i:(?-u:\\b)(?:{atom}{sep})*{marker}(?:{sep}{atom})*)")
}

fn relative() -> String {
    let n = "(?:[0-9]+|an?|one|two|three|a few)";
    let ein = "(?:[0-9]+|einer?|einem)";
    let un = "(?:[0-9]+|une?|quelques)";
    let es = "(?:[0-9]+|una?|unos|unas)";
    format!(
        "(?i:just now|right now|moments? ago|a moment ago|few seconds ago|yesterday|today|tomorrow|\
last (?:night|week|month|year)|gerade eben|soeben|vorhin|gestern|heute|morgen|à l'instant|\
à l’instant|hier|aujourd'hui|demain|ahora mismo|hace un momento|hace un rato|ayer|hoy|mañana|\
今日|昨日|たった今|\
{n} ?(?:{UNITS_EN})\\.? ago|in {n} ?(?:{UNITS_EN})(?-u:\\b)|\
vor {ein} ?(?:{UNITS_DE})|in {ein} ?(?:{UNITS_DE})|\
il y a {un} ?(?:{UNITS_FR})(?-u:\\b)|dans {un} ?(?:{UNITS_FR})(?-u:\\b)|\
hace {es} ?(?:{UNITS_ES})(?-u:\\b)|en {es} ?(?:{UNITS_ES})(?-u:\\b)|\
[0-9]+ ?(?:秒|分|時間|日|週間|か月|ヶ月|年)前)"
    )
}

const UUID: &str =
    "(?i:(?-u:\\b)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?-u:\\b))";
const NUMBER: &str =
    "(?:[-+]?(?-u:\\b)(?:[0-9]{1,3}(?:[,.' ][0-9]{3})+|[0-9]+)(?:[.,][0-9]+)?(?: ?%)?)";
const HEX: &str = "(?:(?-u:\\b)[0-9a-fA-F]{7,}(?-u:\\b))";
const TOKEN: &str =
    "(?:[A-Za-z0-9_+/-]*[0-9][A-Za-z0-9_+/-]*=*|[A-Za-z0-9_+/-]*[a-z][A-Z][A-Za-z0-9_+/-]*=*)";
const CURRENCY: &str =
    "(?:[€$£¥₩₹]|(?-u:\\b)(?:EUR|USD|GBP|CHF|JPY|CAD|AUD|SEK|NOK|DKK|PLN)(?-u:\\b))";
const WORDS: &str = "[^\\n]*?";

struct Compiled {
    class: Class,
    fragment: String,
    regex: Regex,
}

/// The classes tried on a difference, in order, compiled once.
static CLASSES: LazyLock<Vec<Compiled>> = LazyLock::new(|| {
    [
        (Class::DateTime, date_time()),
        (Class::Relative, relative()),
        (Class::Uuid, UUID.to_string()),
        (Class::Number, NUMBER.to_string()),
        (Class::Hex, HEX.to_string()),
        (Class::Token, TOKEN.to_string()),
        (Class::Currency, CURRENCY.to_string()),
    ]
    .into_iter()
    .filter_map(|(class, fragment)| {
        // The fragments are constants; a failure would be a bug caught by the tests, and
        // leaving that class out keeps the rest working.
        let regex = Regex::new(&fragment).ok()?;
        Some(Compiled {
            class,
            fragment,
            regex,
        })
    })
    .collect()
});

/// Every span of a kind known to be volatile (dates and times, relative times, UUIDs,
/// numbers, hex hashes, tokens), most specific first: what a line's identity leaves out
/// ([`super::lines`]). Currency marks stay (a price in another currency is news) and so do
/// words.
pub(crate) static VOLATILE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    let alternatives: Vec<String> = CLASSES
        .iter()
        .filter(|c| c.class != Class::Currency)
        .map(|c| format!("(?:{})", c.fragment))
        .collect();
    regex::RegexBuilder::new(&alternatives.join("|"))
        .size_limit(64 << 20)
        .build()
        .ok()
});

/// The volatile spans of `line` ([`VOLATILE`]), in order, with relative times read first: a
/// count belongs to its unit, not to the date before it, so "until Monday 59 min ago" is
/// "Monday" and "59 min ago", and an hour later "Monday" and "1 h ago" (a date run into the
/// count would leave "min" and then "h" in the line's words, making it another line).
pub(crate) fn volatile_spans(line: &str) -> Vec<Range<usize>> {
    let Some(volatile) = VOLATILE.as_ref() else {
        return Vec::new();
    };
    let relative = CLASSES.iter().find(|c| c.class == Class::Relative);
    let mut spans = Vec::new();
    let mut from = 0;
    let firsts = relative
        .into_iter()
        .flat_map(|c| c.regex.find_iter(line))
        .map(|m| m.range())
        .chain(std::iter::once(line.len()..line.len()));
    for first in firsts {
        // The stretch before this relative time, read with every class.
        let gap = &line[from..first.start];
        spans.extend(
            volatile
                .find_iter(gap)
                .map(|m| from + m.start()..from + m.end()),
        );
        if !first.is_empty() {
            spans.push(first.clone());
        }
        from = first.end;
    }
    spans
}

/// Whether `span` (a match of [`VOLATILE`]) is wholly a number (a price, a salary, a
/// temperature), not a date, a year, a time, a relative time or a token: the kind of span whose change
/// in a line may be news however noisy the rest of the line is. Dates follow the page's clock,
/// which the learning of masks reads and these rules do not.
pub(crate) fn is_plain_number(span: &str) -> bool {
    // A bare year (the footer's copyright) turns with the clock too.
    let year = span.len() == 4 && span.parse::<u32>().is_ok_and(|y| (1900..2200).contains(&y));
    whole(span, Class::Number) && !whole(span, Class::DateTime) && !year
}

/// Whether `span` (a match of [`VOLATILE`]) is wholly a date or a time ("Friday", "31 Dec",
/// "14:05"), not a relative time ("3 days ago").
pub(crate) fn is_date(span: &str) -> bool {
    whole(span, Class::DateTime) && !whole(span, Class::Relative)
}

/// Whether a match of `class` covers all of `span`.
fn whole(span: &str, class: Class) -> bool {
    CLASSES.iter().filter(|c| c.class == class).any(|c| {
        c.regex
            .find(span)
            .is_some_and(|m| m.start() == 0 && m.end() == span.len())
    })
}

impl Class {
    /// The regular-expression fragment of this class, without capture groups.
    pub(crate) fn fragment(self) -> &'static str {
        if self == Class::Words {
            return WORDS;
        }
        CLASSES
            .iter()
            .find(|c| c.class == self)
            .map_or(WORDS, |c| c.fragment.as_str())
    }

    /// Whether a span of this class may be masked with context on one side only: the varying
    /// words need an anchor on both sides (or the line's end) to know where they stop.
    pub(crate) fn is_volatile(self) -> bool {
        self != Class::Words
    }

    /// The first class (most specific first) with a match in `old` that contains the byte
    /// range `in_old` and a match in `new` that contains `in_new`, with those two matches:
    /// the span a difference belongs to, grown to the whole date, number or token around
    /// it. Both ranges must be non-empty. `None` when no class covers both.
    pub(crate) fn covering(
        old: &str,
        in_old: Range<usize>,
        new: &str,
        in_new: Range<usize>,
    ) -> Option<(Class, Range<usize>, Range<usize>)> {
        if in_old.is_empty() || in_new.is_empty() {
            return None;
        }
        CLASSES.iter().find_map(|c| {
            let a = containing(&c.regex, old, &in_old)?;
            let b = containing(&c.regex, new, &in_new)?;
            Some((c.class, a, b))
        })
    }
}

impl Class {
    /// The first class with a match in `text` that contains the non-empty byte range `range`,
    /// with that match: for a span an earlier mask hides on the other side.
    pub(crate) fn covering_one(text: &str, range: Range<usize>) -> Option<(Class, Range<usize>)> {
        if range.is_empty() {
            return None;
        }
        CLASSES
            .iter()
            .find_map(|c| containing(&c.regex, text, &range).map(|m| (c.class, m)))
    }
}

/// The match of `regex` in `text` that contains `range`, looking only at matches that start
/// at or before it.
fn containing(regex: &Regex, text: &str, range: &Range<usize>) -> Option<Range<usize>> {
    // Start the search a bounded distance before the range, at a character boundary, so a
    // long line costs a window, not the whole line, per difference.
    let mut from = range.start.saturating_sub(160);
    while !text.is_char_boundary(from) {
        from -= 1;
    }
    let to = text.len().min(range.end.saturating_add(160));
    let mut to = to;
    while !text.is_char_boundary(to) {
        to += 1;
    }
    let window = &text[from..to];
    regex
        .find_iter(window)
        .map(|m| (m.start() + from)..(m.end() + from))
        .take_while(|m| m.start <= range.start)
        .find(|m| m.end >= range.end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class_of(old: &str, new: &str) -> Option<Class> {
        Class::covering(old, 0..old.len(), new, 0..new.len()).map(|(c, a, b)| {
            assert_eq!((a, b), (0..old.len(), 0..new.len()), "{old} / {new}");
            c
        })
    }

    #[test]
    fn every_class_compiles_small_enough_for_a_mask_of_two_alternatives() {
        assert_eq!(CLASSES.len(), 7);
        for c in CLASSES.iter() {
            let mask = format!("(?m)(?i:on )({0})|({0})(?i: at)", c.fragment);
            assert!(
                crate::pattern::compile_pattern(&mask).is_ok(),
                "{:?}",
                c.class
            );
        }
    }

    #[test]
    fn differences_find_their_class() {
        let cases = [
            (
                "Wednesday, December 31, 2026",
                "Thursday, January 1, 2027",
                Class::DateTime,
            ),
            ("31 December 2026", "1 January 2027", Class::DateTime),
            (
                "31.12.2026, 23:59 Uhr",
                "01.01.2027, 00:01 Uhr",
                Class::DateTime,
            ),
            ("31. Dezember 2026", "1. Januar 2027", Class::DateTime),
            (
                "31 décembre 2026 à 23h59",
                "1 janvier 2027 à 0h01",
                Class::DateTime,
            ),
            (
                "31 de diciembre de 2026",
                "1 de enero de 2027",
                Class::DateTime,
            ),
            (
                "2026年12月31日 23:59",
                "2027年1月1日 00:01",
                Class::DateTime,
            ),
            (
                "2026-12-31T23:59:58Z",
                "2027-01-01T00:00:03Z",
                Class::DateTime,
            ),
            ("11:59 PM", "12:01 AM", Class::DateTime),
            ("3 minutes ago", "just now", Class::Relative),
            ("vor 5 Minuten", "vor 1 Std.", Class::Relative),
            ("il y a 2 heures", "il y a 3 heures", Class::Relative),
            ("hace 3 días", "hace 4 días", Class::Relative),
            ("3分前", "5分前", Class::Relative),
            ("yesterday", "today", Class::Relative),
            (
                "0f8fad5b-d9cb-469f-a165-70867728950e",
                "7c9e6679-7425-40de-944b-e07fc1f90ae7",
                Class::Uuid,
            ),
            ("1,234", "1,240", Class::Number),
            ("1.234,5", "12.001,75", Class::Number),
            ("1 234 567", "1 234 601", Class::Number),
            ("99.973%", "99.981%", Class::Number),
            ("9f86d081884c7d65", "60303ae22b998861", Class::Hex),
            ("aZ3kq9LmP0", "Qw8rT2yUi1", Class::Token),
            ("€", "EUR", Class::Currency),
        ];
        for (old, new, class) in cases {
            assert_eq!(class_of(old, new), Some(class), "{old} / {new}");
        }
        assert_eq!(class_of("Fresh beans", "Kitchen deals"), None);
        assert_eq!(class_of("Therme", "Warmwasser"), None);
    }

    #[test]
    fn a_part_of_a_span_grows_to_the_span() {
        let old = "Updated 5 minutes ago by Ana";
        let new = "Updated 15 minutes ago by Ana";
        let (class, a, b) = Class::covering(old, 8..9, new, 8..10).expect("covered");
        assert_eq!(class, Class::Relative);
        assert_eq!((&old[a], &new[b]), ("5 minutes ago", "15 minutes ago"));
    }
}
