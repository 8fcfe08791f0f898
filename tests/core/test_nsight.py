"""Nsight Compute's per-kernel durations: the CSV as ncu prints it (mixed with the program's own
lines), units, and the error paths, with a fake ncu (a script written here)."""
from __future__ import annotations

import os
import stat
import sys

import pytest

from hmmbench.apis import nsight

HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
          '"Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit",'
          '"Metric Value"')


def row(i, kernel, unit, value, metric=nsight.METRIC):
    return (f'"{i}","655","peer","127.0.0.1","{kernel}","1","7","(256, 1, 1)","(7, 1, 1)","0",'
            f'"9.0","Command line profiler metrics","{metric}","{unit}","{value}"')


OUTPUT = "\n".join([
    "==PROF== Connected to process 655 (peer)",
    "options.inputfile = in.txt",
    HEADER,
    row(0, "void scan<int, int>(T2, T3)", "ns", "1,696"),
    row(1, "align_kernel(float *, int)", "ns", "2,167,648"),
    row(2, "align_kernel(float *, int)", "us", "3.5"),
    row(3, "align_kernel(float *, int)", "ns", "9", metric="sm__cycles_elapsed.sum"),
    "Batch processing time: 0.0032s (1640.93 GCUPS)",
    "==PROF== Disconnected from process 655",
])


def test_the_rows_of_the_metric_are_read_in_seconds_and_the_rest_is_the_programs_output():
    launches, other = nsight.parse_csv(OUTPUT)
    assert [n for n, _ in launches] == ["void scan<int, int>(T2, T3)",
                                        "align_kernel(float *, int)", "align_kernel(float *, int)"]
    assert [s for _, s in launches] == pytest.approx([1.696e-6, 2.167648e-3, 3.5e-6])
    assert "Batch processing time: 0.0032s" in other and HEADER not in other
    times = nsight.KernelTimes(launches, other)
    assert times.seconds == pytest.approx(1.696e-6 + 2.167648e-3 + 3.5e-6)
    top = next(iter(times.by_kernel().items()))
    assert top[0] == "align_kernel(float *, int)" and top[1][0] == 2


@pytest.mark.parametrize("bad", [row(0, "k", "parsec", "1"), row(0, "k", "ns", "-5"),
                                 row(0, "k", "ns", "n/a")])
def test_an_unreadable_duration_is_an_error_naming_it(bad):
    with pytest.raises(nsight.ProfilerError, match="unreadable kernel duration"):
        nsight.parse_csv(HEADER + "\n" + bad)


def test_a_header_without_the_metric_columns_is_an_error():
    with pytest.raises(nsight.ProfilerError, match="lacks a column"):
        nsight.parse_csv('"ID","Kernel Name"\n"0","k"')


@pytest.fixture
def fake_ncu(tmp_path, monkeypatch):
    script = tmp_path / "ncu"
    script.write_text(f"#!{sys.executable}\n" + r'''
import os, sys
mode = os.environ.get("FAKE_NCU", "ok")
if mode == "fail":
    print("==ERROR== the profiler could not start", file=sys.stderr); sys.exit(1)
print(os.environ["FAKE_NCU_OUT"])
''')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv(nsight.ENV_NCU, str(script))
    monkeypatch.setenv("FAKE_NCU_OUT", OUTPUT)
    return script


def test_kernel_times_runs_the_program_under_ncu(fake_ncu):
    times = nsight.kernel_times(["peer", "--inputfile", "in.txt"], env=dict(os.environ))
    assert len(times.launches) == 3 and "options.inputfile" in times.stdout


def test_ncu_failing_or_timing_nothing_is_one_error_line(fake_ncu, monkeypatch):
    monkeypatch.setenv("FAKE_NCU", "fail")
    with pytest.raises(nsight.ProfilerError, match="status 1: ==ERROR== the profiler"):
        nsight.kernel_times(["peer"], env=dict(os.environ))
    monkeypatch.setenv("FAKE_NCU", "ok")
    monkeypatch.setenv("FAKE_NCU_OUT", "no kernels here")
    with pytest.raises(nsight.ProfilerError, match="timed no kernel launch"):
        nsight.kernel_times(["peer"], env=dict(os.environ))


def test_no_ncu_anywhere_says_how_to_name_one(monkeypatch, tmp_path):
    monkeypatch.setenv(nsight.ENV_NCU, str(tmp_path / "missing"))
    assert nsight.find_ncu() is None
    with pytest.raises(nsight.ProfilerError, match="HMMBENCH_NCU"):
        nsight.kernel_times(["peer"])
