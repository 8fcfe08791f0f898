"""Stopping criteria on synthetic time series: each says enough when its rule holds, never before
its bounds allow, always by its bounds; the registry, the --stopping specs, and the records."""
from __future__ import annotations

import math
import random

import pytest

from hmmbench import cli, results, stats
from hmmbench.errors import UserError
from hmmbench.runner import CRITERIA, RunConfig, StoppingCriterion, criterion_for, register
from hmmbench.runner.stopping import Fixed, Noise, Stable, parse_spec, running_median_spread


def feed(criterion, times, seconds_per_pass=None):
    """Feed passes until the criterion stops; (passes run, reason) or (len(times), None)."""
    elapsed = 0.0
    for k, t in enumerate(times, 1):
        criterion.add(t)
        elapsed += t if seconds_per_pass is None else seconds_per_pass
        reason = criterion.stop_reason(elapsed)
        if reason:
            return k, reason
    return len(times), None


def test_stable_is_the_default_and_keeps_todays_rule():
    cfg = RunConfig(max_time=10.0)
    c = criterion_for(cfg)
    assert isinstance(c, Stable) and (c.min_repeats, c.max_repeats, c.max_time, c.spread) == \
        (3, 1000, 10.0, 0.02)

    def stops(times, elapsed):
        c = criterion_for(cfg)
        for t in times:
            c.add(t)
        return c.stop_reason(elapsed)
    assert stops([1.0], 1.0) is None
    assert stops([1.0, 1.0], 2.0) is None
    assert stops([1.0, 1.0, 1.0], 3.0) == "stable"            # stable running median
    assert stops([1.0, 2.0, 4.0], 7.0) is None                # unstable, under the cap
    assert stops([1.0, 2.0, 40.0], 43.0) == "max_time"        # over the cap after 3
    assert stops([11.0], 11.0) == "max_time"                  # one pass exceeds the cap
    assert stops([6.0, 6.0], 12.0) is None                    # at least 3 otherwise
    assert running_median_spread([1.0, 1.0]) == math.inf


def test_fixed_counts_passes_whatever_the_time():
    c = criterion_for(RunConfig(repeat=5))
    assert isinstance(c, Fixed)
    assert feed(c, [100.0] * 10) == (5, "fixed")               # no time cap: exactly 5
    assert feed(Fixed(count=1), [1.0]) == (1, "fixed")
    with pytest.raises(UserError, match="count is above"):
        Fixed(count=10 ** 9)


def test_noise_stops_when_the_median_interval_is_tight():
    rng = random.Random(7)
    quiet = [1.0 + rng.gauss(0, 0.002) for _ in range(200)]
    noisy = [1.0 + abs(rng.gauss(0, 0.1)) for _ in range(1000)]
    # a quiet series: as soon as an interval of the median exists (6 passes), it is tight
    assert feed(Noise(max_time=1e6), quiet) == (6, "noise")
    # a noisy one needs more passes to pin the median to 2 %, or the time bound stops it
    k, reason = feed(Noise(max_time=1e6), noisy)
    assert reason == "noise" and k > 30
    assert stats.median_noise(noisy[:k]) < 0.02 <= stats.median_noise(noisy[:k - 1])
    assert feed(Noise(max_time=5.0), noisy, seconds_per_pass=1.0) == (5, "max_time")
    assert feed(Noise(max_time=1e6, max_repeats=12), noisy) == (12, "max_repeats")
    # looser: fewer passes
    assert feed(Noise(max_time=1e6, max_noise=0.2), noisy)[0] < k


def test_median_interval_is_the_distribution_free_one():
    assert stats.median_interval([1, 2, 3, 4, 5]) is None       # 5 passes: no 95 % interval
    assert stats.median_interval([6, 1, 5, 2, 4, 3]) == (1, 6)  # 1 - 2/64 >= 95 %
    assert stats.median_interval(list(range(1, 10))) == (2, 8)  # 1 - 2 * 10/512 >= 95 %
    assert stats.median_interval(list(range(1, 9))) == (1, 8)   # (2, 7) would be 93 %
    assert stats.median_noise([1.0] * 5) == math.inf
    assert stats.median_noise([1.0, 1.0, 1.0, 1.1, 0.9, 1.0]) == pytest.approx(0.1)


