//! The interface's static files, embedded in the binary at compile time and served under a
//! name carrying the first 16 hex digits of their SHA-256, so browsers may keep them for a year
//! (`immutable`): a new build with a changed file gets a new name. Nothing comes from a CDN.

use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::sync::LazyLock;

/// One embedded file.
pub struct Asset {
    /// Its name with the hash, as pages link it (`app.0123456789abcdef.css`).
    pub name: String,
    content_type: &'static str,
    body: &'static [u8],
}

impl Asset {
    fn new(stem: &str, extension: &str, content_type: &'static str, body: &'static [u8]) -> Asset {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(body);
        let hash: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        Asset {
            name: format!("{stem}.{hash}.{extension}"),
            content_type,
            body,
        }
    }

    /// The path pages link.
    pub fn path(&self) -> String {
        format!("/assets/{}", self.name)
    }
}

/// The style sheet: one file per area of the interface, served as one.
pub static STYLE: LazyLock<Asset> = LazyLock::new(|| {
    Asset::new(
        "app",
        "css",
        "text/css; charset=utf-8",
        concat!(
            include_str!("assets/css/base.css"),
            include_str!("assets/css/folders.css"),
            include_str!("assets/css/form.css"),
            include_str!("assets/css/picker.css"),
            include_str!("assets/css/record.css"),
            include_str!("assets/css/account.css"),
        )
        .as_bytes(),
    )
});

/// The monitor form's enhancements.
pub static FORM_JS: LazyLock<Asset> =
    LazyLock::new(|| script("form", include_bytes!("assets/form.js")));

/// The proposer of an XPath for an element, shared by the picker and the step recorder.
pub const PROPOSE_JS: &str = include_str!("assets/propose.js");

/// Point-and-click selection (with the proposer).
pub static PICKER_JS: LazyLock<Asset> = LazyLock::new(|| {
    script(
        "picker",
        concat!(
            include_str!("assets/propose.js"),
            include_str!("assets/picker.js")
        )
        .as_bytes(),
    )
});

/// The step recorder's clicks on its screenshot, at the picture's own scale.
pub static RECORD_JS: LazyLock<Asset> =
    LazyLock::new(|| script("record", include_bytes!("assets/record.js")));

/// Live updates.
pub static LIVE_JS: LazyLock<Asset> =
    LazyLock::new(|| script("live", include_bytes!("assets/live.js")));

/// The difference page's keys.
pub static DIFF_JS: LazyLock<Asset> =
    LazyLock::new(|| script("diff", include_bytes!("assets/diff.js")));

fn script(stem: &str, body: &'static [u8]) -> Asset {
    Asset::new(stem, "js", "text/javascript; charset=utf-8", body)
}

/// The icon.
pub static ICON: LazyLock<Asset> = LazyLock::new(|| {
    Asset::new(
        "icon",
        "svg",
        "image/svg+xml",
        include_bytes!("assets/icon.svg"),
    )
});

fn all() -> [&'static Asset; 7] {
    [
        &STYLE, &ICON, &FORM_JS, &PICKER_JS, &LIVE_JS, &DIFF_JS, &RECORD_JS,
    ]
}

fn reply(asset: &Asset) -> Response {
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static(asset.content_type),
            ),
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, max-age=31536000, immutable"),
            ),
        ],
        asset.body,
    )
        .into_response()
}

/// `GET /assets/{name}`: the asset of that exact hashed name; any other name is a 404, so a
/// stale name never gets today's file under a year-long cache.
pub async fn serve(Path(name): Path<String>) -> Response {
    match all().into_iter().find(|asset| asset.name == name) {
        Some(asset) => reply(asset),
        None => (StatusCode::NOT_FOUND, "no such asset").into_response(),
    }
}

/// `GET /favicon.ico`: browsers ask for it whatever the page links; the same icon.
pub async fn favicon() -> Response {
    let mut response = reply(&ICON);
    // Its name carries no hash, so it must not be kept for a year.
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=86400"),
    );
    response
}
