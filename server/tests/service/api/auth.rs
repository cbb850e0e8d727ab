//! Logins, tokens, their expiry and invalidation, rate limits, and secrets kept only hashed.

use crate::{Api, Reply, monitor};
use reqwest::Method;
use serde_json::{Value, json};
use wachet_server::api::{ApiSettings, LimitSettings};
use wachet_server::secrets::sha256_hex;
use wachet_server::store::{TokenRecord, now_millis};

const LOGIN: &str = "/thirdparty/v1/user/login";
const APILOGIN: &str = "/thirdparty/v1/user/apilogin";
const LIST: &str = "/thirdparty/v1/folder/list";

both!(both_logins_give_working_tokens_with_the_asked_lifetime);
async fn both_logins_give_working_tokens_with_the_asked_lifetime() {
    let api = Api::start().await;
    let user = api.user("Ann@Example.com").await;
    let email = json!({"email": "ann@example.com", "password": "pass word 1"});
    let reply = api.send(Method::POST, LOGIN, None, Some(email)).await;
    assert_eq!(reply.ok()["expiresInSec"], 86400);
    let token = reply.body["token"].as_str().unwrap();
    assert!(token.len() >= 43, "256 bits at least: {token}");
    api.send(Method::GET, LIST, Some(token), None).await.ok();

    // The address is matched in any case; the lifetime is honoured within 60 s .. 30 days.
    for (asked, status) in [
        (60, 200),
        (2_592_000, 200),
        (59, 400),
        (2_592_001, 400),
        (-1, 400),
    ] {
        let body =
            json!({"email": "ANN@example.com", "password": "pass word 1", "expiresInSec": asked});
        let reply = api.send(Method::POST, LOGIN, None, Some(body)).await;
        assert_eq!(reply.status, status, "{asked}: {}", reply.text);
        if status == 200 {
            assert_eq!(reply.body["expiresInSec"], asked);
        } else {
            reply.field_error("expiresInSec", "between 60 and 2592000");
        }
    }
    let body =
        json!({"userId": user.account.id, "apiKey": user.account.api_key, "expiresInSec": 120});
    let reply = api.send(Method::POST, APILOGIN, None, Some(body)).await;
    assert_eq!(reply.ok()["expiresInSec"], 120);
}

both!(failed_logins_are_401_and_missing_fields_400);
async fn failed_logins_are_401_and_missing_fields_400() {
    let api = Api::start().await;
    let user = api.user("bob@example.com").await;
    let wrong = [
        (
            LOGIN,
            json!({"email": "bob@example.com", "password": "nope"}),
        ),
        (
            LOGIN,
            json!({"email": "nobody@example.com", "password": "pass word 1"}),
        ),
        (
            APILOGIN,
            json!({"userId": user.account.id, "apiKey": "wk_wrong"}),
        ),
        (
            APILOGIN,
            json!({"userId": "not-an-id", "apiKey": user.account.api_key}),
        ),
    ];
    for (path, body) in wrong {
        let reply = api.send(Method::POST, path, None, Some(body)).await;
        reply.problem(401);
        assert!(reply.headers.get("retry-after").is_none());
    }
    let reply = api
        .send(
            Method::POST,
            LOGIN,
            None,
            Some(json!({"email": "bob@example.com"})),
        )
        .await;
    reply.field_error("password", "required");
    let reply = api
        .send(Method::POST, APILOGIN, None, Some(json!({"apiKey": "x"})))
        .await;
    reply.field_error("userId", "required");
}