def test_every_criterion_is_bounded_in_passes_and_time():
    """Whatever the series, a bounded criterion stops by max_repeats and by max_time."""
    endless = [1.0, 100.0] * 600           # never stable, never tight
    for name, cls in CRITERIA.items():
        if not cls.bounded:
            continue
        assert feed(cls(max_repeats=50, max_time=1e9), endless) == (50, "max_repeats"), name
        k, reason = feed(cls(max_time=30.0), endless, seconds_per_pass=1.0)
        assert (k, reason) == (30, "max_time"), name
        # a first pass that alone outlasts the cap is the only one
        assert feed(cls(max_time=5.0), [6.0, 1.0, 1.0]) == (1, "max_time"), name


def test_specs_parse_and_bad_ones_are_usage_errors():
    assert parse_spec("noise:max_noise=0.01,min_repeats=6") == \
        ("noise", {"max_noise": 0.01, "min_repeats": 6})
    c = criterion_for(RunConfig(stopping="noise:max_noise=0.01", max_time=3.0))
    assert (c.name, c.max_noise, c.max_time, c.min_repeats) == ("noise", 0.01, 3.0, 3)
    assert c.spec() == "noise:min_repeats=3,max_repeats=1000,max_time=3,max_noise=0.01"
    for bad, why in (("nope", "unknown stopping criterion"), ("noise:x=1", "no parameter 'x'"),
                     ("noise:max_noise=inf", "positive finite"),
                     ("noise:max_noise=-1", "positive finite"), ("noise:max_noise", "expected"),
                     ("stable:min_repeats=2.5", "whole number"),
                     ("stable:min_repeats=9,max_repeats=4", "above")):
        with pytest.raises(UserError, match=why):
            criterion_for(RunConfig(stopping=bad))


def test_a_registered_criterion_is_picked_by_name():
    @register
    class FirstUnder(StoppingCriterion):
        name = "first-under"
        summary = "a pass under limit seconds"
        params = {"limit": 0.5}

        def enough(self):
            return self.times[-1] < self.limit
    try:
        c = criterion_for(RunConfig(stopping="first-under:limit=2,min_repeats=1"))
        assert feed(c, [5.0, 3.0, 1.5, 1.0]) == (3, "first-under")
        with pytest.raises(ValueError):
            register(FirstUnder)           # a name is registered once
    finally:
        CRITERIA.pop("first-under")


def test_records_say_what_stopped_each_cell(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert cli.main(["run", "-d", "tiny", "-b", "numpy", "--stopping",
                     "noise:max_noise=0.5,min_repeats=2,max_repeats=7", "--warmup-time", "0",
                     "--json", str(out), "-q"]) == 0
    run, = results.load(out)["runs"]
    assert run["stopped_by"] in ("noise", "max_repeats", "max_time")
    assert run["repeats"] >= 6 or run["stopped_by"] != "noise"
    assert run["repeats"] <= 7 and len(run["samples_s"]["total"]) == run["repeats"]
    assert cli.main(["run", "-d", "tiny", "-b", "numpy", "--repeat", "2", "--json",
                     str(out), "-q"]) == 0
    run, = results.load(out)["runs"]
    assert (run["stopped_by"], run["repeats"]) == ("fixed", 2)
    capsys.readouterr()
    assert cli.main(["run", "-d", "tiny", "-b", "numpy", "--stopping", "bogus",
                     "--json", str(tmp_path / "x.json")]) == 2
    assert "unknown stopping criterion 'bogus'" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()
    assert cli.main(["run", "-d", "tiny", "--repeat", "2", "--stopping", "stable"]) == 2
    assert "give one of them" in capsys.readouterr().err
