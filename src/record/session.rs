//! The session and its iterations as recorded in trailers, and the loop state derived from them.
//!
//! Nothing here is stored anywhere but in commit messages: the baseline commit (iteration 0) carries the
//! session's settings, every later iteration commit its own result. State such as "the current baseline"
//! or "iterations without a gain" is recomputed from that list each time.

pub mod harness;
mod skip;

use anyhow::{Context, Result, bail};

use crate::rules::decision::{
    Attempt, Cause, Correctness, Decision, Status, Thresholds, Verdict, fmt_pct,
};
use crate::rules::kernel_class::KernelClass;
use crate::rules::records::{Measurement, Statistic, round_config_ms};
use crate::rules::stats::Spread;
use crate::rules::trailers::{Block, decode_field, encode_field, encode_word, split_word};
use crate::system::runner::{Placement, RunnerSettings};
use harness::HarnessMode;
pub use skip::Skip;

/// Version of the trailer schema, so a later tool can read an older history.
const SCHEMA: &str = "1";

/// How far a kept step's checks reach a session timed through a standalone benchmark script, where
/// they reach it less far than a `test_perf`.
pub const BENCHMARK_REACH: &str = "warm workers, paired rounds, the census and no re-roll apply as to a \
    test_perf; unseen inputs shift only the seeds the script sets (an unseeded script draws fresh inputs \
    every run)";

/// Branches whose name starts with this are session branches.
pub const BRANCH_PREFIX: &str = "cutile-perf-";

/// Settings fixed at `start`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Session {
    pub kernel: String,
    pub test: String,
    /// The content hash (git's blob id) of the test when it is a session perf file, which git does not
    /// track: a step refuses when it changed, and `verify` reports it.
    pub perf_file: Option<String>,
    /// The standalone benchmark script the session perf file runs the cuTile lines of, when it runs
    /// one: the checks reach such a source less far ([`BENCHMARK_REACH`]).
    pub benchmark: Option<String>,
    /// Repository-relative paths that iterations may change (the kernel first).
    pub allowed: Vec<String>,
    #[serde(serialize_with = "serialize_display")]
    pub statistic: Statistic,
    pub thresholds: Thresholds,
    pub python: String,
    /// A pytest `-k` expression narrowing the correctness and benchmark selections.
    pub filter: Option<String>,
    /// The kernel's class, when known.
    pub class: Option<KernelClass>,
    /// Where the class came from: `--class`, `--intensity 12.5`, `measured: ...` or `static: ...`.
    pub class_source: Option<String>,
    /// `name, compute capability, driver` when a GPU was seen.
    pub gpu: Option<String>,
    /// The GPU's clocks, memory and other processes at the start, in words.
    pub gpu_state: Option<String>,
    /// Started with `--no-gpu`: no GPU was required, and steps do not check for one.
    pub no_gpu: bool,
    /// Every iteration, the baseline too, carries an evidence note (`Evidence: notes`): a session
    /// started since `start` says so. Only a session without it (recorded before notes existed) may
    /// lack its baseline's note, where a missing note is otherwise a note lost or not fetched.
    pub noted: bool,
    /// Where the tests run: here, or on a Slurm node per iteration.
    pub runner: RunnerSettings,
    /// The noise floor: how far each config moved between the baseline's runs (none in histories
    /// written before it was measured).
    pub spread: Vec<Spread>,
    /// How the harness measured at `start`, as the environment chose it (none in histories written
    /// before it was recorded).
    pub harness: Option<HarnessMode>,
    /// The git-ignored files the tests can load at `start`, as their count and one hash of their paths
    /// and contents (`3 9f2c...`), so that a clone without the list `start` kept beside it still checks
    /// them (none in histories written before it was recorded).
    pub ignored: Option<String>,
}

fn serialize_display<S: serde::Serializer>(
    value: &impl std::fmt::Display,
    s: S,
) -> Result<S::Ok, S::Error> {
    s.collect_str(value)
}

/// One iteration's record.
#[derive(Debug, Clone, PartialEq)]
pub struct Iteration {
    pub number: u32,
    pub optimization: String,
    /// The playbook letter the optimization follows, if named: [`NO_LETTER`] when the step said the
    /// change fits none (`--opt none`).
    pub letter: Option<String>,
    pub cause: Option<Cause>,
    pub latency_ms: Option<f64>,
    pub correctness: Correctness,
    pub status: Status,
    pub baseline_ms: f64,
    pub change_pct: Option<f64>,
    pub decision: Decision,
    pub reason: String,
    pub configs: Vec<Measurement>,
    /// The commit holding the attempted change, for reverted and crashed iterations.
    pub attempt: Option<String>,
    /// The Slurm node and job that measured it; none for local runs.
    pub placement: Option<Placement>,
    /// How many benchmark runs each side (candidate and baseline) got, when the step measured paired
    /// rounds; `None` for a single run (the baseline, and histories written before paired rounds).
    pub rounds: Option<u32>,
}

