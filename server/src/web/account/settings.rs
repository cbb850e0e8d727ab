//! The settings page (`/settings`) and its forms, each through the operations the API calls: the user's
//! notification endpoints with their confirmation state and when their messages go (at once,
//! a digest, quiet hours: `PUT /user/notificationEndpoints`, what the API set beside kept),
//! a test notification to each (through the outbox, under the hourly bound), the webhook
//! secret and the API key (regenerated and shown once, on the page answering the form), the
//! password change (`PUT /user/password`: the current password, checked as a login), "sign
//! out everywhere" (`invalidateTokens`: every session ends, this one too), the Atom feeds
//! (created or renewed with their URL shown once, removed), and the time zone times are shown
//! in (`PUT /user/settings`). Secrets shown once are answered
//! directly (no redirect), under the interface's `Cache-Control: no-store`.

use crate::ops::notifications::DeliveryState;
use crate::ops::{Ctx, account, endpoints, feeds, monitors, user_settings};
use crate::store::{FeedRecord, FeedScope};
use crate::web::shared::clock::Now;
use crate::web::shared::error::{PageError, first_message};
use crate::web::shared::extract::SignedIn;
use crate::web::shared::extract::SignedInForm;
use crate::web::shared::format::display_name;
use crate::web::shared::layout::page;
use crate::web::shared::pages;
use crate::web::shared::schedule::{self, Schedule};
use crate::web::shared::session::{self, Session};
use crate::web::shared::tree;
use crate::web::shared::words::{delivery_badge, tries};
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use serde::Deserialize;
use std::net::SocketAddr;
use wachet::model::{MessageFormat, MessagingServiceType, NotificationEndpoint};

/// Most folders offered for a feed (in tree order).
const FEED_FOLDERS: usize = 200;
/// Most monitors offered for a feed.
const FEED_MONITORS: u32 = 500;

/// What a new feed's address is called; unlike the other secrets it is shown again, on the
/// folder's or monitor's page.
const FEED_ADDRESS: &str = "feed address";

/// A secret shown this once, or what a form did.
#[derive(Debug, Default)]
enum Flash {
    #[default]
    None,
    Done(String),
    Secret {
        what: &'static str,
        value: String,
        note: String,
    },
}

/// A message at one field of a form.
#[derive(Debug, Default)]
struct FieldErrors {
    endpoint: Option<String>,
    current_password: Option<String>,
    new_password: Option<String>,
    /// What the add form had, shown again with its error.
    endpoint_kind: Option<i64>,
    endpoint_value: String,
    /// The templates the add form had, shown again with their error or their preview.
    endpoint_title: String,
    endpoint_body: String,
    endpoint_format: String,
    /// The monitor the preview was asked for.
    preview_monitor: String,
    /// A template's refusal (naming the field and the line), or the preview's.
    template: Option<String>,
    /// What the templates made of the monitor's last change.
    preview: Option<endpoints::Preview>,
    /// When the add form's endpoint sends, as typed.
    endpoint_schedule: Schedule,
    /// The API's refusals of that schedule, by field (`digest.everyMinutes`, `quietHours.to`).
    schedule: std::collections::BTreeMap<String, String>,
    time_zone: Option<String>,
}

/// `GET /settings`.
pub async fn show(State(state): State<Ctx>, SignedIn(session): SignedIn) -> Response {
    answer(&state, &session, Ok(Flash::None)).await
}

/// The page answering a form: what it did or the secret it made, or the API's refusal.
async fn answer(state: &Ctx, session: &Session, outcome: Result<Flash, PageError>) -> Response {
    match outcome {
        Ok(flash) => {
            render(
                state,
                session,
                flash,
                FieldErrors::default(),
                StatusCode::OK,
            )
            .await
        }
        Err(err) => pages::from_error(err, Some(session)),
    }
}

/// The page answering a form refused at its fields.
async fn refused(state: &Ctx, session: &Session, errors: FieldErrors) -> Response {
    render(state, session, Flash::None, errors, StatusCode::BAD_REQUEST).await
}

async fn render(
    state: &Ctx,
    session: &Session,
    flash: Flash,
    errors: FieldErrors,
    status: StatusCode,
) -> Response {
    let settings = match endpoints::get(state, &session.user).await {
        Ok(settings) => settings,
        Err(err) => return pages::from_op(err, Some(session)),
    };
    let tests = match endpoints::tests(state, &session.user).await {
        Ok(tests) => tests,
        Err(err) => return pages::from_op(err, Some(session)),
    };
    let feeds = match feeds::list(state, &session.user).await {
        Ok(feeds) => feeds,
        Err(err) => return pages::from_op(err, Some(session)),
    };
    let targets = match feed_targets(state, &session.user).await {
        Ok(targets) => targets,
        Err(err) => return pages::from_error(err, Some(session)),
    };
    let main = html! {
        div.page-head { h1 { "Settings" } }
        (flash_panel(&flash))
        (endpoints_section(session, &settings, &tests, &errors, &targets))
        (feeds_section(session, &feeds, &targets))
        (crate::web::account::transfer::section(session))
        (time_zone_section(session, &errors))
        (api_key_section(session))
        (password_section(session, &errors))
        (sessions_section(session))
    };
    (status, page("Settings", Some(session), main)).into_response()
}

