//! `refs` and `next` through the real binary.

use crate::support;

use support::{Fixture, text};

#[test]
fn refs_prints_an_exact_section_outside_any_repository() {
    let f = Fixture::empty();
    let playbook = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/references/optimization-playbook.md"
    ))
    .unwrap();
    let start = playbook.find("\n## B. ").unwrap() + 1;
    let end = start + playbook[start..].find("\n## C. ").unwrap() + 1;
    assert_eq!(f.ok(&["refs", "playbook", "B"]), &playbook[start..end]);
    assert_eq!(f.ok(&["refs", "optimization-playbook.md"]), playbook);
    let err = f.fails(&["refs", "playbook", "Z"]);
    assert!(
        err.contains("playbook has no section \"Z\"; its sections are:"),
        "{err}"
    );
    let err = f.fails(&["refs", "nope"]);
    assert!(err.contains("no reference named \"nope\"; the guides are: playbook, catalog, api, model, ir, patterns"), "{err}");
}

#[test]
fn next_follows_the_catalog_and_skips_tried_letters() {
    let f = Fixture::new();
    f.ok(&["start", "vector_add", "--intensity", "0.3"]);
    let next: serde_json::Value = serde_json::from_str(&f.ok(&["next", "--json"])).unwrap();
    assert_eq!(next["class"], "memory");
    let letters = |v: &serde_json::Value| -> Vec<String> {
        v["next"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["letter"].as_str().unwrap().to_string())
            .collect()
    };
    let before = letters(&next);
    assert_eq!(before.len(), 12);
    f.set_latency(0.09, 0.9);
    f.step_json(&["--opt", before[0].as_str(), "first suggestion"]);
    let after: serde_json::Value = serde_json::from_str(&f.ok(&["next", "--json"])).unwrap();
    assert_eq!(letters(&after), before[1..].to_vec());
    assert_eq!(after["tried"], serde_json::json!([before[0]]));
    // `next` carries the next action every report carries, its letters the same list
    let status: serde_json::Value = serde_json::from_str(&f.ok(&["status", "--json"])).unwrap();
    assert_eq!(after["next_action"], status["next_action"]);
    assert_eq!(after["next_action"]["kind"], "edit-and-step");
    assert_eq!(
        after["next_action"]["letters"],
        serde_json::json!(letters(&after))
    );
    let compute: serde_json::Value =
        serde_json::from_str(&f.ok(&["next", "--json", "--class", "compute"])).unwrap();
    assert_ne!(letters(&compute)[0], before[1]);
}

#[test]
fn step_rejects_an_unknown_playbook_letter_before_running() {
    let f = Fixture::new();
    f.start();
    f.set_latency(0.09, 0.9);
    let head = f.head();
    let err = f.fails(&["step", "--opt", "Q", "mystery"]);
    assert!(
        err.contains("--opt \"Q\" is not a playbook letter (A, B, C, D, E, F, G, H, I, J, K, L)"),
        "{err}"
    );
    assert_eq!(f.head(), head);
}

#[test]
fn a_skip_is_recorded_once_changes_nothing_and_leaves_next_and_status() {
    let f = Fixture::new();
    f.ok(&["start", "vector_add", "--intensity", "0.3"]);
    let table = f.ok(&["table"]);
    let skipped: serde_json::Value = serde_json::from_str(&f.ok(&[
        "next",
        "--json",
        "--skip",
        "a",
        "--why",
        "the timed kernel\nalready uses ct.load",
    ]))
    .unwrap();
    assert_eq!(
        skipped["skipped"],
        serde_json::json!([{"letter": "A", "why": "the timed kernel already uses ct.load"}])
    );
    assert_eq!(skipped["skip_commit"].as_str(), Some(f.head().as_str()));
    assert_eq!(skipped["next"][0]["letter"], "B");
    assert_eq!(
        f.git(&["diff", "--name-only", "HEAD~1", "HEAD"]),
        "",
        "a skip changes nothing"
    );
    let status: serde_json::Value = serde_json::from_str(&f.ok(&["status", "--json"])).unwrap();
    assert_eq!(status["skipped"], skipped["skipped"]);
    assert_eq!(status["next_action"]["letters"][0], "B");
    assert_eq!(f.ok(&["table"]), table, "a skip is no iteration");
    f.ok(&["verify"]);
    let err = f.fails(&["next", "--skip", "A", "--why", "again"]);
    assert!(err.contains("A is skipped already"), "{err}");
    let err = f.fails(&["next", "--skip", "B"]);
    assert!(err.contains("--why"), "{err}");
    // the loop goes on over it, and a skipped letter may still be stepped
    f.set_latency(0.09, 0.9);
    let step = f.step_json(&["--opt", "A", "after all"]);
    assert_eq!(step["iteration"], 1);
    let err = f.fails(&["next", "--skip", "A", "--why", "tried"]);
    assert!(err.contains("A is tried already"), "{err}");
}

