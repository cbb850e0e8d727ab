//! The rules of a stored monitor's noise masks (`Monitor::noise`, learned noise): what a person's
//! edit does to the list, what learning adds to it, and when what a monitor watches changed so
//! its learned masks no longer apply. Pure functions; the store applies them inside the
//! transaction that writes the monitor, so an edit and a check's learning never overwrite each
//! other.
//!
//! - An edit whose `noise` is null (a client that does not know the extension) keeps the
//!   stored list.
//! - An edit with a list sets the person's masks (`learned` false) to those it gives and the
//!   `active` flag of every learned mask it names. A learned mask it does not name is kept: it
//!   may have been learned after the client read the monitor, and dropped it would be learned
//!   again from the page anyway; switching it off (`active` false) is how a person stops one,
//!   and it then stays so it is never learned again. `learned` and `example` are the service's:
//!   what a client sends for them is ignored.
//! - Learning appends ([`with_learned`]): never a pattern already listed (switched off ones
//!   included), never past [`MAX_MASKS`].
//! - A Portal's page keeps the masks it learns in its own confirmation state
//!   ([`learned_by_page`] reads them for the API); a pattern the monitor lists switched off is
//!   dropped from every page's and never kept again ([`for_page`]).
//! - When what the monitor watches changes ([`watches_differently`]), its learned masks are
//!   dropped, its crawled pages' too: they belonged to the old value. A person's stay.

use wachet::Monitor;
use wachet::alerts::compare::MAX_MASKS;
use wachet::alerts::confirm::ConfirmState;
use wachet::model::NoiseMask;

/// Whether `after` watches something else than `before`: another address, request or
/// selection (url, method, headers, body, xPath, excludeXPath, regex, dynamicContent,
/// scrollPage, jobType). The value then changes for reasons no learned mask knows.
///
/// Spellings of the same request are the same: no method and `GET`, no headers and an empty
/// list, no XPath and an empty one (the web form sends the one, an API client the other).
pub fn watches_differently(before: &Monitor, after: &Monitor) -> bool {
    let text = |t: &Option<String>| t.as_deref().map(str::trim).unwrap_or_default().to_string();
    let method = |m: &Monitor| {
        m.method
            .as_deref()
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .unwrap_or("GET")
            .to_ascii_uppercase()
    };
    let headers = |m: &Monitor| m.headers.clone().unwrap_or_default();
    text(&before.url) != text(&after.url)
        || method(before) != method(after)
        || headers(before) != headers(after)
        || before.body.as_deref().unwrap_or_default() != after.body.as_deref().unwrap_or_default()
        || text(&before.x_path) != text(&after.x_path)
        || text(&before.exclude_x_path) != text(&after.exclude_x_path)
        || before.regex.as_deref().unwrap_or_default() != after.regex.as_deref().unwrap_or_default()
        || before.dynamic_content != after.dynamic_content
        || before.scroll_page != after.scroll_page
        || before.job_type != after.job_type
}

/// A new monitor's masks: all the person's (a client cannot claim a mask was learned), without
/// examples, each pattern once.
pub fn on_create(noise: Option<&[NoiseMask]>) -> Option<Vec<NoiseMask>> {
    let masks = noise?;
    let mut out: Vec<NoiseMask> = Vec::with_capacity(masks.len());
    for mask in masks {
        if !out.iter().any(|m| m.pattern == mask.pattern) {
            out.push(NoiseMask {
                learned: false,
                example: None,
                ..mask.clone()
            });
        }
    }
    Some(out)
}

/// The masks of `edited` once stored over `stored` (the rules in the [module
/// documentation](self)). More than [`MAX_MASKS`] masks (learned ones kept included) is an
/// error naming how many, for the `noise` field.
pub fn after_edit(stored: &Monitor, edited: &Monitor) -> Result<Option<Vec<NoiseMask>>, String> {
    let moved = watches_differently(stored, edited);
    let learned_before: Vec<&NoiseMask> = stored
        .noise
        .iter()
        .flatten()
        .filter(|m| m.learned)
        .collect();
    let stored_learned = |pattern: &str| learned_before.iter().find(|m| m.pattern == pattern);
    let Some(given) = edited.noise.as_deref() else {
        return Ok(match moved {
            true => stored
                .noise
                .as_ref()
                .map(|list| list.iter().filter(|m| !m.learned).cloned().collect()),
            false => stored.noise.clone(),
        });
    };
    let mut out: Vec<NoiseMask> = Vec::with_capacity(given.len());
    for mask in given {
        if out.iter().any(|m| m.pattern == mask.pattern) {
            continue;
        }
        match stored_learned(&mask.pattern) {
            // Learned on the old value: gone with it.
            Some(_) if moved => {}
            Some(learned) => out.push(NoiseMask {
                active: mask.active,
                ..(*learned).clone()
            }),
            None => out.push(NoiseMask {
                learned: false,
                example: None,
                ..mask.clone()
            }),
        }
    }
    if !moved {
        for learned in &learned_before {
            if !out.iter().any(|m| m.pattern == learned.pattern) {
                out.push((*learned).clone());
            }
        }
    }
    if out.len() > MAX_MASKS {
        return Err(format!(
            "at most {MAX_MASKS} masks; with the {} learned ones kept this makes {} (switch \
             learned masks off rather than leaving them out, or remove some of your own)",
            out.iter().filter(|m| m.learned).count(),
            out.len()
        ));
    }
    Ok(Some(out))
}

