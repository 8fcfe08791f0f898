#!/usr/bin/env bash
# Issue 13 point 3 on the GPU machine (session 23): the exponent bins' fixed work per step.
# (A call returns at most eight files: end it with a tar of $OUT.)
# Parts:
#   pytest   the CUDA sub-warp tests (lane 0's row above from the conversion factor among them)
#   ab       lane 0's row above from the conversion factor against three selects a step
#            (--setting lane0_by_factor=1,0) on the peer suite's sets of 640..1,024
#   window   lane 0's haplotype codes from a window the group loads at each exponent check
#            against a load a step (--setting code_window=1,0), the same sets
#   gputests the GPU tests of the exponent bins and the cascade's tile with exponents only
#   caps     the 640..1,024 bins' kernels under other register caps (the cuda-subwarp-regcap
#            family, one run per length against the table's cap)
#   ncu      Nsight Compute's issue rate and stall reasons of the 640 and 1,024 bins' launch,
#            each setting of lane0_by_factor
#   medium   10s and 1m merged through the tool, in five processes
#   peer     gpuPairHMM's build, then the peer suite (hmmbench suite run peer)
# From the repo root there, carrying .device, .data and (peer) .peers:
#   source .device/env.sh && bash scripts/device_lane0.sh PART...
export HMMBENCH_GPUPAIRHMM="${HMMBENCH_GPUPAIRHMM:-$PWD/.peers/gpuPairHMM}"
source "$(dirname "$0")/device_common.sh" lane0 "pytest ab caps ncu" "$@"
declare -A CAPS=([640]="152 168" [768]="160" [896]="208 216" [1024]="232 248")
caps=()
if [[ $parts == *" caps "* ]]; then
    for L in "${!CAPS[@]}"; do
        for c in ${CAPS[$L]}; do caps+=("cuda-subwarp-regcap[hi=$L,max_regs=$c]"); done
    done
fi
subwarp_setup "${caps[@]}"
[[ $parts == *" pytest "* ]] && subwarp_pytest
[[ $parts == *" window "* ]] && subwarp_ab code-window code_window=1,0 \
    equal-640@262144,equal-768@262144,equal-896@262144,equal-1024@262144 3 2 100
[[ $parts == *" gputests "* ]] && subwarp_pytest tests/test_cuda_subwarp.py \
    -k "lane_0s or exponents_keep or exponent_pairs or cascade_through or gap_quality_of_0"
[[ $parts == *" ab "* ]] && subwarp_ab lane0-factor lane0_by_factor=1,0 \
    equal-640@262144,equal-768@262144,equal-896@262144,equal-1024@262144 3 2 100
if [[ $parts == *" caps "* ]]; then
    for L in 640 768 896 1024; do
        backends=()
        for c in ${CAPS[$L]}; do backends+=("cuda-subwarp-regcap[hi=$L,max_regs=$c]"); done
        subwarp_against lane0-caps "$L" "${backends[@]}"
    done
fi
if [[ $parts == *" ncu "* ]]; then
    for L in 640 1024; do
        for v in 1 0; do
            step "ncu-$L-lane0_by_factor=$v" ncu --clock-control none --kernel-name subwarp_forward \
                --launch-skip 0 --launch-count 1 --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.per_cycle_active,launch__registers_per_thread,smsp__inst_executed.sum,sm__cycles_elapsed.avg,gpu__time_duration.sum" \
                python3 -c "
from hmmbench import registry
from hmmbench.pairhmm.datasets import resolve
(b,) = registry.select(['cuda-subwarp'])
b.lane0_by_factor = $v
b.run(resolve('equal-$L@65536').load())"
        done
    done
fi
[[ $parts == *" medium "* ]] && subwarp_merged 5
[[ $parts == *" peer "* ]] && step peer python3 -m hmmbench suite run peer --out "$out"
exit $status
