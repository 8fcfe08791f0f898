"""cProfile text of a run of calls, shared by the sub-warp probes (scripts/subwarp_*_probe.py)."""
from __future__ import annotations

import cProfile
import io
import pstats


def profile_calls(run, items, lines: int) -> str:
    """The ``lines`` costliest functions by own time of ``run(item)`` for every item."""
    prof = cProfile.Profile()
    prof.enable()
    for item in items:
        run(item)
    prof.disable()
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(lines)
    return text.getvalue()
