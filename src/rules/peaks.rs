//! Peak DRAM bandwidth and dense BF16 tensor throughput of the GPUs cuTile runs on, to put a measured
//! kernel's achieved bandwidth and FLOP/s in proportion.
//!
//! Figures are NVIDIA's datasheet numbers for the SXM (or stated) variant; datasheets print tensor
//! throughput with 2:4 sparsity, which is twice the dense figure given here.

/// One GPU's peaks.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Peak {
    /// What `nvidia-smi --query-gpu=name` contains for this GPU.
    pub name: &'static str,
    pub dram_gb_s: f64,
    pub bf16_dense_tflop_s: f64,
    /// L2 cache size (MB): a working set this small may be served from L2, faster than DRAM.
    pub l2_mb: f64,
}

impl Peak {
    /// The dense tensor-core peak (TFLOP/s) for inputs of `dtype` (as torch names it), from the BF16
    /// figure: FP8 and INT8 run at twice it, FP16 at it, FP32 at most on TF32 tensor cores at half it.
    /// Any other dtype is held to the BF16 figure, the highest it could reach.
    pub fn dense_tflop_s(&self, dtype: &str) -> f64 {
        let factor = match dtype {
            d if d.starts_with("float8") || d == "int8" || d == "uint8" => 2.0,
            "float32" | "float" => 0.5,
            _ => 1.0,
        };
        self.bf16_dense_tflop_s * factor
    }
}

/// Most specific names first: "H100 NVL" must match before "H100".
const PEAKS: &[Peak] = &[
    // B200 datasheet (HGX B200): 8 TB/s HBM3e, 4.5 PFLOPS BF16 sparse per GPU
    Peak {
        name: "B200",
        dram_gb_s: 8000.0,
        bf16_dense_tflop_s: 2250.0,
        l2_mb: 126.0,
    },
    // H200 datasheet: SXM 4.8 TB/s, 1,979 TFLOPS BF16 sparse; NVL 4.8 TB/s, 1,671 sparse
    Peak {
        name: "H200 NVL",
        dram_gb_s: 4800.0,
        bf16_dense_tflop_s: 835.5,
        l2_mb: 50.0,
    },
    Peak {
        name: "H200",
        dram_gb_s: 4800.0,
        bf16_dense_tflop_s: 989.5,
        l2_mb: 50.0,
    },
    // H100 datasheet: SXM 3.35 TB/s, 1,979 sparse; NVL 3.9 TB/s, 1,671 sparse; PCIe 2 TB/s, 1,513 sparse
    Peak {
        name: "H100 NVL",
        dram_gb_s: 3900.0,
        bf16_dense_tflop_s: 835.5,
        l2_mb: 50.0,
    },
    Peak {
        name: "H100 PCIe",
        dram_gb_s: 2000.0,
        bf16_dense_tflop_s: 756.5,
        l2_mb: 50.0,
    },
    Peak {
        name: "H100",
        dram_gb_s: 3350.0,
        bf16_dense_tflop_s: 989.5,
        l2_mb: 50.0,
    },
    // A100 datasheet: 80GB SXM 2,039 GB/s, 40GB 1,555 GB/s; 312 TFLOPS BF16 dense (624 sparse)
    Peak {
        name: "A100-SXM4-80GB",
        dram_gb_s: 2039.0,
        bf16_dense_tflop_s: 312.0,
        l2_mb: 40.0,
    },
    Peak {
        name: "A100",
        dram_gb_s: 1555.0,
        bf16_dense_tflop_s: 312.0,
        l2_mb: 40.0,
    },
    // L40S datasheet: 864 GB/s, 733 TFLOPS BF16 sparse
    Peak {
        name: "L40S",
        dram_gb_s: 864.0,
        bf16_dense_tflop_s: 366.5,
        l2_mb: 96.0,
    },
    // L4 datasheet: 300 GB/s, 242 TFLOPS BF16 sparse
    Peak {
        name: "L4",
        dram_gb_s: 300.0,
        bf16_dense_tflop_s: 121.0,
        l2_mb: 48.0,
    },
];

/// The peaks of the GPU called `name` (as nvidia-smi prints it), if the table knows it.
/// `CUTILE_PERF_GPU_PEAK="NAME,DRAM_GB_S,BF16_DENSE_TFLOP_S,L2_MB"` adds a GPU the table lacks (or
/// overrides one): it is matched first.
pub const EXTRA_PEAK_ENV: &str = "CUTILE_PERF_GPU_PEAK";

pub fn lookup(name: &str) -> Option<&'static Peak> {
    static EXTRA: std::sync::OnceLock<Option<Peak>> = std::sync::OnceLock::new();
    let extra = EXTRA.get_or_init(|| parse_extra(&std::env::var(EXTRA_PEAK_ENV).ok()?));
    extra.iter().chain(PEAKS).find(|p| name.contains(p.name))
}

fn parse_extra(text: &str) -> Option<Peak> {
    let fields: Vec<&str> = text.split(',').map(str::trim).collect();
    let [name, dram, tflop, l2] = fields.as_slice() else {
        return None;
    };
    Some(Peak {
        // read once per process: the one leak is the table's entry
        name: Box::leak(name.to_string().into_boxed_str()),
        dram_gb_s: dram.parse().ok()?,
        bf16_dense_tflop_s: tflop.parse().ok()?,
        l2_mb: l2.parse().ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_specific_name_wins() {
        assert_eq!(lookup("NVIDIA H200").unwrap().dram_gb_s, 4800.0);
        assert_eq!(lookup("NVIDIA H100 80GB HBM3").unwrap().dram_gb_s, 3350.0);
        assert_eq!(lookup("NVIDIA H100 NVL").unwrap().dram_gb_s, 3900.0);
        assert_eq!(lookup("NVIDIA A100-SXM4-80GB").unwrap().dram_gb_s, 2039.0);
        assert_eq!(lookup("NVIDIA A100-PCIE-40GB").unwrap().dram_gb_s, 1555.0);
        assert_eq!(lookup("NVIDIA L40S").unwrap().name, "L40S");
        assert!(lookup("NVIDIA GeForce GTX 1080").is_none());
        assert_eq!(lookup("NVIDIA H200").unwrap().l2_mb, 50.0);
    }

    #[test]
    fn the_math_peak_follows_the_dtype() {
        let h200 = lookup("NVIDIA H200").unwrap();
        assert_eq!(h200.dense_tflop_s("bfloat16"), 989.5);
        assert_eq!(h200.dense_tflop_s("float16"), 989.5);
        assert_eq!(h200.dense_tflop_s("float8_e4m3fn"), 1979.0);
        assert_eq!(h200.dense_tflop_s("float32"), 494.75);
        assert_eq!(h200.dense_tflop_s("float64"), 989.5);
    }

    #[test]
    fn an_extra_gpu_is_read_from_its_four_fields() {
        let peak = parse_extra("RTX PRO 6000, 1792, 500, 128").unwrap();
        assert_eq!(
            (peak.name, peak.dram_gb_s, peak.l2_mb),
            ("RTX PRO 6000", 1792.0, 128.0)
        );
        assert_eq!(parse_extra("RTX, 1792"), None);
        assert_eq!(parse_extra("RTX, fast, 500, 128"), None);
    }
}
