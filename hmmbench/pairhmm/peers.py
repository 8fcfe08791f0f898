"""``peer-gpupairhmm``: the gpuPairHMM program (Schmidt et al., Apache-2.0) run as a peer backend,
timed on the same data and cross-checked like every backend (its wrong pairs show as a mismatch).

Where it comes from: a gpuPairHMM source checkout, never copied into this project --
``$HMMBENCH_GPUPAIRHMM``, else ``../shared/peers/gpuPairHMM`` beside the repository, else
``/work/shared/peers/gpuPairHMM``. It is built once per machine (source digest x GPU architecture)
into ``<user cache>/peers/gpuPairHMM-<sha>-sm<cc>/``: the tree is copied there and built with
``make -j8 GPUARCH=<cc> TUNINGARCH=<cc> gpuPairHMM`` (about a minute on an H100), under a lock
file so two processes never build at once; a failed build makes the backend unavailable with the
build's last error line. ``$HMMBENCH_GPUPAIRHMM_BINARY`` names a ready binary instead (no
build and no GPU/nvcc checks; the tests use a fake one).

One call: the launch is written in its block input format (untimed), the program runs once
(``--inputfile IN --outputfile OUT``), its output (per block the ``R H`` line, then R lines of H
log10 values) is read back (untimed). Stages, like with like with every other row:

- ``kernel``: the GPU's kernels alone. The program runs a second time under Nsight Compute
  (:mod:`hmmbench.apis.nsight`: every launch's ``gpu__time_duration``, summed; that run is left
  out of ``total``). Without ncu the stage is not measured (0: no kernel GCUPS) and the record
  says why.
- ``batch``: the program's own "Batch processing time" (its timer around its GPU pipeline:
  transfers, waits and kernels), a stage of its own.
- ``total``: the process wall of the plain run (CUDA start-up and file parsing included).

The record's ``info.timing_note`` says so and the report prints it.

One process per call, so the backend runs with ``--chunking merged`` only (one process per pass;
it batches the file itself): ``original`` would time one process start-up per active region.
"""
from __future__ import annotations

import fnmatch
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

import numpy as np

from ..apis import nsight
from ..apis import cuda as glue
from ..backend import Backend, Execution
from ..cachedir import entry_lock, user_cache_dir
from .datasets.blockfmt import format_block
from .model import PairSet

ENV_CHECKOUT = "HMMBENCH_GPUPAIRHMM"
ENV_BINARY = "HMMBENCH_GPUPAIRHMM_BINARY"
PROGRAM = "gpuPairHMM"
#: Build outputs left out of the source digest and of the copy into the cache.
BUILD_OUTPUTS = ("*.o", PROGRAM, "benchmark_peakperformance", ".git")
BUILD_JOBS = 8
BUILD_TIMEOUT_S = 1800
RUN_TIMEOUT_S = 1800
TIMING_NOTE = ("kernel = its kernels' GPU time (Nsight Compute, each launch's duration summed); "
               "batch = gpuPairHMM's own 'Batch processing time' (its GPU pipeline: transfers "
               "and kernels); total = process wall (CUDA start-up and file I/O included; input "
               "written and output read untimed)")
NO_KERNEL_NOTE = ("batch = gpuPairHMM's own 'Batch processing time' (its GPU pipeline: transfers "
                  "and kernels); total = process wall; kernel not measured: {why}")
BATCH_TIME = re.compile(r"Batch processing time:\s*(\S+?)\s*s\s*\(\s*(\S+)\s*GCUPS\s*\)")


class PeerError(RuntimeError):
    """The program failed or said something this module cannot read (one line)."""


# ------------------------------------------------------------------------------------------------
# Finding and building the program
# ------------------------------------------------------------------------------------------------
def default_checkouts() -> list[Path]:
    repo = Path(__file__).resolve().parents[2]
    return [repo.parent / "shared" / "peers" / PROGRAM, Path("/work/shared/peers") / PROGRAM]


