//! A fixture site behind a sign-in, for tests of browser steps and kept sessions: its page
//! `/` shows orders only to a signed-in browser, `/login` signs in with a form POST (user
//! `tea`, password [`SignInSite::PASSWORD`]) and sets a cookie whose session lasts a given
//! number of loads of `/`; a cookie banner covers the page on some loads, and a region list
//! changes the price shown; `/orders/17`, linked from `/`, shows its detail to a signed-in
//! browser only. It counts sign-ins and loads of `/`.
//!
//! ```no_run
//! # async fn f() -> std::io::Result<()> {
//! let site = wachet::testing::SignInSite::start(5).await?;
//! println!("{} ({} sign-ins so far)", site.url("/"), site.sign_ins());
//! # Ok(()) }
//! ```

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::response::Response;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::task::JoinHandle;

/// Session ids, unique in the process.
static NEXT_SESSION: AtomicUsize = AtomicUsize::new(1);

#[derive(Default)]
struct Site {
    /// Loads of `/` a session lasts.
    uses: usize,
    /// Sessions by cookie value: loads of `/` left.
    sessions: Mutex<HashMap<String, usize>>,
    sign_ins: AtomicUsize,
    loads: AtomicUsize,
    /// Every sign-in answers a captcha page instead.
    captcha: AtomicBool,
    /// The banner shows on loads whose number is not a multiple of this (0: never).
    banner_every: AtomicUsize,
}

/// The fixture site; stops when dropped.
pub struct SignInSite {
    addr: SocketAddr,
    site: Arc<Site>,
    task: JoinHandle<()>,
}

impl Drop for SignInSite {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl SignInSite {
    /// The password of user `tea`.
    pub const PASSWORD: &'static str = "correct horse";

    /// Serves the site on 127.0.0.1, each session lasting `uses` loads of `/`. No banner.
    pub async fn start(uses: usize) -> std::io::Result<SignInSite> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let site = Arc::new(Site {
            uses,
            ..Site::default()
        });
        let app = Router::new().fallback(handle).with_state(site.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(SignInSite { addr, site, task })
    }

    /// The URL of `path` on the site.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Sign-ins accepted or refused so far (form POSTs).
    pub fn sign_ins(&self) -> usize {
        self.site.sign_ins.load(Ordering::Acquire)
    }

    /// Loads of `/` so far.
    pub fn loads(&self) -> usize {
        self.site.loads.load(Ordering::Acquire)
    }

    /// Answers every sign-in with a captcha page from now on.
    pub fn ask_captcha(&self, captcha: bool) {
        self.site.captcha.store(captcha, Ordering::Release);
    }

    /// Shows the cookie banner on each load of `/` but every `n`-th (0: never).
    pub fn banner_but_every(&self, n: usize) {
        self.site.banner_every.store(n, Ordering::Release);
    }
}

fn page(title: &str, body: &str) -> Response {
    let html = format!(
        "<!doctype html><html><head><title>{title}</title></head><body>{body}</body></html>"
    );
    Response::builder()
        .header(header::CONTENT_TYPE, "text/html; charset=utf-8")
        .body(Body::from(html))
        .unwrap_or_default()
}

const SIGNED_OUT: &str =
    r#"<h1>Orders</h1><p>Please <a id="signin" href="/login">sign in</a>.</p>"#;

const SIGN_IN_FORM: &str = r#"<h1>Sign in</h1>
<form method="post" action="/login">
  <input id="user" name="user"> <input id="password" name="password" type="password">
  <label><input id="remember" name="remember" type="checkbox"> Remember me</label>
  <button id="login" type="submit">Sign in</button>
</form>"#;

const BANNER: &str = r#"<div id="cookies" style="position:fixed;inset:0;background:#fff">
  We use cookies. <button id="accept" onclick="document.getElementById('cookies').remove()">Accept</button>
</div>"#;

const ORDERS: &str = r#"<h1>Orders</h1><p id="account">Signed in as tea</p>
<p id="orders">Order 17: shipped</p><p><a href="/orders/17">Order 17</a></p>
<select id="region" onchange="document.getElementById('price').textContent = this.value === 'eu' ? '12 EUR' : '13 USD'">
  <option value="">Choose</option><option value="us">United States</option><option value="eu">Europe</option>
</select>
<p id="price">Choose a region</p>"#;

async fn handle(State(site): State<Arc<Site>>, request: Request) -> Response {
    let cookie = request
        .headers()
        .get(header::COOKIE)
        .and_then(|v| v.to_str().ok())
        .and_then(|c| c.split(';').find_map(|p| p.trim().strip_prefix("sid=")))
        .map(str::to_string);
    match (request.method().clone(), request.uri().path()) {
        (Method::GET, "/") => {
            let n = site.loads.fetch_add(1, Ordering::AcqRel) + 1;
            let signed_in = cookie.is_some_and(|sid| {
                let mut sessions = site.sessions.lock().unwrap_or_else(|p| p.into_inner());
                match sessions.get_mut(&sid) {
                    Some(left) if *left > 0 => {
                        *left -= 1;
                        true
                    }
                    _ => false,
                }
            });
            let every = site.banner_every.load(Ordering::Acquire);
            let banner = if every > 0 && !n.is_multiple_of(every) {
                BANNER
            } else {
                ""
            };
            match signed_in {
                true => page("Orders", &format!("{banner}{ORDERS}")),
                false => page("Orders", SIGNED_OUT),
            }
        }
        (Method::GET, "/orders/17") => {
            let signed_in = cookie.is_some_and(|sid| {
                let sessions = site.sessions.lock().unwrap_or_else(|p| p.into_inner());
                sessions.get(&sid).is_some_and(|left| *left > 0)
            });
            match signed_in {
                true => page("Order 17", "<p id=\"detail\">17: tea, shipped</p>"),
                false => page("Orders", SIGNED_OUT),
            }
        }
        (Method::GET, "/login") => page("Sign in", SIGN_IN_FORM),
        (Method::POST, "/login") => {
            site.sign_ins.fetch_add(1, Ordering::AcqRel);
            let body = to_bytes(request.into_body(), 64 * 1024)
                .await
                .unwrap_or_default();
            if site.captcha.load(Ordering::Acquire) {
                return page(
                    "Just a moment...",
                    "<h1>Verify you are human</h1><div class=\"g-recaptcha\"></div>",
                );
            }
            let form: HashMap<String, String> =
                url::form_urlencoded::parse(&body).into_owned().collect();
            let good = form.get("user").map(String::as_str) == Some("tea")
                && form.get("password").map(String::as_str) == Some(SignInSite::PASSWORD);
            if !good {
                return page(
                    "Sign in",
                    &format!("<p id=\"wrong\">Wrong password.</p>{SIGN_IN_FORM}"),
                );
            }
            let sid = format!("s{}", NEXT_SESSION.fetch_add(1, Ordering::AcqRel));
            site.sessions
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(sid.clone(), site.uses);
            Response::builder()
                .status(StatusCode::SEE_OTHER)
                .header(header::LOCATION, "/account")
                .header(header::SET_COOKIE, format!("sid={sid}; Path=/; HttpOnly"))
                .body(Body::empty())
                .unwrap_or_default()
        }
        (Method::GET, "/account") => page("Account", "<p>Welcome back.</p>"),
        _ => Response::builder()
            .status(StatusCode::NOT_FOUND)
            .body(Body::empty())
            .unwrap_or_default(),
    }
}
