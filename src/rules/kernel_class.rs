//! The kernel's class by arithmetic intensity, which orders the optimizations worth trying.

use std::fmt;
use std::str::FromStr;

/// Kernel class, which decides the order in which optimizations are tried.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum KernelClass {
    Memory,
    Balanced,
    Compute,
}

impl KernelClass {
    pub const ALL: [KernelClass; 3] = [
        KernelClass::Memory,
        KernelClass::Balanced,
        KernelClass::Compute,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            KernelClass::Memory => "memory",
            KernelClass::Balanced => "balanced",
            KernelClass::Compute => "compute",
        }
    }
}

impl fmt::Display for KernelClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for KernelClass {
    type Err = String;

    /// Accepts `memory`, `balanced`, `compute`, also with a `-bound` suffix, ignoring case.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let t = t.strip_suffix("-bound").unwrap_or(t);
        KernelClass::ALL
            .into_iter()
            .find(|c| c.as_str().eq_ignore_ascii_case(t))
            .ok_or_else(|| {
                format!("unknown kernel class {s:?}: expected memory, balanced or compute")
            })
    }
}

/// Class from arithmetic intensity (FLOP per byte): below 10 memory, above 50 compute, balanced in
/// between (10 and 50 included). NaN lands in the neutral middle, balanced.
pub fn classify(arithmetic_intensity: f64) -> KernelClass {
    if arithmetic_intensity < 10.0 {
        KernelClass::Memory
    } else if arithmetic_intensity > 50.0 {
        KernelClass::Compute
    } else {
        KernelClass::Balanced
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_parse_print_and_classify() {
        for c in KernelClass::ALL {
            assert_eq!(c.as_str().parse::<KernelClass>().unwrap(), c);
            assert_eq!(c.to_string(), c.as_str());
        }
        assert_eq!(
            "Memory-bound".parse::<KernelClass>().unwrap(),
            KernelClass::Memory
        );
        assert_eq!(
            "COMPUTE".parse::<KernelClass>().unwrap(),
            KernelClass::Compute
        );
        assert!("fast".parse::<KernelClass>().is_err());
        assert_eq!(classify(0.1), KernelClass::Memory);
        assert_eq!(classify(9.99), KernelClass::Memory);
        assert_eq!(classify(10.0), KernelClass::Balanced);
        assert_eq!(classify(50.0), KernelClass::Balanced);
        assert_eq!(classify(50.01), KernelClass::Compute);
        assert_eq!(classify(f64::NAN), KernelClass::Balanced);
    }
}