both!(bearer_is_matched_in_any_case_and_anything_else_is_401);
async fn bearer_is_matched_in_any_case_and_anything_else_is_401() {
    let api = Api::start().await;
    let user = api.user("cy@example.com").await;
    for scheme in ["bearer", "Bearer", "BEARER", "bEaReR"] {
        let request = api
            .client()
            .get(api.url(LIST))
            .header("authorization", format!("{scheme} {}", user.token));
        api.raw(request).await.ok();
    }
    let bad = [
        None,
        Some(format!("Basic {}", user.token)),
        Some("bearer".to_string()),
        Some("bearer ".to_string()),
        Some(format!("bearer {}x", user.token)),
        Some(format!("bearer {}", "a".repeat(10_000))),
    ];
    for header in bad {
        let mut request = api.client().get(api.url(LIST));
        if let Some(header) = &header {
            request = request.header("authorization", header);
        }
        api.raw(request).await.problem(401);
    }
    // Every endpoint but the logins asks for the token.
    for (method, path) in [
        (Method::PUT, "/thirdparty/v1/task"),
        (Method::GET, "/thirdparty/v1/task/search"),
        (Method::GET, "/thirdparty/v1/notification/list"),
        (Method::POST, "/thirdparty/v1/user/invalidateTokens"),
        (Method::GET, "/thirdparty/v1/user/notificationEndpoints"),
    ] {
        api.send(
            method,
            path,
            None,
            Some(monitor("x", "https://example.com/")),
        )
        .await
        .problem(401);
    }
}

both!(expired_and_invalidated_tokens_are_401);
async fn expired_and_invalidated_tokens_are_401() {
    let api = Api::start().await;
    let user = api.user("dee@example.com").await;
    // A token whose time ran out a second ago.
    let expired = "expired-token-of-dee";
    let now = now_millis();
    api.store
        .insert_token(&TokenRecord {
            hash: sha256_hex(expired),
            user_id: user.account.id.clone(),
            issued_at: now - 61_000,
            expires_at: now - 1_000,
        })
        .await
        .unwrap();
    api.send(Method::GET, LIST, Some(expired), None)
        .await
        .problem(401);

    let second = api.user_token(&user).await;
    api.send(Method::GET, LIST, Some(&second), None).await.ok();
    let reply = api
        .send(
            Method::POST,
            "/thirdparty/v1/user/invalidateTokens",
            Some(&user.token),
            None,
        )
        .await;
    reply.ok();
    assert!(reply.text.is_empty());
    api.send(Method::GET, LIST, Some(&user.token), None)
        .await
        .problem(401);
    api.send(Method::GET, LIST, Some(&second), None)
        .await
        .problem(401);
    // A login after the call works.
    let third = api.user_token(&user).await;
    api.send(Method::GET, LIST, Some(&third), None).await.ok();
}

/// A client whose connections come from the loopback address `ip`.
fn client_from(ip: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(ip.parse::<std::net::IpAddr>().unwrap())
        .build()
        .unwrap()
}

async fn post_from(api: &Api, client: &reqwest::Client, path: &str, body: Value) -> Reply {
    api.raw(client.post(api.url(path)).json(&body)).await
}

