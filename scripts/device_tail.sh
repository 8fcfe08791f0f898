#!/usr/bin/env bash
# Issue 13 point 3 on the GPU machine (session 19): the last round of an equal-length set, and
# bins of 257..512 without exponents. Equal reads make equal work items (a read and its 4
# haplotypes), so a bin's kernel runs ceil(items / resident groups) rounds, the last one
# part-empty: equal-384@65536 in p16k24 at 3 blocks is 16,384 items over 3,168 groups, 5.17
# rounds in the time of 6. Parts:
#   pytest   the CUDA sub-warp tests
#   sizes    cuda-subwarp on equal-L, L = 256..1,024, at the peak suite's size (8e9 cells, at
#            least 65,536 pairs) and at 4 times it: what the part-empty last round costs
#   shapes   on the 4x sets of 256..512: the table's shapes against the ones whose last round
#            cost them the earlier A/Bs (3 and 4 blocks), and no exponents up to 448
#   cascade  on the 4x sets of 320..640: cuda-subwarp (exponents over 256) against no exponents
#            up to 384, 448 and 512, whose underflows now go through one float32 p32k16 tile
#            with exponents (subwarp_rescue.exp_config) before any float64
#   peer     gpuPairHMM's build, then the peer suite (hmmbench suite run peer): 10s and 1m merged
#            and the kernel-only peak on the 4x sets, cuda-subwarp (exponents over 512 since this
#            session) beside cuda-subwarp-exp-above[exp_above=256] (the former default) and the
#            peer in one run; 1m's 110 region calls
#   peerpeak the peer suite's peak step alone
#   regcap   on the 4x sets of the 2-block bins (256, 448, 512, 896, 1,024): cuda-subwarp against
#            the bin's kernel under register caps below 255 (cuda-subwarp-regcap: fewer MOVs at
#            the unrolled loop's end), one run per length
#   regcap2  the same for the caps the first round suggested, and for 320, 384 and 640
# From the repo root there, carrying .device, .data and (peer) .peers:
#   source .device/env.sh && bash scripts/device_tail.sh PART...
export HMMBENCH_GPUPAIRHMM="${HMMBENCH_GPUPAIRHMM:-$PWD/.peers/gpuPairHMM}"
source "$(dirname "$0")/device_common.sh" tail "pytest cascade" "$@"
shape() { echo "cuda-subwarp-shape[hi=$1,p=$2,k=$3,min_blocks=$4]"; }
shapes=("$(shape 256 16 16 4)" "$(shape 384 16 24 3)" "$(shape 448 32 16 4)"
    "$(shape 512 32 16 4)" "cuda-subwarp-exp-above[exp_above=448]")
above=("cuda-subwarp-exp-above[exp_above=384]" "cuda-subwarp-exp-above[exp_above=448]"
    "cuda-subwarp-exp-above[exp_above=512]")
precompile=()
[[ $parts == *" shapes "* ]] && precompile+=("${shapes[@]}")
[[ $parts == *" cascade "* ]] && precompile+=("${above[@]}")
declare -A caps=([256]="216 224" [448]="208 224" [512]="216 232" [896]="208 224 232"
    [1024]="232 240")
[[ $parts == *" regcap2 "* ]] && caps=([256]="240 248" [320]="160 152" [384]="200 192"
    [448]="200 208" [512]="240 248" [640]="160" [896]="216 224" [1024]="240 244 248")
regcaps() { for c in ${caps[$1]}; do echo "cuda-subwarp-regcap[hi=$1,max_regs=$c]"; done; }
if [[ $parts == *" regcap"* ]]; then
    for L in "${!caps[@]}"; do mapfile -t -O "${#precompile[@]}" precompile < <(regcaps "$L"); done
fi
subwarp_setup "${precompile[@]}"
[[ $parts == *" pytest "* ]] && subwarp_pytest
run=(python3 -m hmmbench run)
peak_set() {  # L SCALE: the peak suite's equal-L set (8e9 cells, >= 65,536 pairs), SCALE x
    local n=$(( 8000000000 / ($1 * $1) ))
    (( n < 65536 )) && n=65536
    echo -d "equal-$1@$(( n * $2 ))"
}
lengths=(256 320 384 448 512 640 768 896 1024)
[[ $parts == *" sizes "* ]] && step sizes "${run[@]}" \
    $(for L in "${lengths[@]}"; do peak_set "$L" 1; peak_set "$L" 4; done) \
    -b cuda-subwarp --chunking merged --repeat 3 --sample-pairs 100 \
    --json "$out/subwarp-tail-sizes.json"
[[ $parts == *" shapes "* ]] && step shapes "${run[@]}" \
    $(for L in 256 384 448 512; do peak_set "$L" 4; done) \
    -b cuda-subwarp $(printf -- '-b %s ' "${shapes[@]}") --chunking merged --repeat 3 \
    --sample-pairs 100 --json "$out/subwarp-tail-shapes.json"
[[ $parts == *" cascade "* ]] && step cascade "${run[@]}" \
    $(for L in 320 384 448 512 640; do peak_set "$L" 4; done) \
    -b cuda-subwarp $(printf -- '-b %s ' "${above[@]}") --chunking merged --repeat 3 \
    --sample-pairs 200 --json "$out/subwarp-tail-cascade.json"
if [[ $parts == *" regcap"* ]]; then
    for L in $(printf '%s\n' "${!caps[@]}" | sort -n); do
        step "regcap-$L" "${run[@]}" $(peak_set "$L" 4) -b cuda-subwarp \
            $(regcaps "$L" | sed 's/^/-b /') --chunking merged --repeat 5 --sample-pairs 100 \
            --json "$out/subwarp-regcap-$L.json"
    done
fi
[[ $parts == *" peer "* ]] && step peer python3 -m hmmbench suite run peer --out "$out"
[[ $parts == *" peerpeak "* ]] && step peerpeak python3 -c "
from hmmbench import cli, suites
step = next(s for s in suites.get('peer').steps if s.name == 'peer-peak')
raise SystemExit(cli.main(step.argv('$out')))"
exit $status
