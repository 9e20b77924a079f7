//! Errors under `--json`: one object on stdout with the error, its hint and the exit code, which is
//! also the process's; without `--json` they stay text on stderr.

use crate::support;

use support::Fixture;

fn json_error(f: &Fixture, args: &[&str]) -> (serde_json::Value, i32, String) {
    let out = f.run(args);
    let stdout = String::from_utf8(out.stdout).unwrap();
    let report: serde_json::Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("{args:?}: not one JSON object ({e}):\n{stdout}"));
    (
        report,
        out.status.code().unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn a_failing_verb_under_json_prints_its_error_as_json() {
    let f = Fixture::new();
    for args in [
        &["table", "--json"][..],
        &["plot", "--json"],
        &["step", "--opt", "none", "x", "--json"],
    ] {
        let (report, code, stderr) = json_error(&f, args);
        assert_eq!(code, 1, "{args:?}");
        assert_eq!(report["exit_code"], 1, "{args:?}");
        assert!(
            report["error"]
                .as_str()
                .unwrap()
                .starts_with("not on a cutile-perf session branch"),
            "{report}"
        );
        assert!(
            report["hint"]
                .as_str()
                .unwrap()
                .starts_with("start one with"),
            "{report}"
        );
        assert!(!stderr.contains("error:"), "{args:?}: {stderr}");
    }
}

#[test]
fn status_outside_a_session_says_how_to_start_one() {
    let f = Fixture::new();
    let report: serde_json::Value = serde_json::from_str(&f.ok(&["status", "--json"])).unwrap();
    assert_eq!(report["next_action"]["kind"], "start", "{report}");
    assert_eq!(report["branch"], "main", "{report}");
    assert_eq!(report.get("session"), None, "{report}");
    let sentence = report["next_action"]["sentence"].as_str().unwrap();
    assert!(
        sentence.contains("`git cutile-perf inspect <kernel> --json`")
            && sentence.ends_with("then `git cutile-perf start <kernel> --json`."),
        "{sentence}"
    );
    let text = f.ok(&["status"]);
    assert_eq!(
        text,
        "no session on main\nnext: start a session with `git cutile-perf start <kernel>` (`git cutile-perf \
         inspect --all` lists the kernels)\n"
    );
}

#[test]
fn usage_errors_under_json_are_json_with_clap_exit_code() {
    let f = Fixture::new();
    let (report, code, _) = json_error(&f, &["table", "--json", "--no-such-flag"]);
    assert_eq!(code, 2);
    assert_eq!(report["exit_code"], 2);
    assert!(
        report["error"].as_str().unwrap().contains("--no-such-flag"),
        "{report}"
    );
    assert!(
        report["hint"].as_str().unwrap().contains("Usage:"),
        "{report}"
    );
}

#[test]
fn without_json_errors_stay_text_on_stderr() {
    let f = Fixture::new();
    let out = f.run(&["table"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.starts_with("error: not on a cutile-perf session branch"),
        "{stderr}"
    );
    assert!(stderr.contains("\nhint: start one with"), "{stderr}");
}

#[test]
fn an_argument_that_is_not_utf8_is_a_usage_error() {
    use std::os::unix::ffi::OsStrExt;
    let f = Fixture::new();
    let latin1 = std::ffi::OsStr::from_bytes(b"caf\xe9 tiles");
    for json in [false, true] {
        let mut command = f.command(&["step", "--opt", "none"]);
        if json {
            command.arg("--json");
        }
        let out = command.arg(latin1).output().unwrap();
        let all = support::both(&out);
        assert_eq!(out.status.code(), Some(2), "{all}");
        assert!(!all.contains("panicked"), "{all}");
        assert!(all.contains("invalid UTF-8"), "{all}");
    }
}

#[test]
fn setup_remote_without_remotes_says_there_are_none() {
    let f = Fixture::new();
    assert_eq!(f.git(&["remote"]), "");
    let err = f.fails(&["setup-remote"]);
    assert!(err.contains("no remote named \"origin\""), "{err}");
    assert!(err.contains("this repository has no remotes yet"), "{err}");
    assert!(!err.contains("name one of"), "{err}");
}
