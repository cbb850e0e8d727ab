//! `wachet backup` and `wachet restore` as an operator runs them: a backup taken while the
//! service checks and the API writes restores to a database that serves everything written
//! before it began; what cannot be restored (a file that is not a wachet database, a target in
//! use) or backed up (onto a full disk) is refused clearly, changing nothing.

use super::{stderr, stdout};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The real binary, as an async child (the service) or one run to its end (the commands).
fn wachet() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_wachet"));
    command.kill_on_drop(true);
    command
}

async fn run(args: &[&str], db: &Path) -> std::process::Output {
    wachet()
        .args(args)
        .arg("--db")
        .arg(db)
        .output()
        .await
        .unwrap()
}

/// A running `wachet serve`: its child, its address, its first user's API login and what it
/// logged so far.
pub(crate) struct Serve {
    child: Child,
    pub(crate) base: String,
    client: reqwest::Client,
    pub(crate) token: String,
    pub(crate) log: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Serve {
    /// Starts it on `db` and logs in as the user it prints (with `login`, that user's id and
    /// API key when the database has its users already).
    pub(crate) async fn start(
        db: &Path,
        login: Option<(String, String)>,
        extra: &[&str],
    ) -> (Serve, (String, String)) {
        let mut child = wachet()
            .args(["serve", "--listen", "127.0.0.1:0", "--min-recurrence", "1"])
            .args([
                "--allow-private-networks",
                "--kinds",
                "plain",
                "--rate-limit",
                "0",
            ])
            .args(extra)
            .arg("--db")
            .arg(db)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Read as it comes: a full pipe would block the service.
        let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
        let kept = log.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = stderr.next_line().await {
                let mut kept = kept.lock().unwrap();
                kept.push_str(&line);
                kept.push('\n');
            }
        });
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut printed = Vec::new();
        let base = tokio::time::timeout(Duration::from_secs(30), async {
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
        let field = |name: &str| {
            printed
                .iter()
                .find_map(|l| l.strip_prefix(&format!("{name}: ")))
                .map(str::to_string)
        };
        let login = login.unwrap_or_else(|| (field("user id").unwrap(), field("api key").unwrap()));
        let client = reqwest::Client::new();
        let reply: Value = client
            .post(format!("{base}/thirdparty/v1/user/apilogin"))
            .json(&json!({"userId": login.0, "apiKey": login.1}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let token = reply["token"].as_str().expect("logged in").to_string();
        let serve = Serve {
            child,
            base,
            client,
            token,
            log,
        };
        (serve, login)
    }

    pub(crate) async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut request = self
            .client
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// Every monitor's id, with the times of its history entries.
    async fn everything(&self) -> Vec<(String, Vec<String>)> {
        let (status, found) = self
            .call(reqwest::Method::GET, "/thirdparty/v1/task/search", None)
            .await;
        assert_eq!(status, 200, "{found}");
        let mut all = Vec::new();
        for task in found.as_array().expect("a list of monitors") {
            let id = task["id"].as_str().unwrap().to_string();
            let (status, data) = self
                .call(
                    reqwest::Method::GET,
                    &format!("/thirdparty/v1/data/list/{id}?count=500"),
                    None,
                )
                .await;
            assert_eq!(status, 200, "{data}");
            let times = data["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d["lastCheckTimestamp"].to_string())
                .collect();
            all.push((id, times));
        }
        all
    }

    pub(crate) async fn stop(mut self) {
        let pid = self.child.id().unwrap() as i32;
        // SIGTERM: a graceful stop, so the database is closed and its lock released.
        let _ = std::process::Command::new("kill")
            .arg(pid.to_string())
            .status();
        let _ = tokio::time::timeout(Duration::from_secs(20), self.child.wait()).await;
    }
}

/// A tmpfs of `bytes` mounted on a new directory (unmounted when dropped); `None` when it
/// cannot be mounted (not root) and `CI` is unset.
struct SmallDisk(tempfile::TempDir);

impl SmallDisk {
    fn mount(bytes: u64) -> Option<SmallDisk> {
        let dir = tempfile::tempdir().unwrap();
        let out = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs"])
            .arg(dir.path())
            .output();
        match out {
            Ok(out) if out.status.success() => Some(SmallDisk(dir)),
            other => {
                assert!(
                    std::env::var_os("CI").is_none(),
                    "CI must mount a tmpfs (run as root): {other:?}"
                );
                eprintln!("skipped: cannot mount a tmpfs (not root?): {other:?}");
                None
            }
        }
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(self.0.path())
            .status();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_taken_while_the_service_writes_restores_everything_written_before_it() {
    use wachet::testing::{FixtureServer, Reply};
    let site = FixtureServer::builder()
        .counted("/tick", |n| Reply::html(format!("<p>tick {n}</p>")))
        .start()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("wachet.db");
    let (serve, login) = Serve::start(&db, None, &[]).await;
    let monitor = |i: usize| json!({"name": format!("tick {i}"), "url": site.url(&format!("/tick?{i}")), "recurrenceInSeconds": 1});
    for i in 0..3 {
        let (status, reply) = serve
            .call(
                reqwest::Method::PUT,
                "/thirdparty/v1/task",
                Some(monitor(i)),
            )
            .await;
        assert_eq!(status, 200, "{reply}");
    }
    let started = Instant::now();
    while site.hits("/tick") < 9 {
        assert!(started.elapsed() < Duration::from_secs(30), "checks run");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // API writes go on all through the backup, as the checks do.
    let serve = std::sync::Arc::new(serve);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (serve, stop) = (serve.clone(), stop.clone());
        let urls: Vec<Value> = (3..200).map(monitor).collect();
        tokio::spawn(async move {
            for body in urls {
                if stop.load(std::sync::atomic::Ordering::Relaxed) {
                    break;
                }
                serve
                    .call(reqwest::Method::PUT, "/thirdparty/v1/task", Some(body))
                    .await;
            }
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = serve.everything().await;
    let backup = dir.path().join("backup.db");
    let out = run(&["backup", backup.to_str().unwrap()], &db).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("integrity check ok"),
        "{}",
        stdout(&out)
    );

    // A second backup never overwrites the first.
    let again = run(&["backup", backup.to_str().unwrap()], &db).await;
    assert!(!again.status.success());
    assert!(
        stderr(&again).contains("exists already"),
        "{}",
        stderr(&again)
    );

    // The service runs: a restore onto its database is refused, and changes nothing.
    let refused = run(&["restore", backup.to_str().unwrap()], &db).await;
    assert!(!refused.status.success());
    assert!(stderr(&refused).contains("in use"), "{}", stderr(&refused));
    let (status, _) = serve
        .call(reqwest::Method::GET, "/thirdparty/v1/task/search", None)
        .await;
    assert_eq!(status, 200, "the service is untouched");

    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.await.unwrap();
    std::sync::Arc::into_inner(serve).unwrap().stop().await;

    // Not wachet databases: a text file, and a SQLite database of something else. The target
    // stays byte for byte as it was.
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "not a database").unwrap();
    let other = dir.path().join("other.db");
    {
        use sqlx::{ConnectOptions, Connection};
        let mut conn = sqlx::sqlite::SqliteConnectOptions::new()
            .filename(&other)
            .create_if_missing(true)
            .connect()
            .await
            .unwrap();
        sqlx::query("CREATE TABLE t (x)")
            .execute(&mut conn)
            .await
            .unwrap();
        conn.close().await.unwrap();
    }
    let kept = std::fs::read(&db).unwrap();
    for bad in [&text, &other, &dir.path().join("missing.db")] {
        let out = run(&["restore", bad.to_str().unwrap()], &db).await;
        assert!(!out.status.success(), "{bad:?} restored");
        let said = stderr(&out);
        assert!(
            said.contains("not a wachet database") || said.contains("no database"),
            "{bad:?}: {said}"
        );
        assert!(
            std::fs::read(&db).unwrap() == kept,
            "{bad:?} changed the database"
        );
    }

    // Restored in place of the database that went on changing after the backup.
    let out = run(&["restore", backup.to_str().unwrap()], &db).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("kept as"), "{}", stdout(&out));
    let (restored, _) = Serve::start(&db, Some(login), &[]).await;
    let after = restored.everything().await;
    for (id, times) in &before {
        let found = after
            .iter()
            .find(|(other, _)| other == id)
            .unwrap_or_else(|| panic!("monitor {id} lost"));
        for time in times {
            assert!(found.1.contains(time), "entry {time} of {id} lost");
        }
    }
    restored.stop().await;
}

#[tokio::test]
async fn a_backup_onto_a_full_disk_fails_and_leaves_nothing() {
    let Some(disk) = SmallDisk::mount(256 * 1024) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("wachet.db");
    let out = run(&["user", "add", "--email", "ann@example.com"], &db).await;
    assert!(out.status.success(), "{}", stderr(&out));
    // No room left at all.
    {
        use std::io::Write;
        let mut filler = std::fs::File::create(disk.0.path().join("filler")).unwrap();
        let mut chunk = 64 * 1024;
        while chunk >= 512 {
            if filler.write_all(&vec![7u8; chunk]).is_err() {
                chunk /= 2;
            }
        }
    }
    let backup = disk.0.path().join("backup.db");
    let out = run(&["backup", backup.to_str().unwrap()], &db).await;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("cannot write the backup"),
        "{}",
        stderr(&out)
    );
    let left: Vec<_> = std::fs::read_dir(disk.0.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["filler"], "nothing half-written");
    // PostgreSQL: the command says how to use pg_dump, and backs nothing up.
    let out = wachet()
        .args([
            "backup",
            "x.dump",
            "--db",
            "postgres://wachet:secret@db.invalid/wachet",
        ])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("pg_dump"), "{}", stderr(&out));
    assert!(
        !stderr(&out).contains("secret"),
        "the password is not shown"
    );
}
