"""What machine and software a result came from, and where hmmbench keeps its caches."""
from __future__ import annotations

import os
import platform
import sys
from pathlib import Path
from typing import Optional

#: Packages whose versions every result file records (when importable).
RECORDED_PACKAGES = ("numpy", "rich", "pycuda", "pyopencl")


def cpu_model() -> str:
    """The CPU model name (from /proc/cpuinfo on Linux), else what ``platform`` knows."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def package_version(name: str) -> Optional[str]:
    """The installed version of a package, or None when it is not importable."""
    from importlib import metadata
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        pass
    # Installed without metadata (e.g. a bare --target directory): ask the module itself.
    try:
        mod = __import__(name)
    except Exception:  # noqa: BLE001 - a broken package is simply "not available"
        return None
    return str(getattr(mod, "__version__", getattr(mod, "VERSION_TEXT", "unknown")))


def host_info() -> dict:
    return {
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "os": platform.platform(),
        "hostname": platform.node(),
        "python": sys.version.split()[0],
        "packages": {p: package_version(p) for p in RECORDED_PACKAGES},
    }


def user_cache_dir() -> Path:
    """``$HMMBENCH_CACHE_DIR``, else ``$XDG_CACHE_HOME/hmmbench``, else ``~/.cache/hmmbench``."""
    explicit = os.environ.get("HMMBENCH_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hmmbench"
