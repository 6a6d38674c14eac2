// The companion kernels' names and C signatures ('p' a device pointer, 'i' an int, 'f' a
// float, in argument order), as src/backend/gpu/launch.rs checks them, for the HIP runtime
// emulator (tests/hipemu/fake_hip.cpp: its hipRTC checks the text has every kernel, its
// hipModuleLaunchKernel reads each argument with its type). Kept equal to the dispatch in
// companion_kernels.h; tests/hip_backend.rs checks it against launch::Kernel::ALL.
#pragma once

struct CompanionSignature { const char *name, *args; };
static const CompanionSignature COMPANION_KERNELS[] = {
    {"psnr_sse", "ppip"},
    {"ssim_load", "piiiifiip"},
    {"ssim_decimate_lpf", "piiiip"},
    {"ssim_hconv", "ppiip"},
    {"ssim_terms", "piifffpppp"},
    {"ssim_terms_cs", "piiffppp"},
    {"psnr_hvs_blocks", "ppiippp"},
    {"widen_u8", "pip"},
    {"split_uv_u8", "pipp"},
    {"split_uv_u16", "pipp"},
    {"hvs_chunk_sums", "pip"},
    {"hvs_prefix", "pip"},
    {"hvs_chunk_bands", "pip"},
    {"hvs_seq", "ppippippip"},
    {"ciede_pixels", "ppppppiiiiiiip"},
    {"ciede_lab_table", "p"},
    {"ciede_pixels_table", "ppppppiiiiiiipp"},
    {"cambi_pre", "piippiip"},
    {"cambi_dither", "piip"},
    {"cambi_mode", "piiip"},
    {"cambi_mask", "piiiip"},
    {"cambi_cvalues", "ppiiiiiiiipppp"},
    {"cambi_cvalues_tiled", "ppiiiiiiiipppp"},
    {"speed_load", "piip"},
    {"speed_load_diff", "ppiip"},
    {"speed_prescale", "piiiiiippppp"},
    {"speed_filter_v", "piipipipp"},
    {"speed_filter_h", "piipiipp"},
    {"speed_local_mean", "piiipp"},
    {"speed_means", "piiiip"},
    {"speed_cov", "piiiipp"},
};
static const int NCOMPANION = sizeof COMPANION_KERNELS / sizeof COMPANION_KERNELS[0];
