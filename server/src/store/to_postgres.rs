//! Moving a service from its SQLite file to a PostgreSQL database (`wachet migrate`): every
//! table the service keeps, copied in batches inside one PostgreSQL transaction from one
//! snapshot of the file, so the target holds all of it or, after any failure, nothing.
//!
//! Both schemas hold the same data but not always in the same tables: SQLite keeps a
//! monitor's schedule and series state on its `tasks` row, PostgreSQL in narrow rows of their
//! own (`schedules`, `task_series`, with a user's stored bytes spread over `user_storage`), so
//! each target table is filled by a statement on the source ([`TABLES`]) whose columns are the
//! target's, named and typed. What each schema counts for itself is not copied but counted
//! again by the target as rows arrive: its triggers count the monitors of each folder and
//! user; SQLite's reference counts of values (`contents.refs`, `task_contents`) have no
//! counterpart. The processes' registrations (`workers`, `host_buckets`) belong to the
//! processes running on the old database and stay behind. The service's secret key (which
//! signs continuation tokens and seals feed keys and webhook secrets) is a row of `settings`,
//! so it moves with everything else; hashes and sealed values move as the bytes they are.
//!
//! A table or column of the target that this copy neither fills nor leaves to the target's
//! own counting stops it before it copies anything ([`MoveError::Unknown`]): a migration that
//! adds one must add it here too, and the command-line test of the move says so.

use super::StoreError;
use super::postgres::PgStore;
use super::sqlite::SqliteStore;
use futures::TryStreamExt;
use sqlx::{Postgres, QueryBuilder, Row};

/// Rows a statement inserts: 1,000 rows of the widest table bind 17,000 values, well under
/// PostgreSQL's 65,535.
const BATCH: usize = 1_000;

/// How a column is typed on PostgreSQL, and so read from SQLite.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Text,
    BigInt,
    Int,
    SmallInt,
    /// SQLite's 0/1 integer.
    Bool,
    Bytes,
}

use Kind::{BigInt, Bool, Bytes, Int, SmallInt, Text};

/// One target table: its columns and the SQLite statement answering them in that order,
/// rows that others name first, and the count of the source the copy must match.
struct Table {
    name: &'static str,
    columns: &'static [(&'static str, Kind)],
    select: &'static str,
    source_count: &'static str,
}

