#!/usr/bin/env bash
# Issue 13 point 3 on the GPU machine (session 21): the low floor's read of the insertion
# qualities (each thread its own rows, unrolled) and where the L = 32 kernel's time goes. Parts:
#   ab       the low floor against 1e-28 in one process, alternating rounds, on the peer suite's
#            sets of 256, 384 and 512 (session 20's floor, read by every lane per item, cost 256
#            3 % of kernel time; the first run of this script had it unrolled: no better)
#   ncu      Nsight Compute's stall reasons and pipe use of the first bin launch of equal-32 and
#            equal-256
#   ab2      the low floor at 64..256 (ptxas schedules each bin's loop anew around its code)
#   gate     a multi-chunk call's chunks held in sw_gate until enqueued against launch by launch
#            (--setting gate_chunks=1,0) at L = 32..128 and on chunks@5e6
#   regcap   448 and 512 (their kernels now with the floor's code) under other register caps,
#            each beside cuda-subwarp, through the tool on the peer suite's sets
#   tune     the last 1 % at 256 and 640..1,024: 256 under caps 240 and 244 (through the tool),
#            the exponent check every 20 steps against 16 (--setting exp_every=16,20)
#   tune2    640 and 768 (p32k20 / p32k24 at 3 blocks, 168 registers) at 2 blocks under caps of
#            192..240, through the tool
#   tail     a last chunk under half a chunk joined to the one before against a chunk of its own
#            (--setting join_tail=1,0) on the peer suite's sets of 64..256 and chunks@5e6
#   kernels  every kernel's duration (Nsight Compute, gpu__time_duration) in one call of
#            equal-32@4000000 and of 1m: what besides the bins a call's kernel stage holds
#   pytest   the CUDA sub-warp tests
#   peer     gpuPairHMM's build, then the peer suite (hmmbench suite run peer)
# From the repo root there, carrying .device, .data and (peer) .peers:
#   source .device/env.sh && bash scripts/device_floor.sh PART...
export HMMBENCH_GPUPAIRHMM="${HMMBENCH_GPUPAIRHMM:-$PWD/.peers/gpuPairHMM}"
source "$(dirname "$0")/device_common.sh" floor "ab ncu" "$@"
subwarp_setup
if [[ $parts == *" ab "* ]]; then
    subwarp_ab low-floor low_floor=1,0 equal-256@488281,equal-384@262144,equal-512@262144 \
        3 2 100
fi
if [[ $parts == *" ab2 "* ]]; then
    subwarp_ab low-floor-short low_floor=1,0 \
        equal-64@1953125,equal-128@488281,equal-192@217013,equal-256@488281 3 2 100
fi
if [[ $parts == *" gate "* ]]; then
    subwarp_ab gate gate_chunks=1,0 \
        equal-32@4000000,equal-64@1953125,equal-128@488281,chunks@5000000 3 3 100
fi
if [[ $parts == *" regcap "* ]]; then
    caps448=() caps512=() names=()
    for c in 200 216 224; do names+=("cuda-subwarp-regcap[hi=448,max_regs=$c]"); caps448+=(-b "${names[-1]}"); done
    for c in 224 240 248; do names+=("cuda-subwarp-regcap[hi=512,max_regs=$c]"); caps512+=(-b "${names[-1]}"); done
    subwarp_precompile "${names[@]}"
    step regcap448 python3 -m hmmbench run -d equal-448@262144 -b cuda-subwarp "${caps448[@]}" \
        --chunking merged --repeat 3 --sample-pairs 100 --json "$out/subwarp-floor-caps448.json"
    step regcap512 python3 -m hmmbench run -d equal-512@262144 -b cuda-subwarp "${caps512[@]}" \
        --chunking merged --repeat 3 --sample-pairs 100 --json "$out/subwarp-floor-caps512.json"
fi
if [[ $parts == *" tune "* ]]; then
    names=("cuda-subwarp-regcap[hi=256,max_regs=240]" "cuda-subwarp-regcap[hi=256,max_regs=244]")
    subwarp_precompile "${names[@]}"
    step regcap256 python3 -m hmmbench run -d equal-256@488281 -b cuda-subwarp -b "${names[0]}" \
        -b "${names[1]}" --chunking merged --repeat 3 --sample-pairs 100 \
        --json "$out/subwarp-floor-caps256.json"
    subwarp_ab exp-every20 exp_every=16,20 \
        equal-640@262144,equal-768@262144,equal-896@262144,equal-1024@262144 3 2 100
fi
if [[ $parts == *" tune2 "* ]]; then
    for L in 640 768; do
        names=()
        for c in 192 208 224 240; do names+=("cuda-subwarp-regcap[hi=$L,max_regs=$c]"); done
        subwarp_precompile "${names[@]}"
        args=()
        for n in "${names[@]}"; do args+=(-b "$n"); done
        step "regcap$L" python3 -m hmmbench run -d "equal-$L@262144" -b cuda-subwarp "${args[@]}" \
            --chunking merged --repeat 3 --sample-pairs 100 --json "$out/subwarp-caps$L-2blocks.json"
    done
fi
if [[ $parts == *" tail "* ]]; then
    subwarp_ab join-tail join_tail=1,0 \
        equal-64@1953125,equal-128@488281,equal-256@488281,chunks@5000000 3 2 100
fi
if [[ $parts == *" ncu "* ]]; then
    for set in equal-32@1000000 equal-256@65536; do
        step "ncu-$set" ncu --clock-control none --kernel-name subwarp_forward --launch-skip 0 --launch-count 1 \
            --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats \
            --section InstructionStats --section Occupancy --section MemoryWorkloadAnalysis \
            --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" \
            python3 -c "
from hmmbench import registry
from hmmbench.pairhmm.datasets import resolve
(b,) = registry.select(['cuda-subwarp'])
b.run(resolve('$set').load())"
    done
fi
if [[ $parts == *" kernels "* ]]; then
    for set in equal-32@4000000 1m; do
        step "kernels-$set" ncu --clock-control none --metrics gpu__time_duration.sum \
            --csv --print-units base python3 -c "
from hmmbench import registry
from hmmbench.pairhmm.datasets import resolve
(b,) = registry.select(['cuda-subwarp'])
ps = resolve('$set').load()
b.run(ps)
b.run(ps)"
    done
fi
[[ $parts == *" pytest "* ]] && subwarp_pytest
[[ $parts == *" peer "* ]] && step peer python3 -m hmmbench suite run peer --out "$out"
exit $status