fn flash_panel(flash: &Flash) -> Markup {
    html! {
        @match flash {
            Flash::None => {},
            Flash::Done(text) => p.card.flash role="status" { (text) },
            Flash::Secret { what, value, note } => {
                section.card.flash.secret aria-labelledby="secret-title" role="status" {
                    h2 #secret-title { "Your new " (what) }
                    @if *what == FEED_ADDRESS {
                        p { "It is shown again on the page of what the feed follows." }
                    } @else {
                        p { "Copy it now: it is shown this once and cannot be shown again." }
                    }
                    label.visually-hidden for="shown-secret" { (what) }
                    input #shown-secret.secret-value type="text" readonly value=(value);
                    p.hint { (note) }
                }
            }
        }
    }
}

fn endpoint_kind_label(kind: MessagingServiceType) -> String {
    kind.to_string()
}

fn endpoints_section(
    session: &Session,
    settings: &endpoints::Endpoints,
    tests: &[DeliveryState],
    errors: &FieldErrors,
    targets: &[(String, String)],
) -> Markup {
    let monitors: Vec<(&str, &str)> = targets
        .iter()
        .filter_map(|(value, label)| {
            Some((
                value.strip_prefix("monitor:")?,
                label.strip_prefix("Monitor: ")?,
            ))
        })
        .collect();
    let invalid = errors.endpoint.is_some();
    let chosen = errors
        .endpoint_kind
        .unwrap_or(MessagingServiceType::Webhook.code());
    html! {
        section #endpoints aria-labelledby="endpoints-title" {
            h2 #endpoints-title { "Notification endpoints" }
            p.lead { "Notifications of monitors without endpoints of their own go to all of these." }
            @if settings.notification_endpoints.is_empty() {
                p.empty { "No endpoints yet: notifications are only listed on the Notifications page." }
            } @else {
                ul.endpoints {
                    @for (i, endpoint) in settings.notification_endpoints.iter().enumerate() {
                        @let value = endpoint.value.as_deref().unwrap_or("");
                        li.endpoint {
                            div.endpoint-main {
                                span.endpoint-kind { (endpoint_kind_label(endpoint.kind)) }
                                span.endpoint-value { (value) }
                                @match endpoint.confirmed {
                                    Some(true) => span.badge.ok { "Confirmed" },
                                    Some(false) => span.badge.pending { "Waiting for confirmation" },
                                    None => {},
                                }
                                @if endpoint.title.is_some() || endpoint.body.is_some() {
                                    span.badge { "Own message" }
                                }
                                @let when = schedule::words(endpoint);
                                @if !when.is_empty() {
                                    span.badge.schedule-badge { (when) }
                                }
                            }
                            div.actions {
                                form method="post" action="/settings/endpoints/test" {
                                    input type="hidden" name="csrf" value=(session.csrf);
                                    input type="hidden" name="value" value=(value);
                                    button.button.quiet type="submit" aria-label={ "Send a test notification to " (value) } { "Send a test notification" }
                                }
                                form method="post" action="/settings/endpoints/remove" {
                                    input type="hidden" name="csrf" value=(session.csrf);
                                    input type="hidden" name="value" value=(value);
                                    input type="hidden" name="kind" value=(endpoint.kind.code());
                                    button.button.quiet.danger-quiet type="submit" aria-label={ "Remove " (value) } { "Remove" }
                                }
                            }
                            details.endpoint-schedule {
                                summary aria-label={ "When messages go to " (value) } { "When messages go" }
                                form method="post" action="/settings/endpoints/schedule" {
                                    input type="hidden" name="csrf" value=(session.csrf);
                                    input type="hidden" name="value" value=(value);
                                    input type="hidden" name="kind" value=(endpoint.kind.code());
                                    (schedule::fields("", &format!("endpoint-{i}"), &Schedule::of(endpoint), &|_: &str| None))
                                    button.button type="submit" aria-label={ "Save when messages go to " (value) } { "Save" }
                                }
                            }
                        }
                    }
                }
            }
            form.card.add-endpoint method="post" action="/settings/endpoints" aria-labelledby="add-endpoint-title" {
                h3 #add-endpoint-title { "Add an endpoint" }
                input type="hidden" name="csrf" value=(session.csrf);
                div.add-row {
                    div.field {
                        label for="endpoint-kind" { "Type" }
                        select #endpoint-kind name="kind" {
                            @for kind in crate::notify::channel::offered() {
                                option value=(kind.code()) selected[kind.code() == chosen] { (endpoint_kind_label(kind)) }
                            }
                        }
                    }
                    div.field.grow {
                        label for="endpoint-value" { "URL or e-mail address" }
                        input #endpoint-value type="text" name="value" required value=(errors.endpoint_value)
                            placeholder="https://example.com/hook"
                            aria-invalid=[invalid.then_some("true")]
                            aria-describedby=(if invalid { "endpoint-value-error" } else { "endpoint-value-hint" });
                    }
                    button.button.primary type="submit" { "Add" }
                }
                @if let Some(error) = &errors.endpoint {
                    p.field-error #endpoint-value-error { (error) }
                } @else {
                    p.hint #endpoint-value-hint { "An e-mail address other than yours is sent a code first, and gets notifications once it is confirmed." }
                }
                (schedule::fields("", "endpoint", &errors.endpoint_schedule, &|part: &str| errors.schedule.get(part).cloned()))
                (template_fields(errors, &monitors))
            }
            @if !tests.is_empty() {
                section #tests aria-labelledby="tests-title" {
                    h3 #tests-title { "Test notifications" }
                    ul.deliveries.card {
                        @for test in tests {
                            @let (class, label) = delivery_badge(&test.state);
                            li.delivery {
                                span class=(class) { (label) }
                                div.delivery-main {
                                    span.delivery-target { (test.target) }
                                    span.delivery-tries { (tries(test.attempts)) }
                                    @if let Some(error) = &test.last_error { span.delivery-error { (error) } }
                                }
                            }
                        }
                    }
                }
            }
            section aria-labelledby="webhook-title" {
                h3 #webhook-title { "Webhook secret" }
                div.card {
                p { "Webhook deliveries carry " code { "X-Wachet-Signature: sha256=…" } ", an HMAC-SHA256 of the body keyed with this secret. A new one signs every delivery from now on, retries included." }
                form method="post" action="/settings/webhook-secret" {
                    input type="hidden" name="csrf" value=(session.csrf);
                    button.button type="submit" { "Regenerate the webhook secret" }
                }
                }
            }
        }
    }
}

