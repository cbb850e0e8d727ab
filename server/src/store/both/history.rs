//! [`HistoryStore`](crate::store::HistoryStore)'s parts both backends share: reading a stored
//! value through its layers, the deltas stored against a value, a page of a series unpacked
//! (each delta against its base, each base unpacked once), and the trait's import and pages.
//! How a check's entry is written, pruned and collected differs with the schemas (SQLite
//! counts a value's references in its row; PostgreSQL keeps no row that the checks of several
//! monitors share) and stays with each backend.

/// Defines in the calling module the value rows (`Stored`, `StoredRow`, `KeyframeRow`,
/// `EntryRow`), `text_in`, `deltas_of`, `stored_as_delta` and `unpack_entries`, and implements
/// `HistoryStore` for `$store` with the methods given in braces (`collect_garbage`). The
/// calling module brings:
///
/// - `OWN_SERIES`, `PAGE_SERIES`: the filters of a monitor's own series (`$1`, when the
///   monitor is the user's, `$6`) and of a page's (`$1`), for `page_rows`;
/// - `page_rows(&self, filter, user, id, page)`: one page of a series, newest first;
/// - `contents_in(&self, hashes)`: the stored values `hashes` (a `StoredRow` each);
/// - `append_in(tx, series, data, max_bytes)`: a check's entry, as a check stores it.
macro_rules! history_store {
    ($store:ty, $db:ty, small_int: $int:ty, { $($own:tt)* }) => {
        /// A stored value's codec, body and base.
        type Stored = ($int, Vec<u8>, Option<Vec<u8>>);
        /// A stored value's hash, codec, body and base.
        type StoredRow = (Vec<u8>, $int, Vec<u8>, Option<Vec<u8>>);
        /// A keyframe's codec, body and base, with its base's codec and body (a root's).
        type KeyframeRow = $crate::store::shape::history::KeyframeRow<$int>;

        /// A stored value with the layers it is read with.
        #[derive(::sqlx::FromRow)]
        struct Layered {
            codec: Option<$int>,
            body: Option<Vec<u8>>,
            base_codec: Option<$int>,
            base_body: Option<Vec<u8>>,
            root_codec: Option<$int>,
            root_body: Option<Vec<u8>>,
        }

        /// The text of the stored value `hash` and the size of its body; `None` when no such
        /// value is stored.
        async fn text_in(
            tx: &mut ::sqlx::Transaction<'_, $db>,
            hash: &[u8],
        ) -> Result<Option<(String, usize)>, StoreError> {
            let row: Option<Layered> = ::sqlx::query_as(::sqlx::AssertSqlSafe(format!(
                "SELECT c.codec, c.body, cb.codec AS base_codec, cb.body AS base_body, \
                 cr.codec AS root_codec, cr.body AS root_body FROM contents c {} \
                 WHERE c.hash = $1",
                codec::LAYERS
            )))
            .bind(hash)
            .fetch_optional(&mut **tx)
            .await?;
            let Some(row) = row else {
                return Ok(None);
            };
            let size = row.body.as_ref().map_or(0, Vec::len);
            let text = decode_layers([
                (row.codec, row.body),
                (row.base_codec, row.base_body),
                (row.root_codec, row.root_body),
            ])?;
            Ok(text.map(|text| (text, size)))
        }

        /// How many deltas are stored against `base`, and their bytes.
        async fn deltas_of(
            tx: &mut ::sqlx::Transaction<'_, $db>,
            base: &[u8],
        ) -> Result<(i64, i64), StoreError> {
            Ok(::sqlx::query_as(
                "SELECT count(*), CAST(coalesce(sum(length(body)), 0) AS BIGINT) FROM contents \
                 WHERE base_hash = $1",
            )
            .bind(base)
            .fetch_one(&mut **tx)
            .await?)
        }

        /// Rewrites the whole value `hash` as `delta` against `base` (what the owners' counts
        /// make of it is the caller's).
        async fn stored_as_delta(
            tx: &mut ::sqlx::Transaction<'_, $db>,
            hash: &[u8],
            delta: &[u8],
            base: &[u8],
        ) -> Result<(), StoreError> {
            ::sqlx::query(
                "UPDATE contents SET codec = $2, body = $3, base_hash = $4 WHERE hash = $1",
            )
            .bind(hash)
            .bind(<$int>::from(codec::DELTA))
            .bind(delta)
            .bind(base)
            .execute(&mut **tx)
            .await?;
            Ok(())
        }

        /// One entry of a page of history, with its value's codec, body and base as stored.
        #[derive(::sqlx::FromRow)]
        struct EntryRow {
            id: i64,
            checked_at: i64,
            changed_at: Option<i64>,
            codec: Option<$int>,
            body: Option<Vec<u8>>,
            base_hash: Option<Vec<u8>>,
            error: Option<String>,
            /// The check had to sign in again.
            logged_in: bool,
        }

        impl $store {
            /// The entries of `rows` with their values, each delta read against its base (each
            /// base unpacked once); `None` when a base is missing (it went since `rows` were
            /// read).
            async fn unpack_entries(
                &self,
                rows: Vec<EntryRow>,
            ) -> Result<Option<Vec<(TimeKey, ::wachet::model::ClientData)>>, StoreError> {
                let mut wanted: Vec<Vec<u8>> =
                    rows.iter().filter_map(|r| r.base_hash.clone()).collect();
                let mut layers: Vec<HashMap<Vec<u8>, Stored>> = Vec::new();
                // Keyframes first, then the roots of those that are deltas: two layers at most.
                while !wanted.is_empty() && layers.len() < 2 {
                    wanted.sort();
                    wanted.dedup();
                    let found: HashMap<_, _> = self
                        .contents_in(&wanted)
                        .await?
                        .into_iter()
                        .map(|(hash, codec, body, base)| (hash, (codec, body, base)))
                        .collect();
                    if found.len() < wanted.len() {
                        return Ok(None);
                    }
                    wanted = found
                        .values()
                        .filter_map(|(_, _, base)| base.clone())
                        .collect();
                    layers.push(found);
                }
                let mut bases: HashMap<Vec<u8>, String> = HashMap::new();
                for layer in layers.into_iter().rev() {
                    for (hash, (codec, body, base)) in layer {
                        if bases.contains_key(&hash) {
                            continue;
                        }
                        let base = base.as_ref().and_then(|base| bases.get(base));
                        let text = codec::unpack(
                            $crate::store::shape::history::codec_of(codec)?,
                            body,
                            base.map(String::as_str),
                        )?;
                        bases.insert(hash, text);
                    }
                }
                rows.into_iter()
                    .map(|row| {
                        let raw = match (row.codec, row.body) {
                            (Some(codec), Some(body)) => {
                                let base = row.base_hash.as_ref().and_then(|hash| bases.get(hash));
                                Some(codec::unpack(
                                    $crate::store::shape::history::codec_of(codec)?,
                                    body,
                                    base.map(String::as_str),
                                )?)
                            }
                            _ => None,
                        };
                        let key = TimeKey {
                            at: row.checked_at,
                            id: row.id.to_string(),
                        };
                        let data = ::wachet::model::ClientData {
                            last_check_timestamp: $crate::store::shape::time(row.checked_at),
                            value_changed_timestamp: row
                                .changed_at
                                .map($crate::store::shape::time),
                            raw,
                            error: row.error,
                            diff: None,
                            logged_in: row.logged_in,
                        };
                        Ok((key, data))
                    })
                    .collect::<Result<Vec<_>, StoreError>>()
                    .map(Some)
            }
        }

        #[::async_trait::async_trait]
        impl HistoryStore for $store {
            async fn import_entries(
                &self,
                user: &str,
                series: &[(String, Vec<::wachet::model::ClientData>)],
            ) -> Result<(), StoreError> {
                let mut tx = self.write().await?;
                for (task, entries) in series {
                    let owned: Option<(String,)> = if is_id(task) {
                        ::sqlx::query_as("SELECT id FROM tasks WHERE id = $1 AND user_id = $2")
                            .bind(task)
                            .bind(user)
                            .fetch_optional(&mut *tx)
                            .await?
                    } else {
                        None
                    };
                    if owned.is_none() {
                        return Err(StoreError::NotFound);
                    }
                    let own = Series::Task(task.clone());
                    for data in entries {
                        append_in(&mut tx, &own, data, self.quotas.stored_bytes).await?;
                    }
                }
                tx.commit().await?;
                for (task, _) in series {
                    $crate::store::shape::invalidate::checked(&self.cache, task);
                    self.prune(task).await;
                }
                self.listings_changed_if_folders_were();
                Ok(())
            }

            async fn entries(
                &self,
                user: &str,
                id: &str,
                page: &TimePage,
            ) -> Result<Vec<(TimeKey, ::wachet::model::ClientData)>, StoreError> {
                if !is_id(id) {
                    return Err(StoreError::NotFound);
                }
                // A delta and its base are read by two statements; a base that went between
                // them (its delta was made whole again and the base collected) is read again.
                for _ in 0..3 {
                    // Most pages are of a monitor's own history: its owner is checked in the
                    // same statement (a round trip is much of a page's cost), and only an empty
                    // answer asks what `id` is.
                    let mut rows = self.page_rows(OWN_SERIES, user, id, page).await?;
                    if rows.is_empty() {
                        let (is_task, is_page): (bool, bool) = ::sqlx::query_as(
                            "SELECT EXISTS (SELECT 1 FROM tasks WHERE id = $1 AND user_id = $2), \
                             EXISTS (SELECT 1 FROM pages p JOIN tasks t ON t.id = p.task_id \
                                     WHERE p.id = $1 AND t.user_id = $2)",
                        )
                        .bind(id)
                        .bind(user)
                        .fetch_one(self.reads())
                        .await?;
                        match (is_task, is_page) {
                            (true, _) => {}
                            (false, true) => {
                                rows = self.page_rows(PAGE_SERIES, user, id, page).await?
                            }
                            (false, false) => return Err(StoreError::NotFound),
                        }
                    }
                    if let Some(entries) = self.unpack_entries(rows).await? {
                        return Ok(entries);
                    }
                }
                Err(StoreError::Backend(
                    "the base of a stored delta kept changing while it was read".into(),
                ))
            }

            $($own)*
        }
    };
}

pub(crate) use history_store;