/// `current` with the masks of `learned` appended, marked learned: a pattern already listed
/// (a switched-off one included) is not added again, and the list stops at [`MAX_MASKS`].
/// `None` when nothing was added.
pub fn with_learned(
    current: Option<&[NoiseMask]>,
    learned: &[NoiseMask],
) -> Option<Vec<NoiseMask>> {
    let mut out: Vec<NoiseMask> = current.map(<[NoiseMask]>::to_vec).unwrap_or_default();
    let before = out.len();
    for mask in learned {
        if out.len() >= MAX_MASKS {
            break;
        }
        if !out.iter().any(|m| m.pattern == mask.pattern) {
            out.push(NoiseMask {
                learned: true,
                ..mask.clone()
            });
        }
    }
    (out.len() > before).then_some(out)
}

/// The masks a Portal's page learned, from its stored confirmation state (JSON); `None` when it
/// learned none or the state cannot be read (the page then shows no list, as before it
/// learned).
pub fn learned_by_page(state: Option<&str>) -> Option<Vec<NoiseMask>> {
    let state: ConfirmState = serde_json::from_str(state?).ok()?;
    (!state.masks.is_empty()).then_some(state.masks)
}

/// `state` of one of `monitor`'s pages without the masks the monitor lists switched off: a
/// person stops a page's learned mask by listing its pattern with `active` false, for every
/// page at once. `None` when nothing is dropped.
pub fn for_page(monitor: &Monitor, state: &ConfirmState) -> Option<ConfirmState> {
    let off: Vec<&str> = monitor
        .noise
        .iter()
        .flatten()
        .filter(|m| !m.active)
        .map(|m| m.pattern.as_str())
        .collect();
    if off.is_empty()
        || !state
            .masks
            .iter()
            .any(|m| off.contains(&m.pattern.as_str()))
    {
        return None;
    }
    let mut kept = state.clone();
    kept.masks.retain(|m| !off.contains(&m.pattern.as_str()));
    Some(kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mask(pattern: &str, learned: bool, active: bool) -> NoiseMask {
        NoiseMask {
            pattern: pattern.into(),
            learned,
            active,
            example: learned.then(|| format!("seen {pattern}")),
        }
    }

    fn monitor(noise: Option<Vec<NoiseMask>>) -> Monitor {
        let mut m = Monitor::new("https://shop.example/item");
        m.noise = noise;
        m
    }

    #[test]
    fn an_edit_sets_the_persons_masks_and_keeps_learned_ones_it_does_not_name() {
        let stored = monitor(Some(vec![
            mask("a", true, true),
            mask("b", true, true),
            mask("mine", false, true),
        ]));
        // The client read only `a` (b was learned since), switched it off, dropped `mine`,
        // added `new` and claims it was learned with an example.
        let edited = monitor(Some(vec![
            NoiseMask {
                active: false,
                example: Some("forged".into()),
                ..mask("a", false, false)
            },
            NoiseMask {
                example: Some("forged".into()),
                ..mask("new", true, true)
            },
        ]));
        let after = after_edit(&stored, &edited).unwrap().unwrap();
        assert_eq!(
            after,
            [
                NoiseMask {
                    active: false,
                    ..mask("a", true, true)
                },
                mask("new", false, true),
                mask("b", true, true),
            ]
        );
        // Null keeps everything.
        let same = after_edit(&stored, &monitor(None)).unwrap();
        assert_eq!(same, stored.noise);
    }

    #[test]
    fn a_new_selection_drops_the_learned_masks_only() {
        let stored = monitor(Some(vec![mask("a", true, true), mask("mine", false, true)]));
        let mut edited = monitor(stored.noise.clone());
        edited.x_path = Some("//p".into());
        assert!(watches_differently(&stored, &edited));
        let after = after_edit(&stored, &edited).unwrap().unwrap();
        assert_eq!(after, [mask("mine", false, true)]);
        edited.noise = None;
        assert_eq!(
            after_edit(&stored, &edited).unwrap().unwrap(),
            [mask("mine", false, true)]
        );
        let mut renamed = stored.clone();
        renamed.name = Some("other".into());
        renamed.recurrence_in_seconds = Some(60);
        // As the web form spells a request the API client left to defaults.
        renamed.method = Some("get".into());
        renamed.headers = Some(Vec::new());
        renamed.x_path = Some(String::new());
        assert!(!watches_differently(&stored, &renamed));
    }

    #[test]
    fn learning_appends_new_patterns_only_and_stops_at_the_cap() {
        let current = vec![mask("a", true, false), mask("mine", false, true)];
        assert_eq!(with_learned(Some(&current), &[mask("a", true, true)]), None);
        let grown = with_learned(Some(&current), &[mask("b", true, true)]).unwrap();
        assert_eq!(grown.len(), 3);
        assert!(!grown[0].active, "a switched-off mask stays off");
        let full: Vec<NoiseMask> = (0..MAX_MASKS)
            .map(|i| mask(&i.to_string(), true, true))
            .collect();
        assert_eq!(with_learned(Some(&full), &[mask("x", true, true)]), None);
        let too_many = monitor(Some(full.clone()));
        let edited = monitor(Some(vec![mask("x", false, true)]));
        assert!(
            after_edit(&too_many, &edited)
                .unwrap_err()
                .contains("at most")
        );
    }
}
