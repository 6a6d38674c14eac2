#!/bin/bash
# Score a manifest of pairs as a Slurm job array, one GPU per task: task I of N runs
# `vmafgpu batch --shard I/N` (the manifest's pairs I, I+N, I+2N, ...), so a requeued task redoes
# exactly its own pairs (--resume skips the reports already written). Submit it, then join the
# shards' summaries once every task has ended:
#
#   jobid=$(sbatch --parsable deploy/slurm-array.sh manifest.csv out)
#   sbatch --dependency=afterany:$jobid --wrap 'vmafgpu merge --output-dir out out/summary.shard-*-of-8.json'
#
# Keep --array's size and the N of --shard equal (SLURM_ARRAY_TASK_COUNT is that size).
#SBATCH --job-name=vmafgpu
#SBATCH --array=0-7
#SBATCH --gres=gpu:1
#SBATCH --cpus-per-task=8
#SBATCH --output=vmafgpu-%A-%a.log
set -euo pipefail
manifest=${1:?usage: sbatch slurm-array.sh MANIFEST OUTPUT_DIR}
out=${2:?usage: sbatch slurm-array.sh MANIFEST OUTPUT_DIR}
exec vmafgpu batch "$manifest" --output-dir "$out" \
  --shard "${SLURM_ARRAY_TASK_ID}/${SLURM_ARRAY_TASK_COUNT}" \
  --devices all --jobs 2 --resume --backend cuda --threads "${SLURM_CPUS_PER_TASK:-0}"
