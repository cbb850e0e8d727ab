//! The OpenAPI 3.1 document, generated from the handlers' own annotations (so it cannot drift
//! from the routes), served at `/thirdparty/v1/openapi.json`, and Swagger UI at
//! `/thirdparty/v1/docs`, served from inside the binary.

use super::{auth, data, folders, notifications, tasks, transfer, user};
use crate::ops::Ctx;
use axum::Router;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// Where the document is served.
pub const OPENAPI_PATH: &str = "/thirdparty/v1/openapi.json";
/// Where Swagger UI is served.
pub const DOCS_PATH: &str = "/thirdparty/v1/docs";

#[derive(OpenApi)]
#[openapi(
    info(
        title = "wachet",
        description = "The REST API of a web page monitoring service (paths under \
                       /thirdparty/v1). Errors are application/problem+json (RFC 9457). \
                       Enumerations accept a name in any case or the integer and answer with \
                       the name. Extensions: `GET`/`PUT /user/notificationEndpoints`, \
                       `POST /user/notificationEndpoints/confirm`, `POST /user/apiKey`, \
                       `POST /user/webhookSecret`, `PUT /user/password`, \
                       `GET /notification/{alertId}/deliveries`, \
                       `POST /notification/{alertId}/deliveries/{deliveryId}/retry`, \
                       `GET`/`POST /user/notificationEndpoints/test`, \
                       `POST /user/notificationEndpoints/preview`, `GET`/`POST /user/feeds`, \
                       `DELETE /user/feeds/{feedId}`, `GET`/`PUT /user/settings` (the time zone), `POST /import`, `GET /export`. Extension fields of a monitor: \
                       `errorAfterFailures`; `muted` (notifications kept, sent nowhere); an alert's `remindEverySeconds` (Error alerts: a \
                       reminder that often while the monitor keeps failing) and the alert type \
                       `Unchanged` (11: the value has not changed for `value` seconds); `noise` (noise masks: learned ones are kept when \
                       a PUT leaves them out, switch one off with `active: false`; `learned` \
                       and `example` are read-only), `compareLines` and the read-only \
                       `noiseNotice` (what wachet found about a value's noise); `steps` (browser steps run \
                       on the rendered page before its value is taken) and `login` \
                       (`{\"steps\": [...], \"loggedInWhen\": SELECTOR}`, run only when the \
                       kept session no longer signs in); a step marked `secret` reads back \
                       without its `value`, and a PUT without it keeps the stored one; a \
                       history entry of a check that signed in again has `loggedIn: true`. \
                       Extension field of a folder: `notificationEndpoints` (inherited by the \
                       monitors inside that name none of their own). Requests are \
                       JSON sent as application/json, application/json-patch+json, text/json \
                       or any application/*+json; answers are application/json, or text/json \
                       or text/plain when the Accept header prefers them. Query date-times \
                       (`from`, `to`) are ISO 8601: `Z`, an offset or none (UTC), 0 to 9 \
                       fractional digits, or a bare date (midnight UTC); query booleans are \
                       `true`/`false` in any case, or `1`/`0`.",
    ),
    modifiers(&BearerScheme),
    components(schemas(super::problem::Problem)),
    tags(
        (name = "user", description = "Logins, tokens and notification settings"),
        (name = "task", description = "Monitors"),
        (name = "folder", description = "Folders"),
        (name = "data", description = "History"),
        (name = "notification", description = "Raised notifications"),
    )
)]
struct ApiDoc;

/// Adds the bearer scheme the secured operations name.
struct BearerScheme;

impl Modify for BearerScheme {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "A token from /user/login or /user/apilogin, sent as \
                         `Authorization: bearer <token>`",
                    ))
                    .build(),
            ),
        );
    }
}

/// Every endpoint of the API with its documentation.
pub fn routes() -> OpenApiRouter<Ctx> {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(auth::login))
        .routes(routes!(auth::api_login))
        .routes(routes!(auth::invalidate_tokens))
        .routes(routes!(auth::rotate_api_key))
        .routes(routes!(auth::change_password))
        .routes(routes!(user::get_endpoints, user::put_endpoints))
        .routes(routes!(user::get_settings, user::put_settings))
        .routes(routes!(user::confirm_address))
        .routes(routes!(user::preview_endpoint))
        .routes(routes!(user::rotate_webhook_secret))
        .routes(routes!(user::test_endpoint, user::test_deliveries))
        .routes(routes!(user::list_feeds, user::create_feed))
        .routes(routes!(user::delete_feed))
        .routes(routes!(notifications::list_notifications))
        .routes(routes!(notifications::get_notification))
        .routes(routes!(notifications::notification_deliveries))
        .routes(routes!(notifications::retry_delivery))
        .routes(routes!(data::list_data))
        .routes(routes!(folders::list_folder))
        .routes(routes!(folders::delete_folder))
        .routes(routes!(folders::save_folder))
        .routes(routes!(folders::move_items))
        .routes(routes!(tasks::put_task))
        .routes(routes!(tasks::put_tasks))
        .routes(routes!(tasks::get_task, tasks::delete_task))
        .routes(routes!(tasks::search_tasks))
        .routes(routes!(tasks::task_pages))
        .routes(routes!(transfer::import))
        .routes(routes!(transfer::export))
}

