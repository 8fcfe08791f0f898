"""Results past float64's range: reads of 1, 10^4 and 10^5 bases.

GATK's float64 forward sum (scaled by 2^1020) cannot hold a likelihood below about 10^-614.7
(hmmbench.pairhmm.model.LOG10_RANGE_FLOOR): it becomes subnormal, then 0, and GATK answers
log10(0) = -inf. hmmbench keeps that answer; a backend agrees with the reference there when its
value is below the floor too. Everywhere else the usual tolerance applies.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from hmmbench import cli, results
from hmmbench.pairhmm.model import LOG10_RANGE_FLOOR
from hmmbench.runner import CheckTally

RNG = np.random.default_rng(12)


def bases(n: int) -> str:
    return "".join(RNG.choice(list("ACGT"), n))


def read_line(seq: str, q: str = "5") -> str:
    n = len(seq)
    return f"{seq} {q * n} {'I' * n} {'I' * n} {'+' * n}"


def block(*pairs) -> str:
    """Block-format text, one block (1 read x 1 haplotype) per (read, haplotype, quality)."""
    return "".join(f"1 1\n{read_line(r, q)}\n{h}\n" for r, h, q in pairs)


HAP_1K = bases(1000)
HAP_10K = bases(10_000)
#: 1 base (finite), 10^4 bases copied from its haplotype (finite, ~0), 10^4 random bases against
#: 1000 (past the range), 10^5 random bases against 100 (past the range: the issue's case; the
#: reference's time goes with the read's 10^5 diagonals, a third less against 100 than 1000)
LONG_PAIRS = [(bases(1), HAP_1K, "5"), (HAP_10K, HAP_10K, "I"), (bases(10_000), HAP_1K, "5"),
              (bases(100_000), HAP_1K[:100], "5")]


def test_floor_is_where_gatk_float64_leaves_the_normal_range():
    tiny = np.finfo(np.float64).tiny                       # 2^-1022
    assert LOG10_RANGE_FLOOR == pytest.approx(math.log10(tiny) - 1020 * math.log10(2))


@pytest.mark.parametrize("got, ref, agree", [
    (-math.inf, -math.inf, True),               # both past the range: GATK's answer
    (-620.0, -math.inf, True),                   # subnormal vs zero: both past the range
    (-math.inf, -630.0, True),
    (-math.inf, -600.0, False),                  # the reference is inside the range
    (-600.0, -600.00001, True),
    (math.nan, math.nan, False),                 # NaN never agrees (pair-HMM)
    (math.nan, -math.inf, False),
    (math.inf, math.inf, False),
])
def test_tally_past_range(got, ref, agree):
    t = CheckTally(1e-4, range_floor=LOG10_RANGE_FLOOR)
    t.add(np.array([got]), np.array([ref]))
    assert (t.n_over_tol == 0) is agree
    assert t.n_past_range == int(agree and ref < LOG10_RANGE_FLOOR)
    assert math.isfinite(t.max_abs_err) is agree


@pytest.fixture
def long_file(tmp_path, monkeypatch):
    monkeypatch.setenv("HMMBENCH_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "long.in"
    path.write_text(block(*(LONG_PAIRS[k] for k in (0, 2, 3))))   # 1, 10^4, 10^5 bases
    return path


def test_reference_and_cli_on_reads_of_1_to_1e5_bases(long_file, tmp_path, capsys):
    """The issue's case end to end: the run is ok, the JSON is strict, the report renders."""
    out = tmp_path / "r.json"
    assert cli.main(["run", "-d", str(long_file), "-b", "numpy", "--repeat", "1",
                     "--json", str(out)]) == 0
    captured = capsys.readouterr()
    assert "ok" in captured.out and "Traceback" not in captured.err
    json.loads(out.read_text(), parse_constant=lambda c: pytest.fail(f"bare {c}"))
    (run,) = results.load(out)["runs"]
    assert run["status"] == "ok" and run["max_abs_err"] == 0
    assert run["n_past_range"] == 2 and run["reason"].endswith(
        "pairs past the number range (below -614.7, -inf) as in the reference: 2")
    assert cli.main(["report", str(out)]) == 0 and "numpy" in capsys.readouterr().out
    (entry,) = (tmp_path / "cache" / "reference").glob("*.npz")   # the reference's values
    ref = np.load(entry)["values"]
    assert ref[0] > -5 and ref[1] == ref[2] == -math.inf


def test_float32_backends_agree_past_the_range(tmp_path):
    """numpy-f32 underflows and recomputes in float64 (GKL's rule): the same answers, in the
    range (10^4 bases copied from the haplotype: finite, near 0) and past it. (Reads of up to
    10^4 bases: the 10^5 one takes the same path, at 10 times the time.)"""
    from cpu_reference.pairhmm.forward import forward
    from hmmbench.pairhmm.datasets.blockfmt import load_block
    path = tmp_path / "long4.in"
    path.write_text(block(*LONG_PAIRS[:3]))
    pairs = load_block(path)
    f64 = forward(pairs, "float64").log10
    f32 = forward(pairs, "float32")
    assert 2 in f32.fallback_index.tolist() and -10 < f64[1] < 0
    t = CheckTally(1e-4, range_floor=LOG10_RANGE_FLOOR)
    t.add(f32.log10, f64)
    assert t.n_over_tol == 0 and t.n_past_range == 1


