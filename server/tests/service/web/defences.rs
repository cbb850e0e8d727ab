//! Defences of the web interface against a browser led by another site and against one user
//! crowding out others: the `Host` names answered, session cookies that cannot be tossed, the
//! picker's inert copy, and the per-user bounds on picker evaluations, difference pages, feeds
//! and browser tabs.

use crate::support::web::{PASSWORD, client, session_cookie, set_cookie, sign_in};
use crate::{Api, Setup};
use serde_json::json;
use wachet_server::api::{ApiSettings, LimitSettings};
use wachet_server::web::WebSettings;

/// A request to `path` naming `host` in its `Host` header.
async fn with_host(
    api: &Api,
    method: reqwest::Method,
    path: &str,
    host: &str,
) -> reqwest::Response {
    client()
        .request(method, api.url(path))
        .header("host", host)
        .send()
        .await
        .unwrap()
}

both!(a_rebound_host_is_answered_421_before_any_route);
async fn a_rebound_host_is_answered_421_before_any_route() {
    let api = Api::start_with(ApiSettings {
        limits: LimitSettings {
            login_failures_per_minute: 2,
            network_login_failures_per_minute: 3,
            ..LimitSettings::default()
        },
        ..ApiSettings::default()
    })
    .await;
    let user = api.user("owner@example.com").await;
    let port = api.url("").rsplit(':').next().unwrap().to_string();
    let get = reqwest::Method::GET;
    // A page of another site whose name was rebound to 127.0.0.1: every route refuses it, the
    // metrics and the API included, whatever the spelling of the name.
    for host in [
        format!("attacker.example:{port}"),
        "attacker.example".to_string(),
        format!("ATTACKER.example.:{port}"),
        format!("localhost.attacker.example:{port}"),
        format!("[2001:db8::1]:{port}"),
        format!("10.0.0.1:{port}"),
    ] {
        for path in [
            "/signin",
            "/metrics",
            "/",
            "/thirdparty/v1/task",
            "/assets/app.css",
        ] {
            let answer = with_host(&api, get.clone(), path, &host).await;
            assert_eq!(answer.status(), 421, "{host} {path}");
            let text = answer.text().await.unwrap();
            assert!(text.contains("does not answer to that Host"), "{text}");
        }
    }
    // Host names that are no names get 400 or 421, never a page.
    for host in ["127.0.0.1:port", "::1", "a b", "[::1", ""] {
        let status = with_host(&api, get.clone(), "/metrics", host)
            .await
            .status();
        assert!(matches!(status.as_u16(), 400 | 421), "{host:?}: {status}");
    }
    // Failed logins through the rebound name never reach the login, so they cannot block the
    // owner, who signs in from the same network afterwards.
    for _ in 0..10 {
        let answer = client()
            .post(api.url("/thirdparty/v1/user/login"))
            .header("host", "attacker.example")
            .json(&json!({"email": user.account.email, "password": "guess"}))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 421);
        let form = client()
            .post(api.url("/signin"))
            .header("host", format!("attacker.example:{port}"))
            .form(&[
                ("email", user.account.email.as_str()),
                ("password", "guess"),
            ])
            .send()
            .await
            .unwrap();
        assert_eq!(form.status(), 421);
    }
    assert_eq!(
        sign_in(&api, &user.account.email, PASSWORD).await.status(),
        303
    );
    // The service's own names, spelled as browsers and tools do.
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("LocalHost.:{port}"),
        format!("[::1]:{port}"),
        "127.0.0.2".to_string(),
    ] {
        let answer = with_host(&api, get.clone(), "/metrics", &host).await;
        assert_eq!(answer.status(), 200, "{host}");
    }
}

both!(the_public_url_and_allowed_hosts_are_answered);
async fn the_public_url_and_allowed_hosts_are_answered() {
    let api = Api::start_with(ApiSettings {
        web: WebSettings {
            public_url: Some("https://watch.example.com".into()),
            ..WebSettings::default()
        },
        allowed_hosts: vec!["intranet.corp".into()],
        ..ApiSettings::default()
    })
    .await;
    let get = reqwest::Method::GET;
    for host in [
        "watch.example.com",
        "Watch.Example.COM.:443",
        "intranet.corp:8080",
    ] {
        let answer = with_host(&api, get.clone(), "/signin", host).await;
        assert_eq!(answer.status(), 200, "{host}");
    }
    for host in [
        "example.com",
        "other.corp",
        "watch.example.com.attacker.example",
    ] {
        let answer = with_host(&api, get.clone(), "/signin", host).await;
        assert_eq!(answer.status(), 421, "{host}");
    }
}

/// Where `path` sends a browser carrying `cookie`: 200 and the page, or the redirect's target.
async fn visit(api: &Api, cookie: &str, path: &str) -> (u16, String) {
    let answer = client()
        .get(api.url(path))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    let status = answer.status().as_u16();
    match answer.headers().get("location") {
        Some(location) => (status, location.to_str().unwrap().to_string()),
        None => (status, answer.text().await.unwrap()),
    }
}

both!(two_session_cookies_sign_out_and_say_so);
async fn two_session_cookies_sign_out_and_say_so() {
    let api = Api::start().await;
    let victim = api.user("victim@example.com").await;
    let attacker = api.user("attacker@example.com").await;
    let mine = session_cookie(&api, &victim).await;
    let theirs = session_cookie(&api, &attacker).await;
    assert!(mine.starts_with("wachet_session="), "{mine}");
    let (status, page) = visit(&api, &mine, "/").await;
    assert_eq!(status, 200);
    assert!(page.contains("victim@example.com"));
    // The attacker's cookie tossed in beside the victim's, in either order, in one header or
    // two: signed out, never the first one's user, and sent to a sign-in page that says why.
    for cookie in [
        format!("{theirs}; {mine}"),
        format!("{mine}; {theirs}"),
        format!("{mine}; other=1; {mine}"),
    ] {
        let (status, location) = visit(&api, &cookie, "/monitors/new").await;
        assert_eq!(status, 303, "{cookie}");
        assert_eq!(
            location, "/signin?next=%2Fmonitors%2Fnew&cookies=2",
            "{cookie}"
        );
        let (status, page) = visit(&api, &cookie, &location).await;
        assert_eq!(status, 200);
        assert!(page.contains("sent two session cookies"), "{page}");
        assert!(!page.contains("attacker@example.com"));
    }
    let answer = client()
        .get(api.url("/"))
        .header("cookie", &theirs)
        .header("cookie", &mine)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 303);
    // Alone, each cookie is still its own user's session.
    assert_eq!(visit(&api, &mine, "/").await.0, 200);
}

