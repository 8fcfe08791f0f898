"""CPU peers of workload "profile": HMMER itself, through pyhmmer and the ``hmmsearch`` binary.

``profile-pyhmmer`` (HMMER's SSV/MSV per sequence through pyhmmer, checked like any backend) and
two whole-pipeline peers on jobs of kind ``pipeline``: ``profile-pyhmmer-pipeline`` (pyhmmer's
``Pipeline().search_hmm``) and ``profile-hmmsearch`` (the ``hmmsearch`` binary of PyPI's
``hmmer``, ``--cpu N``, on a FASTA file written untimed), both with HMMER's defaults (the bias
filter on; off, ``bias_filter=False`` / ``--nobias``, for a ``--nobias`` job). The pipeline peers report
no per-sequence scores of one kind (``scores = False``): the runner times them and lists them as
``peer`` rows, never cross-checked.
"""
from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Optional

import numpy as np

from ..backend import Execution, StageClock
from ..memory import MiB, MemoryNeed
from .job import ProfileBackend, pipeline_refusal
from .pipeline import hits_pass_counts

#: Host memory of a pyhmmer call beyond the database: its digital sequence block (per residue,
#: with its share of each sequence's object), the profile and optimized profile (per model
#: position) and the filters' buffers and code. Fitted to the growth of the resident peak over
#: one call measured from live memory (hmmbench.memory_peak: free heap pages released, the
#: registry's imports done first): 1.3 / 6.6 / 57.5 MB on 0.2M / 2M / 20M residues at M 400
#: and 7.3 MB on 2M at M 1500 (docs/profile-working-memory.md): 2.8 bytes a residue, ~0.65 KB
#: a position.
PYHMMER_FIXED, PYHMMER_NODE_BYTES, PYHMMER_RESIDUE_BYTES = 768 << 10, 1024, 3.0
#: The hmmsearch process (its peak resident size, /usr/bin/time: 14 MiB on 200,000 and on
#: 2,000,000 residues, with --cpu 1 to 32: it streams the FASTA) and what this process takes to
#: write the FASTA (the text, a byte a residue: 2.1 / 4.0 MiB measured), erring high.
HMMSEARCH_FIXED, HMMSEARCH_RESIDUE_BYTES = 17 * MiB, 1.5


def pyhmmer_need(shape) -> MemoryNeed:
    return MemoryNeed(host=int(PYHMMER_FIXED + PYHMMER_NODE_BYTES * shape.M
                               + PYHMMER_RESIDUE_BYTES * shape.residues))


class PyhmmerPeer(ProfileBackend):
    """HMMER 3.4's own SIMD filters through pyhmmer, one call per sequence (CPU peer row)."""
    name = "profile-pyhmmer"
    api = "pyhmmer"
    family = "peer"
    precision = "int8 SIMD"
    kinds = ("ssv", "msv")

    def unavailable_reason(self) -> Optional[str]:
        try:
            import pyhmmer  # noqa: F401
        except ImportError:
            return "pyhmmer not installed"
        return None

    def refuse_reason(self, job) -> Optional[str]:
        return super().refuse_reason(job) or (None if job.hmm is not None
                                              else "the job carries no pyhmmer HMM")

    def memory_need(self, shape) -> MemoryNeed:
        return pyhmmer_need(shape)

    def run(self, job) -> Execution:
        import pyhmmer  # optional (the profile extra); unavailable_reason says when it is missing
        clock = StageClock()
        with clock("prep"):
            hmm = job.hmm
            gm = pyhmmer.plan7.Profile(hmm.M, hmm.alphabet)
            gm.configure(hmm, pyhmmer.plan7.Background(hmm.alphabet), L=400)
            om = gm.to_optimized()
            block = job.seqs.to_pyhmmer()
        out = np.empty(len(block), dtype=np.float64)
        fn = om.ssv_filter if job.kind == "ssv" else om.msv_filter
        with clock("kernel"):
            for i, seq in enumerate(block):
                om.L = len(seq)                  # length model per target, as the pipeline
                out[i] = fn(seq)
        return Execution(log10=out, timing=clock.timing, info={"unit": "nats"})


