/// Pixels of a 15360x8640 frame (the largest frame the bounds are written for).
pub const PIXELS_16K: i64 = 15360 * 8640;
/// Upper bound of `sigma1_sq`, `sigma2_sq` (Q16 variances normalised to 8 bits): a variance
/// of samples in `0..=M` is at most `M^2 / 4`, which is below 2^30 in these units at every
/// depth and scale (`65536 * 255^2 / 4` for 8-bit scale 0, `65535^2 / 4` elsewhere); the
/// fixed-point rounding adds a few units, far below the 2^20 margin.
pub const SIGMA_SQ_MAX: i64 = (1 << 30) + (1 << 20);
/// Upper bound of one `accum_den_log` term: `log2_32(2^17 + SIGMA_SQ_MAX) - 2048 * 17`
/// (`log2_32` is non-decreasing).
pub const DEN_LOG_PER_PIXEL: i64 = 26_627;
/// Upper bound of one `accum_num_log` term. The gain is limited to `g <= 100`, so
/// `g^2 sigma1_sq <= 10^4 * SIGMA_SQ_MAX < 2^44` and the numerator is below 2^45: its
/// `log2_64` is at most `32768 + 2048 * 29` (table maximum, shift 29); the denominator's
/// is at least `2048 * 17`.
pub const NUM_LOG_PER_PIXEL: i64 = 32768 + 2048 * 29 - 2048 * 17;
