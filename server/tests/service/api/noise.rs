//! Noise masks over the real service: validation of the `noise` and `compareLines`
//! extension fields, a person's masks and the line order deciding what raises with the real
//! scheduler on pages driven by request count, the rule between a person's edits and the masks
//! the service learns, and learning itself (quick samples at creation, later checks, a new
//! selection starting over, a page with no stable part).

use crate::{Api, Setup, User, id};
use serde_json::{Value, json};
use std::time::Duration;
use wachet::testing::{FixtureServer, Reply};

/// The scheduler as `wachet serve` runs it (quick samples included), with early checks 1 s
/// after a check that waits for confirmation and fetches that give up after 2 s.
async fn start() -> Api {
    let mut setup = Setup::checking();
    setup.engine = setup.engine.total_timeout(Duration::from_secs(2));
    setup.service.schedule.confirm_after = Duration::from_secs(1);
    Api::start_as(setup).await
}

/// Creates a monitor of `url` (xPath `//p`, checked every second, Error and NotEq alerts)
/// with the extra fields of `more`.
async fn watched(api: &Api, user: &User, url: &str, more: Value) -> String {
    let mut body = json!({"name": "watched", "url": url, "xPath": "//p", "recurrenceInSeconds": 1,
                          "alerts": [{"type": "Error"}, {"type": "NotEq"}]});
    for (key, value) in more.as_object().unwrap() {
        body[key] = value.clone();
    }
    id(&api.task(user, body).await)
}

