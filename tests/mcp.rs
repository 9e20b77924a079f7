//! The MCP server end to end: a whole fixture session driven over stdio with raw JSON-RPC, as an agent's
//! client would: initialize, tools/list, start, steps that keep, revert and crash, a cancelled step,
//! and status with its next action after each.

use crate::support;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};

use clap::{CommandFactory, Parser};
use git_cutile_perf::verbs::agent::mcp::{TOOLS, schema, tool_verb};
use git_cutile_perf::verbs::cli::Cli;
use serde_json::{Value, json};
use support::hang::Hang;
use support::{Fixture, KERNEL};

/// A client speaking newline-delimited JSON-RPC to the server's stdin and stdout.
struct Client {
    server: Child,
    /// `None` once the client has closed it.
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
    /// Notifications received while waiting for responses.
    notifications: Vec<Value>,
}

impl Client {
    fn start(hang: &Hang, f: &Fixture) -> Client {
        let mut server = hang
            .command(f, &["mcp"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = server.stdin.take().unwrap();
        let stdout = BufReader::new(server.stdout.take().unwrap());
        Client {
            server,
            stdin: Some(stdin),
            stdout,
            next_id: 1,
            notifications: Vec::new(),
        }
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    /// Sends a request and returns its id, without waiting.
    fn request_later(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// The response to request `id`; notifications on the way are kept.
    fn response(&mut self, id: u64) -> Value {
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "the server closed stdout"
            );
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
            assert!(
                message.get("id").is_none(),
                "a response to another request: {message}"
            );
            self.notifications.push(message);
        }
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.request_later(method, params);
        let response = self.response(id);
        assert!(response.get("error").is_none(), "{method}: {response}");
        response["result"].clone()
    }

    /// A tool's structured result, which must not be an error.
    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let result = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        assert_eq!(result["isError"], false, "{tool}: {result}");
        let structured = result["structuredContent"].clone();
        let text = result["content"][0]["text"].as_str().unwrap();
        assert_eq!(serde_json::from_str::<Value>(text).unwrap(), structured);
        structured
    }

    fn call_error(&mut self, tool: &str, arguments: Value) -> String {
        let result = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        assert_eq!(result["isError"], true, "{tool}: {result}");
        result["content"][0]["text"].as_str().unwrap().to_string()
    }

    fn next_action(&mut self) -> Value {
        self.call("status", json!({}))["next_action"].clone()
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

fn initialized(hang: &Hang, f: &Fixture) -> Client {
    let mut client = Client::start(hang, f);
    let init = client.request(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}),
    );
    assert_eq!(init["serverInfo"]["name"], "git-cutile-perf");
    assert!(init["capabilities"]["tools"].is_object(), "{init}");
    assert!(
        init["instructions"]
            .as_str()
            .unwrap()
            .contains("next_action")
    );
    client.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    client
}

const SCHEMA_TYPES: &[&str] = &["string", "integer", "number", "boolean", "array"];

#[test]
fn every_tool_has_the_schema_of_its_verb() {
    let f = Fixture::new();
    let hang = Hang::new();
    let mut client = initialized(&hang, &f);
    let listed = client.request("tools/list", json!({}));
    let tools = listed["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, TOOLS);
    let cli = Cli::command();
    for tool in tools {
        let name = tool["name"].as_str().unwrap();
        let schema = &tool["inputSchema"];
        assert_eq!(
            *schema,
            Value::Object(schema::input_schema(&tool_verb(&cli, name).unwrap())),
            "{name}: the schema is the command line's"
        );
        assert_eq!(schema["type"], "object", "{name}");
        assert_eq!(schema["additionalProperties"], false, "{name}");
        let properties = schema["properties"].as_object().unwrap();
        for (property, s) in properties {
            let kind = s["type"].as_str().unwrap();
            assert!(SCHEMA_TYPES.contains(&kind), "{name}.{property}: {kind}");
            if kind == "array" {
                assert!(SCHEMA_TYPES.contains(&s["items"]["type"].as_str().unwrap()));
            }
            if let Some(words) = s.get("enum") {
                assert!(words.as_array().unwrap().iter().all(Value::is_string));
            }
            assert!(s["description"].is_string(), "{name}.{property}");
        }
        for required in schema["required"].as_array().into_iter().flatten() {
            assert!(
                properties.contains_key(required.as_str().unwrap()),
                "{name}: {required}"
            );
        }
        assert!(tool["description"].as_str().unwrap().ends_with(&format!(
            "Returns the report `git cutile-perf {} --json` prints.",
            name.replace('_', " ")
        )));
    }
    // what each tool does, for a client deciding what needs a person's approval
    for tool in tools {
        let hints = &tool["annotations"];
        for hint in ["readOnlyHint", "destructiveHint", "idempotentHint"] {
            assert!(
                hints[hint].is_boolean(),
                "{}: {hint} in {hints}",
                tool["name"]
            );
        }
    }
    let hint = |tool: usize, name: &str| tools[tool]["annotations"][name].as_bool().unwrap();
    assert!(
        hint(2, "readOnlyHint") && !hint(1, "readOnlyHint"),
        "status reads, step writes"
    );
    assert!(
        hint(10, "destructiveHint") && !hint(1, "destructiveHint"),
        "repair takes commits back"
    );
    let step = &tools[1]["inputSchema"];
    // a step without `opt` is refused: the schema says so
    assert_eq!(step["required"], json!(["description", "opt"]));
    assert_eq!(step["properties"]["continue"]["type"], "boolean");
    assert_eq!(
        step["properties"]["cause"]["enum"],
        json!(["memory", "compute", "latency", "scheduling", "unknown"])
    );
    assert_eq!(
        tools[8]["inputSchema"]["properties"]["a"]["type"],
        "integer"
    );
}

#[test]
fn a_whole_session_through_the_server() {
    let f = Fixture::new();
    let hang = Hang::new();
    let mut client = initialized(&hang, &f);

    // before the session: status says how to start one; a verb that needs a session is a tool error
    // that carries the hint
    assert_eq!(client.next_action()["kind"], "start");
    let err = client.call_error("table", json!({}));
    assert!(err.contains("not on a cutile-perf session branch"), "{err}");
    assert!(
        err.contains("\"hint\":\"start one with `start {\\\"kernel\\\":\\\"<kernel>\\\"}`"),
        "{err}"
    );
    let err = client.call_error(
        "step",
        json!({"description": "x", "opt": "G", "colour": "red"}),
    );
    let refused: Value = serde_json::from_str(&err).unwrap();
    assert_eq!(refused["error"], "step takes no argument \"colour\"");
    assert!(
        refused["hint"]
            .as_str()
            .unwrap()
            .starts_with("its arguments are: "),
        "{err}"
    );
    assert_eq!(refused["exit_code"], 2);

    let started = client.call("start", json!({"kernel": "vector_add", "no-gpu": true}));
    assert_eq!(started["iteration"], 0);
    assert_eq!(started["next_action"]["kind"], "edit-and-step");
    assert_eq!(client.next_action(), started["next_action"]);

    // a kept step, with progress notifications for its token
    f.set_latency(0.09, 0.9);
    let err = client.call_error("step", json!({"description": "no letter"}));
    assert!(
        err.contains("step needs opt") && !err.contains("--opt"),
        "{err}"
    );
    let id = client.request_later(
        "tools/call",
        json!({"name": "step", "arguments": {"description": "tile size 256", "opt": "G", "cause": "memory"},
               "_meta": {"progressToken": "step-1"}}),
    );
    let kept = client.response(id)["result"]["structuredContent"].clone();
    assert_eq!(
        (&kept["status"], &kept["decision"]),
        (&json!("keep"), &json!("continue")),
        "{kept}"
    );
    let progress: Vec<&Value> = client
        .notifications
        .iter()
        .filter(|n| n["method"] == "notifications/progress")
        .collect();
    assert!(!progress.is_empty(), "{:?}", client.notifications);
    assert!(
        progress
            .iter()
            .all(|n| n["params"]["progressToken"] == "step-1")
    );
    assert!(
        progress.iter().any(|n| n["params"]["message"]
            .as_str()
            .unwrap()
            .contains("correctness")),
        "{progress:?}"
    );
    let action = client.next_action();
    assert_eq!(action["kind"], "edit-and-step");
    assert_eq!(action["letters"][0], "A", "G was tried: {action}");

    // a revert
    f.set_latency(0.1025, 0.5);
    let reverted = client.call(
        "step",
        json!({"description": "persistent scheduling", "opt": "B"}),
    );
    assert_eq!(reverted["status"], "revert", "{reverted}");
    let action = client.next_action();
    assert!(
        action["sentence"]
            .as_str()
            .unwrap()
            .starts_with("Iteration 2 was reverted and undone (the kernel is as at iteration 1)"),
        "{action}"
    );

    // a crash
    f.edit_kernel("CRASH = \"\"", "CRASH = \"exception\"");
    let crashed = client.call("step", json!({"description": "bad hints", "opt": "none"}));
    assert_eq!(crashed["status"], "crash", "{crashed}");
    // two iterations in a row without a gain stop the loop
    let action = client.next_action();
    assert_eq!(
        (&action["kind"], &action["iteration"]),
        (&json!("stopped"), &json!(3)),
        "{action}"
    );
    assert_eq!(crashed["next_action"], action);
    let err = client.call_error("step", json!({"description": "more", "opt": "none"}));
    assert!(
        err.contains("only on their word step again with continue"),
        "{err}"
    );
    // hints and next actions name tool arguments, never command-line options
    assert!(!err.contains("--"), "{err}");
    let resume = action["resume"].as_str().unwrap();
    assert!(
        resume.starts_with("step {\"cause\":\"<CAUSE>\",\"continue\":true,"),
        "{action}"
    );
    assert!(
        !action["sentence"].as_str().unwrap().contains("--"),
        "{action}"
    );

    // a step cancelled while its benchmark hangs: nothing recorded, the edit kept
    let head = f.head();
    f.edit_kernel("CRASH = \"\"", "CRASH = \"hang\"");
    let id = client.request_later(
        "tools/call",
        json!({"name": "step", "arguments": {"description": "hangs", "opt": "none", "continue": true}}),
    );
    hang.wait_for_child();
    client.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": id, "reason": "the user changed their mind"}}),
    );
    let cancelled = client.response(id)["result"].clone();
    assert_eq!(cancelled["isError"], true, "{cancelled}");
    assert!(
        cancelled["structuredContent"]["error"]
            .as_str()
            .unwrap()
            .starts_with("interrupted"),
        "{cancelled}"
    );
    assert_eq!(cancelled["structuredContent"]["exit_code"], 130);
    hang.assert_child_gone();
    assert_eq!(f.head(), head);
    assert_eq!(f.status(), format!(" M {KERNEL}\n"));
    assert_eq!(client.next_action(), action);

    // the record is whole
    let table = client.call("table", json!({}));
    assert_eq!(table["rows"].as_array().map(Vec::len), Some(4), "{table}");
    assert_eq!(client.call("verify", json!({}))["findings"], json!([]));
}

/// A client that goes away (closes stdin) while a step runs: the step stops as a cancelled one does,
/// leaving no journal, lock or process, and the server ends after it. Before that, a request whose id
/// JSON-RPC does not allow is answered with an error, and the server goes on.
#[test]
fn a_client_that_goes_away_mid_step_stops_it_cleanly() {
    let f = Fixture::new();
    f.start();
    let hang = Hang::new();
    let mut client = initialized(&hang, &f);
    client.send(&json!({"jsonrpc": "2.0", "id": {"an": "object"}, "method": "tools/list"}));
    let mut line = String::new();
    client.stdout.read_line(&mut line).unwrap();
    let refused: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert!(client.request("tools/list", json!({}))["tools"].is_array());
    let head = f.head();
    f.edit_kernel("CRASH = \"\"", "CRASH = \"hang\"");
    client.request_later(
        "tools/call",
        json!({"name": "step", "arguments": {"description": "hangs", "opt": "none"}}),
    );
    hang.wait_for_child();
    client.stdin = None;
    support::wait_until("the server ended", || {
        client.server.try_wait().unwrap().is_some()
    });
    hang.assert_child_gone();
    assert!(!f.path(".git/cutile-perf/journal.json").exists());
    assert!(!f.path(".git/cutile-perf/lock").exists());
    assert_eq!(f.head(), head);
    assert_eq!(f.status(), format!(" M {KERNEL}\n"));
}

/// Tool properties whose option has another name (`None`: a choice between other options, no option of
/// its own); any other property is the option of its name, `-` read as `_`.
const OPTION_OF: &[(&str, &str, Option<&str>)] = &[
    ("start", "runner", Some("runner")),
    ("start", "slurm-args", Some("runner")),
    ("start", "queue-timeout", Some("runner")),
    ("start", "continue-pct", Some("thresholds")),
    ("start", "gain-pct", Some("thresholds")),
    ("start", "regression-pct", Some("thresholds")),
    ("start", "max-iterations", Some("thresholds")),
    ("start", "max-no-gain", Some("thresholds")),
    ("step", "continue", Some("continue_anyway")),
    // `start --scaffold` is another verb's options (it only writes the session perf file)
    ("start", "scaffold", None),
    // `--all` asks for every kernel instead of one: it picks the variant that holds `kernel`
    ("inspect", "all", Some("kernel")),
];

/// The options `verb`'s tool can set, from its schema.
fn settable(verb: &str) -> BTreeSet<String> {
    let cli = Cli::command();
    let schema = schema::input_schema(cli.find_subcommand(verb).unwrap());
    let properties = schema["properties"].as_object().unwrap().keys();
    properties
        .filter_map(|property| {
            match OPTION_OF
                .iter()
                .find(|(v, p, _)| (*v, *p) == (verb, property))
            {
                Some((_, _, option)) => option.map(str::to_string),
                None => Some(property.replace('-', "_")),
            }
        })
        .collect()
}

/// The options a verb has: the fields of its options struct, built by the edge from `words` and read
/// from its pretty `Debug` (a field is a line indented once).
fn options_of(words: &[&str]) -> BTreeSet<String> {
    use git_cutile_perf::verbs::cli::Command;
    use git_cutile_perf::verbs::commands::{diagnose, inspect, start, step};
    let parsed =
        Cli::try_parse_from(std::iter::once("git-cutile-perf").chain(words.iter().copied()))
            .unwrap();
    let debug = match parsed.command {
        Command::Start(args) => format!("{:#?}", start::StartOptions::try_from(args).unwrap()),
        Command::Step(args) => format!("{:#?}", step::StepOptions::from(args)),
        Command::Inspect(args) => match inspect::Inspect::from(args) {
            inspect::Inspect::One(options) => format!("{options:#?}"),
            inspect::Inspect::All => panic!("the coverage table has no options"),
        },
        Command::Diagnose(args) => format!("{:#?}", diagnose::DiagnoseOptions::from(args)),
        other => panic!("no options struct: {other:?}"),
    };
    debug
        .lines()
        .filter_map(|line| {
            let field = line.strip_prefix("    ")?.split_once(": ")?.0;
            field
                .chars()
                .all(|c| c.is_ascii_lowercase() || c == '_')
                .then(|| field.to_string())
        })
        .collect()
}

/// Every verb with an options struct: its options are exactly what its MCP tool can set, so an argument
/// the edge drops (a property that sets nothing) or an option no argument sets fails here.
#[test]
fn every_option_of_a_verb_is_one_its_tool_sets_and_back() {
    for words in [
        &["start", "rms_norm"][..],
        &["step", "--opt", "none", "tiled"],
        &["inspect", "rms_norm"],
        &["diagnose"],
    ] {
        let verb = words[0];
        assert!(TOOLS.contains(&verb));
        assert_eq!(options_of(words), settable(verb), "{verb}");
    }
}

#[test]
fn campaign_next_claims_a_session_for_the_server_that_asked_and_gives_it_back_to_it_alone() {
    let f = Fixture::new();
    f.ok(&["campaign", "start", "vector_add", "--no-gpu"]);
    let hang = Hang::new();
    let mut client = initialized(&hang, &f);
    let claimed = client.call("campaign_next", json!({"claim": true}));
    assert_eq!(claimed["kernel"], "vector_add", "{claimed}");
    // the holder is the server, which runs on: it gets its own claim back, and nobody else gets one
    assert_eq!(
        claimed["lease"]["holder"]["pid"],
        client.server.id(),
        "{claimed}"
    );
    let again = client.call("campaign_next", json!({"claim": true}));
    assert_eq!(again["kernel"], "vector_add", "{again}");
    let other = f.ok(&["campaign", "next", "--claim", "--json"]);
    let other: Value = serde_json::from_str(&other).unwrap();
    assert_eq!(other["kernel"], Value::Null, "{other}");
}
