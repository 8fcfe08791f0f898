#!/usr/bin/env bash
# The papers' studies on the GPU machine: the device set-up, then `hmmbench suite run` (the suites
# are data, hmmbench/suites/catalog.py; `python3 -m hmmbench suite list` names them and
# `... suite run NAME --dry-run` prints their hmmbench run commands). Each step writes its result
# JSON into $OUT (copied afterwards to results/<gpu>/). Usage, from the repo root there:
#   source .device/env.sh && bash scripts/device_studies.sh SUITE[,SUITE...]
# with .device and .data (a git-ignored copy of ../shared/data/pairhmm) carried along.
# Suites: tiles, table3, smallcount, chunking, apis (then the OpenCL/CUDA ratio table), peak,
# peak-variants, e2e, profile (= profile-curve, profile-proteome, profile-peers, profile-task).
set -uo pipefail
export HMMBENCH_DATA_PATH="${HMMBENCH_DATA_PATH:-$PWD/.data/pairhmm}"
export PYTHONUNBUFFERED=1
out="${OUT:-results/runs}"
mkdir -p "$out"
log="$out/studies.log"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv >>"$log" 2>&1
python3 -m hmmbench suite run ${1//,/ } --out "$out" 2>&1 | tee -a "$log"
status=${PIPESTATUS[0]}
if [[ ",$1," == *,apis,* ]]; then
    python3 scripts/api_ratios.py "$out"/apis-{original,merged,128x256}.json 2>&1 | tee -a "$log"
fi
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv >>"$log" 2>&1
exit "$status"
