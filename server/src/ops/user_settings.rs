//! A user's own settings (`GET`/`PUT /user/settings`, an extension, and the settings page):
//! the time zone the user's times are shown in. A time zone is an IANA name (`Europe/Berlin`),
//! checked against the time zone database built into the service, so that a name the service
//! cannot convert times with is refused when it is saved rather than ignored when it is used.

use super::{Ctx, OpError, UserId};
use chrono_tz::Tz;

/// The field a time zone is named in, by the API and the settings form.
pub const TIME_ZONE_FIELD: &str = "timeZone";

/// A user's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserSettings {
    /// The time zone the user's times are shown in.
    pub time_zone: Tz,
}

impl Default for UserSettings {
    fn default() -> Self {
        UserSettings { time_zone: Tz::UTC }
    }
}

/// The time zone an IANA name names, exactly as the database spells it.
pub fn time_zone(name: &str) -> Result<Tz, OpError> {
    let name = name.trim();
    if name.is_empty() {
        return Err(OpError::field(TIME_ZONE_FIELD, "is required"));
    }
    name.parse::<Tz>().map_err(|_| {
        OpError::field(
            TIME_ZONE_FIELD,
            "is not an IANA time zone name (such as Europe/Berlin or UTC)",
        )
    })
}

/// The time zone a stored name names; a name the database no longer knows (the database
/// is built into the service, and names are only ever added to it) reads as UTC.
pub fn stored_time_zone(name: &str) -> Tz {
    name.parse().unwrap_or(Tz::UTC)
}

/// The names offered to choose from: the database's zones named after a place (`Area/City`)
/// and UTC, sorted, without the old aliases (`US/Pacific`, `Etc/GMT+5`) the API still takes.
pub fn offered_time_zones() -> impl Iterator<Item = &'static str> {
    const AREAS: &[&str] = &[
        "Africa/",
        "America/",
        "Antarctica/",
        "Arctic/",
        "Asia/",
        "Atlantic/",
        "Australia/",
        "Europe/",
        "Indian/",
        "Pacific/",
    ];
    std::iter::once("UTC").chain(
        chrono_tz::TZ_VARIANTS
            .iter()
            .map(|tz| tz.name())
            .filter(|name| AREAS.iter().any(|area| name.starts_with(area))),
    )
}

/// The user's settings.
pub async fn get(ctx: &Ctx, user: &UserId) -> Result<UserSettings, OpError> {
    let record = ctx
        .store()
        .user_by_id(user)
        .await?
        .ok_or(OpError::NotFound)?;
    Ok(UserSettings {
        time_zone: stored_time_zone(&record.time_zone),
    })
}

/// Replaces the user's time zone with the one `name` names (`None`: the field was left out).
pub async fn set_time_zone(
    ctx: &Ctx,
    user: &UserId,
    name: Option<&str>,
) -> Result<UserSettings, OpError> {
    let zone = time_zone(name.unwrap_or(""))?;
    ctx.store().set_time_zone(user, zone.name()).await?;
    Ok(UserSettings { time_zone: zone })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_against_the_database() {
        assert_eq!(time_zone(" Europe/Berlin ").ok(), Some(Tz::Europe__Berlin));
        assert_eq!(time_zone("UTC").ok(), Some(Tz::UTC));
        for bad in ["", "Mars/Olympus", "europe/berlin", "+02:00"] {
            assert!(
                matches!(time_zone(bad), Err(OpError::Invalid { ref errors, .. }) if errors.contains_key(TIME_ZONE_FIELD)),
                "{bad:?}"
            );
        }
        let offered: Vec<_> = offered_time_zones().collect();
        assert!(offered.contains(&"America/New_York") && !offered.contains(&"US/Pacific"));
    }
}
