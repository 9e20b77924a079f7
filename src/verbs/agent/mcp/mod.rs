//! `git cutile-perf mcp`: the verbs an agent needs as Model Context Protocol tools, served over stdio
//! with the official Rust SDK.
//!
//! One code path: a tool call runs this same binary as a child, `<verb> --json <options>`, in the
//! server's directory, and returns its report as the tool's structured result (a refusal's `error` and
//! `hint` as a tool error). The child's stderr lines (the plain progress lines of `start` and `step`)
//! become progress notifications; a cancelled call, or one still running when the client closes stdin,
//! sends SIGINT to the child's process group, which the verb treats like Ctrl-C: it records nothing and
//! leaves the repository as it was. The server ends once those children have.

mod phrasing;
pub mod schema;
mod transport;

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;

use anyhow::{Context, Result};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, Content, Implementation, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities, ServerInfo, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

use crate::verbs::errors::ErrorReport;

/// The exit code clap gives a command line it refuses.
const USAGE_ERROR: u8 = 2;

/// The verbs served as tools, in the order an agent meets them.
pub const TOOLS: &[&str] = &[
    "start",
    "step",
    "status",
    "table",
    "next",
    "refs",
    "inspect",
    "diagnose",
    "compare",
    "verify",
    "repair",
    "plot",
    "campaign_next",
];

const INSTRUCTIONS: &str = "Tools to run the cuTile kernel-optimization loop of `git cutile-perf` in the TileGym \
    checkout this server runs in. `start` records a session's baseline; then, in a loop: pick one optimization \
    (`next`, `refs`), edit the allowed paths only, and call `step`, never committing yourself. Every report of \
    `start`, `step`, `repair` and `status` carries `next_action`: do what its `kind` and `sentence` say. A tool \
    error carries `error` and a `hint` saying what to do.";

struct Server {
    /// The verbs' definitions, by tool name.
    verbs: Vec<clap::Command>,
    tools: Vec<Tool>,
    /// This binary, which each call runs.
    program: PathBuf,
    version: String,
    /// Held shared by each call while its child runs: the server takes it whole before it ends.
    calls: Arc<tokio::sync::RwLock<()>>,
    /// Turns true when the client has closed stdin: the calls still running stop their children.
    closed: tokio::sync::watch::Receiver<bool>,
}

/// How long a verb stopped like Ctrl-C gets to put the repository back before its group is killed.
const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(60);

