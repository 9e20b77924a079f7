//! Faster than the hardware allows: a config's latency against the bytes and the FLOPs its work needs,
//! estimated from what the baseline's census saw cross the wrapper, and the session GPU's peaks. The
//! baseline calibrates each estimate: where its own latency already implies more than the peak (the
//! estimate overstates the work), the config is not judged.

use super::{Array, Census};
use crate::rules::peaks::Peak;

/// Above the GPU's peak DRAM bandwidth, how far an implied bandwidth may go before it is refused: data
/// that stays in L2 between repetitions (a working set within the L2) is read faster than DRAM allows.
pub const DRAM_MARGIN: f64 = 1.5;
pub const L2_MARGIN: f64 = 5.0;
/// Above the datasheet's math peak, how far an implied FLOP rate may go: clocks above the datasheet's
/// boost clock and rounding in its figures, nothing more.
pub const MATH_MARGIN: f64 = 1.2;

/// An operation whose FLOPs the shapes of its tensors tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `C = A @ B`, batched or not: 2*M*N*K per matrix.
    Matmul,
    /// One FLOP per element of the largest tensor.
    Elementwise,
}

impl Op {
    /// The op a session's kernel (its file, `src/tilegym/ops/cutile/matmul.py`) computes, where the
    /// file's name says it.
    pub fn of(kernel: &str) -> Option<Op> {
        let stem = std::path::Path::new(kernel).file_stem()?.to_str()?;
        match stem {
            k if k.contains("matmul") || k.contains("gemm") || k == "bmm" || k == "mm" => {
                Some(Op::Matmul)
            }
            "add" | "vector_add" => Some(Op::Elementwise),
            _ => None,
        }
    }

    /// The FLOPs of one call whose cuTile launches were given `arrays` (in the order they were passed),
    /// with the dtype they are in; none when the shapes do not fit the op.
    pub fn flops(self, arrays: &[Array]) -> Option<(f64, String)> {
        match self {
            Op::Matmul => arrays.iter().enumerate().find_map(|(i, a)| {
                arrays[i + 1..].iter().find_map(|b| {
                    let ([batch_a @ .., m, k], [batch_b @ .., k2, n]) =
                        (a.shape.as_slice(), b.shape.as_slice())
                    else {
                        return None;
                    };
                    (k == k2 && batch_a == batch_b).then(|| {
                        let batch: u64 = batch_a.iter().product();
                        (2.0 * (batch * m * n * k) as f64, a.dtype.clone())
                    })
                })
            }),
            Op::Elementwise => arrays
                .iter()
                .max_by_key(|a| a.elements())
                .map(|a| (a.elements() as f64, a.dtype.clone())),
        }
    }
}

/// Why `candidate_ms` is beyond what `peak` allows for the work of the baseline's census, if it is:
/// the bytes against the DRAM bandwidth, then (for a known `op`) the FLOPs against the math peak.
pub fn beyond(
    baseline_ms: f64,
    candidate_ms: f64,
    baseline: &[Census],
    peak: &Peak,
    op: Option<Op>,
) -> Option<String> {
    bandwidth(baseline_ms, candidate_ms, baseline, peak)
        .or_else(|| op.and_then(|op| math(baseline_ms, candidate_ms, baseline, peak, op)))
}

/// Whether `candidate_ms` for the bytes the baseline's launches were given implies more bandwidth than
/// `peak` allows.
pub fn bandwidth(
    baseline_ms: f64,
    candidate_ms: f64,
    baseline: &[Census],
    peak: &Peak,
) -> Option<String> {
    let bytes = baseline.iter().map(|census| census.bytes).max()? as f64;
    let margin = match bytes <= peak.l2_mb * 1e6 {
        true => L2_MARGIN,
        false => DRAM_MARGIN,
    };
    let implied = beyond_limit(
        bytes,
        baseline_ms,
        candidate_ms,
        peak.dram_gb_s * 1e9 * margin,
    )?;
    Some(format!(
        "{candidate_ms:.6} ms for {} implies {}, beyond the {}'s {} (x{margin} margin): faster than the hardware allows",
        human_bytes(bytes),
        human_rate(implied / 1e9),
        peak.name,
        human_rate(peak.dram_gb_s)
    ))
}

/// Whether `candidate_ms` for the FLOPs `op` needs on the baseline's tensors implies more math than
/// `peak` allows for their dtype.
pub fn math(
    baseline_ms: f64,
    candidate_ms: f64,
    baseline: &[Census],
    peak: &Peak,
    op: Op,
) -> Option<String> {
    let (flops, dtype) = baseline
        .iter()
        .filter_map(|census| op.flops(&census.arrays))
        .max_by(|a, b| a.0.total_cmp(&b.0))?;
    let peak_flop_s = peak.dense_tflop_s(&dtype) * 1e12;
    let implied = beyond_limit(flops, baseline_ms, candidate_ms, peak_flop_s * MATH_MARGIN)?;
    Some(format!(
        "{candidate_ms:.6} ms for {}FLOP implies {}FLOP/s, beyond the {}'s {}FLOP/s for {dtype} (x{MATH_MARGIN} margin): faster than the hardware allows",
        si(flops),
        si(implied),
        peak.name,
        si(peak_flop_s)
    ))
}

/// The rate `work` in `candidate_ms` implies, when it is beyond `limit` (per second) while the
/// baseline's `baseline_ms` is not: the baseline calibrates the estimate of the work.
fn beyond_limit(work: f64, baseline_ms: f64, candidate_ms: f64, limit: f64) -> Option<f64> {
    let implied = |ms: f64| work / (ms * 1e-3);
    (work > 0.0 && implied(baseline_ms) <= limit && implied(candidate_ms) > limit)
        .then(|| implied(candidate_ms))
}

