//! Point-and-click selection over the real service: the picker fetches a fixture page through
//! the engine, shows it without its scripts in a sandboxed frame, proposes XPaths for clicked
//! elements in real Chromium, highlights what they match and shows the engine's value; its
//! no-script form, its refusals (network policy, a 10 MB page, another user's monitor or
//! page), and a hostile page that must change nothing. Also a Portal monitor's pages on its
//! page and history.

use crate::support::web::{
    client, dark, eval, page_text, screenshot, session_cookie, until, width,
};
use crate::support::web::{get_page, no_dialog, signed_in_browser};
use crate::{Api, Setup, id};
use chromiumoxide::Page;
use chromiumoxide::layout::Point;
use serde_json::json;
use std::time::Duration;
use wachet::testing::FixtureServer;

const SHOP: &str = r#"<html><head><title>Tea shop</title>
<style>body { font-family: serif; margin: 2rem; } .item { padding: .2rem; }</style></head>
<body><h1>Tea shop</h1>
<p class="css-1x2y3z">Open every day</p>
<div><p>Green tea</p><p>Fresh today <span class="stamp">10:42</span></p></div>
<div id="price">3.50 EUR</div>
<ul><li class="item">Sencha</li><li class="item">Matcha</li><li class="item sc-a1b2c3">Gyokuro</li></ul>
</body></html>"#;

/// `path?pairs`, encoded.
fn with_query(path: &str, pairs: &[(&str, &str)]) -> String {
    format!("{path}?{}", serde_urlencoded::to_string(pairs).unwrap())
}

/// The point at the centre of `selector` inside the picker's frame, scrolled into view.
async fn frame_point(page: &Page, selector: &str) -> Point {
    let js = format!(
        r#"(() => {{
            const frame = document.getElementById('pick-frame');
            const el = frame.contentDocument.querySelector({selector:?});
            frame.scrollIntoView({{block: 'start'}});
            el.scrollIntoView({{block: 'center'}});
            const r = el.getBoundingClientRect(), f = frame.getBoundingClientRect();
            return [f.left + frame.clientLeft + Math.min(r.left + 8, r.left + r.width / 2),
                    f.top + frame.clientTop + r.top + r.height / 2];
        }})()"#
    );
    let [x, y]: [f64; 2] = eval(page, &js).await;
    Point { x, y }
}

/// Clicks `selector` in the frame with the mouse, as a person would.
async fn click_in_frame(page: &Page, selector: &str) {
    let point = frame_point(page, selector).await;
    page.move_mouse(point).await.unwrap();
    page.click(point).await.unwrap();
}

async fn value_of(page: &Page, selector: &str) -> String {
    eval(page, &format!("document.querySelector({selector:?}).value")).await
}

/// Elements of the frame carrying `class`.
async fn marked(page: &Page, class: &str) -> usize {
    eval(
        page,
        &format!(
            "document.getElementById('pick-frame').contentDocument.querySelectorAll('.{class}').length"
        ),
    )
    .await
}

/// Opens the picker for `url` and waits until the frame shows the page and the script has
/// taken it in hand.
async fn open_picker(page: &Page, api: &Api, url: &str, ready: &str) {
    let address = format!(
        "/monitors/pick?{}",
        serde_urlencoded::to_string([("url", url)]).unwrap()
    );
    page.goto(api.url(&address)).await.unwrap();
    until(
        page,
        &format!(
            "(() => {{ const f = document.getElementById('pick-frame'); const d = f && f.contentDocument;
               return !!d && !!d.querySelector({ready:?}) && !document.getElementById('pick-mode').hidden
                 && [...d.querySelectorAll('style')].some(s => s.textContent.includes('wachet-picked')); }})()"
        ),
    )
    .await;
}

