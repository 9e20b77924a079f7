//! The installed extras: man pages, shell completions (driven for real through git's bash
//! completion), install-extras/uninstall-extras, `--version`, and plain output off a terminal.
//!
//! Every test runs the real binary. Regenerate the committed `man/` and `completions/` with
//! `UPDATE_GENERATED=1 cargo test --test tests extras::` after changing the command line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const EXE: &str = env!("CARGO_BIN_EXE_git-cutile-perf");
const REGENERATE: &str = "UPDATE_GENERATED=1 cargo test --test tests extras::";

fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The binary with an environment that cannot leak the developer's settings into the result.
fn tool(args: &[&str]) -> Command {
    let mut cmd = Command::new(EXE);
    cmd.args(args)
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("BASH_COMPLETION_USER_DIR")
        .env_remove("CLICOLOR_FORCE");
    cmd
}

fn run_ok(cmd: &mut Command) -> Output {
    // a binary just copied can be busy for a moment: a process another test thread forked meanwhile holds
    // the copy's write descriptor until it execs (ETXTBSY)
    let mut output = cmd.output();
    for _ in 0..50 {
        match &output {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(std::time::Duration::from_millis(20));
                output = cmd.output();
            }
            _ => break,
        }
    }
    let output = output.expect("run git-cutile-perf");
    assert!(
        output.status.success(),
        "{cmd:?} failed: {}\n{}",
        String::from_utf8_lossy(&output.stderr),
        String::from_utf8_lossy(&output.stdout)
    );
    output
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("UTF-8 output")
}

fn json(output: &Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON object ({e}):\n{}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

/// Every file directly in `dir`, by name.
fn files_in(dir: &Path) -> BTreeMap<String, String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return BTreeMap::new();
    };
    entries
        .flatten()
        .filter(|e| e.path().is_file())
        .map(|e| {
            (
                e.file_name().into_string().unwrap(),
                std::fs::read_to_string(e.path()).unwrap(),
            )
        })
        .collect()
}

/// The committed man pages and completion scripts are exactly what the binary generates now.
#[test]
fn committed_man_pages_and_completions_match_the_cli() {
    let fresh = tempfile::tempdir().unwrap();
    for (verb, dir) in [("man", "man"), ("completions", "completions")] {
        let target = if std::env::var_os("UPDATE_GENERATED").is_some() {
            repo_root().join(dir)
        } else {
            fresh.path().join(dir)
        };
        run_ok(tool(&[verb, "--dir"]).arg(&target));
        let committed = files_in(&repo_root().join(dir));
        let generated = files_in(&target);
        let names = |m: &BTreeMap<String, String>| m.keys().cloned().collect::<Vec<_>>();
        assert_eq!(
            names(&committed),
            names(&generated),
            "{dir}/ has other files than the CLI generates; regenerate with `{REGENERATE}`"
        );
        for (name, text) in &generated {
            assert!(
                committed[name] == *text,
                "{dir}/{name} is out of date with the CLI; regenerate with `{REGENERATE}`"
            );
        }
    }
}

#[test]
fn man_pages_name_every_verb_and_print_one_page() {
    let names: Vec<String> = files_in(&repo_root().join("man")).into_keys().collect();
    for verb in ["start", "step", "table", "status", "demo"] {
        assert!(
            names.contains(&format!("git-cutile-perf-{verb}.1")),
            "{verb}: {names:?}"
        );
    }
    assert!(names.contains(&"git-cutile-perf.1".to_string()));
    assert!(!names.contains(&"git-cutile-perf-help.1".to_string()));

    let page = stdout(&run_ok(&mut tool(&["man", "step"])));
    assert!(page.contains(".TH git-cutile-perf-step 1"), "{page}");
    assert!(page.contains("\\-\\-budget"));
    let top = stdout(&run_ok(&mut tool(&["man"])));
    assert!(top.contains(".TH git-cutile-perf 1"));

    let missing = tool(&["man", "no-such-verb"]).output().unwrap();
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no verb"));
}

