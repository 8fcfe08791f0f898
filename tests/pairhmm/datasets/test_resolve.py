"""Name resolution, the catalog, the default run set and fetching."""
from __future__ import annotations

import hashlib
import io
import os
import shutil
from pathlib import Path

import pytest

from helpers.paths import REPO, SHARED_DATA
from hmmbench.pairhmm import datasets as D
from hmmbench.errors import UnknownName, UserError

#: The real sets as shipped (a copy of the published files, checked by sha256 below).
REAL = D.SHIPPED_DIR
DATA = Path(os.environ.get("HMMBENCH_TEST_DATA",
                           SHARED_DATA))
needs_data = pytest.mark.skipif(not (DATA / "tiny.in").exists(),
                                reason=f"real data not found in {DATA}")


@pytest.fixture
def no_data(monkeypatch, tmp_path):
    """No data folders, no shipped sets (an install without its package data) and an empty
    user cache."""
    monkeypatch.delenv("HMMBENCH_DATA_PATH", raising=False)
    monkeypatch.delenv("HMMBENCH_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(D, "SHIPPED_DIR", tmp_path / "no-package-data")
    return tmp_path


@pytest.fixture
def with_data(no_data, monkeypatch):
    monkeypatch.setenv("HMMBENCH_DATA_PATH", os.pathsep.join([str(no_data / "empty"), str(DATA)]))


@needs_data
@pytest.mark.parametrize("name, kind, pairs", [
    ("tiny", "block", 332), ("10s", "block", 3550), ("1m", "block", 29_307),
    ("gatk-java", "gatk", 284), ("gatk-avx", "gatk", 284), ("gkl-testdata", "gatk", 104),
])
def test_real_sets_by_short_name(with_data, name, kind, pairs):
    ds = D.resolve(name)
    assert ds.kind == kind and ds.n_pairs == pairs and Path(ds.path).parent == DATA
    assert ds.sha256 == hashlib.sha256(Path(ds.path).read_bytes()).hexdigest()
    ps = ds.load()
    assert ps.n_pairs == pairs and ps.cells == ds.n_cells
    assert (ps.expected is not None) == (kind == "gatk")


def test_missing_real_set_says_where_and_how(no_data):
    """An install without its package data (no_data): the shipped sets can be fetched."""
    with pytest.raises(UserError) as info:
        D.resolve("1m")
    msg = str(info.value)
    assert str(no_data / "xdg" / "hmmbench" / "data") in msg
    assert "hmmbench datasets fetch 1m" in msg and "HMMBENCH_DATA_PATH" in msg
    with pytest.raises(UserError, match="HMMBENCH_DATA_PATH to a folder holding "
                                        "gkl-pairhmm-testdata.txt"):
        D.resolve("gkl-testdata")


@needs_data
def test_user_cache_is_searched(no_data):
    cache = no_data / "xdg" / "hmmbench" / "data"
    cache.mkdir(parents=True)
    shutil.copy(DATA / "tiny.in", cache / "tiny.in")
    assert Path(D.resolve("tiny").path) == cache / "tiny.in"


def test_unknown_name_lists_valid_names(no_data):
    with pytest.raises(UnknownName) as info:
        D.resolve("bogus")
    msg = str(info.value)
    for name in ("tiny", "10s", "gatk-java", "ren18-t3.1..26", "equal-L", "chunks-na12878"):
        assert name in msg


def test_file_paths_by_content(no_data, tmp_path):
    block = tmp_path / "x.data"
    block.write_text("1 1\nACGT IIII IIII IIII ++++\nACGTT\n")
    gatk = tmp_path / "y.data"
    gatk.write_text("ACGTT ACGT IIII IIII IIII ++++ -1.5e+00\n")
    a, b = D.resolve(str(block)), D.resolve(str(gatk))
    assert (a.kind, b.kind) == ("block", "gatk")
    assert a.load().n_pairs == 1 and list(b.load().expected) == [-1.5]
    assert a.sha256 == hashlib.sha256(block.read_bytes()).hexdigest()
    with pytest.raises(UserError, match="not found"):
        D.resolve(str(tmp_path / "missing.in"))


def test_bad_file_error_is_located(no_data, tmp_path):
    bad = tmp_path / "bad.in"
    bad.write_text("1 1\nACGT IIII IIII IIII +++\nACGT\n")
    with pytest.raises(UserError, match=f"^{bad}:2: read has 4 bases but 3 gap continuation"):
        D.resolve(str(bad)).load()


def test_generated_names_resolve(no_data):
    assert D.resolve("ren18-t3.26@1e6").n_cells == 10 ** 6 * 128 * 256
    assert D.resolve("chunks-na12878").lazy


def test_catalog_lists_everything_without_loading(no_data, monkeypatch):
    monkeypatch.setattr("hmmbench.pairhmm.datasets.synthetic.simulate",
                        lambda *a, **k: pytest.fail("generated"))
    names = [d.name for d in D.catalog()]
    assert names[:6] == ["tiny", "10s", "1m", "gatk-java", "gatk-avx", "gkl-testdata"]
    assert "ren16-t1.8" in names and "ren18-t3.26" in names and "chunks-na12878" in names
    assert len([n for n in names if n.startswith("ren18-t3.")]) == 26
    assert all(d.path is None for d in D.catalog()[:6])      # nothing found here


@needs_data
def test_default_run_set_is_small(with_data):
    sets = D.default_run_set()
    names = [d.name for d in sets]
    assert "10s" in names and any(n.startswith("ren18-t1.") for n in names)
    assert sum(d.n_cells for d in sets) < 2e8     # numpy float64 reference: minutes at most


def test_default_run_set_without_files(no_data):
    sets = D.default_run_set()
    assert sets and all(d.kind == "synthetic" for d in sets)


# --- shipped sets -------------------------------------------------------------------------------
def test_shipped_sets_are_the_published_bytes():
    for name in ("tiny", "10s", "1m"):
        spec = D.REAL_SETS[name]
        path = D.SHIPPED_DIR / spec.filename
        assert D.file_sha256(path) == spec.sha256
        assert spec.filename in (D.SHIPPED_DIR / "PROVENANCE.txt").read_text()
    assert "MIT License" in (D.SHIPPED_DIR / "LICENSE").read_text()


def test_shipped_sets_are_found_with_no_environment_variable(tmp_path):
    """A new user's shell: no HMMBENCH_DATA_PATH, an empty user cache, another directory."""
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items()
           if k not in ("HMMBENCH_DATA_PATH", "HMMBENCH_CACHE_DIR")}
    env.update(XDG_CACHE_HOME=str(tmp_path / "xdg"), PYTHONPATH=str(REPO))
    code = ("from hmmbench.pairhmm import datasets as D\n"
            "for n in ('tiny', '10s', '1m'):\n"
            "    ds = D.resolve(n)\n"
            "    print(n, ds.path, ds.load().n_pairs)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    found = {line.split()[0]: line.split()[1:] for line in proc.stdout.splitlines()}
    for name, pairs in (("tiny", 332), ("10s", 3550), ("1m", 29_307)):
        assert Path(found[name][0]).parent == D.SHIPPED_DIR
        assert int(found[name][1]) == pairs


def test_the_data_path_comes_before_the_shipped_sets(monkeypatch, tmp_path):
    own = tmp_path / "mine"
    own.mkdir()
    shutil.copy(D.SHIPPED_DIR / "tiny.in", own / "tiny.in")
    monkeypatch.setenv("HMMBENCH_DATA_PATH", str(own))
    assert Path(D.resolve("tiny").path) == own / "tiny.in"
    assert Path(D.resolve("10s").path).parent == D.SHIPPED_DIR


# --- fetch (pooch) ------------------------------------------------------------------------------
def serve(monkeypatch, content=None, served=None):
    """fetch's downloader replaced by one that serves ``content(url)`` (raising it if it is an
    exception) and writes what pooch asks to its temporary file."""
    def download(url, output_file, pooch_, check_only=False):
        if served is not None:
            served.append(url)
        body = content(url)
        Path(output_file).write_bytes(body)
    monkeypatch.setattr(D, "_downloader", lambda: download)


def test_fetch_without_network_is_one_clear_error(no_data, monkeypatch):
    def offline(url):
        raise ConnectionError("[Errno -3] Temporary failure in name resolution")
    serve(monkeypatch, offline)
    with pytest.raises(UserError) as info:
        D.fetch("tiny")
    msg = str(info.value)
    assert "\n" not in msg and "cannot download tiny.in" in msg and "HMMBENCH_DATA_PATH" in msg
    assert "name resolution" in msg
    folder = no_data / "xdg" / "hmmbench" / "data"
    assert not any(folder.iterdir())                       # no partial file left behind


def test_fetch_success(no_data, monkeypatch):
    served: list = []
    serve(monkeypatch, lambda url: (REAL / Path(url).name).read_bytes(), served)
    path = D.fetch("10s")
    assert path == no_data / "xdg" / "hmmbench" / "data" / "10s.in"
    assert served == [D.UPSTREAM + "10s.in"] and "8838c74" in served[0]
    assert path.read_bytes() == (REAL / "10s.in").read_bytes()
    assert D.resolve("10s").path == str(path)              # found in the cache afterwards
    assert D.fetch("10s") == path and len(served) == 1      # already there: no download
    assert [p.name for p in path.parent.iterdir()] == ["10s.in"]


def test_fetch_of_a_shipped_set_downloads_nothing(monkeypatch, tmp_path):
    monkeypatch.delenv("HMMBENCH_DATA_PATH", raising=False)
    monkeypatch.setenv("HMMBENCH_CACHE_DIR", str(tmp_path / "cache"))
    served: list = []
    serve(monkeypatch, lambda url: b"", served)
    assert D.fetch("1m") == D.SHIPPED_DIR / "1m.in" and not served


def test_fetch_without_pooch_says_which_extra(no_data, monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "pooch", None)        # import pooch -> ImportError
    with pytest.raises(UserError, match=r"needs pooch \(pip install 'hmmbench\[fetch\]'\)"):
        D.fetch("tiny")


def test_fetch_rejects_wrong_bytes(no_data, monkeypatch, tmp_path):
    serve(monkeypatch, lambda url: b"1 1\nA I I I +\nA\n")
    dest = tmp_path / "dest"
    with pytest.raises(UserError, match="sha256"):
        D.fetch("tiny", dest=dest)
    assert list(dest.iterdir()) == []


def test_fetch_unknown_name(no_data):
    with pytest.raises(UnknownName, match="tiny"):
        D.fetch("gatk-java")


@needs_data
def test_bare_file_names_are_searched(with_data):
    ds = D.resolve("gkl-pairhmm-testdata.txt")
    assert ds.kind == "gatk" and Path(ds.path) == DATA / "gkl-pairhmm-testdata.txt"
    with pytest.raises(UserError, match="also looked in"):
        D.resolve("absent.in")