in_browser!(
    clicking_proposes_an_xpath_highlights_its_matches_and_shows_the_engines_value_in_a_real_browser,
    multi_thread
);
async fn clicking_proposes_an_xpath_highlights_its_matches_and_shows_the_engines_value_in_a_real_browser()
 {
    let Some(_guard) = wachet::testing::browser_test().await else {
        return;
    };
    let site = FixtureServer::builder()
        .page("/shop", SHOP)
        .start()
        .await
        .unwrap();
    let api = Api::start().await;
    let user = api.user("picker@example.com").await;
    let (driver, page, mut dialogs) = signed_in_browser(&api, &user).await;
    // An address that cannot be fetched: the reason at the field.
    page.goto(api.url("/monitors/pick?url=ftp%3A%2F%2Fexample.com%2F"))
        .await
        .unwrap();
    until(&page, "!!document.querySelector('#pick-url-error')").await;
    assert_eq!(
        eval::<String>(
            &page,
            "document.querySelector('#pick-url').getAttribute('aria-describedby')"
        )
        .await,
        "pick-url-error"
    );
    for px in [1440, 375] {
        screenshot(&page, "picker-address-error", px).await;
    }
    width(&page, 1440).await;
    open_picker(&page, &api, &site.url("/shop"), "#price").await;
    assert_eq!(site.hits("/shop"), 1);

    // An element with an id: anchored on it, one match, the engine's value.
    click_in_frame(&page, "#price").await;
    until(
        &page,
        r#"document.querySelector('#pick-xpath').value === '//*[@id="price"]'
           && document.querySelector('#pick-count').textContent === '1 match'"#,
    )
    .await;
    assert_eq!(
        eval::<String>(&page, "document.querySelector('#pick-value').textContent").await,
        "3.50 EUR"
    );
    assert_eq!(marked(&page, "wachet-picked").await, 1);

    // Without id or class (or with a generated class only): positional.
    for (selector, xpath, value) in [
        ("div > p", "/html/body/div[1]/p[1]", "Green tea"),
        ("p.css-1x2y3z", "/html/body/p[1]", "Open every day"),
    ] {
        click_in_frame(&page, selector).await;
        until(
            &page,
            &format!(
                "document.querySelector('#pick-xpath').value === {xpath:?}
                 && document.querySelector('#pick-value').textContent === {value:?}"
            ),
        )
        .await;
        assert_eq!(marked(&page, "wachet-picked").await, 1, "{xpath}");
    }

    // A stable class: everything carrying it is matched and highlighted (the generated class
    // beside it is not used).
    click_in_frame(&page, "li.item").await;
    until(
        &page,
        "document.querySelector('#pick-count').textContent === '3 matches'",
    )
    .await;
    assert_eq!(
        value_of(&page, "#pick-xpath").await,
        "//li[contains(concat(' ', normalize-space(@class), ' '), ' item ')]"
    );
    assert_eq!(
        eval::<String>(&page, "document.querySelector('#pick-value').textContent").await,
        "Sencha\nMatcha\nGyokuro"
    );
    assert_eq!(marked(&page, "wachet-picked").await, 3);

    // Click what to ignore: the time stamp, then what to watch: its paragraph.
    page.find_element("#pick-mode input[value=ignore]")
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    click_in_frame(&page, "span.stamp").await;
    until(
        &page,
        r#"document.querySelector('#pick-exclude').value === '//span[@class="stamp"]'"#,
    )
    .await;
    page.find_element("#pick-mode input[value=watch]")
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    click_in_frame(&page, "div > p + p").await;
    until(
        &page,
        "document.querySelector('#pick-xpath').value === '/html/body/div[1]/p[2]'
         && document.querySelector('#pick-count').textContent === '1 match, 1 node excluded'",
    )
    .await;
    assert_eq!(
        eval::<String>(&page, "document.querySelector('#pick-value').textContent").await,
        "Fresh today"
    );
    assert_eq!(marked(&page, "wachet-ignored").await, 1);
    assert_eq!(marked(&page, "wachet-picked").await, 1);

    // A broken XPath typed in: the engine's message at the field.
    page.evaluate("document.querySelector('#pick-xpath').value = '//p['; document.querySelector('#pick-try').click()")
        .await
        .unwrap();
    until(
        &page,
        "document.querySelector('#pick-xpath').getAttribute('aria-invalid') === 'true'
         && document.querySelector('#pick-xpath').getAttribute('aria-describedby') === 'pick-xpath-error'
         && !!document.querySelector('#pick-xpath-error').textContent",
    )
    .await;
    page.evaluate("document.querySelector('#pick-xpath').value = '/html/body/div[1]/p[2]'; document.querySelector('#pick-try').click()")
        .await
        .unwrap();
    until(
        &page,
        "!document.querySelector('#pick-xpath-error') && document.querySelector('#pick-value').textContent === 'Fresh today'",
    )
    .await;

    for px in [1440, 375] {
        screenshot(&page, "picker", px).await;
    }
    dark(&page, true).await;
    screenshot(&page, "picker-dark", 1440).await;
    dark(&page, false).await;
    width(&page, 1440).await;

    // Use this: the new-monitor form's address with the URL and both XPaths.
    page.find_element("#use-this")
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    until(&page, "location.pathname === '/monitors/new'").await;
    let query: Vec<String> = eval(
        &page,
        "(() => { const q = new URLSearchParams(location.search); return [q.get('url'), q.get('xPath'), q.get('excludeXPath')]; })()",
    )
    .await;
    assert_eq!(
        query,
        [
            site.url("/shop"),
            "/html/body/div[1]/p[2]".to_string(),
            "//span[@class=\"stamp\"]".to_string()
        ]
    );
    // The page was fetched once; everything since was evaluated on the kept copy.
    assert_eq!(site.hits("/shop"), 1);
    no_dialog(&mut dialogs).await;
    driver.close().await;
}

