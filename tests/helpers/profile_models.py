"""The shipped protein models with their test ids, and the runner's backends narrowed to a test's
own (``use_backends``): shared by the profile tests (needs pyhmmer, like every one of them)."""
import os

from hmmbench import registry
from hmmbench.profile import datasets


def use_backends(monkeypatch, tmp_path, *backends) -> None:
    """The runner of workload profile sees only ``backends`` (instances kept, so a test reads
    their state after the run), with a fresh reference cache under ``tmp_path``."""
    monkeypatch.setattr(registry, "discover", lambda workload="pairhmm": list(backends)
                        if workload == "profile" else [])
    monkeypatch.setenv("HMMBENCH_CACHE_DIR", str(tmp_path / "cache"))


def protein_hmms() -> list:
    """(file name, index in the file, pyhmmer HMM) of every shipped protein model."""
    out = []
    for path in datasets.model_files():
        for j, hmm in enumerate(datasets.read_hmms(path)):
            if hmm.alphabet.is_amino():
                out.append((os.path.basename(path), j, hmm))
    return out


HMMS = protein_hmms()
IDS = [f"{f}:{h.name.decode() if isinstance(h.name, bytes) else h.name}" for f, _, h in HMMS]