#[test]
fn a_skip_commit_that_changes_the_tree_is_a_finding_and_stops_step() {
    let f = Fixture::new();
    f.start();
    // a hand-made commit posing as a skip, carrying a kernel change past the measurement
    f.set_latency(0.05, 0.5);
    f.git(&["add", "-A"]);
    f.git(&[
        "-c",
        "core.hooksPath=/dev/null",
        "commit",
        "-q",
        "-m",
        "skip\n\nCutile-Perf-Skip: A\nCutile-Perf-Skip-Why: w",
    ]);
    let verify: serde_json::Value =
        serde_json::from_str(&text(&f.run(&["verify", "--json"]).stdout)).unwrap();
    assert_eq!(
        verify["findings"][0]["kind"], "unrecorded-change",
        "{verify}"
    );
    f.set_latency(0.09, 0.9);
    let err = f.fails(&["step", "--opt", "none", "more"]);
    assert!(err.contains("unrecorded-change"), "{err}");
    assert!(err.contains("a commit that records no iteration"), "{err}");
}

#[test]
fn a_split_revert_is_offered_once_as_a_variant() {
    let f = Fixture::new();
    f.ok(&["start", "vector_add", "--intensity", "0.3"]);
    // small 20% faster, large 10% slower: reverted, with a config that gained
    f.set_latency(0.08, 1.1);
    let step = f.step_json(&["--opt", "G", "wider tiles"]);
    assert_eq!(step["status"], "revert");
    let next: serde_json::Value = serde_json::from_str(&f.ok(&["next", "--json"])).unwrap();
    let variants = next["variants"].as_array().unwrap();
    assert_eq!(variants.len(), 1, "{next}");
    assert_eq!(
        (&variants[0]["letter"], &variants[0]["iteration"]),
        (&"G".into(), &1.into())
    );
    let sentence = step["next_action"]["sentence"].as_str().unwrap();
    assert!(
        sentence.contains("Or a variant of G: iteration 1 sped up "),
        "{sentence}"
    );
    f.set_latency(0.08, 1.0);
    let variant = f.step_json(&["--opt", "G", "wider tiles for small rows only"]);
    assert_eq!(variant["variant_of"], 1);
    let next: serde_json::Value = serde_json::from_str(&f.ok(&["next", "--json"])).unwrap();
    assert_eq!(next["variants"], serde_json::json!([]));
    assert_eq!(next["tried"], serde_json::json!(["G", "G"]));
}

/// Every key of `value`, at any depth.
fn keys(value: &serde_json::Value, into: &mut std::collections::BTreeSet<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, inner) in map {
                into.insert(key.clone());
                keys(inner, into);
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|item| keys(item, into)),
        _ => {}
    }
}

#[test]
fn every_field_a_report_carries_is_documented_in_refs_json() {
    let f = Fixture::new();
    let json = |args: &[&str]| -> serde_json::Value {
        let out = f.run(args);
        serde_json::from_str(&text(&out.stdout)).unwrap_or_else(|e| panic!("{args:?}: {e}"))
    };
    let mut reports = vec![json(&["start", "vector_add", "--json"])];
    f.set_latency(0.08, 0.8);
    reports.push(json(&["step", "--json", "--opt", "G", "tile size 256"]));
    // large configs faster, small ones slower: a revert offered as a variant
    f.set_latency(0.088, 0.6);
    reports.push(json(&["step", "--json", "--opt", "B", "persistent"]));
    reports.push(json(&[
        "step",
        "--json",
        "--opt",
        "none",
        "nothing changed",
    ]));
    for verb in [
        &["status", "--json"][..],
        &["next", "--json", "--skip", "K", "--why", "one launch"],
        &["table", "--json"],
        &["verify", "--json"],
        &["repair", "--json"],
        &["compare", "1", "2", "--json"],
        &["plot", "--json"],
        &["report", "--json"],
        &["refs", "--json"],
        &["refs", "playbook", "A", "--json"],
        &["inspect", "vector_add", "--json"],
        &["hook", "status", "--json"],
    ] {
        reports.push(json(verb));
    }
    let mut fields = std::collections::BTreeSet::new();
    reports.iter().for_each(|report| keys(report, &mut fields));
    assert!(fields.len() > 120, "{} fields", fields.len());
    let guide = f.ok(&["refs", "json"]);
    let undocumented: Vec<&String> = fields
        .iter()
        .filter(|field| !guide.contains(&format!("`{field}`")))
        .collect();
    assert!(
        undocumented.is_empty(),
        "fields no section of references/json-fields.md names: {undocumented:?}"
    );
}
