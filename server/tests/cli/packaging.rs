//! The packaging files as the guide describes them, checked against the real binary: the
//! `Containerfile`, `compose.yaml` and the systemd units name only flags, variables and roles
//! that `wachet serve --help` lists, and keep what the install chapter promises (a second
//! stage that runs as an unprivileged user, `/data` as the volume, a health check on
//! `/healthz`, the API on 0.0.0.0:8080; workers and the deliverer probed on `--health-listen`).
//! The image itself is built and run in [`super::image`].

use super::{stdout, wachet};
use std::collections::BTreeSet;
use std::path::Path;

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path))
        .unwrap_or_else(|err| panic!("{path}: {err}"))
}

/// Every word of `text` that starts with `prefix` and goes on with `allowed` characters.
fn words(text: &str, prefix: &str, allowed: fn(char) -> bool) -> BTreeSet<String> {
    text.match_indices(prefix)
        .filter(|(at, _)| {
            // A whole word: not the tail of a longer one (`--x` inside `---x`).
            !text[..*at].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        })
        .map(|(at, _)| {
            let rest = &text[at + prefix.len()..];
            let end = rest.find(|c| !allowed(c)).unwrap_or(rest.len());
            format!("{prefix}{}", &rest[..end])
        })
        .filter(|w| w.len() > prefix.len())
        .collect()
}

fn flag_char(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'
}

fn var_char(c: char) -> bool {
    c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'
}

#[test]
fn the_packaging_files_name_only_what_wachet_serve_knows_and_keep_the_guides_promises() {
    let help = stdout(&wachet(&["serve", "--help"]));
    let flags = words(&help, "--", flag_char);
    let vars = words(&help, "WACHET_", var_char);
    assert!(
        flags.contains("--health-listen") && vars.contains("WACHET_DB"),
        "{help}"
    );
    let roles = ["api", "worker", "deliver"];
    for role in roles {
        assert!(
            help.contains(&format!("- {role}:")),
            "role {role} not in {help}"
        );
    }

    let containerfile = read("Containerfile");
    let compose = read("compose.yaml");
    let service = read("packaging/systemd/wachet.service");
    let units = read("packaging/systemd/wachet@.service");
    for (name, text) in [
        ("Containerfile", &containerfile),
        ("compose.yaml", &compose),
        ("wachet.service", &service),
        ("wachet@.service", &units),
    ] {
        let unknown: Vec<_> = words(text, "WACHET_", var_char)
            .into_iter()
            .filter(|v| !vars.contains(v))
            .collect();
        assert!(
            unknown.is_empty(),
            "{name} sets unknown variables {unknown:?}"
        );
    }
    // Flags given to `wachet serve` in the compose commands and the units' ExecStart lines.
    let mut commands: Vec<String> = compose
        .lines()
        .filter(|l| l.trim_start().starts_with("command:"))
        .map(str::to_string)
        .collect();
    commands.extend(
        [&service, &units]
            .iter()
            .flat_map(|u| u.lines())
            .filter(|l| l.starts_with("ExecStart="))
            .map(str::to_string),
    );
    assert!(commands.len() >= 5, "{commands:?}");
    for command in &commands {
        assert!(command.contains("serve"), "{command}");
        let unknown: Vec<_> = words(command, "--", flag_char)
            .into_iter()
            .filter(|f| !flags.contains(f))
            .collect();
        assert!(unknown.is_empty(), "{command}: unknown flags {unknown:?}");
        if let Some(at) = command.find("\"--roles\", \"") {
            let role = command[at + "\"--roles\", \"".len()..]
                .split('"')
                .next()
                .unwrap_or("");
            assert!(roles.contains(&role), "{command}: role {role}");
        }
    }

    // The image: a stage that compiles the binary (the default), then a runtime that runs as
    // `wachet`, keeps /data, listens on every address at 8080 and checks /healthz.
    assert!(containerfile.contains("\nARG BINARY_FROM=build\n"));
    assert!(containerfile.contains("cargo build --release --locked"));
    let runtime = containerfile.rsplit("\nFROM ").next().unwrap();
    assert!(runtime.contains("\nUSER wachet\n"), "runs unprivileged");
    assert!(runtime.contains("VOLUME [\"/data\"]"));
    assert!(runtime.contains("WACHET_LISTEN=0.0.0.0:8080"));
    assert!(
        runtime
            .lines()
            .any(|l| l.contains("/healthz") && !l.trim_start().starts_with('#')),
        "a HEALTHCHECK on /healthz"
    );
    assert!(runtime.contains("chromium-headless-shell"));

    // compose: PostgreSQL, the API published, two workers and a deliverer probed on their own
    // address, every wachet process on a read-only root.
    for service in ["postgres:", "api:", "worker:", "deliver:"] {
        assert!(
            compose.contains(&format!("\n  {service}\n")),
            "no {service}"
        );
    }
    assert!(compose.contains("replicas: 2"));
    assert_eq!(
        compose
            .lines()
            .filter(|l| l.contains("\"--health-listen\", \"0.0.0.0:8081\""))
            .count(),
        2,
        "the workers and the deliverer answer probes on 8081"
    );
    assert!(compose.contains("read_only: true"));
    // The role unit runs one role a unit, each probed on its own address.
    assert!(units.contains("--roles %i") && units.contains("WACHET_HEALTH_LISTEN"));
}
