//! Who is asking, read once for every page: the signed-in session ([`SignedIn`]), a
//! state-changing form of a signed-in person with its CSRF token and origin checked
//! ([`SignedInForm`]), and a monitor of the signed-in user ([`own_monitor`]). What fails is the
//! answer to give instead: the sign-in page, the refusal of a form from another site, or the
//! same 404 page for another user's monitor as for an unknown one.

use crate::ops::Ctx;
use crate::web::shared::form;
use crate::web::shared::pages;
use crate::web::shared::session::{self, Session};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::HeaderMap;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use wachet::model::Monitor;

/// The session of a signed-in person; a request without one is answered with the sign-in page
/// (or an error page when the sessions cannot be read).
pub struct SignedIn(pub Session);

impl FromRequestParts<Ctx> for SignedIn {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &Ctx) -> Result<Self, Response> {
        signed_in(state, &parts.headers).await.map(SignedIn)
    }
}

/// A state-changing form of a signed-in person, read whole (as [`form::Form`] reads it) and
/// then checked: a session, the form's `csrf` field equal to the session's token, and an origin
/// of this site. What fails is answered as [`signed_in_form`] answers it; nothing was changed.
pub struct SignedInForm<T> {
    pub session: Session,
    pub form: T,
}

/// The one field every state-changing form carries.
#[derive(Default, Deserialize)]
struct Csrf {
    csrf: Option<String>,
}

impl<T: DeserializeOwned + Send> FromRequest<Ctx> for SignedInForm<T> {
    type Rejection = Response;

    async fn from_request(request: Request, state: &Ctx) -> Result<Self, Response> {
        let headers = request.headers().clone();
        let bytes = form::body(request, state).await?;
        let form: T = form::decode(&bytes).ok_or_else(form::unreadable)?;
        // A form whose token cannot be read is one without a token: refused below.
        let csrf: Csrf = serde_urlencoded::from_bytes(&bytes).unwrap_or_default();
        let session = signed_in_form(state, &headers, csrf.csrf.as_deref()).await?;
        Ok(SignedInForm { session, form })
    }
}

/// The signed-in session with its monitor `id`, or the response to give instead: sign-in, or
/// the 404 page for another user's monitor as for an unknown one.
pub(crate) async fn own_monitor(
    state: &Ctx,
    headers: &HeaderMap,
    id: &str,
) -> Result<(Session, Monitor), Response> {
    let session = signed_in(state, headers).await?;
    match crate::ops::monitors::stored(state, &session.user, id).await {
        Ok(monitor) => Ok((session, monitor)),
        Err(err) => Err(pages::from_error(err.into(), Some(&session))),
    }
}

/// The signed-in session, or the response to give instead (sign-in, or an error page).
pub(crate) async fn signed_in(state: &Ctx, headers: &HeaderMap) -> Result<Session, Response> {
    match session::current(state, headers).await {
        Ok(Some(session)) => Ok(session),
        Ok(None) => Err(Redirect::to("/signin").into_response()),
        Err(err) => Err(pages::from_error(err, None)),
    }
}

/// The session of a state-changing form, or the response to give instead: sign-in, or the
/// refusal of a form without the session's CSRF token or from another site.
pub(crate) async fn signed_in_form(
    state: &Ctx,
    headers: &HeaderMap,
    csrf: Option<&str>,
) -> Result<Session, Response> {
    let session = signed_in(state, headers).await?;
    if !session::same_origin(headers, &state.settings().web)
        || !session::csrf_matches(&session, csrf)
    {
        return Err(pages::form_refused(Some(&session)));
    }
    Ok(session)
}

/// A form that carries nothing but its CSRF token (pause, resume, delete, retry), which
/// [`SignedInForm`] reads.
#[derive(Debug, Default, Deserialize)]
pub struct ActionForm {}