/// The add form's optional templates (open when they hold something), with the preview
/// against a monitor's last change.
fn template_fields(errors: &FieldErrors, monitors: &[(&str, &str)]) -> Markup {
    let open = !errors.endpoint_title.is_empty()
        || !errors.endpoint_body.is_empty()
        || errors.template.is_some()
        || errors.preview.is_some();
    let invalid = errors.template.is_some();
    let described = if invalid {
        "template-error"
    } else {
        "template-hint"
    };
    html! {
        details.templates open[open] {
            summary { "Own message (optional template)" }
            div.field {
                label for="endpoint-title" { "Title" }
                input #endpoint-title type="text" name="title" value=(errors.endpoint_title)
                    placeholder="{{ monitor.name }}: {{ alert.expression }}"
                    aria-invalid=[invalid.then_some("true")] aria-describedby=(described);
            }
            div.field {
                label for="endpoint-body" { "Body" }
                textarea #endpoint-body name="body" rows="5"
                    placeholder="{{ change.diff }}\n{{ links.change }}"
                    aria-invalid=[invalid.then_some("true")] aria-describedby=(described) { (errors.endpoint_body) }
            }
            div.add-row {
                div.field {
                    label for="endpoint-format" { "Format" }
                    select #endpoint-format name="format" {
                        @for (value, label) in [("", "The channel's own"), ("text", "Text"), ("markdown", "Markdown"), ("html", "HTML")] {
                            option value=(value) selected[errors.endpoint_format == value] { (label) }
                        }
                    }
                }
                div.field.grow {
                    label for="preview-monitor" { "Preview with the last change of" }
                    select #preview-monitor name="monitor" {
                        @for (id, name) in monitors {
                            option value=(id) selected[errors.preview_monitor == *id] { (name) }
                        }
                    }
                }
                button.button type="submit" formaction="/settings/endpoints/preview" formnovalidate { "Preview" }
            }
            @if let Some(error) = &errors.template {
                p.field-error #template-error role="alert" { (error) }
            } @else {
                p.hint #template-hint {
                    "Tokens such as " code { "{{ monitor.name }}" } ", " code { "{{ change.diff }}" } ", "
                    code { "{{ change.added }}" } ", " code { "{{ links.change }}" } ", " code { "{{ time }}" }
                    " (the guide lists them all). Checked when you add the endpoint."
                }
            }
            @if let Some(preview) = &errors.preview {
                section.preview.card aria-labelledby="preview-title" role="status" {
                    h4 #preview-title { "Preview" }
                    p.preview-subject { strong { (preview.title) } }
                    @match preview.format {
                        MessageFormat::Html => iframe.preview-html title="The body as HTML" sandbox="" srcdoc=(preview.body) {},
                        MessageFormat::Text | MessageFormat::Markdown => pre.preview-body { (preview.body) },
                    }
                }
            }
        }
    }
}

/// The templates of the add form as an endpoint's fields (empty ones left out).
fn form_templates(form: &SettingsForm) -> (Option<String>, Option<String>, Option<MessageFormat>) {
    let text = |field: &Option<String>| field.clone().filter(|t| !t.trim().is_empty());
    let format = match form.format.as_deref() {
        Some("text") => Some(MessageFormat::Text),
        Some("markdown") => Some(MessageFormat::Markdown),
        Some("html") => Some(MessageFormat::Html),
        _ => None,
    };
    (text(&form.title), text(&form.body), format)
}

