//! Noise known by its words: parts of a page that every site writes alike and that never mean
//! a change to the person watching it, so they are masked before they ever move.
//!
//! Learning from differences ([`super::study`], [`super::LearnState`]) needs to see a span move,
//! and some noise moves too rarely or too much like a real change to be learned that way:
//!
//! - a **copyright line's year** rolls over once a year;
//! - a **paywall meter** ("You have 3 free articles left this month") counts the checker's own
//!   visits down, one step every few checks, exactly as a real countdown (three tickets left,
//!   then two) would; what tells them apart is its words: the count is of free articles the
//!   *reader* has left, state of the visitor, not of the page;
//! - a **cookie-consent banner** rotates its wording, and some servers leave it out of one
//!   response in a few, so whole lines come and go;
//! - an **audience counter** ("1,350 reading", "♥ 4,213", "12 people are viewing this page")
//!   counts the people who come by, at whatever pace they come: a slow one (likes every few
//!   checks) lasts past every confirmation, exactly as a real change does. It is no mask (a
//!   fast one is learned as any counter, and masking it before it moves would change which
//!   lines anchor the blocks learned around it); [`audience_counts`] tells the line memory
//!   that its change in a line is no news ([`super::lines`]).
//!
//! [`masks`] gives the masks of the meter and the banners a value shows (for a new monitor,
//! beside what its quick samples teach), and [`explaining`] the ones that explain a difference
//! between two checks (for a monitor created before the banner or the meter appeared); the
//! copyright year's mask is [`COPYRIGHT_YEAR`], which [`super::study`] adds where its samples
//! left the year unmasked. The masks are ordinary learned masks: a person sees them on the
//! monitor and can switch them off. A banner is recognised only as
//! a consent sentence next to a line of consent buttons ("Accept all", "Manage choices"), so a
//! cookie policy's own text, which has no such buttons, is compared as any text is.

use super::spans::{self, Found};
use crate::model::NoiseMask;
use regex::Regex;
use std::collections::HashSet;
use std::ops::Range;
use std::sync::LazyLock;

/// The mask of a copyright line's year (the last year of a range).
pub(crate) const COPYRIGHT_YEAR: &str = r"(?i:©|\(c\)|copyright)(?: ?[0-9]{4} ?-)? ?([0-9]{4})";

/// The mask of a paywall meter: the count of free articles (stories, videos...) the reader has
/// left, with the words around it that change with the count ("your last free article", "3 of
/// 5 free articles").
pub(crate) const PAYWALL_METER: &str = concat!(
    r"(?i)\b((?:you(?:'ve| have)(?: got)?(?: only)? )?",
    r"(?:[0-9]+|no|one|two|three|four|five|six|seven|eight|nine|ten)(?: more)?",
    r" free(?: member-only| premium| subscriber)? (?:articles?|stor(?:y|ies)|reads?|pieces?|videos?|pages?)",
    r" (?:left|remaining)",
    r"|(?:this is )?your (?:last|final) free (?:article|story|read|piece|video|page)",
    r"|(?:you(?:'ve| have) read )?[0-9]+ (?:of|out of) [0-9]+ free (?:articles?|stor(?:y|ies)|reads?|pieces?|videos?|pages?))\b",
);

static METER: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(PAYWALL_METER).ok());

