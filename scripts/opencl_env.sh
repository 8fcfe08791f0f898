# Source me (POSIX sh or bash): exports OCL_ICD_VENDORS to the vendors folder that
# scripts/install_opencl_cpu.sh wrote in the virtualenv ($1, else $HMMBENCH_VENV, else .venv),
# so that every OpenCL program of this shell sees Intel's CPU runtime beside PoCL.
# (hmmbench itself does this on its own when OCL_ICD_VENDORS is unset.)
_hmmbench_venv="${1:-${HMMBENCH_VENV:-.venv}}"
if [ -d "$_hmmbench_venv/etc/OpenCL/hmmbench-vendors" ] && [ -z "${OCL_ICD_VENDORS:-}" ]; then
    OCL_ICD_VENDORS="$(cd "$_hmmbench_venv/etc/OpenCL/hmmbench-vendors" && pwd)"
    export OCL_ICD_VENDORS
fi
unset _hmmbench_venv