#[test]
fn version_names_the_commit() {
    let version = stdout(&run_ok(&mut tool(&["--version"])));
    let version = version.trim();
    let rest = version
        .strip_prefix(&format!("git-cutile-perf {} (", env!("CARGO_PKG_VERSION")))
        .and_then(|rest| rest.strip_suffix(')'))
        .unwrap_or_else(|| panic!("{version}"));
    // the tests run in the checkout the binary was built from: it names that checkout's commit (one
    // built from a tarball, outside any repository, says "unknown commit")
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(repo_root())
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| stdout(&out).trim().to_string());
    assert_eq!(
        rest,
        head.as_deref().unwrap_or("unknown commit"),
        "{version}"
    );
}

/// git's bash completion script: from `GIT_COMPLETION_BASH`, or where git packages put it.
fn git_completion_script() -> PathBuf {
    if let Some(path) = std::env::var_os("GIT_COMPLETION_BASH") {
        return PathBuf::from(path);
    }
    let mut candidates = vec![
        PathBuf::from("/usr/share/bash-completion/completions/git"),
        PathBuf::from("/usr/share/git-core/contrib/completion/git-completion.bash"),
        PathBuf::from("/usr/local/share/bash-completion/completions/git"),
        PathBuf::from("/usr/local/etc/bash_completion.d/git-completion.bash"),
        PathBuf::from("/opt/homebrew/etc/bash_completion.d/git-completion.bash"),
        PathBuf::from("/etc/bash_completion.d/git"),
    ];
    if let Ok(out) = Command::new("git").arg("--exec-path").output() {
        let exec = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if let Some(prefix) = exec.parent().and_then(Path::parent) {
            candidates.push(prefix.join("share/git-core/contrib/completion/git-completion.bash"));
            candidates.push(prefix.join("share/bash-completion/completions/git"));
        }
    }
    candidates
        .iter()
        .find(|path| path.is_file())
        .cloned()
        .unwrap_or_else(|| {
            panic!(
                "git's bash completion script was not found in {candidates:?}: install git's \
                 completion (Debian/Ubuntu: the `git` package puts it in \
                 /usr/share/bash-completion/completions/git) or set GIT_COMPLETION_BASH to \
                 contrib/completion/git-completion.bash"
            )
        })
}