class _UntimedFiles:
    """What a peer prepares once per job input and reuses on every timed pass (the pyhmmer
    block, FASTA and model files): kept for the last sequence set / HMM seen."""

    def __init__(self):
        self._key, self._value = None, None

    def get(self, key, make):
        if self._key is None or self._key[0] is not key[0] or self._key[1:] != key[1:]:
            self._key, self._value = None, None
            self._value, self._key = make(), key
        return self._value


class _PipelinePeer(ProfileBackend):
    """A whole-pipeline CPU peer: timed on the same data, never cross-checked."""
    family = "peer (whole pipeline)"
    precision = "HMMER 3.4 SIMD"
    kinds = ("pipeline",)
    scores = False

    def refuse_reason(self, job) -> Optional[str]:
        return super().refuse_reason(job) or pipeline_refusal(job)


class PyhmmerPipelinePeer(_PipelinePeer):
    """pyhmmer's Pipeline (MSV, bias, Viterbi, Forward filters and domain stage; the bias
    filter off for a --nobias job)."""
    name = "profile-pyhmmer-pipeline"
    api = "pyhmmer"
    peer_note = ("pyhmmer Pipeline().search_hmm (its defaults: bias filter on; off for "
                 "--nobias), the whole pipeline in one thread; GCUPS = model length x residues "
                 "of one pass")

    def __init__(self):
        super().__init__(threads=1)
        self._block = _UntimedFiles()

    unavailable_reason = PyhmmerPeer.unavailable_reason

    def memory_need(self, shape) -> MemoryNeed:
        return pyhmmer_need(shape)

    def run(self, job) -> Execution:
        import pyhmmer  # optional, as above
        clock = StageClock()
        with clock("prep"):
            block = self._block.get((job.seqs, len(job.seqs)), job.seqs.to_pyhmmer)
        with clock("kernel"):
            hits = pyhmmer.plan7.Pipeline(job.hmm.alphabet, bias_filter=job.bias_filter
                                          ).search_hmm(job.hmm, block)
        return Execution(log10=np.zeros(0), timing=clock.timing,
                         info={"unit": "none", "hits": len(hits), "bias_filter": job.bias_filter,
                               "pass_counts": hits_pass_counts(hits).as_dict()})


