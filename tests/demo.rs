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
