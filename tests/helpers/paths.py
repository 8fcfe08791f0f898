"""Where the tests find the tree and the real data sets."""
from __future__ import annotations

import os
from pathlib import Path

#: The repository root (the folder holding setup.cfg).
REPO = Path(__file__).resolve().parents[2]
#: The real Pair-HMM data sets beside the checkout (CI has them at ../shared).
SHARED_DATA = REPO.parent / "shared" / "data" / "pairhmm"


def data_dirs() -> list:
    """Folders that may hold the real data sets: $HMMBENCH_DATA_PATH's, then ../shared's."""
    dirs = [Path(p) for p in os.environ.get("HMMBENCH_DATA_PATH", "").split(os.pathsep) if p]
    return dirs + [SHARED_DATA]
