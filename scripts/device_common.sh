# Set-up shared by the device_*.sh GPU-machine scripts; source it from the repo root as
#   source "$(dirname "$0")/device_common.sh" NAME "DEFAULT PARTS" "$@"
# It sets: out (the result folder, $OUT or results/runs/NAME), log ($out/NAME.log), parts (the
# parts asked for, space-padded, or the defaults), status=0; and logs the GPU's clocks first.
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
