#!/usr/bin/env bash
# Issue 13 on the GPU machine (session 25): the margins of the kernel bars and of 1m merged.
# Parts:
#   tables   1m merged's size tier again, finer bins against its three (padding against chains):
#            scripts/subwarp_small_bins.py
#   copies   the host's copy paths for 2.2 MB, six copies from 1..4 threads among them
#            (scripts/host_copy_probe.py)
#   every28  the check every 28 steps in the 640, 896 and 1,024 bins against their own 24, one
#            run per length (cuda-subwarp-regcap[...,exp_every=28] beside cuda-subwarp)
#   graph    what a CUDA graph could take off a small call's host path: 10s and 1m merged replayed
#            from a captured graph against the plain call (scripts/subwarp_graph_probe.py)
#   abgraph  a small call's graphs against none (graph_from=0,1024) in one process, 1m and 10s
#            merged (scripts/subwarp_side_bins.py)
#   pytest   the CUDA sub-warp GPU tests
#   merged   the tool: 10s and 1m merged in MERGED (4) processes one after the other
#   peer     the peer suite (hmmbench suite run peer), gpuPairHMM built beside the precompile
# From the repo root there, carrying .device and .data (and .peers for peer):
#   source .device/env.sh && bash scripts/device_margins.sh PART...
export HMMBENCH_GPUPAIRHMM="${HMMBENCH_GPUPAIRHMM:-$PWD/.peers/gpuPairHMM}"
source "$(dirname "$0")/device_common.sh" margins "every28" "$@"
subwarp_setup
[[ $parts == *" tables "* ]] && step tables python3 scripts/subwarp_small_bins.py --sets 1m \
    --tables "${TABLES:-p8,p8-192,p8-five,p8-six,p8-fine,p8-quarters}" --passes 15 \
    --bin-profile --json "$out/small-bins-fine.json"
[[ $parts == *" copies "* ]] && step copies python3 scripts/host_copy_probe.py --mb 2.2 \
    --json "$out/host-copy-probe-2mb.json"
if [[ $parts == *" every28 "* ]]; then
    for lc in 640:160 896:200 1024:240; do
        subwarp_against every28- "${lc%:*}" \
            "cuda-subwarp-regcap[hi=${lc%:*},max_regs=${lc#*:},exp_every=28]"
    done
fi
[[ $parts == *" graph "* ]] && step graph python3 scripts/subwarp_graph_probe.py --sets 10s,1m \
    --calls 200 --json "$out/graph-probe.json"
[[ $parts == *" abgraph "* ]] && subwarp_ab graph graph_from=0,1024 1m,10s 10 20 1000
[[ $parts == *" pytest "* ]] && subwarp_pytest
[[ $parts == *" merged "* ]] && subwarp_merged "${MERGED:-4}"
[[ $parts == *" peer "* ]] && step peer python3 -m hmmbench suite run peer --out "$out"
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv 2>&1 | tee -a "$log"
exit "$status"
