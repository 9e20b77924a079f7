//! `demo` on a machine whose Python lacks pytest: it makes a private virtual environment in the cache
//! directory, installs pytest there (this needs PyPI), runs the session with it, and reuses it next time.

use crate::support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use support::Fixture;

/// A `python3` that hides its site-packages (`-S`), where pytest lives: a Python without pytest.
fn python_without_pytest(dir: &Path) {
    let real = which::which("python3").unwrap();
    let script = dir.join("python3");
    std::fs::write(
        &script,
        format!("#!/bin/sh\nexec '{}' -S \"$@\"\n", real.display()),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn demo_makes_and_then_reuses_a_private_environment_with_pytest() {
    let f = Fixture::empty();
    let bin = f.path("bin");
    let cache = f.path("cache");
    std::fs::create_dir_all(&bin).unwrap();
    python_without_pytest(&bin);
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let demo = |args: &[&str]| {
        let out = f
            .command(args)
            .env("PATH", &path)
            .env("XDG_CACHE_HOME", &cache)
            .output()
            .unwrap();
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "demo failed:\n{all}");
        all
    };
    let venv = cache.join("git-cutile-perf/venv");
    let first = demo(&["demo", "--dir", "first"]);
    assert!(
        first.contains(&format!(
            "pytest is not available to python3; making a Python environment for the demo in {}",
            venv.display()
        )),
        "{first}"
    );
    assert!(
        first.contains("| 3 | E | latency hints on loads | n/a | PASS | crash | ..."),
        "{first}"
    );
    assert!(
        first.contains("open it in a browser): first/sandbox/perf_results.html"),
        "{first}"
    );
    assert!(f.path("first/sandbox/perf_results.html").is_file());

    // the second run reuses the environment; without --dir the repository is removed, and the report
    // kept in the cache directory
    let second = demo(&["demo"]);
    assert!(
        second.contains(&format!(
            "using the demo's Python environment in {} (made earlier)",
            venv.display()
        )),
        "{second}"
    );
    assert!(!second.contains("making a Python environment"), "{second}");
    let kept = cache.join("git-cutile-perf/demo/perf_results.html");
    assert!(
        second.contains(&format!("open it in a browser): {}", kept.display())),
        "{second}"
    );
    let page = std::fs::read_to_string(&kept).unwrap();
    assert!(page.contains("<article id=\"iteration-3\""), "{page}");
}

/// The README's edit by hand on a kept demo: its commands, run as written but for the folder, with the
/// edit it names, make a kept step.
#[test]
fn the_readmes_edit_by_hand_steps_on_a_kept_demo() {
    let f = Fixture::empty();
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let block: Vec<&str> = readme
        .split("keep it with `--dir`")
        .nth(1)
        .unwrap()
        .lines()
        .skip_while(|line| !line.starts_with("    "))
        .take_while(|line| line.starts_with("    "))
        .map(str::trim)
        .collect();
    assert_eq!(
        block[0],
        "git cutile-perf demo --dir ~/cutile-demo && cd ~/cutile-demo"
    );
    assert!(block[1].contains("LATENCY_MS"), "{block:?}");
    let out = f
        .command(&["demo", "--dir", "cutile-demo"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", support::both(&out));
    let demo = f.path("cutile-demo");
    let kernel = demo.join(support::KERNEL);
    let text = std::fs::read_to_string(&kernel).unwrap();
    let edited = text
        .replace("0.080000", "0.060000")
        .replace("0.800000", "0.600000");
    assert_ne!(edited, text, "the demo's kernel holds its latencies");
    std::fs::write(&kernel, edited).unwrap();
    let words: Vec<String> = block[2]
        .strip_prefix("git cutile-perf ")
        .unwrap()
        .split(" \"")
        .enumerate()
        .flat_map(|(i, part)| match i {
            0 => part.split(' ').map(String::from).collect::<Vec<_>>(),
            _ => vec![part.trim_end_matches('"').to_string()],
        })
        .collect();
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let step = f.command(&words).current_dir(&demo).output().unwrap();
    let shown = support::both(&step);
    assert!(step.status.success(), "{shown}");
    assert!(shown.contains("iteration 4: keep"), "{shown}");
}