/// An audience counter: how many people visit, read, view, like, follow, share,
/// download, apply to or lately bought the page or one of its items ("1,350 reading", "12
/// people are viewing this page", "♥ 4,213", "Sie sind Besucher Nr. 48.213", "viewed 3.4k
/// times", "47 applicants"). Such a
/// count is the page's audience, not its subject: it moves whenever people come by, at any
/// pace, and a person watching the page never acts on it. Only the number is the audience's,
/// so the words around it (an exhibition's closing date in the same line) are compared as
/// ever. The numbers are the expression's capture groups.
static AUDIENCE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    // A count: "4,213", "48.213", "3.4k".
    const COUNT: &str = r"([0-9](?:[0-9.,'\u{a0}\u{202f}]*[0-9])?(?:[km]\b)?)";
    let pattern = [
        "(?i)".to_string(),
        // A count, then who (optional) and what they do: "12 people are viewing", "1,140 reading".
        format!(r"\b{COUNT}\+? "),
        r"(?:(?:people|persons|users|others|visitors|viewers|readers|shoppers|customers|members|guests|personen|benutzer|nutzer|besucher|personnes|membres) )?".to_string(),
        r"(?:(?:are|were|is|have|sind|ist|sont) )?".to_string(),
        r"(?:visitors?|views?|viewers?|likes?|followers?|subscribers?|shares?|reactions?|readers?|reading|watching|viewing|looking|online|plays?|listens?|downloads?".to_string(),
        // Who answered a listing: "47 applicants", "12 people applied", "38 Bewerbungen".
        r"|applicants?|applications?|applied|bewerber(?:innen)?|bewerbungen|candidatures|candidats".to_string(),
        r"|aufrufe|besucher(?:innen)?|leser(?:innen)?|zugriffe|vues|visiteurs|lecteurs|abonnés".to_string(),
        r"|(?:bought|sold|booked|purchased|ordered)(?: in the (?:last|past)| today| this (?:week|month)| recently))\b".to_string(),
        // A sign or a word, then the count: "♥ 4,213", "Views: 1,204", "Besucher Nr. 48.213".
        r"|(?:♥|❤\u{fe0f}?|👍|👁\u{fe0f}?|\b(?:visitors?|views|likes|followers|downloads|besucher|aufrufe|visiteurs|vues)\b:?) ?".to_string(),
        format!(r"(?:no\.? |nr\.? |#)?{COUNT}"),
        // "viewed 3.4k times" ("1.204 mal gelesen" is the first form's).
        format!(r"|\b(?:viewed|read|seen|liked|shared|played|watched|downloaded) {COUNT} times\b"),
    ]
    .concat();
    Regex::new(&pattern).ok()
});

/// The byte ranges of `line` that are audience counts ([`AUDIENCE`]'s numbers).
pub(crate) fn audience_counts(line: &str) -> Vec<Range<usize>> {
    let Some(re) = AUDIENCE.as_ref() else {
        return Vec::new();
    };
    re.captures_iter(line)
        .flat_map(|caps| {
            caps.iter()
                .skip(1)
                .flatten()
                .map(|m| m.range())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// `line` with each audience count ([`audience_counts`]) replaced by `placeholder`, or `None`
/// when it holds none.
pub(crate) fn without_audience(line: &str, placeholder: &str) -> Option<String> {
    let counts = audience_counts(line);
    if counts.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(line.len());
    let mut at = 0;
    for range in counts {
        if range.start < at {
            continue;
        }
        out.push_str(&line[at..range.start]);
        out.push_str(placeholder);
        at = range.end;
    }
    out.push_str(&line[at..]);
    Some(out)
}

/// The most bytes a line of a consent banner has: a banner's sentence is short; a paragraph
/// of a privacy policy is not one.
const MAX_BANNER_LINE: usize = 400;

/// The most bytes a line of consent buttons has.
const MAX_BUTTONS_LINE: usize = 80;

/// A sentence asking for consent: cookies with a consent word, or the IAB framework's
/// "partners store and access information on your device".
static CONSENT: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?i)\bcookies?\b.*\b(?:accept|agree|consent|continu\w*|partners|privacy|personali[sz]\w*|preferences|choices|settings|analytics|experience)\b",
        r"|\b(?:accept|agree|consent|continu\w*|partners|privacy|personali[sz]\w*|preferences|choices|settings|analytics|experience)\b.*\bcookies?\b",
        r"|\bpartners\b.{0,80}\b(?:store|access)\b.{0,60}\binformation\b",
        r"|^(?:we value your privacy|your privacy(?: choices)?|cookies?(?: (?:settings|preferences|consent|notice))?|privacy (?:settings|preferences))\.?$",
    ))
    .ok()
});

/// Words of a consent banner's buttons; a line of buttons is made of them alone.
const BUTTON_WORDS: &[&str] = &[
    "accept",
    "accepting",
    "reject",
    "decline",
    "deny",
    "refuse",
    "allow",
    "agree",
    "i",
    "all",
    "cookies",
    "cookie",
    "only",
    "necessary",
    "essential",
    "required",
    "manage",
    "customise",
    "customize",
    "settings",
    "preferences",
    "options",
    "choices",
    "my",
    "ok",
    "okay",
    "got",
    "it",
    "continue",
    "without",
    "more",
    "information",
    "info",
    "learn",
    "details",
    "privacy",
    "policy",
    "close",
    "save",
    "and",
    "confirm",
    "consent",
    "x",
];

/// Words one of which a line of consent buttons must hold: the answer it gives.
const ANSWER_WORDS: &[&str] = &[
    "accept", "reject", "decline", "deny", "refuse", "allow", "agree", "ok", "okay", "got",
    "consent",
];

