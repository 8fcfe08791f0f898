"""Compiler evidence for the CUDA vs OpenCL inter-task gap (issue 4), on the GPU machine.

For every inter-task specialization both APIs run, compare what the two compilers made of the
same algorithm: registers, spills and stack (PyCUDA's report for the CUDA kernel, `ptxas -v` on
the PTX that NVIDIA's OpenCL compiler produced), and the SASS instruction mix of both kernels
(`cuobjdump --dump-sass` of nvcc's cubin and of ptxas' cubin of the OpenCL PTX): FP32 math,
global loads by kind (read-only LDG.E.CONSTANT vs plain), stores, branches, total. Writes
inter_task_resources.json into the folder given (default: $OUT) and prints a table.

    source .device/env.sh && python3 scripts/inter_task_resources.py [OUTDIR]
"""
from __future__ import annotations

import collections
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from hmmbench.pairhmm import cuda, opencl
from hmmbench.apis import opencl as opencl_api
from hmmbench.apis import cuda as cuda_api

ARCH = "sm_90"


def ptxas(ptx: Path, cubin: Path) -> dict:
    out = subprocess.run(["ptxas", "-v", f"-arch={ARCH}", str(ptx), "-o", str(cubin)],
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


SASS_LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_.]+)([^;]*);")


def sass_lines(cubin: Path) -> list:
    """(address, opcode, operands) of every SASS instruction in a cubin."""
    text = subprocess.run(["cuobjdump", "--dump-sass", str(cubin)], capture_output=True,
                          text=True, check=True).stdout
    return [(int(a, 16), op, rest) for a, op, rest in SASS_LINE.findall(text)]


def opcode_mix(lines) -> dict:
    """Counts of SASS opcode classes: FP32 math, global loads by kind (the load/store qualifiers
    kept: .CONSTANT = read-only path), local/shared traffic, branches, total."""
    ops = collections.Counter()
    for _, op, _ in lines:
        base = op.split(".")[0]
        ops["total"] += 1
        if base in ("FFMA", "FMUL", "FADD"):
            ops["fp32"] += 1
        elif base in ("LDG", "STG", "LDL", "STL", "LDS", "STS"):
            ops[op if base == "LDG" else base] += 1
        elif base in ("BRA", "BSSY", "BSYNC"):
            ops["branch"] += 1
    return dict(ops)


def hot_loop(lines) -> list:
    """The instructions of the innermost loop (a backward branch with no other backward branch
    inside) with the most FP32 math: the column loop of a strip (VEC columns x TILE rows per
    trip), where the kernel spends its time."""
    loops = []
    for addr, op, rest in lines:
        target = re.match(r"\s*(0x[0-9a-f]+)", rest)
        if op.startswith("BRA") and target and int(target.group(1), 16) < addr:
            loops.append((int(target.group(1), 16), addr))
    innermost = [(a, b) for a, b in loops
                 if not any((a, b) != (c, d) and a <= c and d <= b for c, d in loops)]
    best, best_fp = [], -1
    for a, b in innermost:
        body = [x for x in lines if a <= x[0] <= b]
        fp = sum(x[1].split(".")[0] in ("FFMA", "FMUL", "FADD") for x in body)
        if fp > best_fp:
            best, best_fp = body, fp
    return best


def sass_mix(cubin: Path, cells_per_trip: int) -> dict:
    lines = sass_lines(cubin)
    loop = opcode_mix(hot_loop(lines))
    return {"kernel": opcode_mix(lines), "hot_loop": loop, "cells_per_trip": cells_per_trip,
            "instructions_per_cell": loop.get("total", 0) / cells_per_trip,
            "fp32_per_cell": loop.get("fp32", 0) / cells_per_trip}


def main(outdir: Path) -> None:
    outdir.mkdir(parents=True, exist_ok=True)
    kit = opencl_api.device_kit("NVIDIA")
    work = Path(tempfile.mkdtemp(prefix="hmmbench-ptx-"))
    rows = []
    for cb in cuda.backends():
        if not cb.name.startswith("cuda-inter-"):
            continue
        source, defines, fn_name = cb.kernel_spec()
        fn = cuda_api.compile(source, defines).get_function(fn_name)
        cu_cubin = work / f"{cb.name}.cubin"
        cuda_api.nvcc_cubin(source, defines, cu_cubin, ARCH)
        twin = next(b for b in opencl.backends(device="NVIDIA")
                    if b.name == cb.name.replace("cuda-", "opencl-"))
        # the build that runs on 1m merged (29,307 pairs: a small launch, one warp per work-group)
        local = twin.local_size(kit, 29_307)
        cl_defines = {"TILE": twin.tile, "INTERLEAVED": int(twin.interleaved),
                      "LANES": twin.lanes(kit, local), "LOCAL_SIZE": local, "VEC": twin.vec(kit),
                      "USE_DOUBLE": 0}
        ptx = work / f"{twin.name}.ptx"
        # NVIDIA's OpenCL "binary" is PTX text ending in a NUL byte, which ptxas rejects.
        ptx.write_bytes(kit.program(twin.source, cl_defines).binaries[0].rstrip(b"\0"))
        cl_cubin = work / f"{twin.name}.cubin"
        rows.append({"family": cb.name[len("cuda-"):], "cuda_defines": defines,
                     "cuda": {**cuda_api.function_resources(fn),
                              "sass": sass_mix(cu_cubin, defines["TILE"] * defines["VEC"])},
                     "opencl_defines": cl_defines,
                     "opencl": {**ptxas(ptx, cl_cubin),
                                "sass": sass_mix(cl_cubin, cl_defines["TILE"] * cl_defines["VEC"])}})
    (outdir / "inter_task_resources.json").write_text(json.dumps(rows, indent=1))
    keys = sorted({k for r in rows for api in ("cuda", "opencl") for k in r[api]["sass"]["hot_loop"]})
    print("hot loop (per trip of VEC columns x TILE rows) of each twin:")
    print(f"{'family':22} {'api':6} {'regs':>4} {'spill':>5} {'instr/cell':>10} {'fp32/cell':>9} "
          + " ".join(f"{k:>16}" for k in keys))
    for r in rows:
        for api in ("cuda", "opencl"):
            x = r[api]
            spill = x.get("spill_store_bytes", x.get("local_bytes"))
            sass = x["sass"]
            print(f"{r['family']:22} {api:6} {str(x['registers']):>4} {str(spill):>5} "
                  f"{sass['instructions_per_cell']:>10.2f} {sass['fp32_per_cell']:>9.2f} "
                  + " ".join(f"{sass['hot_loop'].get(k, 0):>16}" for k in keys))


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("OUT", "results/runs")))