/// Serves the tools on stdin and stdout until the client closes them. `cli` is the command line's
/// definition; `version` what `--version` prints.
pub fn serve(cli: clap::Command, version: &str) -> Result<()> {
    let verbs: Vec<clap::Command> = TOOLS
        .iter()
        .map(|name| {
            tool_verb(&cli, name).with_context(|| format!("the command line has no verb {name}"))
        })
        .collect::<Result<_>>()?;
    let tools = verbs.iter().map(tool).collect();
    let calls = Arc::new(tokio::sync::RwLock::new(()));
    let (close, closed) = tokio::sync::watch::channel(false);
    let server = Server {
        verbs,
        tools,
        program: std::env::current_exe().context("cannot find this program's path")?,
        version: version.to_string(),
        calls: Arc::clone(&calls),
        closed,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let served = runtime.block_on(async {
        let running = server
            .serve(transport::stdio())
            .await
            .context("the MCP client did not initialize")?;
        let ended = running.waiting().await;
        // the client is gone: the calls still running stop as a cancelled one does, and are waited for
        close.send_replace(true);
        let _all_calls = calls.write().await;
        ended?;
        Ok(())
    });
    // stdin's reader may still wait on a client that never closed it
    runtime.shutdown_background();
    served
}

/// The verb a tool runs, named as the tool: a sub-verb's tool is named by its words joined with `_`
/// (`campaign_next`).
pub fn tool_verb(cli: &clap::Command, name: &str) -> Option<clap::Command> {
    let mut verb = Some(cli);
    for word in name.split('_') {
        verb = verb.and_then(|v| v.find_subcommand(word));
    }
    verb.map(|v| v.clone().name(name.to_string()))
}

/// What each tool does to the repository, as its annotations tell a client deciding what needs a
/// person's approval: (tool, read-only, destructive, idempotent). None reaches outside the repository.
/// `step` and `start` add commits and branches and lose nothing (a reverted change stays in history);
/// `repair` takes commits back; `table`, `plot` and `diagnose` write files or notes they would write
/// the same again; `next` records a skipped letter when asked; `campaign_next` claims a kernel.
const EFFECTS: &[(&str, bool, bool, bool)] = &[
    ("start", false, false, false),
    ("step", false, false, false),
    ("status", true, false, true),
    ("table", false, false, true),
    ("next", false, false, true),
    ("refs", true, false, true),
    ("inspect", true, false, true),
    ("diagnose", false, false, true),
    ("compare", true, false, true),
    ("verify", true, false, true),
    ("repair", false, true, false),
    ("plot", false, false, true),
    ("campaign_next", false, false, false),
];

/// The annotations of the tool named `name`.
fn annotations(name: &str) -> Option<ToolAnnotations> {
    let &(_, read_only, destructive, idempotent) = EFFECTS.iter().find(|e| e.0 == name)?;
    Some(
        ToolAnnotations::new()
            .read_only(read_only)
            .destructive(destructive)
            .idempotent(idempotent)
            .open_world(false),
    )
}

fn tool(verb: &clap::Command) -> Tool {
    let about = verb.get_about().map(|a| a.to_string()).unwrap_or_default();
    let annotated = annotations(verb.get_name());
    let tool = Tool::new(
        verb.get_name().to_string(),
        format!(
            "{about}. Returns the report `git cutile-perf {} --json` prints.",
            verb.get_name().replace('_', " ")
        ),
        Arc::new(schema::input_schema(verb)),
    );
    match annotated {
        Some(annotations) => tool.with_annotations(annotations),
        None => tool,
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerInfo {
        ServerInfo::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("git-cutile-perf", &self.version))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let Some(verb) = self.verbs.iter().find(|v| v.get_name() == request.name) else {
            return Err(ErrorData::invalid_params(
                format!(
                    "no tool {}; the tools are {}",
                    request.name,
                    TOOLS.join(", ")
                ),
                None,
            ));
        };
        let arguments = request.arguments.unwrap_or_default();
        let words = match schema::command_line(verb, &arguments) {
            Ok(words) => words,
            Err(e) => return Ok(refused(&e)),
        };
        Ok(self
            .run(verb.get_name(), &words, &context)
            .await
            .unwrap_or_else(|e| tool_error(&crate::rules::hint::shown(&e))))
    }
}

impl Server {
    /// Runs `<verb> --json <words>` as a child in its own process group, relaying its stderr lines as
    /// progress and ending it like Ctrl-C when the call is cancelled.
    async fn run(
        &self,
        verb: &str,
        words: &[String],
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult> {
        let _running = self.calls.read().await;
        let mut closed = self.closed.clone();
        let mut child = tokio::process::Command::new(&self.program)
            .args(verb.split('_'))
            .arg("--json")
            .args(words)
            .env("CUTILE_PERF_NO_PROGRESS", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("cannot run {}", self.program.display()))?;
        let pid = child.id().context("the child exited at once")? as libc::pid_t;
        let mut stdout = child.stdout.take().expect("piped");
        let stderr = child.stderr.take().expect("piped");
        let report = async {
            let mut text = String::new();
            stdout.read_to_string(&mut text).await.map(|_| text)
        };
        let relay = relay_progress(stderr, context);
        let waited = async {
            tokio::select! {
                status = child.wait() => status,
                () = context.ct.cancelled() => stop(&mut child, pid).await,
                Ok(()) = async { closed.wait_for(|closed| *closed).await.map(|_| ()) } => {
                    stop(&mut child, pid).await
                }
            }
        };
        let (status, log, report) = tokio::join!(waited, relay, report);
        let status = status?;
        let report = report?;
        let report = serde_json::from_str::<Value>(&report).map(|mut value| {
            phrasing::for_tools(&mut value, &self.verbs);
            value
        });
        Ok(match report {
            Ok(value) if status.success() => CallToolResult::structured(value),
            Ok(value) => CallToolResult::structured_error(value),
            Err(_) => tool_error(&format!(
                "`git cutile-perf {verb}` ended ({status}) without a report:\n{}",
                log.join("\n")
            )),
        })
    }
}

/// What Ctrl-C does at a terminal: the verb stops its tests and records nothing. A verb that has not
/// ended after [`STOP_GRACE`] has its group killed.
async fn stop(
    child: &mut tokio::process::Child,
    group: libc::pid_t,
) -> std::io::Result<std::process::ExitStatus> {
    // SAFETY: signals the child's own process group, which it leads and which is not yet reaped
    unsafe { libc::killpg(group, libc::SIGINT) };
    match tokio::time::timeout(STOP_GRACE, child.wait()).await {
        Ok(status) => status,
        Err(_) => {
            // SAFETY: as above
            unsafe { libc::killpg(group, libc::SIGKILL) };
            child.wait().await
        }
    }
}

/// Sends each stderr line as a progress notification, when the call asked for them; returns the lines.
async fn relay_progress(
    stderr: tokio::process::ChildStderr,
    context: &RequestContext<RoleServer>,
) -> Vec<String> {
    let token = context.meta.get_progress_token();
    let mut lines = BufReader::new(stderr).lines();
    let mut seen = Vec::new();
    while let Ok(Some(line)) = lines.next_line().await {
        if let Some(token) = &token {
            let progress = ProgressNotificationParam::new(token.clone(), seen.len() as f64 + 1.0)
                .with_message(line.clone());
            // a client that went away misses a line; the call goes on
            let _ = context.peer.notify_progress(progress).await;
        }
        seen.push(line);
    }
    seen
}

/// Arguments the verb would refuse, in the shape of its own `--json` error (`error`, `hint`, and the
/// exit code of a usage error).
fn refused(err: &anyhow::Error) -> CallToolResult {
    let report = ErrorReport::of(err, USAGE_ERROR);
    CallToolResult::structured_error(serde_json::to_value(report).expect("a report serializes"))
}

/// A failure the agent sees, in words.
fn tool_error(message: &str) -> CallToolResult {
    CallToolResult::error(vec![Content::text(message)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// A tool's description and its arguments' stand alone: an MCP client has neither `-h` nor a man page.
    #[test]
    fn no_tool_sends_its_client_to_help_or_a_man_page() {
        let cli = crate::verbs::cli::Cli::command();
        for name in TOOLS {
            let tool = tool(&tool_verb(&cli, name).unwrap());
            let text = serde_json::to_string(&tool).unwrap();
            for help in [
                "-h`",
                "-h ",
                "--help",
                "help <",
                "man page",
                "install-extras",
            ] {
                assert!(!text.contains(help), "{name}: {help:?} in {text}");
            }
            assert!(
                tool.description.as_deref().is_some_and(|d| d.len() > 40),
                "{name}"
            );
        }
    }
}
