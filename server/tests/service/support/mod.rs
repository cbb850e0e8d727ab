//! What every test of the service starts: services on a fresh database of either backend
//! ([`Setup`], [`Api`]), users with tokens, replies read as a client reads them, a connection
//! of its own to a service's database ([`Sql`]); the private PostgreSQL cluster ([`pg`]) and
//! the browser and sign-in helpers of the web interface's tests ([`web`]).

pub mod disk;
pub mod pg;
pub mod web;

use reqwest::Method;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};
use std::future::Future;
use std::sync::Arc;
use tempfile::TempDir;
use wachet::Engine;
use wachet_server::api::{Account, ApiSettings, create_account};
use wachet_server::service::{self, Parts, Running};
use wachet_server::store::Store;
use wachet_server::store::postgres::PgStore;
use wachet_server::store::sqlite::{SqliteStore, StoreSettings};
use wachet_server::store::testing::Seed;

/// The database a test's services run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

tokio::task_local! {
    static BACKEND: Backend;
}

impl Backend {
    /// The backend of the running [`both!`] test; SQLite in any other test.
    pub fn current() -> Backend {
        BACKEND
            .try_with(|backend| *backend)
            .unwrap_or(Backend::Sqlite)
    }

    /// Runs `test` with `self` as the [`Backend::current`].
    pub async fn run<F: Future>(self, test: F) -> F::Output {
        BACKEND.scope(self, test).await
    }
}

/// Everything a test may call on the store: the store and the test-only seeding.
pub trait TestStore: Store + Seed {}
impl<S: Store + Seed> TestStore for S {}

/// Where a service keeps its data: a SQLite file in a temporary directory, or a database on
/// the test cluster. It outlives the service, for another to start on.
pub enum Database {
    Sqlite(TempDir),
    Postgres(String),
}

impl Database {
    /// A new, empty database of `backend`.
    pub async fn fresh(backend: Backend) -> Database {
        match backend {
            Backend::Sqlite => Database::Sqlite(tempfile::tempdir().unwrap()),
            Backend::Postgres => Database::Postgres(
                pg::database()
                    .await
                    .expect("a PostgreSQL test checks pg::available() first"),
            ),
        }
    }

    /// The store over this database with the default settings, as a command opens it while
    /// no service runs.
    pub async fn store(&self) -> Arc<dyn TestStore> {
        self.open(&StoreSettings::default()).await
    }

    /// A connection of its own to this database ([`Sql`]).
    pub async fn sql(&self) -> Sql {
        match self {
            Database::Sqlite(dir) => {
                let options = sqlx::sqlite::SqliteConnectOptions::new()
                    .filename(dir.path().join("wachet.db"));
                Sql::Sqlite(sqlx::SqlitePool::connect_with(options).await.unwrap())
            }
            Database::Postgres(url) => Sql::Postgres(sqlx::PgPool::connect(url).await.unwrap()),
        }
    }

    /// Opens the store over this database, migrating it.
    async fn open(&self, settings: &StoreSettings) -> Arc<dyn TestStore> {
        match self {
            Database::Sqlite(dir) => Arc::new(
                SqliteStore::open_with(&dir.path().join("wachet.db"), settings)
                    .await
                    .unwrap(),
            ),
            Database::Postgres(url) => Arc::new(PgStore::connect(url, settings).await.unwrap()),
        }
    }
}

/// A connection of its own to a service's database, as an operator would open one, for what no
/// store call shows (values stored once, a clock set back). Its SQL is written so both
/// backends read it alike: no parameters, standard syntax only.
pub enum Sql {
    Sqlite(sqlx::SqlitePool),
    Postgres(sqlx::PgPool),
}

impl Sql {
    /// The one number `sql` selects (a NULL is 0).
    pub async fn count(&self, sql: &str) -> i64 {
        let sql = sqlx::AssertSqlSafe(format!("SELECT CAST(({sql}) AS BIGINT)"));
        let n: Option<i64> = match self {
            Sql::Sqlite(pool) => sqlx::query_scalar(sql).fetch_one(pool).await,
            Sql::Postgres(pool) => sqlx::query_scalar(sql).fetch_one(pool).await,
        }
        .unwrap();
        n.unwrap_or(0)
    }

    /// The one text `sql` selects.
    pub async fn text(&self, sql: &str) -> String {
        let sql = sqlx::AssertSqlSafe(sql.to_string());
        match self {
            Sql::Sqlite(pool) => sqlx::query_scalar(sql).fetch_one(pool).await,
            Sql::Postgres(pool) => sqlx::query_scalar(sql).fetch_one(pool).await,
        }
        .unwrap()
    }

