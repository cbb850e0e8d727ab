//! The API's enumerations. Each reads a name (any case) or its integer and writes the name, as
//! DECISIONS.md fixes; anything else is an error that lists the allowed values. The JSON layer
//! (`serde_path_to_error` in [`super::from_json`]) adds the field path to that message.

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use std::fmt;

/// Declares an API enumeration with its integer codes and the serde rules above.
macro_rules! api_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $code:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            /// Every value, in code order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The integer code of the specification.
            pub fn code(self) -> i64 {
                match self { $($name::$variant => $code),+ }
            }

            /// The name written in JSON output.
            pub fn name(self) -> &'static str {
                match self { $($name::$variant => stringify!($variant)),+ }
            }

            /// Reads a name (any case) or the integer code, as JSON input may carry either.
            pub fn parse(input: &str) -> Option<Self> {
                let input = input.trim();
                if let Ok(code) = input.parse::<i64>() {
                    return Self::from_code(code);
                }
                Self::ALL.iter().copied().find(|v| v.name().eq_ignore_ascii_case(input))
            }

            /// The value with this integer code.
            pub fn from_code(code: i64) -> Option<Self> {
                Self::ALL.iter().copied().find(|v| v.code() == code)
            }

            fn expected() -> String {
                let values: Vec<String> = Self::ALL
                    .iter()
                    .map(|v| format!("{} ({})", v.name(), v.code()))
                    .collect();
                format!("one of {}", values.join(", "))
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.name())
            }
        }

        #[cfg(feature = "openapi")]
        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                openapi::enum_schema(stringify!($name), Self::ALL.iter().map(|v| (v.name(), v.code())))
            }
        }

        #[cfg(feature = "openapi")]
        impl utoipa::ToSchema for $name {}

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                deserializer.deserialize_any(EnumVisitor::<$name>::new(
                    stringify!($name),
                    $name::parse,
                    $name::from_code,
                    $name::expected,
                ))
            }
        }
    };
}

/// OpenAPI schemas of the enumerations: a name (written in output) or the integer code.
#[cfg(feature = "openapi")]
mod openapi {
    use utoipa::openapi::RefOr;
    use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Schema, SchemaType, Type};

    pub(super) fn enum_schema<'a>(
        type_name: &str,
        values: impl Iterator<Item = (&'a str, i64)>,
    ) -> RefOr<Schema> {
        let (names, codes): (Vec<&str>, Vec<i64>) = values.unzip();
        let listed: Vec<String> = names
            .iter()
            .zip(&codes)
            .map(|(name, code)| format!("{name} ({code})"))
            .collect();
        OneOfBuilder::new()
            .description(Some(format!(
                "{type_name}: the name in any case, or the integer code; responses write the name. \
                 Values: {}.",
                listed.join(", ")
            )))
            .item(
                ObjectBuilder::new()
                    .schema_type(SchemaType::Type(Type::String))
                    .enum_values(Some(names)),
            )
            .item(
                ObjectBuilder::new()
                    .schema_type(SchemaType::Type(Type::Integer))
                    .format(Some(utoipa::openapi::SchemaFormat::KnownFormat(
                        utoipa::openapi::KnownFormat::Int32,
                    )))
                    .enum_values(Some(codes)),
            )
            .into()
    }
}

/// Shared visitor so the macro expands to little code per enumeration.
struct EnumVisitor<T> {
    type_name: &'static str,
    parse: fn(&str) -> Option<T>,
    from_code: fn(i64) -> Option<T>,
    expected: fn() -> String,
}

impl<T> EnumVisitor<T> {
    fn new(
        type_name: &'static str,
        parse: fn(&str) -> Option<T>,
        from_code: fn(i64) -> Option<T>,
        expected: fn() -> String,
    ) -> Self {
        EnumVisitor {
            type_name,
            parse,
            from_code,
            expected,
        }
    }