/// The add form as it was sent, shown again.
fn form_again(form: &SettingsForm) -> FieldErrors {
    FieldErrors {
        endpoint_kind: form.kind.as_deref().and_then(|k| k.parse::<i64>().ok()),
        endpoint_value: form.value.clone().unwrap_or_default(),
        endpoint_title: form.title.clone().unwrap_or_default(),
        endpoint_body: form.body.clone().unwrap_or_default(),
        endpoint_format: form.format.clone().unwrap_or_default(),
        preview_monitor: form.monitor.clone().unwrap_or_default(),
        endpoint_schedule: form.schedule(),
        ..FieldErrors::default()
    }
}

/// A refusal at a template's field, said with the field's name; none for other fields.
fn template_refusal(errors: &std::collections::BTreeMap<String, Vec<String>>) -> Option<String> {
    errors.iter().find_map(|(field, messages)| {
        let name = if field.ends_with(".title") {
            "The title"
        } else if field.ends_with(".body") {
            "The body"
        } else {
            return None;
        };
        let message = messages.first()?;
        Some(format!("{name} template cannot be used: {message}."))
    })
}

/// `POST /settings/endpoints/preview`: renders the add form's templates against the chosen
/// monitor's last change (`POST /user/notificationEndpoints/preview`'s code) and shows the
/// page again with the form as it was and the preview, or the refusal at the templates.
pub async fn preview_endpoint(
    State(state): State<Ctx>,
    SignedInForm { session, form }: SignedInForm<SettingsForm>,
) -> Response {
    let mut again = form_again(&form);
    let kind = again
        .endpoint_kind
        .and_then(MessagingServiceType::from_code)
        .unwrap_or(MessagingServiceType::Webhook);
    let (title, body, format) = form_templates(&form);
    let endpoint = NotificationEndpoint {
        title,
        body,
        format,
        ..NotificationEndpoint::new(kind, form.value.clone())
    };
    let monitor = form.monitor.clone().unwrap_or_default();
    match endpoints::preview(&state, &session.user, &endpoint, &monitor).await {
        Ok(preview) => {
            again.preview = Some(preview);
            render(&state, &session, Flash::None, again, StatusCode::OK).await
        }
        Err(err) => {
            again.template = Some(match PageError::from(err) {
                PageError::BadRequest { detail, errors } => template_refusal(&errors)
                    .unwrap_or_else(|| format!("No preview: {}.", first_message(detail, &errors))),
                PageError::NotFound => "No preview: choose one of your monitors.".to_string(),
                other => return pages::from_error(other, Some(&session)),
            });
            refused(&state, &session, again).await
        }
    }
}

/// What a feed can follow: every monitor, a folder, a monitor; as (form value, label).
async fn feed_targets(state: &Ctx, user: &str) -> Result<Vec<(String, String)>, PageError> {
    let mut targets = vec![("all".to_string(), "All monitors".to_string())];
    // Every folder in tree order, labelled with its path.
    let tree = tree::walk(state, user, None, false).await?;
    for folder in tree.folders.into_iter().take(FEED_FOLDERS) {
        targets.push((
            format!("folder:{}", folder.id),
            format!("Folder: {}", folder.path),
        ));
    }
    let monitors = monitors::by_name(state, user, FEED_MONITORS).await?;
    for monitor in monitors {
        let Some(id) = monitor.id.as_deref() else {
            continue;
        };
        let name = display_name(&monitor);
        targets.push((format!("monitor:{id}"), format!("Monitor: {name}")));
    }
    Ok(targets)
}

fn scope_value(scope: &FeedScope) -> String {
    match scope {
        FeedScope::All => "all".to_string(),
        FeedScope::Folder(id) => format!("folder:{id}"),
        FeedScope::Monitor(id) => format!("monitor:{id}"),
    }
}

fn feed_label(feed: &FeedRecord) -> String {
    let name = feed.name.as_deref().unwrap_or("(unnamed)");
    match feed.scope {
        FeedScope::All => "All monitors".to_string(),
        FeedScope::Folder(_) => format!("Folder: {name}"),
        FeedScope::Monitor(_) => format!("Monitor: {name}"),
    }
}

fn feeds_section(session: &Session, feeds: &[FeedRecord], targets: &[(String, String)]) -> Markup {
    let now = Now::of(session);
    html! {
        section #feeds aria-labelledby="feeds-title" {
            h2 #feeds-title { "Feeds" }
            p.lead { "Atom feeds of changes, for feed readers. Each has a secret address of its own: renewing it makes the old address stop working." }
            @if feeds.is_empty() {
                p.empty { "No feeds yet." }
            } @else {
                ul.feeds.card {
                    @for feed in feeds {
                        li.feed {
                            div.feed-main {
                                span.feed-name { (feed_label(feed)) }
                                span.hint { code { (crate::ops::feeds::path(&feed.scope)) "?key=…" } " · made " (now.when(chrono::DateTime::from_timestamp_millis(feed.created_at))) }
                            }
                            div.actions {
                                form method="post" action="/settings/feeds" {
                                    input type="hidden" name="csrf" value=(session.csrf);
                                    input type="hidden" name="target" value=(scope_value(&feed.scope));
                                    button.button.quiet type="submit" aria-label={ "Renew address of " (feed_label(feed)) } { "Renew address" }
                                }
                                form method="post" action={ "/settings/feeds/" (feed.id) "/delete" } {
                                    input type="hidden" name="csrf" value=(session.csrf);
                                    button.button.quiet.danger-quiet type="submit" aria-label={ "Remove the feed of " (feed_label(feed)) } { "Remove" }
                                }
                            }
                        }
                    }
                }
            }
            form.card.add-feed method="post" action="/settings/feeds" aria-labelledby="add-feed-title" {
                h3 #add-feed-title { "New feed" }
                input type="hidden" name="csrf" value=(session.csrf);
                div.add-row {
                    div.field.grow {
                        label for="feed-target" { "Changes of" }
                        select #feed-target name="target" {
                            @for (value, label) in targets { option value=(value) { (label) } }
                        }
                    }
                    button.button.primary type="submit" { "Create feed" }
                }
            }
        }
    }
}

