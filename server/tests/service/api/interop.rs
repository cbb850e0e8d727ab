//! What clients written for Wachete's API send and read: date-times and booleans in the query
//! as ISO 8601 and ASP.NET read them, every field the specification types as not nullable
//! present in every response, and webhook payloads read with a Wachete receiver's field names.

use super::history::notification;
use crate::{Api, Setup, id, monitor};
use chrono::{DateTime, Utc};
use reqwest::Method;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use wachet::model::ClientData;
use wachet_server::store::Series;

/// The times of the entries and notifications `ranges` writes: one the evening before, and
/// three on the day, an hour apart.
const TIMES: [&str; 4] = [
    "2026-12-05T23:00:00Z",
    "2026-12-06T01:00:00Z",
    "2026-12-06T02:00:00Z",
    "2026-12-06T03:00:00Z",
];

/// The times of a page of a list, as its entries say them.
fn times(page: &Value, field: &str) -> Vec<String> {
    page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry[field].as_str().unwrap().to_string())
        .collect()
}

both!(date_times_and_booleans_read_as_clients_send_them);
async fn date_times_and_booleans_read_as_clients_send_them() {
    let api = Api::start().await;
    let user = api.user("ada@example.com").await;
    let task = id(&api
        .task(&user, monitor("tea", "https://example.com/"))
        .await);
    for (i, time) in TIMES.iter().enumerate() {
        let at: DateTime<Utc> = time.parse().unwrap();
        let data = ClientData::value(at, format!("Tea {i}.50 EUR"));
        api.store
            .append_entry(&Series::Task(task.clone()), &data)
            .await
            .unwrap();
        api.store
            .insert_notification(&notification(&task, at, i))
            .await
            .unwrap();
    }
    let history = format!("/thirdparty/v1/data/list/{task}");
    let notifications = format!("/thirdparty/v1/notification/list?taskId={task}");
    let lists = [
        (history.clone() + "?", "lastCheckTimestamp"),
        (notifications.clone() + "&", "timestamp"),
    ];
    let from_two = ["2026-12-06T03:00:00Z", "2026-12-06T02:00:00Z"];
    // Each spelling of 02:00 UTC: with Z, an offset (encoded, and as a `+` a client left
    // unencoded, which the query reads as a space), no offset (Python's isoformat), 0 to 9
    // fractional digits (.NET's "o" writes seven).
    for spelling in [
        "2026-12-06T02:00:00Z",
        "2026-12-06T03:00:00%2B01:00",
        "2026-12-06T03:00:00+01:00",
        "2026-12-05T22:00:00-04:00",
        "2026-12-06T02:00:00",
        "2026-12-06T02:00:00.000000",
        "2026-12-06T02:00:00.0000000",
        "2026-12-06T02:00:00.000000000Z",
        "2026-12-06T02:00",
    ] {
        for (list, field) in &lists {
            let page = api.get(&user, &format!("{list}from={spelling}")).await;
            assert_eq!(times(page.ok(), field), from_two, "{list} from={spelling}");
        }
    }
    // Python's datetime.utcnow().isoformat(): microseconds, no offset, taken as UTC.
    for (list, field) in &lists {
        let page = api
            .get(&user, &format!("{list}to=2026-12-06T01:00:00.123456"))
            .await;
        assert_eq!(
            times(page.ok(), field),
            ["2026-12-06T01:00:00Z", "2026-12-05T23:00:00Z"],
            "{list}"
        );
        // A bare date is its midnight, UTC.
        let page = api.get(&user, &format!("{list}from=2026-12-06")).await;
        assert_eq!(times(page.ok(), field).len(), 3, "{list}");
        let page = api.get(&user, &format!("{list}to=2026-12-06")).await;
        assert_eq!(times(page.ok(), field), ["2026-12-05T23:00:00Z"], "{list}");
    }

    // Booleans in any case, or 1 and 0.
    for (spelling, on) in [
        ("true", true),
        ("True", true),
        ("TRUE", true),
        ("1", true),
        ("false", false),
        ("False", false),
        ("0", false),
    ] {
        let page = api
            .get(&user, &format!("{history}?returnDiff={spelling}"))
            .await;
        let diff = &page.ok()["data"][0]["diff"];
        assert_eq!(diff.is_array(), on, "returnDiff={spelling}: {diff}");
        let page = api
            .get(&user, &format!("{notifications}&html={spelling}"))
            .await;
        let html = &page.ok()["data"][0]["html"];
        assert_eq!(html.is_string(), on, "html={spelling}: {html}");
    }

    // What is none of these: a 400 naming the parameter, saying what is read.
    for (list, _) in &lists {
        for (query, field, words) in [
            ("from=2026-13-40", "from", "no such date"),
            ("from=yesterday", "from", "RFC 3339"),
            ("to=2026-12-06T02:00:00.1234567890Z", "to", "1 to 9 digits"),
            ("count=-1", "count", "between 1 and 500"),
        ] {
            let reply = api.get(&user, &format!("{list}{query}")).await;
            reply.field_error(field, words);
            reply.field_error(field, if field == "count" { "-1" } else { "such as" });
        }
    }
    api.get(&user, &format!("{history}?returnDiff=maybe"))
        .await
        .field_error("returnDiff", "send true or false (in any case), 1 or 0");
    api.get(&user, &format!("{notifications}&html=maybe"))
        .await
        .field_error("html", "send true or false (in any case), 1 or 0");
}

