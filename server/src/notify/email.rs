//! The SMTP transport (lettre): sends the e-mails channels make ([`MailParts`]) and the
//! confirmation codes of e-mail addresses.

use super::SendError;
use super::channel::MailParts;
use crate::store::ConfirmationMail;
use lettre::message::{Mailbox, MultiPart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use std::time::Duration;

/// How the connection to the SMTP server is secured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SmtpTls {
    /// Plain text (a relay on the same machine or network).
    None,
    /// Plain, upgraded with STARTTLS (required).
    Starttls,
    /// TLS from the first byte (SMTPS).
    Tls,
}

/// Where and how to send e-mail.
#[derive(Clone)]
pub struct SmtpSettings {
    /// The server's host name.
    pub host: String,
    /// Its port.
    pub port: u16,
    /// Transport security.
    pub tls: SmtpTls,
    /// User and password, when the server wants a login.
    pub credentials: Option<(String, String)>,
    /// The sender address.
    pub from: String,
}

impl std::fmt::Debug for SmtpSettings {
    /// Leaves the password out.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmtpSettings")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("tls", &self.tls)
            .field("from", &self.from)
            .finish_non_exhaustive()
    }
}

/// A connection pool to the SMTP server.
pub struct Mailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
}

impl Mailer {
    /// A mailer for `settings`; an unusable host or sender is an error.
    pub fn new(settings: &SmtpSettings) -> Result<Mailer, String> {
        let builder = match settings.tls {
            SmtpTls::None => {
                AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(&settings.host)
            }
            SmtpTls::Starttls => {
                AsyncSmtpTransport::<Tokio1Executor>::starttls_relay(&settings.host)
                    .map_err(|err| format!("SMTP host {}: {err}", settings.host))?
            }
            SmtpTls::Tls => AsyncSmtpTransport::<Tokio1Executor>::relay(&settings.host)
                .map_err(|err| format!("SMTP host {}: {err}", settings.host))?,
        };
        let mut builder = builder
            .port(settings.port)
            .timeout(Some(Duration::from_secs(30)));
        if let Some((user, password)) = &settings.credentials {
            builder = builder.credentials(Credentials::new(user.clone(), password.clone()));
        }
        let from = settings
            .from
            .parse()
            .map_err(|err| format!("--smtp-from {}: {err}", settings.from))?;
        Ok(Mailer {
            transport: builder.build(),
            from,
        })
    }

    /// Sends `mail`. An address that cannot be one, or a permanent (5xx) answer such as a
    /// rejected recipient, is a permanent error.
    pub async fn send(&self, mail: &MailParts) -> Result<(), SendError> {
        let to = mailbox(&mail.to)?;
        let message = Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject(mail.subject.replace(['\r', '\n'], " "))
            .multipart(MultiPart::alternative_plain_html(
                mail.plain.clone(),
                mail.html.clone(),
            ))
            .map_err(|err| format!("building the e-mail: {err}"))?;
        self.transmit(message).await
    }

    /// Sends the message that asks `mail.address` to confirm it wants the notifications of
    /// `mail.account_email`: the code to give that user, and that ignoring it keeps the address
    /// out.
    pub async fn send_confirmation(&self, mail: &ConfirmationMail) -> Result<(), SendError> {
        let to = mailbox(&mail.address)?;
        let text = format!(
            "The user {account} of a wachet server (web page monitoring) asked to send its \
             notifications to this address.\n\n\
             If you agree, give them this code, which they enter with POST \
             /thirdparty/v1/user/notificationEndpoints/confirm:\n\n    {code}\n\n\
             If not, ignore this message: nothing is sent to this address until the code is \
             entered.\n",
            account = mail.account_email,
            code = mail.code,
        );
        let message = Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject("Confirm notifications from wachet")
            .header(lettre::message::header::ContentType::TEXT_PLAIN)
            .body(text)
            .map_err(|err| format!("building the e-mail: {err}"))?;
        self.transmit(message).await
    }

    /// Hands `message` to the SMTP server; a permanent (5xx) answer is a permanent error.
    async fn transmit(&self, message: Message) -> Result<(), SendError> {
        self.transport
            .send(message)
            .await
            .map(drop)
            .map_err(|err| SendError {
                permanent: err.is_permanent(),
                message: format!("SMTP: {err}"),
            })
    }
}

/// `address` as a mailbox; one that cannot be is a permanent error.
fn mailbox(address: &str) -> Result<Mailbox, SendError> {
    address.parse().map_err(|err| SendError {
        message: format!("address {address}: {err}"),
        permanent: true,
    })
}
