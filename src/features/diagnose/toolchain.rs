//! The compiler's tools around a run of one kernel: the Tile IR assembler (`tileiras`) that turns a dumped
//! bytecode into a cubin, and `cuobjdump` on each cubin. Every child runs where the session's runner
//! runs its GPU commands (on the iteration's node); what the texts say is read by the pure `compile`
//! module.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::rules::compile::{self, CompileFacts, CompiledKernel};
use crate::system::process::{self, Ending};
use crate::system::runner::Runner;

/// One run of the assembler or disassembler on one kernel.
const TOOL_TIMEOUT: Duration = Duration::from_secs(60);

/// The Tile IR assembler and the GPU it assembles for.
#[derive(Debug, Clone, PartialEq)]
pub struct Assembler {
    pub program: PathBuf,
    /// `sm_90`.
    pub arch: String,
}

impl Assembler {
    /// The assembler cuda-tile uses (the session Python's `nvidia.cu13` wheel, else a toolkit's on PATH),
    /// for the GPU of a `name, 9.0, driver` line; `None` without either.
    pub fn find(
        runner: &dyn Runner,
        python: &str,
        root: &Path,
        gpu: Option<&str>,
    ) -> Option<Assembler> {
        let arch = gpu_arch(gpu)?;
        Some(Assembler {
            program: tileiras(runner, python, root)?,
            arch,
        })
    }

    /// Compiles `bytecode` to the cubin beside it (same name, `.cubin`); a failure leaves no cubin.
    fn assemble(&self, runner: &dyn Runner, bytecode: &Path, deadline: Instant) {
        let (input, output) = (
            bytecode.display().to_string(),
            bytecode.with_extension("cubin").display().to_string(),
        );
        // as cuda-tile runs it: a toolkit's CUDA_HOME would make the wheel's tileiras fail
        let dir = bytecode.parent().unwrap_or(Path::new("/"));
        let command = runner
            .command(
                &self.program.display().to_string(),
                &["--gpu-name", &self.arch, "-O3", &input, "-o", &output],
                dir,
            )
            .env_remove("CUDA_HOME")
            .env_remove("CUDA_PATH");
        let _ = process::capture(command, time_left(deadline));
    }
}

/// `sm_90` from a `name, 9.0, driver` GPU line.
pub fn gpu_arch(gpu: Option<&str>) -> Option<String> {
    let (major, minor) = crate::system::gpu::parse_capability(gpu?.split(',').nth(1)?).ok()?;
    Some(format!("sm_{major}{minor}"))
}

fn tileiras(runner: &dyn Runner, python: &str, root: &Path) -> Option<PathBuf> {
    let words = crate::system::pytest::python_words(python).ok()?;
    let (program, args) = words.split_first()?;
    let mut full: Vec<&str> = args.iter().map(String::as_str).collect();
    full.extend([
        "-c",
        "import os, nvidia.cu13 as m; print(os.path.join(m.__path__[0], 'bin', 'tileiras'))",
    ]);
    let wheel = process::capture(runner.command(program, &full, root), TOOL_TIMEOUT)
        .ok()
        .filter(|out| out.success())
        .map(|out| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
        .filter(|path| path.is_file());
    wheel.or_else(|| runner.find("tileiras", root))
}

/// Every file in `dir`, sorted.
fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.sort();
    files
}

fn has_extension(file: &Path, extension: &str) -> bool {
    file.extension().is_some_and(|e| e == extension)
}

