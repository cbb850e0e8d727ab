//! The security and bad-input sweep of the whole web interface: a second user reaching every
//! route with the first user's ids gets exactly what an unknown id gets; sessions that end (idle,
//! absolute) or cookies that were tampered with lead to the sign-in page, never a 500; large
//! values give bounded pages; forms submitted twice or after what they name was deleted give a
//! clear answer and change nothing more.

use crate::support::web::{
    PASSWORD, client, csrf_of, page_text, post_form, session_cookie, set_cookie, sign_in,
};
use crate::{Api, User, id};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use wachet::model::{Alert, AlertType, ClientData, JobType};
use wachet_server::store::{NewNotification, Series};

/// Ids of the right shape that name nothing, one per kind of thing.
const UNKNOWN: [&str; 6] = [
    "0f0f0f0f-0f0f-4f0f-8f0f-0f0f0f0f0f01",
    "0f0f0f0f-0f0f-4f0f-8f0f-0f0f0f0f0f02",
    "0f0f0f0f-0f0f-4f0f-8f0f-0f0f0f0f0f03",
    "0f0f0f0f-0f0f-4f0f-8f0f-0f0f0f0f0f04",
    "0f0f0f0f-0f0f-4f0f-8f0f-0f0f0f0f0f05",
    "0f0f0f0f-0f0f-4f0f-8f0f-0f0f0f0f0f06",
];

/// Every route of the interface, as `server/src/web/mod.rs` declares it.
fn declared_routes() -> BTreeSet<String> {
    let source = include_str!("../../../src/web/mod.rs");
    source
        .split(".route(")
        .skip(1)
        .map(|rest| {
            let rest = rest.trim_start().strip_prefix('"').unwrap();
            rest[..rest.find('"').unwrap()].to_string()
        })
        .collect()
}

/// Routes that take no id of anyone's: read by the second user, they must show none of the
/// first user's data (checked below), and there is nothing of the first user's to name in them.
const WITHOUT_IDS: &[&str] = &[
    "/",
    "/signin",
    "/signout",
    "/live",
    "/monitors/new",
    "/monitors/preview",
    "/monitors/pick",
    "/notifications",
    "/settings",
    "/settings/endpoints",
    "/settings/webhook-secret",
    "/settings/api-key",
    "/settings/password",
    "/settings/sign-out-everywhere",
    "/settings/time-zone",
    // Import and export act on the signed-in user's own monitors: no id to guess.
    "/settings/export",
    "/settings/import",
    "/settings/import/confirm",
    "/feeds/all.atom",
    "/assets/{name}",
    "/favicon.ico",
];

/// One request of the sweep: the route it covers, the method, the path and form fields with
/// placeholders (`{monitor}`, `{folder}`, ...) filled once with the first user's ids and once
/// with unknown ones.
struct Case {
    route: &'static str,
    post: bool,
    path: &'static str,
    fields: &'static [(&'static str, &'static str)],
    /// Whether the answer must be the 404 page (else: the same answer as for unknown ids,
    /// whatever it is, such as the form again with a message).
    not_found: bool,
}

const fn get(route: &'static str, path: &'static str) -> Case {
    Case {
        route,
        post: false,
        path,
        fields: &[],
        not_found: true,
    }
}

const fn post(
    route: &'static str,
    path: &'static str,
    fields: &'static [(&'static str, &'static str)],
) -> Case {
    Case {
        route,
        post: true,
        path,
        fields,
        not_found: true,
    }
}

const fn same(mut case: Case) -> Case {
    case.not_found = false;
    case
}

const CASES: &[Case] = &[
    get("/folders/{id}", "/folders/{folder}"),
    get("/folders/{id}/rename", "/folders/{folder}/rename"),
    post(
        "/folders/{id}/rename",
        "/folders/{folder}/rename",
        &[("name", "Taken over")],
    ),
    get(
        "/folders/{id}/notifications",
        "/folders/{folder}/notifications",
    ),
    post(
        "/folders/{id}/notifications",
        "/folders/{folder}/notifications",
        &[("endpoints", "Webhook https://taken.example/hook")],
    ),
    get("/folders/{id}/move", "/folders/{folder}/move"),
    post(
        "/folders/{id}/move",
        "/folders/{folder}/move",
        &[("into", "")],
    ),
    get("/folders/{id}/delete", "/folders/{folder}/delete"),
    post("/folders/{id}/delete", "/folders/{folder}/delete", &[]),
    same(get("/folders/new", "/folders/new?parent={folder}")),
    same(post(
        "/folders/new",
        "/folders/new",
        &[("name", "Inside"), ("parent", "{folder}")],
    )),
    same(post(
        "/monitors/bulk",
        "/monitors/bulk",
        &[("action", "pause"), ("id", "{monitor}"), ("back", "/")],
    )),
    same(post(
        "/monitors/bulk",
        "/monitors/bulk",
        &[("action", "delete"), ("id", "{monitor}"), ("back", "/")],
    )),
    same(post(
        "/monitors/bulk/move",
        "/monitors/bulk/move",
        &[("id", "{monitor}"), ("folder", ""), ("back", "/")],
    )),
    same(post(
        "/monitors/bulk/move",
        "/monitors/bulk/move",
        &[("id", "{own}"), ("folder", "{folder}"), ("back", "/")],
    )),
    same(post(
        "/monitors/bulk/delete",
        "/monitors/bulk/delete",
        &[("id", "{monitor}"), ("back", "/")],
    )),
    get("/monitors/{id}/row", "/monitors/{monitor}/row"),
    get("/monitors/{id}/status", "/monitors/{monitor}/status"),
    same(post(
        "/monitors/quick-add",
        "/monitors/quick-add",
        &[("url", "http://127.0.0.1:9/"), ("folder", "{folder}")],
    )),
    same(get("/monitors/new", "/monitors/new?folder={folder}")),
    same(post(
        "/monitors/new",
        "/monitors/new",
        &[
            ("name", "Mine"),
            ("url", "http://127.0.0.1:9/"),
            ("folder", "{folder}"),
        ],
    )),
    get("/monitors/{id}/edit", "/monitors/{monitor}/edit"),
    post(
        "/monitors/{id}/edit",
        "/monitors/{monitor}/edit",
        &[("name", "Taken over"), ("url", "http://127.0.0.1:9/")],
    ),
    same(get("/monitors/pick", "/monitors/pick?token={token}")),
    same(get(
        "/monitors/pick/value",
        "/monitors/pick/value?token={token}&xPath=//p",
    )),
    same(get(
        "/monitors/pick/frame/{token}",
        "/monitors/pick/frame/{token}",
    )),
    get("/monitors/{id}/pick", "/monitors/{monitor}/pick"),
    get("/monitors/record/{token}", "/monitors/record/{recording}"),
    get(
        "/monitors/record/{token}/shot",
        "/monitors/record/{recording}/shot",
    ),
    post(
        "/monitors/record/{token}",
        "/monitors/record/{recording}",
        &[("do", "close")],
    ),
    get(
        "/monitors/{id}/pages/{page}",
        "/monitors/{portal}/pages/{page}",
    ),
    get(
        "/monitors/{id}/pages/{page}/history",
        "/monitors/{portal}/pages/{page}/history",
    ),
    get(
        "/monitors/{id}/pages/{page}/diff",
        "/monitors/{portal}/pages/{page}/diff",
    ),
    get("/monitors/{id}", "/monitors/{monitor}"),
    get("/monitors/{id}", "/monitors/{portal}"),
    post("/monitors/{id}/pause", "/monitors/{monitor}/pause", &[]),
    post("/monitors/{id}/resume", "/monitors/{monitor}/resume", &[]),
    get("/monitors/{id}/delete", "/monitors/{monitor}/delete"),
    post("/monitors/{id}/delete", "/monitors/{monitor}/delete", &[]),
    post("/monitors/{id}/delete", "/monitors/{portal}/delete", &[]),
    get("/monitors/{id}/history", "/monitors/{monitor}/history"),
    get(
        "/monitors/{id}/history/latest",
        "/monitors/{monitor}/history/latest",
    ),
    get(
        "/monitors/{id}/pages/{page}/history/latest",
        "/monitors/{portal}/pages/{page}/history/latest",
    ),
    get("/monitors/{id}/diff", "/monitors/{monitor}/diff"),
    get("/monitors/{id}/diff", "/monitors/{monitor}/diff?{diff}"),
    get(
        "/monitors/{id}/diff",
        "/monitors/{monitor}/diff?{diff}&view=split",
    ),
    post(
        "/notifications/{id}/deliveries/{delivery}/retry",
        "/notifications/{note}/deliveries/{delivery}/retry",
        &[],
    ),
    get("/notifications/{id}", "/notifications/{note}"),
    same(get("/notifications", "/notifications?task={monitor}")),
    same(post(
        "/settings/endpoints/remove",
        "/settings/endpoints/remove",
        &[("kind", "1"), ("value", "{hook}")],
    )),
    same(post(
        "/settings/endpoints/test",
        "/settings/endpoints/test",
        &[("value", "{hook}")],
    )),
    // Another user's endpoint is not in this user's list: nothing changes, as for a made-up one.
    same(post(
        "/settings/endpoints/schedule",
        "/settings/endpoints/schedule",
        &[
            ("kind", "1"),
            ("value", "{hook}"),
            ("when", "every"),
            ("digest.everyMinutes", "5"),
        ],
    )),
    // A template previewed against another user's monitor says "choose one of your monitors",
    // as for a made-up id.
    same(post(
        "/settings/endpoints/preview",
        "/settings/endpoints/preview",
        &[
            ("kind", "1"),
            ("value", "{hook}"),
            ("body", "{{ monitor.name }}"),
            ("monitor", "{monitor}"),
        ],
    )),
    same(post(
        "/settings/feeds",
        "/settings/feeds",
        &[("target", "monitor:{monitor}")],
    )),
    same(post(
        "/settings/feeds",
        "/settings/feeds",
        &[("target", "folder:{folder}")],
    )),
    // A feed made or renewed from its folder's or monitor's page.
    post(
        "/feeds/renew",
        "/feeds/renew",
        &[
            ("target", "monitor:{monitor}"),
            ("back", "/monitors/{monitor}"),
        ],
    ),
    post(
        "/feeds/renew",
        "/feeds/renew",
        &[("target", "folder:{folder}"), ("back", "/folders/{folder}")],
    ),
    // A second submit finds the feed gone and shows the list, as asked: so does an unknown id.
    same(post(
        "/settings/feeds/{id}/delete",
        "/settings/feeds/{feed}/delete",
        &[],
    )),
    same(get(
        "/feeds/folders/{file}",
        "/feeds/folders/{folder}.atom?key={own_key}",
    )),
    same(get(
        "/feeds/monitors/{file}",
        "/feeds/monitors/{monitor}.atom?key={own_key}",
    )),
    same(get(
        "/feeds/monitors/{file}",
        "/feeds/monitors/{monitor}.atom",
    )),
];