/// One field of a resource of the specification (part 2): its name, its type as written, and
/// whether the specification lets it be null.
#[derive(Debug)]
struct SpecField {
    name: String,
    kind: String,
    nullable: bool,
}

/// The resources of part 2 of the specification, read from its text: tables (`| field | type
/// | notes |`) and the paragraphs that list fields as `name (type, ...)`.
struct Spec {
    /// Each resource's fields, by its schema name.
    schemas: BTreeMap<String, Vec<SpecField>>,
    /// Other names of a resource (the section title's, as `Monitor` for `ClientTask`) and its
    /// section number (`2.13`), to the schema name.
    names: BTreeMap<String, String>,
}

impl Spec {
    fn read() -> Spec {
        let text = include_str!("../../assets/specification.txt");
        let part = &text[text.find("## 2.").unwrap()..text.find("## 3.").unwrap()];
        let field_re = regex::Regex::new(r"\b(\w+) \(([^()]*)\)").unwrap();
        let mut spec = Spec {
            schemas: BTreeMap::new(),
            names: BTreeMap::new(),
        };
        for section in part.split("\n### ").skip(1) {
            let (title, body) = section.split_once('\n').unwrap();
            let (number, title) = title.split_once(' ').unwrap();
            if title.starts_with("Enumerations") {
                continue;
            }
            // "Monitor (ClientTask)": the schema name in parentheses, else the title itself.
            // "ClientData (one check result / history entry)": a description, not a name.
            let (schema, other) = match title.split_once(" (") {
                Some((other, paren)) if !paren.contains(' ') => {
                    (paren.trim_end_matches(')').to_string(), other)
                }
                Some((name, _)) => (name.to_string(), ""),
                None => (title.to_string(), ""),
            };
            let table: Vec<SpecField> = body
                .lines()
                .filter_map(|line| line.strip_prefix("| "))
                .map(|line| line.split(" | ").collect::<Vec<_>>())
                .filter(|cells| {
                    cells.len() >= 2 && cells[0] != "Field" && !cells[0].starts_with("---")
                })
                .map(|cells| SpecField {
                    name: cells[0].to_string(),
                    kind: cells[1].trim_end_matches(" |").to_string(),
                    nullable: cells[1].contains("nullable"),
                })
                .collect();
            let inline = |text: &str| -> Vec<SpecField> {
                let mut fields: Vec<SpecField> = field_re
                    .captures_iter(text)
                    .map(|c| SpecField {
                        name: c[1].to_string(),
                        kind: c[2].to_string(),
                        nullable: c[2].contains("nullable"),
                    })
                    .collect();
                // "include and exclude, each an array of UrlFilterValue, nullable."
                if let Some((names, kind)) = text.split_once(", each ") {
                    for name in names.split(" and ") {
                        fields.push(SpecField {
                            name: name.trim().to_string(),
                            kind: kind
                                .trim_end_matches('.')
                                .trim_start_matches("an ")
                                .to_string(),
                            nullable: kind.contains("nullable"),
                        });
                    }
                }
                fields
            };
            if !table.is_empty() {
                spec.add(&schema, table, &[other, number]);
                continue;
            }
            let bullets: Vec<&str> = body
                .lines()
                .filter_map(|line| line.strip_prefix("- "))
                .collect();
            if bullets.is_empty() {
                spec.add(&schema, inline(body), &[other, number]);
            }
            for bullet in bullets {
                let (name, fields) = bullet.split_once(": ").unwrap();
                spec.add(name, inline(fields), &[number]);
            }
        }
        spec
    }