both!(a_secure_session_cookie_is_host_prefixed_and_only_that_name_is_read);
async fn a_secure_session_cookie_is_host_prefixed_and_only_that_name_is_read() {
    let api = Api::start_with(ApiSettings {
        web: WebSettings {
            public_url: Some("https://watch.example.com".into()),
            ..WebSettings::default()
        },
        ..ApiSettings::default()
    })
    .await;
    let victim = api.user("victim@example.com").await;
    let attacker = api.user("attacker@example.com").await;
    let line = set_cookie(&sign_in(&api, &victim.account.email, PASSWORD).await);
    assert!(line.starts_with("__Host-wachet_session="), "{line}");
    assert!(
        line.contains("; Secure") && line.contains("; Path=/;"),
        "{line}"
    );
    assert!(!line.to_ascii_lowercase().contains("domain="), "{line}");
    let mine = line.split(';').next().unwrap().to_string();
    let theirs = session_cookie(&api, &attacker).await;
    let tossed = theirs.replacen("__Host-wachet_session=", "wachet_session=", 1);
    assert_eq!(visit(&api, &mine, "/").await.0, 200);
    // A cookie without the prefix (which any subdomain or http page could set) is not read.
    assert_eq!(visit(&api, &tossed, "/").await.0, 303);
    let (status, page) = visit(&api, &format!("{tossed}; {mine}"), "/").await;
    assert_eq!(status, 200);
    assert!(page.contains("victim@example.com") && !page.contains("attacker@example.com"));
    // Two prefixed ones: signed out.
    let (status, location) = visit(&api, &format!("{theirs}; {mine}"), "/settings").await;
    assert_eq!(
        (status, location.as_str()),
        (303, "/signin?next=%2Fsettings&cookies=2")
    );
    // Signing out clears the prefixed cookie.
    let (_, settings) = visit(&api, &mine, "/settings").await;
    let csrf = crate::support::web::csrf_of(&settings);
    let out = client()
        .post(api.url("/signout"))
        .header("cookie", &mine)
        .form(&[("csrf", csrf)])
        .send()
        .await
        .unwrap();
    let cleared = set_cookie(&out);
    assert!(cleared.starts_with("__Host-wachet_session=;") && cleared.contains("Max-Age=0"));
}

/// The mutation-XSS vectors (`tests/assets/mxss`), `{canary}` filled in.
fn vectors(canary: &str) -> Vec<String> {
    include_str!("../../assets/mxss/vectors.txt")
        .lines()
        .filter(|line| !line.trim().is_empty() && !line.starts_with('#'))
        .map(|line| line.replace("{canary}", canary))
        .collect()
}

/// The payloads of DOMPurify's test corpus (`tests/assets/dompurify`, vendored with its
/// licence), all 223 of them.
fn dompurify_vectors() -> Vec<String> {
    let corpus: Vec<serde_json::Value> =
        serde_json::from_str(include_str!("../../assets/dompurify/expect.json")).unwrap();
    corpus
        .iter()
        .map(|entry| entry["payload"].as_str().unwrap().to_string())
        .collect()
}

/// What of the page as Chromium parsed it could still act: event handler attributes, a
/// `javascript:`/`vbscript:` URL in any attribute but the words shown to people (`title`,
/// `alt`, ...), `data:` URLs but an image's, `srcdoc`, a `<meta http-equiv>`, a `<base href>`,
/// a form's `action`, a script not typed `text/plain`, SVG animation, in the document, its
/// templates and its open shadow roots. Each is named with its element.
const RESIDUE: &str = r#"(() => {
  // Through the prototypes: a page's own markup may clobber an element's properties
  // (`<input name=attributes>` in a form) or the document's.
  const E = Element.prototype;
  const get = (proto, name) => Object.getOwnPropertyDescriptor(proto, name).get;
  const localName = get(E, "localName");
  const shadowRoot = get(E, "shadowRoot");
  const content = get(HTMLTemplateElement.prototype, "content");
  const all = (root) => (root.nodeType === 9 ? Document.prototype : DocumentFragment.prototype)
    .querySelectorAll.call(root, "*");
  const found = [];
  // A URL as browsers read it: leading spaces and controls, and tabs and newlines, ignored.
  const url = (v) => v.replace(/^[\u0000-\u0020]+/, "").replace(/[\t\n\r]/g, "").toLowerCase();
  // Words shown to people, which may read like a script address and are never followed.
  const text = (n) => ["title", "alt", "label", "placeholder", "summary"].includes(n)
    || n.startsWith("aria-") || n.startsWith("data-");
  const namespace = get(Element.prototype, "namespaceURI");
  const visit = (root) => {
    for (const el of all(root)) {
      const tag = localName.call(el);
      const attr = (n) => E.getAttribute.call(el, n);
      for (const name of E.getAttributeNames.call(el)) {
        const value = attr(name);
        const n = name.toLowerCase();
        const v = url(value);
        if (n.startsWith("on")) found.push(`${tag} ${n}`);
        if (!text(n) && /^(javascript|vbscript|livescript):/.test(v)) found.push(`${tag} ${n}=${value}`);
        if (v.startsWith("data:") && n !== "style"
            && !(tag === "img" && n === "src" && v.startsWith("data:image/"))
            && !(tag === "image" && /href$/.test(n) && v.startsWith("data:image/")))
          found.push(`${tag} ${n}=${value.slice(0, 60)}`);
        if (["srcdoc", "action", "formaction"].includes(n)) found.push(`${tag} ${n}`);
      }
      if (tag === "meta" && E.hasAttribute.call(el, "http-equiv")) found.push("meta http-equiv");
      if (tag === "base" && E.hasAttribute.call(el, "href")) found.push("base href");
      if (tag === "script" && (attr("type") || "").toLowerCase() !== "text/plain")
        found.push(`script type=${attr("type")}`);
      if (namespace.call(el) === "http://www.w3.org/2000/svg"
          && ["animate", "set", "animatemotion", "animatetransform", "discard"].includes(tag.toLowerCase()))
        found.push(`svg ${tag}`);
      const shadow = shadowRoot.call(el);
      if (shadow) visit(shadow);
      if (el instanceof HTMLTemplateElement) visit(content.call(el));
    }
  };
  visit(document);
  return found;
})()"#;

