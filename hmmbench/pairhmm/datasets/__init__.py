"""Datasets by name: the real public sets, seeded synthetic sets, chunk generators, or a file.

``resolve(name)`` accepts
* a real set's short name: ``tiny``, ``10s``, ``1m`` (block format, shipped with hmmbench in
  ``data/`` beside this module, with their provenance and license),
  ``gatk-java``, ``gatk-avx`` (GATK's expected results), ``gkl-testdata`` (GKL's test pairs);
  files are looked up in ``$HMMBENCH_DATA_PATH`` (colon-separated folders), then in the shipped
  ``data/``, then in the user cache (``<user cache>/data``, where ``hmmbench datasets fetch``
  puts them);
* a synthetic name (``ren16-t1.K``, ``ren18-t1.K``, ``ren18-t3.K``, ``equal-L``, ``shape-RxH``,
  each with optional ``@PAIRS`` and ``:seed=S``; see :mod:`.synthetic`);
* a chunk set (``chunks-na12878``, ``chunks@PAIRS``; see :mod:`.chunks`);
* a path to a file: GATK 7-field format when its first line is a ``#`` header or has 7 fields,
  block format otherwise.
"""
from __future__ import annotations

import hashlib
import os
from functools import partial
from pathlib import Path
from typing import Optional

from ...cachedir import user_cache_dir
from ...dataset import Dataset
from ...errors import InputError, UnknownName, UserError
from ...fileio import input_problem
from .blockfmt import load_block
from .chunks import chunks_dataset
from .gatkfmt import load_gatk
from .synthetic import REN18_T1, synthetic_dataset, table_names

UPSTREAM = "https://raw.githubusercontent.com/MauricioCarneiro/PairHMM/8838c74/test_data/"


class RealSet:
    """A public data file: where it comes from and what it must contain."""

    def __init__(self, name, filename, fmt, sha256, pairs, cells, description, fetchable=False):
        self.name, self.filename, self.fmt, self.sha256 = name, filename, fmt, sha256
        self.pairs, self.cells, self.description = pairs, cells, description
        self.fetchable = fetchable

    @property
    def url(self) -> Optional[str]:
        return UPSTREAM + self.filename if self.fetchable else None


# sha256 sums and sizes as published with the data (../shared/data/pairhmm/PROVENANCE.txt).
REAL_SETS = {s.name: s for s in [
    RealSet("tiny", "tiny.in", "block",
            "ddb443fc1d5d1a58b48fa41986fa1949c25ab8677942697094fea2821cfcdfba", 332, 492_820,
            "Carneiro PairHMM test data, 3 regions", fetchable=True),
    RealSet("10s", "10s.in", "block",
            "8445a8adccc6ff1c84c4197b5bb2224ed06f6b40e6778114d5410e3896a5dbad", 3_550, 62_380_634,
            "the '10s' set of Ren et al. 2018 and gpuPairHMM, 7 regions", fetchable=True),
    RealSet("1m", "1m.in", "block",
            "0d19f40c066ca07df875375f4d4dc43c54c3a46fb7166448b9b5b91dbaa9fca0", 29_307,
            420_144_629, "real per-active-region chunks, 110 regions", fetchable=True),
    RealSet("gatk-java", "gatk-expected.Java.hmmresults.txt", "gatk",
            "8f9fcd085675f50fd7fb423ef8b67c5b7641791645b84e7cc1e706a3f622fb50", 284, 387_778,
            "GATK test pairs with GATK4 Java (exact) expected results"),
    RealSet("gatk-avx", "gatk-expected.AVX.hmmresults.txt", "gatk",
            "0c80ff80437c171b62cf5055d92ece3818b120aaa1c387cbf98da24040ed6575", 284, 387_778,
            "GATK test pairs with GKL AVX (float) expected results"),
    RealSet("gkl-testdata", "gkl-pairhmm-testdata.txt", "gatk",
            "598c5a3cedb9aaa10a0da258a9d6272ef51e4b59262dea90293fe0c6d9a86244", 104, 754_121,
            "GKL's Pair-HMM test pairs with expected results"),
]}

#: Pairs per synthetic set in the default run (keeps every CPU backend to a few minutes).
DEFAULT_RUN_PAIRS = 1000
EXAMPLE_EQUAL = (32, 64, 128, 256)


