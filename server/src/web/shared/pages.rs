//! Pages for what went wrong: not found (also for what belongs to someone else, so the two
//! cannot be told apart), a refused form, too many attempts, bad input and a failure on the
//! server; and [`PageError`], what a page handler fails with, mapped from the operations'
//! errors ([`OpError`]) onto those pages, so a browser never sees problem+json.

use crate::ops::OpError;
use crate::web::shared::error::PageError;
use crate::web::shared::layout::page;
use crate::web::shared::session::Session;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};

fn message(status: StatusCode, title: &str, session: Option<&Session>, body: Markup) -> Response {
    let markup = page(
        title,
        session,
        html! {
            section.card.message {
                h1 { (title) }
                (body)
                p { a.button href="/" { "Back to your monitors" } }
            }
        },
    );
    (status, markup).into_response()
}

/// 404: nothing of this user under that address.
pub fn not_found(session: Option<&Session>) -> Response {
    message(
        StatusCode::NOT_FOUND,
        "Not found",
        session,
        html! { p { "There is nothing here. It may have been deleted, or the address is wrong." } },
    )
}

/// 403: a form without the session's CSRF token, or from another site. Nothing was changed.
pub fn form_refused(session: Option<&Session>) -> Response {
    message(
        StatusCode::FORBIDDEN,
        "This form was refused",
        session,
        html! {
            p { "The form was out of date or was not sent from this site, so nothing was changed." }
            p { "Go back, reload the page and try again." }
        },
    )
}

/// 429: over a rate limit.
pub fn too_many(seconds: u64, session: Option<&Session>) -> Response {
    let mut response = message(
        StatusCode::TOO_MANY_REQUESTS,
        "Too many attempts",
        session,
        html! { p.error { "Too many attempts, try again in " (seconds) " s." } },
    );
    if let Ok(value) = HeaderValue::from_str(&seconds.to_string()) {
        response.headers_mut().insert(header::RETRY_AFTER, value);
    }
    response
}

/// A form that could not be read (too slow, too large, malformed). Nothing was changed.
pub fn bad_input(status: StatusCode, text: &str) -> Response {
    message(
        status,
        "The form could not be used",
        None,
        html! { p { (text) " Nothing was changed." } },
    )
}

/// 500: the detail went to the log.
pub fn internal_error() -> Response {
    message(
        StatusCode::INTERNAL_SERVER_ERROR,
        "Something failed on the server",
        None,
        html! { p { "The error was logged. Try again in a moment." } },
    )
}

/// The page for an operation's error.
pub fn from_op(err: OpError, session: Option<&Session>) -> Response {
    from_error(err.into(), session)
}

/// The page for a page handler's error.
pub fn from_error(err: PageError, session: Option<&Session>) -> Response {
    match err {
        PageError::NotFound => not_found(session),
        PageError::TooManyRequests(seconds) => too_many(seconds, session),
        PageError::Unauthorized => Redirect::to("/signin").into_response(),
        PageError::BadRequest { detail, errors } => message(
            StatusCode::BAD_REQUEST,
            "That did not work",
            session,
            html! {
                p { (detail) }
                ul { @for (field, messages) in &errors { @for m in messages { li { (field) ": " (m) } } } }
            },
        ),
        PageError::Unavailable(detail) => message(
            StatusCode::SERVICE_UNAVAILABLE,
            "The server is busy",
            session,
            html! { p { (detail) } },
        ),
        PageError::Internal(detail) => {
            tracing::error!(error = %detail, "web interface request failed");
            internal_error()
        }
    }
}

/// A 400 page naming what was wrong with the address.
pub(crate) fn bad_request(session: &Session, text: &str) -> Response {
    from_error(
        PageError::BadRequest {
            detail: text.to_string(),
            errors: Default::default(),
        },
        Some(session),
    )
}

/// The response of an address that names a bad entry.
pub(crate) fn bad_entry(session: &Session, field: &str, problem: &str) -> Response {
    bad_request(session, &entry_problem(field, problem))
}

/// Why a `from` or `to` of the difference page cannot be used.
pub(crate) fn entry_problem(field: &str, problem: &str) -> String {
    format!("The “{field}” of this address {problem}.")
}
