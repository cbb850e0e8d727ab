//! `workflows://host[:port]/workflow/signature`: Microsoft Teams through a Power Automate
//! workflow, `POST https://host/workflows/{workflow}/triggers/manual/paths/invoke` with
//! `api-version=2016-06-01`, `sp=/triggers/manual/run`, `sv=1.0` and `sig=`; with
//! `?powerautomate=yes`, under `/powerautomate/automations/direct` and
//! `api-version=2022-03-01-preview`. The body is the Adaptive Card the Teams kind sends.

use super::{NotifyUrl, Part, Sending, Service, json_post, needs};
use crate::notify::SendError;
use crate::notify::channel::{Outgoing, teams};

/// Teams through Power Automate.
pub struct Workflows;

impl Service for Workflows {
    fn schemes(&self) -> &'static [&'static str] {
        &["workflows"]
    }

    fn based(&self) -> Option<&'static str> {
        Some("workflows")
    }

    fn host<'u>(&self, url: &'u NotifyUrl) -> Option<&'u str> {
        Some(&url.host)
    }

    fn check(&self, url: &NotifyUrl) -> Result<(), String> {
        needs(
            !url.host.is_empty() && url.segments.len() >= 2,
            "a host, the workflow and its signature (workflows://host/workflow/signature)",
        )
    }

    fn secrets(&self, _: &NotifyUrl) -> Vec<Part> {
        vec![Part::Segment(1)]
    }

    fn prepare(&self, sending: &Sending<'_>) -> Result<Vec<Outgoing>, SendError> {
        let url = &sending.url;
        let automate = url.flag("powerautomate", false);
        let (prefix, version) = match automate {
            true => ("/powerautomate/automations/direct", "2022-03-01-preview"),
            false => ("", "2016-06-01"),
        };
        let origin = match url.port {
            Some(port) => format!("https://{}:{port}", url.host),
            None => format!("https://{}", url.host),
        };
        let mut target = sending.context.bases.at(
            "workflows",
            &origin,
            &format!(
                "{prefix}/workflows/{}/triggers/manual/paths/invoke",
                url.segments[0]
            ),
        )?;
        target
            .query_pairs_mut()
            .append_pair("api-version", version)
            .append_pair("sp", "/triggers/manual/run")
            .append_pair("sv", "1.0")
            .append_pair("sig", &url.segments[1]);
        let body = teams::adaptive_card(&sending.message);
        Ok(vec![Outgoing::Http(json_post(target, &body, sending)?)])
    }
}
