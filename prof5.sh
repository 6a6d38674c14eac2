#!/usr/bin/env bash
# Untracked: ncu pipe utilisation of the companion kernels.
set -uo pipefail
source .gstbundle/env.sh
export VMAFGPU_REQUIRE_GPU=1 VMAFGPU_COMPANION_GRAPHS=0
L=$OUT/logs; mkdir -p $L
NCU=$(which ncu || ls /usr/local/cuda/bin/ncu)
K='regex:^(ssim|ciede|hvs|psnr|widen|split)'
M=gpu__time_duration.sum,sm__inst_executed.sum,sm__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__grid_size
for p in fp64 fma alu xu lsu fp16 fmaheavy adu cbu uniform; do M=$M,sm__inst_executed_pipe_$p.avg.pct_of_peak_sustained_active; done
for p in fp64 fma alu xu shared fmaheavy; do M=$M,sm__pipe_${p}_cycles_active.avg.pct_of_peak_sustained_active; done
M=$M,l1tex__throughput.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed
timeout 250 $NCU --metrics $M -k "$K" --launch-skip 60 --launch-count 90 --csv .gstbundle/bin/bench_gpu --all-metrics 1920x1080:8:10 > $L/ncu.csv 2> $L/ncu.err
echo "rc $?" >> $L/ncu.err

