//! A verb's report phrased for an MCP client: its hints and next actions name command lines (`git
//! cutile-perf step --opt G ...`) and options (`--continue`), which a client calls as tools with
//! arguments. Each command of a served verb becomes its tool call (`step {"opt": "G", ...}`), each
//! option its argument's name; a command or option the verbs do not know stays as written.

use clap::{Arg, ArgAction};
use serde_json::{Map, Value};

use super::schema;

/// The report's fields that hold sentences for whoever drives the loop.
const SENTENCES: &[&str] = &["error", "hint", "sentence", "resume", "why", "unfinished"];

const PROGRAM: &str = "git cutile-perf ";

/// Rewrites, in place, every sentence of `report` for the tools `verbs`.
pub fn for_tools(report: &mut Value, verbs: &[clap::Command]) {
    match report {
        Value::Object(fields) => {
            for (key, value) in fields.iter_mut() {
                match value {
                    Value::String(text) if SENTENCES.contains(&key.as_str()) => {
                        *text = sentence(text, verbs);
                    }
                    _ => for_tools(value, verbs),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| for_tools(item, verbs)),
        _ => {}
    }
}

/// One sentence: each quoted command becomes a tool call, each option outside them an argument.
/// A sentence that is a bare command (a `resume`) is that call.
pub fn sentence(text: &str, verbs: &[clap::Command]) -> String {
    if text.starts_with(PROGRAM) {
        return tool_call(text, verbs).unwrap_or_else(|| text.to_string());
    }
    let text = text.replace(" For more information, try '--help'.", "");
    text.split('`')
        .enumerate()
        .map(|(i, part)| match i % 2 {
            1 => tool_call(part, verbs).unwrap_or_else(|| arguments_named(part)),
            _ => arguments_named(part),
        })
        .collect::<Vec<_>>()
        .join("`")
}

/// `git cutile-perf VERB WORDS` (or `VERB WORDS`, with some) as `VERB {arguments}`, where VERB is a
/// served tool and every word one of its arguments; `--json` is left out, as every tool's report is
/// JSON.
fn tool_call(command: &str, verbs: &[clap::Command]) -> Option<String> {
    let words = match command.strip_prefix(PROGRAM) {
        Some(words) => shell_words(words)?,
        None => shell_words(command).filter(|words| words.len() > 1)?,
    };
    let (name, words) = words.split_first()?;
    let verb = verbs.iter().find(|v| v.get_name() == name)?;
    let positionals: Vec<&Arg> = verb.get_positionals().collect();
    let mut arguments = Map::new();
    let mut words = words.iter();
    let mut position = 0;
    while let Some(word) = words.next() {
        let Some(option) = word.strip_prefix("--") else {
            let arg = positionals.get(position)?;
            position += 1;
            arguments.insert(arg.get_id().to_string(), value(arg, word));
            continue;
        };
        let (long, given) = match option.split_once('=') {
            Some((long, given)) => (long, Some(given.to_string())),
            None => (option, None),
        };
        if long == "json" {
            continue;
        }
        let arg = verb.get_arguments().find(|a| a.get_long() == Some(long))?;
        let taken = match arg.get_action() {
            ArgAction::SetTrue => Value::Bool(true),
            _ => value(arg, &given.or_else(|| words.next().cloned())?),
        };
        match (arg.get_action(), arguments.get_mut(long)) {
            (ArgAction::Append, Some(Value::Array(items))) => items.push(taken),
            (ArgAction::Append, _) => {
                drop(arguments.insert(long.into(), Value::Array(vec![taken])))
            }
            _ => drop(arguments.insert(long.into(), taken)),
        }
    }
    Some(format!("{name} {}", Value::Object(arguments)))
}

/// A word as the argument's schema types it: a number where the argument takes one.
fn value(arg: &Arg, word: &str) -> Value {
    let numeric = matches!(
        schema::value_schema(arg)["type"].as_str(),
        Some("integer" | "number")
    );
    match word.parse::<serde_json::Number>() {
        Ok(number) if numeric => Value::Number(number),
        _ => Value::String(word.to_string()),
    }
}

/// `--name` outside a quoted command: the argument `name`.
fn arguments_named(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("--") {
        let (before, after) = rest.split_at(at);
        out.push_str(before);
        let starts_word = before
            .chars()
            .last()
            .is_none_or(|c| !c.is_alphanumeric() && c != '-');
        let name_len = after[2..]
            .find(|c: char| !(c.is_ascii_lowercase() || c == '-'))
            .unwrap_or(after.len() - 2);
        if starts_word && name_len > 0 {
            out.push_str(&after[2..2 + name_len]);
        } else {
            out.push_str(&after[..2 + name_len]);
        }
        rest = &after[2 + name_len..];
    }
    out.push_str(rest);
    out
}

/// Words split as a shell would, with single and double quotes; none where a quote is not closed.
fn shell_words(line: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quote = None;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.get_or_insert_default().push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                word.get_or_insert_default();
            }
            (None, c) if c.is_whitespace() => words.extend(word.take()),
            (None, c) => word.get_or_insert_default().push(c),
        }
    }
    words.extend(word);
    quote.is_none().then_some(words)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn verbs() -> Vec<clap::Command> {
        let cli = crate::verbs::cli::Cli::command();
        super::super::TOOLS
            .iter()
            .map(|name| super::super::tool_verb(&cli, name).unwrap())
            .collect()
    }

    #[test]
    fn a_quoted_command_becomes_its_tool_call() {
        assert_eq!(
            sentence(
                "run `git cutile-perf step --json --opt G --cause <CAUSE> \"<what you changed>\"`, then",
                &verbs()
            ),
            "run `step {\"cause\":\"<CAUSE>\",\"description\":\"<what you changed>\",\"opt\":\"G\"}`, then"
        );
        assert_eq!(
            sentence(
                "git cutile-perf step --continue --json --opt A \"x y\"",
                &verbs()
            ),
            "step {\"continue\":true,\"description\":\"x y\",\"opt\":\"A\"}"
        );
        assert_eq!(
            sentence("`git cutile-perf compare 1 2`", &verbs()),
            "`compare {\"a\":1,\"b\":2}`"
        );
    }

    #[test]
    fn an_option_outside_a_command_becomes_its_argument() {
        assert_eq!(
            sentence(
                "step needs --opt: the letter; only then step again with --continue",
                &verbs()
            ),
            "step needs opt: the letter; only then step again with continue"
        );
        assert_eq!(
            sentence(
                "unexpected argument 'x' found. For more information, try '--help'.",
                &verbs()
            ),
            "unexpected argument 'x' found."
        );
        assert_eq!(
            sentence(
                "resume with `step --continue` if asked; `--opt <LETTER>`",
                &verbs()
            ),
            "resume with `step {\"continue\":true}` if asked; `opt <LETTER>`"
        );
        // a dash that starts no option, and a command no tool serves, stay
        assert_eq!(sentence("a -- b, 5--6", &verbs()), "a -- b, 5--6");
        assert_eq!(
            sentence("`git cutile-perf hook install`", &verbs()),
            "`git cutile-perf hook install`"
        );
    }
}