/// Tile IR counts of every kernel dumped into `dumps`; with the assembler, each dumped bytecode
/// compiled to a cubin, and with cuobjdump, the registers and SASS of every cubin.
pub fn gather(
    runner: &dyn Runner,
    dumps: &Path,
    assembler: Option<&Assembler>,
    deadline: Instant,
) -> CompileFacts {
    if let Some(assembler) = assembler {
        for bytecode in files_in(dumps)
            .into_iter()
            .filter(|f| has_extension(f, "tileirbc"))
        {
            assembler.assemble(runner, &bytecode, deadline);
        }
    }
    let mut facts = CompileFacts::default();
    for file in files_in(dumps) {
        if has_extension(&file, "tileir") {
            if let Ok(text) = std::fs::read_to_string(&file) {
                // by the compiled kernel's name: the file's name has a random part
                let name = CompiledKernel::of(&text, "").entries.into_iter().next();
                let name = name.unwrap_or_else(|| {
                    file.file_name()
                        .map_or(String::new(), |n| n.to_string_lossy().into_owned())
                });
                facts.tile_ir.insert(name, compile::tile_ops(&text));
            }
        } else if has_extension(&file, "cubin") {
            let path = file.display().to_string();
            if let Some(text) =
                disassemble(runner, dumps, &["--dump-resource-usage", &path], deadline)
            {
                facts.resources.extend(compile::resources(&text));
            }
            if let Some(text) = disassemble(runner, dumps, &["-sass", &path], deadline) {
                facts.sass.extend(compile::sass_mix(&text));
            }
        }
    }
    facts
}

/// Copies into `into` the dumps in `dumps` of the compiled kernels named `entries`, each content once:
/// the Tile IR texts that define one, and the bytecodes that name one (cuda-tile's bytecode holds the
/// compiled name as a string). The number copied.
pub fn select(dumps: &Path, entries: &[String], into: &Path) -> std::io::Result<usize> {
    std::fs::create_dir_all(into)?;
    let mut seen = std::collections::HashSet::new();
    for file in files_in(dumps) {
        let Some(name) = file.file_name() else {
            continue;
        };
        let content = std::fs::read(&file)?;
        let wanted = if has_extension(&file, "tileir") {
            let text = String::from_utf8_lossy(&content);
            CompiledKernel::of(&text, "")
                .entries
                .iter()
                .any(|entry| entries.contains(entry))
        } else {
            has_extension(&file, "tileirbc")
                && entries.iter().any(|entry| {
                    content
                        .windows(entry.len())
                        .any(|window| window == entry.as_bytes())
                })
        };
        if wanted && seen.insert(content.clone()) {
            std::fs::write(into.join(name), content)?;
        }
    }
    Ok(seen.len())
}

/// Every kernel module dumped into `dumps` by a run from the tree at `root`, in a stable order.
pub fn compiled_kernels(dumps: &Path, root: &Path) -> Vec<CompiledKernel> {
    let root = root.display().to_string();
    let mut kernels: Vec<CompiledKernel> = files_in(dumps)
        .into_iter()
        .filter(|f| has_extension(f, "tileir"))
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .map(|text| CompiledKernel::of(&text, &root))
        .collect();
    kernels.sort();
    kernels
}

/// What is left before `deadline`, at most [`TOOL_TIMEOUT`].
fn time_left(deadline: Instant) -> Duration {
    deadline
        .saturating_duration_since(Instant::now())
        .min(TOOL_TIMEOUT)
}

fn disassemble(
    runner: &dyn Runner,
    dir: &Path,
    args: &[&str],
    deadline: Instant,
) -> Option<String> {
    let output =
        process::capture(runner.command("cuobjdump", args, dir), time_left(deadline)).ok()?;
    (output.ending == Ending::Exited(0))
        .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::runner::Local;

    #[test]
    fn the_gpu_line_names_the_architecture() {
        assert_eq!(
            gpu_arch(Some("NVIDIA H200, 9.0, 580.159.04")).as_deref(),
            Some("sm_90")
        );
        assert_eq!(gpu_arch(Some("no capability here")), None);
        assert_eq!(gpu_arch(None), None);
    }

    #[test]
    fn dumped_tile_ir_is_counted_and_other_files_are_not() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("k.tileir"),
            "%0, %t = load_view_tko weak %v[%c0] token = %t0\n%t1 = store_ptr_tko weak %p, %0\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("k.log"), "load_view_tko").unwrap();
        let facts = gather(&Local, dir.path(), None, Instant::now() + TOOL_TIMEOUT);
        assert_eq!(facts.tile_ir.len(), 1);
        // a text without an entry is known by its file's name
        let ops = &facts.tile_ir["k.tileir"];
        assert_eq!((ops.view_loads, ops.scatters), (1, 1));
        assert!(gather(&Local, &dir.path().join("none"), None, Instant::now()).is_empty());
    }
}