/// What `--opt` and the `Cutile-Perf-Opt` trailer say for a change that follows no playbook letter.
pub const NO_LETTER: &str = "none";

/// Formats a latency as the table and trailers show it.
pub fn fmt_ms(value: Option<f64>) -> String {
    value.map_or_else(|| "n/a".to_string(), |v| format!("{v:.6}"))
}

pub fn fmt_change(value: Option<f64>) -> String {
    value.map_or_else(|| "n/a".to_string(), |v| format!("{v:+.2}%"))
}

fn parse_optional_number(text: &str, what: &str) -> Result<Option<f64>> {
    if text == "n/a" {
        return Ok(None);
    }
    let number = text
        .trim_end_matches('%')
        .parse::<f64>()
        .with_context(|| format!("bad {what}: {text:?}"))?;
    Ok(Some(number))
}

fn parse_word<T>(text: &str, parse: fn(&str) -> Option<T>, what: &str) -> Result<T> {
    parse(text).with_context(|| format!("unknown {what} {text:?}"))
}

impl Session {
    pub fn write(&self, block: &mut Block) {
        block.push("Session", SCHEMA);
        block.push("Kernel", encode_field(&self.kernel));
        block.push("Test", encode_field(&self.test));
        if let Some(hash) = &self.perf_file {
            block.push("Test-Hash", hash);
        }
        if let Some(script) = &self.benchmark {
            block.push("Benchmark", encode_field(script));
        }
        for path in &self.allowed {
            block.push("Allow", encode_field(path));
        }
        block.push("Statistic", self.statistic.as_str());
        let t = &self.thresholds;
        block.push("Continue-Pct", fmt_pct(t.continue_pct));
        block.push("Gain-Pct", fmt_pct(t.gain_pct));
        block.push("Regression-Pct", fmt_pct(t.regression_pct));
        block.push("Max-Iterations", t.max_iterations.to_string());
        block.push("Max-No-Gain", t.max_no_gain.to_string());
        block.push("Python", encode_field(&self.python));
        if let Some(filter) = &self.filter {
            block.push("Filter", encode_field(filter));
        }
        if let Some(class) = self.class {
            block.push("Class", class.as_str());
        }
        if let Some(source) = &self.class_source {
            block.push("Class-Source", encode_field(source));
        }
        if let Some(gpu) = &self.gpu {
            block.push("GPU", gpu);
        }
        if let Some(state) = &self.gpu_state {
            block.push("GPU-State", encode_field(state));
        }
        if self.no_gpu {
            block.push("No-GPU", "true");
        }
        if self.noted {
            block.push("Evidence", "notes");
        }
        self.runner.write(block);
        if let Some(harness) = &self.harness {
            block.push("Harness", encode_field(&harness.encode()));
        }
        if let Some(ignored) = &self.ignored {
            block.push("Ignored", encode_field(ignored));
        }
        for s in &self.spread {
            block.push(
                "Spread",
                format!(
                    "{:.3}% {} {}",
                    s.spread_pct,
                    encode_word(&s.pass),
                    encode_field(&s.test)
                ),
            );
        }
    }

