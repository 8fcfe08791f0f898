#!/usr/bin/env bash
# Issue 13 on the GPU machine (an H100): gpuPairHMM built through the peer backend, then the `peer`
# suite (hmmbench/suites/catalog.py: cuda-subwarp beside peer-gpupairhmm on 10s and 1m merged and
# on equal-64/128/256/512/896/1024; cuda-subwarp's 110 per-region calls of 1m, --chunking
# original), then cuda-subwarp's timing probes (scripts/subwarp_timing_probe.py: per-call costs
# of those 110 calls, kernel spread of a multi-chunk set). Result JSON and logs under $OUT.
#
# Before the call, on the dev machine, from the repo root (the folders are git-ignored, carry them):
#   mkdir -p .device .peers .data && cp -r ../shared/device/. .device/ \
#     && cp -r ../shared/peers/gpuPairHMM .peers/ && cp -r ../shared/data/pairhmm .data/
# On the device, from the repo root:
#   source .device/env.sh && bash scripts/device_peer.sh [build] [suite] [probe]   (default: all)
export HMMBENCH_GPUPAIRHMM="${HMMBENCH_GPUPAIRHMM:-$PWD/.peers/gpuPairHMM}"
source "$(dirname "$0")/device_common.sh" peer "build suite probe" "$@"

if [[ $parts == *" build "* ]]; then
    # gpuPairHMM's build (about a minute) beside the cuda-subwarp kernel compiles (a fresh
    # machine has an empty PyCUDA cache): both are CPU work, neither is timed.
    python3 - <<'PY' 2>&1 | tee -a "$log" &
import time
from hmmbench.pairhmm.peers import GpuPairHMMPeer
t = time.time()
b = GpuPairHMMPeer()
reason = b.unavailable_reason()
print(f"gpuPairHMM: {reason or 'ready (' + b._built + ')'} after {time.time() - t:.0f} s")
PY
    python3 - <<'PY' 2>&1 | tee -a "$log"
import time
from hmmbench.pairhmm import cuda_subwarp as sw
from hmmbench.pairhmm import cuda_subwarp_variants as swv
t = time.time()
print("cuda-subwarp: precompiled", sw.precompile(swv.backends()[:1]), "kernels in",
      round(time.time() - t, 1), "s")
PY
    wait
fi

if [[ $parts == *" suite "* ]]; then
    python3 -m hmmbench suite run peer --out "$out" 2>&1 | tee -a "$log"
    status=${PIPESTATUS[0]}
fi

if [[ $parts == *" probe "* && -f scripts/subwarp_timing_probe.py ]]; then
    python3 scripts/subwarp_timing_probe.py --json "$out/subwarp-probe.json" 2>&1 | tee -a "$log"
fi

nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv 2>&1 | tee -a "$log"
exit "$status"
