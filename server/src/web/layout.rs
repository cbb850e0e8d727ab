//! The frame of every page: document head (the hashed style sheet and icon), the top bar with
//! the signed-in user and sign-out, and the main landmark. Everything goes through maud's
//! escaping; nothing here marks user data as pre-escaped.

use super::assets::{Asset, ICON, STYLE};
use super::session::Session;
use maud::{DOCTYPE, Markup, html};

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
                                a href="/notifications" { "Notifications" }
                                a href="/settings" { "Settings" }
                            }
                            span.email title="Signed in as" { (session.email) }
                            form method="post" action="/signout" {
                                input type="hidden" name="csrf" value=(session.csrf);
                                button.button.quiet type="submit" { "Sign out" }
                            }
                        }
                    }
                }
                main #main { (main) }
            }
        }
    }
}
