#!/usr/bin/env bash
# The whole test suite, as CI runs it (after scripts/install-deps.sh):
# test data, formatting, clippy on every feature set, then every test.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n=== %s\n' "$*"; }

step "test data (scripts/fetch-test-data.sh)"
scripts/fetch-test-data.sh

step "cargo fmt --check"
cargo fmt --all -- --check

for features in "" "--all-features" "--no-default-features" "--no-default-features --features hip"; do
  step "cargo clippy --all-targets ${features:-(default features)}"
  cargo clippy --all-targets $features -- -D warnings
done

step "cargo doc (broken or private intra-doc links are errors)"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --all-features

step "CUDA kernels compile with NVRTC (scripts/check-kernels.sh: NVRTC from its PyPI wheel)"
scripts/check-kernels.sh

# --no-fail-fast: run every test binary and list every failure, not only the first binary's.
step "cargo test"
# install-deps.sh installs python3-gi: in CI the Python example (tests/python_example.rs) must run
if [ "${CI:-}" = true ]; then export VMAFGPU_REQUIRE_PYTHON=1; fi
cargo test --no-fail-fast

# After the existing steps: needs hipcc and libamdhip64 (scripts/install-deps.sh), no AMD GPU.
step "HIP: kernels compile with hipcc and hipRTC (gfx90a, gfx1030); HIP backend tests (scripts/check-kernels-hip.sh)"
scripts/check-kernels-hip.sh
