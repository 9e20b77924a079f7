//! `plot` through the real binary on the fixture: a session with a keep, a revert and a crash gives an
//! SVG with one mark per attempt, the same bytes each time, and `table --write` writes it too.

use crate::support;

use support::Fixture;

/// How many shapes carry `class="mark <status>"`, per status.
fn marks(svg: &str, status: &str) -> usize {
    svg.matches(&format!("class=\"mark {status}\"")).count()
}

#[test]
fn plots_every_attempt_from_the_history() {
    let f = Fixture::new();
    f.start();
    f.set_latency(0.05, 0.5);
    f.step_json(&["faster"]);
    f.set_latency(0.06, 0.4);
    f.step_json(&["one config slower"]);
    f.edit_kernel("CRASH = \"\"", "CRASH = \"exception\"");
    f.step_json(&["bad hints"]);

    let report: serde_json::Value =
        serde_json::from_str(&f.ok(&["plot", "--json", "--out", "session.svg"])).unwrap();
    assert_eq!(report["iterations"], 3);
    assert_eq!(report["plot"], "session.svg");
    let svg = std::fs::read_to_string(f.path("session.svg")).unwrap();
    assert!(svg.starts_with("<svg"));
    assert_eq!(
        (
            marks(&svg, "keep"),
            marks(&svg, "revert"),
            marks(&svg, "crash")
        ),
        (2, 1, 1)
    );
    assert!(svg.contains("#3 crash"));
    assert!(svg.contains("vector_add: latency per iteration"));

    // the default place, and the same bytes from `table --write`
    let out = f.ok_all(&["plot"]);
    assert!(out.contains("wrote"), "{out}");
    let default = f.path("sandbox/perf_results.svg");
    assert_eq!(std::fs::read_to_string(&default).unwrap(), svg);
    std::fs::remove_file(&default).unwrap();
    let table: serde_json::Value =
        serde_json::from_str(&f.ok(&["table", "--write", "--json"])).unwrap();
    assert!(
        table["plot"]
            .as_str()
            .unwrap()
            .ends_with("perf_results.svg")
    );
    assert_eq!(std::fs::read_to_string(&default).unwrap(), svg);
}

#[test]
fn plot_off_a_session_branch_says_how_to_start() {
    let f = Fixture::new();
    let err = f.fails(&["plot"]);
    assert!(err.contains("not on a cutile-perf session branch"), "{err}");
}