/// Everything of the first user's that the sweep names, and an unknown stand-in for each.
struct Names {
    pairs: Vec<(&'static str, String, String)>,
}

impl Names {
    fn fill(&self, text: &str, theirs: bool) -> String {
        let mut out = text.to_string();
        for (name, first, unknown) in &self.pairs {
            out = out.replace(name, if theirs { first } else { unknown });
        }
        out
    }

    /// The answer with the filled-in values put back to their placeholders, so that the two
    /// answers compare on what they say and not on the id they echo.
    fn unfill(&self, text: &str) -> String {
        let mut out = text.to_string();
        for (name, first, unknown) in &self.pairs {
            if !first.is_empty() {
                out = out.replace(first.as_str(), name);
            }
            if !unknown.is_empty() {
                out = out.replace(unknown.as_str(), name);
            }
        }
        out
    }
}

/// What the API says of the first user's things, to check nothing changed.
async fn snapshot(api: &Api, user: &User, ids: &[(&str, String)]) -> Vec<Value> {
    let mut all = Vec::new();
    for (kind, id) in ids {
        let path = match *kind {
            "monitor" => format!("/thirdparty/v1/task/{id}"),
            "pages" => format!("/thirdparty/v1/task/{id}/pages"),
            "history" => format!("/thirdparty/v1/data/list/{id}"),
            "folder" => format!("/thirdparty/v1/folder/list?parentId={id}"),
            "deliveries" => format!("/thirdparty/v1/notification/{id}/deliveries"),
            other => other.to_string(),
        };
        let reply = api.get(user, &path).await;
        let mut body = reply.body.clone();
        without_clock(&mut body);
        all.push(json!({"path": path, "status": reply.status, "body": body}));
    }
    all
}

/// Removes the `serverTime` every listing carries: the clock is not Ann's data.
fn without_clock(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("serverTime");
            map.values_mut().for_each(without_clock);
        }
        Value::Array(items) => items.iter_mut().for_each(without_clock),
        _ => {}
    }
}

fn notification(task: &str, n: usize) -> NewNotification {
    NewNotification {
        task_id: task.to_string(),
        page_url: None,
        job_type: JobType::SinglePage,
        alert: Alert {
            kind: AlertType::NotEq,
            value: None,
            parameters: None,
            remind_every_seconds: None,
        },
        created_at: chrono::Utc::now().timestamp_millis(),
        current: Some(format!("ann-secret value {n}")),
        comparand: Some(format!("ann-secret value {}", n - 1)),
        error: None,
        url: Some("https://example.com/".into()),
        synthetic_expression: "content changed".into(),
        html: format!("<p>ann-secret change {n}</p>"),
        endpoints: Vec::new(),
        explanation: None,
    }
}

