use std::arch::x86_64::*;

/// `out[j] = inp[2 * j]` for the whole blocks of 16 outputs; returns the count written.
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn decimate_row_u16(out: &mut [u16], inp: &[u16]) -> usize {
    let blocks = (out.len() / 16).min(inp.len() / 32);
    let low = _mm256_set1_epi32(0xFFFF);
    for b in 0..blocks {
        let src = inp[32 * b..32 * b + 32].as_ptr();
        let dst = out[16 * b..16 * b + 16].as_mut_ptr();
        // SAFETY: 32 samples are read at src, 16 written at dst, both in bounds (sliced
        // above); unaligned loads and stores.
        unsafe {
            let x = _mm256_and_si256(_mm256_loadu_si256(src as *const __m256i), low);
            let y = _mm256_and_si256(_mm256_loadu_si256(src.add(16) as *const __m256i), low);
            // The even samples, zero-extended to 32 bits, packed back (no saturation: all
            // fit 16 bits), then the 64-bit lanes put back in order.
            let p = _mm256_permute4x64_epi64::<0xD8>(_mm256_packus_epi32(x, y));
            _mm256_storeu_si256(dst as *mut __m256i, p);
        }
    }
    blocks * 16
}

/// `out[j] = inp[2 * j]` for the whole blocks of 32 outputs; returns the count written.
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn decimate_row_u8(out: &mut [u8], inp: &[u8]) -> usize {
    let blocks = (out.len() / 32).min(inp.len() / 64);
    let low = _mm256_set1_epi16(0xFF);
    for b in 0..blocks {
        let src = inp[64 * b..64 * b + 64].as_ptr();
        let dst = out[32 * b..32 * b + 32].as_mut_ptr();
        // SAFETY: as in decimate_row_u16, 64 bytes read and 32 written in bounds.
        unsafe {
            let x = _mm256_and_si256(_mm256_loadu_si256(src as *const __m256i), low);
            let y = _mm256_and_si256(_mm256_loadu_si256(src.add(32) as *const __m256i), low);
            let p = _mm256_permute4x64_epi64::<0xD8>(_mm256_packus_epi16(x, y));
            _mm256_storeu_si256(dst as *mut __m256i, p);
        }
    }
    blocks * 32
}
