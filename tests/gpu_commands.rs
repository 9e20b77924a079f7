//! Every command that needs the session's GPU or node is built by the runner (`src/system/runner/`), so that
//! a Slurm session runs it on the iteration's node and a new runner covers it by implementing one
//! trait. This test reads `src/` (tests excluded) for the places that start a process outside the
//! runner: each must be one of the justified exceptions below, and none may name a GPU or node program.

use std::collections::BTreeMap;

use crate::support::{production, source_files};

/// How a process is started in this code base (`process::command` wraps `duct::cmd`).
const SPAWNS: [&str; 3] = ["process::command(", "Command::new(", "duct::cmd("];
/// How a program is looked up: where the runner runs it, not here.
const LOOKUP: &str = "which::which(";

/// The programs that must run where the session's GPU is (or that reach the cluster).
const GPU_PROGRAMS: [&str; 9] = [
    "pytest",
    "python",
    "nvidia-smi",
    "ncu",
    "tileiras",
    "cuobjdump",
    "srun",
    "salloc",
    "sbatch",
];

/// The places outside the runner that start a process, how many each has, and why none of them
/// needs the session's GPU or node.
const EXCEPTIONS: [(&str, usize, &str); 7] = [
    (
        "system/process.rs",
        3,
        "the spawn primitives themselves: git, and process::command and process::session_command that \
         the runner builds on",
    ),
    (
        "features/demo_python.rs",
        2,
        "the demo's own virtual environment (venv, pip, a pytest check) on this machine, before any session",
    ),
    (
        "verbs/commands/demo.rs",
        1,
        "the demo runs this tool's own binary",
    ),
    (
        "verbs/commands/extras.rs",
        1,
        "manpath, where the man pages go",
    ),
    (
        "verbs/agent/mcp/mod.rs",
        1,
        "the MCP server runs this tool's own binary",
    ),
    (
        "verbs/commands/campaign/work.rs",
        1,
        "a campaign's worker runs this tool's own `start`, whose session runs its GPU commands through its runner",
    ),
    (
        "verbs/commands/campaign/agents.rs",
        1,
        "`campaign verify` runs this tool's own `verify` in each session's worktree",
    ),
];

/// What breaks the rule in `sources` (path under `src/`, text): spawns outside `runner/` beyond the
/// exceptions, or a spawn or lookup naming a GPU or node program.
fn check(sources: &[(String, String)]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for (path, text) in sources {
        if path.starts_with("system/runner/") {
            continue;
        }
        for (number, line) in production(text).lines().enumerate() {
            let spawn = SPAWNS.iter().any(|spawn| line.contains(spawn));
            if !spawn && !line.contains(LOOKUP) {
                continue;
            }
            if spawn {
                *counts.entry(path).or_default() += 1;
            }
            for program in GPU_PROGRAMS {
                if line.contains(&format!("\"{program}")) {
                    problems.push(format!(
                        "src/{path}:{}: starts {program} outside src/system/runner/: {}",
                        number + 1,
                        line.trim()
                    ));
                }
            }
        }
    }
    let allowed: BTreeMap<&str, usize> = EXCEPTIONS.iter().map(|(p, n, _)| (*p, *n)).collect();
    for (path, count) in &counts {
        if allowed.get(path) != Some(count) {
            problems.push(format!(
                "src/{path} starts {count} process(es) outside src/system/runner/ (allowed: {}): build GPU and \
                 node commands with the session's Runner, or add a justified exception here",
                allowed.get(path).copied().unwrap_or(0)
            ));
        }
    }
    for (path, _) in allowed.iter().filter(|(p, _)| !counts.contains_key(*p)) {
        problems.push(format!(
            "src/{path} is an exception but starts no process: remove it"
        ));
    }
    problems
}

#[test]
fn gpu_and_node_commands_are_built_by_the_runner_only() {
    let problems = check(&source_files());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_gpu_command_outside_the_runner_and_an_unlisted_spawn_are_named() {
    let source = |path: &str, text: &str| (path.to_string(), text.to_string());
    let mut sources: Vec<(String, String)> = EXCEPTIONS
        .iter()
        .map(|(path, count, _)| source(path, &"process::command(x)\n".repeat(*count)))
        .collect();
    sources.extend([
        source("system/runner/slurm.rs", "process::command(\"srun\", &args)\n"),
        source(
            "system/ncu.rs",
            "let a = 1;\nprocess::command(\"ncu\", &args)\n#[cfg(test)]\nmod tests {\n    Command::new(\"ncu\")\n}\n",
        ),
        source("system/gpu.rs", "which::which(\"nvidia-smi\")\n"),
    ]);
    assert_eq!(
        check(&sources),
        [
            "src/system/ncu.rs:2: starts ncu outside src/system/runner/: process::command(\"ncu\", &args)",
            "src/system/gpu.rs:1: starts nvidia-smi outside src/system/runner/: which::which(\"nvidia-smi\")",
            "src/system/ncu.rs starts 1 process(es) outside src/system/runner/ (allowed: 0): build GPU and node commands \
             with the session's Runner, or add a justified exception here",
        ]
    );
    sources.retain(|(path, _)| {
        !["system/ncu.rs", "system/gpu.rs", "verbs/commands/extras.rs"].contains(&path.as_str())
    });
    assert_eq!(
        check(&sources),
        ["src/verbs/commands/extras.rs is an exception but starts no process: remove it"]
    );
}
