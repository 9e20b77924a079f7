//! The kernel's class as read from its source, before anything is measured.

use std::collections::BTreeSet;

use super::ClassEstimate;
use super::module::KernelDef;
use crate::rules::kernel_class::KernelClass;

/// A class read from the source: a kernel with a matrix multiply-accumulate is taken as compute-bound
/// (GEMM and attention reach tens to hundreds of FLOP per byte), one without as memory-bound
/// (elementwise ops, norms and reductions do about one FLOP per byte). Balanced cases need a measurement.
pub fn estimate_class(kernels: &[KernelDef]) -> Option<ClassEstimate> {
    if kernels.is_empty() {
        return None;
    }
    let with_mma: Vec<&str> = kernels
        .iter()
        .filter(|k| k.mma)
        .map(|k| k.name.as_str())
        .collect();
    let dtypes: BTreeSet<&str> = kernels
        .iter()
        .flat_map(|k| k.dtypes.iter().map(String::as_str))
        .collect();
    let dtypes = if dtypes.is_empty() {
        String::new()
    } else {
        format!(
            "; dtypes named: {}",
            dtypes.into_iter().collect::<Vec<_>>().join(", ")
        )
    };
    Some(if with_mma.is_empty() {
        ClassEstimate {
            class: KernelClass::Memory,
            source: "static",
            reason: format!(
                "no ct.mma in its {}: elementwise/reduction work, about 1 FLOP per byte{dtypes}",
                match kernels.len() {
                    1 => "kernel".to_string(),
                    n => format!("{n} kernels"),
                }
            ),
        }
    } else {
        ClassEstimate {
            class: KernelClass::Compute,
            source: "static",
            reason: format!(
                "ct.mma in {}: matrix tiles, tens to hundreds of FLOP per byte{dtypes}",
                with_mma.join(", ")
            ),
        }
    })
}