/// The picker's inert copy of `url`, as its frame serves it, or `None` when the picker refused
/// to show the page because it could not be made safe (which is inert too).
async fn picked_copy(api: &Api, cookie: &str, url: &str) -> Option<String> {
    let (status, location) = visit(
        api,
        cookie,
        &format!(
            "/monitors/pick?{}",
            serde_urlencoded::to_string([("url", url)]).unwrap()
        ),
    )
    .await;
    if status == 422 && location.contains("cannot be shown safely") {
        return None;
    }
    assert_eq!(status, 303, "{url}: {location}");
    let token = location
        .split("token=")
        .nth(1)
        .unwrap()
        .split('&')
        .next()
        .unwrap()
        .to_string();
    let (status, copy) = visit(api, cookie, &format!("/monitors/pick/frame/{token}")).await;
    assert_eq!(status, 200);
    Some(copy)
}

/// How many tabs open the picker's copies at once: each copy is still given its own tab for
/// as long as before, while the others wait on their own copies' load events and timers.
const COPY_TABS: usize = 4;

// SQLite only: the store plays no part in what a browser makes of the copy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pickers_copy_runs_loads_and_navigates_nothing_in_chromium_without_sandbox_or_policy() {
    use wachet::testing::{FixtureServer, Reply};
    if !wachet::testing::chromium_or_skip() {
        return;
    }
    // Whatever a copy loads or navigates to lands here.
    let canary = FixtureServer::builder().start().await.unwrap();
    // Ours, then DOMPurify's whole corpus.
    let mut vectors = vectors(&canary.url(""));
    assert!(vectors.len() >= 60, "{}", vectors.len());
    let ours = vectors.len();
    vectors.extend(dompurify_vectors());
    assert_eq!(vectors.len() - ours, 223);
    let mut site = FixtureServer::builder();
    for (i, vector) in vectors.iter().enumerate() {
        site = site.page(format!("/v{i}"), vector.clone());
    }
    let site = site.start().await.unwrap();
    let api = Api::start().await;
    let user = api.user("picker@example.com").await;
    let cookie = session_cookie(&api, &user).await;
    // Each tab's copies are served from a server of its own, with no policy and no sandbox:
    // only the copy itself stands between the vector and the browser.
    let mut tabs: Vec<CopyTab> = Vec::new();
    for _ in 0..COPY_TABS {
        tabs.push(CopyTab {
            copies: FixtureServer::builder().start().await.unwrap(),
            shown: Vec::new(),
        });
    }
    let mut shown = 0;
    for (i, vector) in vectors.iter().enumerate() {
        match picked_copy(&api, &cookie, &site.url(&format!("/v{i}"))).await {
            Some(copy) => {
                let tab = &mut tabs[shown % COPY_TABS];
                tab.copies.set(format!("/copy{i}"), Reply::html(copy));
                tab.shown.push((i, vector.as_str()));
                shown += 1;
            }
            None => eprintln!("refused as unsafe to show: {vector}"),
        }
    }
    // Refusing is inert too, but a sanitiser that refuses most pages is no picker.
    assert!(
        shown + 2 >= vectors.len(),
        "{shown} of {} shown",
        vectors.len()
    );

    // The browser only now: the copies above were made without one.
    let Some(_guard) = wachet::testing::browser_test().await else {
        return;
    };
    let driver = crate::support::web::Driver::launch().await;
    // What the canary saw so far, shared by the tabs: a load there is named with the copy of
    // the tab that saw it first (and each tab's own listener names the copy exactly).
    let canary_seen = std::sync::Mutex::new(0);
    let failures: Vec<String> = futures::future::join_all(
        tabs.iter()
            .enumerate()
            .map(|(n, tab)| tab.opens_inert(&driver.browser, n, &canary, &canary_seen)),
    )
    .await
    .concat();
    assert!(
        failures.is_empty(),
        "{} of the copies are not inert:\n{}",
        failures.len(),
        failures.join("\n")
    );
    driver.close().await;
}

/// A tab of the picker's copy test: the server of its copies and the vectors they were made of.
struct CopyTab<'a> {
    copies: wachet::testing::FixtureServer,
    shown: Vec<(usize, &'a str)>,
}

