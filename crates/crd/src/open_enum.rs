//! String enums that survive values from a newer operator.
//!
//! Every token the operator writes (phases, outcomes, reasons, warnings, states) is an
//! [`open_enum!`]: the values this version knows are variants, and anything else deserializes
//! into `Unrecognized(String)` and serializes back byte for byte. A console built from this crate
//! therefore never fails to read a group because a newer operator added a reason.

/// Declares a string enum with an `Unrecognized(String)` fallback.
///
/// `Closed` puts the known values into the CRD schema as an `enum` (the API server then refuses
/// anything else: use it for fields people write, such as `spec`); `Open` leaves the schema a
/// plain string (use it for status tokens, so a newer operator's values are accepted by an older
/// CRD, too).
macro_rules! open_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident ($mode:ident) {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant, )+
            /// A value this version does not know, kept verbatim so that it is written back
            /// unchanged.
            Unrecognized(String),
        }

        impl $name {
            /// Every value this version knows, in declaration order.
            pub const KNOWN: &'static [&'static str] = &[$($text),+];

            /// The value exactly as it appears in the API.
            pub fn as_str(&self) -> &str {
                match self {
                    $( Self::$variant => $text, )+
                    Self::Unrecognized(other) => other.as_str(),
                }
            }

            /// Parses a value; anything unknown becomes `Unrecognized` (this never fails).
            pub fn parse(value: &str) -> Self {
                match value {
                    $( $text => Self::$variant, )+
                    other => Self::Unrecognized(other.to_owned()),
                }
            }

            /// Whether this version knows the value.
            pub fn is_known(&self) -> bool {
                !matches!(self, Self::Unrecognized(_))
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = ::std::convert::Infallible;
            fn from_str(value: &str) -> Result<Self, Self::Err> {
                Ok(Self::parse(value))
            }
        }

        impl From<&str> for $name {
            fn from(value: &str) -> Self {
                Self::parse(value)
            }
        }

        impl From<String> for $name {
            fn from(value: String) -> Self {
                match Self::parse(&value) {
                    Self::Unrecognized(_) => Self::Unrecognized(value),
                    known => known,
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                deserializer.deserialize_str($crate::open_enum::TokenVisitor).map(Self::from)
            }
        }

        impl ::schemars::JsonSchema for $name {
            fn schema_name() -> ::std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn inline_schema() -> bool {
                true
            }

            fn json_schema(_: &mut ::schemars::SchemaGenerator) -> ::schemars::Schema {
                $crate::open_enum::token_schema(
                    Self::KNOWN,
                    $crate::open_enum::SchemaMode::$mode,
                )
            }
        }
    };
}

pub(crate) use open_enum;

/// Whether a token's known values constrain the CRD schema.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SchemaMode {
    /// The schema lists the known values as an `enum`.
    Closed,
    /// The schema is a plain string; the known values are listed in its description.
    Open,
}

pub(crate) fn token_schema(known: &[&str], mode: SchemaMode) -> schemars::Schema {
    let mut schema = serde_json::Map::new();
    schema.insert("type".to_owned(), "string".into());
    match mode {
        SchemaMode::Closed => {
            schema.insert(
                "enum".to_owned(),
                known.iter().map(|value| serde_json::Value::from(*value)).collect(),
            );
        }
        SchemaMode::Open => {
            schema.insert(
                "description".to_owned(),
                format!("Known values: {}. Newer operators may write others.", known.join(", "))
                    .into(),
            );
        }
    }
    schemars::Schema::from(schema)
}

/// Deserializes any string-like input into an owned `String`.
pub(crate) struct TokenVisitor;

impl serde::de::Visitor<'_> for TokenVisitor {
    type Value = String;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a string token")
    }

    fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<String, E> {
        Ok(value.to_owned())
    }

    fn visit_string<E: serde::de::Error>(self, value: String) -> Result<String, E> {
        Ok(value)
    }
}

#[cfg(test)]
#[allow(
    unreachable_pub,
    reason = "the macro makes the test enum's methods pub; the enum is private"
)]
mod tests {
    open_enum! {
        /// A test token.
        pub(crate) enum Color (Open) {
            Red = "Red",
            DarkBlue = "dark-blue",
        }
    }

    #[test]
    fn known_and_unknown_values_round_trip() {
        for text in ["\"Red\"", "\"dark-blue\"", "\"Chartreuse\"", "\"\""] {
            let color: Color = serde_json::from_str(text).unwrap();
            assert_eq!(serde_json::to_string(&color).unwrap(), text);
        }
        assert_eq!(Color::parse("dark-blue"), Color::DarkBlue);
        assert_eq!(Color::parse("Chartreuse"), Color::Unrecognized("Chartreuse".to_owned()));
        assert!(!Color::parse("red").is_known(), "tokens are case-sensitive");
        assert_eq!(Color::KNOWN, &["Red", "dark-blue"]);
    }

    #[test]
    fn schema_modes() {
        let open = super::token_schema(&["A", "B"], super::SchemaMode::Open);
        assert!(open.get("enum").is_none());
        let closed = super::token_schema(&["A", "B"], super::SchemaMode::Closed);
        assert_eq!(closed.get("enum"), Some(&serde_json::json!(["A", "B"])));
    }

    proptest::proptest! {
        #[test]
        fn any_string_round_trips(text in "\\PC{0,32}") {
            let color = Color::parse(&text);
            proptest::prop_assert_eq!(color.as_str(), text.as_str());
            let json = serde_json::to_string(&text).unwrap();
            let back: Color = serde_json::from_str(&json).unwrap();
            proptest::prop_assert_eq!(serde_json::to_string(&back).unwrap(), json);
        }
    }
}