both!(failed_logins_are_limited_per_account_and_network);
async fn failed_logins_are_limited_per_account_and_network() {
    // Three failures a minute for an account from a network, four from a network: the first
    // block lasts 15 s or more, far longer than this test runs.
    let api = Api::start_with(ApiSettings {
        limits: LimitSettings {
            login_failures_per_minute: 3,
            network_login_failures_per_minute: 4,
            ..LimitSettings::default()
        },
        ..ApiSettings::default()
    })
    .await;
    let user = api.user("eve@example.com").await;
    let other = api.user("fay@example.com").await;
    let (here, there) = (client_from("127.0.0.1"), client_from("127.0.0.2"));
    let wrong = json!({"email": "eve@example.com", "password": "guess"});
    for _ in 0..4 {
        post_from(&api, &there, LOGIN, wrong.clone())
            .await
            .problem(401);
    }
    // The fourth failure was over the quota: eve from 127.0.0.2 waits, even with her password.
    let right = json!({"email": "eve@example.com", "password": "pass word 1"});
    let reply = post_from(&api, &there, LOGIN, right.clone()).await;
    reply.problem(429);
    let retry: u64 = reply.headers["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=20).contains(&retry), "{retry}");
    // From another network her password works.
    post_from(&api, &here, LOGIN, right).await.ok();
    // The network's fifth failure, for another account, blocks the network for every account.
    let wrong_fay = json!({"email": "fay@example.com", "password": "guess"});
    post_from(&api, &there, LOGIN, wrong_fay).await.problem(401);
    let body = json!({"userId": other.account.id, "apiKey": other.account.api_key});
    post_from(&api, &there, APILOGIN, body.clone())
        .await
        .problem(429);
    post_from(&api, &here, APILOGIN, body).await.ok();
    // Tokens already issued still work.
    api.send(Method::GET, LIST, Some(&user.token), None)
        .await
        .ok();
}

both!(an_attacker_cannot_lock_the_victim_out, multi_thread);
async fn an_attacker_cannot_lock_the_victim_out() {
    let api = Api::start().await;
    let victim = api.user("victim@example.com").await;
    let attacker = client_from("127.0.0.2");
    let mut refused = 0;
    for i in 0..50 {
        let guess = json!({"email": "victim@example.com", "password": format!("guess {i}")});
        let by_key = json!({"userId": victim.account.id, "apiKey": format!("wk_guess{i}")});
        for (path, body) in [(LOGIN, guess), (APILOGIN, by_key)] {
            let reply = post_from(&api, &attacker, path, body).await;
            assert!([401, 429].contains(&reply.status), "{path}: {}", reply.text);
            refused += usize::from(reply.status == 429);
        }
    }
    assert!(
        refused >= 50,
        "the attacker is slowed: {refused} of 100 refused"
    );
    // The victim, from another network, logs in with the password and with the API key.
    let victim_client = client_from("127.0.0.1");
    let password = json!({"email": "victim@example.com", "password": "pass word 1"});
    let token = post_from(&api, &victim_client, LOGIN, password).await.ok()["token"].clone();
    assert!(token.is_string());
    let key = json!({"userId": victim.account.id, "apiKey": victim.account.api_key});
    post_from(&api, &victim_client, APILOGIN, key).await.ok();
}

both!(api_key_logins_never_wait_for_password_checks, multi_thread);
async fn api_key_logins_never_wait_for_password_checks() {
    // No failure limits: every guess is hashed, so the password checks queue up.
    let api = Api::start_with(ApiSettings {
        limits: LimitSettings {
            login_failures_per_minute: 0,
            network_login_failures_per_minute: 0,
            ..LimitSettings::default()
        },
        ..ApiSettings::default()
    })
    .await;
    let user = api.user("kay@example.com").await;
    let key = json!({"userId": user.account.id, "apiKey": user.account.api_key});
    let mine = client_from("127.0.0.1");
    let started = std::time::Instant::now();
    post_from(&api, &mine, APILOGIN, key.clone()).await.ok();
    let baseline = started.elapsed();

    let attacker = client_from("127.0.0.2");
    let done = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (first_tx, first_rx) = tokio::sync::oneshot::channel();
    let first_tx = std::sync::Mutex::new(Some(first_tx));
    let guesses = futures::future::join_all((0..40).map(|i| {
        let (api, attacker, done, first_tx) = (&api, &attacker, done.clone(), &first_tx);
        async move {
            let guess = json!({"email": format!("user{i}@example.com"), "password": "guess"});
            let reply = post_from(api, attacker, LOGIN, guess).await;
            done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            if let Some(tx) = first_tx.lock().unwrap().take() {
                let _ = tx.send(());
            }
            reply.status
        }
    }));
    let api_logins = async {
        // The password checks are queued once the first has been answered.
        first_rx.await.unwrap();
        let started = std::time::Instant::now();
        for _ in 0..5 {
            post_from(&api, &mine, APILOGIN, key.clone()).await.ok();
        }
        (
            started.elapsed() / 5,
            done.load(std::sync::atomic::Ordering::SeqCst),
        )
    };
    let (statuses, (loaded, answered)) = tokio::join!(guesses, api_logins);
    assert!(
        statuses.iter().all(|s| [401, 429].contains(s)),
        "{statuses:?}"
    );
    eprintln!(
        "API-key login: {baseline:?} alone, {loaded:?} while 40 password checks queue; {answered} of them answered meanwhile"
    );
    // Queued behind the password checks, the API-key logins would end after all of them.
    assert!(
        answered < 40,
        "the API-key logins waited for every password check"
    );
}

both!(parallel_guesses_are_judged_one_after_another, multi_thread);
async fn parallel_guesses_are_judged_one_after_another() {
    let api = Api::start_with(ApiSettings {
        limits: LimitSettings {
            login_failures_per_minute: 3,
            ..LimitSettings::default()
        },
        ..ApiSettings::default()
    })
    .await;
    api.user("hal@example.com").await;
    let guesses = (0..20).map(|i| {
        let body = json!({"email": "hal@example.com", "password": format!("guess {i}")});
        api.send(Method::POST, LOGIN, None, Some(body))
    });
    let statuses: Vec<u16> = futures::future::join_all(guesses)
        .await
        .iter()
        .map(|r| r.status)
        .collect();
    let tried = statuses.iter().filter(|s| **s == 401).count();
    let refused = statuses.iter().filter(|s| **s == 429).count();
    assert_eq!(tried + refused, 20, "{statuses:?}");
    assert!(
        tried <= 4,
        "three failures a minute, and the fourth blocks: {statuses:?}"
    );
}

both!(login_fields_are_checked_before_anything_else);
async fn login_fields_are_checked_before_anything_else() {
    let api = Api::start().await;
    let cases = [
        (
            LOGIN,
            json!({"email": "a@b", "password": "x", "expiresInSec": 99999999999999999999u128 as f64}),
            "expiresInSec",
        ),
        (
            LOGIN,
            json!({"email": "a@b", "password": "x", "expiresInSec": "60"}),
            "expiresInSec",
        ),
        (
            LOGIN,
            json!({"email": "a\u{0}@b", "password": "x"}),
            "email",
        ),
        (
            APILOGIN,
            json!({"userId": "x", "apiKey": "y", "expiresInSec": 9_223_372_036_854_775_807i64}),
            "expiresInSec",
        ),
        (APILOGIN, json!({"userId": ["x"], "apiKey": "y"}), "userId"),
    ];
    for (path, body, field) in cases {
        let reply = api.send(Method::POST, path, None, Some(body.clone())).await;
        assert_eq!(reply.status, 400, "{body}: {}", reply.text);
        assert!(
            reply.problem(400).get(field).is_some(),
            "{body}: {}",
            reply.text
        );
    }
    // A long or malformed identifier is a failed login, not a key in the limiter.
    let long = json!({"email": format!("{}@example.com", "a".repeat(100_000)), "password": "x"});
    api.send(Method::POST, LOGIN, None, Some(long))
        .await
        .problem(401);
}

both!(each_user_has_a_request_budget);
async fn each_user_has_a_request_budget() {
    let settings = ApiSettings {
        limits: LimitSettings {
            requests_per_second: 1,
            burst: 3,
            ..LimitSettings::default()
        },
        ..ApiSettings::default()
    };
    let api = Api::start_with(settings).await;
    let greedy = api.user("greedy@example.com").await;
    let calm = api.user("calm@example.com").await;
    let mut statuses = Vec::new();
    for _ in 0..5 {
        statuses.push(api.get(&greedy, LIST).await.status);
    }
    assert_eq!(&statuses[..3], &[200, 200, 200], "{statuses:?}");
    let reply = api.get(&greedy, LIST).await;
    reply.problem(429);
    assert!(reply.headers.contains_key("retry-after"));
    api.get(&calm, LIST).await.ok();
}

/// Everything the database holds, as an operator reading it would see it: on SQLite the bytes
/// of the file and its write-ahead log, on PostgreSQL every row of every table as text.
async fn stored(api: &Api) -> Vec<u8> {
    let mut stored = Vec::new();
    match &api.database {
        crate::Database::Sqlite(_) => {
            for suffix in ["", "-wal"] {
                let path = format!("{}{suffix}", api.db_path().display());
                stored.extend(std::fs::read(path).unwrap_or_default());
            }
        }
        crate::Database::Postgres(url) => {
            let pool = sqlx::PgPool::connect(url).await.unwrap();
            let tables: Vec<String> = sqlx::query_scalar(
                "SELECT table_name::text FROM information_schema.tables \
                 WHERE table_schema = 'public'",
            )
            .fetch_all(&pool)
            .await
            .unwrap();
            assert!(tables.iter().any(|t| t == "tokens"), "{tables:?}");
            for table in tables {
                let rows: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
                    "SELECT t::text FROM \"{table}\" t"
                )))
                .fetch_all(&pool)
                .await
                .unwrap();
                stored.extend(rows.join("\n").into_bytes());
            }
            pool.close().await;
        }
    }
    stored
}