/// The known noise `key` (a masked line key of a monitor's value, `\n` between lines) shows,
/// as masks: a paywall meter and the cookie-consent banners (each as a block between the lines
/// right beside it, which must be lines of `stable`, so the banner may later change its words or
/// be left out: [`spans::block_of`]). `stable`: the lines every sample of the monitor has, when
/// known.
pub(crate) fn masks(key: &str, stable: Option<&HashSet<&str>>) -> Vec<NoiseMask> {
    let mut out = Vec::new();
    if let Some(m) = METER.as_ref().and_then(|re| re.find(key)) {
        out.push(mask(PAYWALL_METER.to_string(), m.as_str()));
    }
    let lines: Vec<&str> = key.split('\n').collect();
    for run in banners(&lines) {
        if let Some(found) = spans::block_of(&lines, run, stable) {
            push(&mut out, found);
        }
    }
    out
}

/// The known masks (see [`masks`]) of `before` or `after`, two masked line keys of one
/// monitor, that explain some of their difference: under each, fewer lines of one are missing
/// from the other. None when the keys are equal or no known noise differs.
pub(crate) fn explaining(before: &str, after: &str) -> Vec<NoiseMask> {
    if before == after {
        return Vec::new();
    }
    let shared: HashSet<&str> = {
        let other: HashSet<&str> = after.split('\n').collect();
        before.split('\n').filter(|l| other.contains(l)).collect()
    };
    let mut found = masks(before, Some(&shared));
    for m in masks(after, Some(&shared)) {
        if !found.iter().any(|f| f.pattern == m.pattern) {
            found.push(m);
        }
    }
    let differing = unmatched(before, after);
    found
        .into_iter()
        .filter(|m| {
            let comparator = super::Comparator::default().with(std::slice::from_ref(m));
            let (b, a) = (
                comparator.masked_line_key(before),
                comparator.masked_line_key(after),
            );
            unmatched(&b, &a) < differing
        })
        .collect()
}

/// Which of `lines` are noise known by their words, whatever they say: the lines of a consent
/// banner and a paywall meter's line. Such a line is never news ([`super::lines`]).
pub(crate) fn known_lines(lines: &[&str]) -> Vec<bool> {
    let mut known: Vec<bool> = lines
        .iter()
        .map(|line| METER.as_ref().is_some_and(|re| re.is_match(line)))
        .collect();
    for run in banners(lines) {
        known[run].iter_mut().for_each(|k| *k = true);
    }
    known
}

/// The runs of `lines` that are consent banners: consent sentences and lines of buttons next
/// to each other, holding at least one of each.
fn banners(lines: &[&str]) -> Vec<Range<usize>> {
    let Some(consent) = CONSENT.as_ref() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let start = i;
        let (mut sentences, mut buttons) = (0, 0);
        while let Some(line) = lines.get(i) {
            if is_buttons(line) {
                buttons += 1;
            } else if line.len() <= MAX_BANNER_LINE && consent.is_match(line) {
                sentences += 1;
            } else {
                break;
            }
            i += 1;
        }
        if sentences > 0 && buttons > 0 {
            out.push(start..i);
        }
        i = i.max(start + 1);
    }
    out
}

/// Whether `line` is a row of consent buttons: only their words, one of them an answer.
fn is_buttons(line: &str) -> bool {
    if line.len() > MAX_BUTTONS_LINE {
        return false;
    }
    let lower = line.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    !words.is_empty()
        && words.iter().all(|w| BUTTON_WORDS.contains(w))
        && words.iter().any(|w| ANSWER_WORDS.contains(w))
}

/// How many lines of `a` and `b` have no equal line in the other, counted as multisets.
fn unmatched(a: &str, b: &str) -> usize {
    let mut left: Vec<&str> = a.split('\n').collect();
    let mut right: Vec<&str> = b.split('\n').collect();
    left.sort_unstable();
    right.sort_unstable();
    let (mut i, mut j, mut common) = (0, 0, 0);
    while i < left.len() && j < right.len() {
        match left[i].cmp(right[j]) {
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
        }
    }
    left.len() + right.len() - 2 * common
}

fn push(out: &mut Vec<NoiseMask>, found: Found) {
    if !out.iter().any(|m| m.pattern == found.pattern) {
        out.push(mask(found.pattern, &found.old));
    }
}

