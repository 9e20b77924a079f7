//! The one pytest case of a recorded config, as `diagnose` and the compile facts run it: from a tree
//! that holds the iteration's code (the work tree, or a temporary detached worktree of its commit),
//! with TileGym's autotuning off, that tree's `src/` first on `PYTHONPATH`, and cuda-tile dumping every
//! kernel it compiles into a scratch directory under `sandbox/`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// The pytest plugin that pauses the profiler while cuda.tile's `exhaustive_search` runs: TileGym
/// kernels that tune on their first call whatever `TILEGYM_DISABLE_AUTOTUNE` says (matmul) launch the
/// kernel once per trial under its own name, and those launches must not be what ncu profiles.
pub const PAUSE_TUNING: (&str, &str) =
    ("cutile_perf_pause_tuning", include_str!("pause_tuning.py"));
use crate::features::code_tree::CodeTree;
use crate::features::inspect::module;
use crate::record::session::Session;
use crate::system::git::Repo;
use crate::system::gpu::GpuState;
use crate::system::runner::Runner;
use crate::system::ui::Progress;

/// Where a profile or the compile facts are made: the session's runner, the GPU the verb checked there
/// (when it did), and where their progress goes (the verb's).
pub struct Place<'a> {
    pub runner: &'a dyn Runner,
    pub gpu: Option<&'a GpuState>,
    pub progress: &'a Progress,
}

/// Where an iteration's code is: the work tree, or a temporary detached worktree removed on drop.
pub enum Source<'a> {
    WorkTree,
    Worktree(CodeTree<'a>),
}

impl<'a> Source<'a> {
    /// The work tree when it holds `commit` exactly (checked out, no tracked change), else a worktree.
    pub fn of(repo: &'a Repo, commit: &str) -> Result<Source<'a>> {
        if repo.head()? == commit && repo.tracked_changes()?.is_empty() {
            return Ok(Source::WorkTree);
        }
        Ok(Source::Worktree(CodeTree::add(repo, commit)?))
    }

    pub fn path(&self, repo: &Repo) -> PathBuf {
        match self {
            Source::WorkTree => repo.root.clone(),
            Source::Worktree(tree) => tree.path.clone(),
        }
    }
}

/// The `@ct.kernel` names of the session kernel's file in `root`; an error when it defines none.
pub fn kernel_names(session: &Session, root: &Path) -> Result<Vec<String>> {
    let kernel_file = root.join(&session.kernel);
    let text = std::fs::read_to_string(&kernel_file)
        .with_context(|| format!("cannot read {}", kernel_file.display()))?;
    let facts = module::analyze(&text, "", None)
        .with_context(|| format!("cannot read the kernels of {}", session.kernel))?;
    if facts.kernels.is_empty() {
        return Err(crate::rules::hint::hinted(
            format!("{} defines no @ct.kernel to profile", session.kernel),
            "diagnose profiles the session kernel's own launches",
        ));
    }
    Ok(facts.kernels.into_iter().map(|k| k.name).collect())
}

/// One config's pytest case, ready to run from `root`.
pub struct Case {
    pub root: PathBuf,
    pub node_id: String,
    /// The session's Python and pytest's arguments for the one case.
    pub command: Vec<String>,
    /// The scratch directory, emptied: logs go here.
    pub dir: PathBuf,
    /// Where cuda-tile dumps what it compiles.
    pub dumps: PathBuf,
    env: Vec<(&'static str, String)>,
}

impl Case {
    /// The case of `config` run from `root`, its scratch directory `sandbox/<scratch>` emptied (files an
    /// earlier run left must never be read as this one's).
    pub fn prepare(
        repo: &Repo,
        session: &Session,
        root: PathBuf,
        config: &str,
        scratch: &str,
    ) -> Result<Case> {
        let node_id = super::node_id(&session.test, config);
        let mut command = crate::system::pytest::python_words(&session.python)?;
        command
            .extend(["-m", "pytest", &node_id, "-q", "-p", "no:cacheprovider"].map(str::to_string));
        let dir = crate::record::history::made_sandbox(repo)?.join(scratch);
        let _ = std::fs::remove_dir_all(&dir);
        let dumps = dir.join("tileir");
        std::fs::create_dir_all(&dumps)
            .with_context(|| format!("cannot create {}", dumps.display()))?;
        let python_path = crate::system::pytest::sources_first(&root)?
            .map(|path| path.to_string_lossy().into_owned())
            .unwrap_or_else(|| std::env::var("PYTHONPATH").unwrap_or_default());
        let bytecode = crate::system::pytest::Bytecode::for_tree(&root)?;
        let mut env = vec![
            ("TILEGYM_DISABLE_AUTOTUNE", "1".to_string()),
            ("PYTHONPATH", python_path),
        ];
        env.extend(bytecode.env());
        env.extend(crate::system::pytest::dump_env(&dumps));
        Ok(Case {
            root,
            node_id,
            command,
            dir,
            dumps,
            env,
        })
    }

