//! Monitors: validate, create or replace (one or many at once), read, search, delete, and the
//! pages a Portal monitor crawled. Every monitor answered carries what the store does not keep:
//! whether each e-mail endpoint is confirmed, and a notice when nobody serves its location.

use super::{Ctx, OpError, UserId, endpoints, locations, rules, steps};
use crate::store::{StoreError, TimeKey, TimePage};
use std::collections::BTreeMap;
use wachet::model::{ClientJobType, ClientPage, LocationCode, Monitor};

/// Most monitors a search returns.
pub const MAX_SEARCH_RESULTS: u32 = 500;
/// Longest search expression.
pub const MAX_QUERY_CHARS: usize = 1000;
/// Most monitors one bulk creation takes ([`create_many`]).
pub const MAX_BULK: usize = 1_000;

/// Longest a monitor's validation may take, waiting for its turn included.
const VALIDATION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Validates `monitor` for storing ([`rules::monitor`]). Compiling its regexes and XPaths is
/// CPU work (bounded by the engine's limits, tens of milliseconds at worst), so it runs on the
/// blocking pool, a few at a time, while the async threads go on serving everyone's other
/// requests. Past [`VALIDATION_TIMEOUT`] the answer is [`OpError::Unavailable`]; the
/// compilation then finishes on its own, still holding its turn.
pub async fn validate(ctx: &Ctx, monitor: Monitor) -> Result<Monitor, OpError> {
    let busy = || OpError::Unavailable {
        detail: format!(
            "validating the monitor took longer than {} s; try again",
            VALIDATION_TIMEOUT.as_secs()
        ),
        retry_after: VALIDATION_TIMEOUT.as_secs(),
    };
    let served = locations::served_by_workers(ctx, monitor.location).await?;
    let work = async {
        let permit = ctx
            .validations()
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| OpError::Internal("the validation queue is closed".into()))?;
        let checker = ctx.checker().clone();
        let min_recurrence = ctx.settings().min_recurrence;
        tokio::task::spawn_blocking(move || {
            // A location live workers check from needs no proxy here: the engine judges the rest.
            let judged = match served {
                true => std::borrow::Cow::Owned(Monitor {
                    location: LocationCode::Default,
                    ..monitor.clone()
                }),
                false => std::borrow::Cow::Borrowed(&monitor),
            };
            let result = rules::monitor(checker.as_ref(), &judged, min_recurrence);
            drop(judged);
            drop(permit);
            result.map(|()| monitor)
        })
        .await
        .map_err(|err| OpError::Internal(format!("validating a monitor: {err}")))?
    };
    tokio::time::timeout(VALIDATION_TIMEOUT, work)
        .await
        .map_err(|_| busy())?
}

/// `monitor` with the secrets of its notification URLs ([`endpoints::seal`]) and of its
/// browser steps ([`steps::seal`]) sealed for `user`.
fn sealed(ctx: &Ctx, user: &UserId, mut monitor: Monitor) -> Result<Monitor, OpError> {
    endpoints::seal(
        ctx,
        user,
        "notificationEndpoints",
        monitor.notification_endpoints.iter_mut().flatten(),
    )?;
    steps::seal(ctx.sealer(), user, &mut monitor)?;
    Ok(monitor)
}

/// `monitor` with the secret step values it came without taken from the user's stored
/// monitor of its id ([`steps::keep_secrets`]).
async fn with_kept_secrets(
    ctx: &Ctx,
    user: &UserId,
    mut monitor: Monitor,
) -> Result<Monitor, OpError> {
    let stored = match &monitor.id {
        Some(id) if steps::has_secrets(&monitor) => match ctx.store().task(user, id).await {
            Ok(stored) => Some(stored),
            Err(StoreError::NotFound) => None,
            Err(e) => return Err(e.into()),
        },
        _ => None,
    };
    steps::keep_secrets(ctx.sealer(), user, &mut monitor, stored.as_ref())?;
    Ok(monitor)
}

/// Creates `monitor` (no `id`) or replaces the user's monitor of its `id`, once valid, the
/// secrets of its notification URLs sealed; the stored monitor. An update with no folder keeps
/// the monitor's folder.
pub async fn save(ctx: &Ctx, user: &UserId, monitor: Monitor) -> Result<Monitor, OpError> {
    let monitor = with_kept_secrets(ctx, user, monitor).await?;
    let monitor = sealed(ctx, user, validate(ctx, monitor).await?)?;
    let stored = match monitor.id {
        None => ctx.store().create_task(user, &monitor).await?,
        Some(_) => ctx.store().update_task(user, &monitor).await?,
    };
    annotated(ctx, user, vec![stored]).await.map(first)
}

