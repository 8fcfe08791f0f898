#!/usr/bin/env bash
# Issue 13 point 2 on the GPU machine: cuda-subwarp (float32 with per-thread power-of-two
# exponents, no float64 recompute) and cuda-subwarp-exp-long (exponents only for reads over 256)
# against cuda-subwarp-f64rescue (float32, pairs under 1e-28 recomputed in float64). Parts: the CUDA sub-warp tests (the exponent tests run every pair of
# deep pairs down past 1e-300 against the float64 reference), then the `exp` suite
# (hmmbench/suites/catalog.py: the three on equal-32..1024 and on 10s, 1m merged). Result
# JSON (exp-peak.json, exp-real.json) and logs under $OUT.
#
# Before the call, on the dev machine, from the repo root (git-ignored folders, carry them):
#   mkdir -p .device .data && cp -r ../shared/device/. .device/ && cp -r ../shared/data/pairhmm .data/
# On the device, from the repo root:
#   source .device/env.sh && bash scripts/device_exp.sh [pytest] [suite]   (default: both)
source "$(dirname "$0")/device_common.sh" exp "pytest suite" "$@"
# A fresh machine has an empty PyCUDA cache: every kernel of both backends, nvcc in parallel.
python3 - <<'PY' 2>&1 | tee -a "$log"
import time
from hmmbench.pairhmm import cuda_subwarp as sw
from hmmbench.pairhmm import cuda_subwarp_variants as swv
t = time.time()
names = ("cuda-subwarp", "cuda-subwarp-exp-long", "cuda-subwarp-f64rescue")
pick = [b for b in swv.backends() if b.name in names]
print("precompiled", sw.precompile(pick), "kernels in", round(time.time() - t, 1), "s")
PY
if [[ $parts == *" pytest "* ]]; then
    python3 -m pytest -q -p no:cacheprovider tests/test_cuda_subwarp.py 2>&1 | tail -15 \
        | tee "$out/pytest.txt" | tee -a "$log"
    [[ ${PIPESTATUS[0]} == 0 ]] || status=1
fi
if [[ $parts == *" suite "* ]]; then
    python3 -m hmmbench suite run exp --out "$out" 2>&1 | tee -a "$log"
    [[ ${PIPESTATUS[0]} == 0 ]] || status=1
fi
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv 2>&1 | tee -a "$log"
exit "$status"