def is_checkout(path: Path) -> bool:
    return (path / "Makefile").is_file() and (path / "main.cu").is_file()


def find_checkout() -> tuple[Optional[Path], Optional[str]]:
    """(checkout, None) or (None, why none was found)."""
    explicit = os.environ.get(ENV_CHECKOUT)
    if explicit:
        path = Path(explicit).expanduser()
        if is_checkout(path):
            return path, None
        return None, f"{ENV_CHECKOUT}={explicit} is not a gpuPairHMM checkout (no Makefile/main.cu)"
    for path in default_checkouts():
        if is_checkout(path):
            return path, None
    return None, (f"no gpuPairHMM checkout: set {ENV_CHECKOUT}=PATH (looked in "
                  + ", ".join(str(p) for p in default_checkouts()) + ")")


def _source_files(checkout: Path) -> list[Path]:
    return sorted(p for p in checkout.rglob("*") if p.is_file() and not any(
        fnmatch.fnmatch(part, pat) for part in p.relative_to(checkout).parts
        for pat in BUILD_OUTPUTS))


def source_sha(checkout: Path) -> str:
    """sha256 over the checkout's source names and bytes (build outputs left out)."""
    h = hashlib.sha256()
    for f in _source_files(checkout):
        h.update(str(f.relative_to(checkout)).encode() + b"\0")
        h.update(f.read_bytes())
    return h.hexdigest()


def gpu_arch() -> tuple[Optional[str], Optional[str], str]:
    """(compute capability as make wants it, e.g. "90", None, GPU name) of the CUDA device
    hmmbench uses (``HMMBENCH_CUDA_DEVICE``, default 0), or (None, why not, "")."""
    index = os.environ.get("HMMBENCH_CUDA_DEVICE", "0")
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run([smi, f"--id={index}", "--query-gpu=compute_cap,name",
                                  "--format=csv,noheader"], capture_output=True, text=True,
                                 timeout=30)
            line = out.stdout.strip().splitlines()[0] if out.stdout.strip() else ""
            cap, _, name = line.partition(",")
            if out.returncode == 0 and re.fullmatch(r"\d+\.\d+", cap.strip()):
                return cap.strip().replace(".", ""), None, name.strip()
        except (OSError, subprocess.TimeoutExpired):
            pass
    reason = glue.unavailable_reason()
    if reason is None:
        attrs = glue.device_attributes()
        return attrs["compute_capability"].replace(".", ""), None, attrs["name"]
    return None, (f"no NVIDIA GPU (nvidia-smi {'lists none' if smi else 'not found'}; "
                  f"{reason})"), ""


def find_nvcc() -> Optional[str]:
    found = shutil.which("nvcc")
    if found:
        return found
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home and os.access(os.path.join(home, "bin", "nvcc"), os.X_OK):
            return os.path.join(home, "bin", "nvcc")
    return None