    /// The session recorded in a baseline commit's trailers; `None` if the block holds none.
    pub fn read(block: &Block) -> Result<Option<Session>> {
        let Some(schema) = block.get("Session")? else {
            return Ok(None);
        };
        if schema != SCHEMA {
            bail!(
                "session schema {schema} is not supported by this version (expects {SCHEMA}); upgrade git-cutile-perf"
            );
        }
        let number = |key: &str| -> Result<f64> {
            let text = block.require(key)?;
            text.parse().with_context(|| format!("bad {key}: {text:?}"))
        };
        let count = |key: &str| -> Result<u32> {
            let text = block.require(key)?;
            text.parse().with_context(|| format!("bad {key}: {text:?}"))
        };
        Ok(Some(Session {
            kernel: decode_field(block.require("Kernel")?)?,
            test: decode_field(block.require("Test")?)?,
            perf_file: block.get("Test-Hash")?.map(str::to_string),
            benchmark: block.get("Benchmark")?.map(decode_field).transpose()?,
            allowed: block
                .all("Allow")
                .map(decode_field)
                .collect::<Result<_>>()?,
            statistic: parse_word(block.require("Statistic")?, Statistic::parse, "statistic")?,
            thresholds: Thresholds {
                continue_pct: number("Continue-Pct")?,
                gain_pct: number("Gain-Pct")?,
                regression_pct: number("Regression-Pct")?,
                max_iterations: count("Max-Iterations")?,
                max_no_gain: count("Max-No-Gain")?,
            },
            python: decode_field(block.require("Python")?)?,
            filter: block.get("Filter")?.map(decode_field).transpose()?,
            class: block
                .get("Class")?
                .map(|c| c.parse().map_err(anyhow::Error::msg))
                .transpose()?,
            class_source: block.get("Class-Source")?.map(decode_field).transpose()?,
            gpu: block.get("GPU")?.map(str::to_string),
            gpu_state: block.get("GPU-State")?.map(decode_field).transpose()?,
            no_gpu: match block.get("No-GPU")? {
                None => false,
                Some("true") => true,
                Some(other) => bail!("bad No-GPU trailer {other:?}"),
            },
            noted: match block.get("Evidence")? {
                None => false,
                Some("notes") => true,
                Some(other) => bail!("bad Evidence trailer {other:?}"),
            },
            runner: RunnerSettings::read(block)?,
            spread: block
                .all("Spread")
                .map(read_spread)
                .collect::<Result<_>>()?,
            harness: block
                .get("Harness")?
                .map(|text| HarnessMode::decode(&decode_field(text)?))
                .transpose()?,
            ignored: block.get("Ignored")?.map(decode_field).transpose()?,
        }))
    }
}

/// `0.123% forward tests.ops.test_x::test_perf[...]`
fn read_spread(text: &str) -> Result<Spread> {
    let Some((pct, rest)) = text.split_once(' ') else {
        bail!("bad spread trailer {text:?}");
    };
    let (pass, test) = split_word(rest)?;
    Ok(Spread {
        spread_pct: pct
            .trim_end_matches('%')
            .parse()
            .with_context(|| format!("bad spread in {text:?}"))?,
        pass,
        test: decode_field(test)?,
    })
}

impl Iteration {
    /// Iteration 0: the kept baseline at `latency` (its `configs`' geometric mean), with `reason` and
    /// where it ran (`placement`).
    pub fn baseline(
        latency: f64,
        configs: Vec<Measurement>,
        reason: String,
        placement: Option<Placement>,
    ) -> Iteration {
        Iteration {
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
            reason,
            configs,
            attempt: None,
            placement,
            rounds: None,
        }
    }

    /// Iteration `number` as the rules judged `attempt` (`verdict`), not yet committed: its latency,
    /// change and configs as measured, and the baseline's latency measured beside it, else
    /// `stored_baseline_ms`. The description, letter and cause are the caller's.
    pub fn judged(
        number: u32,
        optimization: String,
        letter: Option<String>,
        cause: Option<Cause>,
        attempt: &Attempt,
        verdict: &Verdict,
        stored_baseline_ms: f64,
    ) -> Iteration {
        let comparison = attempt.comparison();
        let (configs, rounds) = match attempt {
            Attempt::Measured {
                configs, paired, ..
            } => (configs.clone(), Some(paired.estimate.rounds as u32)),
            _ => (Vec::new(), None),
        };
        Iteration {
            number,
            optimization,
            letter,
            cause,
            latency_ms: comparison.map(|c| c.latency_ms),
            correctness: attempt.correctness(),
            status: verdict.status,
            baseline_ms: comparison.map_or(stored_baseline_ms, |c| c.baseline_ms),
            change_pct: comparison.map(|c| c.change_pct()),
            decision: verdict.decision,
            reason: verdict.reason.clone(),
            configs,
            attempt: None,
            placement: None,
            rounds,
        }
    }

    /// The reason in a few words, for a subject line or a table cell: its first clause without the
    /// interval, e.g. `t1 forward: +3.00%` (the config that reverted it, and its change).
    pub fn short_reason(&self) -> String {
        const LONGEST: usize = 80;
        let first = self.reason.split("; ").next().unwrap_or_default();
        let first = first
            .split(" (")
            .next()
            .unwrap_or_default()
            .trim_end_matches(',');
        // a list after a colon (the failed cases) is the full reason's to give
        let first = match first.split_once(": ") {
            Some((head, list)) if list.contains(", ") => head,
            _ => first,
        };
        // a test id by its test name (`test_perf[...]`, its module path dropped), and a reason still
        // too long by its end, where the change is
        let words: Vec<&str> = first
            .split(' ')
            .map(|word| word.rsplit("::").next().unwrap_or(word))
            .collect();
        let short = words.join(" ");
        let chars = short.chars().count();
        match chars.checked_sub(LONGEST) {
            Some(over) if over > 0 => {
                format!("...{}", short.chars().skip(over + 3).collect::<String>())
            }
            _ => short,
        }
    }

