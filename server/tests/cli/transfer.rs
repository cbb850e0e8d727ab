//! `wachet import` and `wachet export` as a user runs them: the real binary on a SQLite file,
//! with files the real tools made (`tests/fixtures/import/`, see its README) and hostile ones.

use super::{stderr, stdout, wachet};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/import")
        .join(name)
        .display()
        .to_string()
}

/// A database with the users `me@example.com` and `other@example.com`.
fn database(dir: &Path) -> String {
    let db = dir.join("w.db").display().to_string();
    for email in ["me@example.com", "other@example.com"] {
        let out = wachet(&["user", "add", "--email", email, "--db", &db]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    db
}

fn export(db: &str, user: &str, dir: &Path) -> Value {
    let file: PathBuf = dir.join(format!("{user}.json"));
    let path = file.display().to_string();
    let out = wachet(&[
        "export",
        "--db",
        db,
        "--user",
        user,
        "--history",
        "-o",
        &path,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap()
}

fn monitor<'a>(document: &'a Value, name: &str) -> &'a Value {
    document["monitors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("no monitor {name} in {document}"))
}

/// A changedetection.io 0.60.10 backup comes in with its tags as folders, its filters as
/// XPath, its history; what does not map is named; the export carries it all out and into
/// another account again.
#[test]
fn a_changedetection_backup_moves_in_and_out_again() {
    let dir = tempfile::tempdir().unwrap();
    let db = database(dir.path());
    let backup = fixture("changedetection-0.60.10-backup.zip");
    let me = ["--db", db.as_str(), "--user", "me@example.com"];

    let out = wachet(&[&["import", &backup, "--history"][..], &me[..]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let printed = stdout(&out);
    for line in [
        "format: changedetection.io backup",
        "folder: News (new)",
        "monitor: watch \"Articles (CSS)\" -> https://example.net/articles in Shopping",
        "not carried over: watch \"Status JSON\": filter jq:.status:",
        "not carried over: watch \"With browser steps\": browser steps (1):",
        "not carried over: watch \"With conditions\": conditions (1):",
        "not carried over: watch \"Articles (CSS)\": tag News: a monitor is in one folder",
        "imported 9 monitor(s), 2 new folder(s), 2 history entries",
    ] {
        assert!(printed.contains(line), "{line:?} not in:\n{printed}");
    }

    let document = export(&db, "me@example.com", dir.path());
    assert_eq!(document["format"], "wachet-export");
    assert_eq!(document["version"], 1);
    assert_eq!(document["complete"], true);
    let folders: Vec<&str> = document["folders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(folders, ["News", "Shopping"]);
    assert_eq!(document["monitors"].as_array().unwrap().len(), 9);
    let news = monitor(&document, "News page");
    assert_eq!(news["xPath"], "//div[@id='main']");
    assert_eq!(news["excludeXPath"], "//*[@id='ads']");
    assert_eq!(news["recurrenceInSeconds"], 3600);
    assert_eq!(
        monitor(&document, "Prices")["xPath"],
        "//table[@class='prices']"
    );
    let css = monitor(&document, "Articles (CSS)");
    assert_eq!(
        css["xPath"],
        "//div[contains(concat(' ', normalize-space(@class), ' '), ' content ')]/p"
    );
    assert_eq!(css["dynamicContent"], true);
    assert_eq!(monitor(&document, "Paused one")["recurrenceInSeconds"], 0);
    // No interval of its own: the backup's default, three hours.
    assert_eq!(
        monitor(&document, "Status JSON")["recurrenceInSeconds"],
        10_800
    );
    assert_eq!(monitor(&document, "Status JSON")["xPath"], Value::Null);
    let post = monitor(&document, "POST with headers");
    assert_eq!(post["method"], "POST");
    assert_eq!(post["body"], "{\"q\": 1}");
    assert!(post["headers"].to_string().contains("X-Token"), "{post}");
    let local = monitor(&document, "Local page")["id"].clone();
    let history = document["history"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["monitorId"] == local)
        .unwrap();
    let values: Vec<&str> = history["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["raw"].as_str().unwrap().trim())
        .collect();
    assert_eq!(values, ["Version 2", "Version 1"], "newest first");

    // Importing the same backup again adds nothing: each watch is already there.
    let out = wachet(&[&["import", &backup][..], &me[..]].concat());
    assert!(
        stdout(&out).contains("imported 0 monitor(s), 0 new folder(s)"),
        "{}",
        stdout(&out)
    );

    // The export moves into another account whole, history too.
    let file = dir.path().join("me@example.com.json").display().to_string();
    let other = ["--db", db.as_str(), "--user", "other@example.com"];
    let out = wachet(&[&["import", &file, "--history"][..], &other[..]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("imported 9 monitor(s), 2 new folder(s), 2 history entries"),
        "{}",
        stdout(&out)
    );
    let copy = export(&db, "other@example.com", dir.path());
    assert_eq!(monitor(&copy, "Articles (CSS)")["xPath"], css["xPath"]);
    assert_ne!(monitor(&copy, "Articles (CSS)")["id"], css["id"]);
}

/// The older changedetection.io layout, urlwatch's jobs and Wachete's XLSX, read dry: what
/// would come in and what would not, nothing stored.
#[test]
fn other_tools_files_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let db = database(dir.path());
    let me = ["--db", db.as_str(), "--user", "me@example.com", "--dry-run"];
    let cases: [(&str, &[&str]); 4] = [
        (
            "changedetection-0.49.18-backup.zip",
            &[
                "monitor: watch \"Prices\" -> https://example.org/prices in Shopping",
                "would import 9 monitor(s), 2 new folder(s)",
            ],
        ),
        (
            "urlwatch-2.29-urls.yaml",
            &[
                "format: urlwatch / webchanges jobs",
                "not carried over: job 8 \"Disk space\": the whole job: a shell command job",
                "not carried over: job 7 \"Sorted lines\": filter sort:",
                "would import 7 monitor(s)",
            ],
        ),
        (
            "wachete.xlsx",
            &[
                "monitor: row 2 \"Shop front\" -> https://example.com/shop in Shopping",
                "would import 3 monitor(s), 2 new folder(s)",
            ],
        ),
        (
            "wachete-extra-column.xlsx",
            &[
                "not carried over: the sheet: column notes:",
                "would import 3 monitor(s)",
            ],
        ),
    ];
    for (file, lines) in cases {
        let out = wachet(&[&["import", &fixture(file)][..], &me[..]].concat());
        assert!(out.status.success(), "{file}: {}", stderr(&out));
        for line in lines {
            assert!(
                stdout(&out).contains(line),
                "{file}: {line:?} not in:\n{}",
                stdout(&out)
            );
        }
    }
    let document = export(&db, "me@example.com", dir.path());
    assert_eq!(
        document["monitors"].as_array().unwrap().len(),
        0,
        "dry runs store nothing"
    );
}

/// Broken and hostile files, an invalid monitor among valid ones, and an import past the
/// quota: each refused with what is wrong (exit 1), and nothing of any of them stored.
#[test]
fn bad_files_are_refused_whole() {
    let dir = tempfile::tempdir().unwrap();
    let db = database(dir.path());
    let write = |name: &str, bytes: &[u8]| {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        path.display().to_string()
    };
    let backup = std::fs::read(fixture("changedetection-0.60.10-backup.zip")).unwrap();
    let truncated = write("truncated.zip", &backup[..backup.len() / 2]);
    let newer = write(
        "url-watches.json",
        br#"{"watching": {}, "settings": {"application": {"schema_version": 99}}}"#,
    );
    let newer_export = write(
        "export.json",
        br#"{"format":"wachet-export","version":2,"folders":[],"monitors":[],"complete":true}"#,
    );
    let unknown = write("notes.txt", b"just some notes\n");
    let invalid = write(
        "jobs.yaml",
        b"name: Fine\nurl: https://example.com/a\n---\nname: Broken\nurl: https://example.com/b\n\
          filter:\n  - xpath: '//div['\n---\nname: Also fine\nurl: https://example.com/c\n",
    );
    let cases = [
        (truncated, "was it cut short"),
        (
            fixture("bad-traversal.zip"),
            "outside itself (\"../../etc/evil/watch.json\")",
        ),
        (fixture("bad-symlink.zip"), "symbolic link"),
        (fixture("bad-bomb.zip"), "more than 512 MiB"),
        (newer, "newer changedetection.io (settings schema 99)"),
        (newer_export, "version 2, made by a newer wachet"),
        (fixture("wachete-missing-url.xlsx"), "no URL column"),
        (unknown, "none of the formats wachet imports"),
        (invalid, "job 2 \"Broken\": xPath:"),
    ];
    let me = ["--db", db.as_str(), "--user", "me@example.com"];
    for (file, message) in &cases {
        let out = wachet(&[&["import", file.as_str()][..], &me[..]].concat());
        assert_eq!(out.status.code(), Some(1), "{file}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(message),
            "{file}: {message:?} not in {}",
            stderr(&out)
        );
    }

    // Two jobs of one page: the second is named as a duplicate, the first comes in.
    let twice = write(
        "twice.yaml",
        b"url: https://example.com/same\n---\nname: Again\nurl: https://example.com/same\n",
    );
    let out = wachet(&[&["import", twice.as_str(), "--dry-run"][..], &me[..]].concat());
    assert!(
        stdout(&out).contains(
            "not carried over: job 2 \"Again\": the whole item: it watches the same as job 1"
        ),
        "{}",
        stdout(&out)
    );

    // Nine monitors into an account allowed five: none, and the two folders made for them are
    // removed again.
    let backup = fixture("changedetection-0.60.10-backup.zip");
    let out = wachet(
        &[
            &["import", backup.as_str(), "--max-monitors-per-user", "5"][..],
            &me[..],
        ]
        .concat(),
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("maxMonitorsPerUser"),
        "{}",
        stderr(&out)
    );

    let document = export(&db, "me@example.com", dir.path());
    assert_eq!(
        document["monitors"].as_array().unwrap().len(),
        0,
        "{document}"
    );
    assert_eq!(
        document["folders"].as_array().unwrap().len(),
        0,
        "{document}"
    );
}

/// An import onto a disk that fills while it writes: a clear error naming the full disk,
/// nothing half-written (no monitor, no folder), the database still whole; once there is room,
/// the same file comes in complete.
#[test]
fn an_import_on_a_disk_that_fills_writes_nothing_and_comes_in_once_there_is_room() {
    let Some(disk) = crate::disk::SmallDisk::mount(32 << 20) else {
        return;
    };
    let db = database(disk.path());
    // 4,000 jobs of urlwatch, each in a folder of ten, with long names: a few megabytes stored.
    let outside = tempfile::tempdir().unwrap();
    let jobs: Vec<String> = (0..4_000)
        .map(|i| {
            format!(
                "name: Product page number {i} of the spring catalogue, watched for its price and stock\n\
                 url: https://shop{}.example.com/catalogue/spring/product-{i}?colour=blue&size=large\n",
                i / 10
            )
        })
        .collect();
    let file = outside.path().join("urls.yaml");
    std::fs::write(&file, jobs.join("---\n")).unwrap();
    let file = file.display().to_string();
    let me = ["--db", db.as_str(), "--user", "me@example.com"];

    // Leave about 200 KB free: room to begin, not to finish.
    let headroom = disk.path().join("headroom");
    std::fs::write(&headroom, vec![0u8; 200 << 10]).unwrap();
    let filler = disk.path().join("filler");
    crate::disk::fill(&mut std::fs::File::create(&filler).unwrap());
    std::fs::remove_file(&headroom).unwrap();

    let out = wachet(&[&["import", file.as_str()][..], &me[..]].concat());
    // 2: the database failed, not the file (that is 1).
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(
        said.contains("disk is full"),
        "no word of the full disk: {said}"
    );
    assert!(!said.contains("panicked"), "{said}");
    assert!(
        said.contains("nothing was imported"),
        "not said that nothing came in: {said}"
    );

    // Room again: the database reads back with nothing of the failed import, then takes it all.
    std::fs::remove_file(&filler).unwrap();
    let document = export(&db, "me@example.com", disk.path());
    assert_eq!(document["monitors"].as_array().unwrap().len(), 0);
    assert_eq!(document["folders"].as_array().unwrap().len(), 0);
    let out = wachet(&[&["import", file.as_str()][..], &me[..]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("imported 4000 monitor(s)"),
        "{}",
        stdout(&out)
    );
    let document = export(&db, "me@example.com", disk.path());
    assert_eq!(document["monitors"].as_array().unwrap().len(), 4_000);
}

/// 50,000 jobs with one invalid in the middle: none comes in, and the one at fault is named
/// with its number and name.
#[test]
fn fifty_thousand_jobs_with_one_invalid_in_the_middle_import_none_and_name_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = database(dir.path());
    let mut jobs: Vec<String> = (0..50_000)
        .map(|i| {
            format!(
                "name: Page {i}\nurl: https://site{}.example.com/page/{i}\nfilter:\n  - xpath: //div[@id='main']\n",
                i % 500
            )
        })
        .collect();
    jobs[25_000] =
        "name: Broken\nurl: https://example.com/broken\nfilter:\n  - xpath: '//div['\n".into();
    let file = dir.path().join("urls.yaml");
    std::fs::write(&file, jobs.join("---\n")).unwrap();
    let file = file.display().to_string();
    let me = ["--db", db.as_str(), "--user", "me@example.com"];
    let out = wachet(
        &[
            &["import", file.as_str(), "--max-monitors-per-user", "100000"][..],
            &me[..],
        ]
        .concat(),
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("job 25001 \"Broken\": xPath:"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("nothing was imported"),
        "{}",
        stderr(&out)
    );
    let document = export(&db, "me@example.com", dir.path());
    assert_eq!(document["monitors"].as_array().unwrap().len(), 0);
}

/// `export --secrets` writes the secrets encrypted to a passphrase from a file, `import` opens
/// them only with it (another refuses the whole file), and they come in sealed with the new
/// database's key, which `rotate-key` then replaces.
#[test]
fn secrets_move_encrypted_to_a_passphrase_and_survive_a_key_rotation() {
    let dir = tempfile::tempdir().unwrap();
    let here = dir.path().join("a");
    let there = dir.path().join("b");
    std::fs::create_dir_all(&here).unwrap();
    std::fs::create_dir_all(&there).unwrap();
    let (db, db2) = (database(&here), database(&there));
    let me = |db: &str| {
        [
            "--db".to_string(),
            db.to_string(),
            "--user".into(),
            "me@example.com".into(),
        ]
    };
    let run = |args: &[&str], db: &str, passphrase: Option<&str>| {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_wachet"));
        command
            .args(args)
            .args(me(db))
            .env_remove("WACHET_PASSPHRASE");
        if let Some(p) = passphrase {
            command.env("WACHET_PASSPHRASE", p);
        }
        command.output().unwrap()
    };
    let plain = dir.path().join("plain.json");
    let document = serde_json::json!({
        "format": "wachet-export", "version": 1, "exportedAt": "2026-01-01T00:00:00Z",
        "folders": [], "notificationEndpoints": [], "complete": true,
        "monitors": [{
            "name": "orders", "url": "https://example.com/orders", "recurrenceInSeconds": 3600,
            "login": {"steps": [{"action": "type", "selector": "#password",
                                 "value": "hunter2 secret", "secret": true}],
                      "loggedInWhen": "#account"},
            "notificationEndpoints": [{"type": "Url", "value": "tgram://123:BOTSECRET/42"}]
        }]
    });
    std::fs::write(&plain, document.to_string()).unwrap();
    let out = run(&["import", plain.to_str().unwrap()], &db, None);
    assert!(out.status.success(), "{}", stderr(&out));

    let file = dir.path().join("secrets.json");
    let file = file.to_str().unwrap();
    let out = run(&["export", "--secrets", "-o", file], &db, None);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--secrets needs a passphrase"),
        "{}",
        stderr(&out)
    );
    let key = dir.path().join("passphrase.txt");
    std::fs::write(&key, "tea at five o'clock\n").unwrap();
    let key = key.to_str().unwrap();
    let out = run(
        &["export", "--secrets", "--passphrase-file", key, "-o", file],
        &db,
        None,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("2 secret(s) encrypted"),
        "{}",
        stderr(&out)
    );
    let written = std::fs::read_to_string(file).unwrap();
    for secret in ["hunter2", "BOTSECRET", "sealed~", "tea at five"] {
        assert!(!written.contains(secret), "{secret} in {written}");
    }
    assert!(written.contains("passphrase~"), "{written}");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");

    let out = run(&["import", file], &db2, Some("tea at six o'clock"));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("does not open"), "{}", stderr(&out));
    let out = run(&["import", file], &db2, None);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let out = run(&["export"], &db2, None);
    assert!(stderr(&out).contains("0 monitor(s)"), "{}", stderr(&out));

    let out = run(&["import", file, "--passphrase-file", key], &db2, None);
    assert!(out.status.success(), "{}", stderr(&out));
    // Both secrets open with the new database's key, and again once it is rotated.
    let again = |db: &str| {
        let out = run(
            &["export", "--secrets", "-o", "-"],
            db,
            Some("another passphrase"),
        );
        assert!(out.status.success(), "{}", stderr(&out));
        stderr(&out)
    };
    assert!(again(&db2).contains("2 secret(s) encrypted"));
    let out = wachet(&["rotate-key", "--db", &db2]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("2 sealed value(s) sealed again"),
        "{}",
        stdout(&out)
    );
    let after = again(&db2);
    assert!(
        after.contains("2 secret(s) encrypted") && !after.contains("warning"),
        "{after}"
    );
}
