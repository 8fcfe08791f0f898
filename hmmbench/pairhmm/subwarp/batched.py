"""Calls in flight run as one ("batched launches"): a caller that keeps several
regions outstanding (``hmmbench run --in-flight N``, a HaplotypeCaller working on several active
regions) has handed them over before it needs the first result, so they can reach the device as
one call: one staging, one upload, one set of launches and one copy back for up to N regions
instead of N of each. A per-region call is bound by that fixed cost, not by its few thousand
pairs.

A batch takes every call submitted while it is open and runs when the oldest of them is
collected (then the next call opens a new batch). Each call's Execution is its share of the
batch's: its own pairs' results, the stage times split by its share of the pairs (their sums are
the batch's), the float64 recomputes counted once (on the batch's first call), the batch's info
with ``batched_calls``. With one call in flight a batch is that call alone.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ...backend import Execution
from ..model import PairSet


class CallBatches:
    """``submit(pairs)`` for a backend whose ``run_one(pairs) -> Execution`` runs one call."""

    def __init__(self, run_one: Callable[[PairSet], Execution]):
        self._run_one = run_one
        self._open: "CallBatch | None" = None

    def submit(self, pairs: PairSet) -> "BatchedCall":
        if self._open is None or self._open.ran:
            self._open = CallBatch(self._run_one)
        return self._open.add(pairs)


class CallBatch:
    """The calls of one batch; run (as one call) the first time one of them is collected."""

    def __init__(self, run_one: Callable[[PairSet], Execution]):
        self._run_one = run_one
        self.parts: list = []
        self._outs: "list | None" = None
        self._error: "BaseException | None" = None

    @property
    def ran(self) -> bool:
        return self._outs is not None or self._error is not None

    def add(self, pairs: PairSet) -> "BatchedCall":
        self.parts.append(pairs)
        return BatchedCall(self, len(self.parts) - 1)

    def executions(self) -> list:
        if self._error is not None:            # every call of a failed batch fails, once run
            raise self._error
        if self._outs is None:
            parts = self.parts
            whole = parts[0] if len(parts) == 1 else PairSet.concatenate(parts)
            try:
                self._outs = split(self._run_one(whole), [p.n_pairs for p in parts])
            except BaseException as exc:
                self._error = exc
                raise
        return self._outs


class BatchedCall:
    """A submitted call's handle: ``result()`` runs its batch if it has not run yet."""

    def __init__(self, batch: CallBatch, index: int):
        self._batch, self._index = batch, index

    def result(self) -> Execution:
        return self._batch.executions()[self._index]


def split(whole: Execution, sizes: list) -> list:
    """The Executions of consecutive calls of ``sizes`` pairs that ran as ``whole``."""
    if len(sizes) == 1:
        return [whole]
    total = sum(sizes)
    ends = np.cumsum(sizes)
    info = {**whole.info, "batched_calls": len(sizes)}
    out = []
    for i, (n, end) in enumerate(zip(sizes, ends)):
        share = n / total if total else 1 / len(sizes)
        out.append(Execution(log10=whole.log10[end - n:end],
                             timing={k: v * share for k, v in whole.timing.items()},
                             n_fallback=whole.n_fallback if i == 0 else 0, info=info,
                             untimed_s=whole.untimed_s * share))
    return out
