//! The frame of every page: document head (the hashed style sheet and icon), the top bar with
//! the signed-in user and sign-out, and the main landmark. Everything goes through maud's
//! escaping; nothing here marks user data as pre-escaped.

use crate::web::assets::{Asset, ICON, STYLE};
use crate::web::shared::session::Session;
use maud::{DOCTYPE, Markup, html};

/// Outlines (24×24, drawn with the text's colour) of the top bar's links, which show only
/// them on narrow screens so the bar stays one row; their words stay for screen readers.
const BELL: &str = "M6 8a6 6 0 0 1 12 0c0 7 3 9 3 9H3s3-2 3-9M10.3 21a1.94 1.94 0 0 0 3.4 0";
const GEAR: &str = "M12 15a3 3 0 1 0 0-6 3 3 0 0 0 0 6zM19.4 15a1.65 1.65 0 0 0 .33 1.82l.06.06a2 2 0 1 1-2.83 2.83l-.06-.06a1.65 1.65 0 0 0-1.82-.33 1.65 1.65 0 0 0-1 1.51V21a2 2 0 1 1-4 0v-.09A1.65 1.65 0 0 0 9 19.4a1.65 1.65 0 0 0-1.82.33l-.06.06a2 2 0 1 1-2.83-2.83l.06-.06A1.65 1.65 0 0 0 4.68 15a1.65 1.65 0 0 0-1.51-1H3a2 2 0 1 1 0-4h.09A1.65 1.65 0 0 0 4.6 9a1.65 1.65 0 0 0-.33-1.82l-.06-.06a2 2 0 1 1 2.83-2.83l.06.06A1.65 1.65 0 0 0 9 4.68a1.65 1.65 0 0 0 1-1.51V3a2 2 0 1 1 4 0v.09a1.65 1.65 0 0 0 1 1.51 1.65 1.65 0 0 0 1.82-.33l.06-.06a2 2 0 1 1 2.83 2.83l-.06.06A1.65 1.65 0 0 0 19.4 9a1.65 1.65 0 0 0 1.51 1H21a2 2 0 1 1 0 4h-.09a1.65 1.65 0 0 0-1.51 1z";
const EXIT: &str = "M9 21H5a2 2 0 0 1-2-2V5a2 2 0 0 1 2-2h4M16 17l5-5-5-5M21 12H9";

/// An outline icon, hidden from assistive technology (its link says it in words).
fn icon(path: &str) -> Markup {
    html! {
        svg.top-icon xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" width="20" height="20"
            fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round"
            stroke-linejoin="round" aria-hidden="true" focusable="false" {
            path d=(path) {}
        }
    }
}

/// A whole page titled `title` around `main`.
pub fn page(title: &str, session: Option<&Session>, main: Markup) -> Markup {
    page_with_scripts(title, session, &[], main)
}

/// A whole page that also loads `scripts` (deferred: the page is complete without them).
pub fn page_with_scripts(
    title: &str,
    session: Option<&Session>,
    scripts: &[&Asset],
    main: Markup,
) -> Markup {
    page_with_head(title, session, scripts, html! {}, main)
}

/// A whole page with `head` added to the document head (a feed's `<link rel="alternate">`).
pub fn page_with_head(
    title: &str,
    session: Option<&Session>,
    scripts: &[&Asset],
    head: Markup,
    main: Markup,
) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="color-scheme" content="light dark";
                title { (title) " · wachet" }
                link rel="stylesheet" href=(STYLE.path());
                link rel="icon" type="image/svg+xml" href=(ICON.path());
                @for script in scripts {
                    script src=(script.path()) defer {}
                }
                (head)
            }
            body {
                a.skip href="#main" { "Skip to content" }
                header.topbar {
                    a.brand href="/" {
                        img src=(ICON.path()) alt="" width="24" height="24";
                        span { "wachet" }
                    }
                    @if let Some(session) = session {
                        div.account {
                            nav.account-links aria-label="Account" {
                                a.top-link href="/notifications" {
                                    (icon(BELL)) span.top-label { "Notifications" }
                                }
                                a.top-link href="/settings" {
                                    (icon(GEAR)) span.top-label { "Settings" }
                                }
                            }
                            span.email title="Signed in as" { (session.email) }
                            form method="post" action="/signout" {
                                input type="hidden" name="csrf" value=(session.csrf);
                                button.button.quiet.top-link type="submit" {
                                    (icon(EXIT)) span.top-label { "Sign out" }
                                }
                            }
                        }
                    }
                }
                main #main { (main) }
            }
        }
    }
}
