//! `wachet serve` and `wachet user add` as a user runs them: the real binary as a child process
//! on a real SQLite file, talked to over HTTP on loopback.

use serde_json::{Value, json};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// Bound of every wait on the child.
const WAIT: Duration = Duration::from_secs(30);

#[allow(dead_code)] // the cluster's helpers serve the api tests too
#[path = "api/pg.rs"]
mod pg;

struct Serve {
    child: Child,
    base: String,
    /// What it printed before it listened.
    printed: Vec<String>,
}

/// The four lines of a new user.
#[derive(Debug, Clone)]
struct Account {
    id: String,
    email: String,
    password: String,
    api_key: String,
}

fn account(lines: &[String]) -> Account {
    let field = |name: &str| {
        lines
            .iter()
            .find_map(|l| l.strip_prefix(&format!("{name}: ")))
            .unwrap_or_else(|| panic!("no {name:?} line in {lines:?}"))
            .to_string()
    };
    Account {
        id: field("user id"),
        email: field("email"),
        password: field("password"),
        api_key: field("api key"),
    }
}

fn wachet() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_wachet"));
    command.kill_on_drop(true);
    command
}

async fn serve(db: &Path, extra: &[&str]) -> Serve {
    let child = wachet()
        .args(["serve", "--listen", "127.0.0.1:0", "--db"])
        .arg(db)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    listening(child).await
}

/// Reads what a started `wachet serve` prints until it says where it listens.
async fn listening(mut child: Child) -> Serve {
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut printed = Vec::new();
    let base = tokio::time::timeout(WAIT, async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(addr) = line.strip_prefix("listening on ") {
                return addr.to_string();
            }
            printed.push(line);
        }
        panic!("wachet serve ended before listening: {printed:?}");
    })
    .await
    .expect("wachet serve listens");
    Serve {
        child,
        base,
        printed,
    }
}

impl Serve {
    async fn get(&self, path: &str, token: Option<&str>) -> (u16, Value) {
        self.call(reqwest::Method::GET, path, token, None).await
    }

    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut request = reqwest::Client::new().request(method, format!("{}{path}", self.base));
        if let Some(token) = token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body.to_string());
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    async fn login(&self, account: &Account) -> String {
        let body = json!({"userId": account.id, "apiKey": account.api_key});
        let (status, reply) = self
            .call(
                reqwest::Method::POST,
                "/thirdparty/v1/user/apilogin",
                None,
                Some(body),
            )
            .await;
        assert_eq!(status, 200, "{reply}");
        reply["token"].as_str().unwrap().to_string()
    }

    /// Sends SIGTERM and returns the exit code.
    async fn terminate(self) -> Option<i32> {
        terminate(self.child).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_start_prints_a_user_once_and_a_restart_keeps_everything() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("wachet.db");
    let first = serve(&db, &[]).await;
    assert_eq!(
        first.printed.len(),
        4,
        "exactly four lines: {:?}",
        first.printed
    );
    let admin = account(&first.printed);
    assert_eq!(admin.email, "admin@localhost");
    assert!(admin.password.len() >= 16 && admin.api_key.len() >= 43);

    // The e-mail login works with the printed password.
    let body = json!({"email": admin.email, "password": admin.password});
    let (status, reply) = first
        .call(
            reqwest::Method::POST,
            "/thirdparty/v1/user/login",
            None,
            Some(body),
        )
        .await;
    assert_eq!(status, 200, "{reply}");
    let token = first.login(&admin).await;
    let (status, folder) = first
        .call(
            reqwest::Method::POST,
            "/thirdparty/v1/folder",
            Some(&token),
            Some(json!({"name": "Shops"})),
        )
        .await;
    assert_eq!(status, 200);
    let task = json!({"name": "Tea", "url": "http://127.0.0.1:9/tea", "recurrenceInSeconds": 3600, "folderId": folder["id"]});
    let (status, task) = first
        .call(
            reqwest::Method::PUT,
            "/thirdparty/v1/task",
            Some(&token),
            Some(task),
        )
        .await;
    assert_eq!(status, 200, "{task}");

    // A second process adds a user to the same file while the service runs.
    let out = wachet()
        .args([
            "user",
            "add",
            "--email",
            "second@example.com",
            "--password",
            "s3cret pass",
            "--db",
        ])
        .arg(&db)
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(lines.len(), 4, "{lines:?}");
    let second = account(&lines);
    assert_eq!(second.password, "s3cret pass");
    let second_token = first.login(&second).await;
    let (_, listing) = first
        .get("/thirdparty/v1/folder/list", Some(&second_token))
        .await;
    assert_eq!(
        listing["subfolders"],
        json!([]),
        "the second user sees nothing of the first"
    );
    // The same address again is refused, and nothing is printed.
    let out = wachet()
        .args(["user", "add", "--email", "SECOND@example.com", "--db"])
        .arg(&db)
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("exists"));

    assert_eq!(
        first.terminate().await,
        Some(0),
        "SIGTERM ends the service cleanly"
    );

    // A restart on the same file prints no user and keeps the data and the tokens.
    let again = serve(&db, &[]).await;
    assert!(again.printed.is_empty(), "{:?}", again.printed);
    let path = format!("/thirdparty/v1/task/{}", task["id"].as_str().unwrap());
    // It is checked (before the restart or right after it; waited for, 10 s at most), and by
    // default the service watches no private address.
    let mut kept = Value::Null;
    for _ in 0..100 {
        let (status, reply) = again.get(&path, Some(&token)).await;
        assert_eq!(status, 200);
        kept = reply;
        // A monitor not checked yet has data with no value, no error and the least time.
        if kept["data"]["lastCheckTimestamp"] != "0001-01-01T00:00:00Z" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let error = kept["data"]["error"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        error.contains("loopback addresses are not allowed"),
        "{kept}"
    );
    kept["data"] = task["data"].clone();
    assert_eq!(kept, task);
    again.login(&second).await;
    assert_eq!(again.terminate().await, Some(0));
}

