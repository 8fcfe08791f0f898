"""Building the sub-warp kernels ahead of time and reading their machine code: the kernel cache
warm-up of the device scripts (a fresh GPU machine has an empty PyCUDA disk cache) and the SASS
opcode counts of the wavefront loop that docs/subwarp-design.md keeps per L."""
from __future__ import annotations

import re
from collections import Counter
from typing import Optional, Sequence

from ...apis import cuda as glue
from .layout import make_bins
from .rescue import plan_kernels

#: the bin kernels and the on-device layout kernels
SOURCE = "pairhmm/subwarp.cu"
LAYOUT_SOURCE = "pairhmm/subwarp_layout.cu"


# ------------------------------------------------------------------------------------------------
# SASS instruction count of the inner loop (for the notes; needs cuobjdump)
# ------------------------------------------------------------------------------------------------
FP32_OPS = ("FFMA", "FMUL", "FADD")


_INSTR = re.compile(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);")
_BRANCH = re.compile(r"BRA\s+(?:`\()?\.?\w*?0x([0-9a-f]+)")


def _opcode(text: str) -> str:
    return re.sub(r"^@!?U?P\w+\s+", "", text).split()[0].split(".")[0]


def wavefront_loop(sass: str) -> Optional[tuple]:
    """(opcode counts of the wavefront loop, counts of the blocks inside it that a predicated
    forward branch skips -- the exponent check), or None: of the backward-branch loops holding
    SHFL, the one densest in FP32 instructions (ptxas lays some bins' code out of order, so the
    smallest such loop can be a setup or recompute path interleaved with the wavefront's)."""
    ins = [(int(m.group(1), 16), m.group(2).strip()) for m in map(_INSTR.match, sass.splitlines())
           if m]
    share = lambda body: sum(_opcode(t) in FP32_OPS for _, t in body) / len(body)  # noqa: E731
    best = None
    for addr, text in ins:
        m = _BRANCH.search(text)
        if not m or int(m.group(1), 16) >= addr:
            continue
        body = [(a, t) for a, t in ins if int(m.group(1), 16) <= a <= addr]
        if any(_opcode(t) == "SHFL" for _, t in body) and (best is None or
                                                          share(body) > share(best)):
            best = body
    if best is None:
        return None
    skipped, end = set(), best[-1][0]
    for a, t in best:
        m = _BRANCH.search(t)
        if m and t.startswith("@") and a < int(m.group(1), 16) <= end:
            skipped.update(x for x, _ in best if a < x < int(m.group(1), 16))
    return (Counter(_opcode(t) for a, t in best if a not in skipped),
            Counter(_opcode(t) for a, t in best if a in skipped))


def inner_loop_counts(sass: str) -> Optional[Counter]:
    """Opcode counts of the wavefront step loop, its skippable blocks included."""
    loop = wavefront_loop(sass)
    return loop[0] + loop[1] if loop else None


# ------------------------------------------------------------------------------------------------
# Kernel cache warm-up (device scripts: a fresh GPU machine has an empty PyCUDA disk cache)
# ------------------------------------------------------------------------------------------------
def kernel_specs(backends: Sequence, max_read_length: int = 1 << 20) -> list:
    """(source, defines) of every kernel the backends launch on inputs up to max_read_length."""
    seen: dict = {(LAYOUT_SOURCE, ()): (LAYOUT_SOURCE, {})}
    for b in backends:
        for table in (b._bins_table, *(rows for _, rows in b._small_tiers or ())):
            bins = make_bins(table, b._long, max_read_length)
            queue_bins, _, cascade = b.queue_plan(bins)
            for x, kind in plan_kernels(bins, queue_bins, cascade):
                d = b.defines(x, kind)
                seen[(SOURCE, tuple(sorted(d.items())))] = (SOURCE, d)
    return list(seen.values())


def precompile(backends: Sequence, threads: int = 16) -> int:
    """Fill PyCUDA's disk cache with every kernel of ``backends``, nvcc runs in parallel (the call
    SourceModule makes in glue.compile, so the later loads hit the cache). Returns the count."""
    return glue.build_into_cache(kernel_specs(backends), threads)
