//! A verb's MCP input schema and its command line, both read from clap's definition of the verb, so that
//! the tools cannot drift from the command line: a positional argument is a property under its name, an
//! option under its long name (`slurm-args`, `continue`); a flag is a boolean, a repeatable option an
//! array, a value enum an `enum` of its words, an integer or number parser an integer or number.

use std::any::TypeId;

use anyhow::Result;
use clap::{Arg, ArgAction};
use serde_json::{Map, Value, json};

use crate::rules::hint::hinted;

/// Arguments that are not the tool's to set: the report is always JSON.
const NOT_TOOL_ARGUMENTS: &[&str] = &["help", "version", "json"];

/// The property an argument is under.
fn property(arg: &Arg) -> String {
    match arg.get_long() {
        Some(long) => long.to_string(),
        None => arg.get_id().to_string(),
    }
}

fn tool_arguments(verb: &clap::Command) -> impl Iterator<Item = &Arg> {
    verb.get_arguments()
        .filter(|a| !NOT_TOOL_ARGUMENTS.contains(&a.get_id().as_str()) && !a.is_hide_set())
}

/// The JSON schema of one value of `arg`.
pub fn value_schema(arg: &Arg) -> Value {
    let words: Vec<String> = arg
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| v.get_name().to_string())
        .collect();
    if !words.is_empty() {
        return json!({"type": "string", "enum": words});
    }
    let parsed = arg.get_value_parser().type_id();
    let integers = [
        TypeId::of::<u8>(),
        TypeId::of::<u16>(),
        TypeId::of::<u32>(),
        TypeId::of::<u64>(),
        TypeId::of::<usize>(),
        TypeId::of::<i32>(),
        TypeId::of::<i64>(),
    ];
    if integers.iter().any(|t| parsed == *t) {
        json!({"type": "integer"})
    } else if parsed == TypeId::of::<f64>() {
        json!({"type": "number"})
    } else {
        json!({"type": "string"})
    }
}

fn describe(arg: &Arg) -> String {
    let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
    let defaults: Vec<String> = arg
        .get_default_values()
        .iter()
        .map(|v| v.to_string_lossy().into_owned())
        .collect();
    if defaults.is_empty() || matches!(arg.get_action(), ArgAction::SetTrue) {
        help
    } else {
        format!("{help} (default: {})", defaults.join(", "))
    }
}

/// Options a verb refuses to run without that clap leaves optional, as (verb, option): `step` without
/// `--opt` is refused with a hint naming the letter to give, which a tool's schema says up front.
const REFUSED_WITHOUT: &[(&str, &str)] = &[("step", "opt")];

/// The input schema of `verb`'s tool: a JSON-schema object.
pub fn input_schema(verb: &clap::Command) -> Map<String, Value> {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for arg in tool_arguments(verb) {
        let mut schema = match arg.get_action() {
            ArgAction::SetTrue => json!({"type": "boolean"}),
            ArgAction::Append => json!({"type": "array", "items": value_schema(arg)}),
            _ => value_schema(arg),
        };
        schema["description"] = Value::String(describe(arg));
        let refused_without = REFUSED_WITHOUT.contains(&(verb.get_name(), arg.get_id().as_str()));
        if arg.is_required_set() || refused_without {
            required.push(Value::String(property(arg)));
        }
        properties.insert(property(arg), schema);
    }
    let mut schema = Map::new();
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        schema.insert("required".into(), Value::Array(required));
    }
    schema.insert("additionalProperties".into(), json!(false));
    schema
}

/// The words after the verb for a tool call's `arguments`: options first, each as one word `--name=value`
/// (so a value that starts with `-`, a note such as "-5% expected", stays that option's value), then `--`
/// and the positional arguments in their order (so a description that starts with `-` stays a
/// description). clap checks the values as it does on the command line.
pub fn command_line(verb: &clap::Command, arguments: &Map<String, Value>) -> Result<Vec<String>> {
    let args: Vec<&Arg> = tool_arguments(verb).collect();
    if let Some(unknown) = arguments
        .keys()
        .find(|k| !args.iter().any(|a| property(a) == **k))
    {
        let known: Vec<String> = args.iter().map(|a| property(a)).collect();
        return Err(hinted(
            format!("{} takes no argument {unknown:?}", verb.get_name()),
            format!("its arguments are: {}", crate::rules::hint::listed(&known)),
        ));
    }
    let mut options = Vec::new();
    let mut positionals = Vec::new();
    for arg in args {
        let Some(value) = arguments.get(&property(arg)) else {
            continue;
        };
        let values = match value {
            Value::Null => continue,
            Value::Array(items) => items.iter().map(word).collect::<Result<Vec<_>>>()?,
            other => vec![word(other)?],
        };
        match arg.get_long() {
            None => positionals.extend(values),
            Some(long) if matches!(arg.get_action(), ArgAction::SetTrue) => match value {
                Value::Bool(true) => options.push(format!("--{long}")),
                Value::Bool(false) => {}
                other => {
                    return Err(hinted(
                        format!("{long} is a flag: {other} is not true or false"),
                        format!("give \"{long}\": true to set it, or leave it out"),
                    ));
                }
            },
            Some(long) => {
                options.extend(values.into_iter().map(|v| format!("--{long}={v}")));
            }
        }
    }
    if !positionals.is_empty() {
        options.push("--".to_string());
        options.extend(positionals);
    }
    Ok(options)
}