impl CopyTab<'_> {
    /// Opens each copy in a tab of its own `browser` (the `n`th), one after the other; what
    /// any copy ran, loaded, navigated to or left able to act, naming its vector.
    async fn opens_inert(
        &self,
        browser: &chromiumoxide::Browser,
        n: usize,
        canary: &wachet::testing::FixtureServer,
        canary_seen: &std::sync::Mutex<usize>,
    ) -> Vec<String> {
        use chromiumoxide::cdp::browser_protocol::emulation::SetFocusEmulationEnabledParams;
        use chromiumoxide::cdp::browser_protocol::network::EventRequestWillBeSent;
        use chromiumoxide::cdp::browser_protocol::page::{
            EventJavascriptDialogOpening, HandleJavaScriptDialogParams,
        };
        use futures::StreamExt;
        use std::time::Duration;
        use wachet::testing::{FixtureServer, Reply};
        let copies = &self.copies;
        let page = browser.new_page("about:blank").await.unwrap();
        // Every tab acts as the focused one, as a single tab would: autofocus and focus
        // events happen in each.
        page.execute(SetFocusEmulationEnabledParams::new(true))
            .await
            .unwrap();
        let mut dialogs = page
            .event_listener::<EventJavascriptDialogOpening>()
            .await
            .unwrap();
        // Every request the page makes, to any host (a vector may name one the canary is not).
        let requested = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let mut requests = page
            .event_listener::<EventRequestWillBeSent>()
            .await
            .unwrap();
        let log = requested.clone();
        let listening = tokio::spawn(async move {
            while let Some(event) = requests.next().await {
                log.lock().unwrap().push(event.request.url.clone());
            }
        });
        // The harness sees what a page does in this tab: the same kind of markup, not made
        // inert, runs, loads and is focused, in a page that is visible.
        let control = FixtureServer::builder().start().await.unwrap();
        copies.set(
            "/control",
            Reply::html(format!(
                "<img src=x onerror=\"document.title+=' ran'\"><img src=\"{}\">\
                 <input aria-label=control autofocus onfocus=\"document.title+=' focused'\">",
                control.url("/loaded.png")
            )),
        );
        page.goto(copies.url("/control").as_str()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert_eq!(
            crate::support::web::eval::<String>(
                &page,
                "[...document.title.split(' ').filter(Boolean).sort(), document.visibilityState, \
                 document.hasFocus()].join(' ')"
            )
            .await,
            "focused ran visible true",
            "tab {n}"
        );
        assert_eq!(control.hits("/loaded.png"), 1, "tab {n}");
        assert!(
            requested
                .lock()
                .unwrap()
                .iter()
                .any(|url| url.ends_with("/loaded.png")),
            "the request listener of tab {n} sees loads"
        );
        let residue: Vec<String> = crate::support::web::eval(&page, RESIDUE).await;
        assert_eq!(
            residue,
            ["img onerror", "input onfocus"],
            "the residue check sees handlers in tab {n}"
        );
        let mut failures = Vec::new();
        let mut own_seen = 0;
        for &(i, vector) in &self.shown {
            let address = copies.url(&format!("/copy{i}"));
            requested.lock().unwrap().clear();
            page.goto(address.as_str()).await.unwrap();
            // Long enough for load events, animations' begin, focus and a refresh of 0 s.
            tokio::time::sleep(Duration::from_millis(400)).await;
            // A dialog open would hold every evaluation: each is noted and dismissed first.
            let mut ran = 0;
            while let Ok(Some(_)) =
                tokio::time::timeout(Duration::from_millis(10), dialogs.next()).await
            {
                ran += 1;
                let _ = page.execute(HandleJavaScriptDialogParams::new(false)).await;
            }
            if ran > 0 {
                failures.push(format!("a script ran: {vector}"));
            }
            let at: String = crate::support::web::eval(&page, "location.href").await;
            if at != address {
                failures.push(format!("navigated to {at}: {vector}"));
            }
            // What the canary saw since any tab last looked: this copy's, or one open in
            // another tab at the same time.
            let loaded: Vec<String> = canary.requests().into_iter().map(|r| r.path).collect();
            {
                let mut seen = canary_seen.lock().unwrap();
                if loaded.len() > *seen {
                    failures.push(format!(
                        "loaded {:?} (this or a copy in another tab): {vector}",
                        &loaded[*seen..]
                    ));
                    *seen = loaded.len();
                }
            }
            // Only what this copy made its own server see is its own.
            let own: Vec<String> = copies
                .requests()
                .into_iter()
                .map(|r| r.path)
                .filter(|path| {
                    !path.starts_with("/copy")
                        && !matches!(path.as_str(), "/favicon.ico" | "/control" | "/x")
                })
                .collect();
            if own.len() > own_seen {
                failures.push(format!("loaded {:?}: {vector}", &own[own_seen..]));
                own_seen = own.len();
            }
            let copy_hits = copies.hits(&format!("/copy{i}"));
            if copy_hits != 1 {
                failures.push(format!("reloaded {copy_hits} times: {vector}"));
            }
            // Nothing but the copy itself (and data: images) was asked for, from any host.
            let elsewhere: Vec<String> = requested
                .lock()
                .unwrap()
                .iter()
                .filter(|url| **url != address && !url.starts_with("data:image/"))
                .filter(|url| !url.ends_with("/favicon.ico"))
                .cloned()
                .collect();
            if !elsewhere.is_empty() {
                failures.push(format!("requested {elsewhere:?}: {vector}"));
            }
            // And nothing left in the parsed page could act on a click, a focus or a timer.
            let residue: Vec<String> = crate::support::web::eval(&page, RESIDUE).await;
            if !residue.is_empty() {
                failures.push(format!("left {residue:?}: {vector}"));
            }
        }
        listening.abort();
        failures
    }
}

/// The picker's value of `x_path` on the kept page `token`: the JSON answer and how long it took.
async fn pick_value(
    api: &Api,
    cookie: &str,
    token: &str,
    x_path: &str,
) -> (serde_json::Value, std::time::Duration) {
    let started = std::time::Instant::now();
    let (status, body) = visit(
        api,
        cookie,
        &format!(
            "/monitors/pick/value?{}",
            serde_urlencoded::to_string([("token", token), ("xPath", x_path)]).unwrap()
        ),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    (serde_json::from_str(&body).unwrap(), started.elapsed())
}

/// The token of a page kept by the picker for the holder of `cookie`.
async fn kept_page(api: &Api, cookie: &str, url: &str) -> String {
    let (status, location) = visit(
        api,
        cookie,
        &format!(
            "/monitors/pick?{}",
            serde_urlencoded::to_string([("url", url)]).unwrap()
        ),
    )
    .await;
    assert_eq!(status, 303, "{location}");
    location
        .split("token=")
        .nth(1)
        .unwrap()
        .split('&')
        .next()
        .unwrap()
        .to_string()
}

// SQLite only: the store plays no part in the picker's evaluations, and one run at a time keeps
// the two cores to the two users of the test.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_users_slow_picker_expressions_never_make_another_wait() {
    use wachet::testing::FixtureServer;
    // About 1 MB for the slow user, a short page for the other.
    let big = format!(
        "<html><body>{}</body></html>",
        (0..60_000)
            .map(|i| format!("<p>n{i}</p>"))
            .collect::<String>()
    );
    let small = format!(
        "<html><body>{}</body></html>",
        (0..200).map(|i| format!("<p>n{i}</p>")).collect::<String>()
    );
    let site = FixtureServer::builder()
        .page("/big", big)
        .page("/small", small)
        .start()
        .await
        .unwrap();
    let api = Api::start().await;
    let slow_user = api.user("slow@example.com").await;
    let other = api.user("other@example.com").await;
    let slow_cookie = session_cookie(&api, &slow_user).await;
    let other_cookie = session_cookie(&api, &other).await;
    let slow_token = kept_page(&api, &slow_cookie, &site.url("/big")).await;
    let other_token = kept_page(&api, &other_cookie, &site.url("/small")).await;
    let quick = "//p[@class='none'] | /html/body/p[2]";
    let (answer, alone) = pick_value(&api, &other_cookie, &other_token, quick).await;
    assert_eq!(answer["value"], "n1", "{answer}");

    // Quadratic: runs until the picker's time limit.
    let slow = "//p[count(preceding::p) > count(following::p)]";
    let slow_started = std::time::Instant::now();
    let slow_requests = (0..4)
        .map(|_| {
            let (api, cookie, token) = (&api, &slow_cookie, &slow_token);
            async move { pick_value(api, cookie, token, slow).await }
        })
        .collect::<Vec<_>>();
    let others = async {
        // Once the slow user's evaluations hold their turns.
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        let mut times = Vec::new();
        for _ in 0..3 {
            let (answer, took) = pick_value(&api, &other_cookie, &other_token, quick).await;
            assert_eq!(answer["value"], "n1", "{answer}");
            times.push(took);
        }
        (times, slow_started.elapsed())
    };
    let (slow_answers, (times, others_done)) =
        tokio::join!(futures::future::join_all(slow_requests), others);
    let slow_took = slow_started.elapsed();
    eprintln!(
        "alone {alone:?}, beside the slow user {times:?}; the slow user's four {slow_took:?}"
    );
    // The slow user's expressions ran for seconds (each until the picker's time limit), two at
    // a time, the third and fourth waiting for the user's own turns.
    assert!(
        slow_took > others_done * 2,
        "the slow user's took {slow_took:?}, the other's ended at {others_done:?}"
    );
    assert_eq!(slow_answers.len(), 4);
    // The other user's never waited for them: each had a value (no "busy" after the picker's
    // 10 s wait), near its alone time (the two cores are shared with the slow evaluations).
    for took in times {
        assert!(
            took < alone * 10 + std::time::Duration::from_secs(1),
            "{took:?} against {alone:?} alone"
        );
    }
}