both!(secrets_are_stored_only_as_hashes);
async fn secrets_are_stored_only_as_hashes() {
    let api = Api::start().await;
    let user = api.user("gil@example.com").await;
    api.task(&user, monitor("one", "https://example.com/"))
        .await;
    let stored = stored(&api).await;
    let contains = |needle: &str| stored.windows(needle.len()).any(|w| w == needle.as_bytes());
    assert!(contains(&user.account.id), "the database is the right one");
    assert!(!contains(&user.token), "token stored in the clear");
    assert!(
        !contains(&user.account.api_key),
        "API key stored in the clear"
    );
    assert!(
        !contains(&user.account.password),
        "password stored in the clear"
    );
    assert!(contains(&sha256_hex(&user.token)));
}

impl Api {
    async fn user_token(&self, user: &crate::User) -> String {
        let body = json!({"userId": user.account.id, "apiKey": user.account.api_key});
        let reply = self.send(Method::POST, APILOGIN, None, Some(body)).await;
        reply.ok()["token"].as_str().unwrap().to_string()
    }
}

both!(a_cached_token_still_expires_on_time_and_writes_are_seen_at_once);
async fn a_cached_token_still_expires_on_time_and_writes_are_seen_at_once() {
    let api = Api::start().await;
    let user = api.user("ivy@example.com").await;
    let short = "short-lived-token-of-ivy";
    let now = now_millis();
    api.store
        .insert_token(&TokenRecord {
            hash: sha256_hex(short),
            user_id: user.account.id.clone(),
            issued_at: now,
            expires_at: now + 1_000,
        })
        .await
        .unwrap();
    // Used (and so cached) while valid, refused once its time is up, well within the cache TTL.
    api.send(Method::GET, LIST, Some(short), None).await.ok();
    tokio::time::sleep(std::time::Duration::from_millis(1_200)).await;
    api.send(Method::GET, LIST, Some(short), None)
        .await
        .problem(401);

    // A monitor read (and cached) shows its new data as soon as a check is stored.
    let task = crate::id(
        &api.task(&user, monitor("tea", "https://example.com/"))
            .await,
    );
    let path = format!("/thirdparty/v1/task/{task}");
    assert_eq!(
        api.get(&user, &path).await.ok()["data"],
        crate::not_checked()
    );
    let data = wachet::model::ClientData::value(chrono::Utc::now(), "3.50".into());
    api.store
        .append_entry(&wachet_server::store::Series::Task(task.clone()), &data)
        .await
        .unwrap();
    assert_eq!(api.get(&user, &path).await.ok()["data"]["raw"], "3.50");
}

