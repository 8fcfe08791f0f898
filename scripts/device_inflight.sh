#!/usr/bin/env bash
# Issue 13 point 5 on the GPU machine: 1m's 110 per-region calls (--chunking original) with up to
# N calls in flight (hmmbench run --in-flight N; cuda-subwarp submits each on a lane of its own;
# a region call takes the small call's path: one stream, one layout launch, five events).
# Parts: pytest (the CUDA sub-warp tests -- among them the small path against the full one, bit
# for bit --, the host-call tests, the in-flight runner tests), run (`hmmbench run -d 1m -b
# cuda-subwarp --chunking original --in-flight N` for N = 1 4, one JSON each; SW_IN_FLIGHT
# overrides the list), probe (scripts/subwarp_timing_probe.py percall cell: per-call wall, host and
# kernel times, passes with N in flight, then the same calls through the runner's cell in the same
# process), host (scripts/subwarp_host_probe.py with the stand-in driver on this machine's CPU:
# driver calls and host us per call, bare and through the cell), batched (`hmmbench run -d 1m -b
# cuda-subwarp -b cuda-subwarp-batched --chunking original --in-flight N` for N = 4 8 16, one JSON
# each; SW_BATCHED overrides the list: the calls in flight as one call beside the calls on their
# lanes, same run). Everything is packed into ONE tarball, $OUT/inflight.tgz (logs, JSON, pytest
# tail).
#
# Before the call, on the dev machine, from the repo root (git-ignored folders, carry them):
#   mkdir -p .device .data && cp -r ../shared/device/. .device/ && cp -r ../shared/data/pairhmm .data/
# On the device, from the repo root:
#   source .device/env.sh && bash scripts/device_inflight.sh [pytest] [run] [probe]  (default: all)
final="${OUT:-results/runs}"
mkdir -p "$final"
work="$(mktemp -d)"
OUT="$work/inflight"
source "$(dirname "$0")/device_common.sh" inflight "pytest run batched probe host" "$@"
flights="${SW_IN_FLIGHT:-1 4}"
# A fresh machine has an empty PyCUDA cache: every kernel of cuda-subwarp, nvcc in parallel.
python3 - <<'PY' 2>&1 | tee -a "$log"
import time
from hmmbench.pairhmm import cuda_subwarp as sw
from hmmbench.pairhmm import cuda_subwarp_variants as swv
t = time.time()
names = ("cuda-subwarp", "cuda-subwarp-batched", "cuda-subwarp-exp-long",
         "cuda-subwarp-f64rescue")  # as device_exp.sh
pick = [b for b in swv.backends() if b.name in names]
print("precompiled", sw.precompile(pick), "kernels in", round(time.time() - t, 1), "s")
PY
if [[ $parts == *" pytest "* ]]; then
    python3 -m pytest -q -p no:cacheprovider tests/test_cuda_subwarp.py \
        tests/test_subwarp_host_calls.py tests/test_in_flight.py 2>&1 | tail -15 \
        | tee "$out/pytest.txt" | tee -a "$log"
    [[ ${PIPESTATUS[0]} == 0 ]] || status=1
fi
if [[ $parts == *" run "* ]]; then
    for n in $flights; do
        python3 -m hmmbench run -d 1m -b cuda-subwarp --chunking original --in-flight "$n" \
            --json "$out/run-1m-original-inflight$n.json" 2>&1 | tee -a "$log"
        [[ ${PIPESTATUS[0]} == 0 ]] || status=1
    done
fi
if [[ $parts == *" batched "* ]]; then
    for n in ${SW_BATCHED:-4 8 16}; do
        python3 -m hmmbench run -d 1m -b cuda-subwarp -b cuda-subwarp-batched --chunking original \
            --in-flight "$n" --json "$out/run-1m-original-batched$n.json" 2>&1 | tee -a "$log"
        [[ ${PIPESTATUS[0]} == 0 ]] || status=1
    done
fi
if [[ $parts == *" probe "* ]]; then
    python3 scripts/subwarp_timing_probe.py percall cell --in-flight "${flights// /,}" \
        --json "$out/probe-percall.json" 2>&1 | tee -a "$log"
    [[ ${PIPESTATUS[0]} == 0 ]] || status=1
fi
if [[ $parts == *" host "* ]]; then
    python3 scripts/subwarp_host_probe.py --cell --in-flight "${flights// /,}" \
        --json "$out/host-probe.json" 2>&1 | tee -a "$log"
    [[ ${PIPESTATUS[0]} == 0 ]] || status=1
fi
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv 2>&1 | tee -a "$log"
tar -czf "$final/inflight.tgz" -C "$work" inflight && echo "packed: $final/inflight.tgz"
exit "$status"
