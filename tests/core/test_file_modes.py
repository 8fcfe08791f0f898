"""Files hmmbench writes get the mode a plain open() would give them: 0o666 less the umask."""
from __future__ import annotations

import os
import stat

import pytest

from hmmbench import results
from hmmbench.fileio import atomic_open


@pytest.fixture
def umask():
    def set_mask(mask):
        os.umask(mask)
    old = os.umask(0o022)
    yield set_mask
    os.umask(old)


@pytest.mark.parametrize("mask", [0o022, 0o027, 0o077, 0o002])
def test_atomic_open_honours_the_umask(tmp_path, umask, mask):
    umask(mask)
    target = tmp_path / "out.txt"
    with atomic_open(target) as fh:
        fh.write("x\n")
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~mask


def test_result_files_are_readable_by_the_group_and_others(tmp_path, umask):
    umask(0o022)
    path = results.write({"hmmbench_version": "0", "created": "2026-01-01T00:00:00+00:00",
                          "command": [], "host": {}, "devices": [], "chunking": "",
                          "runs": []}, tmp_path / "r.json")
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
