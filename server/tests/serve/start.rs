//! Starting `wachet serve` and the user commands: the first start's user, settings from flags
//! or the environment and the help that lists them, databases refused clearly, files only
//! their owner reads, the start-up lines, a new password.

use crate::*;
use serde_json::{Value, json};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

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

/// The container's promise, run without a container: a root filesystem mounted read-only with
/// only the data directory and TMPDIR writable (two small tmpfs in a mount namespace of its
/// own) is enough to start, sign a user in, and check a monitor rendered in Chromium. Needs
/// root for the namespace, as CI runs; elsewhere it is skipped, saying so, unless `CI` is set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_root_with_only_data_and_tmp_writable_is_enough() {
    let Some(_browser) = wachet::testing::browser_test().await else {
        return;
    };
    if !nix::unistd::Uid::effective().is_root() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run as root to build a mount namespace"
        );
        eprintln!("skipped: a read-only root needs root for its mount namespace");
        return;
    }
    let site = wachet::testing::FixtureServer::builder()
        .reply(
            "/price",
            wachet::testing::Reply::html(
                "<p id='price'></p><script>document.getElementById('price').textContent = '4.20 EUR'</script>",
            ),
        )
        .start()
        .await
        .unwrap();
    // Below the read-only root: mounted over by the namespace's own tmpfs, so nothing of the
    // run is left here and the test cannot see inside it (it talks HTTP, as a user would).
    let dir = tempfile::tempdir().unwrap();
    let script = format!(
        "set -e\n\
         mount -o remount,bind,ro /\n\
         mount -t tmpfs -o size=256m tmpfs {dir}\n\
         mkdir {dir}/data {dir}/tmp\n\
         cd {dir}/data\n\
         export HOME={dir}/data TMPDIR={dir}/tmp\n\
         touch /probe-of-the-read-only-root 2>/dev/null && {{ echo 'the root is writable'; exit 3; }}\n\
         exec {wachet} serve --listen 127.0.0.1:0 --db {dir}/data/wachet.db --allow-private-networks",
        dir = dir.path().display(),
        wachet = env!("CARGO_BIN_EXE_wachet"),
    );
    let child = Command::new("unshare")
        .args(["--mount", "sh", "-c", &script])
        .kill_on_drop(true)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("unshare (util-linux)");
    let server = listening(child).await;
    let admin = account(&server.printed);
    let token = server.login(&admin).await;
    let (status, created) = server
        .call(
            reqwest::Method::PUT,
            "/thirdparty/v1/task",
            Some(&token),
            Some(json!({
                "name": "Rendered price", "url": site.url("/price"), "recurrenceInSeconds": 3600,
                "dynamicContent": true, "xPath": "//p[@id='price']"
            })),
        )
        .await;
    assert_eq!(status, 200, "{created}");
    let id = created["id"].as_str().unwrap().to_string();
    let started = std::time::Instant::now();
    let data = loop {
        let (_, monitor) = server
            .get(&format!("/thirdparty/v1/task/{id}"), Some(&token))
            .await;
        // Not checked yet reads as the year 1 (the specification's placeholder).
        let checked = monitor["data"]["lastCheckTimestamp"]
            .as_str()
            .is_some_and(|at| !at.starts_with("0001-"));
        if checked {
            break monitor["data"].clone();
        }
        assert!(started.elapsed() < WAIT * 2, "never checked: {monitor}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(data["error"].is_null(), "{data}");
    assert_eq!(data["raw"], "4.20 EUR", "{data}");
}
