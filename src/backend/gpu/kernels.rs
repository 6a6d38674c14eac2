//! The kernel text (kernels/*.cu) and the argument structs the kernels take by value, shared by
//! the CUDA and HIP backends (their run-time compilers live with them: `cuda/launcher.rs`, `hip`).
//!
//! Each `#[repr(C)]` struct here has a twin of the same name in kernels/*.cu; the layout tests
//! below and the `static_assert(sizeof ...)` lines in the .cu files keep them equal.

/// The kernel source: compat.h first, then the kernels, one text for NVRTC and hipRTC.
pub const SOURCE: &str = concat!(
    include_str!("../../../kernels/compat.h"),
    "\n",
    include_str!("../../../kernels/vif.cu"),
    "\n",
    include_str!("../../../kernels/adm.cu"),
    "\n",
    include_str!("../../../kernels/motion.cu"),
    "\n"
);

/// A kernel text the GPU backends compile (NVRTC, hipRTC), each a module of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Text {
    /// VIF, ADM, motion, range check, MSB shift ([`SOURCE`]).
    Vmaf,
    /// The companion metrics, CAMBI and SpEED chroma (`gpu::companion_plan::SOURCE`).
    Companions,
}

impl Text {
    pub fn source(self) -> &'static str {
        match self {
            Text::Vmaf => SOURCE,
            Text::Companions => super::companion_plan::SOURCE,
        }
    }

    /// The name in the compiler's log.
    pub fn name(self) -> &'static str {
        match self {
            Text::Vmaf => "vmafgpu.cu",
            Text::Companions => "vmafgpu_companions.cu",
        }
    }
}

/// `VifArgs` in kernels/vif.cu.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct VifArgs {
    pub w: i32,
    pub h: i32,
    pub mu_round: u32,
    pub mu_shift: i32,
    pub sq_round: u64,
    pub sq_shift: i32,
    pub pad0: i32,
    pub egl: f64,
}

/// `AdmArgs` in kernels/adm.cu.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AdmArgs {
    pub w: i32,
    pub h: i32,
    pub bw: i32,
    pub bh: i32,
    pub vp_round: i32,
    pub vp_shift: i32,
    pub hp_round: i32,
    pub hp_shift: i32,
    pub top: i32,
    pub bottom: i32,
    pub left: i32,
    pub right: i32,
    pub den_add_sq: u32,
    pub den_shift_sq: i32,
    pub den_add_cub: u32,
    pub den_shift_cub: i32,
    pub rf: [u32; 3],
    pub cm_sub: [i32; 3],
    pub cm_add_sq: [u32; 3],
    pub cm_shift_sq: [i32; 3],
    pub cm_add_cub: [u32; 3],
    pub cm_shift_cub: [i32; 3],
    pub cos1deg_sq: f32,
    pub pad0: i32,
    pub egl: f64,
}

/// `MotionArgs` in kernels/motion.cu.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MotionArgs {
    pub w: i32,
    pub h: i32,
    pub bpc: i32,
    pub pad0: i32,
}

/// `RangeArgs` in kernels/motion.cu: `n` samples per plane, `mask` = the bits above `bpc`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RangeArgs {
    pub n: u32,
    pub mask: u32,
}

/// `ShiftArgs` in kernels/motion.cu: `n` words of a plane, each shifted down by `shift`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShiftArgs {
    pub n: u32,
    pub shift: u32,
}

/// `FinalizeEntry` in kernels/adm.cu: one accumulator = sum over rows `begin..end` of
/// `(rows[src + r] + add) >> shift`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FinalizeEntry {
    pub src: u32,
    pub begin: u32,
    pub end: u32,
    pub shift: i32,
    pub add: u64,
    pub is_signed: u32,
    pub dst: u32,
}

impl FinalizeEntry {
    /// The entry's bytes as the kernel reads them (for uploads).
    pub fn to_bytes(self) -> [u8; 32] {
        let mut b = [0u8; 32];
        b[0..4].copy_from_slice(&self.src.to_le_bytes());
        b[4..8].copy_from_slice(&self.begin.to_le_bytes());
        b[8..12].copy_from_slice(&self.end.to_le_bytes());
        b[12..16].copy_from_slice(&self.shift.to_le_bytes());
        b[16..24].copy_from_slice(&self.add.to_le_bytes());
        b[24..28].copy_from_slice(&self.is_signed.to_le_bytes());
        b[28..32].copy_from_slice(&self.dst.to_le_bytes());
        b
    }
}

/// Raw bytes of a `#[repr(C)]` argument struct, for executors that copy arguments as bytes.
pub fn struct_bytes<T: Copy>(v: &T) -> Vec<u8> {
    // SAFETY: T is one of the plain-old-data #[repr(C)] structs above (integers and floats,
    // padding fields explicit and initialised), so all size_of::<T>() bytes are initialised.
    unsafe { std::slice::from_raw_parts(v as *const T as *const u8, std::mem::size_of::<T>()) }
        .to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn vif_args_layout() {
        assert_eq!(size_of::<VifArgs>(), 40);
        assert_eq!(offset_of!(VifArgs, mu_round), 8);
        assert_eq!(offset_of!(VifArgs, sq_round), 16);
        assert_eq!(offset_of!(VifArgs, sq_shift), 24);
        assert_eq!(offset_of!(VifArgs, egl), 32);
    }

    #[test]
    fn adm_args_layout() {
        assert_eq!(size_of::<AdmArgs>(), 152);
        assert_eq!(offset_of!(AdmArgs, top), 32);
        assert_eq!(offset_of!(AdmArgs, den_add_sq), 48);
        assert_eq!(offset_of!(AdmArgs, rf), 64);
        assert_eq!(offset_of!(AdmArgs, cm_sub), 76);
        assert_eq!(offset_of!(AdmArgs, cm_shift_cub), 124);
        assert_eq!(offset_of!(AdmArgs, cos1deg_sq), 136);
        assert_eq!(offset_of!(AdmArgs, egl), 144);
    }

    #[test]
    fn small_args_layout() {
        assert_eq!(size_of::<MotionArgs>(), 16);
        assert_eq!(size_of::<RangeArgs>(), 8);
        assert_eq!(offset_of!(RangeArgs, mask), 4);
        assert_eq!(size_of::<ShiftArgs>(), 8);
        assert_eq!(offset_of!(ShiftArgs, shift), 4);
        assert_eq!(size_of::<FinalizeEntry>(), 32);
        assert_eq!(offset_of!(FinalizeEntry, add), 16);
        assert_eq!(offset_of!(FinalizeEntry, dst), 28);
        let e = FinalizeEntry {
            src: 1,
            begin: 2,
            end: 3,
            shift: 4,
            add: 5,
            is_signed: 6,
            dst: 7,
        };
        assert_eq!(e.to_bytes().to_vec(), struct_bytes(&e));
    }

    #[test]
    fn source_has_every_entry_point() {
        for k in super::super::plan::VmafKernel::ALL {
            let needle = format!("{}(", k.name());
            assert!(SOURCE.contains(&needle), "kernel {} missing", k.name());
        }
        // The one text must stay free of CUDA-only warp intrinsics (HIP has 64-wide waves).
        for banned in [
            "__shfl",
            "warpSize",
            "0xffffffff",
            "__activemask",
            "#include",
        ] {
            assert!(!SOURCE.contains(banned), "kernel text uses {banned}");
        }
    }
}
