//! [`NotificationStore`] on PostgreSQL: raised notifications, written in a check's transaction
//! ([`insert_in`]) with their deliveries, and read back by their owner.

use super::{PgStore, not_yet};
use crate::store::{NotificationStore, StoreError, TimeKey, TimePage};
use async_trait::async_trait;
use wachet::model::{ClientAlertContentResponse, ClientNotification};
#[async_trait]
impl NotificationStore for PgStore {
    async fn notifications(
        &self,
        _user: &str,
        _task: Option<&str>,
        _page: &TimePage,
        _with_html: bool,
    ) -> Result<Vec<(TimeKey, ClientNotification)>, StoreError> {
        Err(not_yet("notifications"))
    }

    async fn notification(
        &self,
        _user: &str,
        _id: &str,
    ) -> Result<ClientAlertContentResponse, StoreError> {
        Err(not_yet("notification"))
    }
}
