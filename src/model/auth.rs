//! Login requests and responses (2.1-2.3).

use serde::{Deserialize, Serialize};

/// Login with e-mail and password (2.1).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", default)]
pub struct ClientLoginRequest {
    /// Account e-mail.
    pub email: Option<String>,
    /// Account password.
    pub password: Option<String>,
    /// Requested token lifetime in seconds.
    pub expires_in_sec: Option<i64>,
}

/// Login with user id and API key (2.2).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", default)]
pub struct ApiLoginRequest {
    /// User id.
    pub user_id: Option<String>,
    /// API key.
    pub api_key: Option<String>,
    /// Requested token lifetime in seconds.
    pub expires_in_sec: Option<i64>,
}

/// A granted token (2.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ClientLoginResponse {
    /// The bearer token.
    pub token: Option<String>,
    /// Lifetime of the token in seconds.
    pub expires_in_sec: i64,
}
