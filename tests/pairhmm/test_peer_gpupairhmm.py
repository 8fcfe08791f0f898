"""peer-gpupairhmm without a GPU: a fake gpuPairHMM (a Python script written here) proves the input
writing, output and timing parsing, the cross-check, the error paths, the build cache and the
unavailability reasons."""
from __future__ import annotations

import os
import stat
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from cpu_reference.pairhmm.forward import forward_log10
from hmmbench import cli, results
from hmmbench.apis import nsight
from hmmbench.pairhmm import peers
from hmmbench.pairhmm.datasets import resolve
from hmmbench.pairhmm.datasets.blockfmt import load_block
from hmmbench.runner import RunConfig, run_benchmark

DATASET = "shape-20x30@40"   # 40 pairs in batches of 4 x 4 (the last one 1 x 8)

FAKE = r'''#!{python}
"""A stand-in for gpuPairHMM: answers from $FAKE_VALUES, misbehaves as $FAKE_MODE says."""
import os, sys
args = sys.argv[1:]
inp, out = args[args.index("--inputfile") + 1], args[args.index("--outputfile") + 1]
mode = os.environ.get("FAKE_MODE", "ok")
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(" ".join(args) + "\n")
print("options.inputfile = " + inp)
if mode == "crash":
    print("CUDA error: out of memory (gpuworker.cuh:700)", file=sys.stderr)
    sys.exit(3)
if mode == "signal":
    os.kill(os.getpid(), 9)
values = open(os.environ["FAKE_VALUES"]).read().split()
lines = open(inp).read().splitlines()
rows, i, k = [], 0, 0
while i < len(lines):
    r, h = (int(x) for x in lines[i].split())
    for q in lines[i + 1:i + 1 + r]:
        assert len(q.split(" ")) == 5, "five single-space fields"
    rows.append(lines[i])
    i += 1 + r + h
    for _ in range(r):
        rows.append(" ".join(values[k:k + h]))
        k += h
if mode == "wrong":      # one pair off by 0.5, one returned as -inf
    first = rows[1].split()
    first[0] = "%.5f" % (float(first[0]) + 0.5)
    first[1] = "-inf"
    rows[1] = " ".join(first)
if mode == "short":
    rows.pop()
if mode == "garbage":
    rows[1] = rows[1].replace(rows[1].split()[0], "x1.5", 1)
if mode != "nofile":
    open(out, "w").write("\n".join(rows) + "\n")
if mode != "notime":
    print("Batch processing time: 0.0125s (42.5 GCUPS)")
'''


#: A stand-in for Nsight Compute: runs the program it is given, then prints two launches' durations
#: (8 ms and 0.5 ms) as ncu's CSV does.
FAKE_NCU = r'''#!{python}
import subprocess, sys
from hmmbench.apis.nsight import NCU_ARGS
done = subprocess.run(sys.argv[1 + len(NCU_ARGS):], capture_output=True, text=True)
sys.stdout.write(done.stdout)
cols = ["ID", "Kernel Name", "Metric Name", "Metric Unit", "Metric Value"]
print(",".join('"%s"' % c for c in cols))
for i, (kernel, ns) in enumerate((("align(float *)", "8,000,000"), ("scan(int *)", "500,000"))):
    print(",".join('"%s"' % c for c in (i, kernel, "gpu__time_duration.sum", "ns", ns)))
sys.exit(done.returncode)
'''


