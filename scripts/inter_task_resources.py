"""Compiler evidence for the CUDA vs OpenCL inter-task gap (issue 4), on the GPU machine.

For every inter-task specialization both APIs run, print the registers, spills and local memory
that the compiler gave each twin: PyCUDA's resource report for the CUDA kernel, and `ptxas -v` for
sm_90 on the PTX that NVIDIA's OpenCL compiler produced. Writes a JSON of the figures into the
folder given (default: $OUT); the PTX files go to a temporary folder.

    source .device/env.sh && python3 scripts/inter_task_resources.py [OUTDIR]
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from hmmbench.backends import cuda, opencl


def ptxas_report(ptx: Path) -> dict:
    out = subprocess.run(["ptxas", "-v", "-arch=sm_90", str(ptx), "-o", os.devnull],
                         capture_output=True, text=True)
    text = out.stderr + out.stdout
    regs = re.search(r"Used (\d+) registers", text)
    spill = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", text)
    stack = re.search(r"(\d+) bytes stack frame", text)
    return {"registers": int(regs.group(1)) if regs else None,
            "spill_store_bytes": int(spill.group(1)) if spill else None,
            "spill_load_bytes": int(spill.group(2)) if spill else None,
            "stack_bytes": int(stack.group(1)) if stack else None,
            "ptxas": text.strip().splitlines()[-3:]}


def main(outdir: Path) -> None:
    outdir.mkdir(parents=True, exist_ok=True)
    kit = opencl.device_kit("NVIDIA")
    ptx_dir = Path(tempfile.mkdtemp(prefix="hmmbench-ptx-"))
    rows = []
    for cb in cuda.backends():
        if not cb.name.startswith("cuda-inter-"):
            continue
        source, defines, fn_name = cb.kernel_spec()
        fn = cuda.compile(source, defines).get_function(fn_name)
        twin = next(b for b in opencl.backends(device="NVIDIA")
                    if b.name == cb.name.replace("cuda-", "opencl-"))
        cl_defines = {"TILE": twin.tile, "INTERLEAVED": int(twin.interleaved),
                      "LANES": twin.local_size(kit, 10**7), "VEC": twin.vec(kit), "USE_DOUBLE": 0}
        ptx = ptx_dir / f"{twin.name}.ptx"
        ptx.write_bytes(kit.program(twin.source, cl_defines).binaries[0])
        rows.append({"family": cb.name[len("cuda-"):], "cuda_defines": defines,
                     "cuda": cuda.function_resources(fn), "opencl_defines": cl_defines,
                     "opencl": ptxas_report(ptx)})
    (outdir / "inter_task_resources.json").write_text(json.dumps(rows, indent=1))
    print(f"{'family':24} {'CUDA regs':>9} {'local B':>7} | {'OpenCL regs':>11} {'spill st/ld':>11} {'stack':>5}")
    for r in rows:
        c, o = r["cuda"], r["opencl"]
        print(f"{r['family']:24} {c['registers']:>9} {c['local_bytes']:>7} | {str(o['registers']):>11} "
              f"{str(o['spill_store_bytes'])}/{str(o['spill_load_bytes']):>5} {str(o['stack_bytes']):>5}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("OUT", "results/runs")))
