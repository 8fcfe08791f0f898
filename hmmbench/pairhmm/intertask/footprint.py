"""The memory one call of an OpenCL Pair-HMM backend takes, from the set's shape: its host
layout (and the temporaries that build it), the device buffers (the same arrays again, the
inter-task row-vector scratch, the sums) and the float64 recompute of underflowing pairs.

On a CPU device the buffers live in host memory, so host = layout + buffers; on a GPU the
buffers are device memory, checked against the device's free memory. Which pairs underflow in
float32 is known only after the float32 pass, so the recompute is assumed to take its largest
piece (``cpu_reference.pairhmm.forward.redo_pieces``: a quarter of the call's pairs).
Constants measured on the Intel CPU runtime by tests/core/test_hostile_working_memory.py.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from cpu_reference.pairhmm.forward import MIN_REDO_PAIRS, MIN_REDO_POSITIONS

from ...apis.cuda import HOST_RUNTIME_BYTES, device_pages
from ...apis.opencl import GPU_CONTEXT_BYTES
from ...memory import MiB, MemoryNeed
from ..shape import PairShape

#: Host bytes per read position while the packed read codes are built (five widened fields,
#: their shifts and the result), and per pair while the per-pair arrays are gathered.
BUILD_POSITION_BYTES, BUILD_PAIR_BYTES = 16, 40
#: Host bytes of the OpenCL runtime started and the kernels built during a call (the first call
#: of a backend builds its variant, a float64 one for the recompute): about 345 MiB measured on
#: Intel's CPU runtime whatever the set when PyOpenCL's binary cache misses (a fresh machine, a
#: new variant), 210 MiB when it hits; budgeted for the miss (a GPU driver compiles on the
#: host too).
RUNTIME_BYTES = 370 * MiB


@dataclass(frozen=True)
class Footprint:
    """Bytes of one call's arrays: the host layout and what goes to the device."""
    layout: int
    build: int
    buffers: int


#: Bytes per read position of the CUDA families' rows (a base and 7 probabilities, per float
#: size) and of building them on the host (the PairSet's float64 probabilities and the rows by
#: field, before they are transposed into the layout).
CUDA_ROW_BYTES = {4: 1 + 7 * 4, 8: 1 + 7 * 8}
CUDA_BUILD_POSITION_BYTES = 56 + 7 * 4


def footprint(shape: PairShape, itemsize: int, *, sorted_rows: bool, scratch: bool,
              vec: int = 1, cuda_rows: bool = False) -> Footprint:
    """One float32 (4) or float64 (8) pass: read rows (OpenCL: a packed code; CUDA: a base and
    its probabilities; dataset order: one per position; sorted: one per lane and row, a read's
    rows once per pair), haplotypes, four int32 per pair; inter-task kernels add three row
    vectors of the longest haplotype per pair."""
    row = CUDA_ROW_BYTES[itemsize] if cuda_rows else 4
    if sorted_rows:
        arrays = row * shape.pairs * shape.max_read + shape.pairs * (shape.max_hap + 3)
    else:
        arrays = row * shape.read_bases + shape.hap_bases
    arrays += 16 * shape.pairs
    per_position = CUDA_BUILD_POSITION_BYTES if cuda_rows else BUILD_POSITION_BYTES
    build = per_position * shape.read_bases + BUILD_PAIR_BYTES * shape.pairs
    buffers = arrays + itemsize * shape.pairs
    if scratch:
        buffers += 3 * itemsize * shape.pairs * (shape.max_hap + vec)
    return Footprint(layout=arrays, build=build, buffers=buffers)


