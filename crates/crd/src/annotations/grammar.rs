//! The one grammar of Bloodraven's one-shot action annotations: `<subject>(:<key>=<value>)*`.
//!
//! Rules (planned-failover document, "Per-request override"), each checked left to right so the
//! first violation is the one reported, with its byte position:
//!
//! - no whitespace anywhere in the value;
//! - a subject is required: the value may not be empty or start with `:`;
//! - the subject and every value use only `A-Za-z0-9._/+-`, so neither ever holds `:` or `=`;
//! - each pair splits at its first `=`; a pair without `=`, and an empty pair (`pdx::a=b`,
//!   a trailing `:`), are refused;
//! - keys are non-empty ASCII letters and digits, and each key appears once;
//! - values are non-empty.
//!
//! The spec names the value charset; it does not spell out the subject's or the keys' charset.
//! We hold the subject to the value charset (it is a site name or a run id, and a `=` in it
//! would make `pdx=1` read like a pair) and keys to ASCII letters and digits (every key the spec
//! names, `maxLagWait`, `since`, `confirm`, `uid`, `gtidPrefix`, is one).
//!
//! [`Action`] keeps the pairs in their written order, so `Action::parse(s)?.to_string() == s`
//! for every accepted `s`, and a value built with [`Action::new`] and [`Action::with_pair`] always
//! parses back to itself.

use std::{fmt, str::FromStr};

/// The characters a subject or value may use, as the spec writes them.
pub const VALUE_CHARSET: &str = "A-Za-z0-9._/+-";

/// Whether `byte` may appear in a subject or a value (`A-Za-z0-9._/+-`).
pub const fn is_value_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'/' | b'+' | b'-')
}

/// Whether `byte` may appear in a key (ASCII letters and digits).
pub const fn is_key_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric()
}

/// A parsed action annotation value: a subject and its `key=value` pairs in written order.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Action {
    subject: String,
    pairs: Vec<(String, String)>,
}

/// One `key=value` pair of an [`Action`], with where it sits in the formatted value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pair<'a> {
    /// The key, left of the first `=`.
    pub key: &'a str,
    /// The value, right of the first `=`.
    pub value: &'a str,
    /// Byte offset of the key in the formatted value.
    pub key_position: usize,
    /// Byte offset of the value in the formatted value.
    pub value_position: usize,
}

/// Why an action annotation value was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid action annotation value {input:?}: {kind} at byte {position}")]
pub struct ActionError {
    /// The value that was parsed (for the builder, the value as it would have been formatted).
    pub input: String,
    /// Byte offset into `input` of the offending character or part.
    pub position: usize,
    /// Which rule was broken.
    pub kind: ActionErrorKind,
}

/// The grammar rules an action annotation value can break.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ActionErrorKind {
    /// The value is empty.
    #[error("the value is empty (a subject is required)")]
    Empty,
    /// Whitespace anywhere in the value.
    #[error("whitespace {found:?} is not allowed")]
    Whitespace {
        /// The whitespace character.
        found: char,
    },
    /// The value starts with `:`: pairs with no subject.
    #[error("a subject is required before the first ':'")]
    MissingSubject,
    /// A subject character outside `A-Za-z0-9._/+-`.
    #[error("character {found:?} is not allowed in the subject (allowed: A-Za-z0-9._/+-)")]
    InvalidSubjectCharacter {
        /// The refused character.
        found: char,
    },
    /// `::` or a trailing `:`.
    #[error("empty pair")]
    EmptyPair,
    /// A pair with no `=`.
    #[error("pair {pair:?} has no '='")]
    MissingEquals {
        /// The pair as written.
        pair: String,
    },
    /// A pair starting with `=`.
    #[error("empty key")]
    EmptyKey,
    /// A key character other than an ASCII letter or digit.
    #[error("character {found:?} is not allowed in a key (allowed: A-Za-z0-9)")]
    InvalidKeyCharacter {
        /// The refused character.
        found: char,
    },
    /// `key=` with nothing after the `=`.
    #[error("key {key:?} has an empty value")]
    EmptyValue {
        /// The key whose value is empty.
        key: String,
    },
    /// A value character outside `A-Za-z0-9._/+-` (including a second `=`).
    #[error("character {found:?} is not allowed in the value of {key:?} (allowed: A-Za-z0-9._/+-)")]
    InvalidValueCharacter {
        /// The key whose value holds it.
        key: String,
        /// The refused character.
        found: char,
    },
    /// A key written twice.
    #[error("key {key:?} appears more than once")]
    DuplicateKey {
        /// The repeated key.
        key: String,
    },
}

