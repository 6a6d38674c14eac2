// CIEDE2000: the per-pixel colour difference of libvmaf 3.2.0 libvmaf/src/feature/ciede.c, as
// ported in src/features/ciede.rs (lab, ciede2000, delta_e). Each step keeps the C code's
// float/double types and order of operations. The frame score comes from a double sum of the
// per-pixel floats; libvmaf adds them in row-major order, here each block adds its pixels' values
// in a tree (stride 128, 64, ..., 1) and the host adds the blocks' sums in block order: a
// different order, whose effect on the score is bounded in src/backend/cuda/companion.rs.
//
// Exactness: this kernel calls CUDA's sqrt, sin, sincos, exp, log, cbrt and atan2, which are not
// glibc's (CUDA documents up to 1-2 ulp for these in double, glibc's are nearly always correctly
// rounded). A per-pixel value can therefore differ from the CPU's in its last float bits;
// tests/companion_parity.rs measures the largest difference of the frame score.
//
// The C code's pow calls are the kernel's dearest work (a double pow costs several exp/log), so
// they are replaced by cheaper forms whose error is as far below the float results as pow's own:
//  - pow(c, 1.0 / 3.0) -> cbrt(c): the two differ by the factor c^(1/3 - fl(1/3)), under
//    1e-16 relative for the inputs here (c in (0.0088, 5)); the result is rounded to float.
//  - pow(x, 2.4) -> exp(2.4 * log(x)): relative error under 3e-15 for the x here (0.09 to
//    1.8); the value feeds the XYZ sums and the cube root above, whose result is rounded to
//    float.
//  - pow(x, 7.0) in double and powf(x, 7.0f) -> products in double (ciede_pow7), within 3 ulp
//    of x^7 in double, so powf's float is the correctly rounded x^7 but within 1e-15 of a tie.
// Each can change a float result only where the exact value lies within ~1e-15 relative of a
// float rounding boundary (about one value in 10^7), by one float ulp.
//
//   ciede_pixels(const u16 *ry, const u16 *ru, const u16 *rv, const u16 *dy, const u16 *du,
//                const u16 *dv, int w, int h, int cw, int ch, int fx, int fy, int bpc,
//                double *part)
//       grid ceil(w * h / VG_BLOCK): part[b] = the sum over block b's pixels (row-major index
//       b * VG_BLOCK + t) of dE00 of pixel (x, y), its chroma read at
//       (min(x / fx, cw - 1), min(y / fy, ch - 1)); 0 where both pixels are identical (dE00 is
//       exactly +0 there, see ciede.rs). Luma planes are w x h, chroma cw x ch, compact.
//   ciede_lab_table(CiedeEntry *lab)
//       grid CIEDE_TABLE_LEN / VG_BLOCK: lab[i] = L, a, b of ciede_lab and their chroma
//       ciede_chroma for the 8-bit sample triple y = i >> 16, u = (i >> 8) & 255, v = i & 255
//       (16 bytes an entry, 268 MB in all).
//   ciede_pixels_table(ry, ru, rv, dy, du, dv, w, h, cw, ch, fx, fy, bpc, const CiedeEntry *lab,
//                      double *part)
//       ciede_pixels for 8-bit samples (bpc 8), each pixel's L, a, b and chroma read from the
//       table that ciede_lab_table wrote. The table holds what ciede_lab and ciede_chroma
//       return for the same triple (the same code, fmad off: every operation's result is
//       determined by its operands), so the scores are those of ciede_pixels bit for bit; the
//       two colour conversions a pixel are about half of its work.

#define CIEDE_PI 3.14159265358979323846
// powf(25., 7) and pow(25, 7) (ciede.rs POW_25_7_F32 / _F64).
#define CIEDE_POW_25_7_F32 6103515648.0f
#define CIEDE_POW_25_7_F64 6103515625.0

struct CiedeLab { float l, a, b; };

// x^7 in double by products: x^2, x^4 = (x^2)^2, x^7 = x^4 x^2 x (four roundings).
VG_INLINE double ciede_pow7(double x) {
    const double x2 = x * x;
    const double x4 = x2 * x2;
    return x4 * x2 * x;
}

VG_INLINE float ciede_h_prime(float x, float y) {
    if (x == 0.0f && y == 0.0f) return 0.0f;
    float hue = (float)atan2((double)x, (double)y);
    if (hue < 0.0f) hue = (float)((double)hue + 2.0 * CIEDE_PI);
    return hue;
}