fn time_zone_section(session: &Session, errors: &FieldErrors) -> Markup {
    let current = session.zone.name();
    let invalid = errors.time_zone.is_some();
    html! {
        section #time-zone aria-labelledby="time-zone-title" {
            h2 #time-zone-title { "Time zone" }
            form.card method="post" action="/settings/time-zone" {
                input type="hidden" name="csrf" value=(session.csrf);
                div.add-row {
                div.field.grow {
                    label for="time-zone-name" { "Times are shown in" }
                    select #time-zone-name name="timeZone"
                        aria-invalid=[invalid.then_some("true")]
                        aria-describedby=(if invalid { "time-zone-error" } else { "time-zone-hint" }) {
                        @for name in user_settings::offered_time_zones() {
                            option value=(name) selected[name == current] { (name) }
                        }
                        // A zone set through the API by one of its other names stays chosen.
                        @if !user_settings::offered_time_zones().any(|name| name == current) {
                            option value=(current) selected { (current) }
                        }
                    }
                }
                button.button.primary type="submit" { "Save" }
                }
                @if let Some(error) = &errors.time_zone {
                    p.field-error #time-zone-error { (error) }
                } @else {
                    p.hint #time-zone-hint { "It is now " (Now::of(session).exact(chrono::Utc::now())) " there." }
                }
            }
        }
    }
}

fn api_key_section(session: &Session) -> Markup {
    html! {
        section #api-key aria-labelledby="api-key-title" {
            h2 #api-key-title { "API key" }
            div.card {
                p { "Scripts sign in with your user id and API key (" code { "POST /thirdparty/v1/user/apilogin" } ")." }
                p.user-id { "Your user id: " code { (session.user) } }
                p.hint { "A new key replaces the old one at once; it is shown once." }
                form method="post" action="/settings/api-key" {
                    input type="hidden" name="csrf" value=(session.csrf);
                    button.button type="submit" { "Regenerate the API key" }
                }
            }
        }
    }
}

fn password_section(session: &Session, errors: &FieldErrors) -> Markup {
    let field = |id: &str,
                 name: &str,
                 label: &str,
                 autocomplete: &str,
                 error: &Option<String>,
                 hint: Option<&str>| {
        let invalid = error.is_some();
        let error_id = format!("{id}-error");
        let hint_id = format!("{id}-hint");
        let described = if invalid {
            Some(error_id.clone())
        } else {
            hint.map(|_| hint_id.clone())
        };
        html! {
            div.field {
                label for=(id) { (label) }
                input id=(id) type="password" name=(name) required autocomplete=(autocomplete)
                    aria-invalid=[invalid.then_some("true")]
                    aria-describedby=[described];
                @if let Some(error) = error {
                    p.field-error id=(error_id) { (error) }
                } @else if let Some(hint) = hint {
                    p.hint id=(hint_id) { (hint) }
                }
            }
        }
    };
    html! {
        section #password aria-labelledby="password-title" {
            h2 #password-title { "Password" }
            form.card.password-form method="post" action="/settings/password" {
                input type="hidden" name="csrf" value=(session.csrf);
                input type="hidden" name="username" autocomplete="username" value=(session.email);
                (field("current-password", "currentPassword", "Current password", "current-password", &errors.current_password, None))
                (field("new-password", "newPassword", "New password", "new-password", &errors.new_password, Some("8 to 1,024 characters. Your other sessions end; this one stays.")))
                button.button.primary type="submit" { "Change the password" }
            }
        }
    }
}

fn sessions_section(session: &Session) -> Markup {
    html! {
        section #sessions aria-labelledby="sessions-title" {
            h2 #sessions-title { "Sessions" }
            div.card {
                p { "Ends every session and token of your account, in every browser and script, this one too." }
                form method="post" action="/settings/sign-out-everywhere" {
                    input type="hidden" name="csrf" value=(session.csrf);
                    button.button.danger type="submit" { "Sign out everywhere" }
                }
            }
        }
    }
}