fn mask(pattern: String, example: &str) -> NoiseMask {
    NoiseMask {
        pattern,
        learned: true,
        active: true,
        example: Some(spans::example(example)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alerts::compare::Comparator;

    const SHOP: &str = "Aurora Espresso Machine\n$129.99\nIn stock\n\
        We use cookies to improve your experience. By continuing you agree to our use of cookies.\n\
        Accept all Manage choices\nSpecifications\nPressure: 15 bar";

    fn learned(key: &str) -> Comparator {
        Comparator::default().with(&masks(key, None))
    }

    #[test]
    fn a_paywall_meter_counts_down_without_a_change_in_every_wording() {
        // (first, later): the same page, one visit later.
        let cases = [
            (
                "Sweet peas\nYou have 9 free articles left this month.\nSow indoors.",
                "Sweet peas\nYou have 8 free articles left this month.\nSow indoors.",
            ),
            (
                "Sweet peas\nYou have 2 free stories left this month.",
                "Sweet peas\nYou have 1 free story left this month.",
            ),
            (
                "Sweet peas\nYou have 1 free article remaining.",
                "Sweet peas\nThis is your last free article.",
            ),
            (
                "Sweet peas\nYou’ve read 3 of 5 free articles.",
                "Sweet peas\nYou’ve read 4 of 5 free articles.",
            ),
            (
                "Sweet peas\nYou have 2 free member-only stories left this month.",
                "Sweet peas\nYou have no free member-only stories left this month.",
            ),
        ];
        for (first, later) in cases {
            let key = crate::normalize::line_key(first);
            let comparator = learned(&key);
            assert!(comparator.same(first, later), "{first:?} -> {later:?}");
            // The article itself is still compared.
            assert!(
                !comparator.same(first, &first.replace("Sweet peas", "Sweet pea")),
                "{first:?}"
            );
        }
    }

    #[test]
    fn an_audience_counter_is_found_by_its_words_and_the_rest_of_its_line_is_not() {
        // (first, later): the same page, some visits later.
        let cases = [
            (
                "Northern Light\nOpen until 14 February 2027 · 12,409 visitors so far\nTickets €14",
                "Northern Light\nOpen until 14 February 2027 · 12,481 visitors so far\nTickets €14",
            ),
            (
                "Northern Light\n7 people are viewing this page\n♥ 4,213 · Comments (56)",
                "Northern Light\n31 people are viewing this page\n♥ 4,215 · Comments (56)",
            ),
            (
                "Harbour closed\nRoad closures around the harbour 175 reading",
                "Harbour closed\nRoad closures around the harbour 2,433 reading",
            ),
            (
                "Heizung tropft\n1.203 Aufrufe · 4 Benutzer online",
                "Heizung tropft\n1.206 Aufrufe · 9 Benutzer online",
            ),
            (
                "Amtsblatt\nSie sind Besucher Nr. 48.213",
                "Amtsblatt\nSie sind Besucher Nr. 48.222",
            ),
            (
                "Walnut desk organiser 34.90 EUR\n12 bought in the last hour",
                "Walnut desk organiser 34.90 EUR\n15 bought in the last hour",
            ),
            (
                "ingot 2.4.0\nViewed 3.4k times · 12,400 downloads",
                "ingot 2.4.0\nViewed 3.5k times · 12,402 downloads",
            ),
            (
                "Data Analyst\nKestrel · €62,000–€70,000 · posted 5 h ago · 41 applicants",
                "Data Analyst\nKestrel · €62,000–€70,000 · posted 5 h ago · 44 applicants",
            ),
            (
                "Sachbearbeiter (m/w/d)\nStadt Kassel · 38 Bewerbungen · 12 people applied",
                "Sachbearbeiter (m/w/d)\nStadt Kassel · 41 Bewerbungen · 15 people applied",
            ),
        ];
        for (first, later) in cases {
            // Masking the counts found makes the two visits one.
            let masked = |text: &str| {
                let mut out = text.to_string();
                for r in audience_counts(text).into_iter().rev() {
                    out.replace_range(r, "#");
                }
                out
            };
            assert_eq!(masked(first), masked(later), "{first:?} -> {later:?}");
            // The words and the other numbers of the lines are still compared.
            let edited = first
                .replace("14 February", "28 February")
                .replace("Comments (56)", "Comments (57)")
                .replace("34.90", "36.90")
                .replace("€62,000", "€65,000")
                .replace("2.4.0", "2.4.1");
            if edited != first {
                assert_ne!(masked(first), masked(&edited), "{first:?}");
            }
        }
    }

    #[test]
    fn counts_of_what_a_page_offers_are_no_audience() {
        for text in [
            "Concert\n3 tickets left\nBook now",
            "Aurora\nOnly 2 left in stock",
            "Release 2.4.1\n3.1 MB",
            "Forum\nComments (56)",
            "Flat\n3 rooms, 84 m²",
            "Shop\n1,204 products",
        ] {
            assert!(
                audience_counts(text).is_empty(),
                "{text:?}: {:?}",
                audience_counts(text)
            );
        }
    }

    #[test]
    fn a_countdown_of_anything_but_the_readers_free_articles_is_no_meter() {
        for text in [
            "Concert\n3 tickets left\nBook now",
            "Aurora\nOnly 2 left in stock",
            "Course\n5 free seats left",
            "Offer\n3 days left to claim your free gift",
            "Library\n4 free articles on gardening",
        ] {
            assert!(masks(text, None).is_empty(), "{text:?}");
        }
    }

    #[test]
    fn a_consent_banner_may_change_its_words_or_be_left_out_and_the_page_around_it_still_counts() {
        let comparator = learned(SHOP);
        let other_words = SHOP.replace(
            "We use cookies to improve your experience. By continuing you agree to our use of cookies.",
            "We and our 842 partners store and access information on your device.",
        );
        let without = SHOP.replace(
            "\nWe use cookies to improve your experience. By continuing you agree to our use of cookies.\nAccept all Manage choices",
            "",
        );
        assert!(comparator.same(SHOP, &other_words));
        assert!(comparator.same(SHOP, &without));
        assert!(comparator.same(&without, &other_words));
        assert!(!comparator.same(SHOP, &SHOP.replace("In stock", "Only 2 left")));
        assert!(!comparator.same(&without, &without.replace("15 bar", "19 bar")));
    }

    #[test]
    fn consent_words_without_consent_buttons_are_text_like_any_other() {
        for text in [
            // A cookie policy's own paragraph, and its "Accept" elsewhere.
            "Cookie policy\nWe use cookies to improve your experience. You can change your preferences at any time.\nContact us",
            // Buttons with no consent sentence beside them.
            "Checkout\nAccept all\nTotal $40",
            // A button row of other words.
            "We use cookies to improve your experience.\nBuy now Add to cart",
        ] {
            assert!(masks(text, None).is_empty(), "{text:?}");
        }
    }

    #[test]
    fn a_banner_that_appears_or_goes_between_two_checks_is_explained_and_a_change_beside_it_is_not()
    {
        let without = SHOP.replace(
            "\nWe use cookies to improve your experience. By continuing you agree to our use of cookies.\nAccept all Manage choices",
            "",
        );
        for (before, after) in [(SHOP, without.as_str()), (without.as_str(), SHOP)] {
            let found = explaining(before, after);
            assert_eq!(found.len(), 1, "{found:?}");
            let comparator = Comparator::default().with(&found);
            assert!(comparator.same(before, after));
            let real = after.replace("$129.99", "$128.99");
            assert!(!comparator.same(before, &real));
        }
        let meter = (
            "Sweet peas\nYou have 3 free articles left this month.\nSow 3 weeks before.",
            "Sweet peas\nYou have 2 free articles left this month.\nSow 4 weeks before.",
        );
        let found = explaining(meter.0, meter.1);
        assert_eq!(found.len(), 1);
        assert!(!Comparator::default().with(&found).same(meter.0, meter.1));
        assert!(explaining(SHOP, SHOP).is_empty());
        assert!(explaining(SHOP, &SHOP.replace("In stock", "Sold out")).is_empty());
    }

    #[test]
    fn a_real_change_right_beside_a_banner_that_went_is_never_taken_into_its_block() {
        let without = SHOP.replace(
            "\nWe use cookies to improve your experience. By continuing you agree to our use of cookies.\nAccept all Manage choices",
            "",
        );
        // The stock line above the banner, and the line below it, change on the same check.
        for (from, to) in [("In stock", "Sold out"), ("Specifications", "Specs")] {
            let after = without.replace(from, to);
            let comparator = Comparator::default().with(&explaining(SHOP, &after));
            assert!(!comparator.same(SHOP, &after), "{from} -> {to}");
            assert!(
                !comparator.same(&without, &after),
                "{from} -> {to} is masked"
            );
        }
    }
}