VG_INLINE float ciede_delta_h_prime(float c1, float c2, float h1, float h2) {
    if (c1 == 0.0f || c2 == 0.0f) return 0.0f;
    if ((double)fabsf(h1 - h2) <= CIEDE_PI) return h2 - h1;
    if (h2 <= h1) return (float)((double)(h2 - h1) + 2.0 * CIEDE_PI);
    return (float)((double)(h2 - h1) - 2.0 * CIEDE_PI);
}

VG_INLINE float ciede_upcase_h_bar_prime(float h1, float h2) {
    if (fabs((double)(h1 - h2)) > CIEDE_PI) return (float)(((double)(h1 + h2) + 2.0 * CIEDE_PI) / 2.0);
    return (float)((double)(h1 + h2) / 2.0);
}

// T from one sincos: cos(2h), cos(3h), cos(4h) and their sines by the angle-sum identities, each
// cos(k h + phi) as cos(k h) cos(phi) - sin(k h) sin(phi) with the constants' cos and sin in
// double (pi/6: 30 degrees, pi/30: 6 degrees, 7 pi/20: 63 degrees). With glibc's sin and cos,
// this T equals the C code's four-cos T for every float h in [0, 3 pi] (the range of
// ciede_upcase_h_bar_prime; checked exhaustively);
// on the GPU it removes three of CUDA's double cos calls (a tenth of the kernel's work).
VG_INLINE float ciede_upcase_t(float hbp) {
    const double h = (double)hbp;
    double sn, cs;
    sincos(h, &sn, &cs);
    const double c2 = cs * cs - sn * sn, s2 = 2.0 * sn * cs;
    const double c3 = cs * c2 - sn * s2, s3 = sn * c2 + cs * s2;
    const double c4 = c2 * c2 - s2 * s2, s4 = 2.0 * s2 * c2;
    return (float)(1.0 - 0.17 * (cs * 0.86602540378443864676 + sn * 0.5) + 0.24 * c2 +
                   0.32 * (c3 * 0.99452189536827333692 - s3 * 0.10452846326765347140) -
                   0.20 * (c4 * 0.45399049973954679156 + s4 * 0.89100652418836786236));
}

VG_INLINE float ciede_rad_to_deg(float r) { return (float)((double)r * (180.0 / CIEDE_PI)); }
VG_INLINE float ciede_deg_to_rad(float d) { return (float)((double)d * (CIEDE_PI / 180.0)); }

VG_INLINE float ciede_r_sub_t(float c_bar_prime, float upcase_h_bar_prime) {
    const float degrees = (float)(((double)ciede_rad_to_deg(upcase_h_bar_prime) - 275.0) * (1.0 / 25.0));
    const float p7 = (float)ciede_pow7((double)c_bar_prime);  // powf(c_bar_prime, 7)
    // powf(degrees, 2) is degrees * degrees.
    const float e = (float)(60.0 * exp((double)(-(degrees * degrees))));
    return (float)(-2.0 * sqrt((double)(p7 / (p7 + CIEDE_POW_25_7_F32))) * sin((double)ciede_deg_to_rad(e)));
}

VG_INLINE double ciede_sq(float v) { return (double)v * (double)v; }

// C*ab of a colour, the first step of ciede2000() (`c_star_1_ab`, `c_star_2_ab`): a function
// of the colour alone, so the table below holds it too.
VG_INLINE float ciede_chroma(CiedeLab c) { return (float)sqrt(ciede_sq(c.a) + ciede_sq(c.b)); }

