#!/usr/bin/env bash
# GPU machine: CUDA profile-filter tests, then the development driver (scripts/device_profile.py).
# Usage (repository root, via the run tool): bash scripts/device_profile.sh [driver args...]
# Writes $OUT/profile_pytest.log, $OUT/profile_driver.log, $OUT/profile.json, $OUT/sass_*.txt.
set -uo pipefail
source .device/env.sh || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site2 .whl/*.whl \
    && export PYTHONPATH=$PYTHONPATH:/tmp/site2 PATH=$PATH:/tmp/site2/bin
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.total --format=csv | tee "$OUT/gpu.txt"
if [ "${SKIP_PYTEST:-0}" != 1 ]; then
  timeout 120 python3 -m pytest -q -x tests/test_profile_cuda.py 2>&1 | tail -15 | tee "$OUT/profile_pytest.log"
fi
# SASS of the tuned and the CUDAMPF kernels at M=400 (instruction counts for the notes)
for v in "tuned:-DGROUP=16 -DSIMD16=1 -DPREFETCH=1 -DLAZY_XE=1 -DVF_DPX=1 -DQB=13" \
         "cudampf:-DGROUP=32 -DSIMD16=0 -DQB=4"; do
  name=${v%%:*}; flags=${v#*:}
  nvcc -arch=sm_90 -cubin -o /tmp/pf_$name.cubin -DMODEL_M=400 -DQW=7 $flags kernels_cuda/profile/filters.cu \
    && cuobjdump --dump-sass /tmp/pf_$name.cubin > "$OUT/sass_$name.txt" 2>&1
done
timeout ${DRIVER_TIMEOUT:-330} python3 scripts/device_profile.py --out "$OUT/profile.json" "$@" 2>&1 | tee "$OUT/profile_driver.log"
