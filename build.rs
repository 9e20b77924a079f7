//! Records the git commit the binary is built from, for `--version`; and tells the tests which git
//! they will run with, so that a test of a newer git's feature is skipped with its reason, not failed.
//!
//! In order: `CUTILE_PERF_COMMIT` from the environment (for packagers); the commit of the git
//! repository that tracks this Cargo.toml (a checkout, a linked worktree, `cargo install --path` or
//! `--git`); the sha1 in `.cargo_vcs_info.json` (a package from crates.io); else "unknown commit" (a
//! tarball). A repository that merely encloses the sources (a tarball unpacked in a dotfiles repo) is
//! not ours: its commit would be a lie.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=CUTILE_PERF_COMMIT");
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let commit = std::env::var("CUTILE_PERF_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(|| from_git(&manifest_dir))
        .or_else(|| from_vcs_info(&manifest_dir))
        .unwrap_or_else(|| "unknown commit".to_string());
    println!("cargo:rustc-env=CUTILE_PERF_COMMIT={commit}");
    tell_tests_the_git_version();
}

/// `git_without_reftable`: the git on PATH predates `init --ref-format=reftable` (git 2.45).
fn tell_tests_the_git_version() {
    println!("cargo:rerun-if-env-changed=PATH");
    println!("cargo::rustc-check-cfg=cfg(git_without_reftable)");
    let version = Command::new("git")
        .arg("--version")
        .output()
        .ok()
        .map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
        .unwrap_or_default();
    let mut numbers = version
        .trim()
        .trim_start_matches("git version ")
        .split('.')
        .map(|part| part.parse::<u32>().unwrap_or(0));
    let major_minor = (numbers.next().unwrap_or(0), numbers.next().unwrap_or(0));
    if major_minor < (2, 45) {
        println!("cargo:rustc-cfg=git_without_reftable");
    }
}

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .output()
        .ok()
        .filter(|out| out.status.success())?;
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn from_git(dir: &Path) -> Option<String> {
    git(dir, &["ls-files", "--error-unmatch", "Cargo.toml"])?;
    let commit = git(dir, &["rev-parse", "--short=12", "HEAD"])?;
    // Rebuild when HEAD moves: HEAD itself (per worktree; `.git` may be a file pointing elsewhere),
    // the branch it names, and packed-refs, where that branch may live instead.
    let git_path = |name: &str| {
        git(
            dir,
            &["rev-parse", "--path-format=absolute", "--git-path", name],
        )
    };
    let mut watched: Vec<PathBuf> = git_path("HEAD").into_iter().map(PathBuf::from).collect();
    if let Some(branch) = git(dir, &["symbolic-ref", "-q", "HEAD"]).and_then(|b| git_path(&b)) {
        // A packed branch has no file yet: watch its directory, where the next commit writes it.
        let branch = PathBuf::from(branch);
        match branch.exists() {
            true => watched.push(branch),
            false => watched.extend(branch.parent().map(Path::to_path_buf)),
        }
        watched.extend(git_path("packed-refs").map(PathBuf::from));
    }
    for path in watched.iter().filter(|p| p.exists()) {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    Some(commit)
}

/// `cargo package` writes `{"git": {"sha1": "<40 hex>", ...}, ...}`.
fn from_vcs_info(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join(".cargo_vcs_info.json")).ok()?;
    let after = &text[text.find("\"sha1\"")? + "\"sha1\"".len()..];
    let start = after.find('"')? + 1;
    let sha: String = after[start..]
        .chars()
        .take_while(|c| c.is_ascii_hexdigit())
        .collect();
    (sha.len() >= 12).then(|| sha[..12].to_string())
}
