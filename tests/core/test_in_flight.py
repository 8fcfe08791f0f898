"""``hmmbench run --in-flight N``: the runner keeps up to N launches submitted
(``Backend.submit``) and gathers their results in dataset order; the figures are recorded with N,
so reports and ``compare`` never mix them with one-call-at-a-time figures."""
from __future__ import annotations

import numpy as np
import pytest

from hmmbench import cli, compare, results
from hmmbench.backend import Execution
from hmmbench.pairhmm.datasets import resolve
from hmmbench.pairhmm.datasets.chunking import launches
from hmmbench.registry import select
from hmmbench.runner import ReferenceStore, RunConfig, run_benchmark
from hmmbench.runner.cell import joined_values, run_launches

from helpers.runner_fakes import ToyBackend, launches_by_batch, toy_dataset, toy_log10, toy_reference


class _Later:
    """A handle whose result is set when its backend decides the call is done."""

    def __init__(self, backend):
        self.backend, self.execution = backend, None

    def result(self) -> Execution:
        if self.execution is None:
            self.backend.complete_all()
        return self.execution


class OutOfOrder(ToyBackend):
    """Submitted calls complete newest first, all at once, when any result is asked for."""

    def __init__(self):
        super().__init__("out-of-order")
        self.pending, self.most_outstanding, self.completed = [], 0, []

    def submit(self, pairs):
        handle = _Later(self)
        self.pending.append((handle, pairs))
        self.most_outstanding = max(self.most_outstanding, len(self.pending))
        return handle

    def complete_all(self):
        for handle, pairs in reversed(self.pending):
            handle.execution = self.run(pairs)
            self.completed.append(pairs.n_pairs)
        self.pending = []


def test_results_gathered_in_dataset_order_whatever_the_completion_order():
    pairs = toy_dataset(n_batches=9, seed=3).load()
    regions = launches_by_batch(pairs, "original")
    b = OutOfOrder()
    outs, wall = run_launches(b, regions, in_flight=4)
    assert b.most_outstanding == 4 and wall > 0
    assert len(b.completed) == len(regions)
    assert np.array_equal(joined_values(outs), toy_log10(pairs))


def test_numpy_backend_identical_with_calls_in_flight_and_recorded(tmp_path):
    regions = launches(resolve("shape-20x30@200").load(), "original")
    numpy_ref = select(["numpy"])[0]
    one = joined_values(run_launches(numpy_ref, regions)[0])
    four = joined_values(run_launches(numpy_ref, regions, in_flight=4)[0])
    assert np.array_equal(one, four)
    cfg = RunConfig(cache_dir=tmp_path / "cache", repeat=1, in_flight=3)
    refs = ReferenceStore(toy_reference(), None, cfg)
    rec = run_benchmark([toy_dataset(n_batches=5)], [ToyBackend("good")], cfg,
                        launches_fn=launches_by_batch, refs=refs).records[0]
    assert rec.status == "ok" and rec.in_flight == 3 and rec.launches == 5
    assert "per-call sums" in rec.info["stage_sums_overlap"]


def test_opencl_subwarp_identical_with_calls_in_flight():
    from helpers.opencl_subwarp import DEVICES, backend as _backend
    if not DEVICES:
        pytest.skip("no usable OpenCL device")
    b = _backend(DEVICES[0], "auto")
    regions = launches(resolve("shape-20x30@200").load(), "original")
    one = joined_values(run_launches(b, regions)[0])
    three = joined_values(run_launches(b, regions, in_flight=3)[0])
    assert len(one) == sum(p.n_pairs for p in regions) and np.array_equal(one, three)


class Batched(ToyBackend):
    """A toy backend whose calls in flight run as one (hmmbench.pairhmm.subwarp.batched)."""

    def __init__(self):
        from hmmbench.pairhmm.subwarp.batched import CallBatches
        super().__init__("batched", fallback=2)
        self.sizes, self._batches = [], CallBatches(self.run_one)

    def run_one(self, pairs):
        self.sizes.append(pairs.n_batches)
        ex = self.run(pairs)
        ex.timing = {"prep": 1.0, "kernel": 3.0}
        return ex

    def submit(self, pairs):
        return self._batches.submit(pairs)


@pytest.mark.parametrize("in_flight, sizes", [(2, [2] * 5), (4, [4, 4, 2]), (3, [3, 3, 3, 1]),
                                              (12, [10])])
def test_calls_in_flight_run_as_one_call_and_split_back(in_flight, sizes):
    """Calls submitted while others wait run as one call when the oldest is collected (at most
    as many as the caller keeps in flight); each call gets its own pairs' results, its share of
    the stage times (their sums are the call's), the recomputes once, the batch's size."""
    pairs = toy_dataset(n_batches=10, seed=4).load()
    regions = launches_by_batch(pairs, "original")
    b = Batched()
    outs, _ = run_launches(b, regions, in_flight=in_flight)
    assert b.sizes == sizes and len(outs) == len(regions)
    assert np.array_equal(joined_values(outs), toy_log10(pairs))
    for ex, region in zip(outs, regions):
        assert len(ex.log10) == region.n_pairs
    assert sum(ex.timing["kernel"] for ex in outs) == pytest.approx(3.0 * len(sizes))
    assert sum(ex.n_fallback for ex in outs) == 2 * len(sizes)
    assert [ex.info.get("batched_calls", 1) for ex in outs] == [
        n for n in sizes for _ in range(n)]


