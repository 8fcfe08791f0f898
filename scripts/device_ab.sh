#!/usr/bin/env bash
# Issue 13 on the GPU machine (session 12): A/B probes of cuda-subwarp's settings in one process
# each (scripts/subwarp_side_bins.py: alternating rounds, medians with min and max, the results
# of both settings compared, --check: sampled pairs against the float64 reference). Parts:
#   staging  chunks@5e6: a chunk's sequence arrays staged as one task each or in 4 equal pieces
#            (stage_pieces 1 / 4: the largest task bounds a chunk's staging wall)
#   small    10s and 1m: 1m (29,307 pairs) on the full path or on the small call's path
#            (small_below 8,192 / 65,536)
#   every    equal-512/896/1024: the exponents' check every 16 or 24 steps (exp_every 4 / 6)
#   pytest   the CUDA sub-warp tests
# From the repo root there, carrying .device and .data:
#   source .device/env.sh && bash scripts/device_ab.sh PART...
source "$(dirname "$0")/device_common.sh" ab "staging small every" "$@"
step() {  # NAME COMMAND...: run it, log it, keep its status
    local name=$1
    shift
    echo "== $name: $*" | tee -a "$log"
    "$@" 2>&1 | tee -a "$log"
    [[ ${PIPESTATUS[0]} == 0 ]] || status=1
}
ab=(python3 scripts/subwarp_side_bins.py)
[[ $parts == *" every "* ]] && step every "${ab[@]}" \
    --sets equal-512@65536,equal-896@65536,equal-1024@65536 --setting exp_every=4,6 \
    --rounds 4 --calls 3 --check 200 --json "$out/ab-exp-every.json"
[[ $parts == *" staging "* ]] && step staging "${ab[@]}" --sets chunks@5000000 \
    --setting stage_pieces=1,4 --rounds 4 --calls 3 --check 300 --json "$out/ab-stage-pieces.json"
[[ $parts == *" small "* ]] && step small "${ab[@]}" --sets 10s,1m \
    --setting small_below=8192,65536 --rounds 10 --calls 20 --check 500 \
    --json "$out/ab-small-below.json"
if [[ $parts == *" pytest "* ]]; then
    python3 -m pytest -q -p no:cacheprovider tests/test_cuda_subwarp.py 2>&1 | tail -15 \
        | tee "$out/pytest.txt" | tee -a "$log"
    [[ ${PIPESTATUS[0]} == 0 ]] || status=1
fi
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv 2>&1 | tee -a "$log"
exit "$status"
