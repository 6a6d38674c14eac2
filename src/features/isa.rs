//! Instruction-set choice of the CPU feature code, made once per process.
//!
//! The integer feature kernels are compiled more than once: a portable build (any CPU, any
//! architecture) and, on x86-64, clones with AVX2 and with AVX-512 (F and BW), with explicit
//! intrinsics where the compiler does not vectorise. [`Isa::detected`] picks the best one the CPU supports, once
//! (cached). The results cannot depend on the choice: the kernels are integer code (every
//! reordering is of exact integer sums), and the few floating-point steps are the same IEEE
//! operations in the same order in every build (Rust never contracts `a * b + c` into an FMA).
//! `tests/simd_parity.rs` runs every build on the same content and compares.

use std::sync::OnceLock;

/// Which build of the feature kernels runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Isa {
    /// Portable Rust, no target features beyond the compile target's baseline.
    Scalar,
    /// x86-64 with AVX2, BMI1, BMI2 and LZCNT (FMA is deliberately not enabled, so that no
    /// floating-point step could ever be contracted).
    Avx2,
    /// x86-64 with everything of [`Isa::Avx2`] and AVX-512 F, BW and VL. Rust's `avx512f`
    /// implies FMA, which changes nothing: rustc never contracts `a * b + c` (and no kernel
    /// calls `mul_add`), so every floating-point step stays the separate IEEE operations.
    Avx512,
}

impl Isa {
    /// The best build this CPU runs, detected once.
    pub fn detected() -> Isa {
        static CHOICE: OnceLock<Isa> = OnceLock::new();
        *CHOICE.get_or_init(|| {
            if Isa::Avx512.supported() {
                Isa::Avx512
            } else if Isa::Avx2.supported() {
                Isa::Avx2
            } else {
                Isa::Scalar
            }
        })
    }

    /// Whether this CPU can run the build `self`.
    pub fn supported(self) -> bool {
        match self {
            Isa::Scalar => true,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => {
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("bmi1")
                    && std::arch::is_x86_feature_detected!("bmi2")
                    && std::arch::is_x86_feature_detected!("lzcnt")
            }
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => {
                Isa::Avx2.supported()
                    && std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512bw")
                    && std::arch::is_x86_feature_detected!("avx512vl")
            }
            #[cfg(not(target_arch = "x86_64"))]
            Isa::Avx2 | Isa::Avx512 => false,
        }
    }

    /// Every build this CPU runs (for parity tests).
    pub fn all_supported() -> Vec<Isa> {
        [Isa::Scalar, Isa::Avx2, Isa::Avx512]
            .into_iter()
            .filter(|i| i.supported())
            .collect()
    }
}

/// Whether the CPU has AVX-512 VNNI (`vpdpwssd`), which the AVX-512 build's VIF kernel uses
/// when present (the same sums modulo 2^32 as `vpmaddwd` then `vpaddd`). Detected once.
pub(crate) fn avx512_vnni() -> bool {
    static VNNI: OnceLock<bool> = OnceLock::new();
    *VNNI.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            std::arch::is_x86_feature_detected!("avx512vnni")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    })
}