/// Completes each command line (the last word is the one being completed) in a fresh bash that has
/// sourced git's completion and our script, the way bash does on <TAB>; returns COMPREPLY per line.
fn complete(lines: &[&[&str]]) -> Vec<Vec<String>> {
    let script = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        script.path(),
        stdout(&run_ok(&mut tool(&["completions", "bash"]))),
    )
    .unwrap();
    let quote = |word: &str| format!("'{}'", word.replace('\'', r"'\''"));
    let mut program = format!(
        "source {}\nsource {}\n{}",
        quote(&git_completion_script().to_string_lossy()),
        quote(&script.path().to_string_lossy()),
        r#"
complete_line() {
    COMP_WORDS=("$@")
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    COMP_LINE="$*"
    COMP_POINT=${#COMP_LINE}
    COMPREPLY=()
    if [[ $1 == git ]]; then
        __git_func_wrap __git_main
    else
        # What bash runs for `git-cutile-perf <TAB>`: the function registered for the binary.
        local spec=($(complete -p git-cutile-perf))
        local i func
        for ((i = 0; i < ${#spec[@]}; i++)); do
            [[ ${spec[i]} == -F ]] && func=${spec[i + 1]}
        done
        "$func" "$1" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
    fi
    printf '%s\n' "== ${COMPREPLY[*]}"
}
"#
    );
    for line in lines {
        let words: Vec<String> = line.iter().map(|w| quote(w)).collect();
        program.push_str(&format!("complete_line {}\n", words.join(" ")));
    }
    let output = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &program])
        .env_remove("BASH_ENV")
        .current_dir(std::env::temp_dir())
        .output()
        .expect("run bash");
    assert!(
        output.status.success(),
        "bash failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let replies: Vec<Vec<String>> = stdout(&output)
        .lines()
        .filter_map(|l| l.strip_prefix("=="))
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect();
    assert_eq!(replies.len(), lines.len(), "{}", stdout(&output));
    replies
}

fn assert_offers(reply: &[String], wanted: &[&str], line: &[&str]) {
    for word in wanted {
        assert!(
            reply.iter().any(|r| r == word),
            "`{}<TAB>` offers {reply:?}, not {word}",
            line.join(" ")
        );
    }
}

#[test]
fn bash_completes_through_git_and_standalone() {
    let lines: &[&[&str]] = &[
        &["git", "cutile-perf", ""],
        &["git", "cutile-perf", "step", "--"],
        &["git", "cutile-perf", "st"],
        &["git", "-C", "/tmp", "cutile-perf", "step", "--b"],
        &["git", "cutile-perf", "step", "--cause", ""],
        &["git", "cutile-perf", "start", "--stat", ""],
        &["git-cutile-perf", ""],
        &["git-cutile-perf", "table", "--"],
    ];
    let replies = complete(lines);
    let verbs = ["start", "step", "table", "status", "demo"];
    assert_offers(&replies[0], &verbs, lines[0]);
    assert_offers(&replies[1], &["--budget", "--continue", "--json"], lines[1]);
    let mut st = replies[2].clone();
    st.sort();
    assert_eq!(st, ["start", "status", "step"], "{:?}", lines[2]);
    assert_eq!(replies[3], ["--budget"], "{:?}", lines[3]);
    assert_offers(&replies[4], &["memory", "compute", "unknown"], lines[4]);
    assert_offers(&replies[5], &["median"], lines[5]);
    assert_offers(&replies[6], &verbs, lines[6]);
    assert_offers(&replies[7], &["--write", "--json"], lines[7]);
}

/// zsh registers the completion function for the command; fish offers the verb's flags.
#[test]
#[ignore = "needs zsh and fish, which .ci/run installs (apt-get install zsh fish)"]
fn zsh_and_fish_scripts_load() {
    let dir = tempfile::tempdir().unwrap();
    run_ok(tool(&["completions", "--dir"]).arg(dir.path()));
    let zsh = format!(
        "fpath=({} $fpath); autoload -U compinit; compinit -u -D; \
         (( $+functions[_git-cutile-perf] )) && print -r -- \"registered $_comps[git-cutile-perf]\"",
        dir.path().display()
    );
    let fish = format!(
        "source {}/git-cutile-perf.fish; and complete -C 'git-cutile-perf step --'",
        dir.path().display()
    );
    for (shell, program, expect) in [
        ("zsh", zsh, "registered _git-cutile-perf\n"),
        ("fish", fish, "--budget"),
    ] {
        let output = Command::new(shell)
            .args(["-c", &program])
            .env("HOME", dir.path())
            .output()
            .unwrap_or_else(|e| panic!("{shell} does not run ({e}): apt-get install {shell}"));
        assert!(
            output.status.success(),
            "{shell}: {}{}",
            stdout(&output),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(
            stdout(&output).contains(expect),
            "{shell}: {}",
            stdout(&output)
        );
    }
}

/// A report's list of files as (kind, path).
fn entries(list: &serde_json::Value) -> Vec<(String, PathBuf)> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["kind"].as_str().unwrap().to_string(),
                PathBuf::from(f["path"].as_str().unwrap()),
            )
        })
        .collect()
}

