#!/usr/bin/env bash
# The peak kernels' CUDA and OpenCL twins on one GPU (issue 16): correctness of both on this GPU,
# the `twins` suite (opencl-subwarp-f64rescue vs cuda-subwarp-f64rescue on equal-length sets L = 64..1024 and 1m
# merged; profile-opencl-warp vs profile-cuda-warp on proteins-2e8 with random-M400 and
# random-M1200), the OpenCL/CUDA kernel-time ratio table from those files, and the compiler
# evidence (registers, spills, SASS per cell of each twin). Everything lands in $OUT.
#   source .device/env.sh && bash scripts/device_twins.sh [pytest] [suite] [ratios] [resources]
# (no arguments: all parts), with .data (a git-ignored copy of ../shared/data/pairhmm) carried.
set -uo pipefail
OUT="${OUT:-results/runs}"
mkdir -p "$OUT"
export HMMBENCH_DATA_PATH="${HMMBENCH_DATA_PATH:-$PWD/.data/pairhmm:$PWD/../shared/data/pairhmm}"
export PYTHONUNBUFFERED=1
PARTS="${*:-pytest suite ratios resources}"
log="$OUT/twins.log"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv | tee -a "$log"
status=0

if [[ " $PARTS " == *" pytest "* ]]; then
  # A fresh machine has an empty PyCUDA cache: every cuda-subwarp kernel, nvcc in parallel.
  python3 -c "from hmmbench.pairhmm import cuda_subwarp as sw, cuda_subwarp_variants as swv; print('precompiled', sw.precompile(swv.backends()))" 2>&1 | tee -a "$log"
  # the CUDA twins on the GPU (the profile warp kernels now build from kernels_common/profile/
  # warp.h: their GPU tests against the reference), the OpenCL twins on every OpenCL device here
  # (NVIDIA's: the PTX path, and the forced local-memory path)
  python3 -m pytest -q -p no:cacheprovider tests/test_cuda_subwarp.py tests/test_opencl_subwarp.py \
      tests/test_profile_cuda.py tests/test_profile_opencl_warp.py tests/test_profile_backends.py \
      2>&1 | tail -15 | tee "$OUT/twins-pytest.txt" | tee -a "$log"
  [[ ${PIPESTATUS[0]} -eq 0 ]] || status=1
fi
if [[ " $PARTS " == *" suite "* ]]; then
  python3 -m hmmbench suite run twins --out "$OUT" 2>&1 | tee -a "$log"
  [[ ${PIPESTATUS[0]} -eq 0 ]] || status=1
fi
if [[ " $PARTS " == *" ratios "* ]]; then
  # OpenCL kernel time / CUDA kernel time per twin and data set (<= 1.3 and <= 2 are the bars)
  python3 scripts/api_ratios.py "$OUT"/twins-*.json 2>&1 | tee "$OUT/twins-ratios.md" | tee -a "$log"
fi
if [[ " $PARTS " == *" resources "* ]]; then
  python3 scripts/twins_resources.py "$OUT" 2>&1 | tee -a "$log"
  [[ ${PIPESTATUS[0]} -eq 0 ]] || status=1
fi
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv >>"$log" 2>&1
exit "$status"