both!(
    a_second_user_gets_for_every_route_with_the_first_users_ids_what_unknown_ids_get,
    multi_thread
);
async fn a_second_user_gets_for_every_route_with_the_first_users_ids_what_unknown_ids_get() {
    // Every route of the interface is covered here, or declared as taking no id.
    let covered: BTreeSet<String> = CASES
        .iter()
        .map(|case| case.route.to_string())
        .chain(WITHOUT_IDS.iter().map(|route| route.to_string()))
        .collect();
    let declared = declared_routes();
    assert!(declared.len() >= 40, "{declared:?}");
    let uncovered: Vec<_> = declared.difference(&covered).collect();
    assert!(
        uncovered.is_empty(),
        "routes the second-user sweep does not cover; add them to CASES or WITHOUT_IDS: {uncovered:?}"
    );
    let gone: Vec<_> = covered.difference(&declared).collect();
    assert!(gone.is_empty(), "routes no longer declared: {gone:?}");

    let site = wachet::testing::FixtureServer::builder()
        .page("/", "<title>Ann-secret site</title><p>ann-secret text</p>")
        .start()
        .await
        .unwrap();
    let api = Api::start().await;
    let ann = api.user("ann@example.com").await;
    let bob = api.user("bob@example.com").await;

    // One of everything for Ann.
    let hook = format!("{}ann-secret-hook", site.url("/"));
    api.put(
        &ann,
        "/thirdparty/v1/user/notificationEndpoints",
        json!({"notificationEndpoints": [{"type": "Webhook", "value": hook}]}),
    )
    .await
    .ok();
    let folder = api.folder(&ann, "Ann-secret folder", None).await;
    let monitor = id(&api
        .task(
            &ann,
            json!({"name": "Ann-secret monitor", "url": site.url("/"), "folderId": folder,
                   "recurrenceInSeconds": 3600, "note": "ann-secret note"}),
        )
        .await);
    let base = chrono::Utc::now() - chrono::Duration::hours(2);
    for (n, value) in ["ann-secret price 3.50", "ann-secret price 3.90"]
        .iter()
        .enumerate()
    {
        let at = base + chrono::Duration::minutes(n as i64);
        api.store
            .append_entry(
                &Series::Task(monitor.clone()),
                &ClientData::value(at, value.to_string()),
            )
            .await
            .unwrap();
    }
    let note = api
        .store
        .insert_notification(&notification(&monitor, 1))
        .await
        .unwrap();
    let deliveries = api
        .get(
            &ann,
            &format!("/thirdparty/v1/notification/{note}/deliveries"),
        )
        .await;
    let delivery = deliveries.ok()[0]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("a delivery: {}", deliveries.text))
        .to_string();
    let portal = id(&api
        .task(
            &ann,
            json!({"name": "Ann-secret portal", "url": site.url("/"), "jobType": "Portal",
                   "crawlingDepth": 1, "recurrenceInSeconds": 3600}),
        )
        .await);
    for n in 0..2 {
        api.store
            .append_entry(
                &Series::Page {
                    task_id: portal.clone(),
                    url: site.url("/ann-secret-page"),
                    name: Some("Ann-secret page".into()),
                },
                &ClientData::value(
                    base + chrono::Duration::minutes(n),
                    format!("ann-secret page value {n}"),
                ),
            )
            .await
            .unwrap();
    }
    let pages = api
        .get(&ann, &format!("/thirdparty/v1/task/{portal}/pages"))
        .await;
    let page = pages.ok()[0]["id"].as_str().unwrap().to_string();
    let feed = api
        .post(
            &ann,
            "/thirdparty/v1/user/feeds",
            json!({"scope": "monitor", "targetId": monitor}),
        )
        .await;
    let feed_id = feed.ok()["feed"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", feed.text))
        .to_string();
    let ann_cookie = session_cookie(&api, &ann).await;
    // A picker token of Ann's: the page fetched and kept for her.
    let picked = client()
        .get(api.url(&format!(
            "/monitors/pick?url={}",
            urlencoding(&site.url("/"))
        )))
        .header("cookie", &ann_cookie)
        .send()
        .await
        .unwrap();
    let location = picked.headers()["location"].to_str().unwrap().to_string();
    let token = location
        .split("token=")
        .nth(1)
        .unwrap()
        .split('&')
        .next()
        .unwrap()
        .to_string();
    // A recording of Ann's: her page open in the browser on the server.
    let (_, form) = page_text(&api, &ann_cookie, "/monitors/new").await;
    let url = site.url("/");
    let opened = post_form(
        &api,
        &ann_cookie,
        "/monitors/new",
        &[
            ("csrf", csrf_of(&form).as_str()),
            ("url", url.as_str()),
            ("jobType", "SinglePage"),
            ("recurrence", "3600"),
            ("record", "1"),
        ],
    )
    .await;
    let recording = crate::support::web::location(&opened)
        .strip_prefix("/monitors/record/")
        .unwrap_or_else(|| panic!("no recording opened: {}", opened.status()))
        .to_string();
    let (_, history) = page_text(&api, &ann_cookie, &format!("/monitors/{monitor}/history")).await;
    let diff_at = history
        .find(&format!("/monitors/{monitor}/diff?"))
        .expect("a link to the change");
    let diff_query = history[diff_at..]
        .split('"')
        .next()
        .unwrap()
        .split_once('?')
        .unwrap()
        .1
        .replace("&amp;", "&");

    // Bob's own things: a monitor and a feed key.
    let own = id(&api
        .task(
            &bob,
            json!({"name": "Bob's", "url": site.url("/"), "recurrenceInSeconds": 3600}),
        )
        .await);
    let own_feed = api
        .post(&bob, "/thirdparty/v1/user/feeds", json!({"scope": "all"}))
        .await;
    let own_key = own_feed.ok()["url"]
        .as_str()
        .and_then(|url| url.split("key=").nth(1))
        .unwrap_or_else(|| panic!("{}", own_feed.text))
        .to_string();

    let watched = [
        ("monitor", monitor.clone()),
        ("monitor", portal.clone()),
        ("pages", portal.clone()),
        ("history", monitor.clone()),
        ("folder", folder.clone()),
        ("deliveries", note.clone()),
        ("/thirdparty/v1/folder/list", String::new()),
        ("/thirdparty/v1/notification/list", String::new()),
        ("/thirdparty/v1/user/feeds", String::new()),
        ("/thirdparty/v1/user/notificationEndpoints", String::new()),
    ];
    let before = snapshot(&api, &ann, &watched).await;

    let names = Names {
        pairs: vec![
            ("{monitor}", monitor.clone(), UNKNOWN[0].to_string()),
            ("{portal}", portal.clone(), UNKNOWN[1].to_string()),
            ("{folder}", folder.clone(), UNKNOWN[2].to_string()),
            ("{note}", note.clone(), UNKNOWN[3].to_string()),
            ("{delivery}", delivery.clone(), UNKNOWN[4].to_string()),
            ("{feed}", feed_id.clone(), UNKNOWN[5].to_string()),
            ("{page}", page.clone(), "999999999".to_string()),
            ("{token}", token.clone(), "A".repeat(token.len())),
            (
                "{recording}",
                recording.clone(),
                "0".repeat(recording.len()),
            ),
            ("{hook}", hook.clone(), site.url("/no-such-hook")),
            (
                "{diff}",
                diff_query.clone(),
                diff_query.replace(&monitor, UNKNOWN[0]),
            ),
            // Bob's own, the same in both requests.
            ("{own}", own.clone(), own.clone()),
            ("{own_key}", own_key.clone(), own_key.clone()),
        ],
    };

    let bob_cookie = session_cookie(&api, &bob).await;
    let (_, bob_home) = page_text(&api, &bob_cookie, "/").await;
    let csrf = csrf_of(&bob_home);
    let send = |case: &Case, theirs: bool| {
        let path = names.fill(case.path, theirs);
        let request = if case.post {
            let mut fields: Vec<(String, String)> = case
                .fields
                .iter()
                .map(|(k, v)| (k.to_string(), names.fill(v, theirs)))
                .collect();
            fields.push(("csrf".into(), csrf.clone()));
            client().post(api.url(&path)).form(&fields)
        } else {
            client().get(api.url(&path))
        };
        let request = request.header("cookie", &bob_cookie);
        async move {
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            let location = response
                .headers()
                .get("location")
                .map(|v| v.to_str().unwrap().to_string());
            let body = response.text().await.unwrap();
            (status, location, body, path)
        }
    };
    for case in CASES {
        let (status, location, body, path) = send(case, true).await;
        let (unknown_status, unknown_location, unknown_body, _) = send(case, false).await;
        let what = format!("{} {path}", if case.post { "POST" } else { "GET" });
        assert_ne!(status, 500, "{what}: {body}");
        assert_eq!(
            (status, location.as_deref().map(|l| names.unfill(l))),
            (
                unknown_status,
                unknown_location.as_deref().map(|l| names.unfill(l))
            ),
            "{what}: not what an unknown id gets"
        );
        let body = fresh_tokens(&names.unfill(&body).replace(&csrf, "{csrf}"));
        let unknown_body = fresh_tokens(&names.unfill(&unknown_body).replace(&csrf, "{csrf}"));
        if body != unknown_body {
            let at = body
                .bytes()
                .zip(unknown_body.bytes())
                .position(|(a, b)| a != b)
                .unwrap_or(body.len().min(unknown_body.len()));
            let around = |text: &str| {
                let start = text.floor_char_boundary(at.saturating_sub(300));
                let end = text.ceil_char_boundary((at + 300).min(text.len()));
                text[start..end].to_string()
            };
            panic!(
                "{what}: the answer differs from an unknown id's at byte {at}:\n{}\n---\n{}",
                around(&body),
                around(&unknown_body)
            );
        }
        assert!(
            !body.to_lowercase().contains("ann-secret"),
            "{what} shows Ann's data: {body}"
        );
        if case.not_found {
            assert_eq!(status, 404, "{what}: {body}");
            assert!(body.contains("Not found"), "{what}: {body}");
            // The ids are real: Ann reads the same page.
            if !case.post {
                let (own_status, _) = page_text(&api, &ann_cookie, &path).await;
                assert!(
                    own_status == 200 || own_status == 303,
                    "Ann's own {path}: {own_status}"
                );
            }
        }
    }

    // The pages without ids show nothing of Ann's either.
    for path in [
        "/",
        "/notifications",
        "/settings",
        "/monitors/new",
        "/monitors/pick",
    ] {
        let (status, body) = page_text(&api, &bob_cookie, path).await;
        assert_eq!(status, 200, "{path}");
        assert!(
            !body.to_lowercase().contains("ann-secret"),
            "{path}: {body}"
        );
        for id in [&monitor, &portal, &folder, &note, &feed_id] {
            assert!(!body.contains(id.as_str()), "{path} names {id}");
        }
    }
    let all = client()
        .get(api.url(&format!("/feeds/all.atom?key={own_key}")))
        .send()
        .await
        .unwrap();
    assert_eq!(all.status(), 200);
    assert!(
        !all.text()
            .await
            .unwrap()
            .to_lowercase()
            .contains("ann-secret")
    );

    // Nothing of Ann's changed, and Ann still sees it all.
    let after = snapshot(&api, &ann, &watched).await;
    for (before, after) in before.iter().zip(&after) {
        assert_eq!(before, after, "Ann's data changed");
    }
    let (status, body) = page_text(&api, &ann_cookie, &format!("/monitors/{monitor}")).await;
    assert_eq!(status, 200);
    assert!(body.contains("Ann-secret monitor"));
}

