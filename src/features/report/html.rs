//! The page itself: HTML with inline CSS and the plot's SVG inline, no script and nothing fetched, so it
//! opens the same from a file, an artifact store or a mail attachment.

use std::fmt::Write as _;

use anyhow::Result;

use super::{Entry, Material, Noted};
use crate::features::diagnose::cache::Note;
use crate::record::changes::{self, Changes};
use crate::record::plot;
use crate::record::session::{Session, fmt_change, fmt_ms, short};
use crate::rules::compile::CompileFacts;
use crate::rules::decision::Status;

const STYLE: &str = "
body{font:15px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;color:#222;background:#f4f4f2;margin:0}
main{max-width:1000px;margin:0 auto;padding:24px 20px 48px}
h1{font-size:26px;margin:0 0 4px}h2{font-size:20px;margin:32px 0 10px;border-bottom:1px solid #ccc}
h3{font-size:17px;margin:0 0 6px}
.lede{font-size:16px;margin:0 0 12px}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;margin:0}
dl.facts dt{font-weight:600}dl.facts dd{margin:0}
table{border-collapse:collapse;background:#fdfdfc;margin:6px 0}
th,td{border:1px solid #d8d8d8;padding:3px 8px;text-align:left;vertical-align:top}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.keep{color:#1a8f3c}.revert{color:#b35f00}.crash{color:#c41e5a}
tr.worse td.change{color:#b01c1c;font-weight:600}
.missing{background:#fff6df;border:1px solid #e8d49c;padding:8px 12px}
article.iteration{background:#fdfdfc;border:1px solid #d8d8d8;border-left:6px solid #999;padding:12px 16px;margin:14px 0}
article.iteration.keep{border-left-color:#1a8f3c}article.iteration.revert{border-left-color:#d97a00}
article.iteration.crash{border-left-color:#c41e5a}
article.iteration *{color:inherit}article.iteration{color:#222}
.status{font-size:13px;font-weight:600;text-transform:uppercase;margin-left:6px}
.status.keep{color:#1a8f3c}.status.revert{color:#b35f00}.status.crash{color:#c41e5a}
.reason{margin:4px 0}
pre.diff{background:#f7f7f5;border:1px solid #ddd;padding:8px;overflow-x:auto;font-size:12.5px;line-height:1.35}
pre.diff .add{color:#17692e}pre.diff .del{color:#a3161b}pre.diff .hunk{color:#5b4bab}
figure{margin:0;background:#fdfdfc;border:1px solid #d8d8d8}
figure svg{display:block;width:100%;height:auto}
footer{color:#666;font-size:13px;margin-top:32px}
";

/// The page's bytes.
pub fn html(material: &Material) -> Result<String> {
    let iterations = material.iterations();
    let estimates = material.estimates();
    let changes = changes::of_session(&iterations, &estimates);
    let session = &material.session;
    let svg = plot::svg(
        &plot::title(session),
        &iterations,
        &estimates,
        session.thresholds.regression_pct,
    )?;
    let kernel = kernel_name(session);
    let mut page = String::new();
    page += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
    page += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
    let _ = writeln!(
        page,
        "<title>{}: cutile-perf session</title>",
        escape(&kernel)
    );
    let _ = writeln!(page, "<style>{STYLE}</style>\n</head>\n<body>\n<main>");
    let _ = writeln!(
        page,
        "<h1>{}: a cutile-perf session</h1>\n<p class=\"lede\">{}</p>",
        escape(&kernel),
        escape(&lede(material))
    );
    page += &session_facts(session);
    page += &missing(material);
    page += &results(material);
    // the SVG's namespace is implied inside HTML: no URL need appear on the page
    let svg = svg.replacen(" xmlns=\"http://www.w3.org/2000/svg\"", "", 1);
    let _ = writeln!(
        page,
        "<h2 id=\"plot\">Plot</h2>\n<figure>\n{svg}\n</figure>"
    );
    page += "<h2 id=\"iterations\">Iterations</h2>\n";
    for (entry, changes) in material.entries.iter().zip(&changes) {
        page += &iteration(entry, changes, session);
    }
    page += "<footer>Rebuilt by <code>git cutile-perf report</code> from the session's commits: the trailers, \
             the evidence notes and the diffs it could read. The same record gives the same page.</footer>\n";
    page += "</main>\n</body>\n</html>\n";
    Ok(page)
}

/// `&`, `<`, `>` and quotes as entities: user text can hold any of them.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn kernel_name(session: &Session) -> String {
    std::path::Path::new(&session.kernel)
        .file_stem()
        .map_or(session.kernel.clone(), |s| s.to_string_lossy().into_owned())
}

/// One sentence: how many attempts, how they ended, and where the latency went.
fn lede(material: &Material) -> String {
    let count = |status| {
        material
            .entries
            .iter()
            .skip(1)
            .filter(|e| e.iteration.status == status)
            .count()
    };
    let first = material
        .entries
        .first()
        .and_then(|e| e.iteration.latency_ms);
    let kept = material
        .entries
        .iter()
        .rev()
        .find(|e| e.iteration.status == Status::Keep)
        .and_then(|e| e.iteration.latency_ms);
    let change = first
        .zip(kept)
        .map(|(first, kept)| crate::rules::stats::change_pct(first, kept));
    format!(
        "{} attempts after the baseline: {} kept, {} reverted, {} crashed. Latency {} ms at iteration 0, \
         {} ms now ({}; lower is better).",
        material.entries.len().saturating_sub(1),
        count(Status::Keep),
        count(Status::Revert),
        count(Status::Crash),
        fmt_ms(first),
        fmt_ms(kept),
        fmt_change(change)
    )
}

fn session_facts(session: &Session) -> String {
    let t = &session.thresholds;
    let mut facts = vec![
        ("kernel", session.kernel.clone()),
        ("test", session.test.clone()),
        ("allowed paths", session.allowed.join(", ")),
    ];
    if let Some(class) = session.class {
        let source = session
            .class_source
            .as_deref()
            .map_or(String::new(), |s| format!(" ({s})"));
        facts.push(("class", format!("{class}{source}")));
    }
    let gpu = match (&session.gpu, session.no_gpu) {
        (Some(gpu), _) => gpu.clone(),
        (None, true) => "none (started with --no-gpu)".to_string(),
        (None, false) => "not recorded".to_string(),
    };
    facts.push(("GPU", gpu));
    if let Some(state) = &session.gpu_state {
        facts.push(("GPU at the start", state.clone()));
    }
    facts.push(("statistic", session.statistic.to_string()));
    facts.push((
        "thresholds",
        format!(
            "continue at {}% faster, a gain from {}%, revert when a config is {}% slower; at most {} iterations, \
             stop after {} without a gain",
            t.continue_pct, t.gain_pct, t.regression_pct, t.max_iterations, t.max_no_gain
        ),
    ));
    if !session.spread.is_empty() {
        let (lo, hi) = session
            .spread
            .iter()
            .map(|s| s.spread_pct)
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(v), hi.max(v))
            });
        facts.push((
            "noise floor",
            format!("the baseline's runs differed by {lo:.2}% to {hi:.2}% per config"),
        ));
    }
    if let Some(filter) = &session.filter {
        facts.push(("filter", filter.clone()));
    }
    facts.push(("runner", session.runner.kind.as_str().to_string()));
    facts.push(("Python", session.python.clone()));
    let mut out = String::from("<h2 id=\"session\">Session</h2>\n<dl class=\"facts\">\n");
    for (term, value) in facts {
        let _ = writeln!(out, "<dt>{term}</dt><dd>{}</dd>", escape(&value));
    }
    out + "</dl>\n"
}

/// What the record lacks, said before anything else.
fn missing(material: &Material) -> String {
    let lacks = material.lacks();
    if lacks.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<h2 id=\"missing\">What this page lacks</h2>\n<div class=\"missing\"><p>Rendered without:</p><ul>\n",
    );
    for lack in lacks {
        let _ = writeln!(out, "<li>{}</li>", escape(&lack));
    }
    out + "</ul></div>\n"
}

fn results(material: &Material) -> String {
    let mut out = String::from(
        "<h2 id=\"results\">Results</h2>\n<table class=\"results\">\n<thead><tr><th class=\"num\">#</th>\
         <th>opt</th><th>optimization</th><th class=\"num\">latency (ms)</th><th class=\"num\">change</th>\
         <th>correctness</th><th>status</th><th>decision</th><th class=\"num\">rounds</th></tr></thead>\n<tbody>\n",
    );
    for entry in &material.entries {
        let it = &entry.iteration;
        let _ = writeln!(
            out,
            "<tr class=\"{status}\"><td class=\"num\"><a href=\"#iteration-{n}\">{n}</a></td><td>{letter}</td>\
             <td>{opt}</td><td class=\"num\">{latency}</td><td class=\"num\">{change}</td><td>{correct}</td>\
             <td class=\"{status}\">{status}</td><td>{decision}</td><td class=\"num\">{rounds}</td></tr>",
            status = it.status,
            n = it.number,
            letter = escape(it.letter.as_deref().unwrap_or("")),
            opt = escape(&it.optimization),
            latency = fmt_ms(it.latency_ms),
            // a revert's overall change may read as a gain: the cell names what failed it instead
            change = match it.status {
                Status::Revert => escape(&it.short_reason()),
                _ => fmt_change(it.change_pct),
            },
            correct = it.correctness,
            decision = it.decision,
            rounds = it.rounds.map_or(String::new(), |r| r.to_string()),
        );
    }
    out + "</tbody>\n</table>\n"
}

fn iteration(entry: &Entry, changes: &Changes, session: &Session) -> String {
    let it = &entry.iteration;
    let mut out = format!(
        "<article id=\"iteration-{n}\" class=\"iteration {status}\">\n<h3>{label} {opt}<span class=\"status {status}\">{status}</span></h3>\n",
        n = it.number,
        status = it.status,
        label = escape(&plot::mark_label(it)),
        opt = escape(&it.optimization),
    );
    let mut outcome = format!(
        "{} ms, {} against {} ms; correctness {}; decision {}",
        fmt_ms(it.latency_ms),
        fmt_change(it.change_pct),
        fmt_ms(Some(it.baseline_ms)),
        it.correctness,
        it.decision
    );
    if let Some((_, interval)) = changes.overall {
        outcome += &format!(
            "; overall interval {:+.2}% to {:+.2}%",
            interval.low_pct, interval.high_pct
        );
    }
    if let Some(rounds) = it.rounds {
        outcome += &format!(
            "; {rounds} paired round{}",
            if rounds == 1 { "" } else { "s" }
        );
    }
    if it.number == 0 {
        outcome = format!("baseline: {} ms", fmt_ms(it.latency_ms));
    }
    let _ = writeln!(out, "<p class=\"outcome\">{}</p>", escape(&outcome));
    let _ = writeln!(
        out,
        "<p class=\"reason\"><strong>Reason:</strong> {}</p>",
        escape(&it.reason)
    );
    out += &provenance(entry);
    out += &config_table(changes, session.thresholds.regression_pct);
    if let Some(noted) = &entry.noted {
        out += &evidence_facts(noted);
    }
    if let Some(note) = &entry.diagnosis {
        out += &diagnoses(note);
    }
    // the evidence's compile facts, else those `diagnose` cached for the same code
    let compile = entry
        .noted
        .as_ref()
        .and_then(|n| n.compile.as_ref())
        .or_else(|| entry.diagnosis.as_ref().and_then(|d| d.compile.as_ref()))
        .filter(|c| !c.is_empty());
    if let Some(compile) = compile {
        out += &compile_facts(compile);
    }
    if let Some(diff) = &entry.diff {
        let _ = writeln!(
            out,
            "<details><summary>code change ({} lines)</summary>\n<pre class=\"diff\">{}</pre></details>",
            diff.lines().count(),
            highlight(diff)
        );
    }
    out + "</article>\n"
}

/// Where the iteration's numbers come from: its commits, its cause, its node, its note.
fn provenance(entry: &Entry) -> String {
    let it = &entry.iteration;
    let mut parts = Vec::new();
    if let Some(commit) = &entry.commit {
        parts.push(format!("commit {}", short(commit)));
    }
    if let Some(attempt) = &it.attempt {
        parts.push(format!("attempt {}", short(attempt)));
    }
    if let Some(cause) = it.cause {
        parts.push(format!("cause {cause}"));
    }
    if let Some(placement) = &it.placement {
        parts.push(format!(
            "measured on {} (job {})",
            placement.node, placement.job
        ));
    }
    parts.push(match &entry.noted {
        Some(noted) => format!("evidence note by git-cutile-perf {}", noted.tool_version),
        None => "no evidence note".to_string(),
    });
    format!(
        "<p class=\"provenance\">{}</p>\n",
        escape(&parts.join("; "))
    )
}

/// Each config's change, regressions first, with its interval when the rounds gave one.
fn config_table(changes: &Changes, regression_pct: f64) -> String {
    if changes.configs.is_empty() {
        return String::new();
    }
    // a single run (or a record without notes) has no intervals: no empty column for them
    let intervals = changes.configs.iter().any(|c| c.interval.is_some());
    let mut out = String::from(
        "<table class=\"configs\">\n<thead><tr><th>config</th><th>pass</th><th class=\"num\">baseline (ms)</th>\
         <th class=\"num\">this (ms)</th><th class=\"num\">change</th>",
    );
    if intervals {
        out += "<th class=\"num\">interval</th>";
    }
    out += "</tr></thead>\n<tbody>\n";
    for config in changes.worst_first() {
        let worse = config.change_pct > regression_pct;
        let _ = write!(
            out,
            "<tr{}><td>{}</td><td>{}</td><td class=\"num\">{:.6}</td><td class=\"num\">{:.6}</td>\
             <td class=\"num change\">{:+.2}%</td>",
            if worse { " class=\"worse\"" } else { "" },
            escape(&plot::config_label(&config.pass, &config.test, false)),
            escape(&config.pass),
            config.baseline_ms,
            config.value_ms,
            config.change_pct,
        );
        if intervals {
            let interval = config.interval.map_or(String::new(), |i| {
                format!("{:+.2}% to {:+.2}%", i.low_pct, i.high_pct)
            });
            let _ = write!(out, "<td class=\"num\">{interval}</td>");
        }
        out += "</tr>\n";
    }
    out + "</tbody>\n</table>\n"
}

/// The GPU's state and the runs an evidence note holds.
fn evidence_facts(noted: &Noted) -> String {
    let mut out = String::new();
    if let Some(state) = &noted.gpu_state {
        let _ = writeln!(
            out,
            "<p class=\"gpu\">GPU as the iteration began: {}</p>",
            escape(state)
        );
    }
    let _ = write!(
        out,
        "<details><summary>runs ({})</summary>\n<ul>\n",
        noted.runs.len()
    );
    for (name, gpu) in &noted.runs {
        let gpu = gpu
            .as_deref()
            .map_or(String::new(), |g| format!(": GPU {g}"));
        let _ = writeln!(out, "<li>{}{}</li>", escape(name), escape(&gpu));
    }
    out + "</ul></details>\n"
}

/// What the compiler made of the iteration's kernels, as named totals.
fn compile_facts(compile: &CompileFacts) -> String {
    let mut out =
        String::from("<details><summary>compile facts</summary>\n<table class=\"compile\">\n");
    for (name, value) in compile.totals() {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td class=\"num\">{value}</td></tr>",
            escape(name)
        );
    }
    out + "</table></details>\n"
}

/// The bottleneck `diagnose` named for each profiled config, with the rule and numbers that named it.
fn diagnoses(note: &Note) -> String {
    if note.configs.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<p class=\"diagnosis\"><strong>Diagnosis</strong> (Nsight Compute, cached by <code>diagnose</code>):</p>\n<ul>\n",
    );
    for (config, diagnosis) in &note.configs {
        let _ = writeln!(
            out,
            "<li>{}: {} ({})</li>",
            escape(&plot::config_label("", config, false)),
            diagnosis.cause,
            escape(&diagnosis.because)
        );
    }
    out + "</ul>\n"
}

/// A diff with its added, removed and hunk lines marked for colour.
fn highlight(diff: &str) -> String {
    let mut out = String::new();
    for line in diff.lines() {
        let class = match line.as_bytes().first() {
            Some(b'+') if !line.starts_with("+++") => Some("add"),
            Some(b'-') if !line.starts_with("---") => Some("del"),
            Some(b'@') => Some("hunk"),
            _ => None,
        };
        match class {
            Some(class) => {
                let _ = writeln!(out, "<span class=\"{class}\">{}</span>", escape(line));
            }
            None => {
                let _ = writeln!(out, "{}", escape(line));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::session::Iteration;
    use crate::record::session::tests::iteration;
    use crate::rules::decision::Decision;

    fn material() -> Material {
        let mut reverted = iteration(2, Status::Revert, Some(-3.0), Decision::TryNext);
        reverted.optimization = "tiles <128> & \"more\"".into();
        reverted.reason = "one config 10% slower".into();
        reverted.configs[0].value = 0.2;
        let session = crate::record::session::tests::session();
        Material::from_trailers(
            session,
            vec![
                iteration(0, Status::Keep, Some(0.0), Decision::Continue),
                iteration(1, Status::Keep, Some(-6.0), Decision::Continue),
                reverted,
                iteration(3, Status::Crash, None, Decision::TryNext),
            ],
            vec!["the evidence notes".into()],
        )
    }

    #[test]
    fn every_iteration_and_reason_escaped_and_nothing_fetched() {
        let page = html(&material()).unwrap();
        for n in 0..4 {
            assert!(
                page.contains(&format!("<article id=\"iteration-{n}\"")),
                "{n}"
            );
        }
        assert!(page.contains("tiles &lt;128&gt; &amp; &quot;more&quot;"));
        assert!(!page.contains("tiles <128>"));
        assert!(page.contains("<strong>Reason:</strong> one config 10% slower</p>"));
        assert!(page.contains("<li>the evidence notes</li>"));
        assert!(page.contains("the code changes of iterations 1, 2, 3"));
        assert!(!page.contains("://"), "a URL on the page");
        assert_eq!(page, html(&material()).unwrap());
    }

    /// `it` measuring a second config too: `values` are the two configs' latencies.
    fn with_two_configs(mut it: Iteration, values: [f64; 2]) -> Iteration {
        let mut second = it.configs[0].clone();
        second.test = "t::p[c d]".into();
        it.configs.push(second);
        for (config, value) in it.configs.iter_mut().zip(values) {
            config.value = value;
        }
        it
    }

    #[test]
    fn configs_list_regressions_first() {
        // iteration 2 made the first config faster and the second slower than iteration 1 had them
        let before = [0.1234567891, 0.1234567891];
        let material = Material::from_trailers(
            crate::record::session::tests::session(),
            vec![
                with_two_configs(
                    iteration(0, Status::Keep, Some(0.0), Decision::Continue),
                    before,
                ),
                with_two_configs(
                    iteration(1, Status::Keep, Some(-6.0), Decision::Continue),
                    before,
                ),
                with_two_configs(
                    iteration(2, Status::Revert, Some(-3.0), Decision::TryNext),
                    [0.1, 0.2],
                ),
            ],
            vec![],
        );
        let page = html(&material).unwrap();
        let article = &page[page.find("<article id=\"iteration-2\"").unwrap()..];
        let article = &article[..article.find("</article>").unwrap()];
        let slower = article.find("<tr class=\"worse\"><td>c d</td><td>forward</td>");
        let faster = article.find("<tr><td>a b</td><td>forward</td>");
        assert!(
            slower
                .zip(faster)
                .is_some_and(|(slower, faster)| slower < faster),
            "{article}"
        );
    }

    #[test]
    fn a_cached_diagnosis_and_its_compile_facts_show() {
        let mut material = material();
        let profile = crate::features::diagnose::Profile {
            dram_pct: Some(81.0),
            ..Default::default()
        };
        let diagnosis = crate::features::diagnose::Diagnosis {
            cause: crate::rules::decision::Cause::Memory,
            rule: crate::features::diagnose::Rule::MemoryBound,
            because: "memory-bound: DRAM 81% >= 60%".into(),
            profile,
        };
        material.entries[1].diagnosis = Some(Note {
            configs: [("t::p[cutile-4096]".to_string(), diagnosis)].into(),
            compile: Some(CompileFacts::default()),
        });
        let page = html(&material).unwrap();
        assert!(
            page.contains("<li>4096: memory (memory-bound: DRAM 81% &gt;= 60%)</li>"),
            "{page}"
        );
        // facts with nothing in them are not shown
        assert!(!page.contains("<summary>compile facts</summary>"));
    }

    #[test]
    fn diffs_are_escaped_and_marked() {
        assert_eq!(
            highlight("--- a/k.py\n+++ b/k.py\n@@ -1 +1 @@\n-x = 1\n+x = a < b\n"),
            "--- a/k.py\n+++ b/k.py\n<span class=\"hunk\">@@ -1 +1 @@</span>\n\
             <span class=\"del\">-x = 1</span>\n<span class=\"add\">+x = a &lt; b</span>\n"
        );
    }
}
