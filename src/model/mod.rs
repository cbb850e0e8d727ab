//! The resources of the REST API (part 2 of the specification) as Rust types.
//!
//! JSON names are exactly the specification's (`xPath`, `excludeXPath`, `recurrenceInSeconds`,
//! ...). Nullable fields are `Option`s and are written as `null`; a field the specification
//! types as not nullable is never written `null`, even where it is an `Option` (a monitor's
//! `data`, `crawlingDepth`, `urlFilter`, an alert's `parameters`: their defaults are written);
//! booleans default to `false`.
//! Enumerations read a name in any case or the integer and write the name ([`enums`]).
//! [`from_json`] parses a request body and names the field that failed, for 400 responses.

pub mod auth;
pub mod data;
pub mod enums;
pub mod folder;
pub mod notification;
pub mod steps;
pub mod task;

pub use auth::{ApiLoginRequest, ClientLoginRequest, ClientLoginResponse};
pub use data::{ClientData, ClientDataRange, ClientPage, DiffElement, DiffOperation};
pub use enums::{
    AlertType, ClientJobType, CompareType, JobType, LocationCode, MessagingServiceType,
    UrlFilterType,
};
pub use folder::{ClientFolderContent, Folder, MoveRequest};
pub use notification::{ClientAlertContentResponse, ClientNotification, ClientNotificationRange};
pub use steps::{Login, Step, StepAction};
pub use task::{
    Alert, AlertParameters, Digest, HeaderPair, LineOrder, MessageFormat, Monitor, NoiseMask,
    NotificationEndpoint, Proxy, QuietHours, UrlFilter, UrlFilterValue,
};

/// A JSON document that does not fit the expected resource.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct JsonError {
    /// Where in the document it failed, such as `alerts[0].type` (`.` for the document itself).
    pub path: String,
    /// What was wrong there.
    pub message: String,
}

/// Parses `json` as a `T`, naming the field that failed.
///
/// ```
/// use wachet::model::{from_json, Monitor};
/// let err = from_json::<Monitor>(br#"{"url": "https://example.com", "jobType": "Crawler"}"#)
///     .unwrap_err();
/// assert_eq!(err.path, "jobType");
/// assert!(err.message.contains("SinglePage (0), Portal (1)"));
/// ```
pub fn from_json<T: serde::de::DeserializeOwned>(json: &[u8]) -> Result<T, JsonError> {
    let mut deserializer = serde_json::Deserializer::from_slice(json);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        // serde_json appends " at line L column C"; keep it, it locates the error in the body.
        JsonError {
            path,
            message: inner.to_string(),
        }
    })?;
    deserializer.end().map_err(|err| JsonError {
        path: ".".to_string(),
        message: err.to_string(),
    })?;
    Ok(value)
}
