#!/usr/bin/env bash
# Installs the CPU OpenCL devices hmmbench's OpenCL backends run on, into a virtualenv, on a fresh
# machine (PyPI only; no root needed):
#   - PoCL, through pyopencl[pocl] (PyPI's pocl-binary-distribution; pyopencl registers it itself).
#     No sub-groups, so the warp family takes its local-memory path there.
#   - Intel's CPU OpenCL runtime (intel-opencl-rt + intel-cmplr-lib-rt, ~0.9 GB): sub-groups with
#     shuffles (cl_khr_subgroup_shuffle_relative, cl_intel_subgroups), fp64. Its wheel ships an
#     .icd file with a placeholder path, so this script writes a vendors folder of its own,
#     $PREFIX/etc/OpenCL/hmmbench-vendors, listing it beside the system's /etc/OpenCL/vendors/*.icd.
#     hmmbench points OCL_ICD_VENDORS there by itself when the variable is unset
#     (scripts/opencl_env.sh exports it for other tools).
#   - Debian's PoCL (apt's pocl-opencl-icd, PoCL 3.1 / LLVM 15), only as root where apt-get exists:
#     PyPI's PoCL fails every build on CPUs its LLVM does not know (Zen 5: "unknown target CPU
#     'generic'"; hmmbench lists it as unusable), Debian's falls back to a CPU it knows
#     (skylake-avx512), so the local-memory paths run on a real device. Any apt failure only
#     leaves it out. Set HMMBENCH_SKIP_SYSTEM_POCL=1 to not try.
# Usage: scripts/install_opencl_cpu.sh [VENV]   (default .venv; any python: VENV=$(python -c ...))
# Set HMMBENCH_SKIP_INTEL_OPENCL=1 to install PoCL only.
set -euo pipefail
venv="${1:-.venv}"
py="$venv/bin/python"
[ -x "$py" ] || { echo "install_opencl_cpu: no python at $py" >&2; exit 1; }
# -2: venvs stamped before the system PoCL step get it once
stamp="$venv/.opencl-cpu-installed-2"
if [ -e "$stamp" ]; then
    exit 0
fi
if [ "${HMMBENCH_SKIP_SYSTEM_POCL:-0}" != 1 ] && [ ! -e /etc/OpenCL/vendors/pocl.icd ] \
        && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
            apt-get install -y -qq --no-install-recommends pocl-opencl-icd; } >/dev/null 2>&1; then
        echo "install_opencl_cpu: apt-get could not install pocl-opencl-icd; going on without it" >&2
    fi
fi
"$py" -m pip install -q --no-compile "pyopencl[pocl]>=2024.1"
vendors="$("$py" -c 'import sys; print(sys.prefix)')/etc/OpenCL/hmmbench-vendors"
mkdir -p "$vendors"
for icd in /etc/OpenCL/vendors/*.icd; do
    [ -e "$icd" ] && cp "$icd" "$vendors/"
done
if [ "${HMMBENCH_SKIP_INTEL_OPENCL:-0}" != 1 ]; then
    "$py" -m pip install -q --no-compile intel-opencl-rt intel-cmplr-lib-rt
    lib="$("$py" -c 'import sys; print(sys.prefix)')/lib/libintelocl.so"
    [ -e "$lib" ] || { echo "install_opencl_cpu: $lib missing after pip install" >&2; exit 1; }
    echo "$lib" > "$vendors/intel-cpu.icd"
fi
# Prove it: list what the loader now finds.
OCL_ICD_VENDORS="$vendors" "$py" - <<'PY'
import pyopencl as cl
for p in cl.get_platforms():
    for d in p.get_devices():
        subgroups = [e for e in d.extensions.split() if "subgroup" in e and "shuffle" in e]
        print(f"install_opencl_cpu: {p.name.strip()} / {d.name.strip()}  fp64={bool(d.double_fp_config)}"
              f"  shuffles={' '.join(subgroups) or 'none'}")
PY
touch "$stamp"
