"""Compiler evidence for the CUDA / OpenCL twins of the peak kernels (issue 16), on the GPU machine.

What the two compilers made of one shared body: registers and spills (``ptxas -v`` on nvcc's
build and on the PTX of NVIDIA's OpenCL compiler) and the SASS of the hot loop per cell, for
- every sub-warp bin configuration (``cuda-subwarp``'s bins, float32; kernels_common/pairhmm/
  subwarp.h): the wavefront step loop, the innermost loop holding shuffles (4 steps x k rows
  per thread per trip);
- the warp-group HMMER3 filters (kernels_common/profile/warp.h) at M = 400 and 1200 with the
  tuned defines of profile-cuda-warp: the row's vector loop, the innermost loop with the most
  instructions (QB x ELEMS_B, or QW x 2, cells per lane per trip). The OpenCL build has no DPX:
  its int16 cells are OpenCL's short2 built-ins, whose SASS this shows.
Writes twins_resources.json into the folder given (default: $OUT) and prints a table.

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

from inter_task_resources import ARCH, SASS_LINE, opcode_mix

from hmmbench.apis import cuda as cuda_api
from hmmbench.apis import opencl as opencl_api
from hmmbench.pairhmm import cuda_subwarp, cuda_subwarp_variants, opencl_subwarp
from hmmbench.pairhmm.subwarp_layout import DEFAULT_BINS, DEFAULT_LONG, make_bins


def ptxas(ptx: Path, cubin: Path) -> str:
    """ptxas' cubin of NVIDIA's OpenCL PTX; returns its -v log."""
    out = subprocess.run(["ptxas", "-v", f"-arch={ARCH}", str(ptx), "-o", str(cubin)],
                         capture_output=True, text=True, check=True)
    return out.stderr + out.stdout


def sass_lines(cubin: Path, fn: str) -> list:
    """(address, opcode, operands) of kernel ``fn``'s SASS."""
    text = subprocess.run(["cuobjdump", "--dump-sass", "--function", fn, str(cubin)],
                          capture_output=True, text=True, check=True).stdout
    return [(int(a, 16), op, rest) for a, op, rest in SASS_LINE.findall(text)]


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
    lines = sass_lines(cubin, "subwarp_forward")
    loop = opcode_mix(shuffle_loop(lines))
    loop["SHFL"] = sum(1 for _, op, _ in shuffle_loop(lines) if op.startswith("SHFL"))
    return {"kernel_instructions": len(lines), "step_loop": loop, "cells_per_trip": cells_per_trip,
            "instructions_per_cell": loop.get("total", 0) / cells_per_trip,
            "fp32_per_cell": loop.get("fp32", 0) / cells_per_trip}


def subwarp_rows(work: Path) -> list:
    kit = opencl_api.device_kit("NVIDIA")
    cuda_b = cuda_subwarp_variants.backends()[0]
    ocl_b = opencl_subwarp.backends(device="NVIDIA")[0]
    rows = []
    for b in make_bins(DEFAULT_BINS, DEFAULT_LONG, 2000):
        tag = b.label.split("[")[0]
        cu_defines = cuda_b.defines(b)
        cu_cubin = work / f"cuda-{tag}.cubin"
        log = cuda_api.nvcc_cubin(cuda_subwarp.SOURCE, cu_defines, cu_cubin, ARCH)
        cu = cuda_api.ptxas_resources(log, "subwarp_forward")
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
                     "opencl": {**cuda_api.ptxas_resources(ptxas(ptx, cl_cubin), "subwarp_forward"),
                                "sass": sass(cl_cubin, cells)}})
    return rows


def largest_loop(lines) -> list:
    """The innermost backward-branch loop with the most instructions (a row of vectors)."""
    loops = []
    for addr, op, rest in lines:
        target = re.match(r"\s*(0x[0-9a-f]+)", rest)
        if op.startswith("BRA") and target and int(target.group(1), 16) < addr:
            loops.append((int(target.group(1), 16), addr))
    inner = [(a, b) for a, b in loops
             if not any((a, b) != (c, d) and a <= c and d <= b for c, d in loops)]
    spans = [[x for x in lines if a <= x[0] <= b] for a, b in inner]
    return max(spans, key=len, default=[])


def profile_rows(work: Path) -> list:
    from hmmbench.profile import datasets, warp
    from hmmbench.profile.opencl import WARP_BLOCK, WARP_SOURCE, ProfileWarpOpenCL
    kit = opencl_api.device_kit("NVIDIA")
    path = ProfileWarpOpenCL("NVIDIA").path
    rows = []
    for name in ("random-M400", "random-M1200"):
        model = datasets.resolve_model(name).load()[0]
        for kind, fn in (("ssv", "ssv_xe_warp"), ("msv", "msv_xj_warp"), ("vf", "vf_xc_warp")):
            Q, _ = warp.profile(model, kind, warp.TUNED_VARIANT)
            d = warp.defines(model, kind, Q, warp.TUNED_VARIANT, WARP_BLOCK)
            cu_cubin = work / f"cuda-{name}-{kind}.cubin"
            logs = {"cuda": cuda_api.nvcc_cubin("profile/filters.cu", {**d, "PROFILE_SMEM": 0},
                                                cu_cubin, ARCH)}
            cl_defines = {**d, "EXCHANGE": opencl_api.EXCHANGE[path]}
            ptx = work / f"opencl-{name}-{kind}.ptx"
            ptx.write_bytes(kit.program(WARP_SOURCE, cl_defines).binaries[0].rstrip(b"\0"))
            cl_cubin = work / f"opencl-{name}-{kind}.cubin"
            logs["opencl"] = ptxas(ptx, cl_cubin)
            cells = Q * (2 if kind == "vf" or d["SIMD16"] else 4)
            both = {}
            for api, cubin in (("cuda", cu_cubin), ("opencl", cl_cubin)):
                lines = sass_lines(cubin, fn)
                loop = opcode_mix(largest_loop(lines))
                both[api] = {**cuda_api.ptxas_resources(logs[api], fn), "sass": {
                    "kernel_instructions": len(lines), "row_loop": loop, "cells_per_trip": cells,
                    "instructions_per_cell": loop.get("total", 0) / cells, "fp32_per_cell": 0.0}}
            rows.append({"kernel": f"{kind} {name}", "cuda_defines": d,
                         "opencl_defines": cl_defines, **both})
    return rows


def main(outdir: Path) -> None:
    outdir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="hmmbench-twins-"))
    rows = subwarp_rows(work) + profile_rows(work)
    (outdir / "twins_resources.json").write_text(json.dumps(rows, indent=1))
    print("per cell in the hot loop (CUDA | OpenCL; sub-warp: the shuffle loop, profile: the row):")
    print(f"{'kernel':28} {'regs':>9} {'spill':>9} {'instr/cell':>13} {'fp32/cell':>11} "
          f"{'SHFL/trip':>9}")
    for r in rows:
        c, o = r["cuda"], r["opencl"]
        print(f"{r['kernel']:28} {c['registers']!s:>4}|{o['registers']!s:<4} "
              f"{c['spill_store_bytes']!s:>4}|{o['spill_store_bytes']!s:<4} "
              f"{c['sass']['instructions_per_cell']:>6.2f}|{o['sass']['instructions_per_cell']:<6.2f} "
              f"{c['sass']['fp32_per_cell']:>5.2f}|{o['sass']['fp32_per_cell']:<5.2f} "
              f"{c['sass'].get('step_loop', {}).get('SHFL', 0):>4}|"
              f"{o['sass'].get('step_loop', {}).get('SHFL', 0):<4}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("OUT", "results/runs")))
