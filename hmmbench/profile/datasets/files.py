"""Reading the profile workload's input files: HMMER3 model files and protein FASTA (through
pyhmmer, every broken line named), pyhmmer's shipped models and proteome, and file digests."""
from __future__ import annotations

import glob
import hashlib
import json
import os
import re
from typing import Optional

from ...errors import InputError
from ...fileio import check_input_file, open_input
from .. import hmmcheck
from ..model import ProfileModel, SequenceSet

PROTEOME = "938293.PRJEB85.HG003687.faa"


def pyhmmer_data_dir() -> Optional[str]:
    """pyhmmer's bundled test data folder, or None when pyhmmer (or its data) is missing."""
    try:
        import pyhmmer  # optional dependency, imported on first use
    except ImportError:
        return None
    path = os.path.join(os.path.dirname(pyhmmer.__file__), "tests", "data")
    return path if os.path.isdir(path) else None


def model_files() -> list:
    """The shipped text .hmm files (protein and nucleotide), sorted."""
    base = pyhmmer_data_dir()
    return sorted(glob.glob(os.path.join(base, "hmms", "txt", "*.hmm"))) if base else []


def read_hmms(path: str) -> list:
    """Every HMM of a HMMER3 file; a file pyhmmer cannot read, a broken number in it (checked
    line by line, :mod:`.hmmcheck`) or a model HMMER's ``validate`` refuses is an InputError
    naming the file (and line)."""
    import pyhmmer  # optional dependency, imported on first use
    check_input_file(path, "HMM file")
    try:
        with open_input(path) as fh:
            # the numbers only (fast); the sums are HMMER's validate's, below
            hmmcheck.check_hmm_file(path, fh, sums=False)  # on the module: tests switch it off
        with pyhmmer.plan7.HMMFile(path) as hfile:
            hmms = list(hfile)
    except OSError as exc:
        raise InputError(path, None, f"cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise InputError(path, None, f"not UTF-8 text (byte 0x{exc.object[exc.start]:02x})") \
            from None
    except (ValueError, EOFError, RuntimeError) as exc:    # pyhmmer's parse errors
        raise _parse_error(path, "a readable HMM file", exc) from None
    if not hmms:
        raise InputError(path, None, "not a readable HMM file: no complete model (truncated?)")
    for k, hmm in enumerate(hmms):
        try:
            hmm.validate(tolerance=2 * hmmcheck.SUM_TOLERANCE)
        except ValueError as exc:
            with open_input(path) as fh:        # the line, where the sums tell it
                hmmcheck.check_hmm_file(path, fh, sums=True)
            raise InputError(path, None, f"model {k + 1} ({_model_name(hmm)}): HMMER refuses "
                                         f"it: {_exception_text(exc)}") from None
    return hmms


def _exception_text(exc: Exception) -> str:
    """An exception's message as one line (pyhmmer's InvalidHMM cannot always make its own)."""
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - its __str__ fails on some messages: show the arguments
        text = " ".join(a.decode("utf-8", "replace") if isinstance(a, bytes) else a
                        for a in exc.args if isinstance(a, (str, bytes))) or type(exc).__name__
    return " ".join(text.split())


def _parse_error(path: str, what: str, exc: Exception) -> InputError:
    """pyhmmer's message ("Could not parse file: Line 2: ...") as an InputError at that line."""
    text = " ".join(str(exc).split())
    m = re.search(r"[Ll]ine (\d+):\s*(.*)", text)
    detail = m.group(2) if m else text
    detail = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in detail)
    return InputError(path, int(m.group(1)) if m else None, f"not {what}: {detail}")


def load_models(path: Optional[str] = None) -> list:
    """ProfileModels of every protein model in ``path`` (default: every shipped file)."""
    paths = [path] if path else model_files()
    return [ProfileModel.from_hmm(h) for p in paths for h in read_hmms(p) if h.alphabet.is_amino()]




def _model_name(hmm) -> str:
    n = hmm.name
    return n.decode() if isinstance(n, bytes) else str(n)



def _names_a_file(name: str, suffixes: tuple) -> bool:
    """Whether a --model / --dataset value is meant as a path (so that a directory, FIFO or
    symlink loop there is named as such, not called an unknown name)."""
    return os.path.lexists(name) or name.lower().endswith(suffixes) or name.startswith(
        ("./", "../", "/", "~"))


def _check_utf8_lines(path: str, what: str) -> None:
    """Every line of a text input is UTF-8 (pyhmmer would raise UnicodeDecodeError on a name
    later, with no line); an InputError at the first line that is not. Blocks of whole lines
    are decoded at once (a UTF-8 character never holds a newline byte), and only a block that
    fails is scanned line by line."""
    with open_input(path) as fh:
        before, rest = 0, b""
        for block in iter(lambda: fh.read(1 << 20), b""):
            block = rest + block
            end = block.rfind(b"\n") + 1
            lines, rest = block[:end], block[end:]
            _check_utf8_block(path, what, lines, before)
            before += lines.count(b"\n")
        _check_utf8_block(path, what, rest, before)


def _check_utf8_block(path: str, what: str, lines: bytes, before: int) -> None:
    """Lines ``before + 1``.. of the input, as one block of bytes: an InputError at the first
    one that is not UTF-8."""
    try:
        lines.decode("utf-8")
        return
    except UnicodeDecodeError:
        pass
    for lineno, raw in enumerate(lines.split(b"\n"), start=before + 1):
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(path, lineno, f"not UTF-8 {what} text: byte "
                                           f"0x{raw[exc.start]:02x} at column "
                                           f"{exc.start + 1}") from None


def load_fasta(path: str) -> SequenceSet:
    """A protein FASTA file digitized by pyhmmer (HMMER amino codes); a malformed file, no
    sequence or an empty sequence is an InputError naming the file (and line, where known)."""
    import pyhmmer  # optional dependency, imported on first use
    abc = pyhmmer.easel.Alphabet.amino()
    _check_utf8_lines(path, "FASTA")
    try:
        with pyhmmer.easel.SequenceFile(path, digital=True, alphabet=abc, format="fasta") as sf:
            block = sf.read_block()
    except OSError as exc:
        raise InputError(path, None, f"cannot read: {exc.strerror or exc}") from None
    except (ValueError, EOFError, RuntimeError) as exc:
        raise _parse_error(path, "a protein FASTA file", exc) from None
    if not len(block):
        raise InputError(path, 1, "no sequences")
    for k, seq in enumerate(block):
        if not len(seq):
            raise InputError(path, _header_line(path, k), f"sequence {k + 1} is empty")
    return SequenceSet.from_pyhmmer(block)


def _header_line(path: str, k: int) -> Optional[int]:
    """The 1-based line of the k-th (0-based) '>' header of a FASTA file."""
    with open_input(path) as fh:
        seen = -1
        for lineno, line in enumerate(fh, start=1):
            if line.startswith(b">"):
                seen += 1
                if seen == k:
                    return lineno
    return None


def load_proteome() -> SequenceSet:
    """The 2,100-protein proteome shipped with pyhmmer (682,583 residues)."""
    base = pyhmmer_data_dir()
    if base is None:
        raise FileNotFoundError("pyhmmer (with its test data) is not installed")
    return load_fasta(os.path.join(base, "seqs", PROTEOME))



def _sha256_file(path: str) -> str:
    h = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    except OSError as exc:
        raise InputError(path, None, f"cannot read: {exc.strerror or exc}") from None
    return h.hexdigest()


def sha256_of_params(params: dict) -> str:
    """The sha256 naming a generated dataset, model or cell by its parameters."""
    return hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()
