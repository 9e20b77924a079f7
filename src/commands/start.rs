//! `start`: the session branch and iteration 0, the baseline.

use std::time::Instant;

use anyhow::{Context, Result, bail};

use super::{Interrupted, sandbox, write_table};
use crate::cli::StartArgs;
use crate::decision::{Correctness, Decision, Status};
use crate::git::Repo;
use crate::pytest::{self, Pytest};
use crate::session::{BRANCH_PREFIX, Iteration, Session, fmt_ms};
use crate::stats::geometric_mean;
use crate::trailers::{Block, render_message};
use crate::{gpu, kernel_class, locate, ui};

pub fn run(repo: &Repo, args: &StartArgs) -> Result<()> {
    let StartArgs {
        kernel,
        suite,
        test,
        allow,
        python,
        filter,
        stat,
        class,
        intensity,
        budget,
        thresholds,
        output,
    } = args;
    locate::check_tilegym(&repo.root)?;
    let dirty = repo.tracked_changes()?;
    if !dirty.is_empty() {
        bail!(
            "the work tree has uncommitted changes to tracked files:\n  {}\nhint: commit or stash them first; a session must start from a clean HEAD",
            dirty.join("\n  ")
        );
    }
    let found = locate::kernel(&repo.root, kernel, suite.as_deref())?;
    let test = match test {
        Some(path) => repo_relative(repo, path)?,
        None => locate::test_file(&repo.root, &found)?,
    };
    let mut allowed = vec![found.path.clone()];
    for path in allow {
        let path = repo_relative(repo, path)?;
        if !allowed.contains(&path) {
            allowed.push(path);
        }
    }
    let python = python.clone().unwrap_or_else(default_python);
    let branch = format!("{BRANCH_PREFIX}{}-{}", found.name, today());
    if repo.branch_exists(&branch)? {
        bail!(
            "branch {branch} already exists\nhint: continue it with `git checkout {branch}`, or rename it \
             (`git branch -m {branch} {branch}-old`) to start afresh"
        );
    }
    let deadline = Instant::now() + *budget;
    let runner = Pytest {
        python: &python,
        root: &repo.root,
        test: &test,
        filter: filter.as_deref(),
        sandbox: sandbox(repo),
        deadline,
    };
    runner.check_available()?;
    let session = Session {
        kernel: found.path.clone(),
        test: test.clone(),
        allowed,
        statistic: *stat,
        thresholds: thresholds.thresholds(),
        python: python.clone(),
        filter: filter.clone(),
        class: class.or(intensity.map(kernel_class::classify)),
        gpu: gpu::detect(),
    };
    if session.gpu.is_none() {
        ui::progress_line(
            "warning: no GPU found (nvidia-smi missing or failing); the tests decide whether they can run",
        );
    }

    let original = match repo.branch()? {
        Some(name) => name,
        None => repo.head()?,
    };
    repo.git(&["checkout", "-q", "-b", &branch])?;
    let mut rollback = Rollback {
        repo,
        original: &original,
        branch: &branch,
        armed: true,
    };
    repo.exclude(&format!("/{}/", crate::guard::SANDBOX))?;
    super::hook::report(crate::hook::install(repo)?);

    let tests = match runner.correctness()? {
        pytest::Correctness::Pass { passed, skipped } => match skipped {
            0 => format!("{passed} correctness tests passed"),
            _ => format!("{passed} correctness tests passed ({skipped} skipped)"),
        },
        pytest::Correctness::Fail { failed } => bail!(
            "the baseline fails its correctness tests, so there is nothing to optimize from:\n  {}\nhint: fix them on {original} first; nothing was created",
            failed.join("\n  ")
        ),
        pytest::Correctness::Crash(why) => {
            bail!("the baseline correctness run crashed: {why}\nnothing was created")
        }
        pytest::Correctness::Interrupted => {
            return Err(Interrupted("the baseline was not recorded; nothing was created").into());
        }
    };
    let configs = match runner.benchmark(*stat)? {
        pytest::Benchmark::Measured(configs) => configs,
        pytest::Benchmark::Crash(why) => {
            bail!("the baseline benchmark failed: {why}\nnothing was created")
        }
        pytest::Benchmark::Interrupted => {
            return Err(Interrupted("the baseline was not recorded; nothing was created").into());
        }
    };
    let latency = geometric_mean(configs.iter().map(|c| c.value))
        .context("the baseline has no usable latency")?;
    let baseline = Iteration {
        number: 0,
        optimization: "baseline".to_string(),
        letter: None,
        cause: None,
        latency_ms: Some(latency),
        correctness: Correctness::Pass,
        status: Status::Keep,
        baseline_ms: latency,
        change_pct: Some(0.0),
        decision: Decision::Continue,
        reason: format!("baseline: {tests}, {} configs measured", configs.len()),
        configs,
        attempt: None,
    };
    let mut block = Block::default();
    baseline.write(&mut block);
    session.write(&mut block);
    let subject = format!(
        "cutile-perf: baseline {} {} ms",
        found.name,
        fmt_ms(Some(latency))
    );
    let commit = repo.commit(&render_message(&subject, None, &block), true)?;
    rollback.armed = false;
    let history = super::require_history(repo)?;
    let table = write_table(repo, &history)?;

    if output.json {
        return ui::print_json(&serde_json::json!({
            "branch": branch,
            "commit": commit,
            "session": session,
            "iteration": 0,
            "latency_ms": latency,
            "configs": baseline.configs,
            "table": table,
        }));
    }
    println!("{} {branch}", ui::bold("session"));
    println!("  kernel     {}", session.kernel);
    println!("  test       {}", session.test);
    println!("  allowed    {}", session.allowed.join(", "));
    println!(
        "  gpu        {}",
        session.gpu.as_deref().unwrap_or("none found")
    );
    println!(
        "{} iteration 0: {} ms ({} of {} configs, {})",
        ui::bold("baseline"),
        fmt_ms(Some(latency)),
        stat,
        baseline.configs.len(),
        tests
    );
    println!(
        "next: change {} (one optimization), then `git cutile-perf step \"<what you changed>\"`",
        session.kernel
    );
    Ok(())
}

