//! What GPU the session runs on and what state it is in, as `nvidia-smi` reports it; and whether
//! cuTile runs there (Ampere/Ada, Hopper, Blackwell: compute capability 8.0 or newer).
//!
//! Parsing is pure; the two queries go through whatever runs the commands (here, or on a Slurm node).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::rules::hint::Hinted;
use crate::system::process;

/// nvidia-smi answers in well under a second (through srun too); a wedged driver must not hang `start`.
const TIMEOUT: Duration = Duration::from_secs(15);

/// nvidia-smi's arguments for the first GPU's facts, without header or units.
pub const QUERY: [&str; 2] = [
    "--query-gpu=name,compute_cap,driver_version,clocks.sm,clocks.max.sm,memory.used,memory.total,temperature.gpu",
    "--format=csv,noheader,nounits",
];

/// nvidia-smi's arguments for the processes using a GPU.
pub const PROCESSES: [&str; 2] = [
    "--query-compute-apps=pid,process_name,used_memory",
    "--format=csv,noheader,nounits",
];

/// One GPU, as `QUERY` reads it. Values nvidia-smi cannot give (`[N/A]`) are `None`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gpu {
    pub name: String,
    /// `9.0`
    pub compute_capability: String,
    pub driver: String,
    pub sm_clock_mhz: Option<u32>,
    pub sm_clock_max_mhz: Option<u32>,
    pub memory_used_mib: Option<u64>,
    pub memory_total_mib: Option<u64>,
    pub temperature_c: Option<u32>,
}

/// A process that holds a GPU context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuProcess {
    pub pid: u32,
    pub name: String,
    pub used_mib: Option<u64>,
}

/// The GPU and the processes using it, at one moment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuState {
    pub gpu: Gpu,
    pub processes: Vec<GpuProcess>,
}

/// The architecture families cuTile supports, by compute capability major.
pub fn family(compute_capability: &str) -> Option<&'static str> {
    match major(compute_capability)? {
        8 => Some("Ampere/Ada"),
        9 => Some("Hopper"),
        10..=12 => Some("Blackwell"),
        _ => None,
    }
}

fn major(compute_capability: &str) -> Option<u32> {
    compute_capability.split('.').next()?.trim().parse().ok()
}

/// `9.0` or `12.1`.
pub fn parse_capability(text: &str) -> anyhow::Result<(u32, u32)> {
    let parsed = text
        .split_once('.')
        .and_then(|(major, minor)| Some((major.trim().parse().ok()?, minor.trim().parse().ok()?)));
    match parsed {
        Some(capability) => Ok(capability),
        None => Err(crate::rules::hint::hinted(
            format!("invalid compute capability {text:?}"),
            "write it as MAJOR.MINOR, e.g. 9.0 for an H100/H200",
        )),
    }
}

/// The GPU's compute capability as (major, minor).
pub fn capability_of(state: &GpuState) -> Option<(u32, u32)> {
    parse_capability(&state.gpu.compute_capability).ok()
}

/// Whether the tests can measure anything on `state`'s GPU: `Err` (one line) when there is no GPU or
/// one cuTile does not run on; otherwise warnings (a GPU newer than this tool knows, other processes
/// using it).
pub fn check(state: Option<&GpuState>) -> Result<Vec<String>, String> {
    let Some(GpuState { gpu, processes }) = state else {
        return Err("no GPU found: nvidia-smi is missing, failed, or lists no GPU".to_string());
    };
    let mut warnings = Vec::new();
    match (family(&gpu.compute_capability), major(&gpu.compute_capability)) {
        (Some(_), _) => {}
        (None, Some(newer)) if newer > 12 => warnings.push(format!(
            "{} (compute capability {}) is newer than the architectures this tool knows; cuTile may \
             or may not run there",
            gpu.name, gpu.compute_capability
        )),
        _ => {
            return Err(format!(
                "{} (compute capability {}) cannot run cuTile kernels: cuTile runs on Ampere/Ada, Hopper \
                 and Blackwell (compute capability 8.0 or newer)",
                gpu.name, gpu.compute_capability
            ));
        }
    }
    if !processes.is_empty() {
        warnings.push(format!(
            "other processes use the GPU ({}): their work skews the timings",
            describe_processes(processes)
        ));
    }
    Ok(warnings)
}

impl Gpu {
    /// `name, compute capability, driver`: the session's and the evidence's `gpu` line.
    pub fn identity(&self) -> String {
        format!(
            "{}, {}, {}",
            self.name, self.compute_capability, self.driver
        )
    }

