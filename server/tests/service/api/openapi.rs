//! The OpenAPI document matches the router both ways, and Swagger UI lists the operations in a
//! real headless Chromium.

use crate::Api;
use reqwest::Method;
use serde_json::Value;
use std::collections::BTreeSet;

/// The 15 endpoints of the specification and the extensions (DECISIONS.md's, and the account
/// ones: confirmation of e-mail addresses and rotation of secrets).
const ENDPOINTS: [(&str, &str); 34] = [
    ("post", "/thirdparty/v1/user/login"),
    ("post", "/thirdparty/v1/user/apilogin"),
    ("post", "/thirdparty/v1/user/invalidateTokens"),
    ("get", "/thirdparty/v1/notification/list"),
    ("get", "/thirdparty/v1/notification/{alertId}"),
    ("get", "/thirdparty/v1/notification/{alertId}/deliveries"),
    (
        "post",
        "/thirdparty/v1/notification/{alertId}/deliveries/{deliveryId}/retry",
    ),
    ("get", "/thirdparty/v1/data/list/{id}"),
    ("get", "/thirdparty/v1/folder/list"),
    ("delete", "/thirdparty/v1/folder/{id}"),
    ("post", "/thirdparty/v1/folder"),
    ("post", "/thirdparty/v1/folder/move"),
    ("put", "/thirdparty/v1/task"),
    ("put", "/thirdparty/v1/tasks"),
    ("get", "/thirdparty/v1/task/{id}"),
    ("delete", "/thirdparty/v1/task/{id}"),
    ("get", "/thirdparty/v1/task/search"),
    ("get", "/thirdparty/v1/task/{id}/pages"),
    ("get", "/thirdparty/v1/user/notificationEndpoints"),
    ("put", "/thirdparty/v1/user/notificationEndpoints"),
    ("post", "/thirdparty/v1/user/notificationEndpoints/confirm"),
    ("post", "/thirdparty/v1/user/apiKey"),
    ("post", "/thirdparty/v1/user/webhookSecret"),
    ("put", "/thirdparty/v1/user/password"),
    ("get", "/thirdparty/v1/user/settings"),
    ("put", "/thirdparty/v1/user/settings"),
    ("get", "/thirdparty/v1/user/notificationEndpoints/test"),
    ("post", "/thirdparty/v1/user/notificationEndpoints/test"),
    ("post", "/thirdparty/v1/user/notificationEndpoints/preview"),
    ("get", "/thirdparty/v1/user/feeds"),
    ("post", "/thirdparty/v1/user/feeds"),
    ("delete", "/thirdparty/v1/user/feeds/{feedId}"),
    ("post", "/thirdparty/v1/import"),
    ("get", "/thirdparty/v1/export"),
];

/// The extensions among them: each says so first in its description.
const EXTENSIONS: [&str; 15] = [
    "/thirdparty/v1/import",
    "/thirdparty/v1/export",
    "/thirdparty/v1/tasks",
    "/thirdparty/v1/notification/{alertId}/deliveries",
    "/thirdparty/v1/notification/{alertId}/deliveries/{deliveryId}/retry",
    "/thirdparty/v1/user/notificationEndpoints/test",
    "/thirdparty/v1/user/notificationEndpoints/preview",
    "/thirdparty/v1/user/feeds",
    "/thirdparty/v1/user/feeds/{feedId}",
    "/thirdparty/v1/user/notificationEndpoints",
    "/thirdparty/v1/user/notificationEndpoints/confirm",
    "/thirdparty/v1/user/apiKey",
    "/thirdparty/v1/user/webhookSecret",
    "/thirdparty/v1/user/password",
    "/thirdparty/v1/user/settings",
];

const METHODS: [&str; 5] = ["get", "put", "post", "delete", "patch"];

async fn document(api: &Api) -> Value {
    let reply = api
        .send(Method::GET, "/thirdparty/v1/openapi.json", None, None)
        .await;
    reply.ok().clone()
}

