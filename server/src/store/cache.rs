//! A [`Store`] in front of another that answers the two hottest reads from memory: the owner of
//! a bearer token (every authenticated request asks) and a monitor by id (dashboards poll it).
//! Every other call goes straight through.
//!
//! Writes made through this store drop what they change as soon as they are done, so within
//! one process a read after a write sees the write. Entries also expire after [`TTL`], which bounds how long a write made
//! by another process (another instance on the same database) can go unseen. Both maps are
//! bounded; when one is full, new entries are simply not cached.

use super::{
    AlertStates, CheckRecord, Claim, ConfirmationMail, Delivery, DeliveryOutcome, DeliveryRecord,
    DueCheck, EmailAddress, FeedChange, FeedRecord, FeedScope, FolderKey, FolderListing, Millis,
    NewNotification, Series, StorageUse, Store, StoreError, TimeKey, TimePage, TokenRecord,
    UserRecord,
};
use async_trait::async_trait;
use dashmap::DashMap;
use std::time::{Duration, Instant};
use wachet::model::{
    ClientAlertContentResponse, ClientData, ClientNotification, ClientPage, Folder, Monitor,
    MoveRequest, NotificationEndpoint,
};

/// How long a cached answer is used before the store is asked again.
pub const TTL: Duration = Duration::from_secs(5);
/// Most tokens cached.
const MAX_TOKENS: usize = 50_000;
/// Most monitors cached.
const MAX_TASKS: usize = 10_000;

struct Cached<T> {
    value: T,
    at: Instant,
}

/// The caching store around `S`.
pub struct CachedStore<S> {
    inner: S,
    /// Token hash -> (owner, expiry); the expiry is checked on every hit.
    tokens: DashMap<String, Cached<(String, Millis)>>,
    /// Monitor id -> (owner, monitor).
    tasks: DashMap<String, Cached<(String, Monitor)>>,
}

impl<S: Store> CachedStore<S> {
    /// Caches in front of `inner`.
    pub fn new(inner: S) -> Self {
        CachedStore {
            inner,
            tokens: DashMap::new(),
            tasks: DashMap::new(),
        }
    }

    /// The store behind the cache.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    fn fresh<T: Clone>(
        entry: Option<dashmap::mapref::one::Ref<'_, String, Cached<T>>>,
    ) -> Option<T> {
        entry
            .filter(|e| e.at.elapsed() < TTL)
            .map(|e| e.value.clone())
    }

    fn remember<T>(map: &DashMap<String, Cached<T>>, max: usize, key: &str, value: T) {
        if map.len() < max {
            map.insert(
                key.to_string(),
                Cached {
                    value,
                    at: Instant::now(),
                },
            );
        }
    }

    fn forget_task(&self, id: &str) {
        self.tasks.remove(id);
    }
}

#[async_trait]
impl<S: Store> Store for CachedStore<S> {
    async fn paging_secret(&self) -> Result<Vec<u8>, StoreError> {
        self.inner.paging_secret().await
    }

    async fn user_count(&self) -> Result<u64, StoreError> {
        self.inner.user_count().await
    }

    async fn create_user(&self, user: &UserRecord) -> Result<(), StoreError> {
        self.inner.create_user(user).await
    }

    async fn user_by_email(&self, email: &str) -> Result<Option<UserRecord>, StoreError> {
        self.inner.user_by_email(email).await
    }

    async fn user_by_id(&self, id: &str) -> Result<Option<UserRecord>, StoreError> {
        self.inner.user_by_id(id).await
    }

    async fn insert_token(&self, token: &TokenRecord) -> Result<(), StoreError> {
        self.inner.insert_token(token).await
    }

    async fn token_owner(
        &self,
        hash: &str,
        now: Millis,
    ) -> Result<Option<(String, Millis)>, StoreError> {
        if let Some((owner, expires_at)) = Self::fresh(self.tokens.get(hash)) {
            return Ok((expires_at > now).then_some((owner, expires_at)));
        }
        let found = self.inner.token_owner(hash, now).await?;
        if let Some(owner) = &found {
            Self::remember(&self.tokens, MAX_TOKENS, hash, owner.clone());
        }
        Ok(found)
    }

    async fn session_seen(
        &self,
        hash: &str,
        now: Millis,
    ) -> Result<Option<Option<Millis>>, StoreError> {
        self.inner.session_seen(hash, now).await
    }

    async fn touch_session(&self, hash: &str, at: Millis) -> Result<(), StoreError> {
        self.inner.touch_session(hash, at).await
    }

    async fn invalidate_tokens(&self, user: &str) -> Result<(), StoreError> {
        self.inner.invalidate_tokens(user).await?;
        self.tokens.retain(|_, cached| cached.value.0 != user);
        Ok(())
    }

