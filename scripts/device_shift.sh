#!/usr/bin/env bash
# Issue 13 point 3 on the GPU machine (session 24): one conversion factor in the exponent bins,
# a thread's last two rows held 2^SW_EXP_SHIFT up. (A call returns at most eight files: end it
# with a tar of $OUT.)
# Parts:
#   gputests the GPU tests of the exponent bins and the cascade's tile with exponents (the
#            shift against the plain kernel among them)
#   ab       the shift against two factors (--setting exp_shift=1,0) on the peer suite's sets
#            of 640..1,024
#   long     one hmmbench run of 640..1,024, the peer suite's sets
#   caps     the 640 and 896 bins' kernels under other register caps (the cuda-subwarp-regcap
#            family, one run per length against the table's cap)
#   every    the exponent check every 20 steps against 16 (--setting exp_every=16,20)
#   tune     640..1,024 under other caps and check intervals (the cuda-subwarp-regcap family's
#            exp_every axis), one run per length against the bins' own
#   settings the exponent bins' own settings (EXP_BIN_SETTINGS) against none
#            (--setting exp_bin_settings=1,0) on the sets of 640..1,024
#   medium   10s and 1m merged through the tool, in five processes
#   peer     gpuPairHMM's build, then the peer suite (hmmbench suite run peer)
# From the repo root there, carrying .device, .data and (peer) .peers:
#   source .device/env.sh && bash scripts/device_shift.sh PART...
export HMMBENCH_GPUPAIRHMM="${HMMBENCH_GPUPAIRHMM:-$PWD/.peers/gpuPairHMM}"
source "$(dirname "$0")/device_common.sh" shift "gputests ab" "$@"
LONG_SETS=equal-640@262144,equal-768@262144,equal-896@262144,equal-1024@262144
declare -A CAPS=([640]="152 168" [896]="208 224")
# (CAP,EVERY[,SHIFT]: the first call's, 640 "152,24 160,24", 896 "208,20 208,24 200,20 200,24
# 216,24"; the second's, 640 "160,24", 768 "0,20 0,24", 896 "200,24 192,24 184,24", 1024
# "240,20 240,24 232,24"; the third's, 768 "0,24,on"; the fourth's, 768 "0,28 0,20")
declare -A TUNE=([768]="0,24,on,off 0,24,own,off 0,24,on")
caps=()
if [[ $parts == *" caps "* ]]; then
    for L in "${!CAPS[@]}"; do
        for c in ${CAPS[$L]}; do caps+=("cuda-subwarp-regcap[hi=$L,max_regs=$c]"); done
    done
fi
tune_name() {  # L CAP,EVERY[,SHIFT[,WINDOW]] (own: the bin's own)
    local cap every shift window
    IFS=, read -r cap every shift window <<< "$2"
    [[ $shift == own ]] && shift=
    echo "cuda-subwarp-regcap[hi=$1,max_regs=$cap,exp_every=$every${shift:+,exp_shift=$shift}${window:+,code_window=$window}]"
}
if [[ $parts == *" tune "* ]]; then
    for L in "${!TUNE[@]}"; do
        for t in ${TUNE[$L]}; do caps+=("$(tune_name "$L" "$t")"); done
    done
fi
subwarp_setup "${caps[@]}"
[[ $parts == *" gputests "* ]] && subwarp_pytest tests/test_cuda_subwarp.py \
    -k "lane_0s or exponents_keep or exponent_pairs or cascade_through or gap_quality_of_0"
[[ $parts == *" ab "* ]] && subwarp_ab exp-shift exp_shift=1,0 "$LONG_SETS" 3 2 100
long_args=()
for set in ${LONG_SETS//,/ }; do long_args+=(-d "$set"); done
[[ $parts == *" long "* ]] && step long python3 -m hmmbench run "${long_args[@]}" \
    -b cuda-subwarp --chunking merged --repeat 3 --sample-pairs 100 \
    --json "$out/subwarp-shift-long.json"
if [[ $parts == *" caps "* ]]; then
    for L in 640 896; do
        backends=()
        for c in ${CAPS[$L]}; do backends+=("cuda-subwarp-regcap[hi=$L,max_regs=$c]"); done
        subwarp_against shift-caps "$L" "${backends[@]}"
    done
fi
if [[ $parts == *" tune "* ]]; then
    for L in "${!TUNE[@]}"; do
        backends=()
        for t in ${TUNE[$L]}; do backends+=("$(tune_name "$L" "$t")"); done
        subwarp_against shift-tune "$L" "${backends[@]}"
    done
fi
[[ $parts == *" every "* ]] && subwarp_ab exp-every20 exp_every=16,20 \
    equal-640@262144,equal-896@262144 3 2 100
[[ $parts == *" settings "* ]] && subwarp_ab exp-bin-settings exp_bin_settings=1,0 "$LONG_SETS" 3 2 100
[[ $parts == *" medium "* ]] && subwarp_merged 5
[[ $parts == *" peer "* ]] && step peer python3 -m hmmbench suite run peer --out "$out"
exit $status
