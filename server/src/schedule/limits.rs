//! Value and storage limits, applied before the alerts see a check: a value over the
//! scheduler's size limit ([`within_value_limit`]) and a changed value its owner's history has
//! no room for ([`within_stored_bytes`]) become failed checks saying so.

use super::check::Job;
use super::portal::PageResult;
use crate::store::{AlertStates, ScheduleStore, StoreError};
use wachet::alerts::confirm::ConfirmState;
use wachet::model::ClientData;

/// Turns a value over `max` bytes into a failed check saying so, before the alerts see it: a
/// value cut short would read as a change, and storing it whole is what the limit prevents.
pub(super) fn within_value_limit(data: &mut ClientData, max: usize) {
    if let Some(raw) = &data.raw
        && raw.len() > max
    {
        let error = format!(
            "the value is {} bytes, above the limit of {max} bytes",
            raw.len()
        );
        *data = ClientData::failure(data.last_check_timestamp, error);
    }
}

/// Turns each changed value that the owner's history has no room for into a failed check
/// saying so, before the alerts see it: the Error alert then fires once, instead of the change
/// being raised again at every check while its value is never kept. A value equal to the last
/// one kept costs nothing; a changed one is counted at its full length (stored compressed, it
/// may take less). The store checks again, exactly, as it writes.
pub(super) async fn within_stored_bytes(
    store: &dyn ScheduleStore,
    job: &Job,
    states: &AlertStates,
    own: &mut ClientData,
    pages: &mut [PageResult],
) -> Result<(), StoreError> {
    let size = |data: &ClientData| data.raw.as_ref().map_or(0, |raw| raw.len() as u64);
    let total = size(own) + pages.iter().map(|(_, _, data)| size(data)).sum::<u64>();
    let task = job.task.as_str();
    // As the claim read it, when it did: the store checks again, exactly, as it writes.
    let mut usage = match job.known.as_ref().map(|known| known.storage) {
        Some(usage) => usage,
        None => store.stored_bytes(task).await?,
    };
    if usage.refuses(total).is_none() {
        return Ok(());
    }
    // Near the quota: which values are new needs what was kept before.
    let loaded;
    let states = if states.own.alerts.last_check.is_some() || !states.pages.is_empty() {
        states
    } else {
        loaded = store.alert_states(task).await?;
        &loaded
    };
    let fresh = ConfirmState::default();
    let series = pages
        .iter_mut()
        .map(|(url, _, data)| (states.pages.get(url.as_str()).unwrap_or(&fresh), data))
        .chain(std::iter::once((&states.own, own)));
    for (state, data) in series {
        // The confirmed value and those waiting for confirmation are kept already.
        let kept = |raw: &String| {
            state.alerts.last_value.as_ref() == Some(raw)
                || state.pending.iter().any(|c| &c.value == raw)
        };
        if data.raw.as_ref().is_none_or(kept) {
            continue;
        }
        match usage.refuses(size(data)) {
            Some(refused) => *data = ClientData::failure(data.last_check_timestamp, refused),
            None => usage.used += size(data),
        }
    }
    Ok(())
}
