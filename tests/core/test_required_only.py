"""hmmbench installs with numpy, rich, platformdirs and filelock alone: every module imports, and
`hmmbench list` runs, with each optional dependency (the extras: PyCUDA, PyOpenCL, pyhmmer, Dask,
matplotlib, pooch, jsonschema, pandas) made unimportable. An optional import at module level breaks
every command for a user without that extra."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: modules that are the extra's own (imported by a --cluster run only), and the extra they need
EXTRA_ONLY = {"hmmbench.cluster.settings": "distributed"}
OPTIONAL = ("pycuda", "pyopencl", "pyhmmer", "dask", "distributed", "dask_cuda", "matplotlib",
            "pooch", "jsonschema", "pandas", "yaml")

BLOCK = f'''
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {OPTIONAL!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}} (blocked by the test)")
sys.meta_path.insert(0, Block())
'''


def run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", BLOCK + code], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)


def test_every_module_imports_without_the_extras():
    code = '''
import pkgutil, importlib, hmmbench, cpu_reference
bad = []
for pkg in (hmmbench, cpu_reference):
    for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
        if m.name.endswith(".__main__"):
            continue
        try:
            importlib.import_module(m.name)
        except Exception as exc:
            if EXTRA_ONLY.get(m.name) not in str(exc):
                bad.append(m.name + ": " + repr(exc))
print("\\n".join(bad))
'''
    done = run(code.replace("EXTRA_ONLY", repr(EXTRA_ONLY)))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "", "modules that need an extra at import:\n" + done.stdout


def test_the_block_is_real():
    done = run("import pooch")
    assert done.returncode != 0 and "blocked by the test" in done.stderr


def test_list_runs_without_the_extras_and_says_why_backends_cannot_run():
    done = run("import sys; from hmmbench import cli; sys.exit(cli.main(['list']))")
    assert done.returncode == 0, done.stderr
    assert "numpy" in done.stdout and "pycuda" in done.stdout
