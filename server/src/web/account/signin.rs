//! Sign-in and sign-out. Signing in is the API's own password login
//! ([`crate::ops::account::login`], as the API's: the same rate limits, turns and password slots), whose token
//! becomes the session cookie; signing out deletes that one token.

use crate::ops::Ctx;
use crate::ops::account;
use crate::web::shared::error::PageError;
use crate::web::shared::form::Form;
use crate::web::shared::layout::page;
use crate::web::shared::pages;
use crate::web::shared::session;
use axum::extract::{ConnectInfo, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use maud::html;
use serde::Deserialize;
use std::net::SocketAddr;
use wachet::model::ClientLoginRequest;

/// The fields of the form.
#[derive(Debug, Default, Deserialize)]
pub struct SignInForm {
    email: Option<String>,
    password: Option<String>,
    next: Option<String>,
}

/// The sign-in page's address: where the browser was going, and whether its session ended.
#[derive(Debug, Default, Deserialize)]
pub struct SignInQuery {
    next: Option<String>,
    ended: Option<String>,
    /// Set when the browser sent two session cookies.
    cookies: Option<String>,
}

/// Where a browser signed in goes: where it was going if that is a page of this site.
fn destination(next: Option<&str>) -> &str {
    next.and_then(session::local_path).unwrap_or("/")
}

/// What went wrong with a sign-in, shown above the form.
enum Failure {
    Message(String),
    Field(&'static str, String),
}

fn render(status: StatusCode, email: &str, next: &str, failure: Option<Failure>) -> Response {
    let (banner, field) = match &failure {
        Some(Failure::Message(text)) => (Some(text.as_str()), None),
        Some(Failure::Field(name, text)) => (None, Some((*name, text.as_str()))),
        None => (None, None),
    };
    let field_error = |name: &str| field.filter(|(f, _)| *f == name).map(|(_, text)| text);
    let markup = page(
        "Sign in",
        None,
        html! {
            section.card.signin aria-labelledby="signin-title" {
                h1 #signin-title { "Sign in" }
                p.lead { "Watch web pages and learn what changed." }
                @if let Some(text) = banner {
                    p.alert #signin-error role="alert" { (text) }
                }
                form method="post" action="/signin" {
                    @if next != "/" { input type="hidden" name="next" value=(next); }
                    div.field {
                        label for="email" { "E-mail address" }
                        @let error = field_error("email");
                        input #email type="email" name="email" autocomplete="username" required
                            value=(email)
                            aria-invalid=[error.map(|_| "true")]
                            aria-describedby=[error.map(|_| "email-error")];
                        @if let Some(text) = error { p.field-error #email-error { "E-mail address " (text) } }
                    }
                    div.field {
                        label for="password" { "Password" }
                        @let error = field_error("password");
                        input #password type="password" name="password"
                            autocomplete="current-password" required
                            aria-invalid=[error.map(|_| "true")]
                            aria-describedby=[error.map(|_| "password-error")];
                        @if let Some(text) = error { p.field-error #password-error { "Password " (text) } }
                    }
                    button.button.primary.wide type="submit" { "Sign in" }
                }
                p.hint {
                    "No password, or lost it? The administrator of this server gives you one with "
                    code { "wachet user password --email YOUR-ADDRESS" } "."
                }
            }
        },
    );
    (status, markup).into_response()
}

/// `GET /signin`: the form (signed-in browsers go to their monitors).
pub async fn form(
    State(state): State<Ctx>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Response {
    // A malformed address is still the sign-in page, only without where it was going.
    let query: SignInQuery =
        serde_urlencoded::from_str(query.as_deref().unwrap_or("")).unwrap_or_default();
    let next = destination(query.next.as_deref());
    match session::current(&state, &headers).await {
        Ok(Some(_)) => Redirect::to(next).into_response(),
        Ok(None) => {
            let twice = query.cookies.is_some()
                || session::several_cookies(&headers, &state.settings().web);
            let ended = if twice {
                Some(Failure::Message(
                    "Your browser sent two session cookies for this site, so you are signed \
                     out: a page of another site may have set one. Sign in again; if this \
                     happens again, clear this site's cookies in your browser."
                        .to_string(),
                ))
            } else {
                query.ended.is_some().then(|| {
                    Failure::Message("Your session has ended. Sign in again to go on.".to_string())
                })
            };
            render(StatusCode::OK, "", next, ended)
        }
        Err(err) => pages::from_error(err, None),
    }
}

/// `POST /signin`: checks the password through the API's login and starts a session.
pub async fn submit(
    State(state): State<Ctx>,
    connect: ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Form(form): Form<SignInForm>,
) -> Response {
    let settings = &state.settings().web;
    if !session::same_origin(&headers, settings) {
        return pages::form_refused(None);
    }
    let email = form.email.clone().unwrap_or_default();
    let next = destination(form.next.as_deref()).to_string();
    let lifetime = settings.session_lifetime;
    let request = ClientLoginRequest {
        email: form.email,
        password: form.password,
        expires_in_sec: Some(lifetime),
    };
    let secure = session::secure(&headers, settings);
    let client = account::Client {
        address: connect.0.ip(),
        base: crate::origin::request_base(&headers),
    };
    match account::login(&state, &client, request)
        .await
        .map_err(PageError::from)
    {
        Ok(answer) => {
            let Some(token) = answer.token else {
                return pages::internal_error();
            };
            // The idle time counts from the sign-in.
            let hash = crate::secrets::sha256_hex(&token);
            if let Err(err) = account::start_session(&state, &hash).await {
                return pages::from_op(err, None);
            }
            let mut response = Redirect::to(&next).into_response();
            if let Ok(cookie) = HeaderValue::from_str(&session::cookie(&token, lifetime, secure)) {
                response.headers_mut().insert(header::SET_COOKIE, cookie);
            }
            response
        }
        Err(PageError::Unauthorized) => render(
            StatusCode::UNAUTHORIZED,
            &email,
            &next,
            Some(Failure::Message(
                "Wrong e-mail address or password.".to_string(),
            )),
        ),
        Err(PageError::TooManyRequests(seconds)) => {
            let mut response = render(
                StatusCode::TOO_MANY_REQUESTS,
                &email,
                &next,
                Some(Failure::Message(format!(
                    "Too many attempts, try again in {seconds} s."
                ))),
            );
            if let Ok(value) = HeaderValue::from_str(&seconds.to_string()) {
                response.headers_mut().insert(header::RETRY_AFTER, value);
            }
            response
        }
        Err(PageError::BadRequest { errors, .. }) => {
            let failure = ["email", "password"]
                .into_iter()
                .find_map(|field| {
                    errors
                        .get(field)
                        .and_then(|messages| messages.first())
                        .map(|message| Failure::Field(field, message.clone()))
                })
                .unwrap_or_else(|| Failure::Message("Fill in both fields.".to_string()));
            render(StatusCode::BAD_REQUEST, &email, &next, Some(failure))
        }
        Err(other) => pages::from_error(other, None),
    }
}

/// The fields of the form.
#[derive(Debug, Default, Deserialize)]
pub struct CsrfForm {
    csrf: Option<String>,
}

/// `POST /signout`: ends this session (its token) and removes the cookie.
pub async fn sign_out(
    State(state): State<Ctx>,
    headers: HeaderMap,
    Form(form): Form<CsrfForm>,
) -> Response {
    let session = match session::current(&state, &headers).await {
        Ok(Some(session)) => session,
        Ok(None) => return Redirect::to("/signin").into_response(),
        Err(err) => return pages::from_error(err, None),
    };
    let settings = &state.settings().web;
    if !session::same_origin(&headers, settings)
        || !session::csrf_matches(&session, form.csrf.as_deref())
    {
        return pages::form_refused(Some(&session));
    }
    if let Err(err) = account::end_session(&state, &session.token_hash).await {
        return pages::from_op(err, Some(&session));
    }
    let mut response = Redirect::to("/signin").into_response();
    if let Ok(cookie) =
        HeaderValue::from_str(&session::clear_cookie(session::secure(&headers, settings)))
    {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    response
}
