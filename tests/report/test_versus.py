"""Head-to-head ratios: kernel to kernel and end to end, only between rows of one cell of one run,
a peer's own pipeline timer where it has one."""
from __future__ import annotations

import io

import pytest
from rich.console import Console

from hmmbench.errors import UserError
from hmmbench.report import TerminalPrinter
from hmmbench.report.versus import versus, versus_listing


def run(backend, dataset="equal-512@1e5", status="ok", kernel=1.0, total=2.0, in_flight=1,
        **stages):
    timing = {"prep": 0.0, "h2d": 0.0, "kernel": kernel, "d2h": 0.0, "total": total, **stages}
    return {"dataset": dataset, "chunking": "merged", "backend": backend, "status": status,
            "timing_s": timing, "gcups_kernel": 100 / kernel if kernel else None,
            "gcups_total": 100 / total, "cells": int(1e11), "in_flight": in_flight, "reason": ""}


def test_ratios_are_the_peers_time_over_ours_kernel_and_pipeline():
    runs = [run("peer-x", kernel=3.0, total=9.0, batch=4.0), run("ours", kernel=1.5, total=2.0)]
    (x,) = versus(runs, "peer-x")
    assert x.backend == "ours" and x.kernel == pytest.approx(2.0)
    assert x.total == pytest.approx(2.0)          # its batch (4.0) against our total (2.0)


def test_without_a_pipeline_stage_totals_meet_and_without_a_kernel_there_is_no_kernel_ratio():
    runs = [run("peer-x", kernel=0.0, total=6.0), run("ours", kernel=1.0, total=2.0)]
    (x,) = versus(runs, "peer-x")
    assert x.kernel is None and x.total == pytest.approx(3.0)


def test_rows_of_other_cells_or_calls_in_flight_are_never_matched():
    runs = [run("peer-x", dataset="10s"), run("ours", dataset="1m"),
            run("peer-x", dataset="1m", in_flight=4), run("ours", dataset="1m", kernel=0.5)]
    assert versus(runs, "peer-x") == []
    with pytest.raises(UserError, match="no cell of these runs holds that backend"):
        versus_listing(runs, "peer-x")


def test_a_failed_row_has_no_ratio_and_a_peer_off_on_some_pairs_is_named():
    runs = [run("peer-x", status="mismatch", kernel=2.0, total=4.0),
            run("ours", kernel=1.0, total=2.0), run("broken", status="error")]
    got = {x.backend: x for x in versus(runs, "peer-x")}
    assert got["ours"].kernel == pytest.approx(2.0) and got["broken"].kernel is None
    listing = versus_listing(runs, "peer-x")
    notes = " ".join("".join(map(str, n)) for n in listing.notes)
    assert "peer-x mismatch" in notes


@pytest.mark.parametrize("width", [80, 120])
def test_the_table_keeps_names_and_ratios_at_any_width(width):
    name = "cuda-subwarp-exp-above[exp_above=256]"
    runs = [run("peer-gpupairhmm", kernel=3.0, total=9.0, batch=4.0),
            run(name, kernel=1.5, total=2.0)]
    console = Console(width=width, record=True, file=io.StringIO())
    TerminalPrinter(console).print_listing(versus_listing(runs, "peer-gpupairhmm"))
    text = console.export_text()
    assert name in text.replace("\n", "") or name in " ".join(text.split())
    assert "2.00x" in text and max(len(line) for line in text.splitlines()) <= width
