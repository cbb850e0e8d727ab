//! Moving in and out for a user, as the API's `POST /import` and `GET /export` and the settings
//! page's import and export ask for it: an import of a file ([`crate::transfer::import`]) with
//! every folder and monitor checked by the rules a save of one passes, and the secrets of its
//! notification URLs sealed as a save seals them ([`SaveRules`]), and the
//! user's export as a stream of chunks, with the monitors' secrets encrypted to a passphrase
//! when asked ([`export_secrets`]: opened with the service's key, which only the operations
//! hold). The command line's `wachet import` and `wachet export` take the same rules
//! ([`import_context`], [`with_secrets`]).

use super::{Ctx, OpError, UserId, endpoints, rules, steps};
use crate::notify::channel::url;
use crate::secrets::Sealer;
use crate::transfer::export::{Reveal, WithSecrets};
use crate::transfer::passphrase::ExportKey;
use crate::transfer::{self, ImportContext, ImportError, export};
use std::collections::BTreeMap;
use std::sync::Arc;
use wachet::Checker;
use wachet::model::{Folder, Monitor, NotificationEndpoint};

pub use crate::transfer::{ImportRequest, MAX_FILE_BYTES, Report};

/// The name an export is downloaded as.
pub const EXPORT_FILE_NAME: &str = "wachet-export.json";

/// The rules a save of a folder or a monitor passes ([`rules::folder`], [`rules::monitor`],
/// [`endpoints::seal`]), for an import to check and seal each of its file's with.
pub struct SaveRules {
    checker: Arc<dyn Checker>,
    min_recurrence: i32,
    sealer: Arc<Sealer>,
}

impl transfer::Rules for SaveRules {
    fn folder(&self, folder: &Folder) -> Vec<(String, String)> {
        problems(rules::folder(folder))
    }

    fn monitor(&self, monitor: &Monitor) -> Vec<(String, String)> {
        problems(rules::monitor(
            self.checker.as_ref(),
            monitor,
            self.min_recurrence,
        ))
    }

    fn seal_folder(
        &self,
        user: &str,
        endpoints: &mut [wachet::model::NotificationEndpoint],
    ) -> Vec<(String, String)> {
        problems(endpoints::seal_with(
            &self.sealer,
            self.checker.as_ref(),
            user,
            "notificationEndpoints",
            endpoints.iter_mut(),
        ))
    }

    fn seal(&self, user: &str, monitor: &mut Monitor) -> Vec<(String, String)> {
        let mut found = problems(endpoints::seal_with(
            &self.sealer,
            self.checker.as_ref(),
            user,
            "notificationEndpoints",
            monitor.notification_endpoints.iter_mut().flatten(),
        ));
        // Steps imply rendering, as a save through the API says.
        found.extend(problems(steps::keep_secrets(
            &self.sealer,
            user,
            monitor,
            None,
        )));
        found.extend(problems(steps::seal(&self.sealer, user, monitor)));
        found
    }
}

/// A check's problems as (field, message) pairs.
fn problems(checked: Result<(), OpError>) -> Vec<(String, String)> {
    match checked {
        Ok(()) => Vec::new(),
        Err(OpError::Invalid { errors, .. }) => errors
            .into_iter()
            .flat_map(|(field, list)| list.into_iter().map(move |m| (field.clone(), m)))
            .collect(),
        Err(other) => vec![(String::new(), other.first_message())],
    }
}

/// An import's context on a service with this engine, shortest interval and sealing key (made
/// from the store's secret, as the service's: [`crate::secrets::Sealer::new`]).
pub fn import_context(
    checker: Arc<dyn Checker>,
    min_recurrence: i32,
    sealer: Arc<Sealer>,
) -> ImportContext {
    ImportContext {
        rules: Arc::new(SaveRules {
            checker,
            min_recurrence,
            sealer,
        }),
        min_recurrence,
    }
}

/// Reads the file of `request`, checks each of its monitors as saving one checks it, and
/// (unless dry) stores them for the user all or nothing; what came in (or would) and what was
/// not carried over. A file that cannot be read is an invalid `body`; invalid monitors are
/// named by their item of the file (`item: field`).
pub async fn import(
    ctx: &Ctx,
    user: &UserId,
    request: ImportRequest<'_>,
) -> Result<Report, OpError> {
    let context = import_context(
        ctx.checker().clone(),
        ctx.settings().min_recurrence,
        ctx.sealer().clone(),
    );
    transfer::import(ctx.store(), &context, user, request)
        .await
        .map_err(refused)
}