    fn add(&mut self, schema: &str, fields: Vec<SpecField>, names: &[&str]) {
        assert!(!fields.is_empty(), "no fields read for {schema}");
        for name in names.iter().filter(|n| !n.is_empty() && !n.contains(' ')) {
            self.names
                .entry(name.to_string())
                .or_insert(schema.to_string());
        }
        self.names.insert(schema.to_string(), schema.to_string());
        self.schemas.insert(schema.to_string(), fields);
    }

    /// The schema a type names: `ClientData (2.7)`, `array of Folder`, `array of key/value
    /// pairs (2.13)`.
    fn schema_of(&self, kind: &str) -> Option<&str> {
        let word = kind
            .split(|c: char| !c.is_alphanumeric())
            .next()
            .unwrap_or("");
        let section = regex::Regex::new(r"\((2\.\d+)\)").unwrap();
        self.names
            .get(word)
            .or_else(|| section.captures(kind).and_then(|c| self.names.get(&c[1])))
            .map(String::as_str)
    }

    /// Checks `value` against `schema`: every field the specification types as not nullable is
    /// present and not null, and every field present has its type. Nested resources are
    /// walked; each schema met goes into `seen`.
    fn walk(
        &self,
        schema: &str,
        value: &Value,
        at: &str,
        seen: &mut BTreeSet<String>,
    ) -> Vec<String> {
        let mut problems = Vec::new();
        let Some(fields) = self.schemas.get(schema) else {
            return vec![format!("{at}: no schema {schema}")];
        };
        seen.insert(schema.to_string());
        if !value.is_object() {
            return vec![format!("{at}: a {schema} is an object, not {value}")];
        }
        for field in fields {
            let path = format!("{at}.{}", field.name);
            match value.get(&field.name) {
                None | Some(Value::Null) if !field.nullable => problems.push(format!(
                    "{path} is {} but the specification types it as {}",
                    if value.get(&field.name).is_none() {
                        "missing"
                    } else {
                        "null"
                    },
                    field.kind
                )),
                None | Some(Value::Null) => {}
                Some(found) => problems.extend(self.check(&field.kind, found, &path, seen)),
            }
        }
        problems
    }

    fn check(
        &self,
        kind: &str,
        value: &Value,
        at: &str,
        seen: &mut BTreeSet<String>,
    ) -> Vec<String> {
        let wrong = |what: &str| vec![format!("{at} is {value}, not {what} ({kind})")];
        if let Some(item) = kind.strip_prefix("array of ") {
            let Some(items) = value.as_array() else {
                return wrong("an array");
            };
            return items
                .iter()
                .enumerate()
                .flat_map(|(i, v)| self.check(item, v, &format!("{at}[{i}]"), seen))
                .collect();
        }
        let scalar = |name: &str| kind == name || kind.starts_with(&format!("{name},"));
        if kind.starts_with("enumeration") {
            // Output writes an enumeration's name (DECISIONS).
            return if value.is_string() {
                vec![]
            } else {
                wrong("a name")
            };
        }
        if scalar("string") {
            return if value.is_string() {
                vec![]
            } else {
                wrong("a string")
            };
        }
        if scalar("boolean") {
            return if value.is_boolean() {
                vec![]
            } else {
                wrong("a boolean")
            };
        }
        if scalar("int32") || scalar("int64") {
            return if value.is_i64() {
                vec![]
            } else {
                wrong("an integer")
            };
        }
        if scalar("date-time") {
            let time = value
                .as_str()
                .and_then(|t| DateTime::parse_from_rfc3339(t).ok());
            return if time.is_some() {
                vec![]
            } else {
                wrong("a date-time")
            };
        }
        match self.schema_of(kind) {
            Some(schema) => self.walk(schema, value, at, seen),
            None => vec![format!("{at}: the type {kind:?} names no schema")],
        }
    }
}

/// What the test server's page of a Portal monitor looks like to its crawl.
const PORTAL: &str = "https://blog.example/";

