//! Execution ids: the one key every store, fence and log is addressed by.

use crate::input::InputError;

/// The longest execution id, in UTF-8 bytes.
///
/// 255 bytes fits every backend's key column and index without truncation, so
/// an id that is accepted here is accepted, unchanged, everywhere.
pub const MAX_ID_BYTES: usize = 255;

/// A string checked against the id rules (1 to [`MAX_ID_BYTES`] bytes of
/// UTF-8, no NUL) once, where it enters the program: the struct and the
/// conversions every such name needs, for [`ExecutionId`] and
/// [`NodeId`](crate::timer::NodeId) alike.
macro_rules! checked_name {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            /// Validates `id`, taking ownership so a valid id is never
            /// copied.
            pub fn new(id: impl Into<String>) -> Result<Self, $crate::InputError> {
                let id = id.into();
                $crate::id::validate(&id)?;
                Ok(Self(id))
            }

            /// The id as text, for keys, SQL parameters and messages.
            #[must_use]
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl TryFrom<String> for $name {
            type Error = $crate::InputError;
            fn try_from(id: String) -> Result<Self, $crate::InputError> {
                Self::new(id)
            }
        }

        impl TryFrom<&str> for $name {
            type Error = $crate::InputError;
            fn try_from(id: &str) -> Result<Self, $crate::InputError> {
                $crate::id::validate(id)?;
                Ok(Self(id.to_owned()))
            }
        }

        impl std::str::FromStr for $name {
            type Err = $crate::InputError;
            fn from_str(id: &str) -> Result<Self, $crate::InputError> {
                Self::try_from(id)
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Debug::fmt(&self.0, f)
            }
        }
    };
}
pub(crate) use checked_name;

checked_name! {
    /// A validated execution id: 1 to [`MAX_ID_BYTES`] bytes of UTF-8, no NUL.
    ///
    /// Holding one proves the id was checked once, at the edge, so the kernel and
    /// every adapter can key on it without re-validating or escaping anything.
    ExecutionId
}

/// Checks `id` against the id rules without allocating.
///
/// Stores call this on every `&str` they are handed, so bad ids are refused
/// with the same error whichever backend sees them.
pub(crate) fn validate(id: &str) -> Result<(), InputError> {
    if id.is_empty() {
        return Err(InputError::IdEmpty);
    }
    if id.len() > MAX_ID_BYTES {
        return Err(InputError::IdTooLong { len: id.len() });
    }
    if let Some(at) = id.bytes().position(|b| b == 0) {
        return Err(InputError::IdNul { at });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_boundaries() {
        assert_eq!(ExecutionId::new("a").map(String::from), Ok("a".to_owned()));
        let longest = "é".repeat(MAX_ID_BYTES / 2) + "x";
        assert_eq!(longest.len(), MAX_ID_BYTES);
        assert!(ExecutionId::new(longest).is_ok());
        assert!(ExecutionId::new("quote ' and \\ backslash").is_ok());
    }

    #[test]
    fn refuses_each_bad_shape_with_its_own_variant() {
        assert_eq!(ExecutionId::new(""), Err(InputError::IdEmpty));
        assert_eq!(
            ExecutionId::new("x".repeat(MAX_ID_BYTES + 1)),
            Err(InputError::IdTooLong { len: 256 })
        );
        assert_eq!(ExecutionId::new("ab\0c"), Err(InputError::IdNul { at: 2 }));
    }

    #[test]
    fn serde_refuses_invalid_ids() {
        let parsed: Result<ExecutionId, _> = serde_json::from_str("\"\"");
        assert!(parsed.is_err());
        let ok: ExecutionId = serde_json::from_str("\"run-1\"").expect("valid id");
        assert_eq!(ok.as_str(), "run-1");
        assert_eq!(serde_json::to_string(&ok).expect("serialises"), "\"run-1\"");
    }
}