def recompute_share(shape: PairShape) -> PairShape:
    """The largest piece of the float64 recompute: a quarter of the call's pairs, each alone."""
    alone = shape.each_pair_alone()
    share = min(max(MIN_REDO_POSITIONS, shape.read_bases // 4) / max(alone.read_bases, 1),
                max(MIN_REDO_PAIRS, shape.pairs // 4) / max(alone.pairs, 1))
    return alone.part(int(share * alone.read_bases))


def device_need(shape: PairShape, *, cpu_device: bool, sorted_rows: bool, scratch: bool,
                vec: int = 1, cuda_rows: bool = False, redo_scratch: bool = False,
                strip_rows: Optional[int] = None) -> MemoryNeed:
    """One call of an OpenCL (``cuda_rows``: CUDA) Pair-HMM backend: its float32 pass, or the
    float64 recompute's largest piece while the float32 scratch is kept, whichever is more
    (``strip_rows``: see :func:`cuda_buffers`)."""
    kind = {"sorted_rows": sorted_rows, "scratch": scratch, "vec": vec, "cuda_rows": cuda_rows}
    main = footprint(shape, 4, **kind)
    redo_shape = recompute_share(shape)
    redo = footprint(redo_shape, 8, **kind)
    # the float32 scratch stays allocated while the float64 pass runs (the device kit keeps it)
    held = 3 * 4 * shape.pairs * (shape.max_hap + vec) if scratch else 0
    on_host = int(cpu_device)
    main_phase = main.layout + main.build + on_host * main.buffers
    redo_phase = (redo_shape.nbytes + redo.layout + redo.build
                  + on_host * (held + redo.buffers))
    runtime = HOST_RUNTIME_BYTES if cuda_rows else RUNTIME_BYTES   # a CUDA driver's, measured
    host = max(main_phase, redo_phase) + 24 * shape.pairs + runtime
    if cpu_device:
        device = 0
    elif cuda_rows:
        device = cuda_device_need(shape, redo_shape, sorted_rows=sorted_rows, scratch=scratch,
                                  vec=vec, redo_scratch=redo_scratch, strip_rows=strip_rows)
    else:     # an OpenCL context does not exist yet when the run's check reads the memory
        device = max(main.buffers, held + redo.buffers) + GPU_CONTEXT_BYTES
    return MemoryNeed(host=host, device=device)


def cuda_buffers(shape: PairShape, itemsize: int, *, sorted_rows: bool, scratch: bool,
                 vec: int = 1, strip_rows: Optional[int] = None) -> dict:
    """A CUDA family's device buffers by name, one float32 (4) or float64 (8) pass: the read
    bases and their probabilities, the haplotypes, the per-pair index arrays and sums, the
    scratch, 3 buffers: the inter-task row vectors (every pair, the longest haplotype and
    ``vec``) or, with ``strip_rows``, the wavefront passes (a value per haplotype column of
    each pair whose read is longer than a strip of that many rows)."""
    reads = shape.pairs * shape.max_read if sorted_rows else shape.read_bases
    out = {"bases": reads, "probs": 7 * itemsize * reads,
           "haps": shape.pairs * (shape.max_hap + 3) if sorted_rows else shape.hap_bases,
           "pairs": 20 * shape.pairs, "sums": itemsize * shape.pairs}
    if scratch:
        columns = (shape.pairs * (shape.max_hap + vec) if strip_rows is None
                   else shape.pairs_longer_than(strip_rows)[1])
        out.update({f"scratch{i}": itemsize * columns for i in range(3)})
    return out


def cuda_device_need(shape: PairShape, redo_shape: PairShape, *, scratch: bool,
                     redo_scratch: bool = False, **kind) -> int:
    """Device bytes of a CUDA call: its buffers are grow-only and shared by the float32 pass and
    the float64 recompute (``DeviceBuffers``), so each name holds the larger of the two, in
    CUDA's pages (nothing else grows: ``hmmbench.apis.cuda.device_pages``). ``redo_scratch``:
    the recompute's build has scratch where the float32 one has none (the warp family's passes,
    in shared memory in float32, in global memory in float64)."""
    main = cuda_buffers(shape, 4, scratch=scratch, **kind)
    redo = cuda_buffers(redo_shape, 8, scratch=scratch or redo_scratch, **kind)
    return device_pages([max(main.get(k, 0), redo.get(k, 0)) for k in {**main, **redo}])