/// The tables in the order their foreign keys need.
const TABLES: &[Table] = &[
    Table {
        name: "settings",
        columns: &[("name", Text), ("value", Text)],
        select: "SELECT name, value FROM settings ORDER BY name",
        source_count: "SELECT count(*) FROM settings",
    },
    Table {
        name: "users",
        columns: &[
            ("id", Text),
            ("email", Text),
            ("password_hash", Text),
            ("api_key_hash", Text),
            ("webhook_secret", Text),
            ("notification_endpoints", Text),
            ("created_at", BigInt),
            ("login_base", Text),
            ("time_zone", Text),
        ],
        select: "SELECT id, email, password_hash, api_key_hash, webhook_secret, \
                 notification_endpoints, created_at, login_base, time_zone FROM users ORDER BY id",
        source_count: "SELECT count(*) FROM users",
    },
    Table {
        name: "tokens",
        columns: &[
            ("hash", Text),
            ("user_id", Text),
            ("issued_at", BigInt),
            ("expires_at", BigInt),
            ("last_seen_at", BigInt),
        ],
        select: "SELECT hash, user_id, issued_at, expires_at, last_seen_at FROM tokens",
        source_count: "SELECT count(*) FROM tokens",
    },
    Table {
        name: "email_addresses",
        columns: &[
            ("user_id", Text),
            ("address", Text),
            ("token_hash", Text),
            ("confirmed_at", BigInt),
            ("requested_at", BigInt),
            ("mail_due_at", BigInt),
            ("mail_attempts", Int),
            ("lease_until", BigInt),
            ("last_error", Text),
        ],
        select: "SELECT user_id, address, token_hash, confirmed_at, requested_at, mail_due_at, \
                 mail_attempts, lease_until, last_error FROM email_addresses",
        source_count: "SELECT count(*) FROM email_addresses",
    },
    // Parents before their subfolders; a folder outside any tree (it cannot be, with foreign
    // keys on) would be left out, and the counts would say so.
    Table {
        name: "folders",
        columns: &[
            ("id", Text),
            ("user_id", Text),
            ("parent_id", Text),
            ("name", Text),
            ("sort_key", Text),
            ("created_at", BigInt),
            ("notification_endpoints", Text),
        ],
        select: "WITH RECURSIVE tree (id, depth) AS ( \
                   SELECT id, 0 FROM folders WHERE parent_id IS NULL \
                   UNION ALL SELECT f.id, t.depth + 1 FROM folders f JOIN tree t ON f.parent_id = t.id) \
                 SELECT f.id, f.user_id, f.parent_id, f.name, f.sort_key, f.created_at, \
                 f.notification_endpoints \
                 FROM folders f JOIN tree t ON t.id = f.id ORDER BY t.depth, f.id",
        source_count: "SELECT count(*) FROM folders",
    },
    Table {
        name: "tasks",
        columns: &[
            ("id", Text),
            ("user_id", Text),
            ("folder_id", Text),
            ("name", Text),
            ("sort_key", Text),
            ("url", Text),
            ("note", Text),
            ("search_text", Text),
            ("definition", Text),
            ("paused", Bool),
            ("dynamic", Bool),
            ("failed", Bool),
            ("sample_noise", Bool),
            ("noise_notice", Text),
            ("created_at", BigInt),
            ("updated_at", BigInt),
            ("name_auto", Bool),
        ],
        select: "SELECT id, user_id, folder_id, name, sort_key, url, note, search_text, \
                 definition, paused, dynamic, failed, sample_noise, noise_notice, created_at, \
                 updated_at, name_auto FROM tasks ORDER BY id",
        source_count: "SELECT count(*) FROM tasks",
    },
    Table {
        name: "schedules",
        columns: &[
            ("task_id", Text),
            ("user_id", Text),
            ("dynamic", Bool),
            ("next_check_at", BigInt),
            ("lease_until", BigInt),
            ("token", BigInt),
            ("location", SmallInt),
            ("host_bucket", SmallInt),
            ("host", BigInt),
        ],
        select: "SELECT id, user_id, dynamic, next_check_at, lease_until, lease_token, location, \
                 host_bucket, host FROM tasks ORDER BY id",
        source_count: "SELECT count(*) FROM tasks",
    },
    // Whole values (the bases of deltas) before the deltas made against them.
    Table {
        name: "contents",
        columns: &[
            ("hash", Bytes),
            ("codec", Int),
            ("body", Bytes),
            ("base_hash", Bytes),
        ],
        select: "SELECT hash, codec, body, base_hash FROM contents \
                 ORDER BY base_hash IS NOT NULL, hash",
        source_count: "SELECT count(*) FROM contents",
    },
    Table {
        name: "pages",
        columns: &[
            ("id", Text),
            ("task_id", Text),
            ("url", Text),
            ("name", Text),
            ("latest_entry_id", BigInt),
            ("entry_count", BigInt),
            ("alert_state", Text),
            ("keyframe_hash", Bytes),
        ],
        select: "SELECT id, task_id, url, name, CAST(latest_entry_id AS INTEGER), entry_count, \
                 alert_state, keyframe_hash FROM pages ORDER BY id",
        source_count: "SELECT count(*) FROM pages",
    },
    Table {
        name: "task_series",
        columns: &[
            ("task_id", Text),
            ("user_id", Text),
            ("latest_entry_id", BigInt),
            ("entry_count", BigInt),
            ("stored_bytes", BigInt),
            ("shard", SmallInt),
            ("alert_state", Text),
            ("keyframe_hash", Bytes),
        ],
        // The shard is PostgreSQL's hash of the id, set once the rows are in ([`SHARDS`]).
        select: "SELECT id, user_id, CAST(latest_entry_id AS INTEGER), entry_count, \
                 stored_bytes, 0, alert_state, keyframe_hash FROM tasks ORDER BY id",
        source_count: "SELECT count(*) FROM tasks",
    },
    Table {
        name: "entries",
        columns: &[
            ("id", BigInt),
            ("task_id", Text),
            ("page_id", Text),
            ("checked_at", BigInt),
            ("changed_at", BigInt),
            ("content_hash", Bytes),
            ("error", Text),
            ("logged_in", Bool),
        ],
        select: "SELECT id, task_id, page_id, checked_at, changed_at, content_hash, error, \
                 logged_in FROM entries ORDER BY id",
        source_count: "SELECT count(*) FROM entries",
    },
    Table {
        name: "notifications",
        columns: &[
            ("id", Text),
            ("user_id", Text),
            ("task_id", Text),
            ("page_id", Text),
            ("job_type", Int),
            ("alert_type", Int),
            ("alert", Text),
            ("created_at", BigInt),
            ("current_value", Text),
            ("comparand", Text),
            ("error", Text),
            ("task_name", Text),
            ("url", Text),
            ("synthetic_expression", Text),
            ("html", Text),
            ("explanation", Text),
        ],
        select: "SELECT id, user_id, task_id, page_id, job_type, alert_type, alert, created_at, \
                 current_value, comparand, error, task_name, url, synthetic_expression, html, \
                 explanation FROM notifications ORDER BY id",
        source_count: "SELECT count(*) FROM notifications",
    },
    // Rows from before deliveries carried their owner take their notification's.
    Table {
        name: "deliveries",
        columns: &[
            ("id", Text),
            ("notification_id", Text),
            ("user_id", Text),
            ("kind", Int),
            ("target", Text),
            ("state", Text),
            ("attempts", Int),
            ("next_attempt_at", BigInt),
            ("lease_until", BigInt),
            ("last_error", Text),
            ("updated_at", BigInt),
            ("released_at", BigInt),
            ("lease_token", BigInt),
            ("template", Text),
            ("digest_key", Text),
            ("digest_of", Text),
            ("lane", Text),
        ],
        select: "SELECT d.id, d.notification_id, \
                 coalesce(d.user_id, (SELECT n.user_id FROM notifications n \
                                      WHERE n.id = d.notification_id)), \
                 d.kind, d.target, d.state, d.attempts, d.next_attempt_at, d.lease_until, \
                 d.last_error, d.updated_at, d.released_at, d.lease_token, d.template, \
                 d.digest_key, d.digest_of, d.lane \
                 FROM deliveries d ORDER BY d.id",
        source_count: "SELECT count(*) FROM deliveries",
    },
    Table {
        name: "feeds",
        columns: &[
            ("id", Text),
            ("user_id", Text),
            ("scope", Text),
            ("folder_id", Text),
            ("task_id", Text),
            ("secret_hash", Text),
            ("created_at", BigInt),
            ("secret_sealed", Text),
        ],
        select: "SELECT id, user_id, scope, folder_id, task_id, secret_hash, created_at, \
                 secret_sealed FROM feeds ORDER BY id",
        source_count: "SELECT count(*) FROM feeds",
    },
    Table {
        name: "task_sessions",
        columns: &[("task_id", Text), ("sealed", Text), ("updated_at", BigInt)],
        select: "SELECT task_id, sealed, updated_at FROM task_sessions ORDER BY task_id",
        source_count: "SELECT count(*) FROM task_sessions",
    },
];