const HOSTILE: &str = r#"<html><head>
<meta http-equiv="refresh" content="0;url=/elsewhere">
<base href="/elsewhere/">
<script>window.top.document.title = 'owned'; top.document.body.dataset.owned = 'yes'; alert('head');</script>
<script src="/evil.js"></script>
</head><body onload="alert('onload')">
<h1 id="title">Hostile</h1>
<form id="steal" action="/steal" method="post"><input name="q" value="1"><button id="go">Go</button></form>
<img src="/pixel.png" onerror="alert('img')">
<a id="js" href="javascript:alert('link')">a link</a>
<a id="away" href="/elsewhere">away</a>
<iframe srcdoc="<script>parent.parent.document.title='srcdoc'</script>"></iframe>
<script>document.write('<p id=written>written</p>'); parent.document.title = 'owned too';</script>
</body></html>"#;

in_browser!(
    a_hostile_page_runs_nothing_and_changes_nothing_in_a_real_browser,
    multi_thread
);
async fn a_hostile_page_runs_nothing_and_changes_nothing_in_a_real_browser() {
    let Some(_guard) = wachet::testing::browser_test().await else {
        return;
    };
    let site = FixtureServer::builder()
        .page("/hostile", HOSTILE)
        .page("/elsewhere", "<p>moved away</p>")
        .page("/evil.js", "window.top.document.title = 'evil'")
        .page("/steal", "stolen")
        .start()
        .await
        .unwrap();
    let api = Api::start().await;
    let user = api.user("target@example.com").await;
    let (driver, page, mut dialogs) = signed_in_browser(&api, &user).await;
    open_picker(&page, &api, &site.url("/hostile"), "#title").await;
    // Time for a refresh, a script or a load handler to act, were any allowed to.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let frame_path = "document.getElementById('pick-frame').contentDocument.location.pathname";
    assert!(
        eval::<String>(&page, frame_path)
            .await
            .starts_with("/monitors/pick/frame/")
    );
    assert_eq!(
        eval::<String>(&page, "document.title").await,
        "Pick what to watch · wachet"
    );
    assert!(eval::<bool>(&page, "document.body.dataset.owned === undefined").await);
    assert!(
        eval::<bool>(
            &page,
            "!document.getElementById('pick-frame').contentDocument.querySelector('#written')"
        )
        .await
    );
    // A click on the form's button or on the links picks; nothing is sent or followed.
    for selector in ["#go", "#js", "#away"] {
        click_in_frame(&page, selector).await;
    }
    until(
        &page,
        "document.querySelector('#pick-xpath').value === '//*[@id=\"away\"]'",
    )
    .await;
    assert!(
        eval::<String>(&page, frame_path)
            .await
            .starts_with("/monitors/pick/frame/")
    );
    screenshot(&page, "picker-hostile", 1440).await;
    width(&page, 1440).await;

    // Opened on its own, the frame's address runs nothing either (its policy sandboxes it).
    let frame_src: String = eval(
        &page,
        "document.getElementById('pick-frame').getAttribute('src')",
    )
    .await;
    page.goto(api.url(&frame_src)).await.unwrap();
    until(&page, "!!document.querySelector('#title')").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(eval::<bool>(&page, "!document.querySelector('#written')").await);
    assert_eq!(eval::<String>(&page, "location.pathname").await, frame_src);

    no_dialog(&mut dialogs).await;
    for path in ["/elsewhere", "/evil.js", "/steal"] {
        assert_eq!(site.hits(path), 0, "{path} was requested");
    }
    driver.close().await;

    // The headers that make it so.
    let cookie = session_cookie(&api, &user).await;
    let frame = get_page(&api, &cookie, &frame_src).await;
    let csp = frame.headers()["content-security-policy"].to_str().unwrap();
    assert!(csp.starts_with("sandbox allow-same-origin;"), "{csp}");
    assert!(
        !csp.contains("allow-scripts") && !csp.contains("script-src"),
        "{csp}"
    );
    assert!(csp.contains("default-src 'none'") && csp.contains("frame-ancestors 'self'"));
    assert_eq!(frame.headers()["x-frame-options"], "SAMEORIGIN");
    let body = frame.text().await.unwrap();
    for gone in [
        "alert(",
        "http-equiv",
        "onload",
        "/evil.js",
        "/steal",
        "srcdoc",
    ] {
        assert!(!body.contains(gone), "{gone} is still in the frame");
    }
}

