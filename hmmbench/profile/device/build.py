"""The CUDA profile kernels a run will load, built ahead of it with nvcc in parallel.

A search compiles its kernels on first use, one module per kind and model shape (the warp
filters, :func:`.warp.shape_defines`) and one generic Forward per model length: a many-model
file (``models-mixed100``: about 200 modules) would otherwise build them one after the other
inside its first searches. :func:`precompile` fills PyCUDA's disk cache with every module of the
given models (the call ``SourceModule`` makes, so the run's loads hit the cache), as the
sub-warp family's precompile does; ``scripts/device_suite.sh`` runs it before a suite.
"""
from __future__ import annotations

from typing import Sequence

from ...apis import cuda as glue
from . import warp
from .cuda import BLOCK, SMEM_LIMIT, SOURCE as FILTERS_SOURCE
from .cuda_generic import GENERIC_SOURCE
from .layout import generic_threads


def kernel_specs(models: Sequence, block: int = BLOCK, variant: dict = warp.TUNED_VARIANT,
                 kinds=("ssv", "msv", "vf"), forward: bool = True) -> list:
    """(source, defines) of every distinct module the warp backend loads for ``models``
    (ProfileModels): each kind's filter kernel, and the pipeline's generic Forward."""
    seen: dict = {}
    launches = [(kind, variant) for kind in kinds]
    if "msv" in kinds:                 # the full MSV over a short list (HMMER's recomputes)
        launches.append(("msv", warp.short_list_variant(variant)))
    for m in models:
        for kind, v in launches:
            Q, words = warp.profile(m, kind, v)
            d = warp.defines(m, kind, Q, v, block)
            smem = 4 * words.size if v["smem"] else 0             # as CudaProfile._launch
            d["PROFILE_SMEM"] = int(0 < smem <= SMEM_LIMIT)
            seen[(FILTERS_SOURCE, tuple(sorted(d.items())))] = (FILTERS_SOURCE, d)
        if forward:
            d = {"MODEL_M": m.M, "THREADS": generic_threads(m.M), "FORWARD": 1}
            seen[(GENERIC_SOURCE, tuple(sorted(d.items())))] = (GENERIC_SOURCE, d)
    return list(seen.values())


def precompile(specs: Sequence, threads: int = 16) -> int:
    """Build ``specs`` ((source, defines) pairs) into PyCUDA's disk cache, ``threads`` nvcc at
    once; returns how many."""
    return glue.build_into_cache(specs, threads)