def write_fake(path: Path, text: str = FAKE) -> Path:
    path.write_text(text.replace("{python}", sys.executable))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """The fake binary in $HMMBENCH_GPUPAIRHMM_BINARY, the dataset's true values beside it."""
    pairs = resolve(DATASET).load()
    values = tmp_path / "values.txt"
    values.write_text("\n".join("%.5f" % v for v in forward_log10(pairs, "float64")))
    monkeypatch.setenv(peers.ENV_BINARY, str(write_fake(tmp_path / "gpuPairHMM")))
    monkeypatch.setenv(nsight.ENV_NCU, str(write_fake(tmp_path / "ncu", FAKE_NCU)))
    monkeypatch.setenv("FAKE_VALUES", str(values))
    monkeypatch.setenv("FAKE_LOG", str(tmp_path / "calls.log"))
    monkeypatch.setenv("HMMBENCH_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def bench(tmp_path, chunking="merged", repeat=2):
    from hmmbench.pairhmm.reference import backends as reference_backends
    cfg = RunConfig(cache_dir=tmp_path / "cache", repeat=repeat, chunking=chunking)
    ref = [b for b in reference_backends() if b.name == "numpy"]
    res = run_benchmark([resolve(DATASET)], ref + [peers.GpuPairHMMPeer()], cfg)
    return {r.backend: r for r in res.records}["peer-gpupairhmm"]


def test_runs_cross_checked_with_its_kernels_and_its_own_batch_time_apart(fake):
    rec = bench(fake)
    assert rec.status == "ok", rec.reason
    assert rec.n_checked == rec.pairs == 40 and rec.max_abs_err < 1e-5
    # kernel: the launches ncu timed, summed; batch: its own timer, a stage of its own
    assert rec.timing_s["kernel"] == rec.timing_min_s["kernel"] == pytest.approx(0.0085)
    assert rec.timing_s["batch"] == rec.timing_max_s["batch"] == 0.0125
    assert rec.samples_s["batch"] == [0.0125, 0.0125]
    assert rec.timing_s["prep"] == rec.timing_s["h2d"] == rec.timing_s["d2h"] == 0
    assert rec.timing_s["total"] > 0 and rec.gcups_kernel == pytest.approx(
        rec.cells / 0.0085 / 1e9)
    assert rec.info["timing_note"] == peers.TIMING_NOTE and rec.info["peer_gcups"] == 42.5
    assert rec.info["process_wall_s"] > 0 and rec.info["kernel_launches"] == 2
    calls = (fake / "calls.log").read_text().splitlines()
    assert len(calls) == 6      # warm-up + 2 repeats, one plain and one profiled process each
    # One input file, written once (untimed) and reused by every pass; the profiled run writes
    # its output beside the plain run's, never over it.
    assert len({c.split()[1] for c in calls}) == 1
    assert {Path(c.split()[3]).name for c in calls} == {"output.txt", "output.profiled.txt"}


def test_without_ncu_the_kernel_stage_is_not_measured_and_says_why(fake, monkeypatch):
    monkeypatch.setenv(nsight.ENV_NCU, str(fake / "no-such-ncu"))
    rec = bench(fake)
    assert rec.status == "ok", rec.reason
    assert rec.timing_s["kernel"] == 0 and rec.gcups_kernel is None
    assert rec.timing_s["batch"] == 0.0125
    assert "kernel not measured: ncu (Nsight Compute) not found" in rec.info["timing_note"]
    assert len((fake / "calls.log").read_text().splitlines()) == 3


def test_input_file_is_its_block_format(fake):
    pairs = resolve(DATASET).load()
    path = fake / "in.txt"
    peers.write_input(pairs, path)
    back = load_block(path)
    assert back.n_pairs == pairs.n_pairs
    assert np.array_equal(back.read_bases, pairs.read_bases)
    assert np.array_equal(back.gcp_qual, pairs.gcp_qual)
    assert np.array_equal(back.batch_haps, pairs.batch_haps)


def test_wrong_values_are_a_mismatch(fake, monkeypatch):
    monkeypatch.setenv("FAKE_MODE", "wrong")
    rec = bench(fake)
    assert rec.status == "mismatch"
    assert rec.n_over_tol == 2 and rec.n_nonfinite == 1
    assert "2 of 40 checked pairs" in rec.reason and "1 non-finite" in rec.reason


@pytest.mark.parametrize("mode, expected", [
    ("crash", "gpuPairHMM exited with status 3: CUDA error: out of memory"),
    ("signal", "gpuPairHMM was killed by signal 9"),
    ("short", "expected 8 values (block 3), got the end of the output"),
    ("notime", "no 'Batch processing time"),
    ("nofile", "wrote no output file"),
])
def test_failures_are_one_line_errors(fake, monkeypatch, mode, expected):
    monkeypatch.setenv("FAKE_MODE", mode)
    rec = bench(fake, repeat=1)
    assert rec.status == "error"
    assert expected in rec.reason and "\n" not in rec.reason


def test_a_garbled_value_is_a_mismatch_not_an_error(fake, monkeypatch):
    """gpuPairHMM's writer garbles a value now and then on large inputs: that pair is NaN (a
    mismatch the report counts), the rest of the run still counts."""
    monkeypatch.setenv("FAKE_MODE", "garbage")
    rec = bench(fake, repeat=1)
    assert rec.status == "mismatch" and rec.n_nonfinite == 1
    assert rec.info["unreadable_values"] == 1 and rec.info["unreadable_example"] == "x1.5"


def test_mostly_unreadable_output_is_an_error():
    pairs = resolve(DATASET).load()      # blocks 4x4, 4x4, 1x8
    rows = ["4 4"] + ["x y z w"] * 4
    rows += rows + ["1 8", " ".join(["-5.5"] * 8)]
    with pytest.raises(peers.PeerError, match=r"output value 1 is not a number: 'x' \(32 of 40"):
        peers.parse_output("\n".join(rows), pairs)


def test_parse_output_checks_every_block():
    pairs = resolve(DATASET).load()      # blocks 4x4, 4x4, 1x8
    good = ["4 4"] + ["-1.0 -2.0 -3.0 -4.0"] * 4
    good += good + ["1 8", " ".join(["-5.5"] * 8)]
    assert peers.parse_output("\n".join(good), pairs)[0][-1] == -5.5
    bad_header = ["4 5"] + good[1:]
    with pytest.raises(peers.PeerError, match=r"line 1: block 1 header '4 5', expected '4 4'"):
        peers.parse_output("\n".join(bad_header), pairs)
    with pytest.raises(peers.PeerError, match="more output than the input's 40 pairs"):
        peers.parse_output("\n".join(good + ["1 1", "-1"]), pairs)
    with pytest.raises(peers.PeerError, match="ends after 2 of 3 blocks"):
        peers.parse_output("\n".join(good[:10]), pairs)
    inf = peers.parse_output("\n".join(good).replace("-2.0", "-inf", 1), pairs)[0]
    assert inf[1] == -np.inf


def test_parse_batch_time():
    assert peers.parse_batch_time("x\nBatch processing time: 0.00241s (25.9 GCUPS)\n") == \
        (0.00241, 25.9)
    assert peers.parse_batch_time("Batch processing time: 2.4e-03s (inf GCUPS)")[0] == 0.0024
    with pytest.raises(peers.PeerError, match="unreadable"):
        peers.parse_batch_time("Batch processing time: abcs (1 GCUPS)")


def test_original_chunking_is_refused(fake):
    rec = bench(fake, chunking="original", repeat=1)
    assert rec.status == "unavailable"
    assert rec.reason.startswith("refused: chunking 'original' would start one gpuPairHMM "
                                 "process per launch")
    assert not (fake / "calls.log").exists()


def test_cli_report_shows_the_timing_note(fake, capsys, monkeypatch):
    from hmmbench import hostinfo
    monkeypatch.setattr(hostinfo, "enrich_devices", lambda *a, **k: None)  # no OpenCL probing
    monkeypatch.chdir(fake)
    out = fake / "r.json"
    assert cli.main(["run", "-d", DATASET, "-b", "numpy", "-b", "peer-gpupairhmm",
                     "--chunking", "merged", "--repeat", "1", "--json", str(out)]) == 0
    doc = results.load(out)
    assert {r["backend"]: r["status"] for r in doc["runs"]} == {
        "numpy": "ok", "peer-gpupairhmm": "ok"}
    text = " ".join(capsys.readouterr().out.split())
    assert "kernel = its kernels' GPU time (Nsight Compute" in text
    assert "batch = gpuPairHMM's own 'Batch processing time'" in text
    assert "batch 12.5 ms" in text


# --- availability and the build cache ------------------------------------------------------------
def fake_checkout(root: Path, recipe: str) -> Path:
    """A source tree with a Makefile whose gpuPairHMM target runs ``recipe``."""
    root.mkdir(parents=True)
    (root / "main.cu").write_text("// not gpuPairHMM\n")
    (root / "Makefile").write_text(f"gpuPairHMM:\n\t{recipe}\n")
    return root


@pytest.fixture
def build_world(tmp_path, monkeypatch):
    monkeypatch.delenv(peers.ENV_BINARY, raising=False)
    monkeypatch.setenv("HMMBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(peers, "gpu_arch", lambda: ("90", None, "Fake H100"))
    monkeypatch.setattr(peers, "find_nvcc", lambda: "/usr/bin/true")
    return tmp_path


def test_no_checkout_no_gpu_no_nvcc(build_world, monkeypatch):
    monkeypatch.setenv(peers.ENV_CHECKOUT, str(build_world / "nowhere"))
    reason = peers.GpuPairHMMPeer().unavailable_reason()
    assert reason == f"{peers.ENV_CHECKOUT}={build_world / 'nowhere'} is not a gpuPairHMM " \
                     "checkout (no Makefile/main.cu)"
    monkeypatch.setenv(peers.ENV_CHECKOUT, str(fake_checkout(build_world / "src", "true")))
    monkeypatch.setattr(peers, "gpu_arch", lambda: (None, "no NVIDIA GPU (test)", ""))
    assert peers.GpuPairHMMPeer().unavailable_reason() == "no NVIDIA GPU (test)"
    monkeypatch.setattr(peers, "gpu_arch", lambda: ("90", None, "Fake H100"))
    monkeypatch.setattr(peers, "find_nvcc", lambda: None)
    assert peers.GpuPairHMMPeer().unavailable_reason().startswith("nvcc not found")
    monkeypatch.setenv(peers.ENV_BINARY, str(build_world / "missing-binary"))
    assert "is not an executable file" in peers.GpuPairHMMPeer().unavailable_reason()


def test_builds_once_per_source_and_arch(build_world, monkeypatch):
    count = build_world / "builds.txt"
    recipe = (f"sleep 0.3; echo $(GPUARCH) $(TUNINGARCH) >> {count}; "
              f"printf '#!/bin/sh\\nexit 0\\n' > gpuPairHMM; chmod +x gpuPairHMM")
    src = fake_checkout(build_world / "src", recipe)
    monkeypatch.setenv(peers.ENV_CHECKOUT, str(src))
    # Two processes' worth of backends at once: the lock lets one build, the other waits.
    found = []
    threads = [threading.Thread(target=lambda: found.append(
        peers.GpuPairHMMPeer().unavailable_reason())) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert found == [None, None]
    assert count.read_text().split() == ["90", "90"]       # one build, GPUARCH=TUNINGARCH=90
    built = list((build_world / "cache" / "peers").glob("gpuPairHMM-*-sm90/gpuPairHMM"))
    assert len(built) == 1 and not (src / "gpuPairHMM").exists()   # built in the cache copy
    b = peers.GpuPairHMMPeer()
    assert b.unavailable_reason() is None and b.device_name() == "Fake H100"
    assert count.read_text().split() == ["90", "90"]       # cached: no rebuild
    (src / "main.cu").write_text("// changed\n")            # new source: a new build
    assert peers.GpuPairHMMPeer().unavailable_reason() is None
    assert len(count.read_text().split()) == 4


def test_failed_build_is_the_unavailable_reason(build_world, monkeypatch):
    recipe = "echo compiling; echo 'main.cu(3): error: identifier x is undefined' >&2; exit 2"
    monkeypatch.setenv(peers.ENV_CHECKOUT, str(fake_checkout(build_world / "src", recipe)))
    reason = peers.GpuPairHMMPeer().unavailable_reason()
    assert reason.startswith("building gpuPairHMM failed (make exit 2; log ")
    assert reason.endswith(": main.cu(3): error: identifier x is undefined")
    log = Path(reason.split("log ", 1)[1].split("):", 1)[0])
    assert "GPUARCH=90" in log.read_text()
    assert not list((build_world / "cache" / "peers").glob("gpuPairHMM-*-sm90"))


def test_gpu_arch_from_nvidia_smi(tmp_path, monkeypatch):
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho \"$@\" > " + str(tmp_path / "args") +
                   "\necho '9.0, NVIDIA H100 80GB HBM3'\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("HMMBENCH_CUDA_DEVICE", "1")
    assert peers.gpu_arch() == ("90", None, "NVIDIA H100 80GB HBM3")
    assert (tmp_path / "args").read_text().split()[0] == "--id=1"
    # nvidia-smi that finds no GPU, and no usable PyCUDA: the reason names both
    smi.write_text("#!/bin/sh\necho 'No devices were found'\nexit 6\n")
    from hmmbench.apis import cuda as glue
    monkeypatch.setattr(glue, "unavailable_reason", lambda: "no CUDA device")
    assert peers.gpu_arch() == (None, "no NVIDIA GPU (nvidia-smi lists none; no CUDA device)", "")
