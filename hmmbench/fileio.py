"""Files that appear whole or not at all, and output paths checked before any work."""
from __future__ import annotations

import os
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path

from .errors import UserError


def _umask() -> int:
    """This process's umask, read without changing it where Linux shows it (a worker thread
    creating a file meanwhile must never see a cleared umask); else set and put back."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class WriteError(UserError, OSError):
    """An output file could not be written (full disk, no permission, ...): a user-facing error
    (one line, exit 2) that code catching ``OSError`` (the reference cache) still catches."""


@contextmanager
def atomic_open(path, binary: bool = False):
    """A file that appears at ``path`` only when the block ends without an exception (a temp
    file in the same directory, then ``os.replace``); nothing is left behind otherwise. An
    ``OSError`` on the way becomes a :class:`WriteError` naming the path. The file gets the mode
    a plain ``open`` would give it (``0o666`` less the umask), not the temp file's ``0o600``."""
    path = Path(path)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        os.fchmod(fd, 0o666 & ~_umask())
        with (os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8")) as fh:
            yield fh
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError) and not isinstance(exc, WriteError):
            raise WriteError(f"{path}: cannot write: {exc.strerror or exc}") from None
        raise


def check_output_path(path, option: str) -> Path:
    """Refuse, before any work is done, a path that no output file can be written to: a
    directory, something that is not a regular file (``/dev/full``: the temp-file-and-rename
    write would replace the device), or a folder where no file can be created. Creates nothing
    that stays."""
    path = Path(path)
    where = f"{option} {path}"
    try:
        mode = path.stat().st_mode                 # follows links: the file a write would hit
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise UserError(f"{where}: {exc.strerror or exc}") from None
    if mode is not None and stat.S_ISDIR(mode):
        raise UserError(f"{where}: is a directory")
    if mode is not None and not stat.S_ISREG(mode):
        raise UserError(f"{where}: is not a regular file (a device or pipe); give a file path")
    folder = path.parent
    while not folder.exists():                     # the nearest folder that exists
        folder = folder.parent
    if not folder.is_dir():
        raise UserError(f"{where}: {folder} is not a directory")
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".hmmbench-probe.", suffix=".tmp")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise UserError(f"{where}: cannot create files in {folder}: "
                        f"{exc.strerror or exc}") from None
    return path
