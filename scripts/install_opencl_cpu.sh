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
# Usage: scripts/install_opencl_cpu.sh [VENV]   (default .venv; any python: VENV=$(python -c ...))
# Set HMMBENCH_SKIP_INTEL_OPENCL=1 to install PoCL only.
set -euo pipefail
venv="${1:-.venv}"
py="$venv/bin/python"
[ -x "$py" ] || { echo "install_opencl_cpu: no python at $py" >&2; exit 1; }
stamp="$venv/.opencl-cpu-installed"
if [ -e "$stamp" ]; then
    exit 0
fi
"$py" -m pip install -q "pyopencl[pocl]>=2024.1"
vendors="$("$py" -c 'import sys; print(sys.prefix)')/etc/OpenCL/hmmbench-vendors"
mkdir -p "$vendors"
for icd in /etc/OpenCL/vendors/*.icd; do
    [ -e "$icd" ] && cp "$icd" "$vendors/"
done
if [ "${HMMBENCH_SKIP_INTEL_OPENCL:-0}" != 1 ]; then
    "$py" -m pip install -q intel-opencl-rt intel-cmplr-lib-rt
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