// ciede2000() of two colours whose chromas (ciede_chroma) are ch1 and ch2.
VG_INLINE float ciede_2000(CiedeLab c1, CiedeLab c2, float ch1, float ch2) {
    const float k_l = 0.65f, k_c = 1.0f, k_h = 4.0f;
    const float delta_l_prime = c2.l - c1.l;
    const float l_bar = (c1.l + c2.l) / 2.0f;
    const float c_bar = (ch1 + ch2) / 2.0f;
    const double cb7 = ciede_pow7((double)c_bar);  // pow(c_bar, 7)
    const double g = 1.0 - sqrt(cb7 / (cb7 + CIEDE_POW_25_7_F64));
    const float a_prime_1 = (float)((double)c1.a + (double)(c1.a / 2.0f) * g);
    const float a_prime_2 = (float)((double)c2.a + (double)(c2.a / 2.0f) * g);
    const float c_prime_1 = (float)sqrt(ciede_sq(a_prime_1) + ciede_sq(c1.b));
    const float c_prime_2 = (float)sqrt(ciede_sq(a_prime_2) + ciede_sq(c2.b));
    const float c_bar_prime = (c_prime_1 + c_prime_2) / 2.0f;
    const float delta_c_prime = c_prime_2 - c_prime_1;
    const double lb50 = ciede_sq(l_bar - 50.0f);
    const float s_sub_l = (float)(1.0 + (0.015 * lb50) / sqrt(20.0 + lb50));
    const float s_sub_c = (float)(1.0 + 0.045 * (double)c_bar_prime);
    const float h_prime_1 = ciede_h_prime(c1.b, a_prime_1);
    const float h_prime_2 = ciede_h_prime(c2.b, a_prime_2);
    const float delta_h_prime = ciede_delta_h_prime(ch1, ch2, h_prime_1, h_prime_2);
    const float delta_upcase_h_prime =
        (float)(2.0 * sqrt((double)(c_prime_1 * c_prime_2)) * sin((double)delta_h_prime / 2.0));
    const float upcase_h_bar_prime = ciede_upcase_h_bar_prime(h_prime_1, h_prime_2);
    const float upcase_t = ciede_upcase_t(upcase_h_bar_prime);
    const float s_sub_upcase_h = (float)(1.0 + 0.015 * (double)c_bar_prime * (double)upcase_t);
    const float r_sub_t = ciede_r_sub_t(c_bar_prime, upcase_h_bar_prime);
    const float lightness = delta_l_prime / (k_l * s_sub_l);
    const float chroma = delta_c_prime / (k_c * s_sub_c);
    const float hue = delta_upcase_h_prime / (k_h * s_sub_upcase_h);
    return (float)sqrt(ciede_sq(lightness) + ciede_sq(chroma) + ciede_sq(hue) +
                       (double)(r_sub_t * chroma * hue));
}

VG_INLINE double ciede_rgb_to_xyz_map(double c) {
    if (c > 10.0 / 255.0) return exp(2.4 * log((c + 0.055) * (1.0 / 1.055)));  // pow(., 2.4)
    return c * (1.0 / 12.92);
}

VG_INLINE float ciede_xyz_to_lab_map(double c) {
    const double kappa = 24389.0 / 27.0, epsilon = 216.0 / 24389.0;
    if (c > epsilon) return (float)cbrt(c);  // pow(c, 1.0 / 3.0)
    return (float)((kappa * c + 16.0) * (1.0 / 116.0));
}

VG_INLINE CiedeLab ciede_lab(vg_u32 yv, vg_u32 uv, vg_u32 vv, int bpc) {
    const double scale = (double)(1u << (bpc - 8));
    const double y = ((double)yv - 16.0 * scale) * (1.0 / (219.0 * scale));
    const double u = ((double)uv - 128.0 * scale) * (1.0 / (224.0 * scale));
    const double v = ((double)vv - 128.0 * scale) * (1.0 / (224.0 * scale));
    const double r = ciede_rgb_to_xyz_map(y + 1.28033 * v);
    const double g = ciede_rgb_to_xyz_map(y - 0.21482 * u - 0.38059 * v);
    const double b = ciede_rgb_to_xyz_map(y + 2.12798 * u);
    const double x = r * 0.4124564390896921 + g * 0.357576077643909 + b * 0.18043748326639894;
    const double yy = r * 0.21267285140562248 + g * 0.715152155287818 + b * 0.07217499330655958;
    const double z = r * 0.019333895582329317 + g * 0.119192025881303 + b * 0.9503040785363677;
    const double lx = (double)ciede_xyz_to_lab_map(x * (1.0 / 0.95047));
    const double ly = (double)ciede_xyz_to_lab_map(yy);
    const double lz = (double)ciede_xyz_to_lab_map(z * (1.0 / 1.08883));
    CiedeLab o;
    o.l = (float)((116.0 * ly) - 16.0);
    o.a = (float)(500.0 * (lx - ly));
    o.b = (float)(200.0 * (ly - lz));
    return o;
}