/// Creates several monitors, all of them or none: each is validated and sealed, and a problem is named
/// `[i].field` for the i-th; an `id` is refused (the bulk form only creates).
pub async fn create_many(
    ctx: &Ctx,
    user: &UserId,
    monitors: Vec<Monitor>,
) -> Result<Vec<Monitor>, OpError> {
    if monitors.is_empty() || monitors.len() > MAX_BULK {
        return Err(OpError::field(
            "body",
            format!("give 1 to {MAX_BULK} monitors, not {}", monitors.len()),
        ));
    }
    let mut errors = BTreeMap::new();
    let mut valid = Vec::with_capacity(monitors.len());
    for (i, monitor) in monitors.into_iter().enumerate() {
        if monitor.id.is_some() {
            errors.insert(
                format!("[{i}].id"),
                vec!["the bulk form only creates monitors; update one with PUT /task".into()],
            );
            continue;
        }
        let monitor = match with_kept_secrets(ctx, user, monitor).await {
            Ok(monitor) => monitor,
            Err(OpError::Invalid { errors: found, .. }) => {
                for (field, messages) in found {
                    errors.insert(format!("[{i}].{field}"), messages);
                }
                continue;
            }
            Err(other) => return Err(other),
        };
        match validate(ctx, monitor)
            .await
            .and_then(|monitor| sealed(ctx, user, monitor))
        {
            Ok(monitor) => valid.push(monitor),
            Err(OpError::Invalid { errors: found, .. }) => {
                for (field, messages) in found {
                    errors.insert(format!("[{i}].{field}"), messages);
                }
            }
            Err(other) => return Err(other),
        }
    }
    if !errors.is_empty() {
        return Err(OpError::Invalid {
            detail: "the request has invalid fields; no monitor was created".into(),
            errors,
        });
    }
    let stored = ctx.store().create_tasks(user, &valid).await?;
    annotated(ctx, user, stored).await
}

/// The user's monitor `id` with its latest data.
pub async fn get(ctx: &Ctx, user: &UserId, id: &str) -> Result<Monitor, OpError> {
    let monitor = ctx.store().task(user, id).await?;
    annotated(ctx, user, vec![monitor]).await.map(first)
}

/// The user's monitor `id` as stored, without what is added for showing it (confirmed
/// addresses, the location notice): for a form that edits it.
pub async fn stored(ctx: &Ctx, user: &UserId, id: &str) -> Result<Monitor, OpError> {
    let mut monitor = ctx.store().task(user, id).await?;
    steps::hide(&mut monitor);
    Ok(monitor)
}

/// Sets the location notice on `monitors` whose location nobody serves (what a page shows).
pub async fn annotate_locations(ctx: &Ctx, monitors: &mut [Monitor]) -> Result<(), OpError> {
    locations::annotate(ctx, monitors).await
}

/// Deletes the user's monitor `id` with its pages, history and notifications.
pub async fn delete(ctx: &Ctx, user: &UserId, id: &str) -> Result<(), OpError> {
    Ok(ctx.store().delete_task(user, id).await?)
}

/// The user's monitors matching every white-space separated term of `query` (a
/// case-insensitive substring of the name, URL or note), by name, at most
/// [`MAX_SEARCH_RESULTS`].
pub async fn search(ctx: &Ctx, user: &UserId, query: &str) -> Result<Vec<Monitor>, OpError> {
    if query.chars().count() > MAX_QUERY_CHARS {
        return Err(OpError::field(
            "query",
            format!("must be at most {MAX_QUERY_CHARS} characters"),
        ));
    }
    let terms: Vec<String> = query.split_whitespace().map(str::to_string).collect();
    let found = ctx
        .store()
        .search_tasks(user, &terms, MAX_SEARCH_RESULTS)
        .await?;
    annotated(ctx, user, found).await
}

/// Marks the name of the user's monitor `id` as the service's (made from its URL): a check
/// that reads its page's title names it after the title, until a person names it. The web
/// interface's quick-add bar asks for no name.
pub async fn name_automatically(ctx: &Ctx, user: &UserId, id: &str) -> Result<(), OpError> {
    Ok(ctx.store().name_automatically(user, id).await?)
}

/// The user's first `limit` monitors by name, as stored (for a list to choose from).
pub async fn by_name(ctx: &Ctx, user: &UserId, limit: u32) -> Result<Vec<Monitor>, OpError> {
    Ok(ctx.store().search_tasks(user, &[], limit).await?)
}