/// The page with what is new on every rendering blanked: the one-time tokens of its forms and
/// the time now in the user's zone (two renderings may fall in different seconds).
fn fresh_tokens(html: &str) -> String {
    let mut out = html.to_string();
    for (field, until) in [
        ("name=\"token\" value=\"", '"'),
        ("name=\"once\" value=\"", '"'),
        ("It is now ", '<'),
    ] {
        let mut from = 0;
        while let Some(at) = out[from..].find(field) {
            let start = from + at + field.len();
            let end = start + out[start..].find(until).unwrap();
            out.replace_range(start..end, "{fresh}");
            from = start;
        }
    }
    out
}

fn urlencoding(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// A writable connection to the service's database, to set its clock back (no store call
/// writes a time of the past).
async fn writable(api: &Api) -> crate::Sql {
    api.sql().await
}

both!(an_idle_session_ends_with_a_message_and_the_sign_in_goes_back_where_it_was_going);
async fn an_idle_session_ends_with_a_message_and_the_sign_in_goes_back_where_it_was_going() {
    let api = Api::start().await;
    let user = api.user("idle@example.com").await;
    let monitor = id(&api
        .task(
            &user,
            json!({"name": "Tea", "url": "https://example.com/", "recurrenceInSeconds": 3600}),
        )
        .await);
    let cookie = session_cookie(&api, &user).await;
    let path = format!("/monitors/{monitor}/history");
    assert_eq!(page_text(&api, &cookie, &path).await.0, 200);

    // Eight days without use (the idle time is seven): the session has ended.
    let db = writable(&api).await;
    db.execute("UPDATE tokens SET last_seen_at = last_seen_at - 8 * 86400000")
        .await;
    let response = client()
        .get(api.url(&path))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 303);
    let location = response.headers()["location"].to_str().unwrap().to_string();
    assert_eq!(
        location,
        format!("/signin?next=%2Fmonitors%2F{monitor}%2Fhistory&ended=1")
    );
    // It stays ended: the token is gone.
    assert_eq!(
        db.count("SELECT COUNT(*) FROM tokens WHERE last_seen_at IS NOT NULL")
            .await,
        0
    );
    let (status, signin) = page_text(&api, &cookie, &location).await;
    assert_eq!(status, 200);
    assert!(
        signin.contains("Your session has ended. Sign in again to go on."),
        "{signin}"
    );
    assert!(
        signin.contains(&format!(
            "<input type=\"hidden\" name=\"next\" value=\"/monitors/{monitor}/history\">"
        )),
        "{signin}"
    );
    // Signing in goes back there.
    let response = client()
        .post(api.url("/signin"))
        .form(&[
            ("email", user.account.email.as_str()),
            ("password", PASSWORD),
            ("next", path.as_str()),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 303);
    assert_eq!(response.headers()["location"], path.as_str());

    // Only a path of this site is gone back to; anything else goes to the list.
    for next in [
        "//evil.example/",
        "/\\evil.example",
        "https://evil.example/",
        "javascript:alert(1)",
    ] {
        let response = client()
            .post(api.url("/signin"))
            .form(&[
                ("email", user.account.email.as_str()),
                ("password", PASSWORD),
                ("next", next),
            ])
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 303, "{next}");
        assert_eq!(response.headers()["location"], "/", "{next}");
        let (_, page) = page_text(&api, "", &format!("/signin?next={}", urlencoding(next))).await;
        assert!(!page.contains("name=\"next\""), "{next}: {page}");
    }

    // A page read within the idle time keeps the session, and is not a write each time: the
    // last use moves only when a minute old.
    let fresh = session_cookie(&api, &user).await;
    let seen = "SELECT MAX(last_seen_at) FROM tokens";
    assert_eq!(page_text(&api, &fresh, "/").await.0, 200);
    let first = db.count(seen).await;
    assert_eq!(page_text(&api, &fresh, "/").await.0, 200);
    assert_eq!(db.count(seen).await, first);
    db.execute("UPDATE tokens SET last_seen_at = last_seen_at - 6 * 86400000")
        .await;
    assert_eq!(
        page_text(&api, &fresh, "/").await.0,
        200,
        "six days idle is within"
    );
    assert!(db.count(seen).await > first - 6 * 86_400_000);
}

both!(a_session_lasts_the_configured_lifetime_at_most);
async fn a_session_lasts_the_configured_lifetime_at_most() {
    let settings = wachet_server::api::ApiSettings {
        web: wachet_server::web::WebSettings {
            session_lifetime: 3600,
            ..Default::default()
        },
        ..Default::default()
    };
    let api = Api::start_with(settings).await;
    let user = api.user("short@example.com").await;
    let response = sign_in(&api, &user.account.email, PASSWORD).await;
    assert_eq!(response.status(), 303);
    let cookie = set_cookie(&response);
    assert!(cookie.contains("Max-Age=3600;"), "{cookie}");
    let db = writable(&api).await;
    let lifetime = db
        .count("SELECT expires_at - issued_at FROM tokens WHERE last_seen_at IS NOT NULL")
        .await;
    assert_eq!(lifetime, 3_600_000);
}

both!(tampered_cookies_get_the_sign_in_page_and_are_no_login_attempts);
async fn tampered_cookies_get_the_sign_in_page_and_are_no_login_attempts() {
    let api = Api::start().await;
    let ann = api.user("ann@example.com").await;
    let cookie = session_cookie(&api, &ann).await;
    let (name, value) = cookie.split_once('=').unwrap();
    let mut changed = value.to_string().into_bytes();
    changed[10] = if changed[10] == b'A' { b'B' } else { b'A' };
    let changed = String::from_utf8(changed).unwrap();
    let long = "A".repeat(100_000);
    let tampered = [
        format!("{name}={changed}"),
        format!("{name}={}", &value[..value.len() - 1]),
        format!("{name}={value}x"),
        format!("{name}=garbage"),
        format!("{name}=%00%ff%7f"),
        format!("{name}={}", "A".repeat(5000)),
        format!("{name}=\"{value}\""),
    ];
    // Many more than the login limits allow failures, from this one address.
    for round in 0..5 {
        for bad in &tampered {
            let response = client()
                .get(api.url("/settings"))
                .header("cookie", bad)
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 303, "{bad:.80}");
            assert_eq!(
                response.headers()["location"],
                "/signin?next=%2Fsettings&ended=1",
                "{bad:.80}"
            );
            let form = client()
                .post(api.url("/monitors/quick-add"))
                .header("cookie", bad)
                .form(&[("url", "https://example.com/"), ("csrf", "x")])
                .send()
                .await
                .unwrap();
            assert!(
                form.status() == 303 || form.status() == 403,
                "{round} {bad:.80}: {}",
                form.status()
            );
        }
    }
    // A very long cookie header is refused as a whole, never a 500.
    let response = client()
        .get(api.url("/"))
        .header("cookie", format!("{name}={long}"))
        .send()
        .await
        .unwrap();
    assert!(response.status().as_u16() < 500, "{}", response.status());
    // None of it counted against the account or the address: Ann signs in at once.
    let again = sign_in(&api, &ann.account.email, PASSWORD).await;
    assert_eq!(again.status(), 303);
    // The real cookie still works, and nothing was created.
    assert_eq!(page_text(&api, &cookie, "/settings").await.0, 200);
    assert_eq!(crate::support::web::monitor_count(&api, &ann).await, 0);
}