fn human_bytes(bytes: f64) -> String {
    match bytes {
        b if b >= 1e9 => format!("{:.2} GB", b / 1e9),
        b if b >= 1e6 => format!("{:.2} MB", b / 1e6),
        b => format!("{:.1} kB", b / 1e3),
    }
}

fn human_rate(gb_s: f64) -> String {
    match gb_s >= 1000.0 {
        true => format!("{:.1} TB/s", gb_s / 1000.0),
        false => format!("{gb_s:.0} GB/s"),
    }
}

/// `4.10 k`, `989.50 T`: a count with its SI prefix and a space before the unit.
fn si(value: f64) -> String {
    const PREFIXES: [(f64, &str); 5] =
        [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")];
    match PREFIXES.iter().find(|(scale, _)| value >= *scale) {
        Some((scale, prefix)) => format!("{:.2} {prefix}", value / scale),
        None => format!("{value:.0} "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn array(shape: &[u64], dtype: &str) -> Array {
        Array {
            shape: shape.to_vec(),
            dtype: dtype.to_string(),
        }
    }

    fn census(bytes: u64, arrays: Vec<Array>) -> Census {
        Census {
            taken: true,
            why: None,
            launches: Vec::new(),
            bytes,
            arrays,
            device: None,
            seconds: None,
            timed: None,
            outputs: None,
            harness: None,
            wraps: None,
            replaced: None,
        }
    }

    #[test]
    fn bandwidth_refuses_beyond_the_peak_and_trusts_the_baseline_s_calibration() {
        let h200 = crate::rules::peaks::lookup("NVIDIA H200").unwrap();
        // 262144 x 4096 fp16 read and written: 4.29 GB
        let baseline = [census(4_294_967_296, Vec::new())];
        assert_eq!(
            bandwidth(1.2, 0.0011, &baseline, h200).unwrap(),
            "0.001100 ms for 4.29 GB implies 3904.5 TB/s, beyond the H200's 4.8 TB/s (x1.5 margin): faster than the hardware allows"
        );
        assert_eq!(bandwidth(1.2, 0.95, &baseline, h200), None);
        // the baseline itself "beyond the peak": the bytes overstate what is read; not judged
        assert_eq!(bandwidth(0.1, 0.0011, &baseline, h200), None);
    }

    #[test]
    fn matmul_flops_come_from_the_shapes_that_chain() {
        let fp16 = |shape: &[u64]| array(shape, "float16");
        // C (M x N) passed first: the pair that chains is A (M x K) and B (K x N)
        let mm = [fp16(&[512, 256]), fp16(&[512, 1024]), fp16(&[1024, 256])];
        assert_eq!(
            Op::Matmul.flops(&mm),
            Some((2.0 * 512.0 * 256.0 * 1024.0, "float16".to_string()))
        );
        let bmm = [fp16(&[8, 64, 32]), fp16(&[8, 32, 16]), fp16(&[8, 64, 16])];
        assert_eq!(
            Op::Matmul.flops(&bmm).unwrap().0,
            2.0 * 8.0 * 64.0 * 16.0 * 32.0
        );
        assert_eq!(Op::Matmul.flops(&[fp16(&[4096])]), None);
        assert_eq!(
            Op::Elementwise.flops(&[array(&[7], "float64"), array(&[3, 5], "float64")]),
            Some((15.0, "float64".to_string()))
        );
        assert_eq!(Op::of("src/tilegym/ops/cutile/matmul.py"), Some(Op::Matmul));
        assert_eq!(
            Op::of("src/tilegym/ops/cutile/vector_add.py"),
            Some(Op::Elementwise)
        );
        assert_eq!(Op::of("group_gemm"), Some(Op::Matmul));
        assert_eq!(Op::of("rms_norm"), None);
    }

    #[test]
    fn math_refuses_beyond_the_dtype_s_peak() {
        let h200 = crate::rules::peaks::lookup("NVIDIA H200").unwrap();
        // a 4096^3 fp16 matmul: 137.4 GFLOP, 0.139 ms at the H200's 989.5 TFLOP/s dense
        let square = |dtype| {
            let m = array(&[4096, 4096], dtype);
            [census(0, vec![m.clone(), m.clone(), m])]
        };
        assert_eq!(
            math(0.3, 0.05, &square("float16"), h200, Op::Matmul).unwrap(),
            "0.050000 ms for 137.44 GFLOP implies 2.75 PFLOP/s, beyond the H200's 989.50 TFLOP/s for float16 (x1.2 margin): faster than the hardware allows"
        );
        assert_eq!(math(0.3, 0.16, &square("float16"), h200, Op::Matmul), None);
        // fp32 inputs run on TF32 tensor cores at most: half the rate
        assert!(
            math(0.5, 0.16, &square("float32"), h200, Op::Matmul)
                .unwrap()
                .contains("beyond the H200's 494.75 TFLOP/s for float32")
        );
        // the baseline itself beyond the peak: the shapes overstate the work; not judged
        assert_eq!(math(0.1, 0.05, &square("float16"), h200, Op::Matmul), None);
        // the bandwidth speaks first
        let both = [census(4_294_967_296, square("float16")[0].arrays.clone())];
        assert!(
            beyond(1.2, 0.0011, &both, h200, Some(Op::Matmul))
                .unwrap()
                .contains("TB/s")
        );
        assert!(
            beyond(0.3, 0.05, &square("float16"), h200, Some(Op::Matmul))
                .unwrap()
                .contains("FLOP/s")
        );
        assert_eq!(beyond(0.3, 0.05, &square("float16"), h200, None), None);
    }
}
