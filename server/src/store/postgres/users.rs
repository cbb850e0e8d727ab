//! [`UserStore`] on PostgreSQL: accounts, tokens and sessions, secrets, notification endpoints,
//! the confirmation of e-mail addresses and the service's paging secret.

use super::{PgStore, not_yet};
use crate::store::{EmailAddress, Millis, StoreError, TokenRecord, UserRecord, UserStore};
use async_trait::async_trait;
use wachet::model::NotificationEndpoint;
#[async_trait]
impl UserStore for PgStore {
    async fn paging_secret(&self) -> Result<Vec<u8>, StoreError> {
        Err(not_yet("paging_secret"))
    }

    async fn user_count(&self) -> Result<u64, StoreError> {
        Err(not_yet("user_count"))
    }

    async fn create_user(&self, _user: &UserRecord) -> Result<(), StoreError> {
        Err(not_yet("create_user"))
    }

    async fn user_by_email(&self, _email: &str) -> Result<Option<UserRecord>, StoreError> {
        Err(not_yet("user_by_email"))
    }

    async fn user_by_id(&self, _id: &str) -> Result<Option<UserRecord>, StoreError> {
        Err(not_yet("user_by_id"))
    }

    async fn insert_token(&self, _token: &TokenRecord) -> Result<(), StoreError> {
        Err(not_yet("insert_token"))
    }

    async fn token_owner(
        &self,
        _hash: &str,
        _now: Millis,
    ) -> Result<Option<(String, Millis)>, StoreError> {
        Err(not_yet("token_owner"))
    }

    async fn session_seen(
        &self,
        _hash: &str,
        _now: Millis,
    ) -> Result<Option<Option<Millis>>, StoreError> {
        Err(not_yet("session_seen"))
    }

    async fn touch_session(&self, _hash: &str, _at: Millis) -> Result<(), StoreError> {
        Err(not_yet("touch_session"))
    }

    async fn invalidate_tokens(&self, _user: &str) -> Result<(), StoreError> {
        Err(not_yet("invalidate_tokens"))
    }

    async fn delete_token(&self, _hash: &str) -> Result<(), StoreError> {
        Err(not_yet("delete_token"))
    }

    async fn set_notification_endpoints(
        &self,
        _user: &str,
        _endpoints: &[NotificationEndpoint],
    ) -> Result<(), StoreError> {
        Err(not_yet("set_notification_endpoints"))
    }

    async fn set_api_key(&self, _user: &str, _api_key_hash: &str) -> Result<(), StoreError> {
        Err(not_yet("set_api_key"))
    }

    async fn set_webhook_secret(&self, _user: &str, _secret: &str) -> Result<(), StoreError> {
        Err(not_yet("set_webhook_secret"))
    }

    async fn set_password(
        &self,
        _user: &str,
        _password_hash: &str,
        _keep_token: &str,
    ) -> Result<(), StoreError> {
        Err(not_yet("set_password"))
    }

    async fn email_addresses(&self, _user: &str) -> Result<Vec<EmailAddress>, StoreError> {
        Err(not_yet("email_addresses"))
    }

    async fn request_email_confirmation(
        &self,
        _user: &str,
        _address: &str,
        _resend: bool,
    ) -> Result<(), StoreError> {
        Err(not_yet("request_email_confirmation"))
    }

    async fn confirm_email(
        &self,
        _user: &str,
        _code_hash: &str,
    ) -> Result<Option<String>, StoreError> {
        Err(not_yet("confirm_email"))
    }
}