#[test]
fn install_and_uninstall_extras_in_the_user_directories() {
    let home = tempfile::tempdir().unwrap();
    let man1 = home.path().join(".local/share/man/man1");
    std::fs::create_dir_all(&man1).unwrap();
    // A page of a verb an older version had, and a page that is not ours.
    std::fs::write(man1.join("git-cutile-perf-old.1"), "old").unwrap();
    std::fs::write(man1.join("git.1"), "not ours").unwrap();

    let out = run_ok(tool(&["install-extras", "--json"]).env("HOME", home.path()));
    let report = json(&out);
    let written = entries(&report["files"]);
    let expected = [
        ("man", man1.join("git-cutile-perf.1")),
        ("man", man1.join("git-cutile-perf-step.1")),
        (
            "bash",
            home.path()
                .join(".local/share/bash-completion/completions/git-cutile-perf"),
        ),
        (
            "zsh",
            home.path()
                .join(".local/share/zsh/site-functions/_git-cutile-perf"),
        ),
        (
            "fish",
            home.path()
                .join(".config/fish/completions/git-cutile-perf.fish"),
        ),
    ];
    for (kind, path) in &expected {
        assert!(
            written.iter().any(|(k, p)| k == kind && p == path),
            "{kind} {} not in {written:?}",
            path.display()
        );
        assert!(path.is_file(), "{}", path.display());
    }
    assert_eq!(
        std::fs::read_to_string(&expected[2].1).unwrap(),
        stdout(&run_ok(&mut tool(&["completions", "bash"])))
    );
    assert_eq!(
        report["removed"][0]["path"].as_str(),
        Some(man1.join("git-cutile-perf-old.1").to_str().unwrap())
    );
    assert!(report["notes"].is_array());
    assert!(man1.join("git.1").exists());

    // Plain text: every file written, on stdout.
    let text = stdout(&run_ok(tool(&["install-extras"]).env("HOME", home.path())));
    for (_, path) in &expected {
        assert!(text.contains(&path.display().to_string()), "{text}");
    }

    // the demo's environment: kept when asked, else removed with the cache directory it leaves empty
    let cache = home.path().join(".cache/git-cutile-perf");
    std::fs::create_dir_all(cache.join("venv/bin")).unwrap();
    std::fs::write(cache.join("venv/bin/python3"), "").unwrap();
    let kept = stdout(&run_ok(
        tool(&["uninstall-extras", "--keep-demo-env"]).env("HOME", home.path()),
    ));
    assert!(
        kept.contains(&format!(
            "kept the demo's Python environment in {}",
            cache.join("venv").display()
        )),
        "{kept}"
    );
    assert!(cache.join("venv/bin/python3").exists());
    for (_, path) in &written {
        assert!(!path.exists(), "{} left behind", path.display());
    }
    run_ok(tool(&["install-extras"]).env("HOME", home.path()));
    // and the report a demo without --dir kept there
    let demo_report = cache.join("demo/perf_results.html");
    std::fs::create_dir_all(demo_report.parent().unwrap()).unwrap();
    std::fs::write(&demo_report, "<!DOCTYPE html>").unwrap();

    let out = run_ok(tool(&["uninstall-extras", "--json"]).env("HOME", home.path()));
    let removed = entries(&json(&out)["removed"]);
    for entry in &written {
        assert!(removed.contains(entry), "{entry:?} not in {removed:?}");
    }
    assert!(
        removed.contains(&("demo-env".to_string(), cache.join("venv"))),
        "{removed:?}"
    );
    assert!(
        removed.contains(&("demo-report".to_string(), demo_report)),
        "{removed:?}"
    );
    // every folder install made goes once empty, up to the data and config directories
    for dir in [
        cache.join("demo"),
        cache.clone(),
        expected[4].1.parent().unwrap().to_path_buf(),
        home.path().join(".config/fish"),
        home.path().join(".local/share/zsh"),
        home.path().join(".local/share/bash-completion"),
    ] {
        assert!(
            removed.contains(&("dir".to_string(), dir.clone())),
            "{removed:?}"
        );
        assert!(!dir.exists(), "{} left behind", dir.display());
    }
    assert!(
        man1.join("git.1").exists(),
        "removed a page that is not ours"
    );
    assert!(
        !removed.iter().any(|(_, path)| path == &man1),
        "removed a directory that is not empty"
    );

    let again = json(&run_ok(
        tool(&["uninstall-extras", "--json"]).env("HOME", home.path()),
    ));
    assert_eq!(again["removed"], serde_json::json!([]));
}

#[test]
fn install_extras_under_a_prefix() {
    let prefix = tempfile::tempdir().unwrap();
    let out = run_ok(tool(&["install-extras", "--json", "--prefix"]).arg(prefix.path()));
    assert_eq!(
        json(&out)["prefix"].as_str(),
        Some(prefix.path().to_str().unwrap())
    );
    let share = prefix.path().join("share");
    for path in [
        "man/man1/git-cutile-perf.1",
        "bash-completion/completions/git-cutile-perf",
        "zsh/site-functions/_git-cutile-perf",
        "fish/vendor_completions.d/git-cutile-perf.fish",
    ] {
        assert!(share.join(path).is_file(), "{path}");
    }
    run_ok(tool(&["uninstall-extras", "--prefix"]).arg(prefix.path()));
    // the folders install made go with the files, up to the prefix, which stays
    assert!(!share.exists(), "{} left behind", share.display());
    assert!(prefix.path().is_dir());
}

