"""The profile workload's end-to-end table (first search, each further search, hmmsearch, pass
counts; the filters' total/kernel shares) from result files of the ``profile-e2e`` suite.

    python3 scripts/profile_e2e_table.py results/h100/profile-e2e.json [more.json ...]
"""
from __future__ import annotations

import sys

from hmmbench.profile import e2e_table

if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.stdout.write(e2e_table.markdown(e2e_table.load_runs(sys.argv[1:])))