    /// The playbook letter it follows: none for an iteration that named none or said it fits none.
    pub fn playbook_letter(&self) -> Option<&str> {
        self.letter.as_deref().filter(|letter| *letter != NO_LETTER)
    }

    pub fn write(&self, block: &mut Block) {
        block.push("Iteration", self.number.to_string());
        block.push("Optimization", &self.optimization);
        if let Some(letter) = &self.letter {
            block.push("Opt", letter);
        }
        if let Some(cause) = self.cause {
            block.push("Cause", cause.as_str());
        }
        block.push("Latency-Ms", fmt_ms(self.latency_ms));
        block.push("Correctness", self.correctness.as_str());
        block.push("Status", self.status.as_str());
        block.push("Baseline-Ms", fmt_ms(Some(self.baseline_ms)));
        block.push("Change", fmt_change(self.change_pct));
        block.push("Decision", self.decision.as_str());
        block.push("Reason", &self.reason);
        if let Some(attempt) = &self.attempt {
            block.push("Attempt", attempt);
        }
        if let Some(placement) = &self.placement {
            placement.write(block);
        }
        if let Some(rounds) = self.rounds {
            block.push("Rounds", rounds.to_string());
        }
        for config in &self.configs {
            block.push(
                "Config",
                format!(
                    "{} {} {}",
                    encode_word(&config.pass),
                    round_config_ms(config.value),
                    encode_field(&config.test)
                ),
            );
        }
    }

    /// The iteration recorded in a commit's trailers; `None` if the block holds none.
    pub fn read(block: &Block) -> Result<Option<Iteration>> {
        let Some(number) = block.get("Iteration")? else {
            return Ok(None);
        };
        let configs = block
            .all("Config")
            .map(|text| {
                let (pass, rest) = split_word(text)?;
                let Some((value, test)) = rest.split_once(' ') else {
                    bail!("bad config trailer {text:?}");
                };
                let value = value
                    .parse()
                    .with_context(|| format!("bad config value in {text:?}"))?;
                Ok(Measurement {
                    pass,
                    test: decode_field(test)?,
                    value,
                    mean: None,
                })
            })
            .collect::<Result<_>>()?;
        Ok(Some(Iteration {
            number: number
                .parse()
                .with_context(|| format!("bad iteration number {number:?}"))?,
            optimization: block.require("Optimization")?.to_string(),
            letter: block.get("Opt")?.map(str::to_string),
            cause: block
                .get("Cause")?
                .map(|c| parse_word(c, Cause::parse, "cause"))
                .transpose()?,
            latency_ms: parse_optional_number(block.require("Latency-Ms")?, "latency")?,
            correctness: parse_word(
                block.require("Correctness")?,
                Correctness::parse,
                "correctness",
            )?,
            status: parse_word(block.require("Status")?, Status::parse, "status")?,
            baseline_ms: parse_optional_number(block.require("Baseline-Ms")?, "baseline")?
                .context("the baseline latency is missing")?,
            change_pct: parse_optional_number(block.require("Change")?, "change")?,
            decision: parse_word(block.require("Decision")?, Decision::parse, "decision")?,
            reason: block.require("Reason")?.to_string(),
            configs,
            attempt: block.get("Attempt")?.map(str::to_string),
            placement: Placement::read(block)?,
            rounds: block
                .get("Rounds")?
                .map(|r| r.parse().with_context(|| format!("bad rounds {r:?}")))
                .transpose()?,
        }))
    }
}