# --- where files are ---------------------------------------------------------------------------
def cache_dir() -> Path:
    return user_cache_dir() / "data"


#: The real sets that ship inside the package (tiny, 10s, 1m).
SHIPPED_DIR = Path(__file__).resolve().parent / "data"


def search_dirs() -> list[Path]:
    dirs = [Path(d) for d in os.environ.get("HMMBENCH_DATA_PATH", "").split(os.pathsep) if d]
    return dirs + [SHIPPED_DIR, cache_dir()]


def find_file(filename: str) -> Optional[Path]:
    """The first ``filename`` in the search folders (whatever it is: the caller checks that it
    is a regular file, so that a FIFO there is named as one, not called missing)."""
    for d in search_dirs():
        p = d / filename
        if os.path.lexists(p):
            return p
    return None


def _found_file(filename: str) -> Optional[Path]:
    """``find_file``, but only a readable regular file (the catalog lists, never blocks)."""
    p = find_file(filename)
    return p if p is not None and input_problem(p) is None else None


def file_sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def detect_format(path) -> str:
    """'gatk' when the first non-blank line is a '#' header or has 7 fields, else 'block'."""
    with open(path, "rb") as fh:
        for line in fh:
            if line.strip():
                return "gatk" if line.startswith(b"#") or len(line.split()) == 7 else "block"
    return "block"   # empty: the block loader reports it


_LOADERS = {"block": load_block, "gatk": load_gatk}


# --- datasets ----------------------------------------------------------------------------------
def _real_dataset(spec: RealSet, path: Optional[Path]) -> Dataset:
    """The Dataset record of a real set; ``path`` None when it is not found (catalog only)."""
    sha = file_sha256(path) if path is not None else spec.sha256
    known = sha == spec.sha256
    return Dataset(name=spec.name, kind=spec.fmt,
                   description=f"{spec.description} ({spec.filename})",
                   sha256=sha, path=None if path is None else str(path),
                   loader=None if path is None else partial(_LOADERS[spec.fmt], path),
                   n_pairs=spec.pairs if known else None, n_cells=spec.cells if known else None,
                   params={"file": spec.filename})


def _missing(spec: RealSet) -> UserError:
    where = ", ".join(str(d) for d in search_dirs())
    if spec.fetchable:
        how = (f"run `hmmbench datasets fetch {spec.name}` or set HMMBENCH_DATA_PATH to a folder "
               f"holding {spec.filename}")
    else:
        how = f"set HMMBENCH_DATA_PATH to a folder holding {spec.filename}"
    return UserError(f"dataset '{spec.name}' not found: looked for {spec.filename} in {where}; "
                     f"{how}")


def _file_dataset(path: Path) -> Dataset:
    try:
        fmt, sha = detect_format(path), file_sha256(path)
    except OSError as exc:
        raise InputError(str(path), None, f"cannot read: {exc.strerror or exc}") from None
    ds = Dataset(name=path.name, kind=fmt, description=f"{fmt} file {path}",
                 sha256=sha, path=str(path),
                 loader=partial(_LOADERS[fmt], path), params={"file": str(path)})
    ds.load()   # a user's file is checked now, so that a bad one fails before any work
    return ds


def _looks_like_path(name: str) -> bool:
    return (os.sep in name or name.startswith(".") or name.endswith((".in", ".txt"))
            or os.path.lexists(name))


def resolve(name: str) -> Dataset:
    """A Dataset by name or path (nothing is loaded or generated yet)."""
    name = str(name).strip()
    if name in REAL_SETS:
        spec = REAL_SETS[name]
        path = find_file(spec.filename)
        if path is None:
            raise _missing(spec)
        problem = input_problem(path)
        if problem:
            raise InputError(str(path), None, f"dataset '{name}': {problem}")
        return _real_dataset(spec, path)
    for make in (synthetic_dataset, chunks_dataset):
        ds = make(name)
        if ds is not None:
            return ds
    if _looks_like_path(name):
        path = Path(name)
        if not os.path.lexists(path) and path.name == name:  # a bare file name: search the folders
            path = find_file(name) or path
        problem = input_problem(path)
        if problem == "not found":
            where = ", ".join(str(d) for d in search_dirs())
            raise UserError(f"dataset file '{name}' not found (also looked in {where})"
                            if path.name == name else f"dataset file '{name}' not found")
        if problem:
            raise InputError(str(path), None, problem)
        return _file_dataset(path)
    raise UnknownName("dataset", name, [*REAL_SETS, *NAME_PATTERNS],
                      hint="; generated sets take an optional @PAIRS (e.g. @1e6) and :seed=S; "
                           "a file path also works")


