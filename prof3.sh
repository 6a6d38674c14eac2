#!/usr/bin/env bash
set -uo pipefail
source .gstbundle/env.sh
export VMAFGPU_REQUIRE_GPU=1
L=$OUT/logs; mkdir -p $L
NCU=$(which ncu || ls /usr/local/cuda/bin/ncu)
K='regex:^(ssim|ciede|hvs|psnr|widen|split|motion|vif|adm)'
VMAFGPU_COMPANION_GRAPHS=0 timeout 300 $NCU --metrics gpu__time_duration.sum,launch__registers_per_thread,launch__grid_size,sm__warps_active.avg.pct_of_peak_sustained_active,sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum -k "$K" --launch-skip 200 --launch-count 80 --csv .gstbundle/bin/bench_gpu --all-metrics 1920x1080:8:12 > $L/ncu.csv 2>&1
tar czf $OUT/logs.tgz -C $OUT logs && rm -rf $L