pub fn short(commit: &str) -> &str {
    &commit[..commit.len().min(10)]
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::rules::trailers::render_message;

    pub fn session() -> Session {
        Session {
            kernel: "src/tilegym/ops/cutile/rms_norm.py".into(),
            test: "tests/ops/test_rms_norm.py".into(),
            perf_file: Some("0123abc".into()),
            benchmark: Some("tests/benchmark/bench_rms norm.py".into()),
            allowed: vec![
                "src/tilegym/ops/cutile/rms_norm.py".into(),
                "src/a b\nc.py".into(),
            ],
            statistic: Statistic::Median,
            thresholds: Thresholds::default(),
            python: "python3".into(),
            filter: Some("float16 and not 32768".into()),
            class: Some(KernelClass::Memory),
            class_source: Some("static: tile loads,\nno MMA".into()),
            gpu: None,
            gpu_state: Some("SM 1980/1980 MHz; other processes: pid 7 a.out".into()),
            no_gpu: true,
            noted: true,
            runner: RunnerSettings::default(),
            spread: vec![Spread {
                pass: "forward".into(),
                test: "t::p[a b]".into(),
                spread_pct: 0.125,
            }],
            harness: Some(HarnessMode::of(|name| {
                (name == "CUPTI").then(|| "0".to_string())
            })),
            ignored: Some("2 0123abcd".into()),
        }
    }

    pub fn iteration(
        number: u32,
        status: Status,
        change: Option<f64>,
        decision: Decision,
    ) -> Iteration {
        Iteration {
            number,
            optimization: format!("opt {number}"),
            letter: None,
            cause: None,
            latency_ms: change.map(|c| 1.0 + c / 100.0),
            correctness: Correctness::Pass,
            status,
            baseline_ms: 1.0,
            change_pct: change,
            decision,
            reason: "r".into(),
            configs: vec![Measurement {
                pass: "forward".into(),
                test: "t::p[a b]".into(),
                value: 0.123456,
                mean: None,
            }],
            attempt: None,
            placement: None,
            rounds: None,
        }
    }

    #[test]
    fn session_round_trips_through_a_message() {
        let mut block = Block::default();
        session().write(&mut block);
        iteration(0, Status::Keep, Some(0.0), Decision::Continue).write(&mut block);
        let read = Block::from_message(&render_message("baseline", None, &block));
        assert_eq!(Session::read(&read).unwrap(), Some(session()));
        let it = Iteration::read(&read).unwrap().unwrap();
        assert_eq!(
            it,
            iteration(0, Status::Keep, Some(0.0), Decision::Continue)
        );
    }

    #[test]
    fn iteration_round_trips_with_optional_fields() {
        let mut it = iteration(3, Status::Crash, None, Decision::TryNext);
        it.correctness = Correctness::Fail;
        it.letter = Some("B".into());
        it.cause = Some(Cause::Latency);
        it.attempt = Some("abc123".into());
        it.rounds = Some(3);
        it.configs.clear();
        let mut block = Block::default();
        it.write(&mut block);
        let message = render_message("s", Some("n"), &block);
        assert!(message.contains("\nCutile-Perf-Latency-Ms: n/a\n"));
        assert!(message.contains("\nCutile-Perf-Change: n/a\n"));
        assert_eq!(
            Iteration::read(&Block::from_message(&message)).unwrap(),
            Some(it)
        );
        assert_eq!(Session::read(&Block::from_message(&message)).unwrap(), None);
    }

    #[test]
    fn a_python_path_and_a_filter_the_user_typed_round_trip() {
        let mut odd = session();
        odd.python = "/opt/my  env/bin/python\nCutile-Perf-Max-Iterations: 99".into();
        odd.filter = Some("  \"a and  b\" ".into());
        let mut block = Block::default();
        odd.write(&mut block);
        let read = Block::from_message(&render_message("s", None, &block));
        assert_eq!(Session::read(&read).unwrap(), Some(odd));
    }

    #[test]
    fn spread_pass_names_with_spaces_round_trip() {
        let mut with_space = session();
        with_space.spread[0].pass = "fwd bwd".into();
        let mut block = Block::default();
        with_space.write(&mut block);
        let read = Block::from_message(&render_message("s", None, &block));
        assert_eq!(Session::read(&read).unwrap(), Some(with_space));
    }

    #[test]
    fn pass_names_with_spaces_or_empty_round_trip() {
        let mut it = iteration(1, Status::Keep, Some(-5.0), Decision::Continue);
        for pass in ["fwd bwd", "", "\"x", "forward"] {
            it.configs[0].pass = pass.to_string();
            let mut block = Block::default();
            it.write(&mut block);
            let read = Block::from_message(&render_message("s", None, &block));
            assert_eq!(
                Iteration::read(&read).unwrap().as_ref(),
                Some(&it),
                "{pass:?}"
            );
        }
    }

    #[test]
    fn config_values_are_written_to_six_significant_digits() {
        let mut it = iteration(1, Status::Keep, Some(-5.0), Decision::Continue);
        for (value, written) in [
            (0.08799999999999998, "0.088"),
            (0.1234567891, "0.123457"),
            (1234.56789, "1234.57"),
            (0.00012345678, "0.000123457"),
        ] {
            it.configs[0].value = value;
            let mut block = Block::default();
            it.write(&mut block);
            let config = block.require("Config").unwrap().to_string();
            assert_eq!(config, format!("forward {written} t::p[a b]"));
            assert_eq!(
                round_config_ms(written.parse().unwrap()),
                round_config_ms(value)
            );
        }
    }
}
