//! Moving in and out for a user, as the API's `POST /import` and `GET /export` and the settings
//! page's import and export ask for it: an import of a file ([`crate::transfer::import`]) with
//! every folder and monitor checked by the rules a save of one passes, and the secrets of its
//! notification URLs sealed as a save seals them ([`SaveRules`]), and the
//! user's export as a stream of chunks. The command line's `wachet import` takes the same
//! rules ([`import_context`]).

use super::{Ctx, OpError, UserId, endpoints, rules, steps};
use crate::secrets::Sealer;
use crate::transfer::{self, ImportContext, ImportError, export};
use std::collections::BTreeMap;
use std::sync::Arc;
use wachet::Checker;
use wachet::model::{Folder, Monitor};

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

/// The user's export (with each monitor's history when `history`), written as it is read: a
/// stream of chunks that ends with an error when the export stops (the document then lacks its
/// `complete`, so a reader knows it was cut). The writing stops when the stream is dropped.
pub fn export(
    ctx: &Ctx,
    user: &UserId,
    history: bool,
) -> impl futures::Stream<Item = Result<Vec<u8>, std::io::Error>> + Send + 'static {
    let (sender, receiver) = tokio::sync::mpsc::channel(4);
    let ctx = ctx.clone();
    let user = user.to_string();
    tokio::spawn(async move {
        let mut sink = ChannelSink(sender.clone());
        let options = export::ExportOptions { history };
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