def test_a_failed_batch_fails_each_of_its_calls_without_running_again():
    from hmmbench.pairhmm.subwarp.batched import CallBatches
    runs = []

    def run_one(pairs):
        runs.append(pairs.n_pairs)
        raise RuntimeError("device lost")
    regions = launches_by_batch(toy_dataset(n_batches=3, seed=5).load(), "original")
    batches = CallBatches(run_one)
    handles = [batches.submit(p) for p in regions]
    for h in handles:
        with pytest.raises(RuntimeError, match="device lost"):
            h.result()
    assert runs == [sum(p.n_pairs for p in regions)]
    batches.submit(regions[0])                 # a new batch after the failed one
    assert len(runs) == 1


def test_opencl_subwarp_batched_in_flight_is_the_calls_alone():
    """opencl-subwarp with calls in flight merged (batch_calls, as cuda-subwarp-batched): the
    results of the calls one by one (the merged calls' tier may differ: within 1e-5). Their
    CPU programs built without the optimizer (``UNOPTIMIZED``: the same bits, checked in
    test_opencl.py; PoCL's optimized builds of the registered bins cost seconds each)."""
    from helpers.opencl_subwarp import DEVICES, UNOPTIMIZED
    from hmmbench.pairhmm.subwarp.opencl import SubwarpOpenCL
    if not DEVICES:
        pytest.skip("no usable OpenCL device")
    alone = SubwarpOpenCL("opencl-subwarp-f64rescue", device=DEVICES[0], **UNOPTIMIZED)
    batched = SubwarpOpenCL("opencl-subwarp-f64rescue", device=DEVICES[0], batch_calls=True,
                            **UNOPTIMIZED)
    for b in (alone, batched):
        reason = b.unavailable_reason()
        if reason:
            pytest.skip(reason)
    # nine of 1m's regions, in its order: the eight of fewest cells and the one of fewest
    # cells with reads over 128 (the registered small tier's two bins run, p32k4 and p32k8)
    regions = launches(resolve("1m").load(), "original")
    cells = [int(np.sum(p.pair_read_lengths * p.pair_hap_lengths)) for p in regions]
    longer = min((i for i, p in enumerate(regions) if p.max_read_length > 128), key=cells.__getitem__)
    rest = sorted((i for i in range(len(regions)) if i != longer), key=cells.__getitem__)[:8]
    regions = [regions[i] for i in sorted(rest + [longer])]
    assert sum(p.max_read_length > 128 for p in regions) == 1
    one = joined_values(run_launches(alone, regions)[0])
    outs = run_launches(batched, regions, in_flight=4)[0]
    assert [ex.info.get("batched_calls") for ex in outs] == [4] * 8 + [None]
    assert {label for ex in outs for label in ex.info["bins"]} == {"p32k4[1..128]",
                                                                   "p32k8[129..256]"}
    assert batched.params["batch_calls"] is True and "batch_calls" not in alone.params
    assert alone.params["unoptimized_on_cpu"] and batched.params["unoptimized_on_cpu"]
    np.testing.assert_allclose(joined_values(outs), one, rtol=0, atol=1e-5)


def test_compare_and_reports_never_match_other_in_flight_figures():
    base = {"dataset": "1m", "backend": "cuda-subwarp", "chunking": "original"}
    assert compare.match_key(base) == compare.match_key({**base, "in_flight": 1})
    four = {**base, "in_flight": 4}
    assert compare.match_key(four) != compare.match_key(base)
    assert results.run_label(four) == "cuda-subwarp [in-flight 4]"


def test_cli_in_flight(fake_world, tmp_path, capsys):  # noqa: F811
    out = tmp_path / "r.json"
    assert cli.main(["run", "-d", "toy", "-b", "numpy", "-b", "good", "--repeat", "1",
                     "--in-flight", "2", "-q", "--json", str(out)]) == 0
    doc = results.load(out)
    assert [r["in_flight"] for r in doc["runs"]] == [2, 2] and doc["config"]["in_flight"] == 2
    assert {r["status"] for r in doc["runs"]} == {"ok"}
    capsys.readouterr()
    bad = tmp_path / "bad.json"
    assert cli.main(["run", "-d", "toy", "--in-flight", "0", "--json", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["hmmbench: error: --in-flight must be between 1 and 1024"] and not bad.exists()
    # a file of other in-flight figures is not resumed
    assert cli.main(["run", "-d", "toy", "-b", "numpy", "-b", "good", "--repeat", "1",
                     "-q", "--resume", str(out)]) == 2
    assert "in_flight=2" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", "--in-flight", "many"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--in-flight" in err[0]
