//! The service as one whole ([`wachet_server::service::start`]): the parts a test starts are
//! the parts that run, and a shutdown lets the checks in flight finish and store what they
//! found, within the grace and no longer; deliveries alike.

use crate::{Api, Setup, id};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use wachet::testing::{FixtureServer, Reply};
use wachet_server::service::SHUTDOWN_GRACE;

/// A site whose `/slow` answers after `delay`.
async fn slow_site(delay: Duration) -> FixtureServer {
    FixtureServer::builder()
        .reply("/slow", Reply::html("<p>A</p>").delay(delay))
        .start()
        .await
        .unwrap()
}

/// Waits until `site` has been asked for `/slow` (10 s at most).
async fn asked(site: &FixtureServer) {
    for _ in 0..100 {
        if site.hits("/slow") > 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the monitor was never checked");
}

both!(the_api_alone_checks_nothing, multi_thread);
async fn the_api_alone_checks_nothing() {
    let site = slow_site(Duration::ZERO).await;
    let api = Api::start_as(Setup::api()).await;
    let user = api.user("ann@example.com").await;
    let body = json!({"url": site.url("/slow"), "recurrenceInSeconds": 60});
    api.task(&user, body).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(site.hits("/slow"), 0);
}

both!(
    a_shutdown_lets_the_check_in_flight_finish_and_store_it,
    multi_thread
);
async fn a_shutdown_lets_the_check_in_flight_finish_and_store_it() {
    let site = slow_site(Duration::from_millis(1500)).await;
    let mut setup = Setup::checking();
    // One fetch: the quick samples a new monitor takes would each wait as long again.
    setup.service.schedule.noise_samples = 0;
    let api = Api::start_as(setup).await;
    let user = api.user("ann@example.com").await;
    let body = json!({"url": site.url("/slow"), "xPath": "//p", "recurrenceInSeconds": 3600});
    let task = id(&api.task(&user, body).await);
    asked(&site).await;
    let began = Instant::now();
    let database = api.shutdown().await;
    let took = began.elapsed();
    assert!(took < SHUTDOWN_GRACE, "{took:?}");

    // Stored before the shutdown ended: the service on the same database (the API alone,
    // which checks nothing) shows it.
    let api = Api::start_in(database, Setup::api()).await;
    let path = format!("/thirdparty/v1/data/list/{task}");
    let data = api.get(&user, &path).await.ok()["data"].clone();
    let raws: Vec<&Value> = data.as_array().unwrap().iter().map(|e| &e["raw"]).collect();
    assert_eq!(raws, [&json!("A")]);
}

both!(
    a_shutdown_waits_for_a_hanging_check_no_longer_than_the_grace,
    multi_thread
);
async fn a_shutdown_waits_for_a_hanging_check_no_longer_than_the_grace() {
    let site = slow_site(Duration::from_secs(60)).await;
    let api = Api::start_checking().await;
    let user = api.user("ann@example.com").await;
    let body = json!({"url": site.url("/slow"), "recurrenceInSeconds": 3600});
    api.task(&user, body).await;
    asked(&site).await;
    let began = Instant::now();
    api.shutdown().await;
    let took = began.elapsed();
    assert!(
        took >= SHUTDOWN_GRACE - Duration::from_millis(100) && took < SHUTDOWN_GRACE * 2,
        "{took:?}"
    );
}

both!(
    a_shutdown_lets_the_delivery_in_flight_finish_and_store_it,
    multi_thread
);
async fn a_shutdown_lets_the_delivery_in_flight_finish_and_store_it() {
    let hook = FixtureServer::builder()
        .reply("/hook", Reply::new(200).delay(Duration::from_millis(1500)))
        .start()
        .await
        .unwrap();
    let api = Api::start_checking().await;
    let user = api.user("ann@example.com").await;
    let endpoints =
        json!({"notificationEndpoints": [{"type": "Webhook", "value": hook.url("/hook")}]});
    api.put(
        &user,
        "/thirdparty/v1/user/notificationEndpoints",
        endpoints,
    )
    .await
    .ok();
    let test = "/thirdparty/v1/user/notificationEndpoints/test";
    api.post(&user, test, json!({"value": hook.url("/hook")}))
        .await
        .ok();
    for _ in 0..100 {
        if hook.hits("/hook") > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let database = api.shutdown().await;

    let api = Api::start_in(database, Setup::api()).await;
    let listed = api.get(&user, test).await.ok().clone();
    let states: Vec<&Value> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|d| &d["state"])
        .collect();
    assert_eq!(states, [&json!("delivered")], "{listed}");
    assert_eq!(hook.hits("/hook"), 1);
}
