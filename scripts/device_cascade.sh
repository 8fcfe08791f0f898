#!/usr/bin/env bash
# Issue 13 on the GPU machine (session 11): cuda-subwarp's queue cascade (reads up to 256 run the
# float32 kernel alone; their rare underflows are recomputed in float32 with exponents, then what
# those cannot hold in float64) against cuda-subwarp-exp-all (exponents in every bin, the default
# until this session), and a small call's bins side by side. Parts:
#   pytest   the CUDA sub-warp tests (cascade levels, underflows past 1e-300, the small path bit
#            for bit against the full one)
#   merged   hmmbench run -d 10s -d 1m -b cuda-subwarp -b cuda-subwarp-exp-all --chunking merged
#            --max-time 3
#   chunks   hmmbench run -d chunks@5e6 -b cuda-subwarp -b cuda-subwarp-exp-all --chunking merged
#   na12878  hmmbench run -d chunks-na12878 -b cuda-subwarp --chunking merged --repeat 1 (~3.5 min;
#            the e2e suite's step)
#   peak     gpuPairHMM built through the peer backend, then cuda-subwarp, -exp-all, -f64rescue
#            and peer-gpupairhmm on the peer suite's equal-length sets, same run
#   side     scripts/subwarp_side_bins.py (a small call's bins side by side against one stream)
# From the repo root there, carrying .device, .data (a git-ignored copy of ../shared/data/pairhmm)
# and, for peak, .peers (a copy of ../shared/peers/gpuPairHMM):
#   source .device/env.sh && bash scripts/device_cascade.sh PART...
export HMMBENCH_GPUPAIRHMM="${HMMBENCH_GPUPAIRHMM:-$PWD/.peers/gpuPairHMM}"
source "$(dirname "$0")/device_common.sh" cascade "pytest merged chunks na12878" "$@"
if [[ $parts == *" peak "* ]]; then  # gpuPairHMM's build (~1 min) beside the kernel compiles
    python3 -c "
import time
from hmmbench.pairhmm.peers import GpuPairHMMPeer
t = time.time()
b = GpuPairHMMPeer()
print('gpuPairHMM:', b.unavailable_reason() or 'ready', 'after', round(time.time() - t), 's')
" 2>&1 | tee -a "$log" &
fi
subwarp_precompile cuda-subwarp cuda-subwarp-exp-all cuda-subwarp-f64rescue
wait
[[ $parts == *" pytest "* ]] && subwarp_pytest
run=(python3 -m hmmbench run)
[[ $parts == *" merged "* ]] && step merged "${run[@]}" -d 10s -d 1m -b cuda-subwarp \
    -b cuda-subwarp-exp-all --chunking merged --max-time 3 --json "$out/subwarp-cascade-merged.json"
[[ $parts == *" chunks "* ]] && step chunks "${run[@]}" -d chunks@5e6 -b cuda-subwarp \
    -b cuda-subwarp-exp-all --chunking merged --json "$out/subwarp-cascade-chunks5e6.json"
[[ $parts == *" na12878 "* ]] && step na12878 "${run[@]}" -d chunks-na12878 -b cuda-subwarp \
    --chunking merged --repeat 1 --json "$out/subwarp-e2e-na12878.json"
[[ $parts == *" peak "* ]] && step peak "${run[@]}" -d equal-32@4000000 -d equal-64@1953125 \
    -d equal-128@488281 -d equal-256@122070 -d equal-512@65536 -d equal-896@65536 \
    -d equal-1024@65536 -b cuda-subwarp -b cuda-subwarp-exp-all -b cuda-subwarp-f64rescue \
    -b peer-gpupairhmm --chunking merged --repeat 5 --sample-pairs 200 \
    --json "$out/peer-peak-cascade.json"
[[ $parts == *" side "* ]] && step side python3 scripts/subwarp_side_bins.py --json "$out/side-bins.json"
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv 2>&1 | tee -a "$log"
exit "$status"
