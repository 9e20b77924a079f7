//! `refs` and `next` through the real binary.

use crate::support;

use support::Fixture;

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