/// With man-db installed, `git cutile-perf --help` opens our page (git turns it into
/// `git help cutile-perf`, which runs `man git-cutile-perf`).
#[test]
#[ignore = "needs man-db, which .ci/run installs (apt-get install man-db)"]
fn git_help_opens_the_installed_page() {
    assert_man_runs();
    let root = tempfile::tempdir().unwrap();
    let bin = root.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(EXE, bin.join("git-cutile-perf")).unwrap();
    run_ok(tool(&["install-extras", "--prefix"]).arg(root.path()));
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = Command::new("git")
        .args(["cutile-perf", "--help"])
        .env("PATH", path)
        .env("MANPATH", root.path().join("share/man"))
        .env("MANPAGER", "cat")
        .env("PAGER", "cat")
        .env("GIT_PAGER", "cat")
        .env("MANWIDTH", "100")
        .env_remove("MANOPT")
        .current_dir(root.path())
        .output()
        .unwrap();
    assert_shows_the_page(&output);
}

/// Fails the test where no man runs.
#[track_caller]
fn assert_man_runs() {
    let runs = Command::new("man").arg("--version").output();
    assert!(
        runs.is_ok_and(|out| out.status.success()),
        "man does not run here: apt-get install man-db"
    );
}

/// The tool's man page, as `git cutile-perf --help` printed it.
fn assert_shows_the_page(output: &std::process::Output) {
    let text = stdout(output);
    assert!(
        output.status.success() && text.contains("git-cutile-perf-step(1)"),
        "{text}{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// As after `cargo install`: the binary in a fresh HOME's `~/.cargo/bin`, only that and the system
/// directories on PATH, no MANPATH. `install-extras` puts the pages in `~/.cargo/share/man`, where
/// man-db looks beside `~/.cargo/bin`, so `git cutile-perf --help` opens the page with no setup.
#[test]
#[ignore = "needs man-db, which .ci/run installs (apt-get install man-db)"]
fn help_finds_the_page_beside_a_cargo_installed_binary() {
    assert_man_runs();
    let home = tempfile::tempdir().unwrap();
    let bin = home.path().join(".cargo/bin");
    std::fs::create_dir_all(&bin).unwrap();
    // a copy, not a link: the binary finds its own directory, as an installed one does
    std::fs::copy(EXE, bin.join("git-cutile-perf")).unwrap();
    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", bin.display());
    let fresh = |program: &str| {
        let mut cmd = Command::new(program);
        cmd.env_clear()
            .env("HOME", home.path())
            .env("PATH", &path)
            .current_dir(home.path());
        cmd
    };
    let out = run_ok(fresh("git-cutile-perf").args(["install-extras", "--json"]));
    let report = json(&out);
    assert!(
        report["files"][0]["path"]
            .as_str()
            .unwrap()
            .ends_with(".cargo/share/man/man1/git-cutile-perf.1"),
        "{report}"
    );
    assert!(
        !report["notes"].to_string().contains("MANPATH"),
        "no MANPATH note: {report}"
    );
    let output = fresh("git")
        .args(["cutile-perf", "--help"])
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "100")
        .output()
        .unwrap();
    assert_shows_the_page(&output);
}

/// Off a terminal nothing is coloured, errors included; NO_COLOR is honoured.
#[test]
fn plain_text_off_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    for no_color in [false, true] {
        let mut cmd = tool(&["status"]);
        cmd.current_dir(dir.path())
            .env("GIT_CEILING_DIRECTORIES", dir.path());
        if no_color {
            cmd.env("NO_COLOR", "1");
        }
        let output = cmd.output().unwrap();
        assert!(!output.status.success());
        let all = [&output.stdout[..], &output.stderr[..]].concat();
        assert!(!all.contains(&0x1b), "{}", String::from_utf8_lossy(&all));
        assert!(String::from_utf8_lossy(&output.stderr).starts_with("error: "));
    }
    let output = run_ok(tool(&["install-extras", "--prefix"]).arg(dir.path()));
    assert!(!output.stdout.contains(&0x1b));
    let help = run_ok(&mut tool(&["step", "--help"]));
    assert!(!help.stdout.contains(&0x1b));
}