both!(without_scripts_the_try_form_shows_the_engines_value_and_errors_at_their_fields);
async fn without_scripts_the_try_form_shows_the_engines_value_and_errors_at_their_fields() {
    let site = FixtureServer::builder()
        .page("/shop", SHOP)
        .start()
        .await
        .unwrap();
    let api = Api::start().await;
    let user = api.user("noscript@example.com").await;
    let cookie = session_cookie(&api, &user).await;
    let load = get_page(
        &api,
        &cookie,
        &with_query("/monitors/pick", &[("url", &site.url("/shop"))]),
    )
    .await;
    assert_eq!(load.status(), 303);
    let location = load.headers()["location"].to_str().unwrap().to_string();
    assert!(location.starts_with("/monitors/pick?token="), "{location}");
    let token = location
        .trim_start_matches("/monitors/pick?token=")
        .to_string();

    let tried = |x_path: &'static str, exclude: &'static str| {
        let (api, cookie, token) = (&api, &cookie, &token);
        async move {
            let response = get_page(
                api,
                cookie,
                &with_query(
                    "/monitors/pick",
                    &[
                        ("token", token.as_str()),
                        ("xPath", x_path),
                        ("excludeXPath", exclude),
                    ],
                ),
            )
            .await;
            (response.status().as_u16(), response.text().await.unwrap())
        }
    };
    let (status, html) = tried("//*[@id=\"price\"]", "").await;
    assert_eq!(status, 200);
    assert!(html.contains(r#"<p id="pick-count">1 match</p>"#), "{html}");
    assert!(html.contains(">3.50 EUR</pre>"), "{html}");
    assert!(html.contains("sandbox=\"allow-same-origin\""));
    assert!(html.contains("href=\"/monitors/new?url="));
    assert!(
        html.contains("xPath=%2F%2F*%5B%40id%3D%22price%22%5D"),
        "{html}"
    );

    let (_, html) = tried("//li", "//li[3]").await;
    assert!(html.contains("2 matches, 1 node excluded"), "{html}");
    let (_, html) = tried("//table", "").await;
    assert!(
        html.contains("0 matches") && html.contains("xPath matched nothing"),
        "{html}"
    );
    let (status, html) = tried("//p[", "").await;
    assert_eq!(status, 200);
    assert!(
        html.contains(r#"aria-invalid="true" aria-describedby="pick-xpath-error""#),
        "{html}"
    );
    assert!(html.contains(r#"<p class="field-error" id="pick-xpath-error">"#));

    // The same through the value requests picker.js makes.
    let value: serde_json::Value = get_page(
        &api,
        &cookie,
        &with_query(
            "/monitors/pick/value",
            &[("token", token.as_str()), ("xPath", "//li[@class='item']")],
        ),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(value["value"], "Sencha\nMatcha");
    assert_eq!(value["matched"], 2);
    assert_eq!(value["summary"], "2 matches");

    // Another user's token, and a made-up one: the same page, nothing of the first user's.
    let other = api.user("other-picker@example.com").await;
    let other_cookie = session_cookie(&api, &other).await;
    let theirs = page_text(
        &api,
        &other_cookie,
        &format!("/monitors/pick?token={token}"),
    )
    .await;
    let unknown = page_text(&api, &other_cookie, "/monitors/pick?token=0123456789abcdef").await;
    assert_eq!(theirs.0, 404);
    assert_eq!(theirs, unknown);
    assert!(!theirs.1.contains("Tea shop"));
    let frame = page_text(
        &api,
        &other_cookie,
        &format!("/monitors/pick/frame/{token}"),
    )
    .await;
    assert_eq!(frame.0, 404);
    assert!(!frame.1.contains("Sencha"));
    let value = get_page(
        &api,
        &other_cookie,
        &with_query(
            "/monitors/pick/value",
            &[("token", token.as_str()), ("xPath", "//li")],
        ),
    )
    .await;
    assert_eq!(value.status(), 404);

    // A link from another site does not fetch: it shows the address to load.
    let before = site.hits("/shop");
    let cross = client()
        .get(api.url(&with_query(
            "/monitors/pick",
            &[("url", &site.url("/shop"))],
        )))
        .header("cookie", &cookie)
        .header("sec-fetch-site", "cross-site")
        .send()
        .await
        .unwrap();
    assert_eq!(cross.status(), 200);
    assert!(cross.text().await.unwrap().contains("Load the page"));
    assert_eq!(site.hits("/shop"), before);
}

both!(refused_addresses_huge_pages_and_another_users_monitor_are_clear_pages);
async fn refused_addresses_huge_pages_and_another_users_monitor_are_clear_pages() {
    let huge = format!(
        "<html><body><p id=a>start</p>{}</body></html>",
        "<p>filler text</p>".repeat(10_000_000 / 18)
    );
    let inside = FixtureServer::builder()
        .ip(std::net::Ipv4Addr::new(127, 0, 0, 2))
        .page("/", SHOP)
        .start()
        .await
        .unwrap();
    let site = FixtureServer::builder()
        .page("/huge", huge)
        .page("/shop", SHOP)
        .start()
        .await
        .unwrap();
    // An engine allowed only 127.0.0.1: 127.0.0.2 stands for the network inside.
    let mut setup = Setup::api();
    setup.engine = wachet::Engine::builder().allow_network("127.0.0.1/32".parse().unwrap());
    let api = Api::start_as(setup).await;
    let user = api.user("limits@example.com").await;
    let cookie = session_cookie(&api, &user).await;
    let load = |url: String| {
        let (api, cookie) = (&api, &cookie);
        async move {
            let response =
                get_page(api, cookie, &with_query("/monitors/pick", &[("url", &url)])).await;
            (response.status().as_u16(), response.text().await.unwrap())
        }
    };

    let (status, html) = load(inside.url("/")).await;
    assert_eq!(status, 502, "{html}");
    assert!(html.contains(r#"aria-invalid="true" aria-describedby="pick-url-error""#));
    assert!(
        html.contains(
            "refused to connect to 127.0.0.2 (127.0.0.2): loopback addresses are not allowed"
        ),
        "{html}"
    );
    assert_eq!(inside.hits("/"), 0);

    let (status, html) = load(site.url("/huge")).await;
    assert_eq!(status, 413, "{html}");
    assert!(
        html.contains("The page is 9.5 MiB large; the picker shows pages up to 2.0 MiB."),
        "{html}"
    );

    let (status, html) = load("ftp://example.com/".into()).await;
    assert_eq!(status, 400);
    assert!(html.contains("pick-url-error"), "{html}");

    // Another user's monitor: the same 404 page as an unknown id.
    let created = api
        .task(
            &user,
            json!({"name": "Mine", "url": site.url("/shop"), "recurrenceInSeconds": 0}),
        )
        .await;
    let other = api.user("other-limits@example.com").await;
    let other_cookie = session_cookie(&api, &other).await;
    let theirs = page_text(
        &api,
        &other_cookie,
        &format!("/monitors/{}/pick", id(&created)),
    )
    .await;
    let unknown = page_text(&api, &other_cookie, "/monitors/999999/pick").await;
    assert_eq!(theirs.0, 404);
    assert_eq!(theirs, unknown);
    assert_eq!(site.hits("/shop"), 0);

    // The owner's: fetched with the monitor's definition, "Use this" leads to its edit form.
    let own = get_page(&api, &cookie, &format!("/monitors/{}/pick", id(&created))).await;
    assert_eq!(own.status(), 303);
    let location = own.headers()["location"].to_str().unwrap().to_string();
    let (_, html) = page_text(&api, &cookie, &location).await;
    assert!(
        html.contains(&format!("href=\"/monitors/{}/edit?xPath=", id(&created))),
        "{html}"
    );
    let (_, monitor_page) = page_text(&api, &cookie, &format!("/monitors/{}", id(&created))).await;
    assert!(monitor_page.contains(&format!(
        "href=\"/monitors/{}/pick\">Pick with the mouse</a>",
        id(&created)
    )));
}

/// The monitor's crawled pages through the API: (url, last check) each.
async fn crawled(api: &Api, user: &crate::User, id: &str) -> Vec<(String, String)> {
    api.get(user, &format!("/thirdparty/v1/task/{id}/pages"))
        .await
        .ok()
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["url"].as_str().unwrap_or("").to_string(),
                p["data"]["lastCheckTimestamp"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
            )
        })
        .collect()
}

in_browser!(
    a_portal_monitors_pages_with_their_state_and_each_pages_history_in_a_real_browser,
    multi_thread
);
async fn a_portal_monitors_pages_with_their_state_and_each_pages_history_in_a_real_browser() {
    let Some(_guard) = wachet::testing::browser_test().await else {
        return;
    };
    let site = FixtureServer::builder()
        .page(
            "/",
            "<title>Home</title><a href=/a>a</a> <a href=/b>b</a> <a href=/doc.pdf>d</a>",
        )
        .page("/a", "<title>Page A</title><p>Alpha <b>one</b></p>")
        .reply("/b", wachet::testing::Reply::new(404))
        .reply(
            "/doc.pdf",
            wachet::testing::Reply::new(200)
                .header("content-type", "application/pdf")
                .body("%PDF-1.4"),
        )
        .start()
        .await
        .unwrap();
    let api = Api::start_checking().await;
    let user = api.user("portal@example.com").await;
    let mut definition = json!({"name": "Docs site", "url": site.url("/"), "jobType": "Portal",
        "crawlingDepth": 1, "crawlBinaryContent": true, "recurrenceInSeconds": 1});
    let created = api.task(&user, definition.clone()).await;
    let id = id(&created);
    // First crawl: four pages, the PDF among them.
    for _ in 0..300 {
        if crawled(&api, &user, &id).await.len() == 4 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(crawled(&api, &user, &id).await.len(), 4);
    // Then binary content is no longer crawled: the PDF is left out of the next crawls, kept in
    // the list. Paused once that shows, so the page stays as it is.
    definition["id"] = json!(id);
    definition["crawlBinaryContent"] = json!(false);
    api.put(&user, "/thirdparty/v1/task", definition.clone())
        .await
        .ok();
    let pdf = site.url("/doc.pdf");
    let home = site.url("/");
    let mut left_out = false;
    for _ in 0..300 {
        let pages = crawled(&api, &user, &id).await;
        let at = |url: &str| {
            pages
                .iter()
                .find(|(u, _)| u == url)
                .and_then(|(_, t)| chrono::DateTime::parse_from_rfc3339(t).ok())
        };
        // Checked after the PDF last was: a crawl went by without it.
        if let (Some(home), Some(pdf)) = (at(&home), at(&pdf))
            && home > pdf
        {
            left_out = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(left_out, "the PDF was never left out");
    definition["recurrenceInSeconds"] = json!(0);
    api.put(&user, "/thirdparty/v1/task", definition).await.ok();

    let (driver, page, _) = signed_in_browser(&api, &user).await;
    page.goto(api.url(&format!("/monitors/{id}")))
        .await
        .unwrap();
    until(
        &page,
        "document.querySelectorAll('.portal-pages .monitor').length === 4",
    )
    .await;
    let rows: Vec<(String, String, String)> = eval(
        &page,
        "[...document.querySelectorAll('.portal-pages .monitor')].map(r => [
            r.querySelector('.monitor-url').textContent,
            r.querySelector('.badge').textContent,
            (r.querySelector('.monitor-error') || {textContent: ''}).textContent])",
    )
    .await;
    let state = |url: &str| {
        rows.iter()
            .find(|(u, ..)| u == url)
            .map(|(_, badge, error)| (badge.as_str(), error.as_str()))
            .unwrap_or_else(|| panic!("{url} not listed: {rows:?}"))
    };
    assert_eq!(state(&home), ("OK", ""));
    assert_eq!(state(&site.url("/a")), ("OK", ""));
    assert_eq!(state(&site.url("/b")), ("Failed", "HTTP 404 Not Found"));
    assert_eq!(state(&pdf), ("Left out", ""));
    assert!(
        eval::<String>(&page, "document.querySelector('.portal-note').textContent")
            .await
            .starts_with("Not fetched in the last crawl")
    );
    for px in [1440, 375] {
        screenshot(&page, "portal-pages", px).await;
    }
    width(&page, 1440).await;

    // A page's own history, under its monitor in the breadcrumbs; its first value a change.
    page.evaluate("[...document.querySelectorAll('.portal-pages .monitor-name')].find(a => a.textContent === 'Page A').click()")
        .await
        .unwrap();
    until(
        &page,
        "location.pathname.endsWith('/history') && !!document.querySelector('.excerpt')",
    )
    .await;
    assert_eq!(
        eval::<String>(&page, "document.querySelector('h1').textContent").await,
        "History of Page A"
    );
    assert_eq!(
        eval::<String>(&page, "document.querySelector('.excerpt').textContent").await,
        "Alpha one"
    );
    let crumbs: Vec<String> = eval(
        &page,
        "[...document.querySelectorAll('.breadcrumbs a')].map(a => a.textContent)",
    )
    .await;
    assert_eq!(crumbs, ["All monitors", "Docs site", "Page A", "History"]);
    let history_path: String = eval(&page, "location.pathname").await;
    screenshot(&page, "portal-page-history", 1440).await;
    width(&page, 1440).await;
    page.evaluate("document.querySelector('.entry-link a').click()")
        .await
        .unwrap();
    until(
        &page,
        "location.pathname.endsWith('/diff') && !!document.querySelector('ins')",
    )
    .await;
    assert_eq!(
        eval::<String>(&page, "document.querySelector('ins').textContent").await,
        "Alpha one"
    );
    // The monitor's own history lists the pages as well.
    page.goto(api.url(&format!("/monitors/{id}/history")))
        .await
        .unwrap();
    until(
        &page,
        "document.querySelectorAll('.portal-pages .monitor').length === 4",
    )
    .await;
    driver.close().await;

    // Another user: the page's history is the 404 page, as an unknown page of their own is.
    let other = api.user("other-portal@example.com").await;
    let other_cookie = session_cookie(&api, &other).await;
    let theirs = page_text(&api, &other_cookie, &history_path).await;
    assert_eq!(theirs.0, 404);
    let own = session_cookie(&api, &user).await;
    let unknown = page_text(&api, &own, &format!("/monitors/{id}/pages/999999/history")).await;
    assert_eq!(unknown.0, 404);
    assert!(!theirs.1.contains("Page A") && !unknown.1.contains("Alpha"));
}

in_browser!(
    a_monitor_with_dynamic_content_is_picked_on_its_rendered_page,
    multi_thread
);
async fn a_monitor_with_dynamic_content_is_picked_on_its_rendered_page() {
    let Some(_guard) = wachet::testing::browser_test().await else {
        return;
    };
    let site = FixtureServer::builder()
        .page(
            "/js",
            "<html><body><div id=out>loading</div>\
             <script>document.getElementById('out').textContent = 'rendered 42';</script></body></html>",
        )
        .start()
        .await
        .unwrap();
    let api = Api::start().await;
    let user = api.user("rendered@example.com").await;
    let created = api
        .task(
            &user,
            json!({"name": "Rendered", "url": site.url("/js"), "xPath": "//*[@id='out']",
                "dynamicContent": true, "recurrenceInSeconds": 0}),
        )
        .await;
    let cookie = session_cookie(&api, &user).await;
    let load = get_page(&api, &cookie, &format!("/monitors/{}/pick", id(&created))).await;
    assert_eq!(load.status(), 303);
    let location = load.headers()["location"].to_str().unwrap().to_string();
    // The monitor's own xPath is tried on the page as the browser rendered it.
    let (status, html) = page_text(&api, &cookie, &location).await;
    assert_eq!(status, 200);
    assert!(html.contains(">rendered 42</pre>"), "{html}");
    assert!(html.contains(", rendered in a browser"));
    let token = location
        .split("token=")
        .nth(1)
        .unwrap()
        .split('&')
        .next()
        .unwrap();
    let (_, frame) = page_text(&api, &cookie, &format!("/monitors/pick/frame/{token}")).await;
    assert!(frame.contains("rendered 42"), "{frame}");
    assert!(
        !frame.contains("textContent"),
        "the page's script is in the frame: {frame}"
    );
}

in_browser!(
    a_portal_pages_learned_noise_is_shown_under_it_in_a_real_browser,
    multi_thread
);
async fn a_portal_pages_learned_noise_is_shown_under_it_in_a_real_browser() {
    let Some(_guard) = wachet::testing::browser_test().await else {
        return;
    };
    let site = FixtureServer::builder()
        .page("/", "<title>Home</title><a href=/a>A</a> home")
        .start()
        .await
        .unwrap();
    // A render time that moves on every other request: the page learns it from its checks.
    site.set_counted("/a", |n| {
        wachet::testing::Reply::html(format!(
            "<title>Page A</title><p>Read 3 minutes</p><p>Rendered in {} ms</p>",
            100 + n / 2
        ))
    });
    let mut setup = Setup::checking();
    setup.service.schedule.confirm_after = Duration::from_secs(1);
    let api = Api::start_as(setup).await;
    let user = api.user("crawled@example.com").await;
    let mut definition = json!({"name": "Garden site", "url": site.url("/"), "jobType": "Portal",
        "crawlingDepth": 1, "recurrenceInSeconds": 1, "alerts": [{"type": "NotEq"}]});
    let id = id(&api.task(&user, definition.clone()).await);
    let pages_path = format!("/thirdparty/v1/task/{id}/pages");
    let mut learned = false;
    for _ in 0..600 {
        let pages = api.get(&user, &pages_path).await.ok().clone();
        learned = pages
            .as_array()
            .into_iter()
            .flatten()
            .any(|p| p["noise"].as_array().is_some_and(|n| !n.is_empty()));
        if learned {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(learned, "the page learned no mask in 60 s");
    // Paused, so the page stays as it is.
    definition["id"] = json!(id);
    definition["recurrenceInSeconds"] = json!(0);
    api.put(&user, "/thirdparty/v1/task", definition).await.ok();

    let (_driver, page, _) = signed_in_browser(&api, &user).await;
    page.goto(api.url(&format!("/monitors/{id}")))
        .await
        .unwrap();
    until(
        &page,
        "document.querySelector('.page-noise summary') !== null",
    )
    .await;
    let summary: String = eval(
        &page,
        "document.querySelector('.page-noise summary').textContent",
    )
    .await;
    assert!(
        summary.starts_with("Ignores 1 learned noise mask"),
        "{summary}"
    );
    page.evaluate("document.querySelector('.page-noise summary').click()")
        .await
        .unwrap();
    until(&page, "document.querySelector('.page-noise').open").await;
    let shown: String = eval(&page, "document.querySelector('.page-noise').textContent").await;
    assert!(shown.contains("Rendered"), "{shown}");
    assert!(shown.contains("It masked"), "{shown}");
    for px in [1440, 375] {
        screenshot(&page, "portal-pages-noise", px).await;
    }
}