/// The fields of the settings forms (each form sends some of them).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SettingsForm {
    kind: Option<String>,
    value: Option<String>,
    target: Option<String>,
    current_password: Option<String>,
    new_password: Option<String>,
    time_zone: Option<String>,
    title: Option<String>,
    body: Option<String>,
    format: Option<String>,
    monitor: Option<String>,
    when: Option<String>,
    #[serde(rename = "digest.everyMinutes")]
    every_minutes: Option<String>,
    #[serde(rename = "digest.dailyAt")]
    daily_at: Option<String>,
    #[serde(rename = "quietHours.from")]
    quiet_from: Option<String>,
    #[serde(rename = "quietHours.to")]
    quiet_to: Option<String>,
}

impl SettingsForm {
    /// When the endpoint the form names sends, as typed.
    fn schedule(&self) -> Schedule {
        let text = |field: &Option<String>| field.clone().unwrap_or_default();
        Schedule {
            when: text(&self.when),
            every: text(&self.every_minutes),
            daily: text(&self.daily_at),
            quiet_from: text(&self.quiet_from),
            quiet_to: text(&self.quiet_to),
        }
    }
}

/// The API's refusals of an endpoint's schedule (`notificationEndpoints[2].digest.dailyAt`), by
/// the field of the schedule (`digest.dailyAt`).
fn schedule_refusals(
    errors: &std::collections::BTreeMap<String, Vec<String>>,
) -> std::collections::BTreeMap<String, String> {
    errors
        .iter()
        .filter_map(|(field, messages)| {
            let (_, part) = field.split_once("].")?;
            let message = messages.first()?;
            (part.starts_with("digest") || part.starts_with("quietHours")).then(|| {
                (
                    part.to_string(),
                    format!("{}: {message}.", schedule_field(part)),
                )
            })
        })
        .collect()
}

/// What a person calls a schedule's field.
fn schedule_field(part: &str) -> &'static str {
    match part {
        "digest.everyMinutes" => "The minutes between messages",
        "digest.dailyAt" => "The time of the daily message",
        "quietHours.from" => "The start of the quiet hours",
        "quietHours.to" => "The end of the quiet hours",
        _ => "The digest",
    }
}

/// The user's endpoints as stored (without the output-only `confirmed`).
async fn current_endpoints(
    state: &Ctx,
    user: &str,
) -> Result<Vec<NotificationEndpoint>, PageError> {
    let settings = endpoints::get(state, user).await?;
    Ok(settings
        .notification_endpoints
        .into_iter()
        .map(|endpoint| NotificationEndpoint {
            confirmed: None,
            ..endpoint
        })
        .collect())
}

async fn store_endpoints(
    state: &Ctx,
    user: &str,
    list: Vec<NotificationEndpoint>,
) -> Result<(), PageError> {
    endpoints::replace(state, user, &list).await?;
    Ok(())
}

/// `POST /settings/endpoints`: adds an endpoint through `PUT /user/notificationEndpoints`'s
/// code; what it refuses is shown at the field.
pub async fn add_endpoint(
    State(state): State<Ctx>,
    SignedInForm { session, form }: SignedInForm<SettingsForm>,
) -> Response {
    let value = form.value.clone().unwrap_or_default().trim().to_string();
    let code = form.kind.as_deref().and_then(|k| k.parse::<i64>().ok());
    let refuse = |message: String| FieldErrors {
        endpoint: Some(message),
        endpoint_kind: code,
        endpoint_value: value.clone(),
        ..form_again(&form)
    };
    let Some(kind) = code
        .and_then(MessagingServiceType::from_code)
        .filter(|kind| crate::notify::channel::of(*kind).is_some())
    else {
        let errors = refuse("Choose one of the types offered.".to_string());
        return refused(&state, &session, errors).await;
    };
    let mut endpoints = match current_endpoints(&state, &session.user).await {
        Ok(endpoints) => endpoints,
        Err(err) => return pages::from_error(err, Some(&session)),
    };
    if endpoints
        .iter()
        .any(|e| e.kind == kind && e.value.as_deref() == Some(value.as_str()))
    {
        let errors = refuse("This endpoint is in the list already.".to_string());
        return refused(&state, &session, errors).await;
    }
    let (title, body, format) = form_templates(&form);
    let mut endpoint = NotificationEndpoint {
        title,
        body,
        format,
        ..NotificationEndpoint::new(kind, Some(value.clone()))
    };
    form.schedule().apply(&mut endpoint);
    endpoints.push(endpoint);
    match store_endpoints(&state, &session.user, endpoints).await {
        Ok(()) => Redirect::to("/settings#endpoints").into_response(),
        Err(PageError::BadRequest { errors, .. }) if !schedule_refusals(&errors).is_empty() => {
            let errors = FieldErrors {
                schedule: schedule_refusals(&errors),
                ..form_again(&form)
            };
            refused(&state, &session, errors).await
        }
        Err(PageError::BadRequest { errors, .. }) if template_refusal(&errors).is_some() => {
            let errors = FieldErrors {
                template: template_refusal(&errors),
                ..form_again(&form)
            };
            refused(&state, &session, errors).await
        }
        Err(PageError::BadRequest { detail, errors }) => {
            let message = first_message(detail, &errors);
            let errors = refuse(format!("This endpoint cannot be used: {message}."));
            refused(&state, &session, errors).await
        }
        Err(err) => pages::from_error(err, Some(&session)),
    }
}

