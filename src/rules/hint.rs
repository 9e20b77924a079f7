//! A failure the user can act on: what went wrong, and apart from it what to do (the hint, jj-style).
//! The hint is data: a [`Hinted`] failure displays its message only, and whoever shows the failure to
//! the user adds the hint (the terminal as a `hint:` line under `error:`, [`shown`]; `--json` and the
//! MCP tools as a field of its own), so no error text ever has to be split.

use std::fmt;

#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
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

    /// A failure kept as a value (a report's field): its message with the contexts, and its hint.
    pub fn of(err: &anyhow::Error) -> Hinted {
        Hinted {
            message: format!("{err:#}"),
            hint: of(err).map(str::to_string),
        }
    }

    /// As the terminal shows it: the message, and its hint on a line of its own.
    pub fn shown(&self) -> String {
        match &self.hint {
            Some(hint) => format!("{}\nhint: {hint}", self.message),
            None => self.message.clone(),
        }
    }
}

impl fmt::Display for Hinted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.message)
    }
}

impl std::error::Error for Hinted {}

/// Items a hint lists, joined with commas, or `none` when there are none, so that a list never prints
/// empty.
pub fn listed(items: &[impl AsRef<str>]) -> String {
    match items {
        [] => "none".to_string(),
        items => items
            .iter()
            .map(AsRef::as_ref)
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// A [`Hinted`] failure as the error verbs return.
pub fn hinted(message: impl Into<String>, hint: impl Into<String>) -> anyhow::Error {
    Hinted::new(message, hint).into()
}

/// The hint of a failure: the [`Hinted`] one's, wherever it sits among the contexts.
pub fn of(err: &anyhow::Error) -> Option<&str> {
    err.downcast_ref::<Hinted>()?.hint.as_deref()
}

/// A failure as the terminal shows it: its message with the contexts, and its hint on a line of its
/// own.
pub fn shown(err: &anyhow::Error) -> String {
    Hinted::of(err).shown()
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn shows_the_message_and_apart_from_it_the_hint() {
        let failure = hinted("no session", "run `start`");
        assert_eq!(failure.to_string(), "no session");
        assert_eq!(of(&failure), Some("run `start`"));
        assert_eq!(shown(&failure), "no session\nhint: run `start`");
        let plain = anyhow::anyhow!("no session");
        assert_eq!((of(&plain), shown(&plain)), (None, "no session".into()));
    }

    #[test]
    fn finds_the_hint_under_contexts_and_as_a_context() {
        let under: anyhow::Result<()> = Err(hinted("no session", "run `start`"));
        let under = under.context("status").unwrap_err();
        assert_eq!(shown(&under), "status: no session\nhint: run `start`");
        let missing: Option<()> = None;
        let over = missing
            .context(Hinted::new("ncu is not on PATH", "install it"))
            .unwrap_err();
        assert_eq!(shown(&over), "ncu is not on PATH\nhint: install it");
    }
}