/// The document (as JSON) and Swagger UI, which loads it.
pub fn docs_routes(mut document: utoipa::openapi::OpenApi) -> Router<Ctx> {
    read_only(&mut document);
    delivered_kinds(&mut document);
    media_types(&mut document);
    date_times(&mut document);
    utoipa_swagger_ui::SwaggerUi::new(DOCS_PATH)
        .url(OPENAPI_PATH, document)
        .into()
}

/// The request media types the service reads a JSON body from ([`super::body`]).
pub const REQUEST_TYPES: [&str; 4] = [
    "application/json",
    "application/json-patch+json",
    "text/json",
    "application/*+json",
];
/// The media types it answers JSON with, as the Accept header prefers.
pub const RESPONSE_TYPES: [&str; 3] = ["application/json", "text/json", "text/plain"];

/// Every operation of the document.
fn operations(
    document: &mut utoipa::openapi::OpenApi,
) -> impl Iterator<Item = &mut utoipa::openapi::path::Operation> {
    document.paths.paths.values_mut().flat_map(|item| {
        [
            item.get.as_mut(),
            item.put.as_mut(),
            item.post.as_mut(),
            item.delete.as_mut(),
            item.patch.as_mut(),
        ]
        .into_iter()
        .flatten()
    })
}

/// Lists, beside `application/json`, the other request media types a JSON body is read from
/// and the other types a JSON answer is offered in, with the same schema (the handlers'
/// annotations name `application/json` only).
fn media_types(document: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::RefOr;
    for operation in operations(document) {
        if let Some(RefOr::T(body)) = operation.request_body.as_mut()
            && let Some(json) = body.content.get(REQUEST_TYPES[0]).cloned()
        {
            for kind in &REQUEST_TYPES[1..] {
                body.content.insert(kind.to_string(), json.clone());
            }
        }
        for response in operation.responses.responses.values_mut() {
            if let RefOr::T(response) = response
                && let Some(json) = response.content.get(RESPONSE_TYPES[0]).cloned()
            {
                for kind in &RESPONSE_TYPES[1..] {
                    response.content.insert(kind.to_string(), json.clone());
                }
            }
        }
    }
}

/// Types the query parameters `from` and `to` as ISO 8601 date-times (the handlers read them
/// as text, to name the parameter in a 400).
fn date_times(document: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::path::ParameterIn;
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    use utoipa::openapi::{KnownFormat, RefOr, SchemaFormat};
    for operation in operations(document) {
        for parameter in operation.parameters.iter_mut().flatten() {
            if let RefOr::T(parameter) = parameter
                && parameter.parameter_in == ParameterIn::Query
                && matches!(parameter.name.as_str(), "from" | "to")
            {
                parameter.schema = Some(
                    ObjectBuilder::new()
                        .schema_type(Type::String)
                        .format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime)))
                        .into(),
                );
            }
        }
    }
}

/// Says in NotificationEndpoint's description which kinds this server delivers to and which
/// notification URLs it reads, as its channels list them ([`crate::notify::channel`]).
fn delivered_kinds(document: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::{RefOr, Schema};
    let Some(components) = document.components.as_mut() else {
        return;
    };
    if let Some(RefOr::T(Schema::Object(object))) =
        components.schemas.get_mut("NotificationEndpoint")
    {
        let said = object.description.clone().unwrap_or_default();
        object.description = Some(format!(
            "{said} This server delivers to: {}; other kinds are refused. A Url endpoint's \
             value is a notification URL in Apprise's syntax with one of the schemes {}; its \
             secret parts are sealed when it is saved (shown as sealed~...; give the value \
             back as shown to keep them). Extension fields: `title` and `body`, templates \
             (minijinja, at most {} characters each) with the tokens the guide lists (`monitor.name`, \
             `change.diff`, `links.change`, `alert.type`, `time`, ...), checked when saved (400 \
             at the field, naming the line); `format` (`text`, `markdown`, `html`: what the \
             templates write, by default the channel's own); `digest` (`{{\"everyMinutes\": \
             N}}` or `{{\"dailyAt\": \"HH:MM\"}}`) and `quietHours` (`{{\"from\": \"HH:MM\", \
             \"to\": \"HH:MM\"}}`), in the user's time zone.",
            crate::notify::channel::offered_list(),
            crate::notify::channel::url::schemes()
                .map(|s| format!("{s}://"))
                .collect::<Vec<_>>()
                .join(", "),
            crate::notify::template::MAX_TEMPLATE_CHARS,
        ));
    }
}

/// Marks the fields the service fills and ignores on input as `readOnly` (the schemas come
/// from the model's derive, which knows nothing of what the service writes).
fn read_only(document: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::{RefOr, Schema};
    const FIELDS: &[(&str, &str)] = &[
        ("Monitor", "noiseNotice"),
        ("NoiseMask", "learned"),
        ("NoiseMask", "example"),
    ];
    let Some(components) = document.components.as_mut() else {
        return;
    };
    for (schema, field) in FIELDS {
        if let Some(RefOr::T(Schema::Object(object))) = components.schemas.get_mut(*schema)
            && let Some(RefOr::T(Schema::Object(property))) = object.properties.get_mut(*field)
        {
            property.read_only = Some(true);
        }
    }
}