/// A value of `bytes` or a little more: `first`, then unchanged numbered lines, then `last`.
fn large_value(first: &str, last: &str, bytes: usize) -> String {
    let mut value = format!("{first}\n");
    let mut n = 0;
    while value.len() < bytes {
        n += 1;
        value.push_str(&format!("Unchanged line {n} of a very long page\n"));
    }
    value.push_str(last);
    value
}

/// The page at `path`, in a bounded time (a hang fails here, not a slow machine).
async fn bounded_page(api: &Api, cookie: &str, path: &str) -> (u16, String) {
    tokio::time::timeout(
        std::time::Duration::from_secs(120),
        page_text(api, cookie, path),
    )
    .await
    .unwrap_or_else(|_| panic!("{path} took more than two minutes"))
}

both!(
    ten_megabyte_values_give_bounded_pages_that_still_show_the_change,
    multi_thread
);
async fn ten_megabyte_values_give_bounded_pages_that_still_show_the_change() {
    const TEN_MB: usize = 10 * 1024 * 1024;
    // What a page may weigh with a 10 MB value: the 200 KB shown and the page around it.
    const MAX_PAGE: usize = 300 * 1024;
    let api = Api::start().await;
    let user = api.user("large@example.com").await;
    let monitor = id(&api
        .task(
            &user,
            json!({"name": "Large", "url": "https://example.com/", "recurrenceInSeconds": 3600}),
        )
        .await);
    let base = chrono::Utc::now() - chrono::Duration::hours(1);
    let old = large_value("Start: old-first", "End: old-last", TEN_MB - 100);
    let new = large_value("Start: new-first", "End: new-last", TEN_MB - 100);
    for (n, value) in [old, new].into_iter().enumerate() {
        api.store
            .append_entry(
                &Series::Task(monitor.clone()),
                &ClientData::value(base + chrono::Duration::minutes(n as i64), value),
            )
            .await
            .unwrap();
    }
    let cookie = session_cookie(&api, &user).await;

    let (status, page) = bounded_page(&api, &cookie, &format!("/monitors/{monitor}")).await;
    assert_eq!(status, 200);
    assert!(
        page.len() < MAX_PAGE,
        "the monitor page weighs {}",
        page.len()
    );
    assert!(
        page.contains("Start: new-first"),
        "the value's start is shown"
    );
    assert!(
        page.contains("Only the first 200 KB of this value (10.0 MB) are shown."),
        "{}",
        &page[page.len() - 3000..]
    );
    assert!(page.contains(&format!("GET /thirdparty/v1/task/{monitor}")));

    let (status, history) =
        bounded_page(&api, &cookie, &format!("/monitors/{monitor}/history")).await;
    assert_eq!(status, 200);
    assert!(
        history.len() < MAX_PAGE,
        "the history weighs {}",
        history.len()
    );
    let link = history
        .split(&format!("href=\"/monitors/{monitor}/diff?"))
        .nth(1)
        .expect("a link to the change");
    let query = link[..link.find('"').unwrap()].replace("&amp;", "&");

    for view in ["inline", "split"] {
        let path = format!("/monitors/{monitor}/diff?{query}&view={view}");
        let (status, diff) = bounded_page(&api, &cookie, &path).await;
        assert_eq!(status, 200, "{diff:.2000}");
        assert!(
            diff.len() < MAX_PAGE,
            "the {view} diff weighs {}",
            diff.len()
        );
        for changed in [
            "<del>old-first</del>",
            "<ins>new-first</ins>",
            "<del>old-last</del>",
            "<ins>new-last</ins>",
        ] {
            assert!(diff.contains(changed), "{view}: {changed} not shown");
        }
        assert!(diff.contains("2 changes."), "{view}: {diff:.3000}");
        assert!(
            diff.contains("unchanged, not shown here"),
            "{view}: the long unchanged run is cut"
        );
        assert!(
            diff.contains(&format!("GET /thirdparty/v1/data/list/{monitor}")),
            "{view}: says where the whole values are"
        );
    }
}

/// The hidden fields of the first form of `html` posting to `action`, as a browser would send
/// them (with `extra` fields typed in).
fn form_fields(html: &str, action: &str, extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let start = html
        .find(&format!("action=\"{action}\""))
        .unwrap_or_else(|| panic!("no form posting to {action}"));
    let form = &html[start..];
    let form = &form[..form.find("</form>").unwrap()];
    let mut fields: Vec<(String, String)> = form
        .split("<input type=\"hidden\" ")
        .skip(1)
        .map(|input| {
            let attr = |name: &str| {
                let at = input.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
                input[at..at + input[at..].find('"').unwrap()].replace("&amp;", "&")
            };
            (attr("name"), attr("value"))
        })
        .collect();
    fields.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    fields
}

/// Posts `fields` to `path` twice, as a double click or a reload would; both answers.
async fn twice(
    api: &Api,
    cookie: &str,
    path: &str,
    fields: &[(String, String)],
) -> [(u16, String, String); 2] {
    let mut answers = Vec::new();
    for _ in 0..2 {
        let response = client()
            .post(api.url(path))
            .header("cookie", cookie)
            .form(fields)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let location = response
            .headers()
            .get("location")
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default();
        let body = response.text().await.unwrap();
        assert!(status < 500, "{path}: {status} {body}");
        answers.push((status, location, body));
    }
    answers.try_into().unwrap()
}