def test_opencl_backends_agree_or_refuse_on_long_reads(tmp_path, monkeypatch, capsys):
    """OpenCL backends of this machine (a CPU runtime here) on reads of 1 and 10^4 bases, in
    and past the range: ok, or unavailable with its reason -- never a mismatch."""
    from hmmbench.registry import discover, probe
    if not any(b.api == "opencl" and probe(b, listing=True).available
               for b in discover("pairhmm")):
        pytest.skip("no OpenCL device")
    monkeypatch.setenv("HMMBENCH_CACHE_DIR", str(tmp_path / "cache"))
    data = tmp_path / "long4.in"
    data.write_text(block(LONG_PAIRS[0], LONG_PAIRS[2]))
    out = tmp_path / "r.json"
    assert cli.main(["run", "-d", str(data), "-b", "numpy", "-b", "opencl-warp", "-b",
                     "opencl-inter-tile4", "-b", "opencl-intra-tile2", "--repeat", "1", "-q",
                     "--json", str(out)]) == 0
    capsys.readouterr()
    for run in results.load(out)["runs"]:
        if "Portable Computing Language" in run["device"]:
            continue                      # PoCL's known 'unknown target CPU' failure
        assert run["status"] in ("ok", "unavailable"), (run["backend"], run["reason"])
        if run["status"] == "ok":
            assert run["n_past_range"] == 1


def test_nonfinite_errors_are_stored_and_reported(tmp_path, monkeypatch, capsys):
    """A backend returning NaN: mismatch, error stored as the string "Infinity" (strict JSON),
    rendered by run's report and by ``hmmbench report`` (the TypeError of the issue)."""
    from hmmbench import registry
    from hmmbench.pairhmm.workload import WORKLOAD as PAIRHMM
    from helpers.runner_fakes import ToyBackend, launches_by_batch, toy_dataset, toy_reference
    backends = [toy_reference(), ToyBackend("nan", nan=True)]
    monkeypatch.setattr(registry, "discover", lambda workload="pairhmm": backends)
    monkeypatch.setattr(PAIRHMM, "launches", launches_by_batch)
    monkeypatch.setattr(PAIRHMM, "resolve", lambda names: [toy_dataset()])
    monkeypatch.setenv("HMMBENCH_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "r.json"
    assert cli.main(["run", "-b", "numpy", "-b", "nan", "--repeat", "1", "--json",
                     str(out)]) == 0
    assert "NaN/inf" in capsys.readouterr().out
    stored = json.loads(out.read_text())["runs"][1]
    assert stored["status"] == "mismatch" and stored["max_abs_err"] == "Infinity"
    assert stored["n_nonfinite"] >= 1
    assert cli.main(["report", str(out)]) == 0
    assert "NaN/inf" in capsys.readouterr().out
    assert cli.main(["report", str(out), "--format", "markdown"]) == 0
    assert cli.main(["report", str(out), "--pivot", "max_abs_err"]) == 0
    assert cli.main(["report", str(out), "--format", "csv"]) == 0
    assert cli.main(["report", str(out), "--html", str(tmp_path / "r.html")]) == 0
    assert cli.main(["compare", str(out), str(out)]) == 1           # the mismatch fails the gate
    assert cli.main(["history", str(out), str(out)]) == 0
    assert "Traceback" not in capsys.readouterr().err


def test_gatk_file_with_minus_infinity_expected(tmp_path, monkeypatch, capsys):
    """GATK writes -Infinity for a pair past the range: such a file loads and checks clean."""
    from hmmbench.pairhmm.datasets.gatkfmt import format_gatk, load_gatk
    from hmmbench.pairhmm.datasets.blockfmt import load_block
    from cpu_reference.pairhmm.forward import forward_log10
    path = tmp_path / "long.in"
    path.write_text(block(LONG_PAIRS[0], LONG_PAIRS[2]))         # 1 base; 10^4, past the range
    pairs = load_block(path)
    gatk = tmp_path / "long.txt"
    gatk.write_text(format_gatk(pairs, forward_log10(pairs)).replace("-inf", "-Infinity"))
    assert "-Infinity" in gatk.read_text()
    assert load_gatk(gatk).expected[1] == -math.inf
    monkeypatch.setenv("HMMBENCH_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "r.json"
    assert cli.main(["run", "-d", str(gatk), "-b", "numpy", "--repeat", "1", "-q", "--json",
                     str(out)]) == 0
    (run,) = results.load(out)["runs"]
    assert run["status"] == "ok" and run["max_abs_err_expected"] < 1e-6   # %e: 7 digits
