//! `mailto(s)://[user:password@]domain[:port][/to@address...]?to=&from=&smtp=&name=&mode=`: an
//! e-mail through the SMTP server the URL names (`smtp=`, else the domain), logged in as the
//! user (`user@domain` when the user has no `@`) with the password, to the addresses given
//! (`to=`, comma-separated, or as path segments; else the login's own address), from `from=`
//! (else the login's address, `name=` as its display name). `mailto://` is plain SMTP on port
//! 25; `mailtos://` STARTTLS on 587, or TLS from the first byte on 465 with `mode=ssl`. The
//! server must be one the private-network policy of the checks lets the service reach.

use super::{NotifyUrl, Part, Sending, Service, needs};
use crate::notify::SendError;
use crate::notify::channel::{MailParts, Outgoing, Verdict, is_email};
use crate::notify::email::{SmtpSettings, SmtpTls};
use async_trait::async_trait;

/// E-mail through the SMTP server a URL names.
pub struct Mailto;

/// The login's own address: the user, with `@domain` when it has none.
fn own(url: &NotifyUrl) -> Option<String> {
    url.user.as_ref().map(|user| match user.contains('@') {
        true => user.clone(),
        false => format!("{user}@{}", url.host),
    })
}

/// The recipients: `to=`, the path's segments, else the login's own address.
fn recipients(url: &NotifyUrl) -> Vec<String> {
    let mut to: Vec<String> = url
        .param("to")
        .map(|t| {
            t.split(',')
                .map(|a| a.trim().to_string())
                .filter(|a| !a.is_empty())
                .collect()
        })
        .unwrap_or_default();
    to.extend(url.segments.iter().cloned());
    if to.is_empty() {
        to.extend(own(url));
    }
    to
}

/// How the server is reached: its host, port and security.
fn server(url: &NotifyUrl) -> (String, u16, SmtpTls) {
    let host = url.param("smtp").unwrap_or(&url.host).to_string();
    let tls = match (url.secure(), url.param("mode")) {
        (true, Some("ssl")) => SmtpTls::Tls,
        (true, _) => SmtpTls::Starttls,
        (false, _) => SmtpTls::None,
    };
    let port = url.port.unwrap_or(match tls {
        SmtpTls::Tls => 465,
        SmtpTls::Starttls => 587,
        SmtpTls::None => 25,
    });
    (host, port, tls)
}

#[async_trait]
impl Service for Mailto {
    fn schemes(&self) -> &'static [&'static str] {
        &["mailto", "mailtos"]
    }

    fn host<'u>(&self, url: &'u NotifyUrl) -> Option<&'u str> {
        Some(url.param("smtp").unwrap_or(&url.host))
    }

    fn check(&self, url: &NotifyUrl) -> Result<(), String> {
        needs(!url.host.is_empty(), "a domain or server")?;
        let to = recipients(url);
        needs(!to.is_empty(), "a recipient (?to=address)")?;
        for address in to
            .iter()
            .chain(url.param("from").map(str::to_string).iter())
        {
            if !is_email(address) {
                return Err(format!("{address} is not an e-mail address"));
            }
        }
        if let Some(mode) = url.param("mode")
            && !matches!(mode, "ssl" | "starttls")
        {
            return Err(format!("mode {mode} is not ssl or starttls"));
        }
        if url.param("from").is_none() && own(url).is_none() {
            return Err("lacks a sender (?from=address, or a user)".into());
        }
        Ok(())
    }

    fn secrets(&self, _: &NotifyUrl) -> Vec<Part> {
        vec![Part::Password]
    }

    fn prepare(&self, sending: &Sending<'_>) -> Result<Vec<Outgoing>, SendError> {
        let url = &sending.url;
        let (host, port, tls) = server(url);
        let from = url
            .param("from")
            .map(str::to_string)
            .or_else(|| own(url))
            .unwrap_or_default();
        let from = match url.param("name") {
            Some(name) => format!("{} <{from}>", name.replace(['<', '>', '"', '\r', '\n'], "")),
            None => from,
        };
        let credentials = url
            .user
            .clone()
            .zip(url.password.clone())
            .map(|(user, password)| {
                (
                    own(url).filter(|_| !user.contains('@')).unwrap_or(user),
                    password,
                )
            });
        let settings = SmtpSettings {
            host,
            port,
            tls,
            credentials,
            from,
        };
        Ok(recipients(url)
            .into_iter()
            .map(|to| Outgoing::MailVia(settings.clone(), MailParts::of(sending.delivery, &to)))
            .collect())
    }

    /// Checks the server's addresses against the private-network policy, then sends.
    async fn send(&self, sending: &Sending<'_>) -> Verdict {
        let (host, port, _) = server(&sending.url);
        let addresses = match tokio::net::lookup_host((host.as_str(), port)).await {
            Ok(found) => found.collect::<Vec<_>>(),
            Err(err) => {
                return Verdict::Retry {
                    after: None,
                    error: format!("SMTP server {host}: {err}"),
                };
            }
        };
        for address in &addresses {
            if let Err(refused) = sending.context.network.check(&host, address.ip()) {
                return Verdict::Failed(refused.to_string());
            }
        }
        let all = match self.prepare(sending) {
            Ok(all) => all,
            Err(err) => return err.into(),
        };
        for outgoing in all {
            let verdict = sending
                .context
                .transmit(outgoing, |_| Verdict::Delivered)
                .await;
            if verdict != Verdict::Delivered {
                return verdict;
            }
        }
        Verdict::Delivered
    }
}