/// The tables of the target that must be empty before a copy: every one the copy fills, and
/// what is derived from them.
const MUST_BE_EMPTY: &[&str] = &[
    "settings",
    "users",
    "tokens",
    "email_addresses",
    "folders",
    "tasks",
    "schedules",
    "contents",
    "pages",
    "task_series",
    "user_storage",
    "entries",
    "notifications",
    "deliveries",
    "feeds",
    "task_sessions",
];

/// Tables of the target the copy leaves alone: filled by [`FINISH`] from the copied rows, or
/// the processes' registrations, or the migrations' own record.
const NOT_COPIED: &[&str] = &[
    "user_storage",
    "contents_unnamed",
    "workers",
    "host_buckets",
    "_sqlx_migrations",
];

/// Columns of copied tables that the target's triggers count as the rows arrive.
const COUNTED: &[(&str, &str)] = &[
    ("users", "task_count"),
    ("folders", "own_count"),
    ("folders", "own_failed"),
    ("folders", "own_paused"),
];

/// What the target computes once the rows are in: each monitor's shard of its owner's
/// stored-bytes count (as a new monitor's is chosen), the owners' counts from them, the
/// values no entry names as candidates for garbage collection, and the history's ids going on
/// after the highest copied.
const FINISH: &[&str] = &[
    "UPDATE task_series SET shard = (abs(hashtext(task_id)) % 16)::SMALLINT",
    "INSERT INTO user_storage (user_id, shard, bytes) \
     SELECT user_id, shard, sum(stored_bytes)::BIGINT FROM task_series GROUP BY user_id, shard",
    "INSERT INTO contents_unnamed (hash) SELECT c.hash FROM contents c \
     WHERE NOT EXISTS (SELECT 1 FROM entries e WHERE e.content_hash = c.hash)",
    "SELECT setval(pg_get_serial_sequence('entries', 'id'), max(id)) FROM entries \
     HAVING max(id) IS NOT NULL",
];