/// The first character of `text` outside the allowed bytes, with its offset from `base`.
fn first_refused(text: &str, base: usize, allowed: fn(u8) -> bool) -> Option<(usize, char)> {
    text.char_indices()
        .find(|&(_, c)| !(c.is_ascii() && allowed(c as u8)))
        .map(|(offset, c)| (base + offset, c))
}

impl Action {
    /// An action with `subject` and no pairs.
    pub fn new(subject: impl Into<String>) -> Result<Action, ActionError> {
        let subject = subject.into();
        let fail = |position, kind| Err(ActionError { input: subject.clone(), position, kind });
        if subject.is_empty() {
            return fail(0, ActionErrorKind::Empty);
        }
        if let Some((position, found)) = subject.char_indices().find(|(_, c)| c.is_whitespace()) {
            return fail(position, ActionErrorKind::Whitespace { found });
        }
        if subject.starts_with(':') {
            return fail(0, ActionErrorKind::MissingSubject);
        }
        if let Some((position, found)) = first_refused(&subject, 0, is_value_byte) {
            return fail(position, ActionErrorKind::InvalidSubjectCharacter { found });
        }
        Ok(Action { subject, pairs: Vec::new() })
    }

    /// This action with `key=value` appended, checked by the same rules as [`Action::parse`].
    pub fn with_pair(
        mut self,
        key: impl Into<String>,
        value: impl Into<String>,
    ) -> Result<Action, ActionError> {
        let (key, value) = (key.into(), value.into());
        let key_position = self.formatted_len() + 1;
        let value_position = key_position + key.len() + 1;
        let input = format!("{self}:{key}={value}");
        let fail = |position, kind| Err(ActionError { input: input.clone(), position, kind });
        if let Some((position, found)) = input.char_indices().find(|(_, c)| c.is_whitespace()) {
            return fail(position, ActionErrorKind::Whitespace { found });
        }
        if key.is_empty() && value.is_empty() {
            return fail(key_position, ActionErrorKind::EmptyPair);
        }
        if key.is_empty() {
            return fail(key_position, ActionErrorKind::EmptyKey);
        }
        if let Some((position, found)) = first_refused(&key, key_position, is_key_byte) {
            return fail(position, ActionErrorKind::InvalidKeyCharacter { found });
        }
        if value.is_empty() {
            return fail(value_position, ActionErrorKind::EmptyValue { key });
        }
        if let Some((position, found)) = first_refused(&value, value_position, is_value_byte) {
            return fail(position, ActionErrorKind::InvalidValueCharacter { key, found });
        }
        if self.pairs.iter().any(|(existing, _)| *existing == key) {
            return fail(key_position, ActionErrorKind::DuplicateKey { key });
        }
        self.pairs.push((key, value));
        Ok(self)
    }

