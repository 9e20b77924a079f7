//! `man`, `completions`, `install-extras` and `uninstall-extras`: what makes `git cutile-perf` feel
//! like a native git command once the binary is on PATH. `git cutile-perf --help` never reaches the
//! binary (git opens the man page `git-cutile-perf(1)`), and git's bash completion calls
//! `_git_cutile_perf`, so both have to be installed where man and the shells look.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;

use crate::features::demo_python;
use crate::rules::hint::hinted;
use crate::system::ui::{Render, Ui};
use crate::verbs::cli::Shell;
use crate::verbs::generate::{self, Generated};

/// A file written or removed, as `--json` reports it.
#[derive(Debug, Serialize)]
pub struct FileEntry {
    /// `man`, `bash`, `zsh` or `fish`; for `uninstall-extras` also `demo-env` (the demo's Python
    /// environment) and `dir` (a directory left empty).
    pub kind: &'static str,
    pub path: PathBuf,
}

/// What `install-extras --json` prints.
#[derive(Debug, Serialize)]
pub struct InstallReport {
    pub prefix: Option<PathBuf>,
    pub files: Vec<FileEntry>,
    pub removed: Vec<FileEntry>,
    pub notes: Vec<String>,
}

/// What `uninstall-extras --json` prints.
#[derive(Debug, Serialize)]
pub struct UninstallReport {
    pub prefix: Option<PathBuf>,
    pub removed: Vec<FileEntry>,
    /// The demo's Python environment, kept as asked.
    #[serde(skip)]
    pub kept_env: Option<PathBuf>,
}

/// What `man` and `completions` did: one page or script to print as is, or the files written into
/// `--dir` (what `--json` prints).
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum GeneratedReport {
    Printed(String),
    Files {
        files: Vec<FileEntry>,
        removed: Vec<FileEntry>,
    },
}

/// Where `man` and `completions` write: everything into `dir`, or one page or script printed.
#[derive(Debug, Default)]
pub struct GenerateOptions<T> {
    /// The verb's page, or the shell's script, to print (or, with `dir`, the one shell to write).
    pub which: Option<T>,
    pub dir: Option<PathBuf>,
}

/// Where `install-extras` and `uninstall-extras` work.
#[derive(Debug, Default)]
pub struct ExtrasOptions {
    /// The layout under this folder instead of the user's directories.
    pub prefix: Option<PathBuf>,
    /// `uninstall-extras` keeps the demo's Python environment.
    pub keep_demo_env: bool,
}

fn shell_kind(shell: Shell) -> &'static str {
    match shell {
        Shell::Bash => "bash",
        Shell::Zsh => "zsh",
        Shell::Fish => "fish",
    }
}

pub fn man(options: &GenerateOptions<String>) -> Result<GeneratedReport> {
    let GenerateOptions { which: verb, dir } = options;
    let Some(dir) = dir else {
        let page = generate::man_page(verb.as_deref()).ok_or_else(|| {
            hinted(
                format!("no verb {:?}", verb.as_deref().unwrap_or_default()),
                "`git cutile-perf --help` lists the verbs",
            )
        })?;
        return Ok(GeneratedReport::Printed(page.contents));
    };
    let mut written = Vec::new();
    let removed = remove_stale_pages(dir, &generate::man_pages())?;
    for page in generate::man_pages() {
        written.push(FileEntry {
            kind: "man",
            path: write_file(dir, &page.name, &page)?,
        });
    }
    Ok(GeneratedReport::Files {
        files: written,
        removed,
    })
}

pub fn completions(options: &GenerateOptions<Shell>) -> Result<GeneratedReport> {
    let GenerateOptions { which: shell, dir } = options;
    let Some(dir) = dir else {
        let shell = shell.expect("clap requires a shell without --dir");
        return Ok(GeneratedReport::Printed(
            generate::completion(shell).contents,
        ));
    };
    let shells = match shell {
        Some(shell) => vec![*shell],
        None => generate::SHELLS.to_vec(),
    };
    let mut written = Vec::new();
    for shell in shells {
        let script = generate::completion(shell);
        written.push(FileEntry {
            kind: shell_kind(shell),
            path: write_file(dir, &script.name, &script)?,
        });
    }
    Ok(GeneratedReport::Files {
        files: written,
        removed: Vec::new(),
    })
}