    fn unknown<E: de::Error>(&self, shown: &str) -> E {
        E::custom(format!(
            "unknown {} {shown}: expected {}",
            self.type_name,
            (self.expected)()
        ))
    }
}

impl<'de, T> Visitor<'de> for EnumVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a {} name or integer", self.type_name)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        (self.parse)(v).ok_or_else(|| self.unknown(&format!("\"{v}\"")))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        (self.from_code)(v).ok_or_else(|| self.unknown(&v.to_string()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        i64::try_from(v)
            .ok()
            .and_then(self.from_code)
            .ok_or_else(|| self.unknown(&v.to_string()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
        Err(self.unknown(&v.to_string()))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<T, E> {
        Err(self.unknown(&v.to_string()))
    }
}

api_enum! {
    /// What an alert watches for (DECISIONS.md, "Alerts").
    AlertType {
        /// A check failed where the previous one did not (and the recovery after).
        Error = 0,
        /// The value differs from the previous successful value.
        NotEq = 1,
        /// The value equals the operand.
        Eq = 2,
        /// The value contains the operand.
        Contains = 3,
        /// The value does not contain the operand.
        NotContains = 4,
        /// The number in the value is greater than the operand.
        Gt = 5,
        /// The number in the value is less than the operand.
        Lt = 6,
        /// The number rose by more than the operand.
        Increased = 7,
        /// The number fell by more than the operand.
        Decreased = 8,
        /// The change added matching text (Portal: pages appeared).
        Added = 9,
        /// The change removed matching text (Portal: pages disappeared).
        Removed = 10,
        /// Extension: the value has not changed for the operand's number of seconds (a
        /// dead-man alert for a page that should change), once each time it goes stale.
        Unchanged = 11,
    }
}

api_enum! {
    /// What part of a change an alert condition looks at.
    #[derive(Default)]
    CompareType {
        /// The whole current value (default).
        #[default]
        All = 0,
        /// Only text the change added.
        Added = 1,
        /// Only text the change removed.
        Removed = 2,
        /// The whole value, case folded.
        CaseInsensitive = 3,
    }
}

api_enum! {
    /// A monitor's job type.
    #[derive(Default)]
    ClientJobType {
        /// Watches one page (default).
        #[default]
        SinglePage = 0,
        /// Crawls from the start URL.
        Portal = 1,
    }
}

api_enum! {
    /// What an alert content (endpoint 5) speaks of.
    JobType {
        /// A single-page monitor.
        SinglePage = 0,
        /// A Portal monitor's own value (its set of pages).
        Portal = 1,
        /// One page crawled by a Portal monitor.
        PortalPage = 2,
    }
}

api_enum! {
    /// How a URL filter matches.
    #[derive(Default)]
    UrlFilterType {
        /// Plain substring match.
        #[default]
        Contains = 0,
        /// Regular expression match.
        Regex = 1,
    }
}

api_enum! {
    /// Kinds of notification endpoint.
    MessagingServiceType {
        /// E-mail over SMTP.
        Email = 0,
        /// HTTP POST of JSON.
        Webhook = 1,
        /// Slack.
        Slack = 4,
        /// Discord.
        Discord = 8,
        /// Microsoft Teams.
        Teams = 16,
        /// Telegram.
        Telegram = 32,
        /// ntfy.
        Ntfy = 64,
        /// SMS.
        Sms = 92,
        /// Extension: a notification URL in Apprise's syntax (`tgram://...`, `ntfys://...`,
        /// `mailto://...`), the service named by its scheme.
        Url = 128,
    }
}

api_enum! {
    /// Hosting location of the checker.
    #[derive(Default)]
    LocationCode {
        /// Wherever the server runs.
        #[default]
        Default = 0,
        /// United States.
        Us = 1,
        /// Great Britain.
        Gb = 2,
        /// Germany.
        De = 3,
        /// Singapore.
        Sg = 4,
        /// Australia.
        Au = 5,
    }
}