/// Undoes the branch creation unless disarmed: a failed or interrupted start leaves nothing that
/// blocks a retry.
struct Rollback<'a> {
    repo: &'a Repo,
    original: &'a str,
    branch: &'a str,
    armed: bool,
}

impl Drop for Rollback<'_> {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.repo.git(&["checkout", "-q", self.original]);
            let _ = self.repo.git(&["branch", "-q", "-D", self.branch]);
        }
    }
}

/// A path given on the command line, relative to the current directory, as a repository path.
fn repo_relative(repo: &Repo, path: &str) -> Result<String> {
    let absolute = std::path::absolute(path).with_context(|| format!("bad path {path}"))?;
    // resolve symlinked directories (as the root is resolved) but not the file itself
    let (Some(parent), Some(name)) = (absolute.parent(), absolute.file_name()) else {
        bail!("{path} is not a file path");
    };
    let parent = parent
        .canonicalize()
        .with_context(|| format!("{path} does not exist"))?;
    let relative = parent.join(name);
    let relative = relative
        .strip_prefix(&repo.root)
        .with_context(|| format!("{path} is outside the repository {}", repo.root.display()))?;
    if std::fs::symlink_metadata(repo.root.join(relative)).is_err() {
        bail!("{path} does not exist");
    }
    let text = relative
        .to_str()
        .with_context(|| format!("{path} is not valid UTF-8"))?;
    Ok(text.replace(std::path::MAIN_SEPARATOR, "/"))
}

pub fn default_python() -> String {
    if which::which("python3").is_ok() {
        "python3"
    } else {
        "python"
    }
    .to_string()
}

/// The local date as YYYYMMDD.
fn today() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as libc::time_t)
        .unwrap_or(0);
    // SAFETY: localtime_r only writes the tm we own.
    let tm = unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        libc::localtime_r(&now, &mut tm);
        tm
    };
    format!(
        "{:04}{:02}{:02}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday
    )
}