/// `POST /settings/endpoints/remove`: removes the endpoint of that type and value (a second
/// submit finds nothing to remove and changes nothing).
pub async fn remove_endpoint(
    State(state): State<Ctx>,
    SignedInForm { session, form }: SignedInForm<SettingsForm>,
) -> Response {
    let value = form.value.as_deref().unwrap_or("");
    let kind = form.kind.as_deref().and_then(|k| k.parse::<i64>().ok());
    let mut endpoints = match current_endpoints(&state, &session.user).await {
        Ok(endpoints) => endpoints,
        Err(err) => return pages::from_error(err, Some(&session)),
    };
    let before = endpoints.len();
    endpoints.retain(|e| !(Some(e.kind.code()) == kind && e.value.as_deref() == Some(value)));
    if endpoints.len() != before
        && let Err(err) = store_endpoints(&state, &session.user, endpoints).await
    {
        return pages::from_error(err, Some(&session));
    }
    Redirect::to("/settings#endpoints").into_response()
}

/// `POST /settings/endpoints/schedule`: sets when messages go to the endpoint of that type and
/// value (at once, a digest, quiet hours), keeping its templates; what the API refuses is said
/// on the page.
pub async fn schedule_endpoint(
    State(state): State<Ctx>,
    SignedInForm { session, form }: SignedInForm<SettingsForm>,
) -> Response {
    let value = form.value.as_deref().unwrap_or("");
    let kind = form.kind.as_deref().and_then(|k| k.parse::<i64>().ok());
    let mut endpoints = match current_endpoints(&state, &session.user).await {
        Ok(endpoints) => endpoints,
        Err(err) => return pages::from_error(err, Some(&session)),
    };
    let Some(endpoint) = endpoints
        .iter_mut()
        .find(|e| Some(e.kind.code()) == kind && e.value.as_deref() == Some(value))
    else {
        // Removed meanwhile: nothing to set.
        return Redirect::to("/settings#endpoints").into_response();
    };
    form.schedule().apply(endpoint);
    match store_endpoints(&state, &session.user, endpoints).await {
        Ok(()) => Redirect::to("/settings#endpoints").into_response(),
        Err(PageError::BadRequest { detail, errors }) => {
            let said: Vec<String> = schedule_refusals(&errors).into_values().collect();
            let message = match said.is_empty() {
                true => format!("{}.", first_message(detail, &errors)),
                false => said.join(" "),
            };
            let flash = Flash::Done(format!(
                "When messages go to {value} was not changed: {message}"
            ));
            render(
                &state,
                &session,
                flash,
                FieldErrors::default(),
                StatusCode::BAD_REQUEST,
            )
            .await
        }
        Err(err) => pages::from_error(err, Some(&session)),
    }
}

/// `POST /settings/endpoints/test`: a test notification to that endpoint, into the outbox.
pub async fn test_endpoint(
    State(state): State<Ctx>,
    SignedInForm { session, form }: SignedInForm<SettingsForm>,
) -> Response {
    let value = form.value.as_deref().unwrap_or("").trim();
    match endpoints::send_test(&state, &session.user, value)
        .await
        .map_err(PageError::from)
    {
        Ok(_) => Redirect::to("/settings#tests").into_response(),
        Err(PageError::BadRequest { detail, errors }) => {
            let message = first_message(detail, &errors);
            let flash = Flash::Done(format!(
                "No test notification was sent to {value}: {message}."
            ));
            render(
                &state,
                &session,
                flash,
                FieldErrors::default(),
                StatusCode::BAD_REQUEST,
            )
            .await
        }
        Err(err) => pages::from_error(err, Some(&session)),
    }
}

/// `POST /settings/webhook-secret`: a new secret, shown once.
pub async fn webhook_secret(
    State(state): State<Ctx>,
    SignedInForm { session, form: _ }: SignedInForm<SettingsForm>,
) -> Response {
    let secret = endpoints::rotate_webhook_secret(&state, &session.user).await;
    let flash = secret.map_err(PageError::from).map(|secret| Flash::Secret {
        what: "webhook secret",
        value: secret,
        note: "Give it to your webhook receivers: deliveries from now on are signed with it."
            .into(),
    });
    answer(&state, &session, flash).await
}

/// `POST /settings/time-zone`: the zone the user's times are shown in, through
/// `PUT /user/settings`'s code; the page answering it already shows times in the new zone.
pub async fn time_zone(
    State(state): State<Ctx>,
    SignedInForm { session, form }: SignedInForm<SettingsForm>,
) -> Response {
    let mut session = session;
    match user_settings::set_time_zone(&state, &session.user, form.time_zone.as_deref()).await {
        Ok(settings) => {
            session.zone = settings.time_zone;
            let flash = Flash::Done(format!(
                "Times are now shown in {}.",
                settings.time_zone.name()
            ));
            answer(&state, &session, Ok(flash)).await
        }
        Err(err @ crate::ops::OpError::Invalid { .. }) => {
            let errors = FieldErrors {
                time_zone: Some(format!("The time zone {}.", err.first_message())),
                ..FieldErrors::default()
            };
            refused(&state, &session, errors).await
        }
        Err(err) => pages::from_op(err, Some(&session)),
    }
}

