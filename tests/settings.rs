//! Settings in git config: `config --list` and where each value came from, precedence (flag, then the
//! repository's config, then the global one), and a session's recorded thresholds outliving a changed
//! setting. The real binary, real git and real pytest on the fixture repository.

use crate::support;

use support::{Fixture, both};

fn listed(f: &Fixture) -> serde_json::Value {
    let out = f.run(&["config", "--list", "--json"]);
    assert!(out.status.success(), "{}", both(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `key`'s (value, source) in `config --list --json`.
fn setting(f: &Fixture, key: &str) -> (serde_json::Value, String) {
    let list = listed(f);
    let found = list["settings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["key"] == key)
        .unwrap_or_else(|| panic!("no {key} in {list}"))
        .clone();
    (
        found["value"].clone(),
        found["source"].as_str().unwrap().to_string(),
    )
}

#[test]
fn config_list_shows_each_value_and_where_it_came_from() {
    let f = Fixture::new();
    assert_eq!(
        setting(&f, "cutile-perf.budget"),
        ("10m".into(), "default".into())
    );
    assert_eq!(
        setting(&f, "cutile-perf.python"),
        (serde_json::Value::Null, "default".into())
    );
    f.git(&["config", "--global", "cutile-perf.budget", "20m"]);
    assert_eq!(
        setting(&f, "cutile-perf.budget"),
        ("20m".into(), "global".into())
    );
    f.git(&["config", "cutile-perf.budget", "30m"]);
    assert_eq!(
        setting(&f, "cutile-perf.budget"),
        ("30m".into(), "local".into())
    );
    let text = f.ok(&["config", "--list"]);
    let line = text
        .lines()
        .find(|l| l.starts_with("cutile-perf.budget "))
        .unwrap();
    assert!(line.contains(" 30m ") && line.contains(" local "), "{line}");
    assert!(
        line.ends_with("--budget (start, step, diagnose, inspect)"),
        "{line}"
    );
    assert!(f.fails(&["config"]).contains("--list"));
}

#[test]
fn thresholds_come_from_config_under_a_flag_and_a_session_keeps_what_it_recorded() {
    let f = Fixture::new();
    f.git(&["config", "--global", "cutile-perf.maxNoGain", "4"]);
    f.git(&["config", "cutile-perf.maxNoGain", "5"]);
    f.git(&["config", "--global", "cutile-perf.gainPct", "3"]);
    f.start();
    assert_eq!(f.trailer("HEAD", "Cutile-Perf-Max-No-Gain"), "5");
    assert_eq!(f.trailer("HEAD", "Cutile-Perf-Gain-Pct"), "3");

    // a 10% gain under the recorded 3%; then the settings change, and nothing recorded moves
    f.set_latency(0.09, 0.9);
    f.step_json(&["tile size 256"]);
    f.git(&["config", "cutile-perf.gainPct", "50"]);
    f.git(&["config", "cutile-perf.maxNoGain", "1"]);
    assert!(f.ok(&["verify"]).contains("the record holds"));
    let status: serde_json::Value = serde_json::from_str(&f.ok(&["status", "--json"])).unwrap();
    assert_eq!(status["no_gain"], 0, "{status}");
    f.set_latency(0.085, 0.85);
    let second = f.step_json(&["tile size 512"]);
    assert_eq!(second["status"], "keep", "{second}");
    assert_eq!(
        second["no_gain"], 0,
        "a 5.6% gain is one under the recorded 3%: {second}"
    );

    // a flag wins over both scopes
    let g = Fixture::new();
    g.git(&["config", "--global", "cutile-perf.maxNoGain", "4"]);
    g.git(&["config", "cutile-perf.maxNoGain", "5"]);
    g.ok(&["start", "vector_add", "--max-no-gain", "6"]);
    assert_eq!(g.trailer("HEAD", "Cutile-Perf-Max-No-Gain"), "6");
}

#[test]
fn a_bad_configured_value_is_refused_like_the_flag_it_stands_for() {
    let f = Fixture::new();
    f.git(&["config", "cutile-perf.budget", "soon"]);
    let err = f.fails(&["step", "--opt", "none", "x"]);
    assert!(err.contains("invalid value 'soon' for '--budget"), "{err}");
    assert!(
        err.contains("hint: that value comes from git config: `git cutile-perf config --list`"),
        "{err}"
    );
    let out = f.run(&["step", "--opt", "none", "x", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["exit_code"], 2, "{report}");
    assert!(
        report["hint"].as_str().unwrap().contains("git config"),
        "{report}"
    );
}
