#!/usr/bin/env bash
# Issue 13 points 3 and 4 on the GPU machine (session 22): the part-empty last rounds of a call's
# kernels. Parts:
#   chain    a small call's recompute queues each right after its one bin against after every
#            bin (--setting chain_queues=1,0) on 1m merged and 10s
#   alt      odd chunks' bins on streams of their own against one stream per bin
#            (--setting alternate_bin_streams=1,0) on the peer suite's multi-chunk sets and
#            chunks@5e6
#   pairs    one work item per pair against one per read (--setting per_pair_below=A,B) on
#            the peer suite's sets of 256..1,024: a read's items four times finer in the last
#            round, its set-up paid per pair
#   (split, split2: a bin alone in its chunk on a grid the GPU holds at once, its last round
#   shared out, SW_SPLIT_TAIL; run at be390e7 and reverted, docs/subwarp-notes.md)
#   medium   10s and 1m merged through the tool, in five processes
#   pytest   the CUDA sub-warp tests
#   peer     gpuPairHMM's build, then the peer suite (hmmbench suite run peer)
# From the repo root there, carrying .device, .data and (peer) .peers:
#   source .device/env.sh && bash scripts/device_tails.sh PART...
export HMMBENCH_GPUPAIRHMM="${HMMBENCH_GPUPAIRHMM:-$PWD/.peers/gpuPairHMM}"
source "$(dirname "$0")/device_common.sh" tails "chain alt pairs" "$@"
subwarp_setup
[[ $parts == *" chain "* ]] && subwarp_ab chain-queues chain_queues=1,0 1m,10s 10 20 1000
[[ $parts == *" alt "* ]] && subwarp_ab alternate-streams alternate_bin_streams=1,0 \
    equal-32@4000000,equal-64@1953125,equal-128@488281,equal-256@488281,chunks@5000000 3 2 100
[[ $parts == *" pairs "* ]] && subwarp_ab pair-items per_pair_below=1048576,65536 \
    equal-256@488281,equal-384@262144,equal-512@262144,equal-640@262144,equal-768@262144,equal-896@262144,equal-1024@262144 \
    3 2 100
[[ $parts == *" medium "* ]] && subwarp_merged 5
[[ $parts == *" pytest "* ]] && subwarp_pytest
[[ $parts == *" peer "* ]] && step peer python3 -m hmmbench suite run peer --out "$out"
exit $status