    async fn delete_token(&self, hash: &str) -> Result<(), StoreError> {
        self.inner.delete_token(hash).await?;
        self.tokens.remove(hash);
        Ok(())
    }

    async fn set_notification_endpoints(
        &self,
        user: &str,
        endpoints: &[NotificationEndpoint],
    ) -> Result<(), StoreError> {
        self.inner.set_notification_endpoints(user, endpoints).await
    }

    // --- account secrets and e-mail addresses: straight through, but a password change ends
    // the other tokens of the user here too.

    async fn set_api_key(&self, user: &str, api_key_hash: &str) -> Result<(), StoreError> {
        self.inner.set_api_key(user, api_key_hash).await
    }

    async fn set_webhook_secret(&self, user: &str, secret: &str) -> Result<(), StoreError> {
        self.inner.set_webhook_secret(user, secret).await
    }

    async fn set_password(
        &self,
        user: &str,
        password_hash: &str,
        keep_token: &str,
    ) -> Result<(), StoreError> {
        self.inner
            .set_password(user, password_hash, keep_token)
            .await?;
        self.tokens
            .retain(|hash, cached| cached.value.0 != user || hash == keep_token);
        Ok(())
    }

    async fn email_addresses(&self, user: &str) -> Result<Vec<EmailAddress>, StoreError> {
        self.inner.email_addresses(user).await
    }

    async fn request_email_confirmation(
        &self,
        user: &str,
        address: &str,
        resend: bool,
    ) -> Result<(), StoreError> {
        self.inner
            .request_email_confirmation(user, address, resend)
            .await
    }

    async fn confirm_email(
        &self,
        user: &str,
        code_hash: &str,
    ) -> Result<Option<String>, StoreError> {
        self.inner.confirm_email(user, code_hash).await
    }

    async fn claim_confirmation_mails(
        &self,
        now: Millis,
        lease_until: Millis,
        limit: u32,
    ) -> Result<Vec<ConfirmationMail>, StoreError> {
        self.inner
            .claim_confirmation_mails(now, lease_until, limit)
            .await
    }

    async fn finish_confirmation_mail(
        &self,
        mail: &ConfirmationMail,
        outcome: &DeliveryOutcome,
    ) -> Result<(), StoreError> {
        self.inner.finish_confirmation_mail(mail, outcome).await
    }

    async fn create_task(&self, user: &str, monitor: &Monitor) -> Result<Monitor, StoreError> {
        self.inner.create_task(user, monitor).await
    }

    async fn update_task(&self, user: &str, monitor: &Monitor) -> Result<Monitor, StoreError> {
        let updated = self.inner.update_task(user, monitor).await;
        if let Some(id) = &monitor.id {
            self.forget_task(id);
        }
        updated
    }

    async fn task(&self, user: &str, id: &str) -> Result<Monitor, StoreError> {
        if let Some((owner, monitor)) = Self::fresh(self.tasks.get(id)) {
            return if owner == user {
                Ok(monitor)
            } else {
                Err(StoreError::NotFound)
            };
        }
        let monitor = self.inner.task(user, id).await?;
        Self::remember(
            &self.tasks,
            MAX_TASKS,
            id,
            (user.to_string(), monitor.clone()),
        );
        Ok(monitor)
    }

    async fn delete_task(&self, user: &str, id: &str) -> Result<(), StoreError> {
        let deleted = self.inner.delete_task(user, id).await;
        self.forget_task(id);
        deleted
    }

    async fn search_tasks(
        &self,
        user: &str,
        terms: &[String],
        limit: u32,
    ) -> Result<Vec<Monitor>, StoreError> {
        self.inner.search_tasks(user, terms, limit).await
    }

    async fn task_pages(&self, user: &str, id: &str) -> Result<Vec<ClientPage>, StoreError> {
        self.inner.task_pages(user, id).await
    }

    async fn save_folder(&self, user: &str, folder: &Folder) -> Result<Folder, StoreError> {
        self.inner.save_folder(user, folder).await
    }

    async fn delete_folder(&self, user: &str, id: &str) -> Result<(), StoreError> {
        let deleted = self.inner.delete_folder(user, id).await;
        // Any monitor may have gone with the folder; folder deletes are rare.
        self.tasks.clear();
        deleted
    }

    async fn list_folder(
        &self,
        user: &str,
        folder: Option<&str>,
        after: Option<&FolderKey>,
        limit: u32,
    ) -> Result<FolderListing, StoreError> {
        self.inner.list_folder(user, folder, after, limit).await
    }

    async fn move_items(&self, user: &str, request: &MoveRequest) -> Result<(), StoreError> {
        let moved = self.inner.move_items(user, request).await;
        // Moved monitors change their folderId.
        for id in request.task_ids.iter().flatten() {
            self.forget_task(id);
        }
        moved
    }

