use std::fmt;

/// A failed request: a kind of the store's contract (or `bad_request`), and a
/// message for people. The kit compares the kind alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub kind: String,
    pub message: String,
}

impl Error {
    pub fn new(kind: impl Into<String>, message: impl Into<String>) -> Self {
        Error { kind: kind.into(), message: message.into() }
    }

    /// The request was malformed or named an unknown type, store,
    /// operation, handle or crash point: nothing happened.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Error::new("bad_request", message)
    }

    /// The store could not do its work (open, query, commit).
    pub fn io(message: impl Into<String>) -> Self {
        Error::new("io", message)
    }

    /// An operation the store does not have.
    pub fn unknown_op(store: &str, op: &str) -> Self {
        Error::bad_request(format!("the {store} store has no operation {op:?}"))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)
    }
}

impl std::error::Error for Error {}

/// A SQLite error is the store failing to do its work: `io`.
impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Self {
        Error::io(format!("sqlite: {e}"))
    }
}
