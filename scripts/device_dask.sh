#!/usr/bin/env bash
# Issue 15 on the 2-GPU machine (kind nvidia-h200-x2), issue 18 on the 4-GPU one: hmmbench sharded
# over 1, 2 (, 4...) GPUs with dask-cuda's LocalCUDACluster (one worker per GPU); DASK_WORKERS
# gives the worker counts (default 1,2). Logs and result JSON under $OUT.
#
#   bash scripts/device_dask.sh [check] [timeline] [subwarp-2e7] [subwarp-na12878] [profile]
#                               [profile-batching] [overhead]
#
# (no arguments: all parts; each part is one hmmbench command, so the parts can also be spread
# over several device calls). Needs, carried into the checkout: .device/ (the PyCUDA kit,
# ../shared/device) and .whl/ (dask, distributed, dask-cuda and what the machine lacks of their
# dependencies: partd, locket, tblib, tornado, zict; everything else is in the image).
# The machine's NCCL_NVLS_ENABLE=0 / TORCH_SYMM_MEM_DISABLE_MULTICAST=1 / NVSHMEM_DISABLE_NVLS=1
# stay set: the Dask worker processes inherit this environment.
set -u
OUT="${OUT:-/tmp/dask-out}"
mkdir -p "$OUT"
PARTS="${*:-check subwarp-2e7 subwarp-na12878 profile}"
WORKERS="${DASK_WORKERS:-1,2}"
# more hmmbench run options for every run (e.g. --sample-pairs 500: a smaller reference to compute
# per worker count)
read -r -a EXTRA <<< "${DASK_RUN_ARGS:-}"
export CHECK_WORKERS="$WORKERS"
export PYTHONUNBUFFERED=1
export HMMBENCH_DATA_PATH="${HMMBENCH_DATA_PATH:-$PWD/shared/data/pairhmm:$PWD/../shared/data/pairhmm}"
# the reference cache and PyCUDA's kernel cache shared by the client and both workers
export XDG_CACHE_HOME="${XDG_CACHE_HOME:-/tmp/hmmbench-cache}"
LOG="$OUT/dask.log"

source .device/env.sh || { echo "no .device/ kit (PyCUDA)"; exit 1; }
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl \
  || { echo "installing .whl/ failed"; exit 1; }
export PYTHONPATH="/tmp/site:$PWD"
for v in NCCL_NVLS_ENABLE TORCH_SYMM_MEM_DISABLE_MULTICAST NVSHMEM_DISABLE_NVLS; do
  echo "$v=${!v-<unset>}"
done | tee "$LOG"
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv \
  | tee -a "$LOG"

# A fresh machine has an empty PyCUDA cache: compile cuda-subwarp's kernels once, here, before
# two workers would compile them at the same time.
python3 - <<'PY' 2>&1 | tee -a "$LOG"
import time
import dask, distributed, dask_cuda
print("dask", dask.__version__, "distributed", distributed.__version__, "dask-cuda",
      dask_cuda.__version__)
from hmmbench.pairhmm import cuda_subwarp as sw
from hmmbench.pairhmm import cuda_subwarp_variants as swv
t = time.time()
print("precompiled", sw.precompile([b for b in swv.backends() if b.name == "cuda-subwarp"]),
      "kernels in", round(time.time() - t, 1), "s")
PY

run() {  # one hmmbench command, its exit status and wall time in the log
  local t0=$SECONDS
  echo "+ hmmbench $* ${EXTRA[*]}" | tee -a "$LOG"
  python3 -m hmmbench "$@" "${EXTRA[@]}" 2>&1 | tee -a "$LOG"
  echo "exit ${PIPESTATUS[0]} after $((SECONDS - t0)) s" | tee -a "$LOG"
}

if [[ " $PARTS " == *" check "* ]]; then
  # results identical to one process on one GPU: every value, not a sample
  python3 scripts/dask_identical.py "$OUT" 2>&1 | tee -a "$LOG"
fi

if [[ " $PARTS " == *" overhead "* ]]; then
  # where a sharded profile call's time goes beyond its kernels (scripts/dask_task_overhead.py)
  python3 scripts/dask_task_overhead.py "$OUT" 2>&1 | tee -a "$LOG"
fi
if [[ " $PARTS " == *" timeline "* ]]; then
  # where a sharded call's time goes (scripts/dask_timeline.py)
  python3 scripts/dask_timeline.py "$OUT" chunks@2e7 cuda-subwarp 2>&1 | tee -a "$LOG"
fi
if [[ " $PARTS " == *" subwarp-2e7 "* ]]; then
  run run -d chunks@2e7 --chunking merged -b cuda-subwarp --cluster local --workers "$WORKERS" --repeat 5 \
      --json "$OUT/subwarp-chunks2e7.json"
fi
if [[ " $PARTS " == *" subwarp-na12878 "* ]]; then
  run run -d chunks-na12878 --chunking merged -b cuda-subwarp --cluster local --workers "$WORKERS" \
      --repeat 5 \
      --json "$OUT/subwarp-na12878.json"
fi
profile() {  # the profile set over 1 and 2 GPUs; extra options, then the result file's name
  local name="${@: -1}"
  # which processes hold a context on which GPU, mid-run (the client should hold none)
  ( sleep 45; nvidia-smi --query-compute-apps=pid,process_name,used_memory,gpu_uuid --format=csv
    nvidia-smi --query-gpu=index,uuid --format=csv ) > "$OUT/$name-gpu-apps.txt" 2>&1 &
  run run --workload profile -d proteins-2e8 --model PF02826 --model Thioesterase --model KR \
      --model LuxC --kind ssv,msv,vf -b profile-cuda-warp --cluster local --workers "$WORKERS" \
      --repeat 5 "${@:1:$#-1}" --json "$OUT/$name.json"
  wait
}
if [[ " $PARTS " == *" profile "* ]]; then
  profile profile-warp-2e8
fi
if [[ " $PARTS " == *" profile-batching "* ]]; then
  # the same with Dask's message batching kept (--dask-batching): what sending at once buys
  profile --dask-batching profile-warp-2e8-batching
fi
ls -la "$OUT"
