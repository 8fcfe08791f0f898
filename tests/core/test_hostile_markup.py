"""Markup in every string a report prints (a backend, dataset, device or reason of a result
file): loaded and shown by report (table, markdown, pivot), compare and history with exit 0,
never the exit 3 of rich's MarkupError."""
from __future__ import annotations

import pytest

from hmmbench import cli
from helpers.hostile_world import edited_document, put, world  # noqa: F401 - world is a fixture


def _run_edit(**fields):
    def edit(doc):
        doc["runs"][0].update(fields)
    return edit


MARKUP = ["[/]", "[bold]x", "[/red]", "[link=file:///etc]y[/link]", "\x1b[31mred"]
FIELDS = ["backend", "dataset", "device", "reason"]


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("text", MARKUP)
def test_markup_in_a_result_file(world, capsys, field, text):
    """Loaded and shown by report (table, markdown, pivot, html), compare and history: exit 0."""
    doc = edited_document(_run_edit(**{field: text}))
    path = put(world, "m.json", doc.encode())
    for argv in (["report", path], ["report", path, "--format", "markdown"],
                 ["report", path, "--pivot", "total"], ["compare", path, path],
                 ["history", path, path, "--min-files", "1"],
                 ["report", path, "--html", "page.html", "--quiet"]):
        capsys.readouterr()
        code = cli.main(argv)
        captured = capsys.readouterr()
        assert code == 0, (argv, captured.err)
        assert "Traceback" not in captured.err and "unexpected" not in captured.err