#: Generated names as the user would type them (for messages).
NAME_PATTERNS = ("ren16-t1.1..8", "ren18-t1.1..6", "ren18-t3.1..26", "equal-L", "shape-RxH",
                 "chunks", "chunks-na12878")


def valid_names() -> list[str]:
    return [*REAL_SETS, *table_names(), *(f"equal-{n}" for n in EXAMPLE_EQUAL), "chunks",
            "chunks-na12878"]


def catalog() -> list[Dataset]:
    """Everything known by name, real sets marked found or not; nothing loaded or generated."""
    out = [_real_dataset(spec, _found_file(spec.filename)) for spec in REAL_SETS.values()]
    out += [resolve(n) for n in valid_names() if n not in REAL_SETS]
    return out


def default_run_set() -> list[Dataset]:
    """Small sets for `hmmbench run` without --dataset: ~1.5e8 cells per backend.

    Ren 2018 Table 1 (6 equal-length shapes, 5.2e7 cells at 1000 pairs), Table 3 set 26
    (128x256, 3.3e7 cells) and, when found, the real 10s set (6.2e7 cells).
    """
    names = [f"ren18-t1.{k}@{DEFAULT_RUN_PAIRS}" for k in range(1, len(REN18_T1) + 1)]
    names.append(f"ren18-t3.26@{DEFAULT_RUN_PAIRS}")
    sets = [resolve(n) for n in names]
    if _found_file(REAL_SETS["10s"].filename) is not None:
        sets.append(resolve("10s"))
    return sets


# --- fetching -----------------------------------------------------------------------------------
def _downloader():
    """How fetch downloads (tests replace it to serve a local copy): pooch's HTTP downloader."""
    import pooch  # optional dependency (the fetch extra), imported on first use
    return pooch.HTTPDownloader(timeout=60, progressbar=False)


def fetch(name: str, dest: Optional[os.PathLike] = None) -> Path:
    """The path of a fetchable real set: where it already is (``dest`` None), else downloaded
    into ``dest`` (default: the user cache) with pooch, which checks the sha256 and moves the
    file into place only once it matches, so an interrupted or wrong download never leaves a
    file under the final name."""
    spec = REAL_SETS.get(name)
    if spec is None or not spec.fetchable:
        fetchable = [s.name for s in REAL_SETS.values() if s.fetchable]
        raise UnknownName("fetchable dataset", name, fetchable)
    if dest is None:                           # already here (shipped, or in a data folder)
        found = find_file(spec.filename)
        if found is not None and file_sha256(found) == spec.sha256:
            return found
    folder = Path(dest) if dest is not None else cache_dir()
    target = folder / spec.filename
    if target.is_file() and file_sha256(target) == spec.sha256:
        return target
    try:
        import pooch  # optional dependency, imported on first use
    except ImportError:
        raise UserError("hmmbench datasets fetch needs pooch (pip install 'hmmbench[fetch]'); "
                        f"or copy {spec.filename} into a folder listed in "
                        "HMMBENCH_DATA_PATH") from None
    pooch.get_logger().setLevel("WARNING")     # its "Downloading ..." notes are not ours to print
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path = pooch.retrieve(spec.url, known_hash=f"sha256:{spec.sha256}", fname=spec.filename,
                              path=folder, downloader=_downloader())
    except ValueError as exc:                  # pooch: the downloaded bytes have another hash
        raise UserError(f"downloaded {spec.filename} does not match its sha256 "
                        f"{spec.sha256}; not saved ({str(exc).splitlines()[0]})") from None
    except OSError as exc:                     # requests' errors are OSErrors too
        reason = getattr(exc, "strerror", None) or str(exc).splitlines()[0] or type(exc).__name__
        raise UserError(f"cannot download {spec.filename} from {spec.url}: {reason} "
                        f"(no network? copy the file into a folder listed in "
                        f"HMMBENCH_DATA_PATH instead)") from None
    return Path(path)
