"""Today's names of the parameterized Pair-HMM backends, shared by both APIs' host modules: the
aliases of their backend families (:class:`hmmbench.registry.BackendFamily`)."""
from __future__ import annotations

from typing import Optional


def inter_task_alias(p: dict, api: str) -> Optional[str]:
    """``{api}-inter-naive``, ``{api}-inter-tile4-sorted``, ... for the parameters they stand for;
    None for variants with a block or local size of their own (they get the generic name)."""
    if p.get("local") or p.get("block", 128) != 128:
        return None
    return (f"{api}-inter-" + ("naive" if p["tile"] == 1 else f"tile{p['tile']}")
            + ("-sorted" if p["sorted"] else ""))