both!(the_document_lists_exactly_the_routes_the_router_serves);
async fn the_document_lists_exactly_the_routes_the_router_serves() {
    let api = Api::start().await;
    let user = api.user("ann@example.com").await;
    let doc = document(&api).await;
    assert_eq!(doc["openapi"], "3.1.0");
    let mut documented = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in METHODS {
            if let Some(operation) = item.get(method) {
                documented.insert((method.to_string(), path.clone()));
                if EXTENSIONS.contains(&path.as_str()) {
                    let description = operation["description"].as_str().unwrap_or("");
                    assert!(
                        description.starts_with("Extension:"),
                        "{method} {path}: {description:?}"
                    );
                }
                let responses = operation["responses"].as_object().unwrap();
                assert!(responses.contains_key("200"), "{method} {path}");
                let secured = !path.ends_with("login");
                if secured {
                    assert_eq!(
                        operation["security"][0]["bearer"],
                        serde_json::json!([]),
                        "{method} {path}"
                    );
                    let unauthorized = &responses["401"]["content"]["application/problem+json"];
                    assert!(
                        unauthorized.is_object(),
                        "{method} {path} documents its 401 problem"
                    );
                }
            }
        }
    }
    let expected: BTreeSet<(String, String)> = ENDPOINTS
        .iter()
        .map(|(m, p)| (m.to_string(), p.to_string()))
        .collect();
    assert_eq!(documented, expected);

    // The router serves every documented operation and answers 405 to every other method.
    let any_id = "01a208a4-0000-7000-8000-000000000000";
    let paths: BTreeSet<&String> = documented.iter().map(|(_, p)| p).collect();
    for path in paths {
        let concrete = path.replace("{id}", any_id).replace("{alertId}", any_id);
        for method in METHODS {
            let verb = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let reply = api.send(verb, &concrete, Some(&user.token), None).await;
            if documented.contains(&(method.to_string(), path.clone())) {
                assert_ne!(
                    reply.status, 405,
                    "{method} {path} is documented but not served"
                );
                assert_ne!(reply.body["detail"], "no such path", "{method} {path}");
                if !path.ends_with("login") {
                    let verb = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
                    let anonymous = api.send(verb, &concrete, None, None).await;
                    assert_eq!(anonymous.status, 401, "{method} {path} without a token");
                }
            } else {
                assert_eq!(
                    reply.status, 405,
                    "{method} {path} is served but not documented: {}",
                    reply.text
                );
            }
        }
    }
    // Paths outside the document are not served.
    for path in [
        "/thirdparty/v1",
        "/thirdparty/v1/user",
        "/thirdparty/v1/data/list",
        "/thirdparty/v1/notification",
    ] {
        let reply = api.get(&user, path).await;
        assert_eq!(reply.status, 404, "{path}");
    }
}

both!(the_document_describes_schemas_enums_bearer_and_problems);
async fn the_document_describes_schemas_enums_bearer_and_problems() {
    let api = Api::start().await;
    let doc = document(&api).await;
    let schemes = &doc["components"]["securitySchemes"]["bearer"];
    assert_eq!(schemes["type"], "http");
    assert_eq!(schemes["scheme"], "bearer");
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    for name in [
        "Monitor",
        "Alert",
        "AlertParameters",
        "ClientData",
        "DiffElement",
        "Folder",
        "ClientFolderContent",
        "ClientNotification",
        "ClientNotificationRange",
        "ClientAlertContentResponse",
        "ClientPage",
        "ClientDataRange",
        "MoveRequest",
        "ClientLoginRequest",
        "ApiLoginRequest",
        "ClientLoginResponse",
        "NotificationEndpoint",
        "UrlFilter",
        "Problem",
        "AlertType",
        "CompareType",
        "MessagingServiceType",
    ] {
        assert!(schemas.contains_key(name), "schema {name} missing");
    }
    let monitor = &schemas["Monitor"]["properties"];
    for field in [
        "xPath",
        "excludeXPath",
        "recurrenceInSeconds",
        "jobType",
        "crawlingDepth",
        "urlFilter",
    ] {
        assert!(monitor.get(field).is_some(), "Monitor.{field}");
    }
    // Enumerations: names (written) and integers (accepted).
    let alert_type = &schemas["AlertType"]["oneOf"];
    assert_eq!(alert_type[0]["enum"][1], "NotEq");
    assert_eq!(alert_type[1]["enum"][10], 10);
    let messaging = schemas["MessagingServiceType"].to_string();
    assert!(
        messaging.contains("Webhook") && messaging.contains("92"),
        "{messaging}"
    );
    assert_eq!(
        schemas["DiffElement"]["properties"]["operation"]["$ref"],
        "#/components/schemas/DiffOperation"
    );
    assert_eq!(
        schemas["DiffOperation"]["enum"],
        serde_json::json!([0, 1, 2])
    );
    let problem = &schemas["Problem"]["properties"];
    for field in ["type", "title", "status", "detail", "errors"] {
        assert!(problem.get(field).is_some(), "Problem.{field}");
    }
}

