"""Compiler evidence for the CUDA / OpenCL twins of the peak kernels (issue 16), on the GPU machine.

For every sub-warp bin configuration (``cuda-subwarp``'s bins, float32) compare what the two
compilers made of the one shared body (kernels_common/pairhmm/subwarp.h): registers and spills
(``ptxas -v`` on nvcc's build and on the PTX of NVIDIA's OpenCL compiler) and the SASS of the
wavefront step loop (the innermost loop holding shuffles: 4 steps x k rows per thread per trip)
per cell. Writes twins_resources.json into the folder given (default: $OUT) and prints a table.

    source .device/env.sh && python3 scripts/twins_resources.py [OUTDIR]
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from inter_task_resources import ARCH, opcode_mix, ptxas, sass_lines

from hmmbench.apis import cuda as cuda_api
from hmmbench.apis import opencl as opencl_api
from hmmbench.pairhmm import cuda_subwarp, opencl_subwarp
from hmmbench.pairhmm.subwarp_layout import DEFAULT_BINS, DEFAULT_LONG, make_bins


def nvcc(source: str, defines: dict, cubin: Path) -> dict:
    """nvcc's cubin of a CUDA kernel source (its include folders), with ptxas' resource line."""
    out = subprocess.run(["nvcc", "-cubin", f"-arch={ARCH}", *cuda_api.BASE_OPTIONS,
                          "-Xptxas", "-v", *cuda_api.define_flags(defines),
                          *(f"-I{d}" for d in cuda_api.include_dirs(source)),
                          str(Path(cuda_api.kernel_dir(), source)), "-o", str(cubin)],
                         capture_output=True, text=True, check=True)
    regs = re.findall(r"Used (\d+) registers", out.stderr)
    spill = re.findall(r"(\d+) bytes spill stores", out.stderr)
    return {"registers": int(regs[-1]) if regs else None,
            "spill_store_bytes": int(spill[-1]) if spill else None}


def shuffle_loop(lines) -> list:
    """The innermost backward-branch loop that holds shuffles: the wavefront step loop."""
    best = None
    for addr, op, rest in lines:
        target = re.match(r"\s*(0x[0-9a-f]+)", rest)
        if not (op.startswith("BRA") and target and int(target.group(1), 16) < addr):
            continue
        body = [x for x in lines if int(target.group(1), 16) <= x[0] <= addr]
        if any(o.startswith("SHFL") for _, o, _ in body) and (best is None or len(body) < len(best)):
            best = body
    return best or []


def sass(cubin: Path, cells_per_trip: int) -> dict:
    lines = sass_lines(cubin)
    loop = opcode_mix(shuffle_loop(lines))
    loop["SHFL"] = sum(1 for _, op, _ in shuffle_loop(lines) if op.startswith("SHFL"))
    return {"kernel_instructions": len(lines), "step_loop": loop, "cells_per_trip": cells_per_trip,
            "instructions_per_cell": loop.get("total", 0) / cells_per_trip,
            "fp32_per_cell": loop.get("fp32", 0) / cells_per_trip}


def subwarp_rows(work: Path) -> list:
    kit = opencl_api.device_kit("NVIDIA")
    cuda_b = cuda_subwarp.backends()[0]
    ocl_b = opencl_subwarp.backends(device="NVIDIA")[0]
    rows = []
    for b in make_bins(DEFAULT_BINS, DEFAULT_LONG, 2000):
        tag = b.label.split("[")[0]
        cu_defines = cuda_b.defines(b)
        cu_cubin = work / f"cuda-{tag}.cubin"
        cu = nvcc(cuda_subwarp.SOURCE, cu_defines, cu_cubin)
        path = ocl_b.path(kit, b.p)
        block = ocl_b.block(kit, b, path, False)
        cl_defines = ocl_b._defines(b, path, block, False)
        ptx = work / f"opencl-{tag}.ptx"
        # NVIDIA's OpenCL "binary" is PTX text ending in a NUL byte, which ptxas rejects.
        ptx.write_bytes(kit.program(opencl_subwarp.SOURCE, cl_defines).binaries[0].rstrip(b"\0"))
        cl_cubin = work / f"opencl-{tag}.cubin"
        cells = 4 * b.k
        rows.append({"kernel": f"subwarp {b.label}", "cuda_defines": cu_defines,
                     "cuda": {**cu, "sass": sass(cu_cubin, cells)},
                     "opencl_defines": cl_defines,
                     "opencl": {**ptxas(ptx, cl_cubin), "sass": sass(cl_cubin, cells)}})
    return rows


def main(outdir: Path) -> None:
    outdir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="hmmbench-twins-"))
    rows = subwarp_rows(work)
    (outdir / "twins_resources.json").write_text(json.dumps(rows, indent=1))
    print("per cell in the shuffle loop (CUDA | OpenCL):")
    print(f"{'kernel':28} {'regs':>9} {'spill':>9} {'instr/cell':>13} {'fp32/cell':>11} "
          f"{'SHFL/trip':>9}")
    for r in rows:
        c, o = r["cuda"], r["opencl"]
        print(f"{r['kernel']:28} {c['registers']!s:>4}|{o['registers']!s:<4} "
              f"{c['spill_store_bytes']!s:>4}|{o['spill_store_bytes']!s:<4} "
              f"{c['sass']['instructions_per_cell']:>6.2f}|{o['sass']['instructions_per_cell']:<6.2f} "
              f"{c['sass']['fp32_per_cell']:>5.2f}|{o['sass']['fp32_per_cell']:<5.2f} "
              f"{c['sass']['step_loop'].get('SHFL', 0):>4}|{o['sass']['step_loop'].get('SHFL', 0):<4}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("OUT", "results/runs")))