impl Render for GeneratedReport {
    fn render(&self, ui: &mut Ui) -> Result<()> {
        match self {
            // exactly as generated
            GeneratedReport::Printed(text) => ui.out().write_all(text.as_bytes())?,
            GeneratedReport::Files { files, removed } => print_files(ui, files, removed)?,
        }
        Ok(())
    }
}

/// Where this user's extras go: under `prefix`, or the standard places for this environment.
fn user_layout(prefix: Option<&Path>) -> Result<Layout> {
    Layout::new(prefix, &|key| std::env::var_os(key), &binary_dir())
}

pub fn install(options: &ExtrasOptions) -> Result<InstallReport> {
    let prefix = &options.prefix;
    let layout = user_layout(prefix.as_deref())?;
    let pages = generate::man_pages();
    let removed = remove_stale_pages(&layout.man1, &pages)?;
    let mut written = Vec::new();
    for page in &pages {
        written.push(FileEntry {
            kind: "man",
            path: write_file(&layout.man1, &page.name, page)?,
        });
    }
    for shell in generate::SHELLS {
        let (dir, name) = layout.completion(shell);
        written.push(FileEntry {
            kind: shell_kind(shell),
            path: write_file(dir, name, &generate::completion(shell))?,
        });
    }
    Ok(InstallReport {
        prefix: prefix.clone(),
        files: written,
        removed,
        notes: layout.notes(),
    })
}

impl Render for InstallReport {
    fn render(&self, ui: &mut Ui) -> Result<()> {
        print_files(ui, &self.files, &self.removed)?;
        let note = ui.bold("note:").to_string();
        for text in &self.notes {
            writeln!(ui.out(), "{note} {text}")?;
        }
        Ok(())
    }
}

pub fn uninstall(options: &ExtrasOptions) -> Result<UninstallReport> {
    let ExtrasOptions {
        prefix,
        keep_demo_env,
    } = options;
    let layout = user_layout(prefix.as_deref())?;
    let mut removed = remove_stale_pages(&layout.man1, &[])?;
    for shell in generate::SHELLS {
        let (dir, name) = layout.completion(shell);
        let path = dir.join(name);
        if remove_if_present(&path)? {
            removed.push(FileEntry {
                kind: shell_kind(shell),
                path,
            });
        }
    }
    // the demo's environment is the user's, not a prefix's; it is remade when the demo runs again
    let demo_env = demo_python::environment_dir().filter(|_| prefix.is_none());
    let mut kept_env = None;
    if let Some(env) = demo_env.filter(|env| env.exists()) {
        if *keep_demo_env {
            kept_env = Some(env);
        } else {
            std::fs::remove_dir_all(&env)
                .with_context(|| format!("cannot remove {}", env.display()))?;
            removed.push(FileEntry {
                kind: "demo-env",
                path: env,
            });
        }
    }
    // the report the demo kept goes with it: the demo writes it again
    let demo_report = demo_python::kept_report();
    if prefix.is_none() && remove_if_present(&demo_report)? {
        removed.push(FileEntry {
            kind: "demo-report",
            path: demo_report.clone(),
        });
    }
    let mut emptied: Vec<PathBuf> = vec![layout.man1.clone(), layout.bash.clone()];
    emptied.extend([layout.zsh.clone(), layout.fish.clone()]);
    emptied.extend(demo_report.parent().map(Path::to_path_buf));
    emptied
        .extend(demo_python::environment_dir().and_then(|env| env.parent().map(Path::to_path_buf)));
    for dir in emptied {
        remove_empty_folders(&dir, &layout.roots, &mut removed);
    }
    Ok(UninstallReport {
        prefix: prefix.clone(),
        removed,
        kept_env,
    })
}