/// The monitor's history, oldest first, once it holds at least `n` checks (40 s at most).
async fn checks(api: &Api, user: &User, task: &str, n: usize) -> Vec<Value> {
    let path = format!("/thirdparty/v1/data/list/{task}?count=500");
    let mut data = Vec::new();
    for _ in 0..400 {
        data = api.get(user, &path).await.ok()["data"]
            .as_array()
            .unwrap()
            .clone();
        if data.len() >= n {
            data.reverse();
            return data;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let times: Vec<&str> = data
        .iter()
        .rev()
        .map(|e| e["lastCheckTimestamp"].as_str().unwrap_or("?"))
        .collect();
    panic!(
        "fewer than {n} checks of {task} after 40 s: {} at {times:?}",
        data.len()
    );
}

/// The kinds of the notifications the monitor raised, oldest first.
async fn raised(api: &Api, user: &User, task: &str) -> Vec<String> {
    let path = format!("/thirdparty/v1/notification/list?taskId={task}");
    let mut kinds: Vec<String> = api.get(user, &path).await.ok()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["type"].as_str().unwrap_or("?").to_string())
        .collect();
    kinds.reverse();
    kinds
}

async fn task(api: &Api, user: &User, task: &str) -> Value {
    api.get(user, &format!("/thirdparty/v1/task/{task}"))
        .await
        .ok()
        .clone()
}

/// The masks of a monitor as GET shows them: (pattern, learned, active).
fn masks(monitor: &Value) -> Vec<(String, bool, bool)> {
    monitor["noise"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| {
            (
                m["pattern"].as_str().unwrap().to_string(),
                m["learned"].as_bool().unwrap(),
                m["active"].as_bool().unwrap(),
            )
        })
        .collect()
}

/// Serves `path` as `page(n)` for its n-th request (from 1).
fn counted(
    site: &FixtureServer,
    path: &str,
    page: impl Fn(usize) -> String + Send + Sync + 'static,
) {
    site.set_counted(path, move |n| Reply::html(page(n)));
}

both!(
    invalid_masks_are_refused_naming_the_field_and_nothing_is_stored,
    multi_thread
);
async fn invalid_masks_are_refused_naming_the_field_and_nothing_is_stored() {
    let api = Api::start().await;
    let user = api.user("val@example.com").await;
    let base = json!({"name": "n", "url": "https://shop.example/", "recurrenceInSeconds": 3600});

    let mut bad = base.clone();
    bad["noise"] = json!([{"pattern": r"(\d+) views"}, {"pattern": "price (unclosed"}]);
    let reply = api.put(&user, "/thirdparty/v1/task", bad).await;
    reply.field_error("noise[1].pattern", "unclosed");
    assert!(reply.problem(400).get("noise[0].pattern").is_none());

    let mut empty = base.clone();
    empty["noise"] = json!([{"pattern": "  "}]);
    api.put(&user, "/thirdparty/v1/task", empty)
        .await
        .field_error("noise[0].pattern", "empty");

    let mut many = base.clone();
    many["noise"] = Value::Array(
        (0..65)
            .map(|i| json!({"pattern": format!("n{i}")}))
            .collect(),
    );
    api.put(&user, "/thirdparty/v1/task", many)
        .await
        .field_error("noise", "at most 64");

    let mut order = base.clone();
    order["compareLines"] = json!("sorted");
    assert_eq!(
        api.put(&user, "/thirdparty/v1/task", order).await.status,
        400
    );
    assert_eq!(
        crate::support::web::monitor_count(&api, &user).await,
        0,
        "nothing stored"
    );

    // A valid monitor: what a client says of `learned`, `example` and `noiseNotice` is
    // ignored (they are the service's).
    let mut good = base.clone();
    good["noise"] = json!([{"pattern": r"(\d+) views", "learned": true, "example": "forged"}]);
    good["compareLines"] = json!("set");
    good["noiseNotice"] = json!("forged notice");
    let created = api.task(&user, good).await;
    let monitor = task(&api, &user, &id(&created)).await;
    assert_eq!(masks(&monitor), [(r"(\d+) views".to_string(), false, true)]);
    assert!(monitor["noise"][0].get("example").is_none(), "{monitor}");
    assert_eq!(monitor["compareLines"], "set");
    assert!(monitor.get("noiseNotice").is_none(), "{monitor}");

    // An update with a broken pattern changes nothing.
    let mut edit = monitor.clone();
    edit["noise"] = json!([{"pattern": "[z-a]"}]);
    api.put(&user, "/thirdparty/v1/task", edit)
        .await
        .field_error("noise[0].pattern", "");
    assert_eq!(
        masks(&task(&api, &user, &id(&created)).await),
        [(r"(\d+) views".to_string(), false, true)]
    );
    // A client that does not know the extension (no `noise`) keeps the masks.
    let mut plain = monitor.clone();
    plain.as_object_mut().unwrap().remove("noise");
    plain["name"] = json!("renamed");
    api.put(&user, "/thirdparty/v1/task", plain).await.ok();
    let after = task(&api, &user, &id(&created)).await;
    assert_eq!(after["name"], "renamed");
    assert_eq!(masks(&after).len(), 1);
}

both!(
    a_persons_mask_silences_a_counter_while_a_change_beside_it_raises_once,
    multi_thread
);
async fn a_persons_mask_silences_a_counter_while_a_change_beside_it_raises_once() {
    let site = FixtureServer::builder().start().await.unwrap();
    // A counter that moves on every request, in the line that carries the price; the price
    // changes for good from the 9th request on.
    counted(&site, "/item", |n| {
        let price = if n < 9 { "3.50" } else { "3.90" };
        format!("<p>Price {price} EUR · {n} people are looking</p>")
    });
    let api = start().await;
    let user = api.user("mask@example.com").await;
    let task = watched(
        &api,
        &user,
        &site.url("/item"),
        json!({"noise": [{"pattern": r"(\d+) people are looking"}]}),
    )
    .await;

    let history = checks(&api, &user, &task, 14).await;
    assert!(history.iter().all(|e| e["error"].is_null()), "{history:?}");
    assert_eq!(raised(&api, &user, &task).await, ["NotEq"]);
}

both!(
    switched_off_and_removed_masks_are_kept_as_edited_and_respected,
    multi_thread
);
async fn switched_off_and_removed_masks_are_kept_as_edited_and_respected() {
    let site = FixtureServer::builder().start().await.unwrap();
    // A status that changes once, from the 8th request of each page on.
    for path in ["/on", "/off", "/removed"] {
        counted(&site, path, |n| {
            let status = if n < 8 { "open" } else { "closed" };
            format!("<p>Ticket 7 · Status: {status}</p>")
        });
    }
    let api = start().await;
    let user = api.user("edit@example.com").await;
    let mask = json!({"noise": [{"pattern": r"Status: (\w+)"}]});
    let on = watched(&api, &user, &site.url("/on"), mask.clone()).await;
    let off = watched(&api, &user, &site.url("/off"), mask.clone()).await;
    let removed = watched(&api, &user, &site.url("/removed"), mask.clone()).await;

    let mut edit = task(&api, &user, &off).await;
    edit["noise"][0]["active"] = json!(false);
    api.put(&user, "/thirdparty/v1/task", edit).await.ok();
    let mut edit = task(&api, &user, &removed).await;
    edit["noise"] = json!([]);
    api.put(&user, "/thirdparty/v1/task", edit).await.ok();
    assert_eq!(
        masks(&task(&api, &user, &off).await),
        [(r"Status: (\w+)".to_string(), false, false)]
    );
    assert_eq!(masks(&task(&api, &user, &removed).await), []);

    for monitor in [&on, &off, &removed] {
        let history = checks(&api, &user, monitor, 12).await;
        let last = history.last().unwrap()["raw"].as_str().unwrap().to_string();
        assert!(last.contains("closed"), "{last}");
    }
    assert_eq!(raised(&api, &user, &on).await, Vec::<String>::new());
    assert_eq!(raised(&api, &user, &off).await, ["NotEq"]);
    assert_eq!(raised(&api, &user, &removed).await, ["NotEq"]);
}

both!(
    lines_compared_as_a_set_ignore_a_shuffle_but_not_an_added_line,
    multi_thread
);
async fn lines_compared_as_a_set_ignore_a_shuffle_but_not_an_added_line() {
    let site = FixtureServer::builder().start().await.unwrap();
    // The same three items in another order on every request; a fourth from the 10th on.
    counted(&site, "/list", |n| {
        let mut items = vec!["Apples", "Pears", "Figs"];
        if n >= 10 {
            items.push("Plums");
        }
        let shift = n % items.len();
        items.rotate_left(shift);
        items.iter().map(|i| format!("<p>{i}</p>")).collect()
    });
    let api = start().await;
    let user = api.user("set@example.com").await;
    let task = watched(
        &api,
        &user,
        &site.url("/list"),
        json!({"compareLines": "set"}),
    )
    .await;

    let history = checks(&api, &user, &task, 14).await;
    let values: Vec<&str> = history.iter().map(|e| e["raw"].as_str().unwrap()).collect();
    assert!(
        values.windows(2).any(|w| w[0] != w[1]),
        "the order moved: {values:?}"
    );
    assert!(values.last().unwrap().contains("Plums"));
    assert_eq!(raised(&api, &user, &task).await, ["NotEq"]);
}

both!(
    a_link_whose_target_changes_under_the_same_text_raises_where_links_are_watched,
    multi_thread
);
async fn a_link_whose_target_changes_under_the_same_text_raises_where_links_are_watched() {
    let site = FixtureServer::builder().start().await.unwrap();
    // A download button: its text stays, its target moves to a new release from the 8th
    // request on; a tracking token in another link changes on every request.
    counted(&site, "/download", |n| {
        let file = if n >= 8 { "4.2.1" } else { "4.2.0" };
        format!(
            "<p><a id=\"dl\" href=\"/files/app-{file}.msi\">Download for Windows</a></p>\
             <p><a href=\"/notes?ref=t{n}x\">Release notes</a></p>"
        )
    });
    let api = start().await;
    let user = api.user("links@example.com").await;
    let url = site.url("/download");
    // An xPath that selects the link itself watches its target by default.
    let button = watched(&api, &user, &url, json!({"xPath": "//a[@id='dl']"})).await;
    // The whole page does not, unless asked.
    let whole = watched(&api, &user, &url, json!({"xPath": null})).await;
    let asked = watched(
        &api,
        &user,
        &url,
        json!({"xPath": null, "watchLinks": true}),
    )
    .await;
    let refused = watched(
        &api,
        &user,
        &url,
        json!({"xPath": "//a[@id='dl']", "watchLinks": false}),
    )
    .await;
    assert_eq!(task(&api, &user, &asked).await["watchLinks"], true);
    assert!(task(&api, &user, &button).await.get("watchLinks").is_none());

    for monitor in [&button, &whole, &asked, &refused] {
        checks(&api, &user, monitor, 14).await;
    }
    let first = checks(&api, &user, &button, 1).await;
    assert_eq!(
        first[0]["raw"], "Download for Windows </files/app-4.2.0.msi>",
        "the value shows the link's target after its text"
    );
    assert_eq!(raised(&api, &user, &button).await, ["NotEq"]);
    assert_eq!(raised(&api, &user, &asked).await, ["NotEq"]);
    assert_eq!(raised(&api, &user, &whole).await, Vec::<String>::new());
    assert_eq!(raised(&api, &user, &refused).await, Vec::<String>::new());
    // The notification shows the old and the new target.
    let path = format!("/thirdparty/v1/notification/list?taskId={button}");
    let list = api.get(&user, &path).await.ok().clone();
    let notification = &list["data"][0];
    assert!(
        notification["comparand"]
            .as_str()
            .unwrap()
            .contains("app-4.2.0.msi"),
        "{notification}"
    );
    assert!(
        notification["current"]
            .as_str()
            .unwrap()
            .contains("app-4.2.1.msi"),
        "{notification}"
    );
    // The field takes a boolean or null, nothing else.
    let bad = json!({"name": "n", "url": url, "recurrenceInSeconds": 3600, "watchLinks": "yes"});
    assert_eq!(api.put(&user, "/thirdparty/v1/task", bad).await.status, 400);
}

both!(
    the_openapi_document_describes_the_noise_fields,
    multi_thread
);
async fn the_openapi_document_describes_the_noise_fields() {
    let api = Api::start().await;
    let doc: Value = api
        .client()
        .get(api.url("/thirdparty/v1/openapi.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let schemas = &doc["components"]["schemas"];
    let monitor = &schemas["Monitor"]["properties"];
    for field in ["noise", "compareLines", "noiseNotice"] {
        let described = monitor[field].to_string();
        assert!(
            described.contains("description"),
            "Monitor.{field}: {described}"
        );
    }
    assert_eq!(
        monitor["noiseNotice"]["readOnly"], true,
        "{}",
        monitor["noiseNotice"]
    );
    let mask = &schemas["NoiseMask"]["properties"];
    for field in ["pattern", "learned", "active", "example"] {
        assert!(
            mask.get(field).is_some(),
            "NoiseMask.{field}: {}",
            schemas["NoiseMask"]
        );
    }
    assert_eq!(mask["example"]["readOnly"], true, "{}", mask["example"]);
    assert_eq!(mask["learned"]["readOnly"], true, "{}", mask["learned"]);
    assert_eq!(schemas["LineOrder"]["enum"], json!(["ordered", "set"]));
}

/// A product page whose counter and token change on every request; its price is 129.99 until
/// the `change_at`-th request, then 128.99.
fn product(n: usize, change_at: usize) -> String {
    let price = if n < change_at { "129.99" } else { "128.99" };
    let token = format!(
        "{:016x}",
        (n as u64 + 7).wrapping_mul(0x9e37_79b9_7f4a_7c15)
    );
    format!(
        "<p>Aurora Espresso Machine</p><p>${price}</p>\
         <p>In stock · {} bought in the last hour</p><p>Session {token} · Help</p>\
         <div>Rendered at 2026-11-25 10:{:02}:{:02} UTC · Build green</div>",
        n * 3 + 10,
        (n / 60) % 60,
        n % 60
    )
}

/// Waits (20 s at most) until GET shows the monitor with learned masks; returns it.
async fn with_learned_masks(api: &Api, user: &User, id: &str) -> Value {
    for _ in 0..200 {
        let monitor = task(api, user, id).await;
        if masks(&monitor).iter().any(|(_, learned, _)| *learned) {
            return monitor;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no learned mask after 20 s: {}", task(api, user, id).await);
}

both!(
    a_new_monitor_learns_its_noise_from_quick_samples_and_alerts_only_on_a_real_change,
    multi_thread
);
async fn a_new_monitor_learns_its_noise_from_quick_samples_and_alerts_only_on_a_real_change() {
    let site = FixtureServer::builder().start().await.unwrap();
    counted(&site, "/item", |n| product(n, 16));
    let api = start().await;
    let user = api.user("learn@example.com").await;
    let id = watched(&api, &user, &site.url("/item"), json!({})).await;

    // Learned with the first check: visible at once, with what each masked.
    let monitor = with_learned_masks(&api, &user, &id).await;
    let first = checks(&api, &user, &id, 1).await;
    assert_eq!(first.len(), 1, "the samples are not history entries");
    for mask in monitor["noise"].as_array().unwrap() {
        assert_eq!(mask["learned"], true, "{mask}");
        assert!(mask["example"].is_string(), "{mask}");
    }
    assert!(monitor.get("noiseNotice").is_none(), "{monitor}");

    // Counter, token and clock move on every check: nothing raises; the price does, once.
    let history = checks(&api, &user, &id, 18).await;
    let values: Vec<&str> = history.iter().map(|e| e["raw"].as_str().unwrap()).collect();
    assert!(
        values.windows(2).all(|w| w[0] != w[1]),
        "every check differs: {values:?}"
    );
    assert!(values.last().unwrap().contains("128.99"));
    assert_eq!(raised(&api, &user, &id).await, ["NotEq"], "{values:#?}");
}

both!(
    a_new_selection_drops_the_learned_masks_and_learns_again,
    multi_thread
);
async fn a_new_selection_drops_the_learned_masks_and_learns_again() {
    let site = FixtureServer::builder().start().await.unwrap();
    counted(&site, "/item", |n| product(n, usize::MAX));
    let api = start().await;
    let user = api.user("moved@example.com").await;
    let mine = json!({"pattern": "Help"});
    let id = watched(&api, &user, &site.url("/item"), json!({"noise": [mine]})).await;
    let before = masks(&with_learned_masks(&api, &user, &id).await);
    assert!(before.contains(&("Help".to_string(), false, true)));

    // A PUT from a client that read the monitor before it learned (its list has only the
    // person's mask) keeps the learned masks; switching one off sticks.
    let mut stale = task(&api, &user, &id).await;
    stale["noise"] = json!([{"pattern": "Help"}]);
    api.put(&user, "/thirdparty/v1/task", stale).await.ok();
    assert_eq!(masks(&task(&api, &user, &id).await), before);
    let mut off = task(&api, &user, &id).await;
    let learned_one = before.iter().position(|m| m.1).unwrap();
    off["noise"][learned_one]["active"] = json!(false);
    api.put(&user, "/thirdparty/v1/task", off).await.ok();
    let switched = masks(&task(&api, &user, &id).await);
    assert!(
        !switched[learned_one].2 && switched[learned_one].1,
        "{switched:?}"
    );

    // Another selection: the learned masks go at once, the person's stays, and the next
    // check learns the new value's noise.
    let mut edit = task(&api, &user, &id).await;
    edit["xPath"] = json!("//div");
    api.put(&user, "/thirdparty/v1/task", edit).await.ok();
    assert_eq!(
        masks(&task(&api, &user, &id).await),
        [("Help".to_string(), false, true)]
    );
    let after = masks(&with_learned_masks(&api, &user, &id).await);
    let learned: Vec<&String> = after.iter().filter(|m| m.1).map(|m| &m.0).collect();
    assert!(!learned.is_empty());
    assert!(
        learned.iter().all(|p| !before.iter().any(|b| &&b.0 == p)),
        "learned again, for the new value: {before:?} then {after:?}"
    );
}

/// A word of letters only, different for every `n`.
fn word(n: usize) -> String {
    let mut n = n * 7919 + 104_729;
    let mut word = String::new();
    while n > 0 {
        word.push((b'a' + (n % 26) as u8) as char);
        n /= 26;
    }
    word
}

both!(
    a_page_with_no_stable_part_says_so_and_never_alerts,
    multi_thread
);
async fn a_page_with_no_stable_part_says_so_and_never_alerts() {
    let site = FixtureServer::builder().start().await.unwrap();
    counted(&site, "/chaos", |n| {
        (0..3)
            .map(|line| format!("<p>{} {}</p>", word(n * 3 + line), word(n * 5 + line + 1)))
            .collect()
    });
    let api = start().await;
    let user = api.user("chaos@example.com").await;
    let id = watched(&api, &user, &site.url("/chaos"), json!({})).await;

    // Said from the first checks on (the quick samples showed it), not only once later checks
    // have.
    for n in [1, 2, 3] {
        checks(&api, &user, &id, n).await;
        let monitor = task(&api, &user, &id).await;
        assert!(
            monitor["noiseNotice"].is_string(),
            "after {n} checks: {monitor}"
        );
    }
    let history = checks(&api, &user, &id, 12).await;
    let monitor = task(&api, &user, &id).await;
    let notice = monitor["noiseNotice"]
        .as_str()
        .unwrap_or_else(|| panic!("{monitor}"));
    assert_eq!(notice, wachet::alerts::noise::UNSTABLE);
    // Its quick samples showed it at once: no check alerts, the notice says why.
    assert_eq!(
        raised(&api, &user, &id).await,
        Vec::<String>::new(),
        "{} checks",
        history.len()
    );
    // The monitor's page says so, in words.
    let cookie = crate::support::web::session_cookie(&api, &user).await;
    let (status, html) =
        crate::support::web::page_text(&api, &cookie, &format!("/monitors/{id}")).await;
    assert_eq!(status, 200);
    let shown = html.replace("&#39;", "'").replace("&quot;", "\"");
    assert!(shown.contains("noise-notice"), "{html}");
    assert!(shown.contains(&notice[..40]), "{html}");
}

/// A list of offers as a server that sorts anew on every request writes it, with the price of
/// the first offer changed from the `change_at`-th request on.
fn offers(n: usize, change_at: usize) -> String {
    let mut rows = [
        "Seller A: 49.90".to_string(),
        "Seller B: 51.00".to_string(),
        "Seller C: 53.50".to_string(),
        "Seller D: 55.00".to_string(),
    ];
    if n >= change_at {
        rows[0] = "Seller A: 47.90".to_string();
    }
    rows.rotate_left(n % 4);
    if n.is_multiple_of(2) {
        rows.swap(1, 3);
    }
    let items: String = rows.iter().map(|r| format!("<p>{r}</p>")).collect();
    format!("<html><body><h1>Offers</h1>{items}</body></html>")
}

both!(
    a_list_whose_order_changes_on_every_request_is_compared_as_a_set_once_learned,
    multi_thread
);
async fn a_list_whose_order_changes_on_every_request_is_compared_as_a_set_once_learned() {
    let site = FixtureServer::builder().start().await.unwrap();
    counted(&site, "/offers", |n| offers(n, 14));
    let api = start().await;
    let user = api.user("order@example.com").await;
    let id = watched(&api, &user, &site.url("/offers"), json!({})).await;

    let history = checks(&api, &user, &id, 16).await;
    let monitor = task(&api, &user, &id).await;
    assert_eq!(monitor["compareLines"], "set", "{monitor}");
    assert!(monitor.get("noiseNotice").is_none(), "{monitor}");
    assert!(
        masks(&monitor).is_empty(),
        "no mask hides the list: {monitor}"
    );
    let values: Vec<&str> = history.iter().map(|e| e["raw"].as_str().unwrap()).collect();
    assert!(values.last().unwrap().contains("47.90"), "{values:#?}");
    assert_eq!(raised(&api, &user, &id).await, ["NotEq"], "{values:#?}");
}

both!(
    a_page_that_varies_in_its_first_samples_is_sampled_more_and_a_quiet_page_is_not,
    multi_thread
);
async fn a_page_that_varies_in_its_first_samples_is_sampled_more_and_a_quiet_page_is_not() {
    // A sponsored line rotating among three wordings showed the same one on the check and its
    // first two samples (one time in nine); the session token shows the page varies.
    const ADS: [&str; 3] = [
        "Fresh beans delivered monthly",
        "Upgrade your kitchen with SteelLine appliances",
        "Free shipping on orders over 50 USD this week",
    ];
    let site = FixtureServer::builder().start().await.unwrap();
    counted(&site, "/rotating", |n| {
        let ad = if n <= 4 { ADS[0] } else { ADS[n % 3] };
        format!(
            "<p>Aurora Espresso Machine</p><p>$129.99</p><p>Sponsored: {ad}</p>\
             <p>Session {:016x}</p>",
            (n as u64 + 7).wrapping_mul(0x9e37_79b9_7f4a_7c15)
        )
    });
    counted(&site, "/quiet", |_| {
        "<p>Aurora Espresso Machine</p><p>$129.99</p>".to_string()
    });
    let api = start().await;
    let user = api.user("sampled@example.com").await;
    let hourly = json!({"recurrenceInSeconds": 3600});

    let rotating = watched(&api, &user, &site.url("/rotating"), hourly.clone()).await;
    let monitor = with_learned_masks(&api, &user, &rotating).await;
    assert_eq!(site.hits("/rotating"), 5, "the check and four samples");
    let examples: Vec<&str> = monitor["noise"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["example"].as_str())
        .collect();
    assert!(
        examples.iter().any(|e| ADS.iter().any(|ad| e.contains(ad))),
        "the sponsored line is learned: {monitor}"
    );

    let quiet = watched(&api, &user, &site.url("/quiet"), hourly).await;
    checks(&api, &user, &quiet, 1).await;
    assert_eq!(site.hits("/quiet"), 3, "the check and two samples");
    assert!(masks(&task(&api, &user, &quiet).await).is_empty());
}

both!(
    a_crawled_page_learns_its_own_noise_and_its_real_change_still_raises,
    multi_thread
);
async fn a_crawled_page_learns_its_own_noise_and_its_real_change_still_raises() {
    // A Portal's page whose render time moves on every other request (the confirming check
    // sees it again, so it raises until learned), then a real edit from its 30th request on.
    // (An audience count, such as "Viewed N times", is no news by its words and teaches no
    // mask.)
    let site = FixtureServer::builder()
        .page("/", "<a href=/a>A</a> <a href=/b>B</a> home")
        .page("/b", "<p>quiet page</p>")
        .start()
        .await
        .unwrap();
    counted(&site, "/a", |n| {
        let minutes = if n >= 30 { 4 } else { 3 };
        format!(
            "<p>Read {minutes} minutes</p><p>Rendered in {} ms</p><p>Sow indoors.</p>",
            100 + n / 2
        )
    });
    let api = start().await;
    let user = api.user("crawl@example.com").await;
    let body = json!({
        "url": site.url("/"), "jobType": "Portal", "crawlingDepth": 1, "recurrenceInSeconds": 1,
        "alerts": [{"type": "NotEq"}]
    });
    let task = id(&api.task(&user, body).await);
    let of_a = |all: &Value| -> Vec<String> {
        let mut currents: Vec<String> = all["data"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|n| n["url"].as_str().unwrap_or("").ends_with("/a"))
            .map(|n| n["current"].as_str().unwrap_or("").to_string())
            .collect();
        currents.reverse();
        currents
    };
    let path = format!("/thirdparty/v1/notification/list?taskId={task}&count=500");
    let mut raised = Vec::new();
    for _ in 0..900 {
        raised = of_a(api.get(&user, &path).await.ok());
        if raised.iter().any(|c| c.contains("Read 4 minutes")) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let real: Vec<&String> = raised
        .iter()
        .filter(|c| c.contains("Read 4 minutes"))
        .collect();
    assert_eq!(real.len(), 1, "the real change raises once: {raised:#?}");
    // The counter raised only while it was being learned: never past its 20th request.
    let views = |c: &str| -> u32 {
        c.split("Rendered in ")
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    let late: Vec<&String> = raised
        .iter()
        .filter(|c| c.contains("Read 3 minutes") && views(c) >= 110)
        .collect();
    assert!(
        late.is_empty(),
        "the counter still raised once learned: {raised:#?}"
    );
    assert!(site.hits("/a") >= 30);

    // The page shows what it learned; the quiet page learned nothing.
    let pages_path = format!("/thirdparty/v1/task/{task}/pages");
    let pages = api.get(&user, &pages_path).await.ok().clone();
    let page = |pages: &Value, end: &str| -> Value {
        pages
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["url"].as_str().unwrap_or("").ends_with(end))
            .cloned()
            .unwrap_or_else(|| panic!("no page {end}: {pages}"))
    };
    let learned = page(&pages, "/a")["noise"].clone();
    let counter = learned
        .as_array()
        .unwrap_or_else(|| panic!("/a shows no masks: {pages}"))
        .iter()
        .find(|m| m["pattern"].as_str().unwrap_or("").contains("Rendered"))
        .unwrap_or_else(|| panic!("no mask of the counter: {learned}"))
        .clone();
    assert_eq!(counter["learned"], true);
    assert!(page(&pages, "/b").get("noise").is_none(), "{pages}");

    // Switched off on the monitor: the page drops it, and the counter raises again.
    let mut off = api
        .get(&user, &format!("/thirdparty/v1/task/{task}"))
        .await
        .ok()
        .clone();
    off["noise"] = json!([{"pattern": counter["pattern"], "active": false}]);
    api.put(&user, "/thirdparty/v1/task", off).await.ok();
    let before = raised.len();
    let mut again = Vec::new();
    for _ in 0..300 {
        again = of_a(api.get(&user, &path).await.ok());
        if again.len() > before {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        again.len() > before,
        "the counter raises again once switched off"
    );
    let pages = api.get(&user, &pages_path).await.ok().clone();
    let kept = page(&pages, "/a")["noise"].clone();
    assert!(
        !kept
            .as_array()
            .into_iter()
            .flatten()
            .any(|m| m["pattern"] == counter["pattern"]),
        "the page still keeps it: {kept}"
    );
}

both!(
    new_monitors_take_their_quick_samples_without_holding_a_check_slot,
    multi_thread
);
/// 12 monitors created at once with 2 check slots, each on a page that varies on every request
/// (so each takes four quick samples, 6 s of pauses): every monitor's first fetch comes before
/// any monitor's last sample, and each is then checked once with its samples as before. A first
/// check holding its slot through its samples lets the third monitor start only once the first
/// two have taken all of theirs. (2 slots let 64 checks sample past their slots at once.)
async fn new_monitors_take_their_quick_samples_without_holding_a_check_slot() {
    const MONITORS: usize = 12;
    let site = FixtureServer::builder().start().await.unwrap();
    for i in 0..MONITORS {
        counted(&site, &format!("/p{i}"), move |n| {
            format!(
                "<p>Product {i}</p><p>Session {:016x}</p>",
                (n as u64 + 7).wrapping_mul(0x9e37_79b9_7f4a_7c15)
            )
        });
    }
    let mut setup = Setup::checking();
    // The host's own limits would space the fetches out instead of the slots.
    setup.engine = setup.engine.per_host_rps(0).per_host_concurrency(0);
    setup.service.schedule.checks_in_flight = 2;
    let api = Api::start_as(setup).await;
    let user = api.user("slots@example.com").await;
    let hourly = json!({"recurrenceInSeconds": 3600});
    let mut ids = Vec::new();
    for i in 0..MONITORS {
        ids.push(watched(&api, &user, &site.url(&format!("/p{i}")), hourly.clone()).await);
    }

    for id in &ids {
        assert_eq!(checks(&api, &user, id, 1).await.len(), 1, "one check each");
    }
    let paths: Vec<String> = site.requests().into_iter().map(|r| r.path).collect();
    let path = |i: usize| format!("/p{i}");
    for i in 0..MONITORS {
        assert_eq!(
            paths.iter().filter(|p| **p == path(i)).count(),
            5,
            "the check and four samples of {}: {paths:?}",
            path(i)
        );
    }
    // The first time a monitor's fifth fetch (its last sample) was served.
    let mut served = std::collections::HashMap::new();
    let last_sample = paths
        .iter()
        .position(|p| {
            let n = served.entry(p.clone()).or_insert(0);
            *n += 1;
            *n == 5
        })
        .unwrap();
    for i in 0..MONITORS {
        let first = paths.iter().position(|p| *p == path(i)).unwrap();
        assert!(
            first < last_sample,
            "{} was first fetched after a monitor's last sample: {paths:?}",
            path(i)
        );
    }
}
