"""Shard planning: a unit cut into contiguous runs of whole atoms (pair-HMM batches, i.e. active
regions; profile sequences) of about equal cost in DP cells, one run per worker.

Contiguous runs keep the gather trivial: the shards' results joined in shard order are the unit's
results in dataset order. Workload-free: the atoms and their costs come from the workload
(:meth:`hmmbench.workload.Workload.shard_costs` / ``shard``).
"""
from __future__ import annotations

import numpy as np

from ..dataset import joined_unit


def balance(costs, n_shards: int) -> list:
    """``n_shards`` (start, stop) atom ranges covering ``costs`` in order, each cut where the
    running cost crosses a multiple of total / n_shards: every shard is within one atom's cost of
    the mean. Shards may be empty (fewer atoms than shards, or zero cost)."""
    if n_shards < 1:
        raise ValueError("n_shards must be at least 1")
    costs = np.asarray(costs, dtype=np.float64)
    cum = np.cumsum(costs)
    total = float(cum[-1]) if len(cum) else 0.0
    if total <= 0:
        # no cost to balance: split the atoms evenly by count
        cuts = [round(len(costs) * k / n_shards) for k in range(1, n_shards)]
    else:
        targets = total * np.arange(1, n_shards) / n_shards
        # the atom whose running cost first reaches the target ends the shard, unless ending
        # just before it comes closer to the target
        idx = np.searchsorted(cum, targets, side="left")
        before = np.where(idx > 0, cum[np.maximum(idx - 1, 0)], 0.0)
        cuts = np.where(np.abs(before - targets) < np.abs(cum[np.minimum(idx, len(cum) - 1)]
                                                          - targets), idx, idx + 1).tolist()
    edges = [0] + [min(max(int(c), 0), len(costs)) for c in cuts] + [len(costs)]
    edges = np.maximum.accumulate(edges)
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:])]


def shard_bounds(workload, unit, n_shards: int) -> list:
    """The atom ranges of a unit's shards (see :func:`balance`)."""
    return balance(workload.shard_costs(unit), n_shards)


def shard_of(workload, unit, n_shards: int, index: int):
    """Shard ``index`` of ``n_shards`` of a unit, as a unit of its own."""
    start, stop = shard_bounds(workload, unit, n_shards)[index]
    return workload.shard(unit, start, stop)


def joined(units, size: int):
    """Consecutive units joined ``size`` at a time, in order (the last join may hold fewer)."""
    group: list = []
    for unit in units:
        group.append(unit)
        if len(group) == size:
            yield joined_unit(group)
            group = []
    if group:
        yield joined_unit(group)
