"""What machine and software a result came from."""
from __future__ import annotations

import os
import platform
import sys
from pathlib import Path
from typing import Optional

#: Packages whose versions every result file records (when importable).
RECORDED_PACKAGES = ("numpy", "rich", "pycuda", "pyopencl")


#: The packages whose sources make up a result's code (kernels included).
SOURCE_PACKAGES = ("hmmbench", "cpu_reference", "kernels_cuda", "kernels_opencl", "kernels_common")
SOURCE_SUFFIXES = (".py", ".cu", ".cuh", ".cl", ".h")


def package_files(package: str) -> list:
    """The source files of an importable package, sorted (empty when it is not importable)."""
    import importlib
    try:
        pkg = importlib.import_module(package)
    except Exception:  # noqa: BLE001
        return []
    roots = [Path(d) for d in getattr(pkg, "__path__", [])]
    return sorted(p for r in roots for p in r.rglob("*")
                  if p.suffix in SOURCE_SUFFIXES and "__pycache__" not in p.parts)


def source_digest(packages=SOURCE_PACKAGES) -> str:
    """sha256 over the names and bytes of the sources that produced a result: the device copy of
    the tree has no git history, so this is what ties a result file to the code."""
    import hashlib
    h = hashlib.sha256()
    for package in packages:
        for f in package_files(package):
            h.update(f"{package}/{f.name}".encode())
            h.update(f.read_bytes())
    return h.hexdigest()


def source_commit() -> Optional[str]:
    """The git commit of the checkout hmmbench runs from, or None: a copy without history, or a
    checkout whose tracked files differ from that commit (then the commit is not what ran; a
    copy sent to another machine can carry a stale .git). ``source_sha256`` is exact either way."""
    import subprocess
    root = Path(__file__).resolve().parent.parent

    def git(*args):
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                              timeout=10)
    try:
        head, status = git("rev-parse", "HEAD"), git("status", "--porcelain",
                                                     "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return None
    commit = head.stdout.strip()
    clean = status.returncode == 0 and not status.stdout.strip()
    return commit if head.returncode == 0 and len(commit) == 40 and clean else None


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


def module_devices(workload: str = "pairhmm", probe: bool = True) -> list:
    """(module, devices() list or error text) for each built-in backend module with devices()
    (``probe``: passed on; False asks for what is known without trial builds)."""
    import importlib
    from .registry import builtin_specs
    out = []
    for spec in builtin_specs(workload):
        mod_name = spec.split(":")[0]
        try:
            mod = importlib.import_module(mod_name)
        except Exception as exc:  # noqa: BLE001 - shown, never fatal
            out.append((mod_name, f"module failed to import: {exc}"))
            continue
        fn = getattr(mod, "devices", None)
        if fn is None:
            continue
        try:
            out.append((mod_name, [dict(d) for d in fn(probe=probe)]))
        except Exception as exc:  # noqa: BLE001
            out.append((mod_name, f"devices() failed: {exc}"))
    return out


def enrich_devices(devices: list, workload: str = "pairhmm") -> None:
    """Add what the backend modules' devices() know (memory, compute capability, driver...) to
    the devices a benchmark used, matched by API and name."""
    used = [d for d in devices if d.get("api") not in ("numpy", None)]
    if not used:
        return
    # the devices used were built on (their probes are cached); the others are not tried
    known = [d for _, devs in module_devices(workload, probe=False) if isinstance(devs, list)
             for d in devs]
    for d in used:
        for k in known:
            # OpenCL entries name the device as "platform / device", as its backends do
            name = k.get("name") or f"{k.get('platform', '')} / {k.get('device', '')}"
            if str(name).strip() == str(d.get("name", "")).strip() and \
                    k.get("api", d["api"]) == d["api"]:
                for key, value in k.items():
                    d.setdefault(key, value)
                break
