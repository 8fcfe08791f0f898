#!/usr/bin/env bash
# Named suites on a GPU machine: the device kit's set-up, then `hmmbench suite run` (the suites are
# data, hmmbench/suites/catalog.py; `python3 -m hmmbench suite list` names them and `... suite run
# NAME --dry-run` prints their hmmbench run commands).
#
# Before, on the dev machine, from the repo root (the folders are git-ignored: carry them along):
#   mkdir -p .device .data && cp -r ../shared/device/. .device/ && cp -r ../shared/data/pairhmm .data/
#   optionally .whl/: wheels the device image lacks (pyhmmer and hmmer for the profile peers; dask,
#   distributed, dask-cuda and their missing dependencies for the scaling suites)
# On the device, from the repo root:
#   bash scripts/device_suite.sh SUITE[,SUITE...]
# Each step writes $OUT/<step>.json (default results/runs/); results/<gpu>/ keeps the latest file
# of each step. $OUT/suite.log has the GPU's clocks before and after and every step's report.
set -uo pipefail
if [[ $# != 1 ]]; then
    echo "usage: bash scripts/device_suite.sh SUITE[,SUITE...]" >&2
    exit 2
fi
source .device/env.sh || { echo "no .device/ kit: copy ../shared/device/ there" >&2; exit 2; }
if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --upgrade \
        --target /tmp/hmmbench-site .whl/*.whl || { echo "installing .whl/ failed" >&2; exit 2; }
    chmod +x /tmp/hmmbench-site/hmmer/data/bin/* 2>/dev/null
    export PYTHONPATH="$PYTHONPATH:/tmp/hmmbench-site" PATH="$PATH:/tmp/hmmbench-site/bin"
fi
export HMMBENCH_DATA_PATH="${HMMBENCH_DATA_PATH:-$PWD/.data/pairhmm}"
export PYTHONUNBUFFERED=1
# one cache (references, compiled kernels) for the client and any Dask workers it starts
export XDG_CACHE_HOME="${XDG_CACHE_HOME:-/tmp/hmmbench-cache}"
out="${OUT:-results/runs}"
mkdir -p "$out"
log="$out/suite.log"
read -r -a names <<< "${1//,/ }"
clocks() {
    nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
        --format=csv 2>&1 | tee -a "$log"
}
clocks
# A fresh machine's PyCUDA cache is empty: compile the sub-warp kernels the suites select once,
# nvcc in parallel, before a run (or several Dask workers at once) would; gpuPairHMM's build
# (about a minute) meanwhile, where a suite runs the peer.
python3 - "${names[@]}" <<'PY' 2>&1 | tee -a "$log"
import sys
import threading
import time

from hmmbench import registry, suites

patterns = {b for name in sys.argv[1:] for step in suites.get(name).steps
            for b in step.backends if step.workload == "pairhmm"}
t = time.time()
if any(p.startswith("peer-") for p in patterns):
    from hmmbench.pairhmm.peers import GpuPairHMMPeer
    peer = threading.Thread(target=lambda: print(
        "gpuPairHMM:", GpuPairHMMPeer().unavailable_reason() or "ready"))
    peer.start()
else:
    peer = None
subwarp = [p for p in patterns if p.startswith("cuda-subwarp")]
if subwarp:
    from hmmbench.pairhmm.subwarp.build import precompile
    print("precompiled", precompile(registry.select(subwarp)), "kernels")
profile = [s for name in sys.argv[1:] for s in suites.get(name).steps
           if s.workload == "profile" and "profile-cuda-warp" in s.backends]
if profile:
    from hmmbench.profile import datasets as pds
    from hmmbench.profile.device import build
    names = [n for s in profile for n in ([s.options["model"]] if isinstance(
        s.options.get("model"), str) else s.options.get("model") or pds.DEFAULT_MODELS)]
    models = [spec.load()[0] for n in names for spec in pds.resolve_models(n)]
    print("precompiled", build.precompile(build.kernel_specs(models)), "profile kernels",
          f"({time.time() - t:.0f} s)")
if peer:
    peer.join()
print(f"set-up {time.time() - t:.0f} s")
PY
python3 -m hmmbench suite run "${names[@]}" --out "$out" 2>&1 | tee -a "$log"
status=${PIPESTATUS[0]}
clocks
exit "$status"
