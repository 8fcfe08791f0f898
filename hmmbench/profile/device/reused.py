"""Result arrays a device backend hands out, reused once no caller holds them (the idea of a
caching allocator): a search's scores are a fresh array of 8 bytes a sequence, and a fresh
array's pages are mapped and zeroed by the kernel at first touch -- 0.7 ms of a 4.3 ms SSV
search of 556k sequences on an H200 host, where the copy itself is the smaller part
(docs/profile-host-path.md). A runner that drops each search's scores before the next gets the
same pages back."""
from __future__ import annotations

import sys

import numpy as np

#: arrays kept: a caller may hold one search's scores while the next is made
KEEP = 2


class ReusedArrays:
    """``take(n, dtype)``: an array of ``n`` values no one else references, else a new one."""

    def __init__(self, keep: int = KEEP):
        self.keep = keep
        self._arrays: list = []

    def take(self, n: int, dtype) -> np.ndarray:
        dtype = np.dtype(dtype)
        for a in self._arrays:
            # three references when only this list holds it: the list, ``a`` and the argument
            # (a caller's variable, a view's base or a container adds one)
            if a.size == n and a.dtype == dtype and sys.getrefcount(a) == 3:
                return a
        a = np.empty(n, dtype)
        self._arrays = [a] + self._arrays[:self.keep - 1]
        return a
