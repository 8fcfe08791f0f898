#!/usr/bin/env bash
# Issue 13 point 4 on the GPU machine (session 11): a multi-chunk call's first chunks ramped up
# (1/8, 1/4, 1/2 of a chunk, each chunk uploading only its own bytes) and a small call's bins side
# by side. Parts:
#   pytest   the CUDA sub-warp tests (the small path bit for bit against the full one, side by side
#            among them), the host-call tests
#   side     scripts/subwarp_side_bins.py: 10s and 1m's regions joined by 8 and 16, bins side by
#            side against one stream, alternating rounds in one process -> side-bins.json
#   merged   hmmbench run -d 10s -d 1m -b cuda-subwarp --chunking merged --max-time 3
#   chunks   hmmbench run -d chunks@5e6 -b cuda-subwarp -b cuda-subwarp-noramp --chunking merged
#   na12878  hmmbench run -d chunks-na12878 -b cuda-subwarp --chunking merged --repeat 1 (~3.5 min)
#   noramp   the same with -b cuda-subwarp-noramp (~3.5 min: a call of its own)
# From the repo root there, carrying .device and .data (a git-ignored copy of
# ../shared/data/pairhmm):
#   source .device/env.sh && bash scripts/device_ramp.sh [PART ...]   (default: pytest side merged chunks na12878)
source "$(dirname "$0")/device_common.sh" ramp "pytest side merged chunks na12878" "$@"
python3 - <<'PY' 2>&1 | tee -a "$log"
import time
from hmmbench.pairhmm import cuda_subwarp as sw
t = time.time()
pick = [b for b in sw.backends() if b.name in ("cuda-subwarp", "cuda-subwarp-noramp")]
print("precompiled", sw.precompile(pick), "kernels in", round(time.time() - t, 1), "s")
PY
step() {  # NAME COMMAND...: run it, log it, keep its status
    local name=$1
    shift
    echo "== $name: $*" | tee -a "$log"
    "$@" 2>&1 | tee -a "$log"
    [[ ${PIPESTATUS[0]} == 0 ]] || status=1
}
if [[ $parts == *" pytest "* ]]; then
    python3 -m pytest -q -p no:cacheprovider tests/test_cuda_subwarp.py \
        tests/test_subwarp_host_calls.py 2>&1 | tail -15 | tee "$out/pytest.txt" | tee -a "$log"
    [[ ${PIPESTATUS[0]} == 0 ]] || status=1
fi
[[ $parts == *" side "* ]] && step side python3 scripts/subwarp_side_bins.py --json "$out/side-bins.json"
[[ $parts == *" merged "* ]] && step merged python3 -m hmmbench run -d 10s -d 1m -b cuda-subwarp \
    --chunking merged --max-time 3 --json "$out/subwarp-small-merged.json"
[[ $parts == *" chunks "* ]] && step chunks python3 -m hmmbench run -d chunks@5e6 -b cuda-subwarp \
    -b cuda-subwarp-noramp --chunking merged --json "$out/subwarp-chunks5e6-ramp.json"
[[ $parts == *" na12878 "* ]] && step na12878 python3 -m hmmbench run -d chunks-na12878 \
    -b cuda-subwarp --chunking merged --repeat 1 --json "$out/subwarp-na12878-ramp.json"
[[ $parts == *" noramp "* ]] && step noramp python3 -m hmmbench run -d chunks-na12878 \
    -b cuda-subwarp-noramp --chunking merged --repeat 1 --json "$out/subwarp-na12878-noramp.json"
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv 2>&1 | tee -a "$log"
exit "$status"
