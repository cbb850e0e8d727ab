//! The page around the monitor form: the choices it offers beside the fields (the user's
//! folders, where a monitor's notifications go when it names no endpoints) and the page that
//! shows the form with its problems. Shared by the form's own routes and by the step recorder,
//! which returns to the form with the steps it recorded.

use crate::ops::Ctx;
use crate::web::assets::FORM_JS;
use crate::web::monitors::form::{self as monitor_form, Context, Fields, Problems};
use crate::web::shared::error::PageError;
use crate::web::shared::layout::page_with_scripts;
use crate::web::shared::session::Session;
use crate::web::shared::tree;
use crate::web::shared::words::endpoint_words;
use maud::{Markup, html};

/// Most folders offered in the folder choice.
const MAX_FOLDERS: usize = 200;

/// What the form shows beside the fields, read for the signed-in user.
pub(crate) struct Choices {
    folders: Vec<(String, String)>,
    default_endpoints: Vec<String>,
    /// The folder `default_endpoints` come from, when a folder names them.
    inherited_from: Option<String>,
}

impl Choices {
    /// The user's folders (their paths in words, in order), and where notifications of a
    /// monitor in `folder` go when it names no endpoints: the nearest folder up the tree
    /// naming some, else the user's own endpoints.
    pub(crate) async fn load(
        state: &Ctx,
        session: &Session,
        folder: &str,
    ) -> Result<Choices, PageError> {
        let tree = tree::walk(state, &session.user, None, false).await?;
        let mut folders: Vec<(String, String)> = tree
            .folders
            .into_iter()
            .take(MAX_FOLDERS)
            .map(|folder| (folder.id, folder.path))
            .collect();
        folders.sort_by(|a, b| a.1.cmp(&b.1));
        let in_words = |list: &[wachet::model::NotificationEndpoint]| {
            list.iter().map(endpoint_words).collect()
        };
        let inherited =
            crate::ops::folders::inherited_endpoints(state, &session.user, Some(folder)).await;
        // A folder deleted meanwhile leaves the user's own endpoints to show.
        let (inherited_from, default_endpoints) = match inherited {
            Ok(Some((name, list))) => (Some(name), in_words(&list)),
            Ok(None) | Err(crate::ops::OpError::NotFound) => (
                None,
                in_words(
                    &crate::ops::endpoints::get(state, &session.user)
                        .await?
                        .notification_endpoints,
                ),
            ),
            Err(err) => return Err(err.into()),
        };
        Ok(Choices {
            folders,
            default_endpoints,
            inherited_from,
        })
    }
}

/// The form page: the form with its problems, and `below` it (a preview).
pub(crate) fn form_page(
    state: &Ctx,
    session: &Session,
    choices: &Choices,
    fields: &Fields,
    problems: &Problems,
    token: Option<&str>,
    below: Markup,
) -> Markup {
    let (title, action) = match &fields.id {
        Some(id) => ("Edit monitor".to_string(), format!("/monitors/{id}/edit")),
        None => ("New monitor".to_string(), "/monitors/new".to_string()),
    };
    let ctx = Context {
        session,
        action,
        token,
        folders: &choices.folders,
        default_endpoints: &choices.default_endpoints,
        inherited_from: choices.inherited_from.as_deref(),
        min_recurrence: state.settings().min_recurrence,
    };
    let main = html! {
        nav.breadcrumbs aria-label="Breadcrumbs" {
            ol {
                li { a href="/" { "All monitors" } }
                @if let Some(id) = &fields.id {
                    li { a href={ "/monitors/" (id) } { (if fields.name.is_empty() { &fields.url } else { &fields.name }) } }
                }
                li { a href=(ctx.action) aria-current="page" { (title) } }
            }
        }
        div.page-head { h1 { (title) } }
        (monitor_form::render(fields, problems, &ctx))
        (below)
    };
    page_with_scripts(&title, Some(session), &[&FORM_JS], main)
}