both!(the_api_key_rotates_and_the_old_one_stops_working);
async fn the_api_key_rotates_and_the_old_one_stops_working() {
    let api = Api::start().await;
    let user = api.user("rot@example.com").await;
    let reply = api
        .send(
            Method::POST,
            "/thirdparty/v1/user/apiKey",
            Some(&user.token),
            None,
        )
        .await;
    let new_key = reply.ok()["apiKey"].as_str().unwrap().to_string();
    assert!(
        new_key.starts_with("wk_") && new_key.len() >= 46,
        "{new_key}"
    );
    assert_ne!(new_key, user.account.api_key);
    let old = json!({"userId": user.account.id, "apiKey": user.account.api_key});
    api.send(Method::POST, APILOGIN, None, Some(old))
        .await
        .problem(401);
    let new = json!({"userId": user.account.id, "apiKey": new_key});
    api.send(Method::POST, APILOGIN, None, Some(new)).await.ok();
    // Tokens already issued keep working (invalidateTokens ends them).
    api.send(Method::GET, LIST, Some(&user.token), None)
        .await
        .ok();
    // Only its hash is kept.
    let stored = stored(&api).await;
    assert!(
        !stored
            .windows(new_key.len())
            .any(|w| w == new_key.as_bytes())
    );
}

both!(the_webhook_secret_rotates);
async fn the_webhook_secret_rotates() {
    let api = Api::start().await;
    let user = api.user("hook@example.com").await;
    let settings = "/thirdparty/v1/user/notificationEndpoints";
    let before = api.get(&user, settings).await.ok()["webhookSecret"].clone();
    let reply = api
        .send(
            Method::POST,
            "/thirdparty/v1/user/webhookSecret",
            Some(&user.token),
            None,
        )
        .await;
    let secret = reply.ok()["webhookSecret"].as_str().unwrap().to_string();
    assert_eq!(secret.len(), 64, "256 bits, hex: {secret}");
    assert_ne!(before, secret.as_str());
    assert_eq!(
        api.get(&user, settings).await.ok()["webhookSecret"],
        secret.as_str()
    );
}

