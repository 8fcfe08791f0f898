"""The tree holds the product: a few reusable tools in scripts/, topic-ordered design notes in docs/,
and no file that says which session or issue made it."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from helpers.paths import REPO

ROOT = REPO

#: "session 12", "Issue 13", "issues 4" ...: the history of the work, which git keeps
WORK_HISTORY = re.compile(r"\b(session|issue)s? ?[0-9]+", re.IGNORECASE)


def tracked(*paths: str) -> list:
    """The files git tracks under ``paths`` (what a clone has), else what is on disk."""
    try:
        out = subprocess.run(["git", "ls-files", "--", *paths], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        out = []
    files = [ROOT / p for p in out] or [p for d in paths for p in (ROOT / d).rglob("*")
                                        if p.is_file()]
    return [p for p in files if p.is_file()]


def test_scripts_are_a_few_tools():
    files = tracked("scripts")
    assert 0 < len(files) <= 8, sorted(p.name for p in files)
    for path in files:
        text = path.read_text()
        assert not WORK_HISTORY.search(text), f"{path.name}: {WORK_HISTORY.search(text)[0]}"
        assert "sys.path" not in text, f"{path.name} edits sys.path"
        assert not re.search(r"^\s*(from|import) tests\b", text, re.M), \
            f"{path.name} imports a test module"


def test_nothing_imports_scripts():
    """What the library or the tests need lives in the package, not in scripts/."""
    pattern = re.compile(r"^\s*(from|import) scripts\b|spec_from_file_location\(.*scripts",
                         re.M)
    for path in tracked("hmmbench", "tests", "cpu_reference"):
        if path.suffix == ".py" and path.name != Path(__file__).name:
            assert not pattern.search(path.read_text()), path


@pytest.mark.parametrize("text,found", [("session 25's runs", True), ("Issue 13 point 4", True),
                                        ("issues 4", True), ("the session's clock", False),
                                        ("an issue of scale 2", False)])
def test_the_work_history_check_catches_what_it_claims(text, found):
    assert bool(WORK_HISTORY.search(text)) == found


def test_results_are_curated_files_and_a_summary():
    """results/: README.md, the generated SUMMARY.md and <gpu>/<step>.json (one file per suite step
    per GPU: tests/test_suites.py checks each against its step), nothing that is not a run file
    (the gate's measured rates are docs/regression-gate-rates.json); generated HTML is not
    committed."""
    files = [p.relative_to(ROOT / "results") for p in tracked("results")]
    assert {p.name for p in files if len(p.parts) == 1} == {"README.md", "SUMMARY.md"}
    deeper = [p for p in files if len(p.parts) > 1]
    assert deeper and all(len(p.parts) == 2 and p.suffix == ".json" for p in deeper), deeper
    assert len(files) <= 100


def test_docs_are_topic_notes_of_bounded_size():
    """docs/: design notes by topic, each a readable length, all listed in docs/README.md; raw
    evidence lives in git history, not in the tree."""
    notes = [p for p in tracked("docs") if p.suffix == ".md"]
    assert not [p for p in tracked("docs") if "evidence" in p.parts]
    index = (ROOT / "docs" / "README.md").read_text()
    for path in notes:
        lines = path.read_text().count("\n")
        assert lines <= 520, f"{path.name}: {lines} lines"
        if path.name != "README.md":
            assert f"]({path.name})" in index, f"docs/README.md does not list {path.name}"
    for link in re.findall(r"\]\(([^)]+\.md)\)", index):
        assert (ROOT / "docs" / link).is_file(), link


def test_notes_and_catalog_say_what_not_when():
    files = [p for p in tracked("docs") if p.suffix == ".md"] + [
        ROOT / "results" / "README.md", ROOT / "hmmbench" / "suites" / "catalog.py"]
    for path in files:
        found = WORK_HISTORY.search(path.read_text())
        assert not found, f"{path.relative_to(ROOT)}: {found[0]!r}"


def test_shell_tools_parse():
    """The tools are run on machines the tests never see (the GPU machine): at least they parse,
    shell and the Python they feed to python3 alike."""
    for path in tracked("scripts"):
        if path.suffix != ".sh":
            continue
        proc = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
        assert proc.returncode == 0, f"{path.name}: {proc.stderr}"
        for i, block in enumerate(re.findall(r"<<'PY'[^\n]*\n(.*?)\nPY\n", path.read_text(),
                                             re.S)):
            compile(block, f"{path.name}:python-{i}", "exec")


#: a path in the tree quoted in prose: `scripts/x.sh`, docs/usage.md, examples/ci/ ... (not one
#: cited from history as `<commit>:scripts/x.sh`, nor part of a longer path or a URL)
QUOTED_PATH = re.compile(r"(?<![\w/:.-])(?:\./)?((?:scripts|docs|examples)/[\w./{},*-]*)")


def quoted_paths(text: str) -> list:
    """The tree paths ``text`` names, ``{a,b}`` alternatives expanded, trailing punctuation off."""
    found = []
    for m in QUOTED_PATH.finditer(text):
        path = m.group(1).rstrip(".,")
        brace = re.search(r"\{([^{}]*)\}", path)
        alternatives = brace[1].split(",") if brace else [""]
        found += [path[:brace.start()] + a + path[brace.end():] if brace else path
                  for a in alternatives]
    return found


def missing_from(tree: set, paths: list) -> list:
    """The ``paths`` that name no tracked file, folder (``x/``) or glob match in ``tree``."""
    folders = {str(Path(p).parent) for p in tree} | {
        str(q) for p in tree for q in Path(p).parents}
    return [p for p in paths
            if not (p in tree or p.rstrip("/") in folders
                    or ("*" in p and any(Path(t).match(p) for t in tree)))]


@pytest.mark.parametrize("text, missing", [
    ("run `bash scripts/device_suite.sh SUITE` there", []),
    ("see scripts/no_such_tool.sh and docs/usage.md.", ["scripts/no_such_tool.sh"]),
    ("(`8903acf:scripts/gone.py`, https://x.org/docs/gone.md, kernels/docs/gone)", []),
    ("docs/{usage,nowhere}.md and examples/ and examples/ci/", ["docs/nowhere.md"]),
])
def test_the_quoted_path_check_catches_what_it_claims(text, missing):
    tree = {str(p.relative_to(ROOT)) for p in tracked("scripts", "docs", "examples")}
    assert missing_from(tree, quoted_paths(text)) == missing


def test_every_path_the_readmes_and_docs_quote_is_in_the_tree():
    """A tool, note or example the prose names exists in a clone (a path from history is cited
    with its commit, ``8903acf:scripts/x.py``)."""
    tree = {str(p.relative_to(ROOT)) for p in tracked("scripts", "docs", "examples")}
    for path in [ROOT / "README.md", ROOT / "results" / "README.md",
                 *sorted((ROOT / "docs").glob("*.md"))]:
        missing = missing_from(tree, quoted_paths(path.read_text()))
        assert not missing, f"{path.relative_to(ROOT)} names {missing}, not in the tree"
