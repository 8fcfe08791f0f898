"""Runner: statuses, cross-check, repeats, reference cache, info merging, sampling of lazy sets."""
from __future__ import annotations

import math

import numpy as np
import pytest

from hmmbench.backend import Limits
from hmmbench.errors import UserError
from hmmbench.runner import (ReferenceStore, RunConfig, merge_infos, run_benchmark,
                             sample_indexes)

from helpers.runner_fakes import (ToyBackend, launches_by_batch, toy_dataset, toy_lazy_dataset,
                               toy_reference)


def bench(datasets, backends, tmp_path, **cfg):
    cfg.setdefault("repeat", 2)
    config = RunConfig(cache_dir=tmp_path / "cache", **cfg)
    refs = ReferenceStore(toy_reference(), None, config)
    return run_benchmark(datasets, backends, config, launches_fn=launches_by_batch, refs=refs)


def by_backend(result):
    return {r.backend: r for r in result.records}


def test_statuses_of_fake_backends(tmp_path):
    backends = [ToyBackend("good"), ToyBackend("wrong", offset=1e-3),
                ToyBackend("boom", raise_on_run="kernel exploded"),
                ToyBackend("absent", unavailable="no toy device"),
                ToyBackend("nan", nan=True),
                ToyBackend("small", limits=Limits(max_read_length=2))]
    res = by_backend(bench([toy_dataset()], backends, tmp_path))
    assert res["good"].status == "ok" and res["good"].max_abs_err == 0
    assert res["good"].n_checked == res["good"].pairs > 0
    assert res["wrong"].status == "mismatch"
    assert res["wrong"].n_over_tol == res["wrong"].pairs
    assert res["wrong"].max_abs_err == pytest.approx(1e-3)
    assert res["boom"].status == "error" and "kernel exploded" in res["boom"].reason
    assert res["absent"].status == "unavailable" and res["absent"].reason == "no toy device"
    assert res["nan"].status == "mismatch" and math.isinf(res["nan"].max_abs_err)
    assert res["nan"].n_nonfinite == res["nan"].launches  # one NaN per launch
    assert res["small"].status == "unavailable" and res["small"].reason.startswith("refused:")
    # One failure never stops the others, and every backend gets closed.
    assert all(b.closed for b in backends)


def test_timing_summary_and_gcups(tmp_path):
    good = ToyBackend("good", fallback=2)
    ds = toy_dataset(n_batches=4)
    rec = bench([ds], [good], tmp_path, repeat=3).records[0]
    n_launches = ds.load().n_batches
    assert rec.launches == n_launches and rec.repeats == 3
    # Stage times are summed over the launches of a pass: 1e-6 prep, 2e-6 kernel per launch.
    assert rec.timing_s["kernel"] == pytest.approx(2e-6 * n_launches)
    assert rec.timing_s["prep"] == pytest.approx(1e-6 * n_launches)
    assert rec.timing_min_s["total"] <= rec.timing_s["total"] <= rec.timing_max_s["total"]
    assert rec.gcups_kernel == pytest.approx(rec.cells / rec.timing_s["kernel"] / 1e9)
    assert rec.gcups_total == pytest.approx(rec.cells / rec.timing_s["total"] / 1e9)
    # Fallbacks come from the warm-up pass only: 2 per launch.
    assert rec.n_fallback == 2 * n_launches
    # Warm-up + 3 timed passes, each launching every batch.
    assert good.calls == 4 * n_launches


def test_merged_chunking_uses_one_launch(tmp_path):
    rec = bench([toy_dataset(n_batches=5)], [ToyBackend("good")], tmp_path,
                chunking="merged").records[0]
    assert rec.launches == 1 and rec.chunking == "merged"


def test_bad_chunking_mode_fails_before_work(tmp_path):
    b = ToyBackend("good")
    with pytest.raises(UserError):
        bench([toy_dataset()], [b], tmp_path, chunking="sideways")
    assert b.calls == 0


def test_speedup_vs_reference_measured(tmp_path):
    ref = ToyBackend("numpy")
    other = ToyBackend("good")
    res = by_backend(bench([toy_dataset()], [other, ref], tmp_path))
    assert res["numpy"].speedup_vs_reference == pytest.approx(1.0)
    assert res["good"].speedup_basis == "measured"
    expected = res["numpy"].timing_s["total"] / res["good"].timing_s["total"]
    assert res["good"].speedup_vs_reference == pytest.approx(expected)