both!(no_field_the_specification_types_as_not_nullable_is_ever_null);
async fn no_field_the_specification_types_as_not_nullable_is_ever_null() {
    let spec = Spec::read();
    // The resources the specification's part 2 names, each read.
    for schema in [
        "ClientLoginRequest",
        "ClientLoginResponse",
        "ClientTask",
        "ClientAlert",
        "AlertParameters",
        "ClientData",
        "DiffElement",
        "ClientDataRange",
        "ClientNotificationRange",
        "ClientFolderContent",
        "UrlFilter",
        "UrlFilterValue",
        "Folder",
        "NotificationEndpoint",
        "StringStringKeyValuePair",
        "WebProxyInfo",
        "ClientNotification",
        "ClientAlertContentResponse",
        "ClientPage",
    ] {
        assert!(
            spec.schemas.contains_key(schema),
            "{schema}: {:?}",
            spec.schemas.keys()
        );
    }
    assert!(
        !spec.schemas["ClientTask"]
            .iter()
            .any(|f| f.name == "crawlingDepth" && f.nullable)
    );

    let mut setup = Setup::api();
    setup.engine = setup.engine.proxy("us", "http://127.0.0.1:9");
    let api = Api::start_as(setup).await;
    let user = api.user("ada@example.com").await;
    let mut replies: Vec<(&str, String, Value)> = Vec::new();
    let mut keep = |schema: &'static str, what: &str, reply: &crate::Reply| {
        replies.push((schema, what.to_string(), reply.ok().clone()));
    };

    let login = api
        .send(
            Method::POST,
            "/thirdparty/v1/user/login",
            None,
            Some(json!({"email": "ada@example.com", "password": "pass word 1"})),
        )
        .await;
    keep("ClientLoginResponse", "login", &login);
    let apilogin = api
        .send(
            Method::POST,
            "/thirdparty/v1/user/apilogin",
            None,
            Some(json!({"userId": user.account.id, "apiKey": user.account.api_key, "expiresInSec": 3600})),
        )
        .await;
    keep("ClientLoginResponse", "apilogin", &apilogin);

    let folder = api.folder(&user, "News", None).await;
    let sub = api
        .post(
            &user,
            "/thirdparty/v1/folder",
            json!({"name": "Local", "parentId": folder}),
        )
        .await;
    keep("Folder", "POST /folder", &sub);
    let sub = id(sub.ok());
    // A SinglePage monitor as a Wachete client sends it: no crawlingDepth, no urlFilter, an
    // alert without parameters, headers, proxies and endpoints.
    let single = api
        .put(
            &user,
            "/thirdparty/v1/task",
            json!({
                "name": "Ferry", "url": "https://news.example/ferry", "xPath": "//main",
                "folderId": sub, "recurrenceInSeconds": 3600,
                "alerts": [{"type": "NotEq"}, {"type": "Contains", "value": "cancelled",
                            "parameters": {"compare": "Added"}}],
                "headers": [{"key": "Accept-Language", "value": "en"}],
                "proxies": [{"location": "us"}],
                "notificationEndpoints": [{"type": "Webhook", "value": "https://hooks.example/w"}]
            }),
        )
        .await;
    keep(
        "ClientTask",
        "PUT /task (SinglePage, not checked yet)",
        &single,
    );
    let single = single.ok().clone();
    assert_eq!(single["crawlingDepth"], 2, "a SinglePage monitor's default");
    assert_eq!(single["data"], crate::not_checked());
    // The walk finds what a typed client would fail on.
    let mut broken = single.clone();
    broken["crawlingDepth"] = Value::Null;
    broken["data"]["lastCheckTimestamp"] = Value::Null;
    broken["alerts"][0]["parameters"] = Value::Null;
    broken.as_object_mut().unwrap().remove("scrollPage");
    let found = spec.walk("ClientTask", &broken, "monitor", &mut BTreeSet::new());
    assert_eq!(
        found,
        [
            "monitor.alerts[0].parameters is null but the specification types it as AlertParameters (2.6)",
            "monitor.data.lastCheckTimestamp is null but the specification types it as date-time",
            "monitor.scrollPage is missing but the specification types it as boolean",
            "monitor.crawlingDepth is null but the specification types it as int32",
        ]
    );
    let task = id(&single);
    let portal = api
        .put(
            &user,
            "/thirdparty/v1/task",
            json!({"name": "Blog", "url": PORTAL, "jobType": "Portal", "crawlingDepth": 3,
                   "urlFilter": {"include": [{"filter": "/posts/", "type": "Contains"}]},
                   "recurrenceInSeconds": 3600}),
        )
        .await;
    keep("ClientTask", "PUT /task (Portal)", &portal);
    assert_eq!(portal.ok()["crawlingDepth"], 3);
    let portal = id(portal.ok());
    let bulk = api
        .put(
            &user,
            "/thirdparty/v1/tasks",
            json!([{"url": "https://news.example/weather"}]),
        )
        .await;
    let bulk = bulk.ok().clone();

    // Checks: values, a failure, a crawled page; a notification with its content.
    let base: DateTime<Utc> = "2026-12-06T02:00:00Z".parse().unwrap();
    let series = Series::Task(task.clone());
    for (i, data) in [
        ClientData::value(base, "Ferry runs".into()),
        ClientData::failure(base + chrono::Duration::minutes(1), "HTTP 503".into()),
        ClientData::value(
            base + chrono::Duration::minutes(2),
            "Ferry cancelled".into(),
        ),
    ]
    .iter()
    .enumerate()
    {
        api.store.append_entry(&series, data).await.unwrap();
        api.store
            .insert_notification(&notification(&task, data.last_check_timestamp, i))
            .await
            .unwrap();
    }
    let page = Series::Page {
        task_id: portal.clone(),
        url: format!("{PORTAL}posts/1"),
        name: Some("First post".into()),
    };
    api.store
        .append_entry(&page, &ClientData::value(base, "Hello".into()))
        .await
        .unwrap();
    api.store
        .append_entry(
            &Series::Task(portal.clone()),
            &ClientData::value(base, format!("{PORTAL}posts/1")),
        )
        .await
        .unwrap();

    for (schema, path) in [
        ("ClientTask", format!("/thirdparty/v1/task/{task}")),
        ("ClientTask", format!("/thirdparty/v1/task/{portal}")),
        (
            "ClientFolderContent",
            "/thirdparty/v1/folder/list".to_string(),
        ),
        (
            "ClientFolderContent",
            format!("/thirdparty/v1/folder/list?parentId={folder}"),
        ),
        (
            "ClientFolderContent",
            format!("/thirdparty/v1/folder/list?parentId={sub}"),
        ),
        (
            "ClientDataRange",
            format!("/thirdparty/v1/data/list/{task}?returnDiff=true"),
        ),
        (
            "ClientNotificationRange",
            "/thirdparty/v1/notification/list?html=true".to_string(),
        ),
        (
            "ClientNotificationRange",
            "/thirdparty/v1/notification/list".to_string(),
        ),
    ] {
        keep(schema, &path, &api.get(&user, &path).await);
    }
    let notes = api.get(&user, "/thirdparty/v1/notification/list").await;
    let note = id(&notes.ok()["data"][0]);
    let content = api
        .get(&user, &format!("/thirdparty/v1/notification/{note}"))
        .await;
    keep(
        "ClientAlertContentResponse",
        "GET /notification/{id}",
        &content,
    );
    let pages = api
        .get(&user, &format!("/thirdparty/v1/task/{portal}/pages"))
        .await;
    let page_id = id(&pages.ok()[0]);
    let history = api
        .get(&user, &format!("/thirdparty/v1/data/list/{page_id}"))
        .await;
    keep("ClientDataRange", "GET /data/list/{page}", &history);

    let mut seen = BTreeSet::new();
    let mut problems = Vec::new();
    for (schema, what, body) in &replies {
        problems.extend(spec.walk(schema, body, what, &mut seen));
    }
    // Endpoints that answer with arrays.
    let search = api.get(&user, "/thirdparty/v1/task/search").await;
    for (schema, what, body) in [
        ("ClientTask", "GET /task/search", search.ok()),
        ("ClientPage", "GET /task/{id}/pages", pages.ok()),
        ("ClientTask", "PUT /tasks", &bulk),
    ] {
        let items = body.as_array().unwrap();
        assert!(!items.is_empty(), "{what}");
        for (i, item) in items.iter().enumerate() {
            problems.extend(spec.walk(schema, item, &format!("{what}[{i}]"), &mut seen));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // Every resource a response carries was read, so a field added to any is walked.
    let requests = ["ClientLoginRequest", "ApiLoginRequest", "MoveRequest"];
    let unseen: Vec<&String> = spec
        .schemas
        .keys()
        .filter(|s| !seen.contains(*s) && !requests.contains(&s.as_str()))
        .collect();
    assert!(unseen.is_empty(), "no response walked {unseen:?}");

    // A Portal monitor's depth outside 1 to 3: a 400 naming it, nothing stored.
    let before = search.ok().as_array().unwrap().len();
    for depth in [0, 4] {
        api.put(
            &user,
            "/thirdparty/v1/task",
            json!({"url": PORTAL, "jobType": "Portal", "crawlingDepth": depth}),
        )
        .await
        .field_error("crawlingDepth", &format!("must be 1, 2 or 3, not {depth}"));
    }
    let after = api.get(&user, "/thirdparty/v1/task/search").await;
    assert_eq!(after.ok().as_array().unwrap().len(), before);
}

both!(a_webhook_reads_as_a_wachete_receiver_reads_it, multi_thread);
async fn a_webhook_reads_as_a_wachete_receiver_reads_it() {
    use super::delivery::{Receiver, changing_monitor};
    use wachet::testing::FixtureServer;

    /// What a receiver written for Wachete reads of a webhook.
    #[derive(Debug, serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct WacheteAlert {
        alert_id: String,
        name: String,
        current: String,
        previous: String,
        user_id: String,
        task_id: String,
        alert_url: String,
        timestamp: String,
    }

    let site = FixtureServer::builder()
        .page("/tea", "<p>3.50 EUR</p>")
        .start()
        .await
        .unwrap();
    // The receiver fails the first delivery: it is tried again.
    let (receiver, hook) = Receiver::start(1).await;
    // The service answers to the name its proxy forwards (any other Host is refused).
    let mut setup = Setup::checking();
    setup.service.api.allowed_hosts = vec!["wachet.example".into()];
    let api = Api::start_as(setup).await;
    let user = api.user("ann@example.com").await;
    // The user's last login reached the service as https://wachet.example:8443 (a proxy in
    // front of it): the payload links there.
    let login = api
        .raw(
            api.client()
                .post(api.url("/thirdparty/v1/user/apilogin"))
                .header("host", "Wachet.example:8443")
                .header("x-forwarded-proto", "https")
                .json(&json!({"userId": user.account.id, "apiKey": user.account.api_key})),
        )
        .await;
    login.ok();
    let task = changing_monitor(
        &api,
        &user,
        &site,
        json!([{"type": "Webhook", "value": hook}]),
    )
    .await;
    let seen = receiver.wait_for(2).await;
    let (_, body) = &seen[1];
    let alert: WacheteAlert = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
    let payload: Value = serde_json::from_str(body).unwrap();
    assert_eq!(alert.alert_id, payload["id"].as_str().unwrap());
    assert_eq!(alert.name, "Tea");
    assert_eq!(payload["taskName"], "Tea");
    assert_eq!(alert.current, "3.90 EUR");
    assert_eq!(alert.previous, "3.50 EUR");
    assert_eq!(payload["comparand"], "3.50 EUR");
    assert_eq!(alert.user_id, user.account.id);
    assert_eq!(alert.task_id, task);
    assert_eq!(
        alert.alert_url,
        format!(
            "https://wachet.example:8443/thirdparty/v1/notification/{}",
            alert.alert_id
        )
    );
    // Every time in milliseconds.
    let millis = regex::Regex::new(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$").unwrap();
    assert!(millis.is_match(&alert.timestamp), "{body}");
    for field in ["serverTime", "firstSeen"] {
        if let Some(time) = payload.get(field) {
            assert!(millis.is_match(time.as_str().unwrap()), "{field}: {body}");
        }
    }
    assert!(payload.get("firstSeen").is_some(), "{body}");
    // The failed try and the one that went, as the owner sees them.
    let deliveries = api
        .get(
            &user,
            &format!("/thirdparty/v1/notification/{}/deliveries", alert.alert_id),
        )
        .await;
    let delivery = &deliveries.ok()[0];
    assert_eq!(delivery["state"], "delivered", "{delivery}");
    assert_eq!(delivery["attempts"], 2, "{delivery}");
}
