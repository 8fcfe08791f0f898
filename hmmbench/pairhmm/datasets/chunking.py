"""How a PairSet is cut into kernel launches.

``original``   one launch per batch (per active region, as GATK calls the Pair-HMM)
``merged``     everything in one launch
``merged:N``   consecutive batches regrouped into launches of about N pairs: a batch joins the
               launch in which its first pair falls (launch k covers pairs kN..(k+1)N), so
               batches are never split and launches stay in dataset order. A set too large
               to load (``chunks-na12878``) comes in pieces of 2M pairs; an N past that makes
               the runner join whole pieces into launches of at most N pairs, before its
               timer starts (``Workload.launch_items``).

Concatenating the launches always gives back the pairs in their original order.
"""
from __future__ import annotations

import re

import numpy as np

from ...errors import UserError
from ..model import PairSet
from .synthetic import parse_count

MODES = ("original", "merged", "merged:N")


def parse_mode(mode: str) -> tuple[str, int]:
    """('original'|'merged', N) -- N is 0 unless 'merged:N'. Bad modes are a UserError."""
    text = str(mode).strip()
    if text in ("original", "merged"):
        return text, 0
    m = re.fullmatch(r"merged:(\S+)", text)
    if m:
        return "merged", parse_count(m[1], what="launch size in 'merged:N'")
    raise UserError(f"unknown chunking mode '{mode}' (use original, merged, or merged:N with N a "
                    f"pair count such as merged:100000 or merged:1e6)")


def launch_bounds(pairs: PairSet, mode: str) -> list[tuple[int, int]]:
    """Batch ranges [start, stop) of each launch."""
    kind, size = parse_mode(mode)
    nb = pairs.n_batches
    if nb == 0:
        return []
    if kind == "original":
        return [(b, b + 1) for b in range(nb)]
    if size == 0:
        return [(0, nb)]
    group = pairs.batch_pairs[:-1] // size
    cut = np.flatnonzero(np.diff(group)) + 1
    edges = np.concatenate([[0], cut, [nb]])
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:])]


def launches(pairs: PairSet, mode: str) -> list[PairSet]:
    """The PairSets handed to a backend, one per launch, in dataset order."""
    bounds = launch_bounds(pairs, mode)
    if len(bounds) == 1 and bounds[0] == (0, pairs.n_batches):
        return [pairs]
    return [pairs.select_batches(a, b) for a, b in bounds]