def test_reference_cache_on_disk(tmp_path):
    ds = toy_dataset()
    cfg = RunConfig(cache_dir=tmp_path / "cache", repeat=1)
    ref = toy_reference()
    store = ReferenceStore(ref, None, cfg)
    rec = run_benchmark([ds], [ToyBackend("good")], cfg, launches_fn=launches_by_batch,
                        refs=store).records[0]
    assert ref.calls == 1 and rec.reference_s is not None
    assert list((tmp_path / "cache").glob("*.npz"))
    # A new store (a new process) reads the cache instead of recomputing.
    ref2 = toy_reference()
    rec2 = run_benchmark([ds], [ToyBackend("good")], cfg, launches_fn=launches_by_batch,
                         refs=ReferenceStore(ref2, None, cfg)).records[0]
    assert ref2.calls == 0 and rec2.reference_s is None and rec2.status == "ok"
    # The reference backend under test fills the cache from its own warm-up pass.
    cfg2 = RunConfig(cache_dir=tmp_path / "cache2", repeat=1)
    store3 = ReferenceStore(toy_reference(), None, cfg2)
    rec_ref = run_benchmark([ds], [ToyBackend("numpy")], cfg2, launches_fn=launches_by_batch,
                            refs=store3).records[0]
    assert store3.backend.calls == 0 and rec_ref.reference_s is not None
    assert rec_ref.status == "ok" and rec_ref.n_checked == rec_ref.pairs
    # Without any reference, results are explicitly unchecked.
    rec3 = run_benchmark([ds], [ToyBackend("good")], cfg, launches_fn=launches_by_batch,
                         refs=ReferenceStore(None, "numpy missing", cfg)).records[0]
    assert rec3.status == "unchecked" and rec3.n_checked == 0 and "numpy missing" in rec3.reason


def test_lazy_dataset_checks_a_sample_per_chunk(tmp_path):
    ds = toy_lazy_dataset(n_chunks=3)
    rec = bench([ds], [ToyBackend("good"), ToyBackend("wrong", offset=0.5)], tmp_path,
                sample_pairs=5).records
    good, wrong = rec
    assert good.status == "ok" and good.n_checked == 15 and "sample of 15" in good.reason
    assert wrong.status == "mismatch" and wrong.n_over_tol == 15
    assert good.pairs == ds.n_pairs and good.launches > 3


def test_large_nonlazy_dataset_checks_a_sample(tmp_path):
    ds = toy_dataset(n_batches=6)
    rec = bench([ds], [ToyBackend("good")], tmp_path, full_check_max_cells=10,
                sample_pairs=4).records[0]
    assert rec.n_checked == 4 and rec.status == "ok" and "sample" in rec.reason


def test_sample_indexes_deterministic():
    a = sample_indexes(1000, 50, seed=3)
    assert np.array_equal(a, sample_indexes(1000, 50, seed=3))
    assert len(np.unique(a)) == 50 and np.all(np.diff(a) > 0)
    assert np.array_equal(sample_indexes(7, 50, seed=0), np.arange(7))


def test_warm_up_passes_run_untimed_while_they_fit(tmp_path):
    """--warmup-time: after the checked pass, untimed passes until it has passed (counted in
    ``warmup_passes``, none of them among the timed samples); one where a pass outlasts it,
    none where the checked pass took over 10x it; none by default (RunConfig)."""
    import time as _time

    class Slow(ToyBackend):
        def __init__(self, name, seconds):
            super().__init__(name)
            self.seconds = seconds

        def run(self, pairs):
            _time.sleep(self.seconds)
            return super().run(pairs)
    fast, slow, slower = Slow("fast", 0.001), Slow("slow", 0.03), Slow("slower", 0.25)
    default = Slow("default", 0.001)
    ds = toy_dataset()
    rec = by_backend(bench([ds], [fast, slow, slower], tmp_path, chunking="merged", repeat=3,
                           warmup_time=0.02))   # merged: a pass is one call
    assert rec["fast"].warmup_passes >= 3 and rec["fast"].repeats == 3
    assert fast.calls == 1 + rec["fast"].warmup_passes + 3
    assert len(rec["fast"].samples_s["total"]) == 3
    assert rec["fast"].to_dict()["warmup_passes"] == rec["fast"].warmup_passes
    assert rec["slow"].warmup_passes == 1 and slow.calls == 1 + 1 + 3
    assert rec["slower"].warmup_passes == 0 and slower.calls == 1 + 3
    rec = bench([ds], [default], tmp_path, chunking="merged", repeat=3).records[0]
    assert rec.warmup_passes == 0 and default.calls == 1 + 3


def test_throttle_flag_from_clocks(tmp_path):
    assert merge_infos([{"sm_clock_mhz": [1980, 1980]}, {"sm_clock_mhz": [1980, 1700]}]) == {
        "sm_clock_mhz": [1980, 1700], "sm_clock_mhz_min": 1700.0, "sm_clock_mhz_max": 1980.0,
        "throttled": True}
    assert merge_infos([{"sm_clock_mhz": [1980, 1900]}])["throttled"] is False
    assert "throttled" not in merge_infos([{"path": "x"}])
    rec = bench([toy_dataset()], [ToyBackend("gpu", clocks=[[1980, 1980], [1980, 1500]])],
                tmp_path).records[0]
    assert rec.info["throttled"] is True and rec.info["path"] == "toy"


def test_wrong_length_result_is_an_error(tmp_path):
    class Short(ToyBackend):
        def run(self, pairs):
            ex = super().run(pairs)
            ex.log10 = ex.log10[:-1]
            return ex
    rec = bench([toy_dataset()], [Short("short")], tmp_path, chunking="merged").records[0]
    assert rec.status == "error" and "values for" in rec.reason


