"""Fakes shared by the runner/results/CLI tests: toy backends and small packed datasets.

The fake "reference" computes a cheap closed form per pair, so tests need neither the real
NumPy reference nor data files.
"""
from __future__ import annotations

import hashlib
from typing import Optional

import numpy as np

from hmmbench.backend import Backend, Execution, Limits
from hmmbench.dataset import Dataset
from hmmbench.pairhmm.model import Batch, PairSet, Read, pack


def toy_log10(pairs: PairSet) -> np.ndarray:
    """A deterministic stand-in for the forward algorithm (depends on lengths and bases)."""
    r = pairs.pair_read_lengths.astype(np.float64)
    h = pairs.pair_hap_lengths.astype(np.float64)
    first = pairs.read_bases[pairs.read_offsets[pairs.pair_read]] if pairs.n_pairs else r
    return -(0.1 * r + 0.01 * h + 0.001 * first)


class ToyBackend(Backend):
    api, family, precision = "numpy", "toy", "float64"

    def __init__(self, name: str, offset: float = 0.0, raise_on_run: Optional[str] = None,
                 unavailable: Optional[str] = None, nan: bool = False, fallback: int = 0,
                 clocks=None, limits: Limits = Limits()):
        super().__init__(offset=offset)
        self.name, self.offset, self.raise_on_run = name, offset, raise_on_run
        self._unavailable, self.nan, self.fallback = unavailable, nan, fallback
        self.clocks = list(clocks or [])
        self.limits = limits
        self.calls = 0
        self.closed = False

    def unavailable_reason(self):
        return self._unavailable

    def device_name(self):
        return "Toy CPU"

    def run(self, pairs: PairSet) -> Execution:
        self.calls += 1
        if self.raise_on_run:
            raise RuntimeError(self.raise_on_run)
        out = toy_log10(pairs) + self.offset
        if self.nan and len(out):
            out[0] = np.nan
        info = {"path": "toy"}
        if self.clocks:
            info["sm_clock_mhz"] = self.clocks[min(self.calls - 1, len(self.clocks) - 1)]
        return Execution(log10=out, timing={"prep": 1e-6, "kernel": 2e-6}, n_fallback=self.fallback,
                         info=info)

    def close(self):
        self.closed = True


def toy_batches(n_batches: int = 3, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    batches = []
    for _ in range(n_batches):
        reads = []
        for _ in range(int(rng.integers(1, 4))):
            n = int(rng.integers(3, 12))
            bases = rng.choice(list(b"ACGTN"), n).astype(np.uint8).tobytes()
            q = bytes([33 + 30] * n)
            reads.append(Read(bases, q, bytes([33 + 45] * n), bytes([33 + 45] * n),
                              bytes([33 + 10] * n)))
        haps = [rng.choice(list(b"ACGT"), int(rng.integers(5, 20))).astype(np.uint8).tobytes()
                for _ in range(int(rng.integers(1, 3)))]
        batches.append(Batch(reads, haps))
    return batches


def toy_dataset(name: str = "toy", n_batches: int = 3, seed: int = 0) -> Dataset:
    pairs = pack(toy_batches(n_batches, seed))
    sha = hashlib.sha256(f"{name}:{n_batches}:{seed}".encode()).hexdigest()
    return Dataset(name=name, kind="synthetic", description="toy", sha256=sha,
                   loader=lambda: pairs)


def toy_lazy_dataset(name: str = "toy-lazy", n_chunks: int = 3) -> Dataset:
    chunks = [pack(toy_batches(4, seed=s)) for s in range(n_chunks)]
    sha = hashlib.sha256(f"{name}:{n_chunks}".encode()).hexdigest()
    return Dataset(name=name, kind="chunks", description="toy lazy", sha256=sha,
                   chunk_loader=lambda: iter(chunks),
                   n_pairs=sum(c.n_pairs for c in chunks), n_cells=sum(c.cells for c in chunks))


def launches_by_batch(pairs: PairSet, mode: str) -> list:
    """A minimal chunking function: 'original' = a launch per batch, 'merged' = one launch."""
    from hmmbench.errors import UserError
    if mode == "merged":
        return [pairs]
    if mode == "original":
        return [pairs.select_batches(b, b + 1) for b in range(pairs.n_batches)]
    raise UserError(f"unknown chunking mode '{mode}'")


def toy_reference() -> ToyBackend:
    return ToyBackend("numpy")
