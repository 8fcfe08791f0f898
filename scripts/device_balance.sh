#!/usr/bin/env bash
# Issue 13 point 3 on the GPU machine (session 20): the cascade's first float32 kernel keeping
# sums down to 1e-33 (f32_floors). Parts:
#   pytest   the CUDA sub-warp tests
#   ab       the low floor against 1e-28 in the same process, alternating rounds
#            (scripts/subwarp_side_bins.py --setting low_floor=1,0) on the peer suite's 4x sets
#            of 448 and 512. (Commit 9409ff2's run also had share_last_round, the last round of
#            equal work items shared among groups: no faster, dropped; docs/subwarp-notes.md.)
#   ab2      the exponent check every 24 steps against 16 (--setting exp_every=16,24) at 640..1,024;
#            through the tool on the 4x sets, 384 at 3 blocks (no exponents there since session
#            19) and 640 under other register caps, each beside cuda-subwarp
#   peer     gpuPairHMM's build, then the peer suite (hmmbench suite run peer)
# From the repo root there, carrying .device, .data and (peer) .peers:
#   source .device/env.sh && bash scripts/device_balance.sh PART...
export HMMBENCH_GPUPAIRHMM="${HMMBENCH_GPUPAIRHMM:-$PWD/.peers/gpuPairHMM}"
source "$(dirname "$0")/device_common.sh" balance "pytest ab" "$@"
subwarp_setup
[[ $parts == *" pytest "* ]] && subwarp_pytest
if [[ $parts == *" ab "* ]]; then
    subwarp_ab low_floor low_floor=1,0 equal-448@262144,equal-512@262144 3 2 100
fi
if [[ $parts == *" ab2 "* ]]; then
    subwarp_ab exp-every exp_every=16,24 \
        equal-640@262144,equal-768@262144,equal-896@262144,equal-1024@262144 3 2 100
    step shapes python3 -m hmmbench run -d equal-384@262144 -b cuda-subwarp \
        -b 'cuda-subwarp-shape[hi=384,p=16,k=24,min_blocks=3]' --chunking merged --repeat 5 \
        --sample-pairs 100 --json "$out/subwarp-lowfloor-shape384.json"
    step caps640 python3 -m hmmbench run -d equal-640@262144 -b cuda-subwarp \
        -b 'cuda-subwarp-regcap[hi=640,max_regs=152]' \
        -b 'cuda-subwarp-regcap[hi=640,max_regs=168]' --chunking merged --repeat 5 --sample-pairs 100 --json "$out/subwarp-lowfloor-caps640.json"
fi
[[ $parts == *" peer "* ]] && step peer python3 -m hmmbench suite run peer --out "$out"
exit $status
