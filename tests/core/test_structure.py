"""The layering rule, checked on the source (AST): imports run core <- workloads <- cli.

- The core (hmmbench/*.py, runner/, cli/, apis/, suites/, cluster/) never imports a workload package
  (hmmbench.pairhmm, hmmbench.profile, cpu_reference) by name, at module level or inside a
  function, and names no workload module in a string: it reaches workloads only through
  :func:`hmmbench.workload.get` (whose BUILTIN_WORKLOADS table is the one allowed mention).
- The core compares no value against a workload's name (``== "profile"``): what differs per
  workload is asked of the Workload object.
- Workload packages and the references never import the CLI.
- ``cpu_reference`` depends on NumPy alone: it imports nothing of ``hmmbench``.
- No import cycles among the modules of the workload packages and the references, and no
  library module with a command-line ``main()`` (the CLI is ``hmmbench.cli``).
"""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

from helpers.paths import REPO
from hmmbench.workload import BUILTIN_WORKLOADS

ROOT = REPO
CORE = sorted([*ROOT.glob("hmmbench/*.py"),
               *(p for d in ("runner", "cli", "apis", "suites", "cluster")
                 for p in (ROOT / "hmmbench" / d).rglob("*.py"))])
WORKLOAD_CODE = sorted([*(ROOT / "hmmbench" / "pairhmm").rglob("*.py"),
                        *(ROOT / "hmmbench" / "profile").rglob("*.py"),
                        *(ROOT / "cpu_reference").rglob("*.py")])
WORKLOAD_MODULES = re.compile(r"^(hmmbench\.(pairhmm|profile)|cpu_reference)(\.|:|$)")
WORKLOAD_NAMES = set(BUILTIN_WORKLOADS)
#: strings naming workload modules that the core may hold: the built-in workload table, and the
#: source digest's package list (it hashes every source package's files, importing no code)
ALLOWED_MODULE_STRINGS = {"hmmbench/workload.py": None, "hmmbench/hostinfo.py": {"cpu_reference"}}
#: files allowed to compare against a workload name while they are being made workload-free
#: (none now); an entry whose file no longer does fails, so the list cannot go stale
KNOWN_NAME_COMPARISONS: set = set()


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def imported(path: Path, tree: ast.AST) -> list:
    """(line, dotted name) of every import in the file, relative imports resolved; ``from X
    import a`` yields both X and X.a (a may be a module)."""
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = (package[:len(package) - node.level + 1] if node.level else [])
            mod = ".".join(base + ([node.module] if node.module else []))
            out.append((node.lineno, mod))
            out += [(node.lineno, f"{mod}.{a.name}") for a in node.names]
    return out


def docstrings(tree: ast.AST) -> set:
    return {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and n.body and isinstance(n.body[0], ast.Expr)
            and isinstance(n.body[0].value, ast.Constant)}


