//! What can make `shmem_init` fail, as values: each phase returns one, and only the top of
//! `init` turns it into the job's end (`crate::error::fatal`, naming the routine). The texts
//! are the messages users see; tests and documentation quote them.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InitError {
    /// The launcher's exchange failed (a lost connection, a fence that could not complete).
    Bootstrap(String),
    /// A setting's value is wrong, or the PEs do not agree on one.
    Setting(String),
    /// No component of a framework could be selected or opened; the text says why.
    Component(String),
    /// This PE's symmetric memory could not be made, registered or placed.
    Memory(String),
    /// A peer's published records are missing, malformed or do not match this PE's.
    Peer { pe: i32, why: String },
    /// The launcher's account of which PEs share a host contradicts the PEs' own.
    Layout(String),
    /// Some PE of this host cannot map another, and the spml opened no transport between them.
    Unreachable(String),
}

impl InitError {
    /// The bootstrap error of one exchange step (`what`: "put", "fence", ...).
    pub fn boot(what: &str, e: impl fmt::Display) -> InitError {
        InitError::Bootstrap(format!(
            "bootstrap{}: {e}",
            if what.is_empty() { String::new() } else { format!(" {what}") }
        ))
    }
}

impl fmt::Display for InitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InitError::Bootstrap(m)
            | InitError::Setting(m)
            | InitError::Component(m)
            | InitError::Memory(m)
            | InitError::Layout(m)
            | InitError::Unreachable(m) => f.write_str(m),
            InitError::Peer { why, .. } => f.write_str(why),
        }
    }
}

impl std::error::Error for InitError {}

#[cfg(test)]
mod tests {
    use super::InitError;

    #[test]
    fn bootstrap_errors_name_the_step() {
        assert_eq!(
            InitError::boot("fence", "connection reset").to_string(),
            "bootstrap fence: connection reset"
        );
        assert_eq!(InitError::boot("", "gone").to_string(), "bootstrap: gone");
    }
}
