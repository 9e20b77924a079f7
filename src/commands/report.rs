//! `table` and `status`: views of the session rebuilt from its commits.

use anyhow::Result;
use serde_json::json;

use super::{plot, require_history, write_table};
use crate::cli::{JsonArg, TableArgs};
use crate::git::Repo;
use crate::session::fmt_ms;
use crate::table::{self, Row};
use crate::ui;

pub fn table(repo: &Repo, args: &TableArgs) -> Result<()> {
    let TableArgs { write, output } = args;
    let history = require_history(repo)?;
    let (table, plot) = if *write {
        (
            Some(write_table(repo, &history)?),
            Some(plot::write_default(repo, &history)?),
        )
    } else {
        (None, None)
    };
    if output.json {
        let rows: Vec<Row> = history.iterations().map(Row::from).collect();
        return ui::print_json(&json!({ "rows": rows, "table": table, "plot": plot }));
    }
    print!("{}", table::markdown(history.iterations()));
    for path in table.iter().chain(&plot) {
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

pub fn status(repo: &Repo, args: &JsonArg) -> Result<()> {
    let history = require_history(repo)?;
    let session = &history.session;
    let baseline = history.current_baseline();
    let best = history.best();
    let (state, halted) = history.loop_state();
    let iterations = history.iterations.len() - 1;
    if args.json {
        return ui::print_json(&json!({
            "branch": repo.branch()?,
            "session": session,
            "baseline": { "iteration": baseline.number, "latency_ms": baseline.latency_ms },
            "best": { "iteration": best.number, "latency_ms": best.latency_ms },
            "initial_ms": history.iterations().next().and_then(|it| it.latency_ms),
            "iterations": iterations,
            "no_gain": history.no_gain_count(),
            "state": state,
            "reason": halted.map(|it| it.reason.as_str()),
            "tried": history.tried_letters(),
        }));
    }
    let initial = history.iterations().next().and_then(|it| it.latency_ms);
    let total = match (initial, best.latency_ms) {
        (Some(first), Some(best)) => format!(
            " ({:+.2}% since iteration 0)",
            (best - first) / first * 100.0
        ),
        _ => String::new(),
    };
    println!(
        "{} {}",
        ui::bold("session"),
        repo.branch()?.unwrap_or_default()
    );
    println!("  kernel      {}", session.kernel);
    println!("  test        {}", session.test);
    println!("  allowed     {}", session.allowed.join(", "));
    println!("  statistic   {}", session.statistic);
    if let Some(class) = &session.class {
        println!("  class       {class}");
    }
    println!(
        "  gpu         {}",
        session.gpu.as_deref().unwrap_or("none recorded")
    );
    println!(
        "  baseline    iteration {} {} ms",
        baseline.number,
        fmt_ms(baseline.latency_ms)
    );
    println!(
        "  best        iteration {} {} ms{total}",
        best.number,
        fmt_ms(best.latency_ms)
    );
    println!(
        "  iterations  {iterations} of {}",
        session.thresholds.max_iterations
    );
    println!(
        "  no gain     {} in a row (stops at {})",
        history.no_gain_count(),
        session.thresholds.max_no_gain
    );
    match halted {
        Some(it) => println!(
            "  loop        {} at iteration {}: {}",
            ui::word(state),
            it.number,
            it.reason
        ),
        None => println!("  loop        {}", ui::word(state)),
    }
    Ok(())
}
