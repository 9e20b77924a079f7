//! A pytest command prepared but not started: its words, its environment, and the fresh paths of its
//! log and JUnit file.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::system::runner::{PytestCall, PytestRun};

use super::{Bytecode, Pytest, RECORD_FORMAT, python_words, sources_first};

/// The environment that makes cuda-tile write every kernel it compiles into `dumps`, as Tile IR text and
/// bytecode: at the first launch of each signature in a process, before it looks in its disk cache, so
/// the cache stays on and a run that compiles anyway dumps at the cost of a disassembly per signature.
pub fn dump_env(dumps: &Path) -> [(&'static str, String); 2] {
    let dir = dumps.display().to_string();
    [
        ("CUDA_TILE_DUMP_TILEIR", dir.clone()),
        ("CUDA_TILE_DUMP_BYTECODE", dir),
    ]
}

/// A pytest command ready to start.
pub struct Prepared {
    run: PytestRun,
    program: String,
    args: Vec<String>,
    dir: PathBuf,
    env: Vec<(&'static str, std::ffi::OsString)>,
    pub junit: PathBuf,
    pub log: PathBuf,
    /// The `-k` expression, narrowed by the session's filter.
    pub selection: String,
}

impl Prepared {
    /// Runs `body` with the command as the runner gets it.
    pub fn with_call<T>(&self, body: impl FnOnce(&PytestCall) -> T) -> T {
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        body(&PytestCall {
            run: self.run,
            program: &self.program,
            args: &args,
            dir: &self.dir,
            env: &self.env,
            junit: &self.junit,
        })
    }
}

impl Pytest<'_> {
    /// A selection narrowed by the session's filter.
    pub(super) fn narrowed(&self, selection: &str) -> String {
        match self.filter {
            Some(filter) => format!("{selection} and ({filter})"),
            None => selection.to_string(),
        }
    }

    /// The pytest command of one selection, not started; `name` names its log and JUnit file; `plugins` is
    /// a directory of the tool's own pytest plugins to put on `PYTHONPATH`.
    pub fn prepare(
        &self,
        kind: PytestRun,
        name: &str,
        selection: &str,
        extra: &[&str],
        plugins: Option<&Path>,
    ) -> Result<Prepared> {
        let selection = self.narrowed(selection);
        std::fs::create_dir_all(&self.sandbox)
            .with_context(|| format!("cannot create {}", self.sandbox.display()))?;
        let junit = self.sandbox.join(RECORD_FORMAT.file_name(name));
        let log = self.sandbox.join(format!("{name}.log"));
        // a file left by an earlier run must never be read (or followed) as this run's
        remove_stale(&junit)?;
        remove_stale(&log)?;
        let junit_arg = format!("--junitxml={}", junit.display());
        let words = python_words(self.python)?;
        let (program, python_args) = words.split_first().context("--python is empty")?;
        let mut args: Vec<&str> = python_args.iter().map(String::as_str).collect();
        args.extend([
            "-m",
            "pytest",
            self.test,
            "-k",
            &selection,
            "-v",
            "-p",
            "no:cacheprovider",
        ]);
        args.extend([
            "-o",
            "junit_family=xunit1",
            "-o",
            "junit_logging=system-out",
            &junit_arg,
        ]);
        args.extend_from_slice(extra);
        let bytecode = Bytecode::for_tree(self.root)?;
        let mut env: Vec<(&'static str, std::ffi::OsString)> =
            vec![("PYTHONUNBUFFERED", "1".into())];
        env.extend(bytecode.env().map(|(name, value)| (name, value.into())));
        if let Some(dumps) = &self.dumps {
            std::fs::create_dir_all(dumps)
                .with_context(|| format!("cannot create {}", dumps.display()))?;
            env.extend(dump_env(dumps).map(|(name, value)| (name, value.into())));
        }
        if let Some(gpu) = &self.gpu {
            env.push(("CUDA_VISIBLE_DEVICES", gpu.into()));
        }
        let mut python_path: Vec<PathBuf> = plugins.into_iter().map(Path::to_path_buf).collect();
        python_path.extend(
            sources_first(self.root)?
                .iter()
                .flat_map(std::env::split_paths),
        );
        if !python_path.is_empty() {
            env.push(("PYTHONPATH", std::env::join_paths(python_path)?));
        }
        Ok(Prepared {
            run: kind,
            program: program.clone(),
            args: args.iter().map(|arg| arg.to_string()).collect(),
            dir: self.root.to_path_buf(),
            env,
            junit,
            log,
            selection,
        })
    }

    /// Where the tool's own pytest plugins are written, made if need be.
    pub fn plugin_dir(&self) -> Result<PathBuf> {
        let plugins = self.sandbox.join("plugins");
        std::fs::create_dir_all(&plugins)
            .with_context(|| format!("cannot create {}", plugins.display()))?;
        Ok(plugins)
    }
}

/// Removes a file an earlier run left; none is fine.
fn remove_stale(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("cannot remove {}", path.display()))
        }
        _ => Ok(()),
    }
}
