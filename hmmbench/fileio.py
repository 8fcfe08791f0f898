"""Files that appear whole or not at all, output paths checked before any work (never an input
of the same command), and input files checked before they are opened (regular files only)."""
from __future__ import annotations

import errno
import os
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Optional

from .errors import InputError, UserError


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


def check_output_path(path, option: str, inputs=()) -> Path:
    """Refuse, before any work is done, a path that no output file can be written to: a
    directory, something that is not a regular file (``/dev/full``: the temp-file-and-rename
    write would replace the device), a folder where no file can be created, or one of the
    command's ``inputs`` (see :func:`check_not_input`). Creates nothing that stays."""
    path = Path(path)
    where = f"{option} {path}"
    try:
        mode = path.stat().st_mode                 # follows links: the file a write would hit
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise UserError(f"{where}: {_stat_problem(exc)}") from None
    if mode is not None and stat.S_ISDIR(mode):
        raise UserError(f"{where}: is a directory")
    if mode is not None and not stat.S_ISREG(mode):
        raise UserError(f"{where}: {kind_problem(mode)}; give a file path")
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
    check_not_input(path, option, inputs)
    return path


def output_folder(path, option: str) -> Path:
    """A folder for output files, made (its parents too) when missing; refused, before any
    work, when it cannot hold them: a file or anything else that is not a folder, a symlink
    loop or one to a missing folder, a path through a file, a folder without write access."""
    path = Path(path)
    where = f"{option} {path}"
    try:
        mode = path.stat().st_mode                 # follows links: the folder files would go in
    except FileNotFoundError:
        if path.is_symlink():
            raise UserError(f"{where}: a symlink to a missing folder") from None
        mode = None
    except OSError as exc:
        raise UserError(f"{where}: {_stat_problem(exc)}") from None
    except ValueError:                              # a NUL byte in the name
        raise UserError(f"{where}: not a valid folder name") from None
    if mode is not None and not stat.S_ISDIR(mode):
        what = (kind_problem(mode) or "is a file").split(",")[0]
        raise UserError(f"{where}: {what}, not a directory")
    if mode is None:
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"{where}: cannot create the folder: "
                            f"{_stat_problem(exc).replace('not found: ', '')}") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise UserError(f"{where}: no write access to the folder")
    return path


# --- inputs -------------------------------------------------------------------------------------
def _stat_problem(exc: OSError) -> str:
    """What an ``os.stat`` failure means for an input path, in words."""
    if exc.errno == errno.ELOOP:
        return "symlink loop (the link leads back to itself)"
    if exc.errno == errno.ENOENT:
        return "not found"
    if exc.errno == errno.ENOTDIR:
        return "not found: a part of the path is a file, not a directory"
    if exc.errno == errno.EACCES:
        return "permission denied"
    if exc.errno == errno.ENAMETOOLONG:
        return "file name too long"
    return f"cannot read: {exc.strerror or exc}"


def kind_problem(mode: int) -> Optional[str]:
    """Why a file of this ``st_mode`` is no input file (None: a regular file)."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "is a directory, not a file"
    if stat.S_ISFIFO(mode):
        return "is a FIFO (named pipe), not a regular file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "is a device, not a regular file"
    if stat.S_ISSOCK(mode):
        return "is a socket, not a regular file"
    return "is not a regular file"


def input_problem(path) -> Optional[str]:
    """Why ``path`` cannot be read as an input file, without opening it (a FIFO would block
    the open): missing, a symlink loop, a directory, a FIFO, a device... None: a regular file."""
    try:
        mode = os.stat(path).st_mode               # follows links: the file a read would get
    except OSError as exc:
        if exc.errno == errno.ENOENT and os.path.islink(path):
            return "a symlink to a missing file"
        return _stat_problem(exc)
    except ValueError:                              # a NUL byte in the name
        return "not a valid file name"
    return kind_problem(mode)


def check_input_file(path, what: str = "") -> Path:
    """``path`` when it is a regular file that exists; an :class:`InputError` saying what it is
    otherwise (``what``: the option or kind of file, for the message)."""
    problem = input_problem(path)
    if problem:
        raise InputError(str(path), None, f"{what + ' ' if what else ''}{problem}".strip())
    return Path(path)


def open_input(path, what: str = ""):
    """An input file opened for reading in binary. Opened without blocking and checked on the
    open file, so that a FIFO or device swapped in after a check is refused, never waited on."""
    check_input_file(path, what)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise InputError(str(path), None, _stat_problem(exc)) from None
    problem = kind_problem(os.fstat(fd).st_mode)
    if problem:
        os.close(fd)
        raise InputError(str(path), None, problem)
    return os.fdopen(fd, "rb")


def read_input_bytes(path, what: str = "") -> bytes:
    """The bytes of an input file (see :func:`open_input`)."""
    with open_input(path, what) as fh:
        try:
            return fh.read()
        except OSError as exc:
            raise InputError(str(path), None, f"cannot read: {exc.strerror or exc}") from None


def decode_text(data: bytes, path, what: str = "text") -> str:
    """UTF-8 text, or an :class:`InputError` at the line and column of the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise InputError(str(path), line, f"not UTF-8 {what}: byte 0x{data[exc.start]:02x} at "
                                          f"column {col}") from None


def read_input_text(path, what: str = "text") -> str:
    """An input file as UTF-8 text (see :func:`read_input_bytes`, :func:`decode_text`)."""
    return decode_text(read_input_bytes(path), path, what)


# --- outputs that must not be inputs -----------------------------------------------------------
def same_file(a, b) -> bool:
    """Whether two paths name one file (through symlinks and hard links); False when either
    does not exist."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def same_path(a, b) -> bool:
    """Whether two paths would name one file, existing or not."""
    return os.path.realpath(a) == os.path.realpath(b) or same_file(a, b)


def check_not_input(path, option: str, inputs) -> None:
    """Refuse an output path that is (through any link) one of the command's input files: a
    write there would destroy the input."""
    for inp in inputs:
        if inp is not None and same_file(path, inp):
            shown = f" ({inp})" if os.fspath(inp) != os.fspath(path) else ""
            raise UserError(f"{option} {path}: is also an input of this command{shown}; "
                            "an output never overwrites an input: choose another path")


@contextmanager
def output_lock(path, option: str):
    """Hold a lock on an output file for the whole run, so that a second run writing the same
    file at once fails at the start instead of losing one result set. The lock file lives in
    the user cache (never beside the results), named after the output's real path."""
    import hashlib
    from filelock import FileLock, Timeout
    from .cachedir import user_cache_dir
    real = os.path.realpath(path)
    folder = user_cache_dir() / "locks"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"{option} {path}: cannot create the lock folder {folder}: "
                        f"{exc.strerror or exc}") from None
    lock = FileLock(str(folder / (hashlib.sha256(real.encode("utf-8", "surrogateescape"))
                                  .hexdigest()[:32] + ".lock")), timeout=0)
    try:
        lock.acquire()
    except Timeout:
        raise UserError(f"{option} {path}: another hmmbench run is writing this file now; "
                        "wait for it to end or choose another path") from None
    except OSError as exc:
        raise UserError(f"{option} {path}: cannot lock: {exc.strerror or exc}") from None
    try:
        yield
    finally:
        lock.release()