class HmmsearchPeer(_PipelinePeer):
    """The ``hmmsearch`` binary (PyPI ``hmmer``): HMMER's own threads, file parsing included."""
    name = "profile-hmmsearch"
    api = "hmmer"
    #: every run is a new process that reads its files: the runner times the first one too
    first_pass_timed = True

    def __init__(self, cpus: Optional[int] = None):
        super().__init__(cpus=cpus or os.cpu_count() or 1)
        self.cpus = self.params["cpus"]
        self._files, self._hmm = _UntimedFiles(), _UntimedFiles()
        self._tmp: Optional[tempfile.TemporaryDirectory] = None
        self.peer_note = (f"hmmsearch --cpu {self.cpus} (--nobias for a --nobias job), the "
                          "whole pipeline including its FASTA parsing (the file is written "
                          "untimed); GCUPS = model length x residues of one pass")

    @staticmethod
    def executable() -> Optional[str]:
        """hmmsearch beside this Python (a venv that `make test` does not activate), on PATH,
        or inside the PyPI ``hmmer`` package."""
        found = (shutil.which("hmmsearch", path=os.path.dirname(sys.executable))
                 or shutil.which("hmmsearch"))
        if found:
            return found
        spec = importlib.util.find_spec("hmmer")
        if spec and spec.origin:
            return shutil.which("hmmsearch", path=os.path.join(os.path.dirname(spec.origin),
                                                               "data", "bin"))
        return None

    def unavailable_reason(self) -> Optional[str]:
        if PyhmmerPeer.unavailable_reason(self):
            return "pyhmmer not installed (it writes the model and FASTA files)"
        if self.executable() is None:
            return "hmmsearch binary not found on PATH (pip install hmmer)"
        return None

    def device_name(self) -> str:
        return f"{super().device_name()} ({self.cpus} threads)"

    def memory_need(self, shape) -> MemoryNeed:
        """The hmmsearch process (host memory, though not this process's) and the FASTA text
        written for it."""
        return MemoryNeed(host=int(HMMSEARCH_FIXED + HMMSEARCH_RESIDUE_BYTES * shape.residues))

    def _tmpdir(self) -> str:
        if self._tmp is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="hmmbench-hmmsearch-")
        return self._tmp.name

    def _write_fasta(self, seqs) -> str:
        """The sequences as FASTA, one line each, decoded with the alphabet's symbols at once
        (a Swiss-Prot-sized database in about a second, not through a pyhmmer object each)."""
        import pyhmmer  # optional, as above
        fasta = os.path.join(self._tmpdir(), "db.faa")
        symbols = np.frombuffer(pyhmmer.easel.Alphabet.amino().symbols.encode(), np.uint8)
        text = symbols[seqs.residues]
        with open(fasta, "wb") as fh:
            for name, a, b in zip(seqs.names, seqs.offsets[:-1].tolist(),
                                  seqs.offsets[1:].tolist()):
                fh.write(b">%s\n%s\n" % (name.encode() if isinstance(name, str) else name,
                                           text[a:b].tobytes()))
        return fasta

    def _write_hmm(self, hmm) -> str:
        path = os.path.join(self._tmpdir(), "model.hmm")
        with open(path, "wb") as fh:
            hmm.write(fh)
        return path

    def run(self, job) -> Execution:
        clock = StageClock()
        # the database file once per sequence set (a model sweep reuses it), the model per HMM;
        # writing them is left out of the pass's time (untimed_s)
        t0 = time.perf_counter()
        fasta = self._files.get((job.seqs, len(job.seqs)), lambda: self._write_fasta(job.seqs))
        hmm_path = self._hmm.get((job.hmm,), lambda: self._write_hmm(job.hmm))
        untimed = time.perf_counter() - t0
        report = os.path.join(self._tmpdir(), "hmmsearch.out")
        cmd = [self.executable(), *([] if job.bias_filter else ["--nobias"]),
               "--cpu", str(self.cpus), "--noali", "-o", report, hmm_path, fasta]
        with clock("kernel"):
            done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"hmmsearch exited {done.returncode}: "
                               f"{(done.stderr or done.stdout).strip()[-300:]}")
        with open(report) as fh:
            counts = hmmsearch_pass_counts(fh.read())
        return Execution(log10=np.zeros(0), timing=clock.timing, untimed_s=untimed,
                         info={"unit": "none", "bias_filter": job.bias_filter,
                               "pass_counts": counts})

    def close(self) -> None:
        self._files, self._hmm = _UntimedFiles(), _UntimedFiles()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


def hmmsearch_pass_counts(report: str) -> dict:
    """The pass counts of hmmsearch's "Internal pipeline statistics summary" in the keys of
    hmmbench.profile.pipeline.PassCounts (empty when the summary is missing)."""
    keys = {"MSV": "msv", "bias": "bias", "Vit": "vit", "Fwd": "fwd"}
    out = {keys[k]: int(v) for k, v in re.findall(r"^Passed (MSV|bias|Vit|Fwd) filter:\s+(\d+)",
                                                    report, re.M)}
    searched = re.search(r"^Target sequences:\s+(\d+)", report, re.M)
    if searched and out:
        out = {"searched": int(searched.group(1)), **out}
    return out


def backends() -> list:
    return [PyhmmerPeer(), PyhmmerPipelinePeer(), HmmsearchPeer()]
