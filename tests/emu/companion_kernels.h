// The companion kernels (kernels/psnr.cu, ssim.cu, psnr_hvs.cu, ciede.cu, cambi.cu, speed.cu) by
// name, for the CPU emulators that include that text (tests/emu/companion_emu.cpp,
// tests/hipemu/fake_hip.cpp): the kernel call with its arguments taken from `a` (pointers,
// ints and floats in the kernel's C signature order, as src/backend/gpu/launch.rs checks
// them). An empty function for a name that is not a companion kernel.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

struct ArgV { int kind; void *ptr; int32_t i; float f; };

static std::function<void()> companion_kernel(const std::string &name, const std::vector<ArgV> &a) {
    auto P = [a](int i) { return a[i].ptr; };
    auto I = [a](int i) { return a[i].i; };
    auto F = [a](int i) { return a[i].f; };
    (void)F;
    if (name == "psnr_sse") return [=] { psnr_sse((const vg_u16 *)P(0), (const vg_u16 *)P(1), I(2), (vg_u64 *)P(3)); };
    if (name == "ssim_load") return [=] { ssim_load((const vg_u16 *)P(0), I(1), I(2), I(3), I(4), F(5), I(6), I(7), (float *)P(8)); };
    if (name == "ssim_decimate_lpf") return [=] { ssim_decimate_lpf((const float *)P(0), I(1), I(2), I(3), I(4), (float *)P(5)); };
    if (name == "ssim_hconv") return [=] { ssim_hconv((const float *)P(0), (const float *)P(1), I(2), I(3), (float *)P(4)); };
    if (name == "ssim_terms") return [=] { ssim_terms((const float *)P(0), I(1), I(2), F(3), F(4), F(5), (double *)P(6), (double *)P(7), (float *)P(8), (double *)P(9)); };
    if (name == "ssim_terms_cs") return [=] { ssim_terms_cs((const float *)P(0), I(1), I(2), F(3), F(4), (double *)P(5), (float *)P(6), (double *)P(7)); };
    if (name == "psnr_hvs_blocks") return [=] { psnr_hvs_blocks((const vg_u16 *)P(0), (const vg_u16 *)P(1), I(2), I(3), (const float *)P(4), (const float *)P(5), (float *)P(6)); };
    if (name == "widen_u8") return [=] { widen_u8((const vg_u8 *)P(0), I(1), (vg_u16 *)P(2)); };
    if (name == "split_uv_u8") return [=] { split_uv_u8((const vg_u8 *)P(0), I(1), (vg_u16 *)P(2), (vg_u16 *)P(3)); };
    if (name == "split_uv_u16") return [=] { split_uv_u16((const vg_u16 *)P(0), I(1), (vg_u16 *)P(2), (vg_u16 *)P(3)); };
    if (name == "hvs_chunk_sums") return [=] { hvs_chunk_sums((const float *)P(0), I(1), (double *)P(2)); };
    if (name == "hvs_prefix") return [=] { hvs_prefix((const float *)P(0), I(1), (double *)P(2)); };
    if (name == "hvs_chunk_bands") return [=] { hvs_chunk_bands((const float *)P(0), I(1), (double *)P(2)); };
    if (name == "hvs_seq") return [=] { hvs_seq((const float *)P(0), (const double *)P(1), I(2), (const float *)P(3), (const double *)P(4), I(5), (const float *)P(6), (const double *)P(7), I(8), (float *)P(9)); };
    if (name == "ciede_pixels") return [=] { ciede_pixels((const vg_u16 *)P(0), (const vg_u16 *)P(1), (const vg_u16 *)P(2), (const vg_u16 *)P(3), (const vg_u16 *)P(4), (const vg_u16 *)P(5), I(6), I(7), I(8), I(9), I(10), I(11), I(12), (double *)P(13)); };
    if (name == "ciede_lab_table") return [=] { ciede_lab_table((CiedeEntry *)P(0)); };
    if (name == "ciede_pixels_table") return [=] { ciede_pixels_table((const vg_u16 *)P(0), (const vg_u16 *)P(1), (const vg_u16 *)P(2), (const vg_u16 *)P(3), (const vg_u16 *)P(4), (const vg_u16 *)P(5), I(6), I(7), I(8), I(9), I(10), I(11), I(12), (const CiedeEntry *)P(13), (double *)P(14)); };
    if (name == "cambi_pre") return [=] { cambi_pre((const vg_u16 *)P(0), I(1), I(2), (const vg_u32 *)P(3), (const vg_u32 *)P(4), I(5), I(6), (vg_u16 *)P(7)); };
    if (name == "cambi_dither") return [=] { cambi_dither((const vg_u16 *)P(0), I(1), I(2), (vg_u16 *)P(3)); };
    if (name == "cambi_mode") return [=] { cambi_mode((const vg_u16 *)P(0), I(1), I(2), I(3), (vg_u16 *)P(4)); };
    if (name == "cambi_mask") return [=] { cambi_mask((const vg_u16 *)P(0), I(1), I(2), I(3), I(4), (vg_u8 *)P(5)); };
    if (name == "cambi_cvalues") return [=] { cambi_cvalues((const vg_u16 *)P(0), (const vg_u8 *)P(1), I(2), I(3), I(4), I(5), I(6), I(7), I(8), I(9), (const vg_u32 *)P(10), (const float *)P(11), (float *)P(12), (vg_u64 *)P(13)); };
    if (name == "cambi_cvalues_tiled") return [=] { cambi_cvalues_tiled((const vg_u16 *)P(0), (const vg_u8 *)P(1), I(2), I(3), I(4), I(5), I(6), I(7), I(8), I(9), (const vg_u32 *)P(10), (const float *)P(11), (float *)P(12), (vg_u64 *)P(13)); };
    if (name == "speed_load") return [=] { speed_load((const vg_u16 *)P(0), I(1), I(2), (float *)P(3)); };
    if (name == "speed_load_diff") return [=] { speed_load_diff((const vg_u16 *)P(0), (const vg_u16 *)P(1), I(2), I(3), (float *)P(4)); };
    if (name == "speed_prescale") return [=] { speed_prescale((const float *)P(0), I(1), I(2), I(3), I(4), I(5), I(6), (const int *)P(7), (const float *)P(8), (const int *)P(9), (const float *)P(10), (float *)P(11)); };
    if (name == "speed_filter_v") return [=] { speed_filter_v((const float *)P(0), I(1), I(2), (const float *)P(3), I(4), (const int *)P(5), I(6), (const int *)P(7), (float *)P(8)); };
    if (name == "speed_filter_h") return [=] { speed_filter_h((const float *)P(0), I(1), I(2), (const float *)P(3), I(4), I(5), (const int *)P(6), (float *)P(7)); };
    if (name == "speed_local_mean") return [=] { speed_local_mean((const float *)P(0), I(1), I(2), I(3), (const float *)P(4), (float *)P(5)); };
    if (name == "speed_means") return [=] { speed_means((const float *)P(0), I(1), I(2), I(3), I(4), (float *)P(5)); };
    if (name == "speed_cov") return [=] { speed_cov((const float *)P(0), I(1), I(2), I(3), I(4), (const float *)P(5), (float *)P(6)); };
    return {};
}
