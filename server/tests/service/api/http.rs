//! HTTP conventions: request and response media types, body limit, problem+json for every
//! error class (unknown path, wrong method, a panicking handler).

use crate::{Api, monitor};
use axum::routing::get;
use serde_json::json;

const TASK: &str = "/thirdparty/v1/task";

both!(the_four_json_media_types_are_accepted_and_others_are_415);
async fn the_four_json_media_types_are_accepted_and_others_are_415() {
    let api = Api::start().await;
    let user = api.user("ann@example.com").await;
    let body = monitor("tea", "https://example.com/").to_string();
    let put = |content_type: Option<&str>| {
        let mut request = api
            .client()
            .put(api.url(TASK))
            .header("authorization", format!("bearer {}", user.token))
            .body(body.clone());
        if let Some(ct) = content_type {
            request = request.header("content-type", ct);
        }
        request
    };
    for ok in [
        "application/json",
        "application/json; charset=utf-8",
        "application/json-patch+json",
        "text/json",
        "application/vnd.wachet+json",
    ] {
        api.raw(put(Some(ok))).await.ok();
    }
    for bad in [
        Some("text/plain"),
        Some("application/xml"),
        Some("application/x-www-form-urlencoded"),
        None,
    ] {
        api.raw(put(bad)).await.problem(415);
    }
    let empty = api
        .client()
        .put(api.url(TASK))
        .header("authorization", format!("bearer {}", user.token))
        .header("content-type", "application/json");
    api.raw(empty).await.field_error(".", "empty");
}

both!(responses_are_json_or_the_text_type_the_client_prefers);
async fn responses_are_json_or_the_text_type_the_client_prefers() {
    let api = Api::start().await;
    let user = api.user("bob@example.com").await;
    let list = api.url("/thirdparty/v1/folder/list");
    for (accept, expected) in [
        (None, "application/json"),
        (Some("application/json"), "application/json"),
        (Some("*/*"), "application/json"),
        (Some("text/json"), "text/json"),
        (Some("text/plain"), "text/plain"),
        (
            Some("text/plain;q=0.5, application/json"),
            "application/json",
        ),
    ] {
        let mut request = api
            .client()
            .get(&list)
            .header("authorization", format!("bearer {}", user.token));
        if let Some(accept) = accept {
            request = request.header("accept", accept);
        }
        let reply = api.raw(request).await;
        reply.ok();
        assert_eq!(reply.content_type(), expected, "{accept:?}");
        assert!(
            reply.body["subfolders"].is_array(),
            "the body is the same JSON"
        );
    }
    // Errors stay problem+json whatever the client asks for.
    let request = api.client().get(&list).header("accept", "text/plain");
    api.raw(request).await.problem(401);
}

both!(bodies_over_1_mib_are_413);
async fn bodies_over_1_mib_are_413() {
    let api = Api::start().await;
    let user = api.user("cy@example.com").await;
    let mut body = monitor("big", "https://example.com/");
    body["note"] = json!("n".repeat(1024 * 1024));
    api.put(&user, TASK, body).await.problem(413);
    // Just under the limit, the service's own rules answer (the note is too long).
    let mut body = monitor("big", "https://example.com/");
    body["note"] = json!("n".repeat(1000 * 1000));
    api.put(&user, TASK, body).await.field_error("note", "4096");
}

both!(unknown_paths_and_wrong_methods_are_problems);
async fn unknown_paths_and_wrong_methods_are_problems() {
    let api = Api::start().await;
    let user = api.user("dee@example.com").await;
    // `/` is the web interface now.
    for path in [
        "/thirdparty/v2/task",
        "/thirdparty/v1/taskz",
        "/thirdparty/v1/task/a/b/c",
    ] {
        let reply = api.get(&user, path).await;
        reply.problem(404);
    }
    // The bulk form only creates.
    let reply = api.get(&user, "/thirdparty/v1/tasks").await;
    reply.problem(405);
    assert_eq!(reply.headers["allow"], "PUT");
    let reply = api
        .send(reqwest::Method::PATCH, TASK, Some(&user.token), None)
        .await;
    reply.problem(405);
    assert_eq!(reply.headers["allow"], "PUT");
    api.send(
        reqwest::Method::POST,
        "/thirdparty/v1/user/login",
        None,
        None,
    )
    .await
    .problem(415);
    api.send(
        reqwest::Method::GET,
        "/thirdparty/v1/user/login",
        None,
        None,
    )
    .await
    .problem(405);
}

async fn boom() -> &'static str {
    panic!("secret detail: password=hunter2")
}

both!(a_panicking_handler_is_a_500_problem_that_leaks_nothing);
async fn a_panicking_handler_is_a_500_problem_that_leaks_nothing() {
    // The same layers as every API route, around a handler that panics.
    let router = wachet_server::api::with_layers(
        axum::Router::new()
            .route("/boom", get(boom))
            .route("/fine", get(|| async { "fine" })),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(1)
        .build()
        .unwrap();
    let reply = client
        .get(format!("http://{addr}/boom"))
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 500);
    assert_eq!(reply.headers()["content-type"], "application/problem+json");
    let text = reply.text().await.unwrap();
    assert!(
        !text.contains("hunter2") && !text.contains("secret"),
        "{text}"
    );
    let problem: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(problem["status"], 500);
    // The connection was not dropped: the next request on it is answered.
    let fine = client
        .get(format!("http://{addr}/fine"))
        .send()
        .await
        .unwrap();
    assert_eq!(fine.text().await.unwrap(), "fine");
}
