"""A new user's first commands, as the README gives them: after the set-up, `. .venv/bin/activate`
puts `hmmbench` on PATH, and the shipped real sets run from any folder with no environment
variable; the result file is readable by others under the usual umask."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

from helpers.paths import REPO


def test_activate_then_hmmbench_runs_a_shipped_set(tmp_path):
    activate = Path(sys.prefix) / "bin" / "activate"
    assert activate.is_file(), f"the tests run in the virtualenv `make setup` builds, not {sys.prefix}"
    env = {k: v for k, v in os.environ.items()
           if k not in ("HMMBENCH_DATA_PATH", "VIRTUAL_ENV") and not k.startswith("PYOPENCL")}
    env.update(PYTHONPATH=str(REPO), HMMBENCH_CACHE_DIR=str(tmp_path / "cache"),
               PATH="/usr/bin:/bin")
    script = ('umask 022 && . "$1" && command -v hmmbench && '
              'hmmbench run -d tiny -b numpy-f32 --repeat 1 --json out.json -q')
    proc = subprocess.run(["bash", "-c", script, "first-hour", str(activate)], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == str(Path(sys.prefix) / "bin" / "hmmbench")
    out = tmp_path / "out.json"
    (run,) = json.loads(out.read_text())["runs"]
    assert (run["dataset"], run["pairs"], run["status"]) == ("tiny", 332, "ok")
    assert stat.S_IMODE(out.stat().st_mode) == 0o644
    assert "Warning" not in proc.stderr