/// An import's failure as an operation's.
fn refused(err: ImportError) -> OpError {
    match err {
        ImportError::Read(err) => OpError::field("body", err.to_string()),
        ImportError::Invalid(problems) => {
            let mut errors: BTreeMap<String, Vec<String>> = BTreeMap::new();
            for p in problems {
                let at = match p.field.is_empty() {
                    true => p.item,
                    false => format!("{}: {}", p.item, p.field),
                };
                errors.entry(at).or_default().push(p.message);
            }
            OpError::Invalid {
                detail: "monitors of the file are invalid; nothing was imported".into(),
                errors,
            }
        }
        ImportError::Store(err) => err.into(),
    }
}

/// Opens the secrets the service sealed, for an export that carries them.
struct ServiceReveal {
    sealer: Arc<Sealer>,
}

impl Reveal for ServiceReveal {
    fn step(&self, user: &str, stored: &str) -> Option<String> {
        crate::secrets::open_step(&self.sealer, user, stored)
    }

    fn endpoint(&self, user: &str, endpoint: &NotificationEndpoint) -> Option<String> {
        let value = endpoint.value.as_deref()?;
        match url::is_url_kind(endpoint.kind) {
            true => url::open(Some(&self.sealer), user, value)
                .ok()
                .map(|opened| opened.write()),
            // Kept as given (a webhook's address): a credential all the same.
            false => Some(value.to_string()),
        }
    }
}

/// How an export carries secrets: opened with `sealer` (the service's key), encrypted to a key
/// derived from `passphrase`. CPU-heavy (argon2id): call it off the async threads. The message
/// says what is wrong with the passphrase, never what it is.
pub fn with_secrets(sealer: Arc<Sealer>, passphrase: &str) -> Result<WithSecrets, String> {
    Ok(WithSecrets {
        key: ExportKey::new(passphrase)?,
        reveal: Box::new(ServiceReveal { sealer }),
    })
}

/// [`with_secrets`] with the service's key, on the blocking pool in the turns validations take
/// (64 MiB and a fraction of a second of a core each, so never more at once than half the
/// cores); a passphrase that will not do is an invalid `passphrase`.
pub async fn export_secrets(ctx: &Ctx, passphrase: String) -> Result<Arc<WithSecrets>, OpError> {
    let sealer = ctx.sealer().clone();
    let permit = ctx
        .validations()
        .clone()
        .acquire_owned()
        .await
        .map_err(|_| OpError::Internal("the validation queue is closed".into()))?;
    tokio::task::spawn_blocking(move || {
        let made = with_secrets(sealer, &passphrase);
        drop(permit);
        made
    })
    .await
    .map_err(|err| OpError::Internal(format!("deriving the export's key: {err}")))?
    .map(Arc::new)
    .map_err(|message| OpError::field("passphrase", message))
}

/// Sends the export's chunks down a channel.
struct ChannelSink(tokio::sync::mpsc::Sender<Result<Vec<u8>, std::io::Error>>);

#[async_trait::async_trait]
impl export::Sink for ChannelSink {
    async fn write(&mut self, chunk: Vec<u8>) -> std::io::Result<()> {
        self.0
            .send(Ok(chunk))
            .await
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the client left"))
    }
}

/// The user's export (with each monitor's history when `history`, and its secrets encrypted
/// when `secrets` says how: [`export_secrets`]), written as it is read: a stream of chunks
/// that ends with an error when the export stops (the document then lacks its `complete`, so a
/// reader knows it was cut). The writing stops when the stream is dropped.
pub fn export(
    ctx: &Ctx,
    user: &UserId,
    history: bool,
    secrets: Option<Arc<WithSecrets>>,
) -> impl futures::Stream<Item = Result<Vec<u8>, std::io::Error>> + Send + 'static {
    let (sender, receiver) = tokio::sync::mpsc::channel(4);
    let ctx = ctx.clone();
    let user = user.to_string();
    tokio::spawn(async move {
        let mut sink = ChannelSink(sender.clone());
        let options = export::ExportOptions { history, secrets };
        if let Err(err) = export::export(ctx.store(), &user, options, &mut sink).await {
            tracing::warn!("an export stopped: {err}");
            let _ = sender
                .send(Err(std::io::Error::other("the export stopped")))
                .await;
        }
    });
    futures::stream::unfold(receiver, |mut receiver| async move {
        receiver.recv().await.map(|chunk| (chunk, receiver))
    })
}