    async fn claim_due(
        &self,
        now: Millis,
        lease_until: Millis,
        claim: &Claim,
    ) -> Result<Vec<DueCheck>, StoreError> {
        self.inner.claim_due(now, lease_until, claim).await
    }

    async fn renew_lease(&self, task: &str, lease_until: Millis) -> Result<(), StoreError> {
        self.inner.renew_lease(task, lease_until).await
    }

    async fn finish_check(
        &self,
        task: &str,
        version: Millis,
        next_check_at: Millis,
    ) -> Result<(), StoreError> {
        self.inner.finish_check(task, version, next_check_at).await
    }

    async fn claim_deliveries(
        &self,
        now: Millis,
        lease_until: Millis,
        limit: u32,
    ) -> Result<Vec<Delivery>, StoreError> {
        self.inner.claim_deliveries(now, lease_until, limit).await
    }

    async fn finish_delivery(&self, id: &str, outcome: &DeliveryOutcome) -> Result<(), StoreError> {
        self.inner.finish_delivery(id, outcome).await
    }

    async fn delivery_counts(&self) -> Result<Vec<(String, u64)>, StoreError> {
        self.inner.delivery_counts().await
    }

    async fn delivery_records(
        &self,
        notification: &str,
    ) -> Result<Vec<DeliveryRecord>, StoreError> {
        self.inner.delivery_records(notification).await
    }

    async fn retry_delivery(
        &self,
        user: &str,
        notification: Option<&str>,
        delivery: &str,
        now: Millis,
    ) -> Result<(), StoreError> {
        self.inner
            .retry_delivery(user, notification, delivery, now)
            .await
    }

    async fn queue_test_delivery(
        &self,
        user: &str,
        kind: wachet::model::MessagingServiceType,
        target: &str,
        now: Millis,
        waiting: u32,
    ) -> Result<String, StoreError> {
        self.inner
            .queue_test_delivery(user, kind, target, now, waiting)
            .await
    }

    async fn test_deliveries(
        &self,
        user: &str,
        limit: u32,
    ) -> Result<Vec<DeliveryRecord>, StoreError> {
        self.inner.test_deliveries(user, limit).await
    }

    async fn feeds(&self, user: &str) -> Result<Vec<FeedRecord>, StoreError> {
        self.inner.feeds(user).await
    }

    async fn renew_feed(
        &self,
        user: &str,
        scope: &FeedScope,
        secret_hash: &str,
        now: Millis,
    ) -> Result<FeedRecord, StoreError> {
        self.inner.renew_feed(user, scope, secret_hash, now).await
    }

    async fn delete_feed(&self, user: &str, id: &str) -> Result<(), StoreError> {
        self.inner.delete_feed(user, id).await
    }

    async fn feed_by_secret(&self, secret_hash: &str) -> Result<Option<FeedRecord>, StoreError> {
        self.inner.feed_by_secret(secret_hash).await
    }

    async fn feed_changes(
        &self,
        user: &str,
        scope: &FeedScope,
        limit: u32,
    ) -> Result<Vec<FeedChange>, StoreError> {
        self.inner.feed_changes(user, scope, limit).await
    }

    async fn record_check(&self, record: &CheckRecord) -> Result<bool, StoreError> {
        let recorded = self.inner.record_check(record).await;
        // The monitor's data may be the new entry.
        self.forget_task(&record.task);
        recorded
    }

    async fn collect_garbage(&self, limit: u32) -> Result<u64, StoreError> {
        self.inner.collect_garbage(limit).await
    }

    async fn alert_states(&self, task: &str) -> Result<AlertStates, StoreError> {
        self.inner.alert_states(task).await
    }

    async fn stored_bytes(&self, task: &str) -> Result<StorageUse, StoreError> {
        self.inner.stored_bytes(task).await
    }

    async fn append_entry(&self, series: &Series, data: &ClientData) -> Result<String, StoreError> {
        let task = match series {
            Series::Task(task) | Series::Page { task_id: task, .. } => task,
        };
        let appended = self.inner.append_entry(series, data).await;
        // The monitor's data may be the new entry.
        self.forget_task(task);
        appended
    }

    async fn entries(
        &self,
        user: &str,
        id: &str,
        page: &TimePage,
    ) -> Result<Vec<(TimeKey, ClientData)>, StoreError> {
        self.inner.entries(user, id, page).await
    }

    async fn insert_notification(&self, n: &NewNotification) -> Result<String, StoreError> {
        self.inner.insert_notification(n).await
    }

    async fn notifications(
        &self,
        user: &str,
        task: Option<&str>,
        page: &TimePage,
        with_html: bool,
    ) -> Result<Vec<(TimeKey, ClientNotification)>, StoreError> {
        self.inner.notifications(user, task, page, with_html).await
    }

    async fn notification(
        &self,
        user: &str,
        id: &str,
    ) -> Result<ClientAlertContentResponse, StoreError> {
        self.inner.notification(user, id).await
    }
}