/// `POST /settings/api-key`: a new API key (the old one stops working), shown once.
pub async fn api_key(
    State(state): State<Ctx>,
    SignedInForm { session, form: _ }: SignedInForm<SettingsForm>,
) -> Response {
    let key = account::rotate_api_key(&state, &session.user).await;
    let flash = key.map_err(PageError::from).map(|key| Flash::Secret {
        what: "API key",
        value: key,
        note: format!(
            "Sign in with user id {} and this key. The old key no longer works; tokens already issued do until they expire.",
            session.user
        ),
    });
    answer(&state, &session, flash).await
}

/// `POST /settings/password`: through the operation `PUT /user/password` calls (the current password is
/// checked as a login, with its limits); this session stays, the others end.
pub async fn password(
    State(state): State<Ctx>,
    connect: ConnectInfo<SocketAddr>,
    SignedInForm { session, form }: SignedInForm<SettingsForm>,
) -> Response {
    let current = account::Authenticated {
        user: session.user.clone(),
        token_hash: session.token_hash.clone(),
    };
    match account::change_password(
        &state,
        &current,
        connect.0.ip(),
        &form.current_password,
        &form.new_password,
    )
    .await
    .map_err(PageError::from)
    {
        Ok(_) => {
            let flash = Flash::Done(
                "Your password was changed. Your other sessions and tokens have ended.".into(),
            );
            answer(&state, &session, Ok(flash)).await
        }
        Err(PageError::BadRequest { detail, errors }) => {
            let first = |field: &str| errors.get(field).and_then(|m| m.first()).cloned();
            let mut field_errors = FieldErrors {
                current_password: first("currentPassword").map(|m| match m.as_str() {
                    "is required" => "Enter your current password.".to_string(),
                    "is not the account's password" => {
                        "This is not your current password.".to_string()
                    }
                    other => format!("The current password {other}."),
                }),
                new_password: first("newPassword").map(|m| match m.as_str() {
                    "is required" => "Enter a new password.".to_string(),
                    other => format!("The new password {other}."),
                }),
                ..FieldErrors::default()
            };
            if field_errors.current_password.is_none() && field_errors.new_password.is_none() {
                field_errors.new_password = Some(detail);
            }
            refused(&state, &session, field_errors).await
        }
        Err(err) => pages::from_error(err, Some(&session)),
    }
}

/// `POST /settings/sign-out-everywhere`: `invalidateTokens`' code ends every token and session
/// of the user, this one too; the cookie goes and the browser is at the sign-in page.
pub async fn sign_out_everywhere(
    State(state): State<Ctx>,
    headers: HeaderMap,
    SignedInForm { session, form: _ }: SignedInForm<SettingsForm>,
) -> Response {
    if let Err(err) = account::invalidate_tokens(&state, &session.user).await {
        return pages::from_op(err, Some(&session));
    }
    let settings = &state.settings().web;
    let mut response = Redirect::to("/signin").into_response();
    if let Ok(cookie) =
        HeaderValue::from_str(&session::clear_cookie(session::secure(&headers, settings)))
    {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    response
}

/// `POST /settings/feeds`: creates the feed of the chosen target, or renews its secret; its
/// URL is shown once.
pub async fn create_feed(
    State(state): State<Ctx>,
    headers: HeaderMap,
    SignedInForm { session, form }: SignedInForm<SettingsForm>,
) -> Response {
    let target = form.target.as_deref().unwrap_or("");
    let (scope, id) = target.split_once(':').unwrap_or((target, ""));
    let scope = match feeds::scope(Some(scope), Some(id.to_string())) {
        Ok(scope) => scope,
        Err(_) => {
            return pages::bad_input(StatusCode::BAD_REQUEST, "Choose what the feed follows.");
        }
    };
    let base = crate::origin::base_url(&headers, &state.settings().web);
    let renewed = feeds::renew(&state, &session.user, &scope, &base).await;
    let flash = renewed.map_err(PageError::from).map(|(feed, url)| Flash::Secret {
        what: FEED_ADDRESS,
        value: url,
        note: format!(
            "Paste it into your feed reader to follow the changes of {}. Anyone with the address can read the feed.",
            feed_label(&feed)
        ),
    });
    answer(&state, &session, flash).await
}

/// `POST /settings/feeds/{id}/delete`: the feed's address stops working.
pub async fn delete_feed(
    State(state): State<Ctx>,
    Path(id): Path<String>,
    SignedInForm { session, form: _ }: SignedInForm<SettingsForm>,
) -> Response {
    match feeds::delete(&state, &session.user, &id).await {
        // A second submit finds it gone: the list is what was asked for either way.
        Ok(()) | Err(crate::ops::OpError::NotFound) => {
            Redirect::to("/settings#feeds").into_response()
        }
        Err(err) => pages::from_op(err, Some(&session)),
    }
}