impl Render for UninstallReport {
    fn render(&self, ui: &mut Ui) -> Result<()> {
        if self.removed.is_empty() {
            writeln!(
                ui.out(),
                "nothing to remove: no man pages or completions of git-cutile-perf installed there"
            )?;
        }
        if let Some(env) = &self.kept_env {
            writeln!(
                ui.out(),
                "kept the demo's Python environment in {}",
                env.display()
            )?;
        }
        print_files(ui, &[], &self.removed)
    }
}

/// Where install-extras puts each kind of file.
#[derive(Debug, PartialEq, Eq)]
struct Layout {
    /// Whether a `--prefix` was given (the notes differ).
    prefix: bool,
    man1: PathBuf,
    bash: PathBuf,
    zsh: PathBuf,
    fish: PathBuf,
    /// The directories the others are made under, never removed: `--prefix`, or the user's data and
    /// config directories, the bash completion directory and the binary's root.
    roots: Vec<PathBuf>,
}

impl Layout {
    /// Under `--prefix P`: the system layout rooted at P. Without: the per-user directories that
    /// bash-completion, zsh and fish read (XDG_DATA_HOME, XDG_CONFIG_HOME, BASH_COMPLETION_USER_DIR),
    /// and for man pages `share/man` beside the binary's `bin` directory (`~/.cargo/share/man` for a
    /// `cargo install`): man-db and macOS's man search `../share/man` next to every PATH entry, so
    /// pages there are found with no MANPATH edits. A binary outside a `bin` directory (a build tree)
    /// puts them under XDG_DATA_HOME.
    fn new(
        prefix: Option<&Path>,
        env: &dyn Fn(&str) -> Option<std::ffi::OsString>,
        binary_dir: &Option<PathBuf>,
    ) -> Result<Self> {
        if let Some(prefix) = prefix {
            let share = prefix.join("share");
            return Ok(Layout {
                prefix: true,
                man1: share.join("man/man1"),
                bash: share.join("bash-completion/completions"),
                zsh: share.join("zsh/site-functions"),
                fish: share.join("fish/vendor_completions.d"),
                roots: vec![prefix.to_path_buf()],
            });
        }
        let absolute = |key: &str| env(key).map(PathBuf::from).filter(|p| p.is_absolute());
        let home = || -> Result<PathBuf> {
            match absolute("HOME") {
                Some(home) => Ok(home),
                None => Err(hinted(
                    "HOME is not set to an absolute path",
                    "pass --prefix DIR",
                )),
            }
        };
        let data = match absolute("XDG_DATA_HOME") {
            Some(dir) => dir,
            None => home()?.join(".local/share"),
        };
        let config = match absolute("XDG_CONFIG_HOME") {
            Some(dir) => dir,
            None => home()?.join(".config"),
        };
        let bash_root = absolute("BASH_COMPLETION_USER_DIR");
        let bash = bash_root
            .clone()
            .unwrap_or_else(|| data.join("bash-completion"));
        let binary_root = binary_dir
            .as_deref()
            .filter(|dir| dir.file_name().is_some_and(|name| name == "bin"))
            .and_then(Path::parent);
        let beside_binary = binary_root.map(|root| root.join("share/man/man1"));
        let mut roots = vec![data.clone(), config.clone()];
        roots.extend(
            bash_root
                .into_iter()
                .chain(binary_root.map(Path::to_path_buf)),
        );
        Ok(Layout {
            prefix: false,
            man1: beside_binary.unwrap_or_else(|| data.join("man/man1")),
            bash: bash.join("completions"),
            zsh: data.join("zsh/site-functions"),
            fish: config.join("fish/completions"),
            roots,
        })
    }

