//! The OpenAPI 3.1 document, generated from the handlers' own annotations (so it cannot drift
//! from the routes), served at `/thirdparty/v1/openapi.json`, and Swagger UI at
//! `/thirdparty/v1/docs`, served from inside the binary.

use super::{AppState, auth, data, folders, notifications, tasks, user};
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
                       `GET`/`POST /user/notificationEndpoints/test`, `GET`/`POST /user/feeds`, \
                       `DELETE /user/feeds/{feedId}`. Extension fields of a monitor: \
                       `errorAfterFailures`; `noise` (noise masks: learned ones are kept when \
                       a PUT leaves them out, switch one off with `active: false`; `learned` \
                       and `example` are read-only), `compareLines` and the read-only \
                       `noiseNotice` (issue 19: learned noise).",
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
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(auth::login))
        .routes(routes!(auth::api_login))
        .routes(routes!(auth::invalidate_tokens))
        .routes(routes!(auth::rotate_api_key))
        .routes(routes!(auth::change_password))
        .routes(routes!(user::get_endpoints, user::put_endpoints))
        .routes(routes!(user::confirm_address))
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
}

/// The document (as JSON) and Swagger UI, which loads it.
pub fn docs_routes(mut document: utoipa::openapi::OpenApi) -> Router<AppState> {
    read_only(&mut document);
    utoipa_swagger_ui::SwaggerUi::new(DOCS_PATH)
        .url(OPENAPI_PATH, document)
        .into()
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