def constants(node: ast.AST) -> list:
    """String constants of a comparison operand, also inside a literal tuple/list/set."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [c for e in node.elts for c in constants(e)]
    return []


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def parse(path: Path) -> ast.AST:
    return ast.parse(path.read_text(), filename=str(path))


@pytest.mark.parametrize("path", CORE, ids=rel)
def test_core_never_names_a_workload_package(path):
    tree = parse(path)
    bad = [f"{rel(path)}:{line}: imports {name}" for line, name in imported(path, tree)
           if WORKLOAD_MODULES.match(name)]
    allowed = ALLOWED_MODULE_STRINGS.get(rel(path), set())
    if allowed is not None:
        skip = docstrings(tree)
        bad += [f"{rel(path)}:{n.lineno}: names {n.value!r}" for n in ast.walk(tree)
                if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in skip
                and n.value not in allowed and WORKLOAD_MODULES.match(n.value)]
    assert not bad, "core reaches a workload by name (use hmmbench.workload.get):\n" + \
        "\n".join(bad)


@pytest.mark.parametrize("path", CORE, ids=rel)
def test_core_never_compares_against_a_workload_name(path):
    bad = [f"{rel(path)}:{n.lineno}: compares against {sorted(hit)}"
           for n in ast.walk(parse(path)) if isinstance(n, ast.Compare)
           for hit in [WORKLOAD_NAMES.intersection(
               c for operand in [n.left, *n.comparators] for c in constants(operand))] if hit]
    if rel(path) in KNOWN_NAME_COMPARISONS:
        if not bad:
            pytest.fail(f"{rel(path)} is workload-free now: drop it from KNOWN_NAME_COMPARISONS")
        pytest.xfail("known exception, being made workload-free")
    assert not bad, "branch on a workload's name; ask the Workload object instead:\n" + \
        "\n".join(bad)


@pytest.mark.parametrize("path", WORKLOAD_CODE, ids=rel)
def test_workloads_never_import_the_cli(path):
    bad = [f"{rel(path)}:{line}: imports {name}" for line, name in imported(path, parse(path))
           if name == "hmmbench.cli" or name.startswith("hmmbench.cli.")]
    assert not bad, "\n".join(bad)


def test_the_checks_catch_what_they_claim(tmp_path):
    """The AST helpers on a snippet that breaks every rule."""
    fake = ROOT / "hmmbench" / "runner" / "fake.py"
    tree = ast.parse('"""doc: hmmbench.profile.job"""\n'
                     'from ..profile import job\nfrom .. import pairhmm\nimport cpu_reference\n'
                     'def f(r):\n    from ..cli import main\n'
                     '    return r == "profile" or r in ("x", "pairhmm"), "cpu_reference.x"\n')
    names = [n for _, n in imported(fake, tree)]
    assert "hmmbench.profile" in names and "hmmbench.pairhmm" in names
    assert "cpu_reference" in names and "hmmbench.cli" in names
    compares = [c for n in ast.walk(tree) if isinstance(n, ast.Compare)
                for operand in [n.left, *n.comparators] for c in constants(operand)]
    assert {"profile", "pairhmm"} <= set(compares)
    skip = docstrings(tree)
    strings = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
               and isinstance(n.value, str) and id(n) not in skip]
    assert "cpu_reference.x" in strings and not any(s.startswith("doc:") for s in strings)


def test_every_source_folder_is_a_package():
    """setuptools' find_packages (setup.cfg) skips a folder without __init__.py and everything
    below it: a wheel would lack that code while an editable install still works."""
    from setuptools import find_packages
    found = set(find_packages(str(ROOT), include=["hmmbench", "hmmbench.*", "cpu_reference",
                                                  "cpu_reference.*"]))
    folders = {".".join(p.parent.relative_to(ROOT).parts)
               for top in ("hmmbench", "cpu_reference") for p in (ROOT / top).rglob("*.py")
               if "__pycache__" not in p.parts}
    assert folders <= found, f"folders without __init__.py: {sorted(folders - found)}"


REFERENCE_CODE = sorted((ROOT / "cpu_reference").rglob("*.py"))
LIBRARY_CODE = sorted(p for top in ("hmmbench", "cpu_reference") for p in (ROOT / top).rglob("*.py")
                      if "cli" not in p.relative_to(ROOT).parts and p.name != "__main__.py")


@pytest.mark.parametrize("path", REFERENCE_CODE, ids=rel)
def test_the_reference_imports_nothing_of_hmmbench(path):
    """The NumPy reference stands alone: what it needs of the data model comes as arrays, and
    the algorithms' constants are its own (hmmbench imports them from it, never the reverse)."""
    allowed = ("cpu_reference", "numpy", "__future__", "dataclasses", "typing", "contextlib",
               "functools", "math")
    bad = [(line, name) for line, name in imported(path, parse(path))
           if name.split(".")[0] not in allowed]
    assert not bad, f"{rel(path)} imports {bad}"


@pytest.mark.parametrize("path", LIBRARY_CODE, ids=rel)
def test_no_library_module_is_a_command_line_program(path):
    tree = parse(path)
    mains = [n.lineno for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main"]
    scripts = [n.lineno for n in tree.body if isinstance(n, ast.If)
               and "__main__" in ast.unparse(n.test)]
    assert not mains and not scripts, f"{rel(path)}: main() or __main__ block at {mains + scripts}"


def import_cycles(paths: list) -> list:
    """The strongly connected components (more than one module) of the import graph of these
    files, every import counted (inside functions too)."""
    modules = {module_name(p): p for p in paths}
    graph = {}
    for m, p in modules.items():
        graph[m] = set()
        for _, name in imported(p, parse(p)):
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != m:
                graph[m].add(name)
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))
    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_workloads_and_references_import_without_cycles():
    assert import_cycles(WORKLOAD_CODE) == []


def test_the_cycle_check_finds_a_cycle(tmp_path, monkeypatch):
    pkg = tmp_path / "cyc"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from .b import g\n")
    (pkg / "b.py").write_text("from .a import f\n")
    (pkg / "c.py").write_text("from . import a\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert import_cycles(sorted(pkg.glob("*.py"))) == [["cyc.a", "cyc.b"]]