    /// Parses `input` by the grammar `<subject>(:<key>=<value>)*`.
    pub fn parse(input: &str) -> Result<Action, ActionError> {
        let fail = |position, kind| Err(ActionError { input: input.to_owned(), position, kind });
        if input.is_empty() {
            return fail(0, ActionErrorKind::Empty);
        }
        if let Some((position, found)) = input.char_indices().find(|(_, c)| c.is_whitespace()) {
            return fail(position, ActionErrorKind::Whitespace { found });
        }
        let mut segments = input.split(':');
        let subject = segments.next().unwrap_or_default();
        if subject.is_empty() {
            return fail(0, ActionErrorKind::MissingSubject);
        }
        if let Some((position, found)) = first_refused(subject, 0, is_value_byte) {
            return fail(position, ActionErrorKind::InvalidSubjectCharacter { found });
        }
        let mut pairs: Vec<(String, String)> = Vec::new();
        let mut start = subject.len() + 1;
        for segment in segments {
            if segment.is_empty() {
                return fail(start, ActionErrorKind::EmptyPair);
            }
            let Some((key, value)) = segment.split_once('=') else {
                return fail(start, ActionErrorKind::MissingEquals { pair: segment.to_owned() });
            };
            if key.is_empty() {
                return fail(start, ActionErrorKind::EmptyKey);
            }
            if let Some((position, found)) = first_refused(key, start, is_key_byte) {
                return fail(position, ActionErrorKind::InvalidKeyCharacter { found });
            }
            let value_position = start + key.len() + 1;
            if value.is_empty() {
                return fail(value_position, ActionErrorKind::EmptyValue { key: key.to_owned() });
            }
            if let Some((position, found)) = first_refused(value, value_position, is_value_byte) {
                let key = key.to_owned();
                return fail(position, ActionErrorKind::InvalidValueCharacter { key, found });
            }
            if pairs.iter().any(|(existing, _)| existing == key) {
                return fail(start, ActionErrorKind::DuplicateKey { key: key.to_owned() });
            }
            pairs.push((key.to_owned(), value.to_owned()));
            start += segment.len() + 1;
        }
        Ok(Action { subject: subject.to_owned(), pairs })
    }

    /// The subject (the target site, a run id, ...).
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// The pairs in written order, with their positions in the formatted value.
    pub fn pairs(&self) -> impl Iterator<Item = Pair<'_>> {
        let mut start = self.subject.len() + 1;
        self.pairs.iter().map(move |(key, value)| {
            let pair =
                Pair { key, value, key_position: start, value_position: start + key.len() + 1 };
            start += key.len() + value.len() + 2;
            pair
        })
    }

    /// The pair with `key`, if present.
    pub fn get(&self, key: &str) -> Option<Pair<'_>> {
        self.pairs().find(|pair| pair.key == key)
    }

    /// Whether the action has no pairs.
    pub fn has_no_pairs(&self) -> bool {
        self.pairs.is_empty()
    }

    fn formatted_len(&self) -> usize {
        self.subject.len() + self.pairs.iter().map(|(k, v)| k.len() + v.len() + 2).sum::<usize>()
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.subject)?;
        for (key, value) in &self.pairs {
            write!(f, ":{key}={value}")?;
        }
        Ok(())
    }
}

impl FromStr for Action {
    type Err = ActionError;

