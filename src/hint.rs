//! A failure the user can act on: what went wrong, and apart from it what to do (the hint, jj-style).
//! The terminal shows the hint as a `hint:` line under `error:`, exactly as a message with the line
//! written into it would read; `--json` and the MCP tools carry it as a field of its own.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hinted {
    pub message: String,
    pub hint: Option<String>,
}

impl Hinted {
    pub fn new(message: impl Into<String>, hint: impl Into<String>) -> Hinted {
        Hinted {
            message: message.into(),
            hint: Some(hint.into()),
        }
    }
}

impl fmt::Display for Hinted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, "\nhint: {hint}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Hinted {}

/// A [`Hinted`] failure as the error verbs return.
pub fn hinted(message: impl Into<String>, hint: impl Into<String>) -> anyhow::Error {
    Hinted::new(message, hint).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_as_a_message_with_its_hint_line() {
        let failure = Hinted::new("no session", "run `start`");
        assert_eq!(failure.to_string(), "no session\nhint: run `start`");
        let plain = Hinted {
            message: "no session".into(),
            hint: None,
        };
        assert_eq!(plain.to_string(), "no session");
    }
}
