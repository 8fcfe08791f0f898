"""Fixtures of the core tests."""
import pytest

from hmmbench import registry
from hmmbench.errors import UnknownName
from hmmbench.pairhmm.workload import WORKLOAD as PAIRHMM

from helpers.runner_fakes import ToyBackend, launches_by_batch, toy_dataset, toy_reference


@pytest.fixture
def fake_world(monkeypatch, tmp_path):
    """Toy backends in the registry, a toy dataset by name, a private reference cache."""
    backends = [toy_reference(), ToyBackend("good"), ToyBackend("wrong", offset=1.0),
                ToyBackend("gone", unavailable="no toy device"),
                ToyBackend("boom", raise_on_run="kernel exploded")]
    monkeypatch.setattr(registry, "discover", lambda workload="pairhmm": backends)
    monkeypatch.setattr(PAIRHMM, "launches", launches_by_batch)
    known = {"toy": toy_dataset()}

    def resolve(names):
        for n in names:
            if n not in known:
                raise UnknownName("dataset", n, known)
        return [known[n] for n in names] or list(known.values())
    monkeypatch.setattr(PAIRHMM, "resolve", resolve)
    monkeypatch.setenv("HMMBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    return backends