    fn from_str(input: &str) -> Result<Action, ActionError> {
        Action::parse(input)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn refused(input: &str) -> (usize, ActionErrorKind) {
        let err = Action::parse(input).unwrap_err();
        assert_eq!(err.input, input);
        (err.position, err.kind)
    }

    #[test]
    fn accepts_the_spec_examples() {
        let action = Action::parse("pdx").unwrap();
        assert_eq!(action.subject(), "pdx");
        assert!(action.has_no_pairs());

        let action = Action::parse("pdx:maxLagWait=30s").unwrap();
        assert_eq!(action.subject(), "pdx");
        let pair = action.get("maxLagWait").unwrap();
        assert_eq!(
            (pair.key, pair.value, pair.key_position, pair.value_position),
            ("maxLagWait", "30s", 4, 15)
        );

        let text = "fra:confirm=orders:uid=1f2e-33:gtidPrefix=3e11fa47-71ca-11e1-9e33-c80aa9429562";
        let action = Action::parse(text).unwrap();
        assert_eq!(action.to_string(), text);
        let positions: Vec<_> =
            action.pairs().map(|p| (p.key, p.key_position, p.value_position)).collect();
        assert_eq!(positions, [("confirm", 4, 12), ("uid", 19, 23), ("gtidPrefix", 31, 42)]);
        for pair in action.pairs() {
            assert_eq!(
                &text[pair.value_position..pair.value_position + pair.value.len()],
                pair.value
            );
        }
    }

    #[test]
    fn refuses_every_rule_with_its_position() {
        assert_eq!(refused(""), (0, ActionErrorKind::Empty));
        assert_eq!(refused(":maxLagWait=5s"), (0, ActionErrorKind::MissingSubject));
        assert_eq!(refused("pdx:maxLagWait=5 s"), (16, ActionErrorKind::Whitespace { found: ' ' }));
        assert_eq!(refused(" pdx"), (0, ActionErrorKind::Whitespace { found: ' ' }));
        assert_eq!(refused("pdx\t"), (3, ActionErrorKind::Whitespace { found: '\t' }));
        assert_eq!(refused("pdx\u{a0}"), (3, ActionErrorKind::Whitespace { found: '\u{a0}' }));
        assert_eq!(refused("p=dx"), (1, ActionErrorKind::InvalidSubjectCharacter { found: '=' }));
        assert_eq!(refused("pdé"), (2, ActionErrorKind::InvalidSubjectCharacter { found: 'é' }));
        assert_eq!(refused("pdx:"), (4, ActionErrorKind::EmptyPair));
        assert_eq!(refused("pdx::a=b"), (4, ActionErrorKind::EmptyPair));
        assert_eq!(refused("pdx:a=b:"), (8, ActionErrorKind::EmptyPair));
        assert_eq!(
            refused("pdx:maxLagWait"),
            (4, ActionErrorKind::MissingEquals { pair: "maxLagWait".into() })
        );
        assert_eq!(refused("pdx:=5s"), (4, ActionErrorKind::EmptyKey));
        assert_eq!(
            refused("pdx:max-lag=5s"),
            (7, ActionErrorKind::InvalidKeyCharacter { found: '-' })
        );
        assert_eq!(
            refused("pdx:maxLagWait="),
            (15, ActionErrorKind::EmptyValue { key: "maxLagWait".into() })
        );
        assert_eq!(
            refused("pdx:a=b=c"),
            (7, ActionErrorKind::InvalidValueCharacter { key: "a".into(), found: '=' })
        );
        assert_eq!(
            refused("pdx:a=5µs"),
            (7, ActionErrorKind::InvalidValueCharacter { key: "a".into(), found: 'µ' })
        );
        assert_eq!(
            refused("pdx:maxLagWait=5s:maxLagWait=6s"),
            (18, ActionErrorKind::DuplicateKey { key: "maxLagWait".into() })
        );
    }

    #[test]
    fn errors_name_the_input_and_position() {
        let err = Action::parse("pdx:maxLagWait=5 s").unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid action annotation value \"pdx:maxLagWait=5 s\": whitespace ' ' is not allowed at byte 16"
        );
    }

    #[test]
    fn the_builder_applies_the_same_rules() {
        let action = Action::new("pdx").unwrap().with_pair("maxLagWait", "30s").unwrap();
        assert_eq!(action.to_string(), "pdx:maxLagWait=30s");
        assert_eq!(Action::parse(&action.to_string()).unwrap(), action);

        let err = action.clone().with_pair("maxLagWait", "1s").unwrap_err();
        assert_eq!(
            (err.position, err.kind),
            (19, ActionErrorKind::DuplicateKey { key: "maxLagWait".into() })
        );
        assert_eq!(err.input, "pdx:maxLagWait=30s:maxLagWait=1s");
        let err = action.clone().with_pair("a", "x:y").unwrap_err();
        assert_eq!(err.position, 22);
        assert_eq!(action.clone().with_pair("", "").unwrap_err().kind, ActionErrorKind::EmptyPair);
        assert_eq!(action.clone().with_pair("", "x").unwrap_err().kind, ActionErrorKind::EmptyKey);
        assert_eq!(Action::new("").unwrap_err().kind, ActionErrorKind::Empty);
        assert_eq!(Action::new(":x").unwrap_err().kind, ActionErrorKind::MissingSubject);
        assert_eq!(Action::new("a:b").unwrap_err().position, 1);
    }
}