    /// The first GPU in `QUERY`'s output.
    pub fn parse(text: &str) -> Option<Gpu> {
        let fields: Vec<&str> = text.lines().next()?.split(',').map(str::trim).collect();
        let [name, cc, driver, clock, clock_max, used, total, temperature] = fields[..] else {
            return None;
        };
        if name.is_empty() || cc.is_empty() {
            return None;
        }
        Some(Gpu {
            name: name.to_string(),
            compute_capability: cc.to_string(),
            driver: driver.to_string(),
            sm_clock_mhz: clock.parse().ok(),
            sm_clock_max_mhz: clock_max.parse().ok(),
            memory_used_mib: used.parse().ok(),
            memory_total_mib: total.parse().ok(),
            temperature_c: temperature.parse().ok(),
        })
    }

    /// `SM 1980/1980 MHz, 41 C, memory 612/143771 MiB`, leaving out what nvidia-smi did not give.
    pub fn state_line(&self) -> String {
        let mut parts = Vec::new();
        if let Some(now) = self.sm_clock_mhz {
            let max = self
                .sm_clock_max_mhz
                .map_or(String::new(), |m| format!("/{m}"));
            parts.push(format!("SM {now}{max} MHz"));
        }
        if let Some(t) = self.temperature_c {
            parts.push(format!("{t} C"));
        }
        if let (Some(used), Some(total)) = (self.memory_used_mib, self.memory_total_mib) {
            parts.push(format!("memory {used}/{total} MiB"));
        }
        parts.join(", ")
    }
}

/// The processes in `PROCESSES`'s output; lines that do not parse are left out.
pub fn parse_processes(text: &str) -> Vec<GpuProcess> {
    text.lines()
        .filter_map(|line| {
            let mut fields = line.splitn(3, ',').map(str::trim);
            let pid = fields.next()?.parse().ok()?;
            let name = fields.next()?.to_string();
            Some(GpuProcess {
                pid,
                name,
                used_mib: fields.next().and_then(|m| m.parse().ok()),
            })
        })
        .collect()
}

