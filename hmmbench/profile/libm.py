"""The C library's ``logf`` -- what HMMER calls -- through ctypes, and the bias filter's length
terms (``logf(p1)``, ``logf(1 - p1)``, p1 = L / (L + 1)) per target length from a table filled
once per process. The NumPy reference (:mod:`cpu_reference.profile.bias`) takes them as
arguments: it imports nothing but NumPy, and rounding the float64 log instead differs from
glibc's logf at 17 lengths up to 100,000 (L = 74 and 102 among them)."""
from __future__ import annotations

import ctypes
import ctypes.util
import threading
from functools import lru_cache

import numpy as np
# np.unique imports numpy.ma on its first call (NumPy 2): imported with this module instead, so
# that a search's first call does not hold its ~1 MiB of module objects as working memory
import numpy.ma  # noqa: F401

from cpu_reference.profile import bias as pb
from cpu_reference.profile.generic import logf


@lru_cache(maxsize=None)
def libm():
    """The C math library (None where none loads)."""
    name = ctypes.util.find_library("m")
    try:
        lib = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    if lib is None:
        return None
    lib.logf.restype, lib.logf.argtypes = ctypes.c_float, [ctypes.c_float]
    return lib


def c_logf(x) -> np.ndarray:
    """The C library's ``logf`` of float32 values, a call per distinct value; the float64 log
    rounded where no C math library loads."""
    lib = libm()
    x = np.asarray(x, np.float32)
    if lib is None:
        return logf(x)
    uniq, inv = np.unique(x, return_inverse=True)
    vals = np.array([lib.logf(v) for v in uniq.tolist()], np.float32)
    return vals[inv.reshape(x.shape)] if x.ndim else vals[0]


_TABLE = {"have": np.zeros(0, bool), "p1": np.zeros(0, np.float32), "q1": np.zeros(0, np.float32)}
_LOCK = threading.Lock()                  # searches may run in threads (grown, then read)


def length_terms(L) -> tuple:
    """(logf(p1), logf(1 - p1)) float32 per length with the C library's logf, each length
    computed once per process (a search's survivors share a few thousand lengths)."""
    L = np.asarray(L, np.int64)
    with _LOCK:
        t = _TABLE
        top = int(L.max()) + 1 if L.size else 0
        if top > t["have"].size:
            grow = max(top, 2 * t["have"].size)
            for key in ("have", "p1", "q1"):
                new = np.zeros(grow, t[key].dtype)
                new[:t[key].size] = t[key]
                t[key] = new
        if L.size and not t["have"][L].all():
            need = np.unique(L[~t["have"][L]])
            t["p1"][need], t["q1"][need] = pb.length_terms(need, c_logf)
            t["have"][need] = True
        return t["p1"][L], t["q1"][L]