/// A reader that stops early (`| head`) ends the program quietly, as it ends any Unix filter (success or
/// SIGPIPE, like git itself), and never with a panic.
#[test]
fn closed_stdout_is_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    for args in [&["install-extras", "--json"][..], &["install-extras"][..]] {
        let mut child = tool(args)
            .args(["--prefix".as_ref(), dir.path().as_os_str()])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        let sigpipe =
            std::os::unix::process::ExitStatusExt::signal(&output.status) == Some(libc::SIGPIPE);
        assert!(output.status.success() || sigpipe, "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

/// The docs' lists read against the command line's definition and `Cargo.toml`, so that none can
/// drift: the README's verbs with clap's words for each, the verbs that take `--json`
/// (`docs/agents.md`) and the crates (`docs/design.md`).
mod readme_lists {
    use super::repo_root;
    use clap::CommandFactory;
    use std::collections::BTreeSet;

    fn doc(path: &str) -> String {
        std::fs::read_to_string(repo_root().join(path)).unwrap()
    }

    /// Every verb (`hook status` for a nested one) whose arguments include `--json`; a hidden one
    /// (`campaign work`, what a Slurm array task runs) is for the tool itself, not its users.
    fn json_verbs(command: &clap::Command, prefix: &str, into: &mut BTreeSet<String>) {
        for sub in command.get_subcommands().filter(|sub| !sub.is_hide_set()) {
            let name = format!("{prefix}{}", sub.get_name());
            if sub
                .get_arguments()
                .any(|arg| arg.get_long() == Some("json"))
            {
                into.insert(name.clone());
            }
            json_verbs(sub, &format!("{name} "), into);
        }
    }

    #[test]
    fn the_json_verb_list_is_clap_s() {
        let mut defined = BTreeSet::new();
        json_verbs(
            &git_cutile_perf::verbs::cli::Cli::command(),
            "",
            &mut defined,
        );
        let text = doc("docs/agents.md");
        let line = text
            .lines()
            .find(|line| line.starts_with("Verbs that take `--json`:"))
            .expect("docs/agents.md's --json section lists its verbs");
        let listed: BTreeSet<String> = line
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|word| !word.starts_with("--"))
            .map(str::to_string)
            .collect();
        assert_eq!(
            listed, defined,
            "the documented --json verbs against clap's"
        );
    }

    #[test]
    fn the_crate_list_is_cargo_toml_s() {
        let manifest = std::fs::read_to_string(repo_root().join("Cargo.toml")).unwrap();
        let dependencies = manifest
            .split("[dependencies]")
            .nth(1)
            .unwrap()
            .split("\n[")
            .next()
            .unwrap();
        let crates: Vec<&str> = dependencies
            .lines()
            .filter_map(|line| line.split_once('=').map(|(name, _)| name.trim()))
            .filter(|name| !name.is_empty() && !name.starts_with('#'))
            .collect();
        let text = doc("docs/design.md");
        let start = text
            .find("- Crates (")
            .expect("docs/design.md lists its crates");
        let paragraph =
            &text[start..start + text[start..].find("\n\n").unwrap_or(text.len() - start)];
        let words: BTreeSet<&str> = paragraph
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
            .collect();
        let missing: Vec<&&str> = crates
            .iter()
            .filter(|name| !words.contains(**name))
            .collect();
        assert!(
            missing.is_empty(),
            "crates missing from docs/design.md's list: {missing:?}"
        );
        assert!(crates.len() > 20, "read the dependencies: {crates:?}");
    }

    /// The README's verb table: one row per verb, `| [`verb`](man/git-cutile-perf-verb.1) | about |`,
    /// its words exactly clap's `about` (what `--help` and the man pages say), and no verb missing.
    #[test]
    fn the_readme_verbs_say_what_help_says() {
        let text = doc("README.md");
        let rows: Vec<(String, String, String)> = text
            .lines()
            .filter_map(|line| line.strip_prefix("| [`"))
            .filter_map(|row| {
                let (verb, rest) = row.split_once("`](")?;
                let (page, about) = rest.split_once(") | ")?;
                let about = about.strip_suffix(" |")?;
                Some((verb.to_string(), page.to_string(), about.to_string()))
            })
            .collect();
        let cli = git_cutile_perf::verbs::cli::Cli::command();
        let defined: Vec<(String, String, String)> = cli
            .get_subcommands()
            .filter(|sub| sub.get_name() != "help")
            .map(|sub| {
                let verb = sub.get_name().to_string();
                let page = format!("man/git-cutile-perf-{verb}.1");
                let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
                (verb, page, about)
            })
            .collect();
        assert_eq!(rows, defined, "the README's verb table against clap's");
        for (_, page, _) in &rows {
            assert!(repo_root().join(page).is_file(), "{page} is not a man page");
        }
    }
}