both!(the_document_lists_media_types_date_times_and_speaks_of_the_product_only);
async fn the_document_lists_media_types_date_times_and_speaks_of_the_product_only() {
    let api = Api::start().await;
    let doc = document(&api).await;
    // "issued" (a token) is the product's word; an issue (or its number) is not.
    let text = doc.to_string();
    let issue = regex::Regex::new(r"(?i)\bissues?\b|#\d{2}\b").unwrap();
    if let Some(found) = issue.find(&text) {
        let from = text[..found.start()]
            .char_indices()
            .rev()
            .nth(150)
            .map_or(0, |(i, _)| i);
        panic!(
            "the document speaks of issues: {}",
            &text[from..found.end()]
        );
    }
    let keys = |value: &Value| -> Vec<String> {
        let mut keys: Vec<String> = value.as_object().unwrap().keys().cloned().collect();
        keys.sort();
        keys
    };
    let requests = [
        "application/*+json",
        "application/json",
        "application/json-patch+json",
        "text/json",
    ];
    let responses = ["application/json", "text/json", "text/plain"];
    let paths = &doc["paths"];
    let mut bodies = 0;
    for (path, item) in paths.as_object().unwrap() {
        for method in METHODS {
            let Some(operation) = item.get(method) else {
                continue;
            };
            // The import takes a file of any of the formats it reads, not JSON.
            if path == "/thirdparty/v1/import" {
                let body = &operation["requestBody"]["content"];
                assert!(body["application/octet-stream"].is_object(), "{body}");
                continue;
            }
            if let Some(body) = operation.get("requestBody") {
                assert_eq!(keys(&body["content"]), requests, "{method} {path}");
                let schemas: Vec<&Value> = requests
                    .iter()
                    .map(|kind| &body["content"][kind]["schema"])
                    .collect();
                assert!(schemas.iter().all(|s| *s == schemas[0]), "{method} {path}");
                bodies += 1;
            }
            if let Some(content) = operation["responses"]["200"].get("content") {
                assert_eq!(keys(content), responses, "{method} {path}");
            }
        }
    }
    assert!(bodies >= 8, "{bodies} request bodies");
    assert_eq!(
        keys(&paths["/thirdparty/v1/task/{id}"]["get"]["responses"]["200"]["content"]),
        responses
    );
    for path in [
        "/thirdparty/v1/data/list/{id}",
        "/thirdparty/v1/notification/list",
    ] {
        for name in ["from", "to"] {
            let parameter = paths[path]["get"]["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["name"] == name)
                .unwrap();
            assert_eq!(parameter["schema"]["type"], "string", "{path} {name}");
            assert_eq!(parameter["schema"]["format"], "date-time", "{path} {name}");
        }
    }
    // What the specification types as never null is no nullable type here.
    let monitor = &doc["components"]["schemas"]["Monitor"]["properties"];
    assert_eq!(
        monitor["crawlingDepth"]["type"], "integer",
        "{}",
        monitor["crawlingDepth"]
    );
    assert_eq!(monitor["crawlingDepth"]["default"], 2);
}

both!(
    swagger_ui_lists_the_operations_in_a_real_browser,
    multi_thread
);
async fn swagger_ui_lists_the_operations_in_a_real_browser() {
    if !wachet::testing::chromium_or_skip() {
        return;
    }
    let api = Api::start().await;
    // The page is rendered by the engine's own browser path, as a dynamicContent monitor would be.
    let engine = wachet::Engine::builder()
        .allow_private_networks(true)
        .build()
        .unwrap();
    let mut monitor = wachet::Monitor::new(api.url("/thirdparty/v1/docs/"));
    monitor.dynamic_content = true;
    monitor.x_path =
        Some("//*[contains(concat(' ', @class, ' '), ' opblock-summary-path ')]".into());
    let outcome = wachet::Checker::check(&engine, &monitor).await.unwrap();
    let listed = outcome
        .value()
        .unwrap_or_else(|| panic!("nothing listed: {:?}", outcome.error()));
    for (_, path) in ENDPOINTS {
        assert!(
            listed.contains(path),
            "{path} not listed in Swagger UI:\n{listed}"
        );
    }
    // Everything it loaded came from the binary itself.
    let ui = api
        .client()
        .get(api.url("/thirdparty/v1/docs/"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!ui.contains("https://"), "no CDN: {ui}");
}
