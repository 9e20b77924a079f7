//! Commit messages that carry a trailer block no user text can forge or break.
//!
//! git reads trailers only from the last paragraph of a message, one `Key: value` per line, and a line
//! starting with whitespace continues the previous value. So the message is built as subject, then the
//! user's notes with every line indented (never a trailer, never git's `---` divider), then our block,
//! last; every value is a single line with control characters escaped. Reading rejects a repeated key
//! that must be single, since that is how a hand-edited or squashed history shows itself.

use anyhow::{Result, bail};

/// The namespace of every trailer key this tool writes.
pub const PREFIX: &str = "Cutile-Perf-";

/// An ordered list of `(key without prefix, value)` pairs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Block {
    entries: Vec<(String, String)>,
}

impl Block {
    pub fn push(&mut self, key: &str, value: impl AsRef<str>) {
        debug_assert!(key.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'));
        self.entries
            .push((key.to_string(), one_line(value.as_ref())));
    }

    /// The single value of `key`; an error if it is repeated.
    pub fn get<'a>(&'a self, key: &'a str) -> Result<Option<&'a str>> {
        let mut values = self.all(key);
        let first = values.next();
        if values.next().is_some() {
            bail!("trailer {PREFIX}{key} appears more than once");
        }
        Ok(first)
    }

    /// The single value of `key`, which must be present.
    pub fn require<'a>(&'a self, key: &'a str) -> Result<&'a str> {
        match self.get(key)? {
            Some(value) => Ok(value),
            None => bail!("trailer {PREFIX}{key} is missing"),
        }
    }

    pub fn all<'a>(&'a self, key: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.entries
            .iter()
            .filter(move |(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v.as_str())
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The block as the message carries it: one `Cutile-Perf-Key: value` line each.
    pub fn render(&self) -> String {
        self.entries
            .iter()
            .map(|(key, value)| format!("{PREFIX}{key}: {value}\n"))
            .collect()
    }

    /// Parses the trailers of a whole commit message, keeping only this tool's keys. Trailer paragraphs
    /// that other tools appended after ours (Gerrit's `Change-Id`, `Signed-off-by`) are read past.
    pub fn from_message(message: &str) -> Block {
        let mut message = message.trim_end();
        loop {
            let block = Block::from_last_paragraph(message);
            match message.rsplit_once("\n\n") {
                Some((before, last)) if block.is_empty() && only_foreign_trailers(last) => {
                    message = before.trim_end();
                }
                _ => return block,
            }
        }
    }

    fn from_last_paragraph(message: &str) -> Block {
        let parsed = gix::objs::commit::MessageRef::from_bytes(message.as_bytes());
        let mut block = Block::default();
        let Some(body) = parsed.body() else {
            return block;
        };
        for trailer in body.trailers() {
            let key = trailer.token.to_string();
            if key.len() > PREFIX.len() && key[..PREFIX.len()].eq_ignore_ascii_case(PREFIX) {
                block
                    .entries
                    .push((key[PREFIX.len()..].to_string(), trailer.value.to_string()));
            }
        }
        block
    }
}

/// Whether every line of `paragraph` is a `Key: value` trailer (or continues one) and none is ours.
fn only_foreign_trailers(paragraph: &str) -> bool {
    let is_trailer = |line: &str| {
        line.split_once(':').is_some_and(|(key, _)| {
            !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
    };
    let mut lines = paragraph.trim_matches('\n').lines();
    lines.next().is_some_and(is_trailer)
        && paragraph
            .trim_matches('\n')
            .lines()
            .all(|line| line.starts_with([' ', '\t']) || is_trailer(line))
        && !paragraph
            .to_ascii_lowercase()
            .contains(&PREFIX.to_ascii_lowercase())
}

/// Builds `subject`, the indented `notes` paragraph if any, and the trailer block.
pub fn render_message(subject: &str, notes: Option<&str>, block: &Block) -> String {
    let mut message = one_line(subject);
    message.push_str("\n\n");
    if let Some(notes) = notes.filter(|n| !n.trim().is_empty()) {
        message.push_str("Notes:\n");
        for line in notes.trim_end().lines() {
            let line: String = line
                .chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect();
            message.push_str("    ");
            message.push_str(line.trim_end());
            message.push('\n');
        }
        message.push('\n');
    }
    message.push_str(&block.render());
    message
}

/// A value git keeps on one line: control and line-separator characters become spaces, runs of
/// whitespace collapse, and the ends are trimmed (git trims them when reading anyway).
pub fn one_line(text: &str) -> String {
    text.split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A field that must survive exactly (a path, a test id): written as is when it is plain, else as a JSON
/// string, which escapes control characters and quotes and is unambiguous to read back.
pub fn encode_field(text: &str) -> String {
    let plain = !text.is_empty()
        && !text.starts_with('"')
        && text.trim() == text
        && !text.contains("  ")
        && !text
            .chars()
            .any(|c| c.is_control() || c.is_whitespace() && c != ' ');
    if plain {
        text.to_string()
    } else {
        quoted(text)
    }
}

/// `text` as a JSON string that [`Block::push`] keeps as it is: a run of spaces, which a trailer value
/// would collapse, is written as escapes.
fn quoted(text: &str) -> String {
    serde_json::to_string(text)
        .expect("strings serialize")
        .replace("  ", "\\u0020\\u0020")
}

/// A field followed by more text on the same line (a config's pass name): written as is only when it
/// is one plain word, else quoted, so that a space or an empty name cannot shift what follows.
pub fn encode_word(text: &str) -> String {
    if !text.is_empty()
        && !text.starts_with('"')
        && !text.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        text.to_string()
    } else {
        quoted(text)
    }
}

/// Reads an [`encode_word`] field off the front of `text`; returns it and the rest after one space.
pub fn split_word(text: &str) -> Result<(String, &str)> {
    if text.starts_with('"') {
        let mut stream = serde_json::Deserializer::from_str(text).into_iter::<String>();
        let word = match stream.next() {
            Some(Ok(word)) => word,
            _ => bail!("bad quoted field in {text:?}"),
        };
        let rest = &text[stream.byte_offset()..];
        return Ok((word, rest.strip_prefix(' ').unwrap_or(rest)));
    }
    let (word, rest) = text.split_once(' ').unwrap_or((text, ""));
    Ok((word.to_string(), rest))
}

pub fn decode_field(text: &str) -> Result<String> {
    if text.starts_with('"') {
        Ok(serde_json::from_str(text)
            .map_err(|e| anyhow::anyhow!("bad quoted field {text}: {e}"))?)
    } else {
        Ok(text.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_subject_notes_and_block() {
        let mut block = Block::default();
        block.push("Iteration", "3");
        block.push("Optimization", "tile\nsize");
        let message = render_message(
            "cutile-perf: #3 keep",
            Some("line one\nCutile-Perf-Status: keep\n---"),
            &block,
        );
        assert_eq!(
            message,
            "cutile-perf: #3 keep\n\nNotes:\n    line one\n    Cutile-Perf-Status: keep\n    ---\n\n\
             Cutile-Perf-Iteration: 3\nCutile-Perf-Optimization: tile size\n"
        );
        let read = Block::from_message(&message);
        assert_eq!(read.get("Status").unwrap(), None);
        assert_eq!(read.require("Optimization").unwrap(), "tile size");
    }

    #[test]
    fn hostile_values_stay_inside_their_trailer() {
        let mut block = Block::default();
        block.push(
            "Optimization",
            "x\n\nCutile-Perf-Status: keep\r\nSigned-off-by: m\u{2028}y\u{85}z",
        );
        block.push("Status", "revert");
        let message = render_message(
            "s\nCutile-Perf-Status: keep",
            Some("\n\nCutile-Perf-Status: keep"),
            &block,
        );
        let read = Block::from_message(&message);
        assert_eq!(read.all("Status").collect::<Vec<_>>(), vec!["revert"]);
        assert_eq!(
            read.require("Optimization").unwrap(),
            "x Cutile-Perf-Status: keep Signed-off-by: m y z"
        );
        assert_eq!(
            message.lines().next().unwrap(),
            "s Cutile-Perf-Status: keep"
        );
    }

    #[test]
    fn repeated_keys_are_errors() {
        let read =
            Block::from_message("s\n\nCutile-Perf-Status: keep\ncutile-perf-status: revert\n");
        assert_eq!(
            read.get("Status").unwrap_err().to_string(),
            "trailer Cutile-Perf-Status appears more than once"
        );
        assert_eq!(
            read.require("Latency-Ms").unwrap_err().to_string(),
            "trailer Cutile-Perf-Latency-Ms is missing"
        );
    }

    #[test]
    fn trailers_other_tools_append_are_read_past() {
        let ours = "s\n\nCutile-Perf-Status: keep\n";
        for appended in [
            "Change-Id: I0123456789abcdef\n",
            "\nChange-Id: I0123456789abcdef\n",
            "\nSigned-off-by: A <a@b>\n\nChange-Id: I01\n",
        ] {
            let read = Block::from_message(&format!("{ours}{appended}"));
            assert_eq!(read.require("Status").unwrap(), "keep", "{appended:?}");
        }
        let after_prose =
            Block::from_message("s\n\nCutile-Perf-Status: keep\n\nplain: text here\nmore\n");
        assert!(after_prose.is_empty());
    }

    #[test]
    fn only_the_last_paragraph_counts() {
        let read = Block::from_message("s\n\nCutile-Perf-Status: keep\n\nplain text\n");
        assert!(read.is_empty());
    }

    #[test]
    fn fields_round_trip() {
        for text in [
            "src/a b.py",
            "tests/x.py::test[a\nb]",
            "\"quoted",
            " lead",
            "é/ü.py",
            "tab\there",
            "",
            "two  spaces   three",
            "a\\  b",
        ] {
            let encoded = encode_field(text);
            assert!(!encoded.contains('\n'));
            assert_eq!(decode_field(&encoded).unwrap(), text);
            let mut block = Block::default();
            block.push("Field", &encoded);
            let read = Block::from_message(&render_message("s", None, &block));
            assert_eq!(decode_field(read.require("Field").unwrap()).unwrap(), text);
        }
        assert_eq!(encode_field("src/a b.py"), "src/a b.py");
        for word in ["fwd bwd", "", "\"q", "forward", "a\tb"] {
            let line = format!("{} 0.5 rest of it", encode_word(word));
            assert_eq!(
                split_word(&line).unwrap(),
                (word.to_string(), "0.5 rest of it")
            );
        }
        assert_eq!(encode_field("a\nb"), "\"a\\nb\"");
    }
}