/// A value of about `bytes` in numbered lines, every other line's word `word`.
fn lines_value(bytes: usize, word: &str) -> String {
    let mut value = String::with_capacity(bytes + 64);
    let mut n = 0;
    while value.len() < bytes {
        n += 1;
        let shown = if n % 2 == 0 { word } else { "same" };
        value.push_str(&format!("Line {n} of the page says {shown} <b>&</b>\n"));
    }
    value
}

/// A monitor of `user` whose history holds `old`, then `new`; its id.
async fn monitor_with_values(api: &Api, user: &crate::User, old: String, new: String) -> String {
    let monitor = crate::id(
        &api.task(
            user,
            json!({"name": "Large", "url": "https://example.com/", "recurrenceInSeconds": 3600}),
        )
        .await,
    );
    let base = chrono::Utc::now() - chrono::Duration::hours(1);
    for (n, value) in [old, new].into_iter().enumerate() {
        api.store
            .append_entry(
                &wachet_server::store::Series::Task(monitor.clone()),
                &wachet::model::ClientData::value(
                    base + chrono::Duration::minutes(n as i64),
                    value,
                ),
            )
            .await
            .unwrap();
    }
    monitor
}

/// How long one save of a monitor by `user` takes (the API's update, as the form's save does).
async fn timed_save(api: &Api, user: &crate::User, monitor: &str, n: usize) -> std::time::Duration {
    let started = std::time::Instant::now();
    let reply = api
        .put(
            user,
            "/thirdparty/v1/task",
            json!({"id": monitor, "name": format!("Saved {n}"), "url": "https://example.com/",
                   "recurrenceInSeconds": 3600, "xPath": "//p[1]"}),
        )
        .await;
    assert_eq!(reply.ok()["name"], format!("Saved {n}"));
    started.elapsed()
}

both!(
    difference_pages_of_large_values_are_bounded_and_never_slow_another_users_save,
    multi_thread
);
async fn difference_pages_of_large_values_are_bounded_and_never_slow_another_users_save() {
    // What a difference page may weigh: its markup bound for each column, and the page around.
    const MAX_PAGE: usize = 600 * 1024;
    let api = Api::start().await;
    let heavy = api.user("heavy@example.com").await;
    let other = api.user("other@example.com").await;
    let monitor = monitor_with_values(
        &api,
        &heavy,
        lines_value(2 * 1024 * 1024, "before"),
        lines_value(2 * 1024 * 1024, "after"),
    )
    .await;
    let cookie = session_cookie(&api, &heavy).await;
    let other_monitor = crate::id(
        &api.task(
            &other,
            json!({"name": "Mine", "url": "https://example.com/", "recurrenceInSeconds": 3600}),
        )
        .await,
    );
    let mut alone = Vec::new();
    for n in 0..3 {
        alone.push(timed_save(&api, &other, &other_monitor, n).await);
    }
    let alone = alone.into_iter().max().unwrap();

    // Twelve at once, in both layouts.
    let started = std::time::Instant::now();
    let pages = (0..12).map(|n| {
        let path = format!(
            "/monitors/{monitor}/diff?view={}",
            if n % 2 == 0 { "inline" } else { "split" }
        );
        let (api, cookie) = (&api, &cookie);
        async move { visit(api, cookie, &path).await }
    });
    let saves = async {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        let mut times = Vec::new();
        for n in 0..5 {
            times.push(timed_save(&api, &other, &other_monitor, 10 + n).await);
        }
        times
    };
    let (pages, beside) = tokio::join!(futures::future::join_all(pages), saves);
    eprintln!(
        "12 difference pages in {:?}; the other user's save {alone:?} alone, {beside:?} beside them",
        started.elapsed()
    );
    for (n, (status, page)) in pages.iter().enumerate() {
        assert_eq!(*status, 200, "{page:.2000}");
        assert!(page.len() < MAX_PAGE, "page {n} weighs {}", page.len());
        assert!(page.contains("<del>before</del>") && page.contains("<ins>after</ins>"));
        // It says what it left out and where the whole values are.
        assert!(
            page.contains("The rest of the difference is not shown"),
            "{n}"
        );
        assert!(page.contains(&format!("GET /thirdparty/v1/data/list/{monitor}")));
    }
    // The same pair in the same layout is the same page (computed once, then kept).
    assert!(pages.iter().step_by(2).all(|p| p.1 == pages[0].1));
    for took in beside {
        assert!(
            took < alone * 10 + std::time::Duration::from_millis(500),
            "a save took {took:?} beside the difference pages, {alone:?} alone"
        );
    }
}

/// CPU time this process has used so far (the service runs in it).
/// The real `wachet serve` (API role only: nothing is checked) over a test's database.
struct Served {
    child: tokio::process::Child,
    base: String,
}