/// The pages the user's Portal monitor `id` crawled, each with its latest data.
pub async fn pages(ctx: &Ctx, user: &UserId, id: &str) -> Result<Vec<ClientPage>, OpError> {
    let monitor = ctx.store().task(user, id).await?;
    if monitor.job_type != ClientJobType::Portal {
        return Err(OpError::field(
            "id",
            "the monitor is a SinglePage monitor; only Portal monitors have pages",
        ));
    }
    Ok(ctx.store().task_pages(user, id).await?)
}

/// Most rows counted for the confirmation; past it the page says "more than".
const COUNT_CAP: u64 = 10_000;
/// Rows read per query while counting.
const COUNT_PAGE: u32 = 500;

/// A count, and whether it stopped at [`COUNT_CAP`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Count {
    /// Rows counted.
    pub n: u64,
    /// Whether counting stopped at the cap.
    pub capped: bool,
}

impl Count {
    /// Adds `other`, up to the cap.
    pub fn add(&mut self, other: Count) {
        self.n = (self.n + other.n).min(COUNT_CAP);
        self.capped |= other.capped || self.n >= COUNT_CAP;
    }

    /// The count in words: `3 notifications`, `more than 10000 history entries`.
    pub fn words(self, one: &str, many: &str) -> String {
        let noun = if self.n == 1 && !self.capped {
            one
        } else {
            many
        };
        if self.capped {
            format!("more than {} {noun}", COUNT_CAP)
        } else {
            format!("{} {noun}", self.n)
        }
    }
}

/// Counts the rows of a newest-first list by reading it a page at a time, up to the cap.
async fn count_rows<F, Fut>(mut page_of: F) -> Result<Count, StoreError>
where
    F: FnMut(TimePage) -> Fut,
    Fut: std::future::Future<Output = Result<Vec<TimeKey>, StoreError>>,
{
    let mut count = Count::default();
    let mut after = None;
    loop {
        let keys = page_of(TimePage {
            after: after.clone(),
            limit: COUNT_PAGE,
            ..TimePage::default()
        })
        .await?;
        // Stores return up to `limit + 1` rows; the extra one is the next page's first.
        let more = keys.len() > COUNT_PAGE as usize;
        let taken = keys.len().min(COUNT_PAGE as usize);
        count.n += taken as u64;
        if count.n >= COUNT_CAP {
            count.n = COUNT_CAP;
            count.capped = true;
            return Ok(count);
        }
        if !more {
            return Ok(count);
        }
        after = keys.get(taken - 1).cloned();
    }
}

/// What goes with the user's monitor `id` when it is deleted: its history entries (its own and
/// its crawled pages'), and its notifications; each counted up to a cap.
pub async fn what_goes(ctx: &Ctx, user: &UserId, id: &str) -> Result<(Count, Count), OpError> {
    let store = ctx.store();
    let entries_of = |series: String| async move {
        count_rows(|page| {
            let series = series.clone();
            async move {
                Ok(store
                    .entries(user, &series, &page)
                    .await?
                    .into_iter()
                    .map(|(key, _)| key)
                    .collect())
            }
        })
        .await
    };
    let mut entries = entries_of(id.to_string()).await?;
    let monitor = store.task(user, id).await?;
    if monitor.job_type == ClientJobType::Portal {
        for crawled in store.task_pages(user, id).await? {
            if entries.capped {
                break;
            }
            if let Some(page_id) = crawled.id {
                entries.add(entries_of(page_id).await?);
            }
        }
    }
    let notifications = count_rows(|page| async move {
        Ok(store
            .notifications(user, Some(id), &page, false)
            .await?
            .into_iter()
            .map(|(key, _)| key)
            .collect())
    })
    .await?;
    Ok((entries, notifications))
}

/// `monitors` with what the store does not keep set: confirmed addresses, location notices.
async fn annotated(
    ctx: &Ctx,
    user: &UserId,
    mut monitors: Vec<Monitor>,
) -> Result<Vec<Monitor>, OpError> {
    endpoints::mark_confirmed(ctx, user, endpoints::of_monitors(&mut monitors)).await?;
    locations::annotate(ctx, &mut monitors).await?;
    monitors.iter_mut().for_each(steps::hide);
    Ok(monitors)
}

/// The one monitor of a list of one.
fn first(mut monitors: Vec<Monitor>) -> Monitor {
    monitors.swap_remove(0)
}
