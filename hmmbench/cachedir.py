"""Where hmmbench keeps what it can always recompute or download again (reference values, data
sets, peer builds), and the lock that lets several processes share one entry of it."""
from __future__ import annotations

import os
from pathlib import Path

import platformdirs
from filelock import FileLock


def user_cache_dir() -> Path:
    """``$HMMBENCH_CACHE_DIR``, else the platform's user cache folder for hmmbench
    (``$XDG_CACHE_HOME/hmmbench``, default ``~/.cache/hmmbench``, on Linux)."""
    explicit = os.environ.get("HMMBENCH_CACHE_DIR")
    if explicit:
        return Path(explicit)
    return platformdirs.user_cache_path("hmmbench", appauthor=False)


def entry_lock(path) -> FileLock:
    """An inter-process lock for one cache entry (``<path>.lock`` beside it): a second process
    that wants the same entry waits for the first to finish it, then uses it."""
    return FileLock(f"{path}.lock")