    /// Runs `sql`, a write.
    pub async fn execute(&self, sql: &str) {
        let sql = sqlx::AssertSqlSafe(sql.to_string());
        match self {
            Sql::Sqlite(pool) => sqlx::query(sql).execute(pool).await.map(drop),
            Sql::Postgres(pool) => sqlx::query(sql).execute(pool).await.map(drop),
        }
        .unwrap();
    }
}

/// A running API with its own database, and the store it serves from (as `wachet serve` runs
/// it), for writing what the scheduler would write.
pub struct Api {
    pub store: Arc<dyn TestStore>,
    pub database: Database,
    running: Option<Running>,
    base: String,
    client: reqwest::Client,
}

/// A user with a token.
pub struct User {
    pub account: Account,
    pub token: String,
}

/// A response: status, headers and the body parsed as JSON (Null when empty or not JSON).
pub struct Reply {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Value,
    pub text: String,
}

impl Reply {
    pub fn content_type(&self) -> &str {
        self.headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    /// Asserts a problem+json error of `status` and returns its `errors` object.
    #[track_caller]
    pub fn problem(&self, status: u16) -> &Value {
        assert_eq!(self.status, status, "{}", self.text);
        assert_eq!(
            self.content_type(),
            "application/problem+json",
            "{}",
            self.text
        );
        assert_eq!(self.body["status"], status);
        assert_eq!(self.body["type"], "about:blank");
        assert!(self.body["title"].is_string() && self.body["detail"].is_string());
        &self.body["errors"]
    }

    /// Asserts a 400 naming `field` with a message containing `words`.
    #[track_caller]
    pub fn field_error(&self, field: &str, words: &str) {
        let errors = self.problem(400);
        let messages = errors[field]
            .as_array()
            .unwrap_or_else(|| panic!("no error for {field}: {}", self.text));
        assert!(
            messages
                .iter()
                .any(|m| m.as_str().unwrap_or("").contains(words)),
            "{field}: expected {words:?} in {}",
            self.text
        );
    }

    #[track_caller]
    pub fn ok(&self) -> &Value {
        assert_eq!(self.status, 200, "{}", self.text);
        &self.body
    }
}

/// How a test's service starts: the settings of [`service::start`] (the parts that run
/// included), the engine and the store it runs on. Tests change what they need.
pub struct Setup {
    /// [`Backend::current`] unless a test says otherwise.
    pub backend: Backend,
    pub engine: wachet::EngineBuilder,
    pub store: StoreSettings,
    pub service: service::Settings,
}

impl Setup {
    /// The API alone (nothing is checked, delivered or collected) on any free port of
    /// 127.0.0.1, its engine allowing private networks (the tests' sites are on loopback).
    pub fn api() -> Setup {
        Setup {
            backend: Backend::current(),
            engine: Engine::builder().allow_private_networks(true),
            store: StoreSettings::default(),
            service: service::Settings {
                listen: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
                parts: Parts::API_ONLY,
                ..service::Settings::default()
            },
        }
    }

    /// Every part of the service, as `wachet serve` runs them, with a minimum recurrence of
    /// 1 s and delivery retries a fifth of a second apart instead of 30 s.
    pub fn checking() -> Setup {
        let mut setup = Setup::api();
        setup.service.parts = Parts::ALL;
        setup.service.api.min_recurrence = 1;
        setup.service.schedule.min_recurrence = 1;
        setup.service.delivery.first_retry = std::time::Duration::from_millis(200);
        setup
    }
}

impl Api {
    /// The API alone ([`Setup::api`]).
    pub async fn start() -> Api {
        Api::start_as(Setup::api()).await
    }

    /// The API alone with these settings.
    pub async fn start_with(settings: ApiSettings) -> Api {
        let mut setup = Setup::api();
        setup.service.api = settings;
        Api::start_as(setup).await
    }

    /// The whole service ([`Setup::checking`]).
    pub async fn start_checking() -> Api {
        Api::start_as(Setup::checking()).await
    }

    /// [`Api::start_checking`] with these delivery settings.
    pub async fn start_checking_with(
        delivery: wachet_server::notify::deliver::DeliverySettings,
    ) -> Api {
        let mut setup = Setup::checking();
        setup.service.delivery = delivery;
        Api::start_as(setup).await
    }

    /// The service `setup` describes, on a new database.
    pub async fn start_as(setup: Setup) -> Api {
        Api::start_in(Database::fresh(setup.backend).await, setup).await
    }