def test_devices_listed(tmp_path):
    res = bench([toy_dataset()], [ToyBackend("good"), ToyBackend("absent", unavailable="x")],
                tmp_path)
    assert res.devices == [{"api": "numpy", "name": "Toy CPU", "backends": ["good"]}]


def test_chunking_axis(tmp_path):
    ds = toy_dataset(n_batches=4)
    res = bench([ds], [ToyBackend("numpy"), ToyBackend("good")], tmp_path,
                chunking="original,merged")
    assert [(r.chunking, r.backend) for r in res.records] == [
        ("original", "numpy"), ("original", "good"), ("merged", "numpy"), ("merged", "good")]
    assert [r.launches for r in res.records] == [4, 4, 1, 1]
    assert res.chunking == "original,merged"
    # Speed-ups compare within one chunking mode.
    assert all(r.speedup_basis == "measured" for r in res.records)


def test_throttling_judged_against_the_device_maximum(tmp_path):
    steady_fast = ToyBackend("fast", clocks=[[1980, 1980]])
    steady_slow = ToyBackend("slow", clocks=[[1500, 1500]])
    res = by_backend(bench([toy_dataset()], [steady_fast, steady_slow], tmp_path))
    assert res["fast"].info["throttled"] is False
    assert res["slow"].info["throttled"] is True
    assert res["slow"].info["sm_clock_mhz_device_max"] == 1980


def test_dataset_default_chunking_used_unless_given(tmp_path):
    own = toy_dataset("own-default", n_batches=4)
    own.default_chunking = "merged"
    plain = toy_dataset("plain", n_batches=4, seed=1)
    res = bench([own, plain], [ToyBackend("good")], tmp_path, chunking="")
    got = {(r.dataset, r.chunking): r.launches for r in res.records}
    assert got == {("own-default", "merged"): 1, ("plain", "original"): 4}
    forced = bench([own], [ToyBackend("good")], tmp_path, chunking="original")
    assert [(r.chunking, r.launches) for r in forced.records] == [("original", 4)]


def test_grouped_pieces_hold_at_most_the_launch_size():
    from hmmbench.runner.units import grouped_pieces

    class Piece:
        def __init__(self, n):
            self.n_items = n

    def sizes(max_items, ns=(4, 4, 4, 2)):
        return [[p.n_items for p in g] for g in grouped_pieces(map(Piece, ns), max_items)]

    assert sizes(8) == [[4, 4], [4, 2]]
    assert sizes(14) == [[4, 4, 4, 2]]
    assert sizes(0) == sizes(3) == [[4], [4], [4], [2]]     # a piece past the size stays alone
    assert sizes(7, (2, 9, 2, 2)) == [[2], [9], [2, 2]]


class SizedBackend(ToyBackend):
    """A toy backend that keeps the item count of every call."""

    def __init__(self, name, **kw):
        super().__init__(name, **kw)
        self.sizes = []

    def run(self, pairs):
        self.sizes.append(pairs.n_pairs)
        return super().run(pairs)


def test_launch_size_past_a_piece_joins_pieces(tmp_path):
    """merged:N on a lazy set: whole pieces joined into launches of at most N pairs, results in
    order, as many pairs checked per piece as with a launch per piece."""
    ds = toy_lazy_dataset(n_chunks=3)
    per_piece = [p.n_pairs for p in ds.chunks()]
    n = per_piece[0] + per_piece[1]
    cfg = RunConfig(cache_dir=tmp_path / "cache", repeat=1, chunking=f"merged:{n}",
                    sample_pairs=3)
    good, wrong = SizedBackend("good"), SizedBackend("wrong", offset=0.5)
    recs = run_benchmark([ds], [good, wrong], cfg,
                         refs=ReferenceStore(toy_reference(), None, cfg)).records
    assert good.sizes == [n, per_piece[2]] * 2           # warm-up and one timed pass
    assert recs[0].launches == 2 and recs[0].status == "ok"
    assert recs[0].n_checked == recs[1].n_over_tol == 3 * 3
    # plain merged: a launch per piece, the same check
    cfg = RunConfig(cache_dir=tmp_path / "cache", repeat=1, chunking="merged", sample_pairs=3)
    one = SizedBackend("good")
    rec = run_benchmark([ds], [one], cfg, refs=ReferenceStore(toy_reference(), None, cfg)
                        ).records[0]
    assert one.sizes == per_piece * 2 and rec.n_checked == 9 and rec.status == "ok"


def test_sharded_pieces_are_not_joined_by_the_runner(tmp_path):
    ds = toy_lazy_dataset(n_chunks=3)
    ds.pieces_joinable = False
    cfg = RunConfig(cache_dir=tmp_path / "cache", repeat=1, chunking="merged:1000000")
    b = SizedBackend("good")
    rec = run_benchmark([ds], [b], cfg, refs=ReferenceStore(toy_reference(), None, cfg)
                        ).records[0]
    assert b.sizes == [p.n_pairs for p in ds.chunks()] * 2 and rec.status == "ok"