both!(a_password_change_needs_the_current_one_and_ends_the_other_tokens);
async fn a_password_change_needs_the_current_one_and_ends_the_other_tokens() {
    let api = Api::start().await;
    let user = api.user("pat@example.com").await;
    let other = api.user_token(&user).await;
    let path = "/thirdparty/v1/user/password";
    let change = |current: &str, new: &str| json!({"currentPassword": current, "newPassword": new});
    api.send(
        Method::PUT,
        path,
        Some(&user.token),
        Some(change("wrong", "a new password")),
    )
    .await
    .field_error("currentPassword", "is not the account's password");
    api.send(
        Method::PUT,
        path,
        Some(&user.token),
        Some(change("pass word 1", "short")),
    )
    .await
    .field_error("newPassword", "8 to 1024 characters");
    api.send(
        Method::PUT,
        path,
        Some(&user.token),
        Some(json!({"newPassword": "a new password"})),
    )
    .await
    .field_error("currentPassword", "required");
    api.send(
        Method::PUT,
        path,
        Some(&user.token),
        Some(change("pass word 1", "a new password")),
    )
    .await
    .ok();
    // The token of the change keeps working; every other token ended.
    api.send(Method::GET, LIST, Some(&user.token), None)
        .await
        .ok();
    api.send(Method::GET, LIST, Some(&other), None)
        .await
        .problem(401);
    let old = json!({"email": "pat@example.com", "password": "pass word 1"});
    api.send(Method::POST, LOGIN, None, Some(old))
        .await
        .problem(401);
    let new = json!({"email": "pat@example.com", "password": "a new password"});
    api.send(Method::POST, LOGIN, None, Some(new)).await.ok();
}

both!(wrong_current_passwords_count_as_failed_logins);
async fn wrong_current_passwords_count_as_failed_logins() {
    let api = Api::start_with(ApiSettings {
        limits: LimitSettings {
            login_failures_per_minute: 2,
            ..LimitSettings::default()
        },
        ..ApiSettings::default()
    })
    .await;
    let user = api.user("sam@example.com").await;
    let wrong = json!({"currentPassword": "guess", "newPassword": "a new password"});
    let mut statuses = Vec::new();
    for _ in 0..4 {
        let reply = api
            .send(
                Method::PUT,
                "/thirdparty/v1/user/password",
                Some(&user.token),
                Some(wrong.clone()),
            )
            .await;
        statuses.push(reply.status);
    }
    assert_eq!(statuses, vec![400, 400, 400, 429]);
}
