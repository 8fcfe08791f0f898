#!/usr/bin/env bash
# Issue 13 point 3 on the GPU machine (session 13): the 5-instruction recurrence (Z = s D / md,
# gm in the emission table; kernels_common/pairhmm/subwarp.h) against the 6-instruction one, and
# the register cap it allows (3 blocks of 128 = 168 registers, 3 warps per scheduler). Parts:
#   pytest   the CUDA sub-warp tests
#   blocks   one hmmbench run on equal-length sets of 4e9 cells at every bin's top length
#            (32..1,024): cuda-subwarp (the table's caps) against every bin capped to 3 blocks
#            (cuda-subwarp-auto[recurrence=5op,min_blocks=3])
#   short    reads of 16..32 (the p4k4 and p4k8 bins): the table's caps against 6 and 8 blocks
#            (80 and 64 registers; cuda-subwarp-auto[recurrence=5op,min_blocks=6|8])
#   short2   reads of 64..128 (p4k16 .. p8k16): the table's caps against 3 and 4 blocks (168, 128
#            registers); session 14 ran it twice, first over 32, 48 and 64 (the table changed
#            between the runs)
#   expabove reads of 320..640 without exponents (cuda-subwarp-exp-above[exp_above=N]: their
#            underflows through the queue cascade) against cuda-subwarp (exponents above 256)
#   peak     the peer suite's sets and 384..768: cuda-subwarp, cuda-subwarp-6op, peer-gpupairhmm
#   shapes   (session 15) the 256, 384, 448 and 512 bins in wider groups with more resident warps
#            (cuda-subwarp-shape[hi=L,p=..,k=..,min_blocks=..]) against the table's shapes
#   chunks / na12878 / merged   the end-to-end sets through cuda-subwarp (as device_results_back.sh)
# From the repo root there, carrying .device, .data and .peers:
#   source .device/env.sh && bash scripts/device_fiveop.sh PART...
export HMMBENCH_GPUPAIRHMM="${HMMBENCH_GPUPAIRHMM:-$PWD/.peers/gpuPairHMM}"
source "$(dirname "$0")/device_common.sh" fiveop "pytest blocks" "$@"
capped="cuda-subwarp-auto[recurrence=5op,min_blocks=3]"
if [[ $parts == *" peak "* ]]; then  # the peer's build (~1 min)
    python3 -c "
import time
from hmmbench.pairhmm.peers import GpuPairHMMPeer
t = time.time()
b = GpuPairHMMPeer()
print('gpuPairHMM:', b.unavailable_reason() or 'ready', 'after', round(time.time() - t), 's')
" 2>&1 | tee -a "$log" &
fi
above=("cuda-subwarp-exp-above[exp_above=384]" "cuda-subwarp-exp-above[exp_above=448]"
    "cuda-subwarp-exp-above[exp_above=512]" "cuda-subwarp-exp-above[exp_above=640]")
precompile=(cuda-subwarp cuda-subwarp-6op)
[[ $parts == *" blocks "* ]] && precompile+=("$capped")
[[ $parts == *" short"* ]] && precompile=(cuda-subwarp)  # (the capped ones: 3 bins each)
[[ $parts == *" expabove "* ]] && precompile=(cuda-subwarp "${above[@]}")
shape() { echo "cuda-subwarp-shape[hi=$1,p=$2,k=$3,min_blocks=$4]"; }
shapes=("$(shape 256 16 16 4)" "$(shape 256 16 16 3)" "$(shape 384 32 12 4)"
    "$(shape 384 32 12 3)" "$(shape 448 32 16 4)" "$(shape 512 32 16 4)" "$(shape 512 32 16 3)")
[[ $parts == *" shapes "* ]] && precompile=(cuda-subwarp "${shapes[@]}")
subwarp_precompile "${precompile[@]}"
wait
[[ $parts == *" pytest "* ]] && subwarp_pytest
run=(python3 -m hmmbench run)
equal_sets() {  # L...: equal-L sets of 4e9 cells, 65,536..2,000,000 pairs
    for L in "$@"; do
        n=$(( 4000000000 / (L * L) )); (( n > 2000000 )) && n=2000000; (( n < 65536 )) && n=65536
        echo -d "equal-$L@$n"
    done
}
[[ $parts == *" blocks "* ]] && step blocks "${run[@]}" \
    $(equal_sets 32 64 128 160 192 256 320 384 448 512 640 768 896 1024) \
    -b cuda-subwarp -b "$capped" --chunking merged --repeat 3 --sample-pairs 100 \
    --json "$out/subwarp-5op-blocks.json"
[[ $parts == *" short "* ]] && step short "${run[@]}" -d equal-16@4000000 -d equal-24@4000000 \
    -d equal-32@4000000 -b cuda-subwarp -b "cuda-subwarp-auto[recurrence=5op,min_blocks=6]" \
    -b "cuda-subwarp-auto[recurrence=5op,min_blocks=8]" --chunking merged --repeat 5 \
    --sample-pairs 200 --json "$out/subwarp-5op-short-blocks.json"
[[ $parts == *" short2 "* ]] && step short2 "${run[@]}" -d equal-80@625000 -d equal-96@434027 \
    -d equal-128@488281 -d equal-64@1953125 -b cuda-subwarp -b "$capped" \
    -b "cuda-subwarp-auto[recurrence=5op,min_blocks=4]" --chunking merged --repeat 5 \
    --sample-pairs 200 --json "$out/subwarp-5op-short-blocks4.json"
[[ $parts == *" expabove "* ]] && step expabove "${run[@]}" $(equal_sets 320 384 448 512 640) \
    -b cuda-subwarp $(printf -- '-b %s ' "${above[@]}") --chunking merged --repeat 3 \
    --sample-pairs 400 --json "$out/subwarp-5op-exp-above.json"
[[ $parts == *" shapes "* ]] && step shapes "${run[@]}" $(equal_sets 256 384 448 512) \
    -b cuda-subwarp $(printf -- '-b %s ' "${shapes[@]}") --chunking merged --repeat 3 \
    --sample-pairs 100 --json "$out/subwarp-5op-shapes.json"
[[ $parts == *" peak "* ]] && step peak "${run[@]}" -d equal-32@4000000 -d equal-64@1953125 \
    -d equal-128@488281 -d equal-256@122070 -d equal-384@65536 -d equal-512@65536 \
    -d equal-640@65536 -d equal-768@65536 -d equal-896@65536 -d equal-1024@65536 \
    -b cuda-subwarp -b cuda-subwarp-6op -b peer-gpupairhmm \
    --chunking merged --repeat 5 --sample-pairs 200 --json "$out/peer-peak-5op.json"
[[ $parts == *" chunks "* ]] && step chunks "${run[@]}" -d chunks@5e6 -b cuda-subwarp \
    -b cuda-subwarp-6op --chunking merged --json "$out/subwarp-5op-chunks5e6.json"
[[ $parts == *" merged "* ]] && step merged "${run[@]}" -d 10s -d 1m -b cuda-subwarp \
    --chunking merged --max-time 3 --json "$out/subwarp-5op-merged.json"
[[ $parts == *" na12878 "* ]] && step na12878 "${run[@]}" -d chunks-na12878 -b cuda-subwarp \
    --chunking merged --repeat 1 --json "$out/subwarp-5op-na12878.json"
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv 2>&1 | tee -a "$log"
exit "$status"