// The 8-bit colour-conversion table: 2^24 entries of 4 floats (L, a, b and the chroma
// ciede_chroma), 16-byte aligned, so that a pixel side's entry is one 16-byte load.
#define CIEDE_TABLE_LEN (1ll << 24)

struct alignas(16) CiedeEntry { float l, a, b, ch; };

extern "C" __global__ void __launch_bounds__(VG_BLOCK) ciede_lab_table(CiedeEntry *__restrict__ lab) {
    const vg_i64 i = (vg_i64)blockIdx.x * VG_BLOCK + vg_tid();
    if (i >= CIEDE_TABLE_LEN) return;
    const CiedeLab o = ciede_lab((vg_u32)(i >> 16), (vg_u32)((i >> 8) & 255), (vg_u32)(i & 255), 8);
    CiedeEntry e;
    e.l = o.l;
    e.a = o.a;
    e.b = o.b;
    e.ch = ciede_chroma(o);
    lab[i] = e;
}

// ciede_pixels and ciede_pixels_table: TABLE reads the colour conversions from `lab` (8-bit
// samples only), else computes them.
template <bool TABLE>
VG_INLINE void ciede_pixels_body(const vg_u16 *__restrict__ ry, const vg_u16 *__restrict__ ru,
                                 const vg_u16 *__restrict__ rv, const vg_u16 *__restrict__ dy,
                                 const vg_u16 *__restrict__ du, const vg_u16 *__restrict__ dv,
                                 int w, int h, int cw, int ch, int fx, int fy, int bpc,
                                 const CiedeEntry *__restrict__ lab, double *__restrict__ part) {
    __shared__ double red[VG_BLOCK];
    const vg_i64 i = (vg_i64)blockIdx.x * VG_BLOCK + vg_tid();
    double de = 0.0;
    if (i < (vg_i64)w * h) {
        const int x = (int)(i % w), y = (int)(i / w);
        int cx = x / fx, cy = y / fy;
        if (cx > cw - 1) cx = cw - 1;
        if (cy > ch - 1) cy = ch - 1;
        const vg_i64 ci = (vg_i64)cy * cw + cx;
        const vg_u32 a0 = ry[i], a1 = ru[ci], a2 = rv[ci];
        const vg_u32 b0 = dy[i], b1 = du[ci], b2 = dv[ci];
        if (a0 != b0 || a1 != b1 || a2 != b2) {
            if (TABLE) {
                const CiedeEntry ea = lab[(a0 << 16) | (a1 << 8) | a2];
                const CiedeEntry eb = lab[(b0 << 16) | (b1 << 8) | b2];
                const CiedeLab la = {ea.l, ea.a, ea.b}, lb = {eb.l, eb.a, eb.b};
                de = (double)ciede_2000(la, lb, ea.ch, eb.ch);
            } else {
                const CiedeLab la = ciede_lab(a0, a1, a2, bpc), lb = ciede_lab(b0, b1, b2, bpc);
                de = (double)ciede_2000(la, lb, ciede_chroma(la), ciede_chroma(lb));
            }
        }
    }
    const double total = vg_block_sum(de, red);
    if (vg_tid() == 0) part[blockIdx.x] = total;
}

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
ciede_pixels(const vg_u16 *__restrict__ ry, const vg_u16 *__restrict__ ru,
             const vg_u16 *__restrict__ rv, const vg_u16 *__restrict__ dy,
             const vg_u16 *__restrict__ du, const vg_u16 *__restrict__ dv, int w, int h, int cw,
             int ch, int fx, int fy, int bpc, double *__restrict__ part) {
    ciede_pixels_body<false>(ry, ru, rv, dy, du, dv, w, h, cw, ch, fx, fy, bpc, 0, part);
}

extern "C" __global__ void __launch_bounds__(VG_BLOCK)
ciede_pixels_table(const vg_u16 *__restrict__ ry, const vg_u16 *__restrict__ ru,
                   const vg_u16 *__restrict__ rv, const vg_u16 *__restrict__ dy,
                   const vg_u16 *__restrict__ du, const vg_u16 *__restrict__ dv, int w, int h,
                   int cw, int ch, int fx, int fy, int bpc, const CiedeEntry *__restrict__ lab,
                   double *__restrict__ part) {
    ciede_pixels_body<true>(ry, ru, rv, dy, du, dv, w, h, cw, ch, fx, fy, bpc, lab, part);
}