/// One value as the command line spells it.
fn word(value: &Value) -> Result<String> {
    match value {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        other => Err(hinted(
            format!("{other} is not a value an option takes"),
            "give a string, a number or a boolean",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Arg, Command, value_parser};

    fn verb() -> Command {
        Command::new("step")
            .arg(Arg::new("description").required(true).help("What changed"))
            .arg(
                Arg::new("continue_anyway")
                    .long("continue")
                    .action(ArgAction::SetTrue)
                    .help("Run anyway"),
            )
            .arg(
                Arg::new("allow")
                    .long("allow")
                    .action(ArgAction::Append)
                    .help("A path"),
            )
            .arg(
                Arg::new("stat")
                    .long("stat")
                    .value_parser(["mean", "median"])
                    .default_value("median")
                    .help("Statistic"),
            )
            .arg(
                Arg::new("iteration")
                    .long("iteration")
                    .value_parser(value_parser!(u32)),
            )
            .arg(Arg::new("json").long("json").action(ArgAction::SetTrue))
    }

    #[test]
    fn the_schema_follows_each_argument_kind() {
        assert_eq!(
            Value::Object(input_schema(&verb())),
            json!({
                "type": "object",
                "properties": {
                    "description": {"type": "string", "description": "What changed"},
                    "continue": {"type": "boolean", "description": "Run anyway"},
                    "allow": {"type": "array", "items": {"type": "string"}, "description": "A path"},
                    "stat": {"type": "string", "enum": ["mean", "median"], "description": "Statistic (default: median)"},
                    "iteration": {"type": "integer", "description": ""},
                },
                "required": ["description"],
                "additionalProperties": false,
            })
        );
    }

    #[test]
    fn arguments_become_options_then_positionals_after_a_separator() {
        let arguments = json!({
            "description": "-5% trick",
            "continue": true,
            "allow": ["a.py", "b c.py"],
            "iteration": 3,
            "stat": null,
        });
        assert_eq!(
            command_line(&verb(), arguments.as_object().unwrap()).unwrap(),
            [
                "--continue",
                "--allow=a.py",
                "--allow=b c.py",
                "--iteration=3",
                "--",
                "-5% trick"
            ]
        );
        let off = json!({"continue": false});
        assert!(
            command_line(&verb(), off.as_object().unwrap())
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn an_option_value_that_starts_with_a_dash_stays_the_options_value() {
        let arguments = json!({
            "description": "unrolled",
            "allow": ["-5% expected", "--json"],
        });
        let words = command_line(&verb(), arguments.as_object().unwrap()).unwrap();
        let matches = verb()
            .try_get_matches_from(std::iter::once("step".to_string()).chain(words))
            .unwrap();
        let allowed: Vec<&String> = matches.get_many("allow").unwrap().collect();
        assert_eq!(allowed, ["-5% expected", "--json"]);
        assert!(!matches.get_flag("json"));
        assert_eq!(
            matches.get_one::<String>("description").unwrap(),
            "unrolled"
        );
    }

    #[test]
    fn a_flag_given_other_than_true_or_false_is_refused() {
        for given in [json!("yes"), json!(1), json!(["true"])] {
            let arguments = json!({"description": "x", "continue": given});
            let err = command_line(&verb(), arguments.as_object().unwrap()).unwrap_err();
            assert!(
                crate::rules::hint::shown(&err).starts_with("continue is a flag: "),
                "{err:#}"
            );
        }
    }

    #[test]
    fn an_unknown_argument_is_refused_with_the_known_ones() {
        let arguments = json!({"descripton": "x"});
        let err = command_line(&verb(), arguments.as_object().unwrap()).unwrap_err();
        assert_eq!(
            crate::rules::hint::shown(&err),
            "step takes no argument \"descripton\"\nhint: its arguments are: description, continue, allow, \
             stat, iteration"
        );
        let err =
            command_line(&Command::new("status"), arguments.as_object().unwrap()).unwrap_err();
        assert_eq!(
            crate::rules::hint::shown(&err),
            "status takes no argument \"descripton\"\nhint: its arguments are: none"
        );
    }
}
