//! The deliverer's slots shared among receiving hosts: a receiver that hangs holds a few of
//! them until its own time runs out, never all, and a healthy receiver's deliveries go on in
//! the others meanwhile; nothing is lost.

use crate::{Api, Setup, id};
use axum::http::HeaderMap;
use serde_json::json;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use wachet::model::{Alert, AlertType, JobType, MessagingServiceType, NotificationEndpoint};
use wachet_server::notify::deliver::DeliverySettings;
use wachet_server::store::NewNotification;

/// What the receivers saw, in the order they saw it (delivery ids).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Event {
    /// The hanging receiver took a request and holds it.
    Held(String),
    /// It answered one it held (let go, or its own time ran out).
    Answered(String),
    /// The healthy receiver took one.
    Took(String),
}

#[derive(Clone, Default)]
struct Log {
    events: Arc<Mutex<Vec<Event>>>,
    /// Requests the hanging receiver holds now, and the most it ever held at once.
    holding: Arc<Mutex<(usize, usize)>>,
}

impl Log {
    fn push(&self, event: Event) {
        self.events.lock().unwrap().push(event);
    }

    fn events(&self) -> Vec<Event> {
        self.events.lock().unwrap().clone()
    }

    fn count(&self, kind: fn(&Event) -> bool) -> usize {
        self.events().iter().filter(|e| kind(e)).count()
    }

    /// Waits (20 s at most) until `done` holds of the events.
    async fn wait(&self, what: &str, done: impl Fn(&[Event]) -> bool) -> Vec<Event> {
        for _ in 0..200 {
            let events = self.events();
            if done(&events) {
                return events;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("{what} not seen within 20 s: {:?}", self.events());
    }
}

/// The delivery id a request carries.
fn delivery_id(headers: &HeaderMap) -> String {
    headers
        .get("x-wachet-delivery")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string()
}

/// Serves `app` on a port of 127.0.0.1; its webhook URL.
async fn serve(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

/// A receiver that holds every request unanswered until `go` turns true or its own time (60 s)
/// runs out, then answers 200.
async fn hanging(log: &Log, go: watch::Receiver<bool>) -> String {
    let log = log.clone();
    serve(axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: HeaderMap| {
            let (log, mut go) = (log.clone(), go.clone());
            async move {
                let id = delivery_id(&headers);
                {
                    let mut holding = log.holding.lock().unwrap();
                    holding.0 += 1;
                    holding.1 = holding.1.max(holding.0);
                }
                log.push(Event::Held(id.clone()));
                let _ = tokio::time::timeout(Duration::from_secs(60), go.wait_for(|go| *go)).await;
                log.holding.lock().unwrap().0 -= 1;
                log.push(Event::Answered(id));
                "ok"
            }
        }),
    ))
    .await
}

/// A receiver that answers every request 200 at once.
async fn healthy(log: &Log) -> String {
    let log = log.clone();
    serve(axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: HeaderMap| {
            let log = log.clone();
            async move {
                log.push(Event::Took(delivery_id(&headers)));
                "ok"
            }
        }),
    ))
    .await
}

/// Notifications raised with deliveries to both receivers.
const NOTIFICATIONS: usize = 12;
/// The deliverer's slots, and how many of them one host may hold.
const SLOTS: usize = 4;
const PER_HOST: usize = 2;

both!(
    a_hanging_receiver_holds_a_few_slots_and_a_healthy_one_gets_every_delivery_meanwhile,
    multi_thread
);
async fn a_hanging_receiver_holds_a_few_slots_and_a_healthy_one_gets_every_delivery_meanwhile() {
    let log = Log::default();
    let (go, gone) = watch::channel(false);
    let stuck = hanging(&log, gone).await;
    let good = healthy(&log).await;
    let mut setup = Setup::checking();
    setup.service.delivery = DeliverySettings {
        in_flight: SLOTS,
        per_host: PER_HOST,
        // The deliverer never gives up first: the receiver's own time ends its hang.
        attempt_timeout: Duration::from_secs(120),
        first_retry: Duration::from_millis(200),
        ..DeliverySettings::default()
    };
    let api = Api::start_as(setup).await;
    let user = api.user("slots@example.com").await;
    let task = id(&api
        .task(
            &user,
            json!({"name": "Tea", "url": "https://shop.example/", "paused": true}),
        )
        .await);
    // Each notification goes to the hanging receiver first, then the healthy one: without a
    // cap per host the hanging deliveries would take every slot.
    let endpoints = vec![
        NotificationEndpoint::new(MessagingServiceType::Webhook, Some(stuck.clone())),
        NotificationEndpoint::new(MessagingServiceType::Webhook, Some(good.clone())),
    ];
    for n in 0..NOTIFICATIONS {
        api.store
            .insert_notification(&NewNotification {
                task_id: task.clone(),
                page_url: None,
                job_type: JobType::SinglePage,
                alert: Alert {
                    kind: AlertType::NotEq,
                    value: None,
                    parameters: None,
                    remind_every_seconds: None,
                },
                created_at: wachet_server::store::now_millis(),
                current: Some(format!("price {n}")),
                comparand: None,
                error: None,
                url: Some("https://shop.example/".into()),
                synthetic_expression: "content changed".into(),
                html: format!("<p>price {n}</p>"),
                endpoints: endpoints.clone(),
                explanation: None,
            })
            .await
            .unwrap();
    }

    let took = |e: &Event| matches!(e, Event::Took(_));
    let held = |e: &Event| matches!(e, Event::Held(_));
    let answered = |e: &Event| matches!(e, Event::Answered(_));
    // Every delivery to the healthy receiver arrives while the hanging one holds its first
    // requests: none of them was answered yet, and it never held more than its host's share.
    let events = log
        .wait("every delivery to the healthy receiver", |events| {
            events.iter().filter(|e| took(e)).count() == NOTIFICATIONS
        })
        .await;
    assert!(!events.iter().any(answered), "{events:?}");
    log.wait("the hanging receiver holding its share", |events| {
        events.iter().filter(|e| held(e)).count() == PER_HOST
    })
    .await;
    assert_eq!(log.count(answered), 0);
    assert_eq!(log.holding.lock().unwrap().1, PER_HOST, "most held at once");

    // Its time runs out: it answers what it held, then takes the rest one by one; nothing is
    // lost, and it never held more than its share.
    go.send(true).unwrap();
    let events = log
        .wait("every delivery to the hanging receiver", |events| {
            events.iter().filter(|e| answered(e)).count() == NOTIFICATIONS
        })
        .await;
    let ids = |kind: fn(&Event) -> bool| -> HashSet<String> {
        events
            .iter()
            .filter(|e| kind(e))
            .map(|e| match e {
                Event::Held(id) | Event::Answered(id) | Event::Took(id) => id.clone(),
            })
            .collect()
    };
    assert_eq!(ids(took).len(), NOTIFICATIONS, "each healthy delivery once");
    assert_eq!(ids(held).len(), NOTIFICATIONS, "each hanging delivery once");
    assert!(ids(took).is_disjoint(&ids(held)));
    assert_eq!(log.holding.lock().unwrap().1, PER_HOST, "most held at once");
    let sql = api.sql().await;
    let delivered = "SELECT COUNT(*) FROM deliveries WHERE state = 'delivered'";
    for _ in 0..100 {
        if sql.count(delivered).await == 2 * NOTIFICATIONS as i64 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(sql.count(delivered).await, 2 * NOTIFICATIONS as i64);
    assert_eq!(
        sql.count("SELECT COUNT(*) FROM deliveries").await,
        2 * NOTIFICATIONS as i64
    );
}
