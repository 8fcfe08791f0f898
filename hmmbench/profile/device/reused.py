"""Result arrays a device backend hands out, reused once no caller holds them (the idea of a
caching allocator): a CUDA search's scores are copied by the device straight into a page-locked
array the caller gets, and page-locking is far too slow to do per search, so the arrays are
kept; a runner that drops each search's scores before the next gets the same array back. The
host copy this replaces (page-locked buffer -> a new float64 array) took 0.7 ms of a 4.3 ms
SSV search of 556k sequences on an H200 host (docs/profile-host-path.md)."""
from __future__ import annotations

import sys
from typing import Callable

import numpy as np

#: arrays kept: a caller may hold one search's scores while the next is made
KEEP = 2


class ReusedArrays:
    """``take(n, dtype)``: an array of ``n`` values no one else references, else a new one."""

    def __init__(self, keep: int = KEEP, allocate: Callable = np.empty):
        self.keep, self.allocate = keep, allocate
        self._arrays: list = []

    def take(self, n: int, dtype) -> np.ndarray:
        dtype = np.dtype(dtype)
        for a in self._arrays:
            # three references when only this list holds it: the list, ``a`` and the argument
            # (a caller's variable, a view's base or a container adds one)
            if a.size == n and a.dtype == dtype and sys.getrefcount(a) == 3:
                return a
        a = self.allocate(n, dtype)
        self._arrays = [a] + self._arrays[:self.keep - 1]
        return a