def last_error_line(text: str) -> str:
    """The line of a build log that says what went wrong: the last one naming an error (make's
    own "*** ... Error N" summary only when nothing else does), else the last non-empty one."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower()]
    compiler = [line for line in errors if not re.match(r"g?make(\[\d+\])?: \*\*\*", line)]
    line = (compiler or errors or lines or ["(no output)"])[-1]
    return line if len(line) <= 240 else line[:237] + "..."


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def build(checkout: Path, arch: str, nvcc: str, cache_root: Optional[Path] = None,
          note=None) -> Path:
    """The program built from ``checkout`` for ``sm_<arch>``: from the cache, or built now into
    it (raises PeerError with the build's last error line). ``note(text)`` hears about a build."""
    root = Path(cache_root or user_cache_dir()) / "peers"
    final = root / f"{PROGRAM}-{source_sha(checkout)[:16]}-sm{arch}"
    binary = final / PROGRAM
    if _executable(binary):
        return binary
    root.mkdir(parents=True, exist_ok=True)
    with entry_lock(final):  # another process building it: wait, then use its build
        if _executable(binary):
            return binary
        if note:
            note(f"building {PROGRAM} for sm_{arch} into {final} (once per machine, about a "
                 f"minute on an H100)")
        work = Path(tempfile.mkdtemp(prefix=f"{final.name}.build-", dir=root))
        try:
            src = work / PROGRAM
            shutil.copytree(checkout, src, ignore=shutil.ignore_patterns(*BUILD_OUTPUTS))
            env = dict(os.environ, PATH=os.path.dirname(nvcc) + os.pathsep
                       + os.environ.get("PATH", ""))
            cmd = ["make", f"-j{BUILD_JOBS}", f"GPUARCH={arch}", f"TUNINGARCH={arch}", PROGRAM]
            try:
                done = subprocess.run(cmd, cwd=src, env=env, capture_output=True, text=True,
                                      timeout=BUILD_TIMEOUT_S)
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise PeerError(f"building {PROGRAM} failed: {exc}") from None
            log = f"$ {' '.join(cmd)}\n{done.stdout}\n{done.stderr}"
            (src / "build.log").write_text(log)
            if done.returncode != 0 or not _executable(src / PROGRAM):
                failed = root / f"{final.name}.failed.log"
                failed.write_text(log)
                raise PeerError(f"building {PROGRAM} failed (make exit {done.returncode}; log "
                                f"{failed}): {last_error_line(done.stderr or done.stdout)}")
            os.replace(src, final)  # atomic: a half-built tree never has the final name
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return binary


# ------------------------------------------------------------------------------------------------
# Its input and output
# ------------------------------------------------------------------------------------------------
def write_input(pairs: PairSet, path: Path) -> None:
    """The pairs in the block format it reads (one block per batch, single spaces)."""
    Path(path).write_text(format_block(pairs))


def parse_output(text: str, pairs: PairSet) -> tuple[np.ndarray, list]:
    """Its output file as one log10 per pair in the PairSet's order, and the (index, text) of the
    values that are no number (NaN in the array); every block header must repeat the input's
    ``R H`` and every row hold H values (else PeerError naming the line)."""
    lines = text.splitlines()
    nr, nh = np.diff(pairs.batch_reads), np.diff(pairs.batch_haps)
    tokens: list = []
    i = 0
    for b in range(pairs.n_batches):
        while i < len(lines) and not lines[i].strip():
            i += 1
        want = [str(int(nr[b])), str(int(nh[b]))]
        if i >= len(lines):
            raise PeerError(f"its output ends after {b} of {pairs.n_batches} blocks "
                            f"({len(tokens)} of {pairs.n_pairs} values)")
        if lines[i].split() != want:
            raise PeerError(f"output line {i + 1}: block {b + 1} header {lines[i][:40]!r}, "
                            f"expected '{' '.join(want)}'")
        i += 1
        for _ in range(int(nr[b])):
            row = lines[i].split() if i < len(lines) else None
            if row is None or len(row) != int(nh[b]):
                got = "the end of the output" if row is None else f"{len(row)} values"
                raise PeerError(f"output line {i + 1}: expected {want[1]} values (block "
                                f"{b + 1}), got {got}")
            tokens.extend(row)
            i += 1
    extra = next((k for k in range(i, len(lines)) if lines[k].strip()), None)
    if extra is not None:
        raise PeerError(f"output line {extra + 1}: more output than the input's "
                        f"{pairs.n_pairs} pairs")
    values = np.full(len(tokens), np.nan)
    unreadable = []
    for k, t in enumerate(tokens):
        try:
            values[k] = float(t)
        except ValueError:
            unreadable.append((k, t))
    # Its output writer can garble a value on large inputs (seen on an H100: '-13.552-13.55277'):
    # such a value is NaN, so the cross-check counts it as a mismatch; output that is mostly
    # unreadable is an error.
    if unreadable and 2 * len(unreadable) > len(tokens):
        k, t = unreadable[0]
        raise PeerError(f"output value {k + 1} is not a number: {t[:20]!r} "
                        f"({len(unreadable)} of {len(tokens)} unreadable)")
    return values, unreadable


def parse_batch_time(stdout: str) -> tuple[float, Optional[float]]:
    """(seconds, its GCUPS figure) from its "Batch processing time: Xs (Y GCUPS)" line."""
    m = None
    for m in BATCH_TIME.finditer(stdout):
        pass
    if m is None:
        raise PeerError("its output has no 'Batch processing time: Xs (Y GCUPS)' line")
    try:
        seconds = float(m.group(1))
    except ValueError:
        raise PeerError(f"unreadable batch processing time {m.group(1)!r}") from None
    if not np.isfinite(seconds) or seconds < 0:
        raise PeerError(f"unreadable batch processing time {m.group(1)!r}")
    try:
        gcups: Optional[float] = float(m.group(2))
    except ValueError:
        gcups = None
    return seconds, gcups


def _last_line(text: str) -> str:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1][:240] if lines else "(no output)"