impl Served {
    async fn start(database: &crate::Database) -> Served {
        let db = match database {
            crate::Database::Sqlite(dir) => dir.path().join("wachet.db").display().to_string(),
            crate::Database::Postgres(url) => url.clone(),
        };
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_wachet"))
            .args([
                "serve",
                "--roles",
                "api",
                "--listen",
                "127.0.0.1:0",
                "--db",
                &db,
            ])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        use tokio::io::AsyncBufReadExt;
        let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let base = tokio::time::timeout(std::time::Duration::from_secs(60), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if let Some(address) = line.strip_prefix("listening on ") {
                    return address.to_string();
                }
            }
            panic!("wachet serve ended before listening");
        })
        .await
        .expect("wachet serve listens");
        Served { child, base }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The process's CPU time (user and system) so far.
    fn cpu_used(&self) -> std::time::Duration {
        let pid = self.child.id().expect("wachet serve runs");
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        // Past the command name in parentheses: state is field 3, utime 14 and stime 15.
        let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
        let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
        std::time::Duration::from_millis(ticks * 10)
    }

    async fn session_cookie(&self, email: &str) -> String {
        let response = client()
            .post(self.url("/signin"))
            .form(&[("email", email), ("password", PASSWORD)])
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 303);
        set_cookie(&response).split(';').next().unwrap().to_string()
    }

    async fn visit(&self, cookie: &str, path: &str) -> (u16, String) {
        let answer = client()
            .get(self.url(path))
            .header("cookie", cookie)
            .send()
            .await
            .unwrap();
        (answer.status().as_u16(), answer.text().await.unwrap())
    }
}

/// A client sending from `ip` (one of the loopback addresses).
fn client_from(ip: [u8; 4]) -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .local_address(std::net::IpAddr::from(ip))
        .build()
        .unwrap()
}

both!(
    a_feed_costs_its_changes_once_and_guessers_are_slowed,
    multi_thread
);
async fn a_feed_costs_its_changes_once_and_guessers_are_slowed() {
    let api = Api::start().await;
    let owner = api.user("owner@example.com").await;
    api.user("other@example.com").await;
    let monitor = crate::id(
        &api.task(
            &owner,
            json!({"name": "Large", "url": "https://example.com/", "recurrenceInSeconds": 3600}),
        )
        .await,
    );
    // 51 values of about 200 KB, each differing from the one before on every other line: 50
    // changes whose differences are real work.
    let base = chrono::Utc::now() - chrono::Duration::hours(2);
    for n in 0..51 {
        api.store
            .append_entry(
                &wachet_server::store::Series::Task(monitor.clone()),
                &wachet::model::ClientData::value(
                    base + chrono::Duration::minutes(n),
                    lines_value(200 * 1024, &format!("version{n}")),
                ),
            )
            .await
            .unwrap();
    }
    let feed = api
        .post(&owner, "/thirdparty/v1/user/feeds", json!({"scope": "all"}))
        .await;
    let key = feed.ok()["url"]
        .as_str()
        .and_then(|url| url.split("key=").nth(1))
        .unwrap()
        .to_string();
    let path = format!("/feeds/all.atom?key={key}");
    // The feeds are then read from the real binary over the same database: its CPU time is
    // the service's alone, where this process's would count the tests running beside it.
    let database = api.shutdown().await;
    let served = Served::start(&database).await;
    let other_cookie = served.session_cookie("other@example.com").await;
    let (_, alone) = {
        let started = std::time::Instant::now();
        (served.visit(&other_cookie, "/").await, started.elapsed())
    };

    // The first fetch computes the 50 differences.
    let before = served.cpu_used();
    let first = client_from([127, 0, 0, 11])
        .get(served.url(&path))
        .send()
        .await
        .unwrap();
    assert_eq!(first.status(), 200);
    let first = first.text().await.unwrap();
    assert_eq!(first.matches("<entry>").count(), 50);
    let one = served.cpu_used() - before;

    // Twenty at once, each from its own address (as readers are): the changes are not
    // computed again.
    let before = served.cpu_used();
    let started = std::time::Instant::now();
    let fetches = (0..20u8).map(|n| {
        let url = served.url(&path);
        async move {
            let answer = client_from([127, 0, 1, n + 1])
                .get(url)
                .send()
                .await
                .unwrap();
            (answer.status().as_u16(), answer.text().await.unwrap())
        }
    });
    let page = async {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let started = std::time::Instant::now();
        let (status, _) = served.visit(&other_cookie, "/").await;
        (status, started.elapsed())
    };
    let (answers, (page_status, beside)) = tokio::join!(futures::future::join_all(fetches), page);
    let twenty = served.cpu_used() - before;
    eprintln!(
        "one feed fetch {one:?} of CPU; twenty more {twenty:?} in {:?}; another user's page {alone:?} alone, {beside:?} beside them",
        started.elapsed()
    );
    for (status, body) in &answers {
        assert_eq!(*status, 200);
        assert_eq!(body, &first);
    }
    // Cached: twenty fetches cost less than the one that computed the changes.
    assert!(
        twenty < one,
        "twenty fetches took {twenty:?} of CPU, the first {one:?}"
    );
    assert_eq!(page_status, 200);
    assert!(
        beside < alone * 10 + std::time::Duration::from_millis(500),
        "{beside:?} against {alone:?} alone"
    );

    // Keys guessed quickly from one address: slowed after a burst, with the wait said; the
    // owner's reader on another address is not.
    let guesser = client_from([127, 0, 2, 1]);
    let mut limited = None;
    for n in 0..200 {
        let answer = guesser
            .get(served.url(&format!("/feeds/all.atom?key=guess{n}")))
            .send()
            .await
            .unwrap();
        match answer.status().as_u16() {
            404 => continue,
            429 => {
                limited = Some((
                    n,
                    answer.headers()["retry-after"]
                        .to_str()
                        .unwrap()
                        .to_string(),
                ));
                break;
            }
            other => panic!("guess {n}: {other}"),
        }
    }
    let (n, wait) = limited.expect("guesses are limited");
    assert!(n < 100 && wait.parse::<u64>().unwrap() >= 1, "{n} {wait}");
    let reader = client_from([127, 0, 2, 2])
        .get(served.url(&path))
        .send()
        .await
        .unwrap();
    assert_eq!(reader.status(), 200);
}