/// `pid 4242 python (2048 MiB), pid 7 a.out`
pub fn describe_processes(processes: &[GpuProcess]) -> String {
    processes
        .iter()
        .map(|p| match p.used_mib {
            Some(mib) => format!("pid {} {} ({mib} MiB)", p.pid, p.name),
            None => format!("pid {} {}", p.pid, p.name),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The GPU's state, with `nvidia_smi(args)` building the command (local, or through a runner); `None`
/// without nvidia-smi or a GPU.
pub fn probe(nvidia_smi: impl Fn(&[&str]) -> duct::Expression) -> Option<GpuState> {
    let gpu = Gpu::parse(&query(nvidia_smi(&QUERY))?)?;
    // a GPU whose process list cannot be read is still a GPU
    let processes = query(nvidia_smi(&PROCESSES)).map_or_else(Vec::new, |t| parse_processes(&t));
    Some(GpuState { gpu, processes })
}

/// Every GPU nvidia-smi lists, in its order (by index); empty without nvidia-smi or a GPU.
pub fn list(nvidia_smi: impl Fn(&[&str]) -> duct::Expression) -> Vec<Gpu> {
    query(nvidia_smi(&QUERY)).map_or_else(Vec::new, |text| {
        text.lines().filter_map(Gpu::parse).collect()
    })
}

/// `name, compute capability` of an identity line (`name, compute capability, driver`): what two GPUs
/// must share to measure one session.
pub fn model_of(identity: &str) -> &str {
    identity
        .rsplit_once(',')
        .map_or(identity, |(model, _)| model)
}

/// The GPUs a step measures on, one (baseline, candidate) pair each, by index as `CUDA_VISIBLE_DEVICES`
/// names them: `asked` (`--gpus 0,2`), else `visible` (the environment's `CUDA_VISIBLE_DEVICES`), else
/// every GPU of `model` (the session's `name, compute capability`) in `found` (nvidia-smi's list). Each
/// named one must be in `found` and of `model`: the verdict pools their configs. Empty: the environment as it is, one
/// pair (no GPU was found, or `CUDA_VISIBLE_DEVICES` names its GPUs otherwise than by index).
pub fn pool(
    asked: Option<&str>,
    visible: Option<&str>,
    found: &[Gpu],
    model: &str,
) -> Result<Vec<String>, Hinted> {
    let listed = |text: &str| -> Vec<String> {
        text.split(',')
            .map(str::trim)
            .filter(|entry| !entry.is_empty())
            .map(str::to_string)
            .collect()
    };
    let chosen = match (asked, visible.filter(|v| !v.trim().is_empty())) {
        (Some(asked), _) => listed(asked),
        (None, Some(visible)) => {
            let entries = listed(visible);
            if entries.iter().any(|e| e.parse::<usize>().is_err()) {
                return Ok(Vec::new());
            }
            entries
        }
        // another model here (a display GPU, say) is simply not one of the session's
        (None, None) => (0..found.len())
            .filter(|&i| format!("{}, {}", found[i].name, found[i].compute_capability) == model)
            .map(|i| i.to_string())
            .collect(),
    };
    if asked.is_some() && chosen.is_empty() {
        return Err(Hinted::new(
            "--gpus names no GPU",
            "list GPU indexes as nvidia-smi numbers them, e.g. --gpus 0,1",
        ));
    }
    let mut seen = Vec::new();
    for entry in &chosen {
        let gpu = entry
            .parse::<usize>()
            .ok()
            .and_then(|index| found.get(index));
        let Some(gpu) = gpu else {
            return Err(Hinted::new(
                format!(
                    "GPU {entry:?} is not one nvidia-smi lists here ({} GPUs: indexes 0 to {})",
                    found.len(),
                    found.len().saturating_sub(1)
                ),
                "name GPUs by index as nvidia-smi numbers them, e.g. --gpus 0,1",
            ));
        };
        let its = format!("{}, {}", gpu.name, gpu.compute_capability);
        if its != model {
            return Err(Hinted::new(
                format!("GPU {entry} is a {its}, but the session measures on a {model}"),
                "every GPU of a step must be the session's model, or the configs measured on it are not \
                 comparable: pick those with --gpus (nvidia-smi -L lists them)",
            ));
        }
        if seen.contains(entry) {
            return Err(Hinted::new(
                format!("GPU {entry} is listed twice"),
                "name each GPU once, e.g. --gpus 0,1",
            ));
        }
        seen.push(entry.clone());
    }
    Ok(seen)
}

/// `start --gpus`: the GPUs `asked` names, all of the first one's model, and that first GPU: the
/// session's, where `start` measures the baseline.
pub fn session_gpus<'a>(asked: &str, found: &'a [Gpu]) -> Result<(Vec<String>, &'a Gpu), Hinted> {
    let first = asked.split(',').map(str::trim).find(|e| !e.is_empty());
    let first_gpu = first
        .and_then(|first| first.parse::<usize>().ok())
        .and_then(|index| found.get(index));
    let model = first_gpu.map_or(String::new(), |gpu| {
        format!("{}, {}", gpu.name, gpu.compute_capability)
    });
    // an unknown first GPU is refused by `pool` with the others, in the same words
    let gpus = pool(Some(asked), None, found, &model)?;
    Ok((gpus, first_gpu.expect("pool refuses an unknown GPU")))
}

fn query(command: duct::Expression) -> Option<String> {
    let output = process::capture(command, TIMEOUT).ok()?;
    output
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    const H200: &str = "NVIDIA H200, 9.0, 580.159.04, 1980, 1980, 612, 143771, 41\n";

    #[test]
    fn the_first_gpu_is_read_with_its_clocks_memory_and_temperature() {
        let gpu = Gpu::parse(H200).unwrap();
        assert_eq!(gpu.identity(), "NVIDIA H200, 9.0, 580.159.04");
        assert_eq!(
            gpu.state_line(),
            "SM 1980/1980 MHz, 41 C, memory 612/143771 MiB"
        );
        assert_eq!(family(&gpu.compute_capability), Some("Hopper"));
    }

    #[test]
    fn values_nvidia_smi_cannot_give_are_left_out() {
        let gpu = Gpu::parse("NVIDIA A10, 8.6, 550.1, [N/A], [N/A], [N/A], 23028, [N/A]").unwrap();
        assert_eq!(gpu.sm_clock_mhz, None);
        assert_eq!(gpu.memory_total_mib, Some(23028));
        assert_eq!(gpu.state_line(), "");
    }

    #[test]
    fn garbage_and_short_lines_are_no_gpu() {
        assert_eq!(Gpu::parse(""), None);
        assert_eq!(Gpu::parse("No devices were found"), None);
        assert_eq!(Gpu::parse("NVIDIA H200, 9.0, 580.159.04"), None);
        assert_eq!(Gpu::parse(", , , , , , , "), None);
    }

    #[test]
    fn families_follow_the_compute_capability_major() {
        let of = |cc| family(cc);
        assert_eq!(of("8.0"), Some("Ampere/Ada"));
        assert_eq!(of("8.9"), Some("Ampere/Ada"));
        assert_eq!(of("10.0"), Some("Blackwell"));
        assert_eq!(of("12.0"), Some("Blackwell"));
        assert_eq!(of("7.5"), None);
        assert_eq!(of("13.0"), None);
        assert_eq!(of("x"), None);
    }

    #[test]
    fn the_check_refuses_no_gpu_and_old_gpus_and_warns_of_others() {
        let state = |line: &str, processes: &str| GpuState {
            gpu: Gpu::parse(line).unwrap(),
            processes: parse_processes(processes),
        };
        assert_eq!(check(Some(&state(H200, ""))), Ok(vec![]));
        assert!(check(None).unwrap_err().starts_with("no GPU found"));
        let volta = state("Tesla V100, 7.0, 550.1, 1380, 1380, 0, 16384, 30", "");
        assert_eq!(
            check(Some(&volta)).unwrap_err(),
            "Tesla V100 (compute capability 7.0) cannot run cuTile kernels: cuTile runs on Ampere/Ada, \
             Hopper and Blackwell (compute capability 8.0 or newer)"
        );
        let busy = state(H200, "4242, python, 2048\n");
        assert_eq!(
            check(Some(&busy)).unwrap(),
            vec![
                "other processes use the GPU (pid 4242 python (2048 MiB)): their work skews the timings"
            ]
        );
        let future = state("NVIDIA X, 13.0, 600.1, 1, 1, 1, 1, 1", "");
        assert!(check(Some(&future)).unwrap()[0].contains("newer than the architectures"));
    }

    #[test]
    fn processes_are_read_and_described() {
        let processes = parse_processes("4242, python, 2048\n7, /opt/a.out, [N/A]\nbad line\n");
        assert_eq!(
            describe_processes(&processes),
            "pid 4242 python (2048 MiB), pid 7 /opt/a.out"
        );
        assert!(parse_processes("").is_empty());
    }

    #[test]
    fn the_pool_is_the_asked_gpus_else_the_visible_ones_else_every_gpu_found() {
        let h200 = Gpu::parse(H200).unwrap();
        let a10_again = || Gpu::parse("NVIDIA A10, 8.6, 550.1, 1, 1, 1, 1, 1").unwrap();
        let a10 = a10_again();
        let model = "NVIDIA H200, 9.0";
        let found = [h200.clone(), h200.clone(), a10];
        let pool = |asked, visible| pool(asked, visible, &found[..2], model);
        assert_eq!(pool(None, None).unwrap(), ["0", "1"]);
        // by default, another model is left out; named, it is refused
        assert_eq!(super::pool(None, None, &found, model).unwrap(), ["0", "1"]);
        assert!(super::pool(None, Some("2"), &found, model).is_err());
        assert_eq!(pool(Some("1"), None).unwrap(), ["1"]);
        assert_eq!(pool(Some(" 1, 0 "), Some("0")).unwrap(), ["1", "0"]);
        assert_eq!(pool(None, Some("1")).unwrap(), ["1"]);
        assert_eq!(pool(None, Some("")).unwrap(), ["0", "1"]);
        // named by UUID: the environment as it is
        assert!(pool(None, Some("GPU-8e1f")).unwrap().is_empty());
        // no GPU at all: one pair, as before
        assert!(super::pool(None, None, &[], model).unwrap().is_empty());
        let refused = |asked| super::pool(Some(asked), None, &found, model).unwrap_err();
        assert_eq!(
            refused("0,2").message,
            "GPU 2 is a NVIDIA A10, 8.6, but the session measures on a NVIDIA H200, 9.0"
        );
        assert_eq!(
            refused("3").message,
            "GPU \"3\" is not one nvidia-smi lists here (3 GPUs: indexes 0 to 2)"
        );
        assert_eq!(refused("0,0").message, "GPU 0 is listed twice");
        assert_eq!(refused(" ,").message, "--gpus names no GPU");
        assert_eq!(model_of("NVIDIA H200, 9.0, 580.159.04"), model);

        // start: the first GPU named is the session's, and the others must be its model
        let mixed = [a10_again(), h200.clone(), h200.clone()];
        let (gpus, first) = session_gpus("2,1", &mixed).unwrap();
        assert_eq!(
            (gpus, first),
            (vec!["2".to_string(), "1".to_string()], &h200)
        );
        assert_eq!(
            session_gpus("1,0", &mixed).unwrap_err().message,
            "GPU 0 is a NVIDIA A10, 8.6, but the session measures on a NVIDIA H200, 9.0"
        );
        assert_eq!(
            session_gpus("5", &mixed).unwrap_err().message,
            "GPU \"5\" is not one nvidia-smi lists here (3 GPUs: indexes 0 to 2)"
        );
    }
}
