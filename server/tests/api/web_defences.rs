//! Defences of the web interface against a browser led by another site and against one user
//! crowding out others: the `Host` names answered, session cookies that cannot be tossed, the
//! picker's inert copy, and the per-user bounds on picker evaluations, difference pages, feeds
//! and browser tabs.

use super::Api;
use super::web::{PASSWORD, client, sign_in};
use serde_json::json;
use wachet_server::api::{ApiSettings, LimitSettings};
use wachet_server::web::WebSettings;

/// A request to `path` naming `host` in its `Host` header.
async fn with_host(
    api: &Api,
    method: reqwest::Method,
    path: &str,
    host: &str,
) -> reqwest::Response {
    client()
        .request(method, api.url(path))
        .header("host", host)
        .send()
        .await
        .unwrap()
}

both!(a_rebound_host_is_answered_421_before_any_route);
async fn a_rebound_host_is_answered_421_before_any_route() {
    let api = Api::start_with(ApiSettings {
        limits: LimitSettings {
            login_failures_per_minute: 2,
            network_login_failures_per_minute: 3,
            ..LimitSettings::default()
        },
        ..ApiSettings::default()
    })
    .await;
    let user = api.user("owner@example.com").await;
    let port = api.url("").rsplit(':').next().unwrap().to_string();
    let get = reqwest::Method::GET;
    // A page of another site whose name was rebound to 127.0.0.1: every route refuses it, the
    // metrics and the API included, whatever the spelling of the name.
    for host in [
        format!("attacker.example:{port}"),
        "attacker.example".to_string(),
        format!("ATTACKER.example.:{port}"),
        format!("localhost.attacker.example:{port}"),
        format!("[2001:db8::1]:{port}"),
        format!("10.0.0.1:{port}"),
    ] {
        for path in [
            "/signin",
            "/metrics",
            "/",
            "/thirdparty/v1/task",
            "/assets/app.css",
        ] {
            let answer = with_host(&api, get.clone(), path, &host).await;
            assert_eq!(answer.status(), 421, "{host} {path}");
            let text = answer.text().await.unwrap();
            assert!(text.contains("does not answer to that Host"), "{text}");
        }
    }
    // Host names that are no names get 400 or 421, never a page.
    for host in ["127.0.0.1:port", "::1", "a b", "[::1", ""] {
        let status = with_host(&api, get.clone(), "/metrics", host)
            .await
            .status();
        assert!(matches!(status.as_u16(), 400 | 421), "{host:?}: {status}");
    }
    // Failed logins through the rebound name never reach the login, so they cannot block the
    // owner, who signs in from the same network afterwards.
    for _ in 0..10 {
        let answer = client()
            .post(api.url("/thirdparty/v1/user/login"))
            .header("host", "attacker.example")
            .json(&json!({"email": user.account.email, "password": "guess"}))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 421);
        let form = client()
            .post(api.url("/signin"))
            .header("host", format!("attacker.example:{port}"))
            .form(&[
                ("email", user.account.email.as_str()),
                ("password", "guess"),
            ])
            .send()
            .await
            .unwrap();
        assert_eq!(form.status(), 421);
    }
    assert_eq!(
        sign_in(&api, &user.account.email, PASSWORD).await.status(),
        303
    );
    // The service's own names, spelled as browsers and tools do.
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("LocalHost.:{port}"),
        format!("[::1]:{port}"),
        "127.0.0.2".to_string(),
    ] {
        let answer = with_host(&api, get.clone(), "/metrics", &host).await;
        assert_eq!(answer.status(), 200, "{host}");
    }
}

both!(the_public_url_and_allowed_hosts_are_answered);
async fn the_public_url_and_allowed_hosts_are_answered() {
    let api = Api::start_with(ApiSettings {
        web: WebSettings {
            public_url: Some("https://watch.example.com".into()),
            ..WebSettings::default()
        },
        allowed_hosts: vec!["intranet.corp".into()],
        ..ApiSettings::default()
    })
    .await;
    let get = reqwest::Method::GET;
    for host in [
        "watch.example.com",
        "Watch.Example.COM.:443",
        "intranet.corp:8080",
    ] {
        let answer = with_host(&api, get.clone(), "/signin", host).await;
        assert_eq!(answer.status(), 200, "{host}");
    }
    for host in [
        "example.com",
        "other.corp",
        "watch.example.com.attacker.example",
    ] {
        let answer = with_host(&api, get.clone(), "/signin", host).await;
        assert_eq!(answer.status(), 421, "{host}");
    }
}