/// How long a new rendered monitor of `user` at `url` takes to its first stored check.
async fn first_check_time(api: &Api, user: &crate::User, url: &str) -> std::time::Duration {
    let started = std::time::Instant::now();
    let task = crate::id(
        &api.task(
            user,
            json!({"name": "Rendered", "url": url, "dynamicContent": true, "recurrenceInSeconds": 3600}),
        )
        .await,
    );
    let path = format!("/thirdparty/v1/data/list/{task}");
    for _ in 0..900 {
        let reply = api.get(user, &path).await;
        if reply.ok()["data"].as_array().is_some_and(|d| !d.is_empty()) {
            return started.elapsed();
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("{url}: no check in 90 s");
}

/// The render timeout of [`one_users_hanging_pages_delay_only_their_own_work`]: each of the
/// hanging user's renders holds its tab this long.
const RENDER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(6);

/// One of the hanging user's browser uses from the interface, started again as soon as it
/// ends until `stop` (the one under way then is answered): a preview of `form` (a Portal's, whose page streams as its crawl goes, is
/// read until then) or, without one, a pick of the monitor `pick`. The statuses it got.
async fn keep_rendering(
    api: &Api,
    cookie: &str,
    form: Option<Vec<(&str, String)>>,
    pick: &str,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> Vec<u16> {
    let mut statuses = Vec::new();
    while !*stop.borrow() {
        let request = match &form {
            Some(form) => client()
                .post(api.url("/monitors/preview"))
                .header("cookie", cookie)
                .form(form),
            None => client()
                .get(api.url(&format!("/monitors/{pick}/pick")))
                .header("cookie", cookie),
        };
        // Each use started is answered; only a preview's crawl still streaming is left.
        let mut response = request.send().await.unwrap();
        statuses.push(response.status().as_u16());
        if response.status() == 429 {
            // As a person would: not at once.
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
        tokio::select! {
            _ = async { while let Ok(Some(_)) = response.chunk().await {} } => {}
            _ = stop.wait_for(|stop| *stop) => break,
        }
    }
    statuses
}

// SQLite only: the store plays no part in who gets a browser tab.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_users_hanging_pages_delay_only_their_own_work() {
    use wachet::testing::{FixtureServer, Reply};
    let Some(_guard) = wachet::testing::browser_test().await else {
        return;
    };
    // The hanging user's host: a start page linking pages that never finish loading, so each
    // render of one holds its tab until the render timeout, and a crawl renders several.
    // The checks' crawl starts at /crawl, the previews' at /.
    let hang = Reply::html("<html><body><p>loading").never_finish();
    let links = |to: &str| -> String {
        let links: String = (0..6).map(|n| format!("<a href={to}{n}>{n}</a>")).collect();
        format!("<html><body>{links}")
    };
    let mut hanging_site = FixtureServer::builder()
        .page("/", links("/hang"))
        .page("/crawl", links("/crawled"))
        .reply("/hang", hang.clone());
    for n in 0..6 {
        hanging_site = hanging_site
            .reply(format!("/hang{n}"), hang.clone())
            .reply(format!("/crawled{n}"), hang.clone());
    }
    let hanging_site = hanging_site.start().await.unwrap();
    let site = FixtureServer::builder()
        .page("/fine", "<html><body><p id=v>Price 3</p></body></html>")
        .start()
        .await
        .unwrap();
    // One browser slot, the renderer's tabs sized as `wachet serve` sizes them, a short render
    // timeout, and no quick samples (a first check is then one render).
    let mut setup = Setup::checking();
    setup.service.schedule.browser_checks_in_flight = 1;
    setup.service.schedule.noise_samples = 0;
    setup.engine = setup.engine.total_timeout(RENDER_TIMEOUT).render_settings(
        wachet::render::RenderSettings {
            tabs: wachet_server::tabs::renderer_tabs(1),
            ..Default::default()
        },
    );
    let api = Api::start_as(setup).await;
    let hanging = api.user("hanging@example.com").await;
    let other = api.user("other@example.com").await;
    // The browser started, then the other user's rendered check alone.
    first_check_time(&api, &other, &site.url("/fine?warm")).await;
    let alone = first_check_time(&api, &other, &site.url("/fine?alone")).await;

    // The hanging user's rendered monitors, checked every second: one of the hanging host's
    // pages, and a crawl of it (which the user's one check slot takes next); then previews and picks of its pages, each started again as soon
    // as it ends (or is refused).
    let checked = crate::id(
        &api.task(
            &hanging,
            json!({"name": "Hangs", "url": hanging_site.url("/hang"), "dynamicContent": true,
                   "recurrenceInSeconds": 1}),
        )
        .await,
    );
    api.task(
        &hanging,
        json!({"name": "Crawl", "url": hanging_site.url("/crawl"), "jobType": "Portal",
               "crawlingDepth": 1, "dynamicContent": true, "recurrenceInSeconds": 1}),
    )
    .await;
    let crawled = || {
        let requests = hanging_site.requests();
        requests.iter().any(|r| r.path.starts_with("/crawled"))
    };
    let mut waited = 0;
    while !crawled() {
        waited += 1;
        assert!(waited < 400, "the crawl never reached its pages");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let cookie = session_cookie(&api, &hanging).await;
    let (_, form) = visit(&api, &cookie, "/monitors/new").await;
    let csrf = crate::support::web::csrf_of(&form);
    let preview = |url: String, portal: bool| {
        let mut form = vec![
            ("csrf", csrf.clone()),
            ("url", url),
            ("recurrence", "3600".to_string()),
            ("dynamicContent", "on".to_string()),
        ];
        if portal {
            form.extend([("jobType", "Portal".into()), ("crawlingDepth", "1".into())]);
        }
        Some(form)
    };
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let renders = futures::future::join3(
        keep_rendering(
            &api,
            &cookie,
            preview(hanging_site.url("/"), true),
            "",
            stopped.clone(),
        ),
        keep_rendering(
            &api,
            &cookie,
            preview(hanging_site.url("/hang1"), false),
            "",
            stopped.clone(),
        ),
        keep_rendering(&api, &cookie, None, &checked, stopped),
    );
    let beside = async {
        // Once the hanging user's renders hold every tab they may.
        let tabs = api.browser_tabs();
        let mut waited = 0;
        while tabs.held(&hanging.account.id) < 2 || tabs.waits(&hanging.account.id).for_own == 0 {
            waited += 1;
            assert!(
                waited < 400,
                "the hanging user's renders never held their tabs"
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        let beside = first_check_time(&api, &other, &site.url("/fine?beside")).await;
        let _ = stop.send(true);
        beside
    };
    let ((crawls, previews, picks), beside) = tokio::join!(renders, beside);
    let figures = format!(
        "the other user's rendered check took {alone:?} alone and {beside:?} beside the hanging \
         user's checks, previews (HTTP {crawls:?} {previews:?}) and picks (HTTP {picks:?}), whose \
         pages hold their tabs {RENDER_TIMEOUT:?}"
    );
    eprintln!("{figures}");
    // Beside them, the other user's check waited for none of their pages: at most a fraction
    // of one render timeout more than alone.
    assert!(beside < alone + RENDER_TIMEOUT / 3, "{figures}");
    let tabs = api.browser_tabs();
    assert_eq!(tabs.waits(&other.account.id).for_others, 0, "{figures}");
    // The hanging user's own work waited for their own tabs, and ended cleanly: a preview
    // answered (or was refused for want of a tab), a pick failed on the page's timeout (or was
    // refused), and their monitor's checks were stored as timed out.
    assert!(tabs.waits(&hanging.account.id).for_own > 0, "{figures}");
    assert!(
        crawls
            .iter()
            .chain(&previews)
            .all(|s| [200, 429].contains(s)),
        "{figures}"
    );
    assert!(picks.iter().all(|s| [429, 502].contains(s)), "{figures}");
    let path = format!("/thirdparty/v1/data/list/{checked}");
    let mut waited = 0;
    let error = loop {
        let data = api.get(&hanging, &path).await.ok()["data"].clone();
        if let Some(error) = data[0]["error"].as_str() {
            break error.to_string();
        }
        waited += 1;
        assert!(
            waited < 200,
            "the hanging monitor was never checked: {data}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert!(error.contains("timed out"), "{error}");
}

/// How long the hanging user's pages take to answer: each tab rendering one is held that long.
const SLOW_PAGE: std::time::Duration = std::time::Duration::from_secs(25);

// SQLite only: the store plays no part in who gets a browser tab.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_users_hanging_checks_previews_and_picks_never_hold_anothers_tab() {
    use wachet::testing::{FixtureServer, Reply};
    let Some(_guard) = wachet::testing::browser_test().await else {
        return;
    };
    // The hanging user's site: a start page listing pages that answer only after seconds, so
    // a rendered crawl of it renders several of them at once, each holding a tab meanwhile.
    let slow = Reply::html("<html><body><p>late</p></body></html>").delay(SLOW_PAGE);
    let links: String = (0..6)
        .map(|n| format!("<a href=/slow{n}>{n}</a>"))
        .collect();
    let mut hanging_site = FixtureServer::builder().page("/", format!("<html><body>{links}"));
    for n in 0..6 {
        hanging_site = hanging_site.reply(format!("/slow{n}"), slow.clone());
    }
    let hanging_site = hanging_site.start().await.unwrap();
    let site = FixtureServer::builder()
        .page("/fine", "<html><body><p id=v>Price 3</p></body></html>")
        .start()
        .await
        .unwrap();
    // One browser slot, and the renderer's tabs sized as `wachet serve` sizes them.
    let mut setup = Setup::checking();
    setup.service.schedule.browser_checks_in_flight = 1;
    setup.engine = setup
        .engine
        .render_settings(wachet::render::RenderSettings {
            tabs: wachet_server::tabs::renderer_tabs(1),
            ..Default::default()
        });
    let api = Api::start_as(setup).await;
    let hanging = api.user("hanging@example.com").await;
    let other = api.user("other@example.com").await;
    let alone = first_check_time(&api, &other, &site.url("/fine?alone")).await;

    // The hanging user's rendered crawl, checked at once, then a rendered preview of it and a
    // pick of a rendered monitor of one of its slow pages.
    api.task(
        &hanging,
        json!({"name": "Crawl", "url": hanging_site.url("/"), "jobType": "Portal",
               "crawlingDepth": 1, "dynamicContent": true, "recurrenceInSeconds": 3600}),
    )
    .await;
    let slow_requests = || {
        hanging_site
            .requests()
            .iter()
            .filter(|r| r.path.starts_with("/slow"))
            .count()
    };
    let mut waited = 0;
    while slow_requests() < 2 {
        waited += 1;
        assert!(waited < 600, "the crawl never reached its slow pages");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    // The hanging user's tabs are held until their pages answer, no sooner than this.
    let released = std::time::Instant::now() + SLOW_PAGE - std::time::Duration::from_millis(500);
    let cookie = session_cookie(&api, &hanging).await;
    let paused = crate::id(
        &api.task(
            &hanging,
            json!({"name": "Slow", "url": hanging_site.url("/slow5"), "dynamicContent": true,
                   "recurrenceInSeconds": 0}),
        )
        .await,
    );
    let (_, form) = visit(&api, &cookie, "/monitors/new").await;
    let csrf = crate::support::web::csrf_of(&form);
    let preview = client()
        .post(api.url("/monitors/preview"))
        .header("cookie", &cookie)
        .form(&[
            ("csrf", csrf.as_str()),
            ("url", hanging_site.url("/").as_str()),
            ("jobType", "Portal"),
            ("crawlingDepth", "1"),
            ("recurrence", "3600"),
            ("dynamicContent", "on"),
        ])
        .send();
    let pick_path = format!("/monitors/{paused}/pick");
    let pick = visit(&api, &cookie, &pick_path);
    let beside = async {
        // Once the preview and the pick are under way.
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        let beside = first_check_time(&api, &other, &site.url("/fine?beside")).await;
        (beside, std::time::Instant::now())
    };
    let (preview, pick, (beside, ended)) = tokio::join!(preview, pick, beside);
    let figures = format!(
        "the other user's rendered check took {alone:?} alone and {beside:?} beside the hanging \
         user's crawl, preview (HTTP {}) and pick (HTTP {}), whose pages hold their tabs for \
         {SLOW_PAGE:?}",
        preview.map_or(0, |p| p.status().as_u16()),
        pick.0,
    );
    eprintln!("{figures}");
    // Its check never waited for the hanging user's pages to answer, nor for any of their tabs,
    // while the hanging user's own renders waited for theirs.
    assert!(ended < released, "{figures}");
    let tabs = api.browser_tabs();
    assert_eq!(tabs.waits(&other.account.id).for_others, 0, "{figures}");
    assert!(tabs.waits(&hanging.account.id).for_own > 0, "{figures}");
}
