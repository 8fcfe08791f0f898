#!/usr/bin/env bash
# Issue 17 on the GPU machine: the parameter axes and the compare gate on real hardware.
#  1. cuda-inter swept over tile x block on 1m merged (8 variants; tile8/block128 is the alias
#     cuda-inter-tile8), and the sub-warp p x k axes on equal-256@1e6;
#  2. the same cuda-inter sweep twice more (a and b): `hmmbench compare a b` must say ok or
#     noisy for every row (same code, same GPU), never slower;
#  3. the HTML page and the pivots of the sweep.
# Result JSON, pages and logs under $OUT.
#
# Before the call, on the dev machine, from the repo root (the folders are git-ignored, carry them):
#   mkdir -p .device .data && cp -r ../shared/device/. .device/ && cp -r ../shared/data/pairhmm .data/
# On the device, from the repo root:
#   source .device/env.sh && bash scripts/device_axes.sh
set -uo pipefail
export HMMBENCH_DATA_PATH="${HMMBENCH_DATA_PATH:-$PWD/.data/pairhmm}"
export PYTHONUNBUFFERED=1
out="${OUT:-results/runs/axes}"
mkdir -p "$out"
log="$out/axes.log"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv \
    2>&1 | tee -a "$log"
status=0
run() { echo "+ hmmbench $*" | tee -a "$log"; python3 -m hmmbench "$@" 2>&1 | tee -a "$log";
        local rc=${PIPESTATUS[0]}; [[ $rc == 0 ]] || status=$rc; return $rc; }

run run -d 1m --chunking merged -b cuda-inter --axis tile=2,4,6,8 --axis block=64,128 \
    --max-time 5 --json "$out/inter-axes.json" -q
run run -d equal-256@1e6 -b cuda-subwarp-fixed --axis p=4,8,16 --axis k=8,16 \
    --max-time 5 --json "$out/subwarp-axes.json" -q
for tag in a b; do
    run run -d 1m --chunking merged -b cuda-inter --axis tile=4,8 --max-time 5 \
        --json "$out/gate-$tag.json" -q
done
# exit 1 here would be a false regression on identical code: record it, keep going
run compare "$out/gate-a.json" "$out/gate-b.json" --max-slowdown 5
run report "$out/inter-axes.json" --pivot gcups_kernel --by tile
run report "$out/inter-axes.json" --pivot gcups_kernel --by block
run report "$out/subwarp-axes.json" --pivot gcups_kernel --by k
run report "$out"/inter-axes.json "$out"/subwarp-axes.json --html "$out/axes.html" --quiet
echo "status $status" | tee -a "$log"
exit $status
