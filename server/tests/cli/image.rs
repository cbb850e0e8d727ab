//! The container image as the install chapter builds and runs it: the repository's
//! `Containerfile` built with podman (its runtime stage from Debian's packages, the binary this
//! test run built dropped in through the `prebuilt` stage, so the image costs no second
//! compile), then started with a read-only root, `/tmp` a tmpfs and `/data` a volume. What a
//! person would check: the service answers `/readyz` on the published port, the first user's
//! API key from the log signs in and creates a monitor, the process runs as `wachet` and cannot
//! write outside `/data`, the image's health check passes, Chromium renders a page inside it,
//! and a new container on the same volume serves the same account and monitor.
//!
//! The Debian base image comes from a registry where one can be pulled, else from
//! `packaging/debian-base.sh` (debootstrap); CI makes it. Without podman or that image the test
//! is skipped, saying so, unless `CI` is set.

use reqwest::Method;
use serde_json::{Value, json};
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

const IMAGE: &str = "localhost/wachet-image-test";

fn podman(args: &[&str]) -> Output {
    let mut command = Command::new("podman");
    // crun refuses a machine with cgroups in hybrid mode; runc, where installed, runs there too.
    if Path::new("/usr/sbin/runc").exists() || Path::new("/usr/bin/runc").exists() {
        command.args(["--runtime", "runc"]);
    }
    command.args(args).output().expect("run podman")
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The Debian release this machine runs: the prebuilt binary links its glibc, so the image's
/// runtime must be the same release.
fn codename() -> String {
    let release = std::fs::read_to_string("/etc/os-release").unwrap_or_default();
    release
        .lines()
        .find_map(|l| l.strip_prefix("VERSION_CODENAME="))
        .map(|c| c.trim_matches('"').to_string())
        .unwrap_or_else(|| "bookworm".into())
}

/// Whether podman and the Debian base image are here; `false` (skip) only when `CI` is unset.
fn can_build(base: &str) -> bool {
    let why = match Command::new("podman")
        .args(["image", "exists", base])
        .status()
    {
        Ok(status) if status.success() => return true,
        Ok(_) => format!("no image {base}: packaging/debian-base.sh makes it"),
        Err(err) => format!("podman: {err}"),
    };
    assert!(
        std::env::var_os("CI").is_none(),
        "CI must build the image: {why}"
    );
    eprintln!("skipped: {why}");
    false
}

/// A container of the test image on `volume`, removed when dropped.
struct Container {
    name: String,
    base: String,
}

impl Container {
    fn start(name: &str, volume: &str) -> Container {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let _ = podman(&["rm", "-f", name]);
        let publish = format!("127.0.0.1:{port}:8080");
        let data = format!("{volume}:/data");
        // Limits no higher than this process's own: a container may not raise them where the
        // runtime lacks the right to (as in CI's sandbox).
        let started = podman(&[
            "run",
            "-d",
            "--name",
            name,
            "--read-only",
            "--tmpfs",
            "/tmp",
            "-v",
            &data,
            "-p",
            &publish,
            "--ulimit",
            "nofile=4096:4096",
            "--ulimit",
            "nproc=4096:4096",
            IMAGE,
        ]);
        assert!(started.status.success(), "{}", text(&started));
        Container {
            name: name.to_string(),
            base: format!("http://127.0.0.1:{port}"),
        }
    }

    fn exec(&self, args: &[&str]) -> Output {
        let mut all = vec!["exec", self.name.as_str()];
        all.extend_from_slice(args);
        podman(&all)
    }

    fn logs(&self) -> String {
        text(&podman(&["logs", &self.name]))
    }

    /// Waits (at most a minute) until `/readyz` answers 200.
    async fn ready(&self, client: &reqwest::Client) {
        let started = Instant::now();
        loop {
            let answer = client.get(format!("{}/readyz", self.base)).send().await;
            if matches!(&answer, Ok(r) if r.status() == 200) {
                return;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "not ready: {answer:?}\n{}",
                self.logs()
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        let _ = podman(&["rm", "-f", "-t", "2", &self.name]);
    }
}

async fn sign_in(client: &reqwest::Client, base: &str, user: &str, key: &str) -> String {
    let reply: Value = client
        .post(format!("{base}/thirdparty/v1/user/apilogin"))
        .json(&json!({"userId": user, "apiKey": key}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    reply["token"].as_str().expect("signed in").to_string()
}

async fn call(
    client: &reqwest::Client,
    base: &str,
    token: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = client
        .request(method, format!("{base}{path}"))
        .bearer_auth(token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn the_image_builds_and_serves_from_a_read_only_root_keeping_its_data_in_the_volume() {
    let release = codename();
    if !can_build(&format!("docker.io/library/debian:{release}-slim")) {
        return;
    }
    let context = tempfile::tempdir().unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    std::fs::copy(
        repo.join("Containerfile"),
        context.path().join("Containerfile"),
    )
    .unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_wachet"), context.path().join("wachet")).unwrap();
    let debian = format!("DEBIAN={release}");
    let built = podman(&[
        "build",
        // RUN steps without a container runtime's cgroups: the build runs where `run` cannot.
        "--isolation",
        "chroot",
        // The docker format keeps the HEALTHCHECK (OCI images have no field for it).
        "--format",
        "docker",
        "--build-arg",
        &debian,
        "--build-arg",
        "BINARY_FROM=prebuilt",
        "-t",
        IMAGE,
        &context.path().to_string_lossy(),
    ]);
    assert!(built.status.success(), "{}", text(&built));

    let volume = format!("wachet-image-test-{}", std::process::id());
    let name = volume.clone();
    let client = reqwest::Client::new();
    let first = Container::start(&name, &volume);
    first.ready(&client).await;
    let logs = first.logs();
    let field = |label: &str| {
        logs.lines()
            .find_map(|l| l.strip_prefix(&format!("{label}: ")))
            .unwrap_or_else(|| panic!("no {label} in the log:\n{logs}"))
            .to_string()
    };
    let (user, key) = (field("user id"), field("api key"));
    let token = sign_in(&client, &first.base, &user, &key).await;
    let monitor = json!({"name": "in a container", "url": "https://example.org/",
                         "recurrenceInSeconds": 86400});
    let (status, created) = call(
        &client,
        &first.base,
        &token,
        Method::PUT,
        "/thirdparty/v1/task",
        Some(monitor),
    )
    .await;
    assert_eq!(status, 200, "{created}");

    // Unprivileged, and nothing outside /data and /tmp can be written.
    assert_eq!(text(&first.exec(&["id", "-u"])).trim(), "10001");
    let outside = first.exec(&["touch", "/usr/local/bin/probe"]);
    assert!(!outside.status.success(), "the root is writable");
    assert!(first.exec(&["touch", "/data/probe"]).status.success());
    let health = podman(&["healthcheck", "run", &name]);
    assert!(health.status.success(), "health check: {}", text(&health));
    // Chromium from the image renders a page: the service's own sign-in page.
    let rendered = first.exec(&["wachet", "check", "--dynamic", "http://127.0.0.1:8080/"]);
    assert!(
        rendered.status.success() && text(&rendered).contains("Sign in"),
        "{}",
        text(&rendered)
    );
    drop(first);

    // A new container on the same volume: the same account and monitor, and no new first user.
    let second = Container::start(&name, &volume);
    second.ready(&client).await;
    assert!(!second.logs().contains("api key:"), "{}", second.logs());
    let token = sign_in(&client, &second.base, &user, &key).await;
    let (status, found) = call(
        &client,
        &second.base,
        &token,
        Method::GET,
        "/thirdparty/v1/task/search",
        None,
    )
    .await;
    assert_eq!(status, 200, "{found}");
    let names: Vec<_> = found
        .as_array()
        .expect("a list of monitors")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["in a container"]);
    drop(second);
    let _ = podman(&["volume", "rm", "-f", &volume]);
    let _ = podman(&["rmi", "-f", IMAGE]);
}
