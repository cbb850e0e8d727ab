//! Users, tokens, notification endpoints and the paging secret.

use super::SqliteStore;
use crate::store::{Millis, StoreError, TokenRecord, UserRecord};
use sqlx::AssertSqlSafe;
use wachet::model::NotificationEndpoint;

type UserRow = (String, String, String, String, String, String, i64);

const USER_COLUMNS: &str = "id, email, password_hash, api_key_hash, webhook_secret, \
                            notification_endpoints, created_at";

fn user(row: UserRow) -> Result<UserRecord, StoreError> {
    let (id, email, password_hash, api_key_hash, webhook_secret, endpoints, created_at) = row;
    let notification_endpoints = serde_json::from_str(&endpoints)
        .map_err(|err| StoreError::Backend(format!("stored endpoints of user {id}: {err}")))?;
    Ok(UserRecord {
        id,
        email,
        password_hash,
        api_key_hash,
        webhook_secret,
        notification_endpoints,
        created_at,
    })
}

pub(super) async fn paging_secret(store: &SqliteStore) -> Result<Vec<u8>, StoreError> {
    // First writer wins; every process then reads the same secret.
    sqlx::query("INSERT INTO settings (name, value) VALUES ('paging_secret', ?) ON CONFLICT (name) DO NOTHING")
        .bind(crate::secrets::random_hex(32))
        .execute(&store.writer)
        .await?;
    let (value,): (String,) =
        sqlx::query_as("SELECT value FROM settings WHERE name = 'paging_secret'")
            .fetch_one(&store.writer)
            .await?;
    Ok(value.into_bytes())
}

pub(super) async fn count(store: &SqliteStore) -> Result<u64, StoreError> {
    let (n,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM users")
        .fetch_one(&store.reader)
        .await?;
    Ok(u64::try_from(n).unwrap_or(0))
}

pub(super) async fn create(store: &SqliteStore, user: &UserRecord) -> Result<(), StoreError> {
    let endpoints = serde_json::to_string(&user.notification_endpoints)
        .map_err(|err| StoreError::Backend(err.to_string()))?;
    let inserted = sqlx::query(AssertSqlSafe(format!(
        "INSERT INTO users ({USER_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?) \
         ON CONFLICT (email) DO NOTHING"
    )))
    .bind(&user.id)
    .bind(&user.email)
    .bind(&user.password_hash)
    .bind(&user.api_key_hash)
    .bind(&user.webhook_secret)
    .bind(endpoints)
    .bind(user.created_at)
    .execute(&store.writer)
    .await?;
    if inserted.rows_affected() == 0 {
        return Err(StoreError::invalid(
            "email",
            "a user with this e-mail address exists",
        ));
    }
    Ok(())
}

pub(super) async fn by_email(
    store: &SqliteStore,
    email: &str,
) -> Result<Option<UserRecord>, StoreError> {
    let row: Option<UserRow> = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT {USER_COLUMNS} FROM users WHERE email = ?"
    )))
    .bind(email)
    .fetch_optional(&store.reader)
    .await?;
    row.map(user).transpose()
}

pub(super) async fn by_id(store: &SqliteStore, id: &str) -> Result<Option<UserRecord>, StoreError> {
    let row: Option<UserRow> = sqlx::query_as(AssertSqlSafe(format!(
        "SELECT {USER_COLUMNS} FROM users WHERE id = ?"
    )))
    .bind(id)
    .fetch_optional(&store.reader)
    .await?;
    row.map(user).transpose()
}

pub(super) async fn insert_token(
    store: &SqliteStore,
    token: &TokenRecord,
) -> Result<(), StoreError> {
    let mut tx = store.write().await?;
    sqlx::query("DELETE FROM tokens WHERE expires_at < ?")
        .bind(token.issued_at)
        .execute(&mut *tx)
        .await?;
    sqlx::query("INSERT INTO tokens (hash, user_id, issued_at, expires_at) VALUES (?, ?, ?, ?)")
        .bind(&token.hash)
        .bind(&token.user_id)
        .bind(token.issued_at)
        .bind(token.expires_at)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(())
}

pub(super) async fn token_owner(
    store: &SqliteStore,
    hash: &str,
    now: Millis,
) -> Result<Option<(String, Millis)>, StoreError> {
    Ok(
        sqlx::query_as("SELECT user_id, expires_at FROM tokens WHERE hash = ? AND expires_at > ?")
            .bind(hash)
            .bind(now)
            .fetch_optional(&store.reader)
            .await?,
    )
}

pub(super) async fn invalidate_tokens(store: &SqliteStore, user: &str) -> Result<(), StoreError> {
    sqlx::query("DELETE FROM tokens WHERE user_id = ?")
        .bind(user)
        .execute(&store.writer)
        .await?;
    Ok(())
}

pub(super) async fn set_notification_endpoints(
    store: &SqliteStore,
    user: &str,
    endpoints: &[NotificationEndpoint],
) -> Result<(), StoreError> {
    let json =
        serde_json::to_string(endpoints).map_err(|err| StoreError::Backend(err.to_string()))?;
    let updated = sqlx::query("UPDATE users SET notification_endpoints = ? WHERE id = ?")
        .bind(json)
        .bind(user)
        .execute(&store.writer)
        .await?;
    if updated.rows_affected() == 0 {
        return Err(StoreError::NotFound);
    }
    Ok(())
}