/// Why a move failed; the target is left as it was.
#[derive(Debug, thiserror::Error)]
pub enum MoveError {
    /// The target holds data already.
    #[error(
        "the target database is not empty (table {0} has rows); wachet migrate moves into an \
         empty database only: create a new one (createdb) and give its URL"
    )]
    NotEmpty(&'static str),
    /// A table's copy holds another number of rows than its source.
    #[error("table {table}: the source has {source_rows} rows but the copy {copied}")]
    Counts {
        /// The target table.
        table: &'static str,
        /// Rows of the source.
        source_rows: i64,
        /// Rows in the target.
        copied: i64,
    },
    /// Reading, converting or writing a table failed.
    #[error("table {table}: {reason}")]
    Table {
        /// The target table.
        table: &'static str,
        /// What failed.
        reason: String,
    },
    /// The target has a table or column this copy does not know: a newer schema than the copy
    /// was written for, which would otherwise leave data behind.
    #[error("wachet migrate does not know how to fill {0}")]
    Unknown(String),
    /// The database failed outside any one table.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// One table's rows moved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Moved {
    /// The target table.
    pub table: &'static str,
    /// Its rows, as many as the source's.
    pub rows: i64,
}

/// A value read from SQLite, typed as PostgreSQL's column.
enum Value {
    Text(Option<String>),
    BigInt(Option<i64>),
    Int(Option<i32>),
    SmallInt(Option<i16>),
    Bool(Option<bool>),
    Bytes(Option<Vec<u8>>),
}

/// Column `at` of `row` as `kind`; a number out of the target's range is an error.
fn read(row: &sqlx::sqlite::SqliteRow, at: usize, kind: Kind) -> Result<Value, String> {
    let int = || {
        row.try_get::<Option<i64>, _>(at)
            .map_err(|err| err.to_string())
    };
    Ok(match kind {
        Text => Value::Text(row.try_get(at).map_err(|err| err.to_string())?),
        Bytes => Value::Bytes(row.try_get(at).map_err(|err| err.to_string())?),
        BigInt => Value::BigInt(int()?),
        Bool => Value::Bool(int()?.map(|n| n != 0)),
        Int => Value::Int(
            int()?
                .map(i32::try_from)
                .transpose()
                .map_err(|err| err.to_string())?,
        ),
        SmallInt => Value::SmallInt(
            int()?
                .map(i16::try_from)
                .transpose()
                .map_err(|err| err.to_string())?,
        ),
    })
}