    /// The directory and file name of a shell's script. bash-completion loads
    /// `completions/<command>` on demand, and git asks it for `git-cutile-perf`.
    fn completion(&self, shell: Shell) -> (&Path, &str) {
        match shell {
            Shell::Bash => (&self.bash, generate::BIN),
            Shell::Zsh => (&self.zsh, generate::completion_file_name(shell)),
            Shell::Fish => (&self.fish, generate::completion_file_name(shell)),
        }
    }

    /// What the user may still have to do for each kind of file to be found.
    fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        let man_root = self.man1.parent().expect("man1 has a parent");
        if !manpath_has(man_root) {
            notes.push(format!(
                "man does not search {dir}: add `export MANPATH=\"{dir}:$MANPATH\"` to your shell's \
                 startup file (the colon keeps the system pages)",
                dir = man_root.display()
            ));
        }
        let bash_script = self.bash.join(generate::BIN);
        if self.prefix || !has_bash_completion() {
            notes.push(format!(
                "bash: bash-completion loads {script} on demand for `git cutile-perf <TAB>` when it \
                 looks in {dir}; otherwise add `source {script}` to ~/.bashrc, after git's completion",
                script = bash_script.display(),
                dir = self.bash.display()
            ));
        }
        if which::which("zsh").is_ok() {
            notes.push(format!(
                "zsh: put `fpath=({} $fpath)` in ~/.zshrc before `compinit`, unless it is on fpath already",
                self.zsh.display()
            ));
        }
        if self.prefix {
            notes.push(format!(
                "fish: reads {} when {} is in XDG_DATA_DIRS",
                self.fish.display(),
                self.fish
                    .parent()
                    .and_then(Path::parent)
                    .expect("fish/vendor_completions.d")
                    .display()
            ));
        }
        notes
    }
}

/// The directory of the running binary, symbolic links resolved.
fn binary_dir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let exe = std::fs::canonicalize(&exe).unwrap_or(exe);
    exe.parent().map(Path::to_path_buf)
}

/// Whether bash-completion (which loads completions/git-cutile-perf from the user's directory on
/// demand) is installed where distributions and Homebrew put it.
fn has_bash_completion() -> bool {
    [
        "/usr/share/bash-completion/bash_completion",
        "/usr/local/share/bash-completion/bash_completion",
        "/opt/homebrew/share/bash-completion/bash_completion",
        "/etc/bash_completion",
    ]
    .iter()
    .any(|path| Path::new(path).is_file())
}

/// Whether `manpath` (man-db) lists `dir`; true when there is no `manpath` to ask, since then
/// nothing better can be said.
fn manpath_has(dir: &Path) -> bool {
    let manpath = crate::system::process::command("manpath", &["-q"]);
    let Ok(output) = crate::system::process::capture(manpath, std::time::Duration::from_secs(10))
    else {
        return true;
    };
    let listed = String::from_utf8_lossy(&output.stdout);
    let wanted = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    listed.trim().split(':').any(|entry| {
        let entry = Path::new(entry);
        entry == dir || std::fs::canonicalize(entry).is_ok_and(|e| e == wanted)
    })
}

fn write_file(dir: &Path, name: &str, file: &Generated) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let path = dir.join(name);
    std::fs::write(&path, &file.contents)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

/// Removes our man pages in `dir` that are not in `keep` (verbs that no longer exist).
fn remove_stale_pages(dir: &Path, keep: &[Generated]) -> Result<Vec<FileEntry>> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(Vec::new());
    };
    let mut stale: Vec<PathBuf> = entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let ours = generate::is_our_man_page(&name) && !keep.iter().any(|k| k.name == name);
            ours.then(|| entry.path())
        })
        .collect();
    stale.sort();
    let mut removed = Vec::new();
    for path in stale {
        if remove_if_present(&path)? {
            removed.push(FileEntry { kind: "man", path });
        }
    }
    Ok(removed)
}

