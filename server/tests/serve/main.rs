//! `wachet serve` and `wachet user add` as a user runs them: the real binary as a child process
//! on a real SQLite file, talked to over HTTP on loopback.
use serde_json::{Value, json};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

// Starting the service and the user commands, settings, refusals at start.
mod start;
// SIGTERM and SIGKILL at every stage, and a database that goes away: nothing reported is lost.
mod crashes;
// Hostile monitors and clients, secrets kept out of the logs.
mod defences;
// Several processes on PostgreSQL: workers, roles, locations, host limits.
mod workers;

/// Bound of every wait on the child.
const WAIT: Duration = Duration::from_secs(30);

#[allow(dead_code)] // the cluster's helpers serve the api tests too
#[path = "../service/support/pg.rs"]
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
