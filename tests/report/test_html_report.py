"""The HTML report: one self-contained page (no scripts, nothing from the network) whose every
chart has data; parsed in Python always, loaded in headless Chromium when it is installed."""
from __future__ import annotations

import shutil
import subprocess
from html.parser import HTMLParser

import pytest

from helpers.paths import REPO
from hmmbench import cli, results

FILES = [REPO / "results" / "h200" / "table3.json", REPO / "results" / "h100" / "profile-curve-a.json",
         REPO / "results" / "h100" / "apis-merged.json"]


class PageParser(HTMLParser):
    """Collects each svg's data marks, external references and scripts."""

    def __init__(self):
        super().__init__()
        self.svgs: list = []        # marks per svg
        self.external: list = []
        self.scripts = 0
        self.sections: list = []
        self._in_h2 = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg":
            self.svgs.append(0)
        elif self.svgs and "mark" in (a.get("class") or "").split():
            self.svgs[-1] += 1
        if tag == "script":
            self.scripts += 1
        for k in ("src", "href"):
            v = a.get(k) or ""
            if v and not v.startswith("#"):
                self.external.append(v)
        self._in_h2 = tag == "h2"

    def handle_data(self, data):
        if self._in_h2:
            self.sections.append(data.strip())
            self._in_h2 = False


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    files = [f for f in FILES if f.is_file()]
    if len(files) < len(FILES):
        pytest.skip("committed result files missing")
    out = tmp_path_factory.mktemp("html") / "report.html"
    assert cli.main(["report", *map(str, files), "--html", str(out), "--quiet"]) == 0
    return out


def test_page_is_self_contained_and_every_chart_has_data(page):
    p = PageParser()
    p.feed(page.read_text(encoding="utf-8"))
    assert p.scripts == 0 and p.external == []
    assert len(p.svgs) > 20 and all(n > 0 for n in p.svgs), p.svgs
    assert p.sections == ["Files", "Results per file", "Cross-check status of every row"]
    text = page.read_text(encoding="utf-8")
    for what in ("Peak curves over L", "CUDA vs OpenCL twins", "Model-size curves",
                 "stage breakdown", "sources sha256", "GCUPS (giga cell updates per second"):
        assert what in text, what
    # the status table has one row per run of every file
    n_runs = sum(len(results.load(f)["runs"]) for f in FILES)
    status = text.split("Cross-check status of every row")[1]
    assert f"0 of {n_runs} rows are not" in status and status.count("<tr>") == n_runs + 1


def test_html_needs_result_files(tmp_path, capsys):
    bad = tmp_path / "x.json"
    bad.write_text("{}")
    assert cli.main(["report", str(bad), "--html", str(tmp_path / "r.html")]) == 2
    assert not (tmp_path / "r.html").exists()


def _chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(not _chromium(), reason="chromium not installed (apt-get install chromium); "
                                             "the pure-Python page test above still runs")
def test_page_loads_in_headless_chromium(page, tmp_path):
    """The real browser: the DOM it builds keeps every chart's marks, and it logs no errors."""
    base = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
            "--v=0", f"--user-data-dir={tmp_path / 'profile'}"]
    proc = subprocess.run(base + ["--dump-dom", page.as_uri()], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    p = PageParser()
    p.feed(proc.stdout)
    assert len(p.svgs) > 20 and all(n > 0 for n in p.svgs)
    console = [line for line in proc.stderr.splitlines() if "CONSOLE" in line]
    assert console == [], console
    shot = tmp_path / "page.png"
    proc = subprocess.run(base + [f"--screenshot={shot}", "--window-size=1400,2000",
                                  page.as_uri()], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and shot.read_bytes()[:4] == b"\x89PNG"


def test_index_of_the_committed_results_lists_every_file(tmp_path):
    """`make results-index`'s page (generated, never committed) names every committed file."""
    files = sorted((REPO / "results").glob("*/*.json"))
    if not files:
        pytest.skip("no committed results/")
    index = tmp_path / "index.html"
    assert cli.main(["report", *map(str, files), "--html", str(index), "--quiet"]) == 0
    text = index.read_text(encoding="utf-8")
    missing = [f.relative_to(REPO).as_posix() for f in files
               if f.relative_to(REPO).as_posix() not in text]
    assert not missing, missing
    p = PageParser()
    p.feed(text)
    assert p.scripts == 0 and p.external == [] and all(n > 0 for n in p.svgs)