/// `dir` and the folders above it that install made, each while it is empty: anything else in one is
/// someone else's. The climb stops at a root (`--prefix`, the user's data directory, ...); a folder
/// under none (the cache's) goes alone.
fn remove_empty_folders(dir: &Path, roots: &[PathBuf], removed: &mut Vec<FileEntry>) {
    let mut folder = Some(dir);
    while let Some(dir) = folder.filter(|dir| !roots.iter().any(|root| root == dir)) {
        if std::fs::remove_dir(dir).is_err() {
            return;
        }
        removed.push(FileEntry {
            kind: "dir",
            path: dir.to_path_buf(),
        });
        folder = dir
            .parent()
            .filter(|up| roots.iter().any(|root| up.starts_with(root)));
    }
}

fn remove_if_present(path: &Path) -> Result<bool> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(err) => Err(err).with_context(|| format!("cannot remove {}", path.display())),
    }
}

fn print_files(ui: &mut Ui, written: &[FileEntry], removed: &[FileEntry]) -> Result<()> {
    let out = ui.out();
    for file in written {
        writeln!(out, "wrote   {}", file.path.display())?;
    }
    for file in removed {
        writeln!(out, "removed {}", file.path.display())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<std::ffi::OsString> + 'a {
        move |key| {
            vars.iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| std::ffi::OsString::from(v))
        }
    }

    #[test]
    fn user_layout_follows_xdg_and_home() {
        let layout = Layout::new(None, &env(&[("HOME", "/home/u")]), &None).unwrap();
        assert_eq!(layout.man1, Path::new("/home/u/.local/share/man/man1"));
        assert_eq!(
            layout.completion(Shell::Bash),
            (
                Path::new("/home/u/.local/share/bash-completion/completions"),
                "git-cutile-perf"
            )
        );
        assert_eq!(
            layout.zsh,
            Path::new("/home/u/.local/share/zsh/site-functions")
        );
        assert_eq!(layout.fish, Path::new("/home/u/.config/fish/completions"));

        let layout = Layout::new(
            None,
            &env(&[
                ("HOME", "/home/u"),
                ("XDG_DATA_HOME", "/d"),
                ("XDG_CONFIG_HOME", "/c"),
                ("BASH_COMPLETION_USER_DIR", "/b"),
            ]),
            &None,
        )
        .unwrap();
        assert_eq!(layout.man1, Path::new("/d/man/man1"));
        assert_eq!(layout.bash, Path::new("/b/completions"));
        assert_eq!(layout.fish, Path::new("/c/fish/completions"));

        // A relative XDG value is invalid by the spec and ignored.
        let layout = Layout::new(
            None,
            &env(&[("HOME", "/home/u"), ("XDG_DATA_HOME", "rel")]),
            &None,
        )
        .unwrap();
        assert_eq!(layout.man1, Path::new("/home/u/.local/share/man/man1"));
        assert!(Layout::new(None, &env(&[]), &None).is_err());
    }

    #[test]
    fn man_pages_go_beside_a_bin_directory() {
        let home = env(&[("HOME", "/home/u")]);
        let cargo = Layout::new(None, &home, &Some("/home/u/.cargo/bin".into())).unwrap();
        assert_eq!(cargo.man1, Path::new("/home/u/.cargo/share/man/man1"));
        assert_eq!(
            cargo.zsh,
            Path::new("/home/u/.local/share/zsh/site-functions")
        );
        let build = Layout::new(None, &home, &Some("/src/target/debug".into())).unwrap();
        assert_eq!(build.man1, Path::new("/home/u/.local/share/man/man1"));
    }

    #[test]
    fn prefix_layout() {
        let layout = Layout::new(
            Some(Path::new("/opt/x")),
            &env(&[]),
            &Some("/u/.cargo/bin".into()),
        )
        .unwrap();
        assert_eq!(layout.man1, Path::new("/opt/x/share/man/man1"));
        assert_eq!(
            layout.bash,
            Path::new("/opt/x/share/bash-completion/completions")
        );
        assert_eq!(layout.zsh, Path::new("/opt/x/share/zsh/site-functions"));
        assert_eq!(
            layout.fish,
            Path::new("/opt/x/share/fish/vendor_completions.d")
        );
    }
}