/// Asserts that `serve --help` names each flag and its variable.
async fn help_lists(flags: &[(&str, &str)]) {
    let out = wachet().args(["serve", "--help"]).output().await.unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    for (flag, var) in flags {
        assert!(
            help.contains(flag) && help.contains(var),
            "{flag} / {var} missing from:\n{help}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_come_from_flags_or_the_environment_and_help_lists_them() {
    help_lists(&[
        ("--listen", "WACHET_LISTEN"),
        ("--db", "WACHET_DB"),
        ("--allow-private-networks", "WACHET_ALLOW_PRIVATE_NETWORKS"),
        ("--proxy", "WACHET_PROXIES"),
        ("--min-recurrence", "WACHET_MIN_RECURRENCE"),
        ("--rate-limit", "WACHET_RATE_LIMIT"),
        ("--rate-burst", "WACHET_RATE_BURST"),
        ("--login-failures", "WACHET_LOGIN_FAILURES"),
        ("--checks-in-flight", "WACHET_CHECKS_IN_FLIGHT"),
        ("--per-host-concurrency", "WACHET_PER_HOST_CONCURRENCY"),
        ("--per-host-rps", "WACHET_PER_HOST_RPS"),
        (
            "--browser-checks-in-flight",
            "WACHET_BROWSER_CHECKS_IN_FLIGHT",
        ),
        ("--check-lease", "WACHET_CHECK_LEASE"),
        ("--heartbeat", "WACHET_HEARTBEAT"),
        ("--roles", "WACHET_ROLES"),
        ("--location", "WACHET_LOCATION"),
        ("--kinds", "WACHET_KINDS"),
        ("--smtp-host", "WACHET_SMTP_HOST"),
        ("--smtp-port", "WACHET_SMTP_PORT"),
        ("--smtp-tls", "WACHET_SMTP_TLS"),
        ("--smtp-user", "WACHET_SMTP_USER"),
        ("--smtp-password", "WACHET_SMTP_PASSWORD"),
        ("--smtp-from", "WACHET_SMTP_FROM"),
        ("--log-format", "WACHET_LOG_FORMAT"),
        ("--public-url", "WACHET_PUBLIC_URL"),
        ("--session-lifetime", "WACHET_SESSION_LIFETIME"),
        ("--session-idle", "WACHET_SESSION_IDLE"),
        ("--admin-email", "WACHET_ADMIN_EMAIL"),
    ])
    .await;

    // The same settings through the environment.
    let dir = tempfile::tempdir().unwrap();
    let child = wachet()
        .arg("serve")
        .env("WACHET_LISTEN", "127.0.0.1:0")
        .env("WACHET_DB", dir.path().join("env.db"))
        .env("WACHET_MIN_RECURRENCE", "5")
        .env("WACHET_ADMIN_EMAIL", "ops@example.com")
        .env(
            "WACHET_PROXIES",
            "us=http://127.0.0.1:3128,gb=http://127.0.0.1:3129",
        )
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let server = listening(child).await;
    assert!(dir.path().join("env.db").exists());
    let admin = account(&server.printed);
    assert_eq!(admin.email, "ops@example.com");
    let token = server.login(&admin).await;
    let body = json!({"url": "http://127.0.0.1:9/", "recurrenceInSeconds": 5, "proxies": [{"location": "gb"}]});
    let (status, reply) = server
        .call(
            reqwest::Method::PUT,
            "/thirdparty/v1/task",
            Some(&token),
            Some(body),
        )
        .await;
    assert_eq!(
        status, 200,
        "the minimum and the proxies come from the environment: {reply}"
    );
    let body = json!({"url": "http://127.0.0.1:9/", "recurrenceInSeconds": 4, "proxies": [{"location": "de"}]});
    let (status, reply) = server
        .call(
            reqwest::Method::PUT,
            "/thirdparty/v1/task",
            Some(&token),
            Some(body),
        )
        .await;
    assert_eq!(status, 400);
    assert!(reply["errors"]["recurrenceInSeconds"].is_array(), "{reply}");
    assert!(
        reply["errors"]
            .as_object()
            .unwrap()
            .keys()
            .any(|k| k.starts_with("proxies")),
        "{reply}"
    );
    assert_eq!(server.terminate().await, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_from_a_newer_wachet_is_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("wachet.db");
    let server = serve(&db, &[]).await;
    assert_eq!(server.terminate().await, Some(0));
    {
        use sqlx::Connection;
        let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite://{}", db.display()))
            .await
            .unwrap();
        sqlx::query(
            "INSERT INTO _sqlx_migrations (version, description, installed_on, success, checksum, execution_time) \
             VALUES (9999, 'from the future', CURRENT_TIMESTAMP, 1, x'00', 0)",
        )
        .execute(&mut conn)
        .await
        .unwrap();
        conn.close().await.unwrap();
    }
    let out = wachet()
        .args(["serve", "--listen", "127.0.0.1:0", "--db"])
        .arg(&db)
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("schema version 9999, newer than this wachet knows"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_database_path_is_a_clear_error() {
    let out = wachet()
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--db",
            "/nonexistent-dir/sub/wachet.db",
        ])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot open the database /nonexistent-dir/sub/wachet.db"),
        "{stderr}"
    );
}

/// Until the PostgreSQL store has history, schedule and outbox, a PostgreSQL URL is refused at
/// once, by every subcommand that opens the database, without showing the password.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_on_postgresql_checks_alerts_and_keeps_everything_across_a_restart() {
    use wachet::testing::{FixtureServer, Reply};
    let Some(url) = pg::database().await else {
        return;
    };
    let site = FixtureServer::builder()
        .counted("/price", |n| {
            Reply::html(if n < 4 {
                "<p>3.50 EUR</p>"
            } else {
                "<p>3.90 EUR</p>"
            })
        })
        .start()
        .await
        .unwrap();
    let flags = [
        "--allow-private-networks",
        "--min-recurrence",
        "1",
        "--confirm-after",
        "1",
    ];
    let db = Path::new(&url);
    let first = serve(db, &flags).await;
    let admin = account(&first.printed);
    let token = first.login(&admin).await;
    let body = json!({"url": site.url("/price"), "recurrenceInSeconds": 1,
                      "alerts": [{"type": "NotEq"}]});
    let (status, task) = first
        .call(
            reqwest::Method::PUT,
            "/thirdparty/v1/task",
            Some(&token),
            Some(body),
        )
        .await;
    assert_eq!(status, 200, "{task}");
    let id = task["id"].as_str().unwrap().to_string();
    // The change is checked, confirmed and notified, all through PostgreSQL.
    let notes = format!("/thirdparty/v1/notification/list?taskId={id}");
    let mut listed = Value::Null;
    for _ in 0..300 {
        let (status, reply) = first.get(&notes, Some(&token)).await;
        assert_eq!(status, 200, "{reply}");
        listed = reply["data"].clone();
        if listed.as_array().is_some_and(|n| !n.is_empty()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(listed[0]["type"], "NotEq", "{listed}");
    assert_eq!(listed[0]["current"], "3.90 EUR", "{listed}");
    assert_eq!(listed[0]["comparand"], "3.50 EUR", "{listed}");
    assert_eq!(first.terminate().await, Some(0));

    // A second process on the same database finds the user, the monitor and its history.
    let again = serve(db, &flags).await;
    assert!(
        again.printed.iter().all(|l| !l.starts_with("password")),
        "no new user"
    );
    let (status, history) = again
        .get(&format!("/thirdparty/v1/data/list/{id}"), Some(&token))
        .await;
    assert_eq!(status, 200, "{history}");
    let values: Vec<&str> = history["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["raw"].as_str())
        .collect();
    assert!(
        values.contains(&"3.90 EUR") && values.contains(&"3.50 EUR"),
        "{history}"
    );
    assert_eq!(again.terminate().await, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_a_request_in_flight_finish() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let server = serve(&dir.path().join("wachet.db"), &[]).await;
    let admin = account(&server.printed);
    let token = server.login(&admin).await;
    // A request whose body is still on its way when the signal arrives.
    let body =
        json!({"name": "in flight", "url": "http://127.0.0.1:9/", "recurrenceInSeconds": 3600})
            .to_string();
    let (head, tail) = body.split_at(body.len() / 2);
    let addr = server.base.trim_start_matches("http://").to_string();
    let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let request = format!(
        "PUT /thirdparty/v1/task HTTP/1.1\r\nHost: {addr}\r\nAuthorization: bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{head}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let pid = nix::unistd::Pid::from_raw(server.child.id().unwrap() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    stream.write_all(tail.as_bytes()).await.unwrap();
    let mut response = String::new();
    tokio::time::timeout(WAIT, stream.read_to_string(&mut response))
        .await
        .unwrap()
        .unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains("\"name\":\"in flight\""), "{response}");
    let mut child = server.child;
    let status = tokio::time::timeout(WAIT, child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.code(), Some(0));
    // No new connection is accepted after the signal.
    assert!(tokio::net::TcpStream::connect(&addr).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_killed_with_the_process_runs_again_after_a_restart() {
    use wachet::testing::{FixtureServer, Reply};
    let site = FixtureServer::builder()
        .reply(
            "/slow",
            Reply::html("<p>the value</p>").delay(Duration::from_secs(4)),
        )
        .start()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("wachet.db");
    let flags = ["--allow-private-networks", "--check-lease", "2"];
    let first = serve(&db, &flags).await;
    let admin = account(&first.printed);
    let token = first.login(&admin).await;
    let body = json!({"url": site.url("/slow"), "recurrenceInSeconds": 3600});
    let (status, task) = first
        .call(
            reqwest::Method::PUT,
            "/thirdparty/v1/task",
            Some(&token),
            Some(body),
        )
        .await;
    assert_eq!(status, 200, "{task}");
    // Kill the service with SIGKILL while its first check waits for the page.
    for _ in 0..200 {
        if site.hits("/slow") >= 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(site.hits("/slow"), 1);
    let mut child = first.child;
    child.kill().await.unwrap();

    // After a restart the lease runs out and the check runs again; nothing was lost.
    let again = serve(&db, &flags).await;
    let path = format!("/thirdparty/v1/data/list/{}", task["id"].as_str().unwrap());
    let mut entries = Value::Null;
    for _ in 0..300 {
        let (status, reply) = again.get(&path, Some(&token)).await;
        assert_eq!(status, 200, "the monitor and the token survived: {reply}");
        entries = reply["data"].clone();
        if entries.as_array().is_some_and(|e| !e.is_empty()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(entries[0]["raw"], "the value", "{entries}");
    assert!(site.hits("/slow") >= 2);
    assert_eq!(again.terminate().await, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_logs_carry_no_secret() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = wachet()
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--log-format",
            "json",
            "--db",
        ])
        .arg(dir.path().join("wachet.db"))
        .env("RUST_LOG", "debug,chromiumoxide=off,hyper=off,sqlx=debug")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read as it comes: debug logs fill a pipe's buffer, and a service blocked writing to a
    // full pipe could not exit.
    let mut stderr = child.stderr.take().unwrap();
    let log = tokio::spawn(async move {
        use tokio::io::AsyncReadExt;
        let mut log = String::new();
        stderr.read_to_string(&mut log).await.unwrap();
        log
    });
    let server = listening(child).await;
    let admin = account(&server.printed);
    let token = server.login(&admin).await;
    // A check (refused: private address) and a failed login, both logged at some level.
    let body = json!({"url": "http://127.0.0.1:9/", "recurrenceInSeconds": 3600});
    server
        .call(
            reqwest::Method::PUT,
            "/thirdparty/v1/task",
            Some(&token),
            Some(body),
        )
        .await;
    let wrong = json!({"email": admin.email, "password": "wrong"});
    server
        .call(
            reqwest::Method::POST,
            "/thirdparty/v1/user/login",
            None,
            Some(wrong),
        )
        .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(server.terminate().await, Some(0));
    let log = log.await.unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert!(!lines.is_empty());
    for line in &lines {
        let parsed: Value =
            serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON: {line}"));
        assert!(
            parsed["level"].is_string() && parsed["fields"].is_object(),
            "{line}"
        );
    }
    assert!(
        lines.iter().any(|l| l.contains("\"message\":\"checked\"")),
        "the check is logged"
    );
    for secret in [&token, &admin.api_key, &admin.password] {
        assert!(!log.contains(secret.as_str()), "a secret in the log");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_killed_with_the_process_is_delivered_after_a_restart() {
    use std::sync::{Arc, Mutex};
    use wachet::testing::{FixtureServer, Reply};
    let site = FixtureServer::builder()
        .page("/tea", "<p>3.50 EUR</p>")
        .start()
        .await
        .unwrap();
    // A webhook receiver that holds the first request open (the service is killed meanwhile)
    // and takes every later one; it keeps each request's delivery id.
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let recorded = seen.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: axum::http::HeaderMap| {
            let recorded = recorded.clone();
            async move {
                let id = headers
                    .get("x-wachet-delivery")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_string();
                let first = {
                    let mut seen = recorded.lock().unwrap();
                    seen.push(id);
                    seen.len() == 1
                };
                if first {
                    tokio::time::sleep(Duration::from_secs(120)).await;
                }
                axum::http::StatusCode::OK
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hook = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("wachet.db");
    // A try may take 3 s, so a delivery lost in a crash is claimed again 6 s after.
    let flags = [
        "--allow-private-networks",
        "--min-recurrence",
        "1",
        "--delivery-timeout",
        "3",
    ];
    let first = serve(&db, &flags).await;
    let admin = account(&first.printed);
    let token = first.login(&admin).await;
    let body = json!({"name": "Tea", "url": site.url("/tea"), "recurrenceInSeconds": 1,
                      "alerts": [{"type": "NotEq"}],
                      "notificationEndpoints": [{"type": "Webhook", "value": hook}]});
    let (status, task) = first
        .call(
            reqwest::Method::PUT,
            "/thirdparty/v1/task",
            Some(&token),
            Some(body),
        )
        .await;
    assert_eq!(status, 200, "{task}");
    let path = format!("/thirdparty/v1/data/list/{}", task["id"].as_str().unwrap());
    for _ in 0..100 {
        let (_, reply) = first.get(&path, Some(&token)).await;
        if reply["data"].as_array().is_some_and(|d| !d.is_empty()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    site.set("/tea", Reply::html("<p>3.90 EUR</p>"));
    // SIGKILL while the receiver holds the delivery's request open.
    for _ in 0..300 {
        if !seen.lock().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(seen.lock().unwrap().len(), 1, "the delivery is in flight");
    let mut child = first.child;
    child.kill().await.unwrap();
    child.wait().await.unwrap();
    // Nothing else changes the page: any later request is the same delivery again.
    let again = serve(&db, &flags).await;
    for _ in 0..300 {
        if seen.lock().unwrap().len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let ids = seen.lock().unwrap().clone();
    assert!(ids.len() >= 2, "retried after the restart: {ids:?}");
    assert!(!ids[0].is_empty() && ids[1] == ids[0], "{ids:?}");

    // The outbox says delivered, read from the database file itself.
    let pool = sqlx::SqlitePool::connect_with(
        sqlx::sqlite::SqliteConnectOptions::new()
            .filename(&db)
            .read_only(true),
    )
    .await
    .unwrap();
    let mut state = (String::new(), 0);
    for _ in 0..100 {
        state = sqlx::query_as("SELECT state, attempts FROM deliveries WHERE id = ?")
            .bind(&ids[0])
            .fetch_one(&pool)
            .await
            .unwrap();
        if state.0 == "delivered" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(state.0, "delivered", "{state:?}");
    // The notification itself survived the crash, once.
    let (_, notes) = again
        .call(
            reqwest::Method::GET,
            &format!(
                "/thirdparty/v1/notification/list?taskId={}",
                task["id"].as_str().unwrap()
            ),
            Some(&token),
            None,
        )
        .await;
    assert_eq!(notes["data"].as_array().map(Vec::len), Some(1), "{notes}");
    pool.close().await;
    assert_eq!(again.terminate().await, Some(0));
}

/// The resident memory of a process, in bytes (Linux `/proc`).
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb * 1024
}

/// Calls `GET /folder/list` as `token` every 100 ms until `stop`, and returns the slowest
/// answer. Every answer must be 200.
fn keep_listing(
    base: String,
    token: String,
    stop: tokio::sync::watch::Receiver<bool>,
) -> tokio::task::JoinHandle<(Duration, usize)> {
    tokio::spawn(async move {
        let client = reqwest::Client::builder().timeout(WAIT).build().unwrap();
        let (mut slowest, mut answered) = (Duration::ZERO, 0);
        while !*stop.borrow() {
            let started = std::time::Instant::now();
            let response = client
                .get(format!("{base}/thirdparty/v1/folder/list"))
                .header("authorization", format!("Bearer {token}"))
                .send()
                .await
                .expect("the other user's request is answered");
            assert_eq!(response.status(), 200);
            slowest = slowest.max(started.elapsed());
            answered += 1;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        (slowest, answered)
    })
}

/// Generous bound on an answer that takes milliseconds: only a blocked service breaks it.
const PROMPT: Duration = Duration::from_secs(3);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_monitors_are_refused_cheaply_while_others_are_served() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("wachet.db");
    let server = serve(&db, &["--checks-in-flight", "0"]).await;
    let attacker = server.login(&account(&server.printed)).await;
    let out = wachet()
        .args(["user", "add", "--email", "other@example.com", "--db"])
        .arg(&db)
        .output()
        .await
        .unwrap();
    assert!(out.status.success());
    let other = account(
        &String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect::<Vec<_>>(),
    );
    let other = server.login(&other).await;
    let pid = server.child.id().unwrap();
    let before = rss(pid);
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let lister = keep_listing(server.base.clone(), other, stopped);

    let portal = |filters: Vec<Value>| {
        json!({"name": "Hostile", "url": "https://example.com/", "jobType": "Portal",
               "recurrenceInSeconds": 0, "urlFilter": {"include": filters}})
    };
    let regexes = |n: usize, pattern: &str| -> Vec<Value> {
        (0..n)
            .map(|_| json!({"filter": pattern, "type": "Regex"}))
            .collect()
    };
    let put = |body: Value| {
        server.call(
            reqwest::Method::PUT,
            "/thirdparty/v1/task",
            Some(&attacker),
            Some(body),
        )
    };
    // The reproduction: 1,000 Unicode-class regexes, a 36 KB body.
    for _ in 0..5 {
        let started = std::time::Instant::now();
        let (status, reply) = put(portal(regexes(1000, r"\w{20}"))).await;
        assert_eq!(status, 400, "{}", reply["errors"]);
        let message = reply["errors"]["urlFilter"][0].as_str().unwrap();
        assert!(message.contains("at most 100 filters"), "{message}");
        assert!(started.elapsed() < PROMPT, "{:?}", started.elapsed());
    }
    // A hundred regexes, each just under the size cap of one: over the budget of all together.
    let (mut fits, mut too_big) = (1, 1000);
    while too_big - fits > 1 {
        let mid = (fits + too_big) / 2;
        match wachet::validate::compile_pattern(&format!(r"\w{{{mid}}}")) {
            Ok(_) => fits = mid,
            Err(_) => too_big = mid,
        }
    }
    let largest = format!(r"\w{{{fits}}}");
    for _ in 0..5 {
        let started = std::time::Instant::now();
        let (status, reply) = put(portal(regexes(100, &largest))).await;
        assert_eq!(status, 400, "{}", reply["errors"]);
        let message = reply["errors"]["urlFilter"][0].as_str().unwrap();
        assert!(
            message.contains("too large once compiled together"),
            "{message}"
        );
        assert!(started.elapsed() < PROMPT, "{:?}", started.elapsed());
    }
    // One of them alone is fine.
    let (status, reply) = put(portal(regexes(1, &largest))).await;
    assert_eq!(status, 200, "{}", reply["errors"]);
    // 1 MiB of alerts is over the body limit; just under it, over the count of alerts.
    let alerts = |n: usize| -> Value {
        json!({"name": "Alerts", "url": "https://example.com/", "recurrenceInSeconds": 0,
               "alerts": (0..n).map(|_| json!({"type": "Contains", "value": "x"})).collect::<Vec<_>>()})
    };
    let (status, reply) = put(alerts(40_000)).await;
    assert_eq!(status, 413, "{}", reply["errors"]);
    assert!(
        reply["detail"].as_str().unwrap().contains("1 MiB"),
        "{reply}"
    );
    let (status, reply) = put(alerts(30_000)).await;
    assert_eq!(status, 400, "{}", reply["errors"]);
    assert_eq!(reply["errors"]["alerts"][0], "at most 50 alerts", "{reply}");

    let after = rss(pid);
    let _ = stop.send(true);
    let (slowest, answered) = lister.await.unwrap();
    eprintln!(
        "rss {} MB -> {} MB; other user's slowest of {answered} answers: {slowest:?}",
        before >> 20,
        after >> 20
    );
    assert!(
        after < before + (200 << 20),
        "memory grew from {} MB to {} MB",
        before >> 20,
        after >> 20
    );
    assert!(answered > 0);
    assert!(slowest < PROMPT, "another user waited {slowest:?}");
    assert_eq!(server.terminate().await, Some(0));
}

/// Opens a connection from `from` to `to`.
async fn connect_from(from: &str, to: std::net::SocketAddr) -> tokio::net::TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket
        .bind(std::net::SocketAddr::new(from.parse().unwrap(), 0))
        .unwrap();
    tokio::time::timeout(WAIT, socket.connect(to))
        .await
        .expect("connects")
        .unwrap()
}

/// Sends `first` at once, then `trickle` one byte every `every`, until the server closes the
/// connection; returns how long it stayed open, and what the server answered meanwhile.
async fn trickle(
    mut stream: tokio::net::TcpStream,
    first: &[u8],
    trickle: &[u8],
    every: Duration,
) -> (Duration, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let opened = std::time::Instant::now();
    let (mut read, mut write) = stream.split();
    let mut answer = Vec::new();
    let reading = async {
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = read.read(&mut buf).await {
            answer.extend_from_slice(&buf[..n]);
        }
    };
    let writing = async {
        if write.write_all(first).await.is_err() {
            return;
        }
        for byte in trickle.iter().cycle() {
            tokio::time::sleep(every).await;
            if write.write_all(&[*byte]).await.is_err() {
                return;
            }
        }
        // Nothing to trickle: wait for the server to close.
        std::future::pending::<()>().await;
    };
    tokio::select! {
        () = reading => {}
        () = writing => {}
    }
    (
        opened.elapsed(),
        String::from_utf8_lossy(&answer).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_and_greedy_clients_are_cut_off_while_others_are_served() {
    const HEAD: u64 = 2;
    const BODY: u64 = 2;
    const IDLE: u64 = 3;
    const PER_CLIENT: usize = 100;
    // What the watchdog's tick and a loaded machine may add to a limit.
    const MARGIN: Duration = Duration::from_secs(5);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("wachet.db");
    let server = serve(
        &db,
        &[
            "--checks-in-flight",
            "0",
            "--header-read-timeout",
            &HEAD.to_string(),
            "--body-read-timeout",
            &BODY.to_string(),
            "--idle-timeout",
            &IDLE.to_string(),
            "--max-connections-per-client",
            &PER_CLIENT.to_string(),
        ],
    )
    .await;
    let token = server.login(&account(&server.printed)).await;
    let addr: std::net::SocketAddr = server.base.trim_start_matches("http://").parse().unwrap();
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let lister = keep_listing(server.base.clone(), token, stopped);

    // 1,000 connections from 127.0.0.2, each trickling a request head a byte a second.
    let heads: Vec<_> = (0..1000)
        .map(|_| {
            tokio::spawn(async move {
                let stream = connect_from("127.0.0.2", addr).await;
                trickle(
                    stream,
                    b"G",
                    b"ET /thirdparty/v1/folder/list HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaa",
                    Duration::from_secs(1),
                )
                .await
            })
        })
        .collect();
    // A connection from 127.0.0.3 that asks once, then keeps the connection idle.
    let idle = tokio::spawn(async move {
        let stream = connect_from("127.0.0.3", addr).await;
        trickle(
            stream,
            b"GET /thirdparty/v1/openapi.json HTTP/1.1\r\nHost: localhost\r\n\r\n",
            b"",
            Duration::from_secs(3600),
        )
        .await
    });
    // A body trickled a byte at a time, from 127.0.0.4.
    let body = tokio::spawn(async move {
        let stream = connect_from("127.0.0.4", addr).await;
        trickle(
            stream,
            b"POST /thirdparty/v1/user/apilogin HTTP/1.1\r\nHost: localhost\r\n\
              Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{",
            b" ",
            Duration::from_millis(300),
        )
        .await
    });

    let bound = Duration::from_secs(HEAD) + MARGIN;
    let mut admitted = 0;
    for head in heads {
        let (open, answer) = tokio::time::timeout(bound + WAIT, head)
            .await
            .expect("a trickling head is cut off")
            .unwrap();
        assert!(open < bound, "a trickling head stayed open {open:?}");
        assert!(answer.is_empty(), "{answer}");
        // Refused connections close at once; admitted ones when the head timeout strikes.
        if open >= Duration::from_secs(HEAD) {
            admitted += 1;
        }
    }
    assert!(
        (1..=PER_CLIENT).contains(&admitted),
        "{admitted} connections of one client were held open"
    );
    let (open, answer) = tokio::time::timeout(WAIT, idle).await.unwrap().unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(
        open >= Duration::from_secs(IDLE) && open < Duration::from_secs(IDLE) + MARGIN,
        "an idle connection stayed open {open:?}"
    );
    let (open, answer) = tokio::time::timeout(WAIT, body).await.unwrap().unwrap();
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("did not arrive within 2 s"), "{answer}");
    assert!(
        open < Duration::from_secs(BODY) + MARGIN,
        "a trickled body held its connection {open:?}"
    );

    let _ = stop.send(true);
    let (slowest, answered) = lister.await.unwrap();
    eprintln!(
        "admitted {admitted}; the normal client's slowest of {answered} answers: {slowest:?}"
    );
    assert!(answered > 0);
    assert!(slowest < PROMPT, "the normal client waited {slowest:?}");
    assert_eq!(server.terminate().await, Some(0));
}

/// The real binary run through `sh` with the umask most systems have (022), under which a file
/// created without an explicit mode is world-readable.
fn wachet_with_umask_022(args: &[&str], db: &Path) -> Command {
    let mut command = Command::new("sh");
    command
        .args(["-c", "umask 022 && exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_wachet"))
        .args(args)
        .arg("--db")
        .arg(db)
        .kill_on_drop(true);
    command
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .unwrap_or_else(|err| panic!("{}: {err}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_database_and_its_wal_and_shm_are_readable_by_their_owner_only() {
    let dir = tempfile::tempdir().unwrap();
    let with_suffix = |db: &Path, suffix: &str| {
        let mut path = db.as_os_str().to_owned();
        path.push(suffix);
        std::path::PathBuf::from(path)
    };

    // `serve` on a fresh path: the three files exist while it runs.
    let served = dir.path().join("served.db");
    let child = wachet_with_umask_022(&["serve", "--listen", "127.0.0.1:0"], &served)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let serve = listening(child).await;
    let token = serve.login(&account(&serve.printed)).await;
    let (status, _) = serve
        .call(
            reqwest::Method::PUT,
            "/thirdparty/v1/task",
            Some(&token),
            Some(json!({"name": "a write", "url": "https://example.com/"})),
        )
        .await;
    assert_eq!(status, 200);
    for suffix in ["", "-wal", "-shm"] {
        let file = with_suffix(&served, suffix);
        assert_eq!(mode(&file), 0o600, "{}", file.display());
    }
    assert_eq!(serve.terminate().await, Some(0));

    // `user add` on a fresh path.
    let added = dir.path().join("added.db");
    let output = wachet_with_umask_022(&["user", "add", "--email", "a@example.com"], &added)
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    for suffix in ["", "-wal", "-shm"] {
        let file = with_suffix(&added, suffix);
        if suffix.is_empty() || file.exists() {
            assert_eq!(mode(&file), 0o600, "{}", file.display());
        }
    }

    // A database made world-readable before is narrowed on the next open.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&added, std::fs::Permissions::from_mode(0o644)).unwrap();
    let output = wachet_with_umask_022(&["user", "add", "--email", "b@example.com"], &added)
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert_eq!(mode(&added), 0o600);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_quotas_per_user_come_from_flags_or_the_environment() {
    help_lists(&[
        ("--max-monitors-per-user", "WACHET_MAX_MONITORS_PER_USER"),
        (
            "--max-stored-bytes-per-user",
            "WACHET_MAX_STORED_BYTES_PER_USER",
        ),
        ("--max-value-bytes", "WACHET_MAX_VALUE_BYTES"),
        (
            "--max-notifications-per-hour",
            "WACHET_MAX_NOTIFICATIONS_PER_HOUR",
        ),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let child = wachet()
        .arg("serve")
        .env("WACHET_LISTEN", "127.0.0.1:0")
        .env("WACHET_DB", dir.path().join("quota.db"))
        .env("WACHET_MAX_MONITORS_PER_USER", "1")
        .env("WACHET_CHECKS_IN_FLIGHT", "0")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let server = listening(child).await;
    let token = server.login(&account(&server.printed)).await;
    let body = json!({"url": "http://127.0.0.1:9/", "recurrenceInSeconds": 3600});
    let create = || {
        server.call(
            reqwest::Method::PUT,
            "/thirdparty/v1/task",
            Some(&token),
            Some(body.clone()),
        )
    };
    let (status, reply) = create().await;
    assert_eq!(status, 200, "{reply}");
    let (status, reply) = create().await;
    assert_eq!(status, 400, "{reply}");
    assert!(
        reply["errors"]["maxMonitorsPerUser"][0]
            .as_str()
            .unwrap_or("")
            .contains("the most this server allows a user (1)"),
        "{reply}"
    );
    assert_eq!(server.terminate().await, Some(0));
}

/// The start-up lines: where the web interface is, at the listening address or the public URL,
/// and the interface answers there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_start_up_lines_say_where_the_web_interface_is() {
    let dir = tempfile::tempdir().unwrap();
    for (public, expected) in [
        (None, None),
        (
            Some("https://Watch.Example.com/"),
            Some("https://watch.example.com/"),
        ),
    ] {
        let mut command = wachet();
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--db"])
            .arg(dir.path().join("wachet.db"))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        if let Some(url) = public {
            command.env("WACHET_PUBLIC_URL", url);
        }
        let mut child = command.spawn().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let (listening, interface) = tokio::time::timeout(WAIT, async {
            let mut listening = None;
            while let Some(line) = lines.next_line().await.unwrap() {
                if let Some(addr) = line.strip_prefix("listening on ") {
                    listening = Some(addr.to_string());
                } else if let Some(url) = line.strip_prefix("web interface: ") {
                    return (listening.expect("listening first"), url.to_string());
                }
            }
            panic!("no web interface line");
        })
        .await
        .expect("wachet serve starts");
        let expected = expected.map_or_else(|| format!("{listening}/"), str::to_string);
        assert_eq!(interface, expected);
        let page = reqwest::get(format!("{listening}/signin")).await.unwrap();
        assert_eq!(page.status(), 200);
        assert!(page.text().await.unwrap().contains("Sign in"));
        let serve = Serve {
            child,
            base: listening,
            printed: Vec::new(),
        };
        assert_eq!(serve.terminate().await, Some(0));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_password_gives_a_new_password_and_ends_the_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("wachet.db");
    let server = serve(&db, &[]).await;
    let first = account(&server.printed);
    let token = server.login(&first).await;
    let password_login = |password: String| {
        let server = &server;
        let email = first.email.clone();
        async move {
            server
                .call(
                    reqwest::Method::POST,
                    "/thirdparty/v1/user/login",
                    None,
                    Some(json!({"email": email, "password": password})),
                )
                .await
                .0
        }
    };
    assert_eq!(password_login(first.password.clone()).await, 200);

    // A chosen password, while the service runs on the same file.
    let out = wachet()
        .args(["user", "password", "--email", &first.email.to_uppercase()])
        .args(["--password", "a new passphrase", "--db"])
        .arg(&db)
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "password: a new passphrase"
    );
    assert_eq!(password_login("a new passphrase".into()).await, 200);
    assert_eq!(password_login(first.password.clone()).await, 401);
    // Every token issued before ended (the service may trust a cached owner for 5 s).
    let mut status = 0;
    for _ in 0..100 {
        (status, _) = server.get("/thirdparty/v1/folder/list", Some(&token)).await;
        if status == 401 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(status, 401, "the old token still works");

    // A random one, printed once.
    let out = wachet()
        .args(["user", "password", "--email", &first.email, "--db"])
        .arg(&db)
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let printed = String::from_utf8(out.stdout).unwrap();
    let random = printed
        .trim()
        .strip_prefix("password: ")
        .unwrap()
        .to_string();
    assert!(random.len() >= 16, "{printed}");
    assert_eq!(password_login(random).await, 200);

    // An unknown address and a short password are refused, and nothing is printed.
    for args in [
        ["--email", "nobody@example.com", "--password", "long enough"],
        ["--email", first.email.as_str(), "--password", "short"],
    ] {
        let out = wachet()
            .args(["user", "password"])
            .args(args)
            .arg("--db")
            .arg(&db)
            .output()
            .await
            .unwrap();
        assert!(!out.status.success(), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
        let error = String::from_utf8_lossy(&out.stderr);
        assert!(
            error.contains("no user has this e-mail address") || error.contains("8 to 1024"),
            "{error}"
        );
    }
    assert_eq!(server.terminate().await, Some(0));
}

/// Waits until `path` of `site` was requested `n` times; false after [`WAIT`].
async fn hit(site: &wachet::testing::FixtureServer, path: &str, n: usize) -> bool {
    for _ in 0..300 {
        if site.hits(path) >= n {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

impl Serve {
    /// Creates a monitor of `url` checked hourly; its id. A Portal monitor: it fetches its one
    /// page once a check (a new SinglePage monitor's first check samples its page again).
    async fn monitor(&self, token: &str, url: &str) -> String {
        let body = json!({"url": url, "recurrenceInSeconds": 3600, "jobType": "Portal",
                          "crawlingDepth": 1});
        let (status, task) = self
            .call(
                reqwest::Method::PUT,
                "/thirdparty/v1/task",
                Some(token),
                Some(body),
            )
            .await;
        assert_eq!(status, 200, "{task}");
        task["id"].as_str().unwrap().to_string()
    }

    /// The values and errors of a monitor's history, newest first, once it has one.
    async fn history(&self, token: &str, id: &str) -> Vec<Value> {
        let path = format!("/thirdparty/v1/data/list/{id}");
        for _ in 0..300 {
            let (status, reply) = self.get(&path, Some(token)).await;
            assert_eq!(status, 200, "{reply}");
            if let Some(entries) = reply["data"].as_array().filter(|e| !e.is_empty()) {
                return entries.clone();
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("no entry for {id}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_on_postgresql_keep_their_checks_while_alive_and_hand_them_over_when_they_die_or_stop()
 {
    use wachet::testing::{FixtureServer, Reply};
    let Some(url) = pg::database().await else {
        return;
    };
    let site = FixtureServer::builder()
        .reply(
            "/slow",
            Reply::html("<p>slow</p>").delay(Duration::from_secs(5)),
        )
        .reply(
            "/hang",
            Reply::html("<p>hang</p>").delay(Duration::from_secs(60)),
        )
        .reply(
            "/held",
            Reply::html("<p>held</p>").delay(Duration::from_secs(60)),
        )
        .start()
        .await
        .unwrap();
    let db = Path::new(&url);
    // Leases of 2 s, renewed by beats: a check longer than its lease stays with a live worker.
    let short = [
        "--allow-private-networks",
        "--check-lease",
        "2",
        "--heartbeat",
        "1",
    ];
    let a = serve(db, &short).await;
    let admin = account(&a.printed);
    let token = a.login(&admin).await;
    let slow = a.monitor(&token, &site.url("/slow")).await;
    let hang = a.monitor(&token, &site.url("/hang")).await;
    assert!(hit(&site, "/slow", 1).await && hit(&site, "/hang", 1).await);
    let b = serve(db, &short).await;
    assert!(b.history(&token, &slow).await[0]["error"].is_null());
    assert_eq!(
        site.hits("/slow"),
        1,
        "the live worker kept its 5 s check under a 2 s lease"
    );
    assert_eq!(site.hits("/hang"), 1, "and its hanging one");

    // A dies with its check of /hang in flight: B takes it over once the lease runs out, long
    // before A's check would have timed out.
    let mut dead = a.child;
    dead.kill().await.unwrap();
    assert!(
        hit(&site, "/hang", 2).await,
        "the dead worker's check was taken over"
    );
    let _ = hang;

    assert_eq!(b.terminate().await, Some(0));

    // On a database of their own (every worker of one database has the same lease): C holds a
    // check under a lease of two minutes; on SIGTERM it hands it back at once, so D checks it
    // long before that lease would have run out.
    let Some(url) = pg::database().await else {
        return;
    };
    let db = Path::new(&url);
    let long = ["--allow-private-networks", "--check-lease", "120"];
    let c = serve(db, &long).await;
    let token = c.login(&account(&c.printed)).await;
    c.monitor(&token, &site.url("/held")).await;
    assert!(hit(&site, "/held", 1).await);
    let d = serve(db, &long).await;
    assert_eq!(c.terminate().await, Some(0));
    assert!(
        hit(&site, "/held", 2).await,
        "the stopped worker's check was handed over"
    );
    assert_eq!(d.terminate().await, Some(0));
}

/// Sends SIGTERM to `child` and returns its exit code.
async fn terminate(mut child: Child) -> Option<i32> {
    let pid = nix::unistd::Pid::from_raw(child.id().unwrap() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let status = tokio::time::timeout(WAIT, child.wait())
        .await
        .expect("exits after SIGTERM")
        .unwrap();
    status.code()
}

/// Starts `wachet serve` with `extra` flags that leave the API out; returns once it runs.
async fn serve_without_api(db: &Path, extra: &[&str]) -> Child {
    let mut child = wachet()
        .args(["serve", "--db"])
        .arg(db)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    tokio::time::timeout(WAIT, async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.starts_with("running without the api") {
                return;
            }
        }
        panic!("wachet serve ended before running");
    })
    .await
    .expect("wachet serve runs");
    child
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roles_split_the_api_from_workers_and_a_location_is_checked_only_by_its_workers() {
    use wachet::testing::{FixtureServer, Reply};
    let Some(url) = pg::database().await else {
        return;
    };
    let site = FixtureServer::builder()
        .reply("/gb", Reply::html("<p>from gb</p>"))
        .reply("/anywhere", Reply::html("<p>anywhere</p>"))
        .start()
        .await
        .unwrap();
    let db = Path::new(&url);
    let api = serve(db, &["--roles", "api", "--allow-private-networks"]).await;
    let admin = account(&api.printed);
    let token = api.login(&admin).await;
    let in_britain = json!({"url": site.url("/gb"), "recurrenceInSeconds": 3600, "location": "Gb"});
    let create = || {
        api.call(
            reqwest::Method::PUT,
            "/thirdparty/v1/task",
            Some(&token),
            Some(in_britain.clone()),
        )
    };
    // No worker checks from Great Britain yet, and no proxy serves it.
    let (status, refused) = create().await;
    assert_eq!(status, 400, "{refused}");
    assert!(refused.to_string().contains("location"), "{refused}");

    let gb = serve_without_api(
        db,
        &[
            "--roles",
            "worker",
            "--location",
            "gb",
            "--allow-private-networks",
        ],
    )
    .await;
    let (status, task) = create().await;
    assert_eq!(status, 200, "a live worker checks from there: {task}");
    let anywhere = api.monitor(&token, &site.url("/anywhere")).await;
    let id = task["id"].as_str().unwrap();
    assert_eq!(api.history(&token, id).await[0]["raw"], "from gb");
    // The API process checks nothing, and the worker in Great Britain only its own location's.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        site.hits("/anywhere"),
        0,
        "nobody checks the default location"
    );
    let path = format!("/thirdparty/v1/task/{id}");
    let (_, shown) = api.get(&path, Some(&token)).await;
    assert!(shown.get("locationNotice").is_none(), "{shown}");
    // Once its only worker stopped, the monitor says it is not checked.
    assert_eq!(terminate(gb).await, Some(0));
    let (status, shown) = api.get(&path, Some(&token)).await;
    assert_eq!(status, 200, "{shown}");
    let notice = shown["locationNotice"].as_str().unwrap_or_default();
    assert!(notice.contains("location Gb"), "{shown}");
    // A listing of its folder says so too, and of the monitor checked anywhere, nothing.
    let (status, listed) = api.get("/thirdparty/v1/folder/list", Some(&token)).await;
    assert_eq!(status, 200, "{listed}");
    let tasks = listed["tasks"].as_array().cloned().unwrap_or_default();
    let listed_notice = |id: &str| {
        tasks
            .iter()
            .find(|t| t["id"] == id)
            .map(|t| t["locationNotice"].clone())
    };
    assert_eq!(
        listed_notice(id),
        Some(shown["locationNotice"].clone()),
        "{listed}"
    );
    let anywhere_id = anywhere.as_str();
    assert_eq!(
        listed_notice(anywhere_id),
        Some(serde_json::Value::Null),
        "{listed}"
    );
    assert_eq!(api.terminate().await, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_workers_together_keep_the_per_host_limit_at_the_host() {
    use wachet::testing::{FixtureServer, Reply};
    let Some(url) = pg::database().await else {
        return;
    };
    let site = FixtureServer::builder()
        .reply(
            "/page",
            Reply::html("<p>a page</p>").delay(Duration::from_millis(50)),
        )
        .start()
        .await
        .unwrap();
    let db = Path::new(&url);
    let api = serve(db, &["--roles", "api", "--allow-private-networks"]).await;
    let admin = account(&api.printed);
    let token = api.login(&admin).await;
    // Each worker alone allows 2 requests in flight at a host; three of them, had they all
    // taken the host's monitors, would send up to 6.
    let flags = [
        "--roles",
        "worker",
        "--allow-private-networks",
        "--per-host-concurrency",
        "2",
        "--per-host-rps",
        "0",
        "--check-lease",
        "2",
        "--heartbeat",
        "1",
    ];
    let mut workers = Vec::new();
    for _ in 0..3 {
        workers.push(serve_without_api(db, &flags).await);
    }
    // The buckets settle among the three (a lease, 2 s, for those handed back) before the
    // monitors come.
    tokio::time::sleep(Duration::from_secs(5)).await;
    // The target figure: 500 monitors of one host, made at once with the bulk form (Portal
    // monitors, one request a check).
    let monitors = 500;
    let bulk: Vec<Value> = (0..monitors)
        .map(|i| {
            json!({"url": site.url(&format!("/page?{i}")), "recurrenceInSeconds": 3600,
                   "jobType": "Portal", "crawlingDepth": 1})
        })
        .collect();
    let (status, made) = api
        .call(
            reqwest::Method::PUT,
            "/thirdparty/v1/tasks",
            Some(&token),
            Some(Value::Array(bulk)),
        )
        .await;
    assert_eq!(status, 200, "{made}");
    assert!(
        hit(&site, "/page", monitors).await,
        "every monitor is checked"
    );
    assert!(
        site.peak_in_flight() <= 2,
        "at most 2 requests at once at the host, not {}",
        site.peak_in_flight()
    );
    for worker in workers {
        assert_eq!(terminate(worker).await, Some(0));
    }
    assert_eq!(api.terminate().await, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_that_goes_away_for_a_while_loses_no_check_and_the_service_recovers() {
    use sqlx::Connection;
    use wachet::testing::{FixtureServer, Reply};
    let Some(url) = pg::database().await else {
        return;
    };
    let site = FixtureServer::builder()
        .reply("/price", Reply::html("<p>3.50 EUR</p>"))
        .start()
        .await
        .unwrap();
    let db = Path::new(&url);
    // A check whose record the outage refused runs again once its lease (4 s) ran out.
    let flags = [
        "--allow-private-networks",
        "--min-recurrence",
        "1",
        "--check-lease",
        "4",
    ];
    let service = serve(db, &flags).await;
    let token = service.login(&account(&service.printed)).await;
    let body = json!({"url": site.url("/price"), "recurrenceInSeconds": 1});
    let (status, task) = service
        .call(
            reqwest::Method::PUT,
            "/thirdparty/v1/task",
            Some(&token),
            Some(body),
        )
        .await;
    assert_eq!(status, 200, "{task}");
    let id = task["id"].as_str().unwrap().to_string();
    assert!(!service.history(&token, &id).await.is_empty());

    // The database goes away: every connection of the service is cut and no new one is let in,
    // for three seconds.
    let options: sqlx::postgres::PgConnectOptions = url.parse().unwrap();
    let name = options.get_database().unwrap().to_string();
    // From another database of the cluster: a database cannot shut itself.
    let mut admin = sqlx::PgConnection::connect_with(&options.database("postgres"))
        .await
        .unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "ALTER DATABASE \"{name}\" ALLOW_CONNECTIONS false"
    )))
    .execute(&mut admin)
    .await
    .unwrap();
    let path = format!("/thirdparty/v1/data/list/{id}");
    let mut refused = Vec::new();
    for _ in 0..6 {
        sqlx::query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1")
            .bind(&name)
            .execute(&mut admin)
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(500)).await;
        let (status, _) = service.get(&path, Some(&token)).await;
        refused.push(status);
    }
    assert!(
        refused.iter().any(|status| *status >= 500),
        "the outage reached the service: {refused:?}"
    );
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "ALTER DATABASE \"{name}\" ALLOW_CONNECTIONS true"
    )))
    .execute(&mut admin)
    .await
    .unwrap();
    let back_at = chrono::Utc::now();

    // The service is still there, answers, and checks again: an entry newer than the outage.
    let mut after = 0;
    for _ in 0..300 {
        let (status, reply) = service.get(&path, Some(&token)).await;
        if status == 200 {
            after = reply["data"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| {
                    e["lastCheckTimestamp"]
                        .as_str()
                        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                        .is_some_and(|t| t > back_at)
                })
                .count();
            if after >= 2 {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(after >= 2, "checks go on once the database is back");
    assert_eq!(service.terminate().await, Some(0), "no crash");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_migration_killed_half_way_is_run_again_and_finishes() {
    use sqlx::Connection;
    let Some(url) = pg::database().await else {
        return;
    };
    let db = Path::new(&url);
    // A database at the latest schema, taken back to before the folder counts (migration 4).
    let first = serve(db, &["--roles", "api"]).await;
    let token = first.login(&account(&first.printed)).await;
    let (status, folder) = first
        .call(
            reqwest::Method::POST,
            "/thirdparty/v1/folder",
            Some(&token),
            Some(json!({"name": "Shops"})),
        )
        .await;
    assert_eq!(status, 200, "{folder}");
    assert_eq!(first.terminate().await, Some(0));
    let mut admin = sqlx::PgConnection::connect(&url).await.unwrap();
    for statement in [
        "DROP TRIGGER tasks_counted_in ON tasks",
        "DROP TRIGGER tasks_counted_again ON tasks",
        "DROP FUNCTION tasks_count_folders()",
        "ALTER TABLE folders DROP COLUMN own_count, DROP COLUMN own_failed, \
         DROP COLUMN own_paused",
        "DELETE FROM _sqlx_migrations WHERE version = 4",
    ] {
        sqlx::query(statement).execute(&mut admin).await.unwrap();
    }
    // The migration is held half way (its ALTER TABLE waits for a lock another connection
    // holds) and its process killed there.
    let mut blocker = sqlx::PgConnection::connect(&url).await.unwrap();
    let mut held = blocker.begin().await.unwrap();
    sqlx::query("LOCK TABLE folders IN ACCESS EXCLUSIVE MODE")
        .execute(&mut *held)
        .await
        .unwrap();
    let mut killed = wachet()
        .args(["serve", "--listen", "127.0.0.1:0", "--db", &url])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut waiting = false;
    for _ in 0..300 {
        let (n,): (i64,) = sqlx::query_as(
            "SELECT count(*) FROM pg_locks WHERE relation = 'folders'::regclass AND NOT granted",
        )
        .fetch_one(&mut admin)
        .await
        .unwrap();
        if n > 0 {
            waiting = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(waiting, "the migration reached the locked table");
    killed.kill().await.unwrap();
    let _ = killed.wait().await;
    held.rollback().await.unwrap();

    // Run again, it finishes: the service starts, and the folder has its counts.
    let again = serve(db, &["--roles", "api"]).await;
    let (status, listing) = again.get("/thirdparty/v1/folder/list", Some(&token)).await;
    assert_eq!(status, 200, "{listing}");
    assert_eq!(listing["subfolders"][0]["count"], 0, "{listing}");
    let (done,): (i64,) =
        sqlx::query_as("SELECT count(*) FROM _sqlx_migrations WHERE version = 4 AND success")
            .fetch_one(&mut admin)
            .await
            .unwrap();
    assert_eq!(done, 1, "migration 4 is recorded as done");
    assert_eq!(again.terminate().await, Some(0));
}

/// The text of the ~100 KB page `page` a delta-history test serves to its `n`-th request: the
/// same 15,000 made-up words each time but for one, `changed{n}`, at a place that moves with
/// `n`, so every check stores a new value that differs from the others by a word or two. Each
/// page starts with its own word: a value several monitors share stays whole.
fn one_word_changed(page: usize, n: usize) -> String {
    let mut x: u64 = 21;
    let mut words: Vec<String> = (0..15_000)
        .map(|_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let len = 3 + (x >> 60) as usize % 6;
            (0..len)
                .map(|i| char::from(b'a' + ((x >> (8 + 5 * i)) % 26) as u8))
                .collect()
        })
        .collect();
    let at = n.wrapping_mul(7_919) % words.len();
    words[at] = format!("changed{n}");
    format!("page{page} {}", words.join(" "))
}

/// How many stored values are deltas (codec 2) in the service's database.
async fn deltas_stored(db: &Path) -> i64 {
    use sqlx::Connection;
    let sql = "SELECT count(*) FROM contents WHERE codec = 2";
    let db = db.to_string_lossy();
    let (count,): (i64,) = if db.starts_with("postgres") {
        let mut conn = sqlx::PgConnection::connect(&db).await.unwrap();
        let count = sqlx::query_as(sql).fetch_one(&mut conn).await.unwrap();
        conn.close().await.unwrap();
        count
    } else {
        let options = sqlx::sqlite::SqliteConnectOptions::new()
            .filename(db.as_ref())
            .read_only(true);
        let mut conn = sqlx::SqliteConnection::connect_with(&options)
            .await
            .unwrap();
        let count = sqlx::query_as(sql).fetch_one(&mut conn).await.unwrap();
        conn.close().await.unwrap();
        count
    };
    count
}

/// Every entry of each monitor in `ids` (the `i`-th watching page `i`) as the API lists it
/// (monitor, check time), with its value; each value is checked to be exactly the text the page
/// server sent to the request its `changed{n}` word names.
async fn delta_entries(
    serve: &Serve,
    token: &str,
    ids: &[String],
) -> std::collections::BTreeMap<(String, String), String> {
    let mut entries = std::collections::BTreeMap::new();
    for (page, id) in ids.iter().enumerate() {
        let path = format!("/thirdparty/v1/data/list/{id}?count=500");
        let (status, reply) = serve.get(&path, Some(token)).await;
        assert_eq!(status, 200, "{reply}");
        assert!(reply["continuationToken"].is_null(), "one page holds all");
        for entry in reply["data"].as_array().unwrap() {
            let at = entry["lastCheckTimestamp"].as_str().unwrap().to_string();
            let Some(raw) = entry["raw"].as_str() else {
                panic!("a check of a served page failed: {entry}");
            };
            let n: usize = raw
                .split(' ')
                .find_map(|w| w.strip_prefix("changed"))
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("{id} {at}: a value with no changed word"));
            assert!(
                raw == one_word_changed(page, n),
                "{id} {at}: the value does not read back as request {n}'s page ({} bytes)",
                raw.len()
            );
            entries.insert((id.clone(), at), raw.to_string());
        }
    }
    entries
}

/// Bad input for delta history: ~100 KB pages whose one word changes on every
/// check, many of their values stored as deltas, and the process killed with SIGKILL while
/// checks are being written. Every entry the API listed before the kill reads back whole and
/// exact after the restart, as the page server sent it.
async fn delta_history_killed_mid_run_reads_back_whole(db: &Path) {
    use wachet::testing::{FixtureServer, Reply};
    const MONITORS: usize = 3;
    const DELTAS: i64 = 40;
    let mut site = FixtureServer::builder();
    for i in 0..MONITORS {
        site = site.counted(format!("/large{i}"), move |n| {
            Reply::html(format!(
                "<html><body><p>{}</p></body></html>",
                one_word_changed(i, n)
            ))
        });
    }
    let site = site.start().await.unwrap();
    let flags = [
        "--allow-private-networks",
        "--min-recurrence",
        "1",
        "--confirm-after",
        "1",
        "--per-host-rps",
        "0",
        "--per-host-concurrency",
        "0",
        // A first check learns the noise of a page that changes on every request: in a debug
        // build on a busy machine that takes longer than a short lease.
        "--check-lease",
        "60",
    ];
    let first = serve(db, &flags).await;
    let admin = account(&first.printed);
    let token = first.login(&admin).await;
    let mut ids = Vec::new();
    for i in 0..MONITORS {
        let body = json!({"name": format!("large {i}"), "url": site.url(&format!("/large{i}")),
                          "xPath": "//p", "recurrenceInSeconds": 1});
        let (status, task) = first
            .call(
                reqwest::Method::PUT,
                "/thirdparty/v1/task",
                Some(&token),
                Some(body),
            )
            .await;
        assert_eq!(status, 200, "{task}");
        ids.push(task["id"].as_str().unwrap().to_string());
    }

    // Running until many replaced values were stored as deltas.
    let mut deltas = 0;
    for _ in 0..600 {
        deltas = deltas_stored(db).await;
        if deltas >= DELTAS {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        deltas >= DELTAS,
        "{deltas} values stored as deltas, of {} entries",
        delta_entries(&first, &token, &ids).await.len()
    );
    // What the API lists right before the kill, with checks still being written.
    let before = delta_entries(&first, &token, &ids).await;
    assert!(
        before.len() as i64 > DELTAS,
        "{} entries listed",
        before.len()
    );
    let mut child = first.child;
    child.kill().await.unwrap();
    child.wait().await.unwrap();

    let again = serve(db, &flags).await;
    let after = delta_entries(&again, &token, &ids).await;
    for (entry, raw) in &before {
        match after.get(entry) {
            Some(read) => assert!(read == raw, "{entry:?} reads back changed"),
            None => panic!("{entry:?} lost in the kill"),
        }
    }
    assert!(
        deltas_stored(db).await >= deltas,
        "the deltas are still deltas"
    );
    assert_eq!(again.terminate().await, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delta_history_killed_mid_run_reads_back_whole_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    delta_history_killed_mid_run_reads_back_whole(&dir.path().join("wachet.db")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delta_history_killed_mid_run_reads_back_whole_on_postgresql() {
    let Some(url) = pg::database().await else {
        return;
    };
    delta_history_killed_mid_run_reads_back_whole(Path::new(&url)).await;
}

/// The entries of every monitor in `ids` (`lastCheckTimestamp` and value or error of each,
/// newest 500), and the user's notifications (id and monitor of each, newest 500), as the API
/// shows them now.
async fn reported(serve: &Serve, token: &str, ids: &[String]) -> (Vec<String>, Vec<String>) {
    let mut checks = Vec::new();
    for id in ids {
        let path = format!("/thirdparty/v1/data/list/{id}?count=500");
        let (status, reply) = serve.get(&path, Some(token)).await;
        assert_eq!(status, 200, "{reply}");
        for entry in reply["data"].as_array().unwrap() {
            checks.push(format!(
                "{id} {} {} {}",
                entry["lastCheckTimestamp"], entry["raw"], entry["error"]
            ));
        }
    }
    let (status, reply) = serve
        .get("/thirdparty/v1/notification/list?count=500", Some(token))
        .await;
    assert_eq!(status, 200, "{reply}");
    let notes = reply["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| format!("{} {} {}", n["id"], n["taskId"], n["current"]))
        .collect();
    (checks, notes)
}

/// A counter of `/metrics`.
async fn counter(serve: &Serve, name: &str) -> u64 {
    let text = reqwest::get(format!("{}/metrics", serve.base))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Bad input for grouped writes: checks of many monitors stored together (a group a transaction) and
/// the process killed with SIGKILL while they run. Every check the API showed before the kill
/// and every notification it listed are there after the restart, and every monitor is checked
/// again (a group the kill cut off held its monitors' leases only until they ran out).
async fn grouped_checks_killed_mid_run_lose_nothing_reported(db: &Path) {
    use wachet::testing::{FixtureServer, Reply};
    const MONITORS: usize = 40;
    // Each page's value moves on every fourth request: the first check and its two noise
    // samples see one value, later checks see changes, confirmed and notified.
    let mut site = FixtureServer::builder();
    for i in 0..MONITORS {
        site = site.counted(format!("/p{i}"), move |n| {
            Reply::html(format!("<p>item {i} v{}</p>", n / 4))
        });
    }
    let site = site.start().await.unwrap();
    let flags = [
        "--allow-private-networks",
        "--min-recurrence",
        "1",
        "--confirm-after",
        "1",
        "--per-host-rps",
        "0",
        "--per-host-concurrency",
        "0",
        "--check-lease",
        "3",
        "--heartbeat",
        "1",
    ];
    let first = serve(db, &flags).await;
    let admin = account(&first.printed);
    let token = first.login(&admin).await;
    let monitors: Vec<Value> = (0..MONITORS)
        .map(|i| {
            json!({"name": format!("item {i}"), "url": site.url(&format!("/p{i}")),
                   "recurrenceInSeconds": 1, "alerts": [{"type": "NotEq"}]})
        })
        .collect();
    let (status, created) = first
        .call(
            reqwest::Method::PUT,
            "/thirdparty/v1/tasks",
            Some(&token),
            Some(Value::Array(monitors)),
        )
        .await;
    assert_eq!(status, 200, "{created}");
    let ids: Vec<String> = created
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), MONITORS);

    // Running until groups of several checks were committed and notifications were raised.
    let mut before = (Vec::new(), Vec::new());
    for _ in 0..300 {
        let groups = counter(&first, "wachet_check_groups_total").await;
        let grouped = counter(&first, "wachet_checks_grouped_total").await;
        before = reported(&first, &token, &ids).await;
        if grouped > groups && groups > 0 && before.1.len() >= 10 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        before.1.len() >= 10,
        "notifications before the kill: {:?}",
        before.1
    );
    assert!(
        counter(&first, "wachet_checks_grouped_total").await
            > counter(&first, "wachet_check_groups_total").await,
        "some transaction stored several checks"
    );
    // What the API reports right before the kill, with checks still being written.
    let last = reported(&first, &token, &ids).await;
    let mut child = first.child;
    child.kill().await.unwrap();
    child.wait().await.unwrap();
    let killed_at = chrono::Utc::now();

    let again = serve(db, &flags).await;
    let (checks, notes) = reported(&again, &token, &ids).await;
    for seen in before.0.iter().chain(&last.0) {
        assert!(checks.contains(seen), "check lost in the kill: {seen}");
    }
    for seen in before.1.iter().chain(&last.1) {
        assert!(
            notes.contains(seen),
            "notification lost in the kill: {seen}"
        );
    }
    // Every monitor is checked again after the restart, those of a group cut off too.
    for id in &ids {
        let mut checked_again = false;
        for _ in 0..300 {
            let entries = again.history(&token, id).await;
            let newest = entries[0]["lastCheckTimestamp"].as_str().unwrap_or("");
            let newest = chrono::DateTime::parse_from_rfc3339(newest).unwrap();
            if newest > killed_at {
                checked_again = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(checked_again, "{id} is checked after the restart");
    }
    assert_eq!(again.terminate().await, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grouped_checks_killed_mid_run_lose_nothing_reported_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    grouped_checks_killed_mid_run_lose_nothing_reported(&dir.path().join("wachet.db")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grouped_checks_killed_mid_run_lose_nothing_reported_on_postgresql() {
    let Some(url) = pg::database().await else {
        return;
    };
    grouped_checks_killed_mid_run_lose_nothing_reported(Path::new(&url)).await;
}
