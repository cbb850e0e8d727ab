//! Which monitor locations some checker serves: the API's own engine (its location and its
//! proxies) or a live worker of the service running there (`wachet serve --location`). A monitor
//! may name a location only when one does ([`served`], used by validation), and a stored
//! monitor whose location nobody serves any more says so ([`annotate`]: `locationNotice`)
//! instead of waiting silently.

use super::Ctx;
use super::OpError;
use std::collections::HashSet;
use wachet::model::{LocationCode, Monitor};

/// The non-default locations live workers check from, as lower-case names.
async fn worker_locations(state: &Ctx) -> Result<HashSet<String>, OpError> {
    let live = state.store().live_workers(crate::worker::LIVE).await?;
    Ok(live
        .into_iter()
        .filter(|worker| worker.info.checks())
        .filter_map(|worker| worker.info.location)
        .collect())
}

/// Whether a live worker checks monitors of `location` from there; the default location and
/// the engine's own are left to the engine's rules.
pub(crate) async fn served_by_workers(
    state: &Ctx,
    location: LocationCode,
) -> Result<bool, OpError> {
    if location == LocationCode::Default || state.checker().serves(location) {
        return Ok(false);
    }
    let name = location.name().to_ascii_lowercase();
    Ok(worker_locations(state).await?.contains(&name))
}

/// Sets `locationNotice` on each of `monitors` whose location neither the engine nor a live
/// worker serves. The workers are read once, and only when some monitor needs them.
pub(crate) async fn annotate(state: &Ctx, monitors: &mut [Monitor]) -> Result<(), OpError> {
    let checker = state.checker();
    if monitors.iter().all(|m| checker.serves(m.location)) {
        return Ok(());
    }
    let live = worker_locations(state).await?;
    for monitor in monitors {
        let location = monitor.location;
        if !checker.serves(location) && !live.contains(&location.name().to_ascii_lowercase()) {
            monitor.location_notice = Some(format!(
                "no worker runs at location {} and no proxy reaches it, so this monitor waits; \
                 start one there with wachet serve --location {}",
                location.name(),
                location.name().to_ascii_lowercase()
            ));
        }
    }
    Ok(())
}
