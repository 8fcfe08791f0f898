#!/usr/bin/env bash
# Issue 13 point 4 on the GPU machine (session 17): 1m merged, one call of 29,307 pairs. Parts:
#   small     the small call's path (small_below 65,536: one stream, five events, one copy back,
#             the full path's three layout launches from MANY_ITEMS items) against the
#             full path (small_below 8,192): scripts/subwarp_side_bins.py
#   queues    a small call's recompute queues side by side (side_queues_from 1,024) against one
#             after the other on its main stream (10s and 1m merged)
#   items     1m merged as one work item per read (per_pair_below 16,384) against one per pair
#             (65,536): the per-read setup shared by a read's haplotypes, against 4x the groups
#   hostprof  (session 18) a cProfile of 200 warm calls of 1m merged and of 10s (real driver)
#   tables    the size tier's bins again with the 5-op kernels and their register caps (padding
#             against launches), each with its per-bin profile: scripts/subwarp_small_bins.py
#   timeline  where a full-path 1m call's wall goes (host rows, GPU spans)
#   pytest    tests/test_cuda_subwarp.py
#   merged    the tool: 10s and 1m merged, in two processes one after the other (hmmbench run's
#             warm-up: 0.2 s of untimed repeats)
#   regions   the tool: 1m's 110 region calls, 16 in flight, cuda-subwarp-batched
# From the repo root there, carrying .device and .data:
#   source .device/env.sh && bash scripts/device_medium.sh PART...
# (The A/Bs of code not kept -- session 17's stream_one, split_staging_from, count_beside_from,
# session 18's ints_first_from and count_first, and count_grids, the bin grids from a count made
# before the start, the way before session 18 -- ran from uncommitted trees with
# `ab NAME SETTING SETS`: docs/subwarp-notes.md.)
source "$(dirname "$0")/device_common.sh" medium "small queues pytest merged regions" "$@"
subwarp_precompile cuda-subwarp
ab() {  # NAME SETTING [SETS]: two values of a backend attribute, alternating rounds
    step "$1" python3 scripts/subwarp_side_bins.py --sets "${3:-1m}" --setting "$2" --rounds 10 \
        --calls 20 --check 1000 --json "$out/ab-$1.json"
}
[[ $parts == *" small "* ]] && ab small-below small_below=8192,65536
[[ $parts == *" queues "* ]] && ab side-queues side_queues_from=1099511627776,1024 10s,1m
[[ $parts == *" items "* ]] && ab per-read per_pair_below=65536,16384
[[ $parts == *" hostprof "* ]] && step hostprof python3 scripts/subwarp_call_profile.py \
    --sets 1m,10s --json "$out/call-profile.json"
[[ $parts == *" tables "* ]] && step tables python3 scripts/subwarp_small_bins.py --sets 1m \
    --tables "${TABLES:-p8,p8-caps,p8-fine,p8-fine-caps,p8-quarters,p16-fine,default}" \
    --passes 15 --bin-profile --json "$out/small-bins-5op.json"
[[ $parts == *" timeline "* ]] && step timeline python3 scripts/subwarp_pipeline_timeline.py \
    --set 1m --fixed small_below=0 --calls 5 --rounds 3 --json "$out/timeline-1m.json"
[[ $parts == *" pytest "* ]] && subwarp_pytest
[[ $parts == *" merged "* ]] && subwarp_merged 2
[[ $parts == *" regions "* ]] && step regions python3 -m hmmbench run -b cuda-subwarp-batched \
    -d 1m --chunking original --in-flight 16 --max-time 3 --json "$out/subwarp-medium-regions.json"
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv 2>&1 | tee -a "$log"
exit "$status"
