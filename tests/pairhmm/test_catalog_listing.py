"""The dataset catalog (hmmbench list, datasets list) lists every set without drawing a chunk
set's plan: NA12878's takes seconds, and a listing must not."""
from __future__ import annotations

import pytest

from hmmbench.pairhmm.datasets import chunks
from hmmbench.pairhmm.workload import WORKLOAD


def test_the_catalog_draws_no_chunk_plan(monkeypatch):
    def refuse(*args, **kw):
        raise AssertionError("the catalog drew a chunk plan")
    monkeypatch.setattr(chunks, "make_plan", refuse)
    (table,) = WORKLOAD.catalog_tables()
    rows = {str(r[0]): [str(c) for c in r] for r in table.rows}
    na12878 = next(v for k, v in rows.items() if k.startswith("chunks-na12878"))
    assert na12878[2] == "55.1M" and na12878[3] == "when run"
    # a set with a known size still shows its cells
    assert any(v[3] not in ("when run", "", "-") for k, v in rows.items() if k == "tiny")


def test_a_chunk_sets_cells_are_drawn_when_asked():
    ds = chunks.chunks_dataset("chunks@2000")
    assert not ds.plan_drawn
    assert ds.n_cells > 0 and ds.plan_drawn