async fn folder_names(api: &Api, user: &User) -> Vec<String> {
    api.get(user, "/thirdparty/v1/folder/list").await.ok()["subfolders"]
        .as_array()
        .map(|folders| {
            folders
                .iter()
                .map(|f| f["name"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

both!(forms_submitted_twice_or_after_their_subject_is_gone_give_a_clear_answer);
async fn forms_submitted_twice_or_after_their_subject_is_gone_give_a_clear_answer() {
    let api = Api::start().await;
    let user = api.user("twice@example.com").await;
    let cookie = session_cookie(&api, &user).await;
    let (_, home) = page_text(&api, &cookie, "/").await;

    // Quick-add, twice: one monitor.
    let fields = form_fields(
        &home,
        "/monitors/quick-add",
        &[("url", "https://example.com/twice")],
    );
    let [first, second] = twice(&api, &cookie, "/monitors/quick-add", &fields).await;
    assert_eq!(first.0, 303, "{}", first.2);
    assert_eq!(second.0, 303, "{}", second.2);
    assert_eq!(
        second.1, first.1,
        "the second submit leads where the first did"
    );
    assert_eq!(crate::support::web::monitor_count(&api, &user).await, 1);
    let monitor = api.get(&user, "/thirdparty/v1/task/search").await.ok()[0]["id"]
        .as_str()
        .unwrap()
        .to_string();

    // A new folder, twice: one folder.
    let (_, new_folder) = page_text(&api, &cookie, "/folders/new").await;
    let fields = form_fields(&new_folder, "/folders/new", &[("name", "Twice")]);
    let [first, second] = twice(&api, &cookie, "/folders/new", &fields).await;
    assert_eq!(first.0, 303, "{}", first.2);
    assert_eq!(second.0, 303, "{}", second.2);
    assert_eq!(folder_names(&api, &user).await, ["Twice"]);
    let folder = api.folder(&user, "Other", None).await;
    let twice_folder = api.get(&user, "/thirdparty/v1/folder/list").await.ok()["subfolders"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "Twice")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();

    // Rename and move, twice: the same outcome as once.
    let (_, rename) = page_text(&api, &cookie, &format!("/folders/{twice_folder}/rename")).await;
    let path = format!("/folders/{twice_folder}/rename");
    let fields = form_fields(&rename, &path, &[("name", "Renamed")]);
    let [first, second] = twice(&api, &cookie, &path, &fields).await;
    assert_eq!((first.0, second.0), (303, 303));
    let (_, moving) = page_text(&api, &cookie, &format!("/folders/{twice_folder}/move")).await;
    let path = format!("/folders/{twice_folder}/move");
    let fields = form_fields(&moving, &path, &[("into", folder.as_str())]);
    let [first, second] = twice(&api, &cookie, &path, &fields).await;
    assert_eq!((first.0, second.0), (303, 303), "{}", second.2);
    let inside = api
        .get(
            &user,
            &format!("/thirdparty/v1/folder/list?parentId={folder}"),
        )
        .await;
    let names: Vec<&str> = inside.ok()["subfolders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Renamed"]);

    // Pause and resume, twice: the state asked for.
    let (_, page) = page_text(&api, &cookie, &format!("/monitors/{monitor}")).await;
    let path = format!("/monitors/{monitor}/pause");
    let fields = form_fields(&page, &path, &[]);
    let [first, second] = twice(&api, &cookie, &path, &fields).await;
    assert_eq!((first.0, second.0), (303, 303));
    let data = crate::support::web::monitor_data(&api, &user, &monitor).await;
    assert_eq!(data["recurrenceInSeconds"], 0);
    let (_, page) = page_text(&api, &cookie, &format!("/monitors/{monitor}")).await;
    let path = format!("/monitors/{monitor}/resume");
    let fields = form_fields(&page, &path, &[]);
    let [first, second] = twice(&api, &cookie, &path, &fields).await;
    assert_eq!((first.0, second.0), (303, 303));
    let data = crate::support::web::monitor_data(&api, &user, &monitor).await;
    assert_ne!(data["recurrenceInSeconds"], 0);

    // Bulk pause, twice.
    let csrf = csrf_of(&home);
    let bulk: Vec<(String, String)> = [
        ("csrf", csrf.as_str()),
        ("action", "pause"),
        ("id", monitor.as_str()),
        ("back", "/"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let [first, second] = twice(&api, &cookie, "/monitors/bulk", &bulk).await;
    assert_eq!(first.0, second.0);
    let data = crate::support::web::monitor_data(&api, &user, &monitor).await;
    assert_eq!(data["recurrenceInSeconds"], 0);

    // Settings: an endpoint added twice is there once.
    let (_, settings) = page_text(&api, &cookie, "/settings").await;
    let fields = form_fields(
        &settings,
        "/settings/endpoints",
        &[("kind", "1"), ("value", "https://example.com/hook")],
    );
    let [_first, second] = twice(&api, &cookie, "/settings/endpoints", &fields).await;
    assert!(
        second.0 == 303 || second.0 == 200 || second.0 == 400,
        "{}",
        second.2
    );
    let endpoints = api
        .get(&user, "/thirdparty/v1/user/notificationEndpoints")
        .await;
    let listed = endpoints.ok()["notificationEndpoints"]
        .as_array()
        .map(Vec::len)
        .unwrap_or_else(|| endpoints.ok().as_array().map(Vec::len).unwrap_or(0));
    assert_eq!(listed, 1, "{}", endpoints.text);
    // Webhook secret and API key, renewed twice: a new one each time, shown, never a 500.
    let (_, settings) = page_text(&api, &cookie, "/settings").await;
    for path in ["/settings/webhook-secret", "/settings/api-key"] {
        let fields = form_fields(&settings, path, &[]);
        let [first, second] = twice(&api, &cookie, path, &fields).await;
        assert_eq!(first.0, second.0, "{path}");
    }
    // "Retry now" twice on a delivery: the same answer, still one delivery.
    let note = api
        .store
        .insert_notification(&notification(&monitor, 1))
        .await
        .unwrap();
    let deliveries = format!("/thirdparty/v1/notification/{note}/deliveries");
    let delivery = api.get(&user, &deliveries).await.ok()[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let path = format!("/notifications/{note}/deliveries/{delivery}/retry");
    let fields = vec![("csrf".to_string(), csrf.clone())];
    let [first, second] = twice(&api, &cookie, &path, &fields).await;
    assert_eq!(first.0, second.0, "{}", second.2);
    assert_eq!(
        api.get(&user, &deliveries)
            .await
            .ok()
            .as_array()
            .unwrap()
            .len(),
        1
    );

    // Deleting the monitor twice: the second finds it gone, the 404 page; so do the stale forms
    // that name it.
    let (_, confirm) = page_text(&api, &cookie, &format!("/monitors/{monitor}/delete")).await;
    let path = format!("/monitors/{monitor}/delete");
    let fields = form_fields(&confirm, &path, &[]);
    let [first, second] = twice(&api, &cookie, &path, &fields).await;
    assert_eq!(first.0, 303, "{}", first.2);
    assert_eq!(second.0, 404, "{}", second.2);
    assert!(second.2.contains("Not found"));
    for stale in ["pause", "resume", "edit"] {
        let path = format!("/monitors/{monitor}/{stale}");
        let fields: Vec<(String, String)> = vec![
            ("csrf".into(), csrf.clone()),
            ("url".into(), "https://example.com/".into()),
        ];
        let response = client()
            .post(api.url(&path))
            .header("cookie", &cookie)
            .form(&fields)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 404, "{path}");
    }
    assert_eq!(crate::support::web::monitor_count(&api, &user).await, 0);
    let [first, second] = twice(&api, &cookie, "/monitors/bulk/delete", &bulk).await;
    assert!(first.0 < 500 && second.0 < 500);

    // The folder deleted twice: the second is the 404 page.
    let (_, confirm) = page_text(&api, &cookie, &format!("/folders/{folder}/delete")).await;
    let path = format!("/folders/{folder}/delete");
    let fields = form_fields(&confirm, &path, &[]);
    let [first, second] = twice(&api, &cookie, &path, &fields).await;
    assert_eq!(first.0, 303, "{}", first.2);
    assert_eq!(second.0, 404, "{}", second.2);
    assert!(folder_names(&api, &user).await.is_empty());
    // A stale rename of it too.
    let response = client()
        .post(api.url(&format!("/folders/{twice_folder}/rename")))
        .header("cookie", &cookie)
        .form(&[("csrf", csrf.as_str()), ("name", "Back")])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);

    // A password change sent twice: the second is refused with a message (the current password
    // is no longer the one given), and the first one holds.
    let fields = form_fields(
        &settings,
        "/settings/password",
        &[
            ("currentPassword", PASSWORD),
            ("newPassword", "another pass word 2"),
        ],
    );
    let [first, second] = twice(&api, &cookie, "/settings/password", &fields).await;
    assert!(first.0 == 303 || first.0 == 200, "{}", first.2);
    assert_eq!(second.0, 400, "{}", second.2);
    assert_eq!(
        sign_in(&api, &user.account.email, "another pass word 2")
            .await
            .status(),
        303
    );

    // "Sign out everywhere" twice: the first ends the session, the second finds it ended;
    // both lead to the sign-in page.
    let (_, settings) = page_text(&api, &cookie, "/settings").await;
    let fields = form_fields(&settings, "/settings/sign-out-everywhere", &[]);
    let [first, second] = twice(&api, &cookie, "/settings/sign-out-everywhere", &fields).await;
    assert_eq!(first.0, 303);
    assert!(first.1.starts_with("/signin"), "{}", first.1);
    assert_eq!(second.0, 303);
    assert!(second.1.starts_with("/signin"), "{}", second.1);
}

// --- in a real browser

use crate::support::web::{Driver, dark, eval, screenshot, sign_in_through_the_form, until};
use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::page::EventJavascriptDialogOpening;
use futures::StreamExt;

const SCRIPT: &str = "<script>alert(1)</script>";
const IMG: &str = "\"><img src=x onerror=alert(1)>";

/// Both attacks, as one piece of text.
fn hostile(what: &str) -> String {
    format!("{what} {SCRIPT} {IMG}")
}

/// Loads `path` and checks that the data's markup is text there: no element of it in the
/// page, no script but the interface's own, no dialog; and, with `shown`, that the markup
/// reads as text.
async fn inert(page: &Page, dialogs: &mut (impl futures::Stream + Unpin), url: &str, shown: bool) {
    page.goto(url).await.unwrap();
    until(page, "document.readyState === 'complete'").await;
    check_inert(page, dialogs, url, shown).await;
}

async fn check_inert(
    page: &Page,
    dialogs: &mut (impl futures::Stream + Unpin),
    what: &str,
    shown: bool,
) {
    let injected: Vec<String> = eval(
        page,
        "[...document.querySelectorAll('img[src=\"x\"], [onerror], a[href^=\"javascript:\" i], \
          iframe[src^=\"javascript:\" i], script:not([src])')].map(e => e.outerHTML)",
    )
    .await;
    assert!(injected.is_empty(), "{what}: {injected:?}");
    let scripts: Vec<String> = eval(
        page,
        "[...document.scripts].map(s => new URL(s.src).pathname)\
           .filter(p => !p.startsWith('/assets/'))",
    )
    .await;
    assert!(scripts.is_empty(), "{what}: scripts {scripts:?}");
    if shown {
        let text: String = eval(page, "document.body.innerText").await;
        assert!(
            text.contains(SCRIPT) && text.contains("<img src=x onerror=alert(1)>"),
            "{what}: the markup does not read as text: {text:.3000}"
        );
    }
    assert!(
        tokio::time::timeout(std::time::Duration::from_millis(200), dialogs.next())
            .await
            .is_err(),
        "{what}: a dialog opened"
    );
}

in_browser!(
    markup_in_every_field_shows_as_text_on_every_page_in_a_real_browser,
    multi_thread
);
async fn markup_in_every_field_shows_as_text_on_every_page_in_a_real_browser() {
    let Some(_guard) = wachet::testing::browser_test().await else {
        return;
    };
    let escaped = |text: &str| {
        text.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    let page_of = |what: &str| {
        format!(
            "<html><head><title>{}</title></head><body><p>{}</p></body></html>",
            escaped(&hostile("title")),
            escaped(&hostile(what))
        )
    };
    let site = wachet::testing::FixtureServer::builder()
        .page("/tea", page_of("price 3.50"))
        .start()
        .await
        .unwrap();
    let api = Api::start_checking().await;
    let user = api.user("markup@example.com").await;
    api.put(
        &user,
        "/thirdparty/v1/user/notificationEndpoints",
        json!({"notificationEndpoints": [
            {"type": "Webhook", "value": format!("{}?q=\"><img/src=x/onerror=alert(1)>", site.url("/hook"))}
        ]}),
    )
    .await
    .ok();
    let folder = api.folder(&user, &hostile("folder"), None).await;
    let created = api
        .task(
            &user,
            json!({"name": hostile("monitor"), "note": hostile("note"),
                   "url": site.url("/tea"), "folderId": folder, "recurrenceInSeconds": 1,
                   "xPath": "//body", "alerts": [{"type": "NotEq"}],
                   "headers": [{"key": "X-Test", "value": hostile("header")}]}),
        )
        .await;
    let monitor = id(&created);
    crate::support::web::until_value(&api, &user, &monitor, "price 3.50").await;
    site.set("/tea", wachet::testing::Reply::html(page_of("price 3.90")));
    crate::support::web::until_value(&api, &user, &monitor, "price 3.90").await;
    // The change raises its notification once the next check confirms it.
    let notes = format!("/thirdparty/v1/notification/list?taskId={monitor}");
    for _ in 0..150 {
        if !api.get(&user, &notes).await.ok()["data"]
            .as_array()
            .unwrap()
            .is_empty()
        {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    // Paused, so the pages stay as they are.
    let mut paused = created.clone();
    paused["recurrenceInSeconds"] = json!(0);
    api.put(&user, "/thirdparty/v1/task", paused).await.ok();
    // A monitor whose check failed with markup in its error, and a Portal monitor's page.
    let failed = id(&api
        .task(
            &user,
            json!({"name": hostile("failed"), "url": site.url("/tea"), "recurrenceInSeconds": 0}),
        )
        .await);
    api.store
        .append_entry(
            &Series::Task(failed.clone()),
            &ClientData::failure(chrono::Utc::now(), hostile("error")),
        )
        .await
        .unwrap();
    let portal = id(&api
        .task(
            &user,
            json!({"name": hostile("portal"), "url": site.url("/tea"), "jobType": "Portal",
                   "crawlingDepth": 1, "recurrenceInSeconds": 0}),
        )
        .await);
    api.store
        .append_entry(
            &Series::Page {
                task_id: portal.clone(),
                url: format!("{}?{IMG}", site.url("/tea")),
                name: Some(hostile("page")),
            },
            &ClientData::value(chrono::Utc::now(), hostile("page value")),
        )
        .await
        .unwrap();
    let page_id = api
        .get(&user, &format!("/thirdparty/v1/task/{portal}/pages"))
        .await
        .ok()[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    for target in [
        json!({"scope": "monitor", "targetId": monitor}),
        json!({"scope": "folder", "targetId": folder}),
    ] {
        api.post(&user, "/thirdparty/v1/user/feeds", target)
            .await
            .ok();
    }

    let driver = Driver::launch().await;
    let page = driver.browser.new_page(api.url("/signin")).await.unwrap();
    let mut dialogs = page
        .event_listener::<EventJavascriptDialogOpening>()
        .await
        .unwrap();
    sign_in_through_the_form(&page, &user).await;
    check_inert(&page, &mut dialogs, "the list", true).await;
    let at = |path: String| api.url(&path);
    for (path, shown) in [
        (format!("/folders/{folder}"), true),
        (format!("/monitors/{monitor}"), true),
        (format!("/monitors/{monitor}/history"), true),
        (format!("/monitors/{monitor}/diff"), true),
        (format!("/monitors/{monitor}/diff?view=split"), true),
        (format!("/monitors/{monitor}/edit"), true),
        (format!("/monitors/{monitor}/delete"), true),
        (format!("/folders/{folder}/delete"), true),
        (format!("/folders/{folder}/rename"), false),
        (format!("/folders/{folder}/move"), true),
        (format!("/monitors/{failed}"), true),
        (format!("/monitors/{failed}/history"), true),
        (format!("/monitors/{portal}"), true),
        (format!("/monitors/{portal}/pages/{page_id}"), true),
        (format!("/monitors/{portal}/pages/{page_id}/history"), true),
        ("/notifications".to_string(), true),
        ("/settings".to_string(), true),
        (format!("/monitors/{monitor}/pick"), false),
    ] {
        inert(&page, &mut dialogs, &at(path), shown).await;
    }
    // The rename form holds the name as the field's value, whole.
    inert(
        &page,
        &mut dialogs,
        &at(format!("/folders/{folder}/rename")),
        false,
    )
    .await;
    let value: String = eval(&page, "document.querySelector('#folder-name').value").await;
    assert_eq!(value, hostile("folder"));
    inert(
        &page,
        &mut dialogs,
        &at(format!("/monitors/{monitor}/pick")),
        false,
    )
    .await;
    // The picker's frame holds the page as it is, scripts off: its markup is the page's own,
    // and even so nothing of it runs.
    until(&page, "!!document.querySelector('#pick-frame')").await;
    check_inert(&page, &mut dialogs, "the picker", false).await;

    // The preview, from the edit form.
    inert(
        &page,
        &mut dialogs,
        &at(format!("/monitors/{monitor}/edit")),
        true,
    )
    .await;
    page.find_element("#preview-button")
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    until(&page, "!!document.querySelector('#preview')").await;
    until(&page, "document.readyState === 'complete'").await;
    check_inert(&page, &mut dialogs, "the preview", true).await;
    let preview: String = eval(&page, "document.querySelector('#preview').innerText").await;
    assert!(
        preview.contains("price 3.90") && preview.contains(SCRIPT),
        "{preview}"
    );

    // The bulk confirmation, from the list: the monitor ticked, "Delete…".
    inert(&page, &mut dialogs, &at(format!("/folders/{folder}")), true).await;
    page.evaluate(format!(
        "document.querySelector('#select-{monitor}').click()"
    ))
    .await
    .unwrap();
    page.find_element("button[name=action][value=delete]")
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    until(
        &page,
        "location.pathname === '/monitors/bulk' && document.readyState === 'complete'",
    )
    .await;
    check_inert(&page, &mut dialogs, "the bulk confirmation", true).await;
    screenshot(&page, "escaping-bulk", 1440).await;
    // The monitor's page with all of it, as a person sees it, light and dark.
    inert(
        &page,
        &mut dialogs,
        &at(format!("/monitors/{monitor}")),
        true,
    )
    .await;
    screenshot(&page, "escaping-monitor", 1440).await;
    screenshot(&page, "escaping-monitor", 375).await;
    dark(&page, true).await;
    screenshot(&page, "escaping-monitor-dark", 375).await;
    driver.close().await;
    // Nothing was deleted on the way.
    assert_eq!(crate::support::web::monitor_count(&api, &user).await, 3);
}

in_browser!(
    an_ended_session_and_a_cut_difference_in_a_real_browser,
    multi_thread
);
async fn an_ended_session_and_a_cut_difference_in_a_real_browser() {
    let Some(_guard) = wachet::testing::browser_test().await else {
        return;
    };
    let api = Api::start().await;
    let user = api.user("ended@example.com").await;
    let monitor = id(&api
        .task(
            &user,
            json!({"name": "Long page", "url": "https://example.com/", "recurrenceInSeconds": 3600}),
        )
        .await);
    let base = chrono::Utc::now() - chrono::Duration::hours(1);
    let old = large_value("Start: old-first", "End: old-last", 1024 * 1024);
    let new = large_value("Start: new-first", "End: new-last", 1024 * 1024);
    for (n, value) in [old, new].into_iter().enumerate() {
        api.store
            .append_entry(
                &Series::Task(monitor.clone()),
                &ClientData::value(base + chrono::Duration::minutes(n as i64), value),
            )
            .await
            .unwrap();
    }
    let driver = Driver::launch().await;
    let page = driver.browser.new_page(api.url("/signin")).await.unwrap();
    sign_in_through_the_form(&page, &user).await;
    page.goto(api.url(&format!("/monitors/{monitor}/diff")))
        .await
        .unwrap();
    until(&page, "!!document.querySelector('.diff ins')").await;
    let inserted: Vec<String> = eval(
        &page,
        "[...document.querySelectorAll('.diff ins')].map(e => e.textContent)",
    )
    .await;
    assert_eq!(inserted, ["new-first", "new-last"]);
    let cut: String = eval(&page, "document.querySelector('.cut').textContent").await;
    assert!(cut.contains("/thirdparty/v1/data/list/"), "{cut}");
    screenshot(&page, "diff-cut", 1440).await;
    screenshot(&page, "diff-cut", 375).await;
    page.goto(api.url(&format!("/monitors/{monitor}")))
        .await
        .unwrap();
    until(&page, "!!document.querySelector('pre.value')").await;
    screenshot(&page, "monitor-cut", 1440).await;
    screenshot(&page, "monitor-cut", 375).await;

    // The session ends (idle for eight days): the next page is the sign-in, which says so,
    // then goes back.
    let db = writable(&api).await;
    db.execute("UPDATE tokens SET last_seen_at = last_seen_at - 8 * 86400000")
        .await;
    page.goto(api.url(&format!("/monitors/{monitor}/history")))
        .await
        .unwrap();
    until(&page, "!!document.querySelector('#signin-error')").await;
    let said: String = eval(&page, "document.querySelector('#signin-error').textContent").await;
    assert_eq!(said, "Your session has ended. Sign in again to go on.");
    screenshot(&page, "signin-ended", 1440).await;
    screenshot(&page, "signin-ended", 375).await;
    dark(&page, true).await;
    screenshot(&page, "signin-ended-dark", 375).await;
    crate::support::web::type_into(&page, "#email", &user.account.email).await;
    crate::support::web::type_into(&page, "#password", PASSWORD).await;
    page.find_element("button[type=submit]")
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    until(
        &page,
        "location.pathname.endsWith('/history') && !!document.querySelector('.history')",
    )
    .await;
    driver.close().await;
}

/// A hostile page's address, the form's extra fields, and the engine's words for it.
type PreviewCase = (String, Vec<(&'static str, &'static str)>, &'static str);

/// Previews `url` as the form would (with `extra` fields), in a bounded time; the answer.
async fn preview_of(api: &Api, cookie: &str, url: &str, extra: &[(&str, &str)]) -> (u16, String) {
    let (_, form) = page_text(api, cookie, "/monitors/new").await;
    let fields = form_fields(
        &form,
        "/monitors/new",
        &[("url", url), ("name", "Hostile"), ("recurrence", "3600")],
    );
    let mut fields = fields;
    fields.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let request = client()
        .post(api.url("/monitors/preview"))
        .header("cookie", cookie)
        .form(&fields)
        .send();
    let response = tokio::time::timeout(std::time::Duration::from_secs(300), request)
        .await
        .unwrap_or_else(|_| panic!("the preview of {url} hung"))
        .unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

/// What the preview says under the form: its error or its value.
fn preview_says(page: &str) -> String {
    let start = page
        .find("id=\"preview\"")
        .unwrap_or_else(|| panic!("no preview: {:.3000}", page));
    let section = &page[start..];
    section[..section.find("</section>").unwrap_or(section.len())]
        .chars()
        .take(2000)
        .collect()
}

// On SQLite only: a preview stores nothing, and what it shows is the engine's.
in_browser!(
    hostile_pages_previewed_give_the_engines_message_and_the_service_stays_responsive,
    multi_thread
);
async fn hostile_pages_previewed_give_the_engines_message_and_the_service_stays_responsive() {
    use wachet::testing::hostile::{Hostile, HostileServer};
    let hostile = HostileServer::start().await.unwrap();
    let deep = format!(
        "<html><body>{}deep{}</body></html>",
        "<div>".repeat(100_000),
        "</div>".repeat(100_000)
    );
    let mut ten_mb = b"<html><body><p>".to_vec();
    ten_mb.resize(ten_mb.len() + 10 * 1024 * 1024, b'a');
    let site = wachet::testing::FixtureServer::builder()
        .page("/deep", deep)
        .reply("/ten-mb", wachet::testing::Reply::html(ten_mb))
        .page(
            "/endless",
            "<html><body><p>endless</p><script>for (;;) {}</script></body></html>",
        )
        .start()
        .await
        .unwrap();
    // A page that never finishes loading times out after 5 s rather than the default 30.
    let mut setup = crate::Setup::api();
    setup.engine = setup
        .engine
        .total_timeout(std::time::Duration::from_secs(5));
    let api = Api::start_as(setup).await;
    let user = api.user("hostile@example.com").await;
    let other = api.user("bystander@example.com").await;
    let cookie = session_cookie(&api, &user).await;
    let other_cookie = session_cookie(&api, &other).await;

    // Another user's list, read every 200 ms while the previews run: it always answers.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let (url, cookie, stop) = (api.url("/"), other_cookie.clone(), stop.clone());
        tokio::spawn(async move {
            let mut answered = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let response = tokio::time::timeout(
                    std::time::Duration::from_secs(30),
                    client().get(&url).header("cookie", &cookie).send(),
                )
                .await
                .expect("another user's list did not answer within 30 s")
                .unwrap();
                assert_eq!(response.status(), 200);
                answered += 1;
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            }
            answered
        })
    };

    let bomb = hostile.url(Hostile::GzipBomb);
    // Each with the engine's words for it.
    let cases: Vec<PreviewCase> = vec![
        (bomb, vec![], "the response is larger than 10485760 bytes"),
        (
            site.url("/deep"),
            vec![],
            "the page nests elements more than 1024 levels deep",
        ),
        (
            site.url("/ten-mb"),
            vec![],
            "the response is larger than 10485760 bytes",
        ),
        (
            site.url("/endless"),
            vec![("dynamicContent", "true")],
            "timed out after",
        ),
    ];
    for (url, extra, words) in cases {
        // The browser is held only while a rendered preview runs.
        let _browser = match extra.iter().any(|(k, _)| *k == "dynamicContent") {
            true => match wachet::testing::browser_test().await {
                Some(guard) => Some(guard),
                None => continue,
            },
            false => None,
        };
        let (status, page) = preview_of(&api, &cookie, &url, &extra).await;
        assert!(status < 500, "{url}: {status} {page:.2000}");
        let said = preview_says(&page);
        assert!(
            said.contains(&format!(
                "<p class=\"alert preview-error\">The check failed: {words}"
            )),
            "{url}: {said}"
        );
        assert!(said.contains("Nothing was saved."), "{url}: {said}");
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let answered = watcher.await.unwrap();
    assert!(answered > 0);
    // Nothing was stored.
    assert_eq!(crate::support::web::monitor_count(&api, &user).await, 0);
}