/// Copies everything `from` holds into `to`, which must be empty, and answers each table's
/// rows. Both are opened (so migrated) by the caller; nothing is written to `from`.
pub async fn sqlite_to_postgres(from: &SqliteStore, to: &PgStore) -> Result<Vec<Moved>, MoveError> {
    let mut source = from.read_pool().begin().await.map_err(StoreError::from)?;
    let mut target = to.pool().begin().await.map_err(StoreError::from)?;
    for &table in MUST_BE_EMPTY {
        let any: bool = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "SELECT EXISTS (SELECT 1 FROM {table})"
        )))
        .fetch_one(&mut *target)
        .await
        .map_err(StoreError::from)?;
        if any {
            return Err(MoveError::NotEmpty(table));
        }
    }
    let columns: Vec<(String, String)> = sqlx::query_as(
        "SELECT table_name::TEXT, column_name::TEXT FROM information_schema.columns \
         WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position",
    )
    .fetch_all(&mut *target)
    .await
    .map_err(StoreError::from)?;
    for (table, column) in &columns {
        if NOT_COPIED.contains(&table.as_str()) {
            continue;
        }
        let known = TABLES.iter().find(|t| t.name == table).is_some_and(|t| {
            t.columns.iter().any(|(name, _)| name == column)
                || COUNTED.contains(&(t.name, column.as_str()))
        });
        if !known {
            return Err(MoveError::Unknown(format!("{table}.{column}")));
        }
    }
    let mut moved = Vec::with_capacity(TABLES.len());
    for table in TABLES {
        let failed = |reason: String| MoveError::Table {
            table: table.name,
            reason,
        };
        let columns: Vec<&str> = table.columns.iter().map(|(name, _)| *name).collect();
        // The history's ids are the source's: continuation tokens and the latest entries name
        // them.
        let overriding = if table.name == "entries" {
            " OVERRIDING SYSTEM VALUE"
        } else {
            ""
        };
        let insert = format!(
            "INSERT INTO {} ({}){overriding} ",
            table.name,
            columns.join(", ")
        );
        let mut rows = sqlx::query(table.select).fetch(&mut *source);
        let mut batch: Vec<Vec<Value>> = Vec::with_capacity(BATCH);
        loop {
            let row = rows
                .try_next()
                .await
                .map_err(|err| failed(err.to_string()))?;
            if let Some(row) = &row {
                let values = table
                    .columns
                    .iter()
                    .enumerate()
                    .map(|(at, (column, kind))| {
                        read(row, at, *kind).map_err(|err| format!("column {column}: {err}"))
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(failed)?;
                batch.push(values);
            }
            if batch.len() == BATCH || (row.is_none() && !batch.is_empty()) {
                let mut query = QueryBuilder::<Postgres>::new(insert.clone());
                query.push_values(batch.drain(..), |mut out, values| {
                    for value in values {
                        match value {
                            Value::Text(v) => out.push_bind(v),
                            Value::BigInt(v) => out.push_bind(v),
                            Value::Int(v) => out.push_bind(v),
                            Value::SmallInt(v) => out.push_bind(v),
                            Value::Bool(v) => out.push_bind(v),
                            Value::Bytes(v) => out.push_bind(v),
                        };
                    }
                });
                query
                    .build()
                    .execute(&mut *target)
                    .await
                    .map_err(|err| failed(err.to_string()))?;
            }
            if row.is_none() {
                break;
            }
        }
        drop(rows);
        let source_rows: i64 = sqlx::query_scalar(table.source_count)
            .fetch_one(&mut *source)
            .await
            .map_err(|err| failed(err.to_string()))?;
        let copied: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "SELECT count(*) FROM {}",
            table.name
        )))
        .fetch_one(&mut *target)
        .await
        .map_err(|err| failed(err.to_string()))?;
        if copied != source_rows {
            return Err(MoveError::Counts {
                table: table.name,
                source_rows,
                copied,
            });
        }
        moved.push(Moved {
            table: table.name,
            rows: copied,
        });
    }
    for &statement in FINISH {
        sqlx::query(statement)
            .execute(&mut *target)
            .await
            .map_err(StoreError::from)?;
    }
    target.commit().await.map_err(StoreError::from)?;
    source.rollback().await.map_err(StoreError::from)?;
    Ok(moved)
}