# ------------------------------------------------------------------------------------------------
# Backend
# ------------------------------------------------------------------------------------------------
class GpuPairHMMPeer(Backend):
    name = "peer-gpupairhmm"
    api = "cuda"
    family = "peer"
    precision = "float32"

    def __init__(self):
        super().__init__()
        self._probed = False
        self._reason: Optional[str] = None
        self._binary: Optional[Path] = None
        self._gpu = ""
        self._built = ""
        self._tmp: Optional[tempfile.TemporaryDirectory] = None
        self._written: tuple = (None, -1)   # (PairSet, n_pairs) whose input file is on disk
        self._no_profiler: Optional[str] = None    # why ncu cannot time its kernels here

    def unavailable_reason(self) -> Optional[str]:
        if not self._probed:
            self._reason = self._prepare()
            self._probed = True
        return self._reason

    def _prepare(self) -> Optional[str]:
        """Find the binary (build it when needed); None or why it cannot run here."""
        explicit = os.environ.get(ENV_BINARY)
        if explicit:
            if not _executable(Path(explicit)):
                return f"{ENV_BINARY}={explicit} is not an executable file"
            self._binary, self._built = Path(explicit), "given binary"
            self._gpu = gpu_arch()[2] or "GPU unknown"
            return None
        checkout, why = find_checkout()
        if checkout is None:
            return why
        arch, why, self._gpu = gpu_arch()
        if arch is None:
            return why
        nvcc = find_nvcc()
        if nvcc is None:
            return f"nvcc not found on PATH or in CUDA_HOME (needed to build {PROGRAM})"
        try:
            self._binary = build(checkout, arch, nvcc, note=_note)
        except PeerError as exc:
            return str(exc)
        self._built = f"{self._binary.parent.name}"
        return None

    def device_name(self) -> str:
        self.unavailable_reason()
        return self._gpu or "unknown"

    def refuse_chunking(self, mode: str) -> Optional[str]:
        if str(mode).strip() == "merged":
            return None
        return (f"chunking '{mode}' would start one {PROGRAM} process per launch; it reads a "
                f"whole file and batches it itself: run it with --chunking merged")

    def refuse_reason(self, pairs: PairSet) -> Optional[str]:
        if pairs.n_batches and (int(np.diff(pairs.batch_reads).min()) < 1
                                or int(np.diff(pairs.batch_haps).min()) < 1):
            return "a batch without reads or haplotypes cannot be written in its block format"
        if pairs.n_pairs and (int(pairs.read_lengths.min(initial=1)) < 1
                              or int(pairs.hap_lengths.min(initial=1)) < 1):
            return "an empty read or haplotype cannot be written in its block format"
        return super().refuse_reason(pairs)

    def _input_file(self, pairs: PairSet) -> tuple[Path, float]:
        """The launch's input file (written once per PairSet) and the seconds spent writing."""
        if self._tmp is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="hmmbench-gpupairhmm-")
        path = Path(self._tmp.name) / "input.txt"
        if self._written[0] is pairs and self._written[1] == pairs.n_pairs:
            return path, 0.0
        t0 = time.perf_counter()
        self._written = (None, -1)
        write_input(pairs, path)
        self._written = (pairs, pairs.n_pairs)
        return path, time.perf_counter() - t0

    def run(self, pairs: PairSet) -> Execution:
        reason = self.unavailable_reason()
        if reason:
            raise PeerError(reason)
        info = {"build": self._built}
        if pairs.n_pairs == 0:
            return Execution(np.zeros(0), {"kernel": 0.0}, 0, dict(info, timing_note=TIMING_NOTE))
        in_path, untimed = self._input_file(pairs)
        out_path = in_path.with_name("output.txt")
        out_path.unlink(missing_ok=True)
        env = dict(os.environ)
        if "HMMBENCH_CUDA_DEVICE" in env and "CUDA_VISIBLE_DEVICES" not in env:
            env["CUDA_VISIBLE_DEVICES"] = env["HMMBENCH_CUDA_DEVICE"]  # it uses device 0
        cmd = [str(self._binary), "--inputfile", str(in_path), "--outputfile", str(out_path)]
        t0 = time.perf_counter()
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, env=env,
                                  cwd=in_path.parent, timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise PeerError(f"{PROGRAM} did not finish within {RUN_TIMEOUT_S} s") from None
        except OSError as exc:
            raise PeerError(f"{PROGRAM} could not start: {exc}") from None
        wall = time.perf_counter() - t0
        if done.returncode != 0:
            how = (f"was killed by signal {-done.returncode}" if done.returncode < 0
                   else f"exited with status {done.returncode}")
            raise PeerError(f"{PROGRAM} {how}: {_last_line(done.stderr or done.stdout)}")
        t1 = time.perf_counter()
        seconds, gcups = parse_batch_time(done.stdout)
        try:
            text = out_path.read_text()
        except OSError:
            raise PeerError(f"{PROGRAM} wrote no output file") from None
        log10, unreadable = parse_output(text, pairs)
        timing = {"batch": seconds}
        kernels, why = self._kernel_times(cmd, env, in_path.parent)
        if kernels is not None:
            timing["kernel"] = kernels.seconds
            info.update(timing_note=TIMING_NOTE, kernel_launches=len(kernels.launches))
        else:
            info.update(timing_note=NO_KERNEL_NOTE.format(why=why))
        untimed += time.perf_counter() - t1
        info.update(process_wall_s=wall, peer_gcups=gcups)
        if unreadable:
            info["unreadable_values"] = len(unreadable)
            info["unreadable_example"] = unreadable[0][1][:40]
        return Execution(log10, timing, 0, info, untimed_s=untimed)

    def _kernel_times(self, cmd: list, env: dict, cwd: Path):
        """(its kernels' times under ncu, None) or (None, why they were not measured); the
        output the profiled run writes goes to a file of its own."""
        if self._no_profiler is not None:
            return None, self._no_profiler
        profiled = list(cmd)
        profiled[-1] = str(Path(cmd[-1]).with_name("output.profiled.txt"))
        try:
            return nsight.kernel_times(profiled, env=env, cwd=cwd, timeout=RUN_TIMEOUT_S), None
        except nsight.ProfilerError as exc:
            if nsight.find_ncu() is None:
                self._no_profiler = str(exc)   # not on this machine: say so once per process
            return None, str(exc)

    def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
        self._written = (None, -1)


def _note(text: str) -> None:
    print(f"hmmbench: {text}", file=sys.stderr, flush=True)


def backends() -> list[Backend]:
    return [GpuPairHMMPeer()]
