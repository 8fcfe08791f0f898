# Set-up shared by the device_*.sh GPU-machine scripts; source it from the repo root as
#   source "$(dirname "$0")/device_common.sh" NAME "DEFAULT PARTS" "$@"
# It sets: out (the result folder, $OUT or results/runs/NAME), log ($out/NAME.log), parts (the
# parts asked for, space-padded, or the defaults), status=0; and logs the GPU's clocks first.
# Helpers: step NAME COMMAND... (run, log, keep the status), subwarp_precompile BACKEND...
# (their kernels into PyCUDA's cache, nvcc in parallel), peer_build (gpuPairHMM's build),
# subwarp_setup BACKEND... (cuda-subwarp's and those kernels compiled, and with a peer part
# gpuPairHMM's build beside them and the peer suite's variants),
# subwarp_pytest [FILE...] (those tests, default the CUDA sub-warp ones, into $out/pytest.txt),
# subwarp_ab NAME SETTING SETS ROUNDS CALLS CHECK (scripts/subwarp_side_bins.py's A/B of a
# cuda-subwarp attribute, into $out/subwarp-ab-NAME.json), subwarp_against NAME L BACKEND...
# (cuda-subwarp and those backends on equal-L@262144 in one run, into $out/subwarp-NAME$L.json),
# subwarp_merged N (10s and 1m merged
# through the tool in N processes one after the other, into $out/subwarp-medium-merged-I.json).
set -uo pipefail
export HMMBENCH_DATA_PATH="${HMMBENCH_DATA_PATH:-$PWD/.data/pairhmm}"
export PYTHONUNBUFFERED=1
_device_name=$1
_device_defaults=$2
shift 2
out="${OUT:-results/runs/$_device_name}"
mkdir -p "$out"
log="$out/$_device_name.log"
parts=" ${*:-$_device_defaults} "
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv \
    2>&1 | tee -a "$log"
status=0
step() {  # NAME COMMAND...: run it, log it, keep its status
    local name=$1
    shift
    echo "== $name: $*" | tee -a "$log"
    "$@" 2>&1 | tee -a "$log"
    [[ ${PIPESTATUS[0]} == 0 ]] || status=1
}
subwarp_precompile() {  # BACKEND...: a fresh machine's PyCUDA cache is empty
    python3 - "$@" <<'PY' 2>&1 | tee -a "$log"
import sys, time
from hmmbench import registry
from hmmbench.pairhmm import cuda_subwarp as sw
t = time.time()
pick = registry.select(sys.argv[1:])  # names, family variants among them
print('precompiled', sw.precompile(pick), 'kernels in', round(time.time() - t, 1), 's')
PY
}
peer_build() {  # gpuPairHMM's build through the peer backend (~1 min; run it in the background)
    python3 -c "
import time
from hmmbench.pairhmm.peers import GpuPairHMMPeer
t = time.time()
b = GpuPairHMMPeer()
print('gpuPairHMM:', b.unavailable_reason() or 'ready', 'after', round(time.time() - t), 's')
" 2>&1 | tee -a "$log"
}
subwarp_setup() {  # BACKEND...: what a sub-warp script's parts need before they run
    local pick=(cuda-subwarp "$@")
    if [[ $parts == *" peer"* ]]; then  # the peer's build (~1 min), beside the precompile
        peer_build &
        pick+=("cuda-subwarp-exp-above[exp_above=256]" cuda-subwarp-f64rescue)
    fi
    subwarp_precompile "${pick[@]}"
    wait
}
subwarp_pytest() {  # [TEST FILE...]: default the CUDA sub-warp tests
    python3 -m pytest -q -p no:cacheprovider "${@:-tests/test_cuda_subwarp.py}" 2>&1 | tail -15 \
        | tee "$out/pytest.txt" | tee -a "$log"
    [[ ${PIPESTATUS[0]} == 0 ]] || status=1
}
subwarp_ab() {  # NAME SETTING SETS ROUNDS CALLS CHECK: two values of an attribute, one process
    step "ab-$1" python3 scripts/subwarp_side_bins.py --setting "$2" --sets "$3" --rounds "$4" \
        --calls "$5" --check "$6" --json "$out/subwarp-ab-$1.json"
}
subwarp_against() {  # NAME L BACKEND...: cuda-subwarp and those on equal-L@262144, one run
    local name=$1 L=$2 b args=()
    shift 2
    for b in "$@"; do args+=(-b "$b"); done
    step "$name$L" python3 -m hmmbench run -d "equal-$L@262144" -b cuda-subwarp "${args[@]}" \
        --chunking merged --repeat 3 --sample-pairs 100 --json "$out/subwarp-$name$L.json"
}
subwarp_merged() {  # N: 10s and 1m merged in N processes, for the spread between processes
    local i
    for ((i = 1; i <= $1; i++)); do
        step "merged-$i" python3 -m hmmbench run -b cuda-subwarp -d 10s -d 1m --chunking merged \
            --max-time 3 --json "$out/subwarp-medium-merged-$i.json"
    done
}