    /// [`Api::start_as`] over `database` (one a stopped or crashed service left).
    pub async fn start_in(database: Database, setup: Setup) -> Api {
        let store = database.open(&setup.store).await;
        let engine = setup.engine.build().unwrap();
        let running = service::start(setup.service, store.clone(), &engine)
            .await
            .unwrap();
        Api {
            base: format!("http://{}", running.addr().expect("the api runs")),
            store,
            database,
            running: Some(running),
            client: reqwest::Client::new(),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The running service's count of browser tabs per user.
    pub fn browser_tabs(&self) -> &Arc<wachet_server::tabs::BrowserTabs> {
        self.running
            .as_ref()
            .expect("the service runs")
            .browser_tabs()
    }

    /// The backend this service runs on.
    pub fn backend(&self) -> Backend {
        match self.database {
            Database::Sqlite(_) => Backend::Sqlite,
            Database::Postgres(_) => Backend::Postgres,
        }
    }

    /// The SQLite file, for the tests of what only SQLite has.
    ///
    /// # Panics
    /// On PostgreSQL.
    pub fn db_path(&self) -> std::path::PathBuf {
        match &self.database {
            Database::Sqlite(dir) => dir.path().join("wachet.db"),
            Database::Postgres(_) => panic!("a SQLite file asked of a PostgreSQL test"),
        }
    }

    /// A connection of its own to the service's database ([`Sql`]).
    pub async fn sql(&self) -> Sql {
        self.database.sql().await
    }

    /// Stops the service as a crash would (no shutdown, no wait for anything) and keeps its
    /// database, for a new service to start on.
    pub fn crash(mut self) -> Database {
        drop(self.running.take());
        self.database
    }

    /// Stops the service gracefully ([`Running::shutdown`]) and keeps its database, for a new
    /// service to start on.
    pub async fn shutdown(mut self) -> Database {
        if let Some(running) = self.running.take() {
            running.shutdown().await.unwrap();
        }
        self.database
    }

    /// A new user, logged in with its API key.
    pub async fn user(&self, email: &str) -> User {
        let account = create_account(self.store.as_ref(), email, Some("pass word 1".into()))
            .await
            .unwrap();
        let reply = self
            .send(
                Method::POST,
                "/thirdparty/v1/user/apilogin",
                None,
                Some(json!({"userId": account.id, "apiKey": account.api_key})),
            )
            .await;
        let token = reply.ok()["token"].as_str().unwrap().to_string();
        User { account, token }
    }

    pub async fn send(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> Reply {
        let mut request = self.client.request(method, self.url(path));
        if let Some(token) = token {
            request = request.header("authorization", format!("bearer {token}"));
        }
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body.to_string());
        }
        Reply::read(request.send().await.unwrap()).await
    }

    pub async fn raw(&self, request: reqwest::RequestBuilder) -> Reply {
        Reply::read(request.send().await.unwrap()).await
    }

    pub fn client(&self) -> &reqwest::Client {
        &self.client
    }

    pub async fn get(&self, user: &User, path: &str) -> Reply {
        self.send(Method::GET, path, Some(&user.token), None).await
    }

    pub async fn put(&self, user: &User, path: &str, body: Value) -> Reply {
        self.send(Method::PUT, path, Some(&user.token), Some(body))
            .await
    }

    pub async fn post(&self, user: &User, path: &str, body: Value) -> Reply {
        self.send(Method::POST, path, Some(&user.token), Some(body))
            .await
    }

    pub async fn delete(&self, user: &User, path: &str) -> Reply {
        self.send(Method::DELETE, path, Some(&user.token), None)
            .await
    }

    /// Creates a monitor through the API and returns it.
    pub async fn task(&self, user: &User, monitor: Value) -> Value {
        self.put(user, "/thirdparty/v1/task", monitor)
            .await
            .ok()
            .clone()
    }

    /// Creates a folder through the API and returns its id.
    pub async fn folder(&self, user: &User, name: &str, parent: Option<&str>) -> String {
        let reply = self
            .post(
                user,
                "/thirdparty/v1/folder",
                json!({"name": name, "parentId": parent}),
            )
            .await;
        reply.ok()["id"].as_str().unwrap().to_string()
    }
}

impl Reply {
    async fn read(response: reqwest::Response) -> Reply {
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let text = response.text().await.unwrap();
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Reply {
            status,
            headers,
            body,
            text,
        }
    }
}

/// A monitor body with the given name and URL, checked hourly.
pub fn monitor(name: &str, url: &str) -> Value {
    json!({"name": name, "url": url, "recurrenceInSeconds": 3600})
}

/// The `data` of a monitor not checked yet: never null (the specification types it so), its
/// time the least date-time, everything else null.
pub fn not_checked() -> Value {
    json!({
        "lastCheckTimestamp": "0001-01-01T00:00:00Z",
        "valueChangedTimestamp": null,
        "raw": null,
        "error": null,
        "diff": null
    })
}

/// Whether a monitor (or a crawled page) as the API writes it has been checked.
pub fn checked(monitor: &Value) -> bool {
    monitor["data"] != not_checked()
}

/// The id of a created resource.
pub fn id(value: &Value) -> String {
    value["id"].as_str().unwrap().to_string()
}