    /// Loads the pytest plugin `(name, source)` (written into the scratch directory, which goes on
    /// `PYTHONPATH`) into the case.
    pub fn with_plugin(mut self, plugin: (&str, &str)) -> Result<Case> {
        let words = crate::system::pytest::write_plugin(&self.dir, plugin)?;
        let dir = self.dir.display().to_string();
        for (key, value) in &mut self.env {
            if *key == "PYTHONPATH" {
                *value = if value.is_empty() {
                    dir.clone()
                } else {
                    format!("{value}:{dir}")
                };
            }
        }
        self.command.extend(words);
        Ok(self)
    }

    /// The variables the case runs with.
    pub fn env(&self) -> Vec<(&str, &str)> {
        self.env.iter().map(|(k, v)| (*k, v.as_str())).collect()
    }

    /// The command run directly (not under a profiler) by `runner`, in `root`, with [`Case::env`].
    pub fn expression(&self, runner: &dyn Runner) -> Option<duct::Expression> {
        let (program, args) = self.command.split_first()?;
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut expression = runner.command(program, &args, &self.root);
        for (key, value) in self.env() {
            expression = expression.env(key, value);
        }
        Some(expression)
    }
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;

    /// The plugin around a stand-in tuner and a stand-in torch that record what happens, in a fresh
    /// Python: the search runs with the profiler stopped, and it is started again after, even when the
    /// search fails; loaded twice, it pauses once.
    #[test]
    fn the_plugin_pauses_the_profiler_around_an_autotune_search() {
        let dir = tempfile::tempdir().unwrap();
        let write = |rel: &str, text: &str| {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write("events.py", "seen = []\n");
        write("cuda/__init__.py", "");
        write("cuda/tile/__init__.py", "");
        write(
            "cuda/tile/tune/__init__.py",
            "import events\n\ndef exhaustive_search(fail):\n    events.seen.append('search')\n    \
             if fail:\n        raise ValueError('no valid config')\n    return 'best'\n",
        );
        write(
            "torch/__init__.py",
            "import events\n\nclass _Runtime:\n    def cudaProfilerStop(self):\n        \
             events.seen.append('stop')\n\n    def cudaProfilerStart(self):\n        \
             events.seen.append('start')\n\nclass cuda:\n    @staticmethod\n    def cudart():\n        \
             return _Runtime()\n",
        );
        write(&format!("{}.py", PAUSE_TUNING.0), PAUSE_TUNING.1);
        let script = format!(
            "import importlib, {plugin}\nimportlib.reload({plugin})\nfrom cuda.tile.tune import exhaustive_search\nimport events\n\
             assert exhaustive_search(False) == 'best'\ntry:\n    exhaustive_search(True)\nexcept ValueError:\n    \
             pass\nprint(','.join(events.seen))\n",
            plugin = PAUSE_TUNING.0
        );
        // stdout and stderr of a script that must succeed
        let python = |script: &str| {
            let out = Command::new("python3")
                .args(["-c", script])
                .current_dir(dir.path())
                .env("PYTHONPATH", dir.path())
                .output()
                .unwrap();
            let (stdout, stderr) = (
                String::from_utf8_lossy(&out.stdout).trim().to_string(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            );
            assert!(out.status.success(), "{stderr}");
            (stdout, stderr)
        };
        let (seen, stderr) = python(&script);
        assert_eq!(seen, "stop,search,start,stop,search,start");
        assert!(
            stderr.contains("autotune search: profiling paused"),
            "{stderr}"
        );

        // without cuda.tile's tuner (the fixture's stand-in has none) it loads and does nothing
        std::fs::remove_dir_all(dir.path().join("cuda/tile/tune")).unwrap();
        python(&format!("import {}", PAUSE_TUNING.0));
    }
}
