"""Several models in one SSV / MSV launch (--batch-models, warp.h's MODELS) on the CPU OpenCL
device: each model's raw integers in a batch identical to its own launch and to the NumPy
reference (every shipped RREFam model; batches of 2, 4 and 8 of different M, so the shorter
models run on padded vectors); a batched sweep through the runner (cells and GCUPS aggregate,
each model's scores checked, fully and on a sample); the option's errors; the sweep table."""
from __future__ import annotations

import numpy as np
import pytest

from hmmbench import cli, report, results

pytest.importorskip("pyhmmer", reason="pyhmmer not installed (pip install pyhmmer)")
pytest.importorskip("pyopencl", reason="pyopencl not installed")

from cpu_reference.profile import filters as pf  # noqa: E402
from hmmbench.profile.reference import NumpyProfile  # noqa: E402
from hmmbench.apis import opencl as opencl_api  # noqa: E402
from hmmbench.backend import StageClock  # noqa: E402
from hmmbench.errors import UserError  # noqa: E402
from hmmbench.profile import batch as pb, datasets as pds, job as pjob, workload  # noqa: E402
from hmmbench.profile.cells import profile_cells  # noqa: E402
from hmmbench.profile.device.host import launch_order  # noqa: E402
from hmmbench.profile.job import ProfileBatch, ProfileSearch  # noqa: E402
from hmmbench.profile.model import AMINO_SYMBOLS, SequenceSet  # noqa: E402
from hmmbench.profile.device import warp  # noqa: E402
from hmmbench.profile.device.opencl import OpenCLProfile, ProfileWarpOpenCL  # noqa: E402
from helpers.profile_models import use_backends  # noqa: E402

DEVICES = [opencl_api._label(p, d) for p, d in opencl_api.usable_devices()]
needs_device = pytest.mark.skipif(not DEVICES, reason="no usable OpenCL device")


def _default_device() -> str:
    """The device hmmbench picks by default (Intel's CPU runtime where it is installed: it
    builds an optimizer-free program in a tenth of a second and runs it faster than PoCL)."""
    label = opencl_api._label(*opencl_api.choose_device())
    return label if label in DEVICES else DEVICES[0]


@pytest.fixture(scope="module")
def rrefam():
    """The 10 RREFam models (M = 83 .. 138) in file order."""
    return [s.load()[0] for s in pds.resolve_models("RREFam")]


#: proteome proteins whose full MSV overflows for some RREFam model (the only two of the
#: proteome: 468 and 1666); 2045 is its longest (4,560 residues)
OVERFLOWS, LONGEST = (468, 1666), 2045


@pytest.fixture(scope="module")
def seqs():
    """Edge lengths (0, 1, under / at / over a group and a warp, a long one), every 60th
    protein of the proteome, its longest and those whose full MSV overflows."""
    rng = np.random.default_rng(11)
    parts = [rng.integers(0, 20, n).astype(np.uint8) for n in (0, 1, 2, 7, 8, 9, 31, 33, 2000)]
    prot = pds.load_proteome()
    parts += [prot.codes(i) for i in [*range(0, len(prot), 60), *OVERFLOWS, LONGEST]]
    offs = np.zeros(len(parts) + 1, np.int64)
    np.cumsum([p.size for p in parts], out=offs[1:])
    return SequenceSet([f"s{i}" for i in range(len(parts))], np.concatenate(parts), offs)


@pytest.fixture(scope="module")
def reference(rrefam, seqs):
    """Model i's NumPy SSV xE and full-MSV scores on ``seqs`` (computed once for every test)."""
    done: dict = {}

    def get(i):
        if i not in done:
            every = np.arange(len(seqs))
            done[i] = (pf.ssv_xe(rrefam[i], seqs, every), pf.msv_full(rrefam[i], seqs, every))
        return done[i]
    return get


def _tjbm(model, L):
    bp = model.byte
    return ((bp.tjb(L) + bp.tbm) & 0xFF).astype(np.uint8)


@needs_device
@pytest.mark.parametrize("exchange", ["local", "auto"])
def test_each_model_of_a_batch_equals_its_own_launch_and_the_reference(exchange, rrefam, seqs,
                                                                        reference):
    # on the default device; the sub-group path's programs optimizer-free (the same bits:
    # test_unoptimized_batch_programs_give_the_same_bits): Intel's runtime builds a batch
    # program there in 0.1 s so, 2-11 s with the optimizer, and its local-memory path's
    # optimized programs in 0.2-0.8 s, which then run 10-20x faster
    runner = ProfileWarpOpenCL(_default_device(), exchange,
                               unoptimized_on_cpu=exchange != "local")
    runner._clock = StageClock()
    order, L, n = launch_order(seqs), seqs.lengths, len(seqs)
    by_m = sorted(range(len(rrefam)), key=lambda i: rrefam[i].M)
    # M 138 with 83 (another group size and Q than the small one alone), then 4 and 8 mixed
    batches = [[by_m[-1], by_m[0]], [by_m[0], by_m[4], by_m[-1], by_m[7]], by_m[:8]]
    if exchange == "local":                 # every model, on the quick-building path: two more
        # batches whose programs the first two built (the same count, group size and Q)
        batches += [by_m[8:], [by_m[2], by_m[3], by_m[5], by_m[-1]]]

        def program(b, kind):
            models = [rrefam[i] for i in b]
            Q = warp.batch_profile(models, kind, runner.variant)[0]
            return warp.batch_defines(models, kind, Q, runner.variant, runner.block)
        assert all(program(batches[k + 3], kind) == program(batches[k], kind)
                   for k in (0, 1) for kind in ("ssv", "msv"))
    alone = {}
    for i in sorted({i for b in batches for i in b}):
        m = rrefam[i]
        alone[i] = (runner.ssv_xe(m, seqs, order), runner.msv_xj(m, seqs, order, _tjbm(m, L)))
        ref_xe, ref_msv = reference(i)
        assert np.array_equal(alone[i][0], ref_xe), i
        xj = alone[i][1]
        msv = pf.msv_from_xj(m, np.maximum(xj, 0), xj < 0, L)
        assert np.array_equal(msv, ref_msv, equal_nan=True), i
    for b in batches:
        models = [rrefam[i] for i in b]
        assert len({m.M for m in models}) > 1                 # different M in each batch
        xe = runner.ssv_xe(models, seqs, order).reshape(len(b), n)
        tjbm = np.concatenate([_tjbm(m, L) for m in models])
        xj = runner.msv_xj(models, seqs, order, tjbm).reshape(len(b), n)
        for k, i in enumerate(b):
            assert np.array_equal(xe[k], alone[i][0]), (b, i)
            assert np.array_equal(xj[k], alone[i][1]), (b, i)
    assert all((alone[i][1] >= 0).any() for i in alone)          # not all overflows
    assert any((alone[i][1] < 0).any() for i in alone)           # and some: the overflow path


@needs_device
def test_unoptimized_batch_programs_give_the_same_bits(rrefam, seqs):
    """A batch of the two shortest models, SSV and MSV, on every device: the programs built
    with OPT_DISABLE on a CPU (the other tests' setting) give the optimized programs' integers;
    a GPU builds the optimized program either way."""
    from hmmbench.apis.opencl import OPT_DISABLE
    cl = opencl_api.cl_module()
    order, L = launch_order(seqs)[::3], seqs.lengths  # a third of them, the longest included
    assert L[order[0]] == L.max()
    models = sorted(rrefam, key=lambda m: m.M)[:2]
    tjbm = np.concatenate([_tjbm(m, L) for m in models])
    for device in DEVICES:
        got = []
        for flag in (False, True):
            runner = ProfileWarpOpenCL(device, unoptimized_on_cpu=flag)
            runner._clock = StageClock()
            got.append((runner.ssv_xe(models, seqs, order),
                        runner.msv_xj(models, seqs, order, tjbm)))
            kit = runner.kit
            options = [prg.get_build_info(kit.device, cl.program_build_info.OPTIONS)
                       for (src, d, unopt), prg in kit._programs.items()
                       if src == "profile/warp.cl" and unopt == (flag and not kit.is_gpu)
                       and ("MODELS", 2) in d]
            assert len(options) >= 2, device            # the SSV and the MSV batch programs
            assert all((OPT_DISABLE in o) == (flag and not kit.is_gpu) for o in options), device
        (xe, xj), (xe_u, xj_u) = ([a.reshape(2, -1)[:, order] for a in g] for g in got)
        assert np.array_equal(xe, xe_u) and np.array_equal(xj, xj_u), device
        assert (xe > 0).any() and (xj > 0).any()                # scores, not zeros
    assert OpenCLProfile(warp_kernels=True, unoptimized_on_cpu=True).params[
        "unoptimized_on_cpu"] and "unoptimized_on_cpu" not in OpenCLProfile().params


@pytest.fixture
def warp_run(monkeypatch, tmp_path):
    """The runner with the reference and profile-opencl-warp only (optimizer-free programs on
    a CPU device, as in test_each_model_of_a_batch_equals_its_own_launch_and_the_reference)."""
    backend = OpenCLProfile(warp_kernels=True, unoptimized_on_cpu=True)
    if backend.unavailable_reason():
        pytest.skip(backend.unavailable_reason())
    use_backends(monkeypatch, tmp_path, NumpyProfile(), backend)

    def run(*args) -> tuple:
        out = tmp_path / "run.json"
        # no warm-up passes (up to 0.2 s a cell; tests/core/test_runner.py checks them)
        code = cli.main(["run", "--workload", "profile", "--repeat", "1", "--warmup-time", "0",
                         "--quiet", "--json", str(out), "-b", "profile-opencl-warp", *args])
        return code, (results.load(out) if out.exists() else None)
    return run


@pytest.fixture
def sweep_inputs(tmp_path):
    """A FASTA of the ``seqs`` fixture's proteome proteins (every 30th, the longest, the MSV
    overflows) and an HMM file of RREFam's five smallest models (M = 83 .. 87: one vector
    count, so a batch of three and the last of two build one kernel shape each)."""
    prot = pds.load_proteome()
    picked = [*range(0, len(prot), 30), *OVERFLOWS, LONGEST]
    letters = np.frombuffer(AMINO_SYMBOLS.encode(), np.uint8)
    fasta = tmp_path / "proteins.fa"
    fasta.write_text("".join(f">{prot.names[i]}\n{letters[prot.codes(i)].tobytes().decode()}\n"
                             for i in picked))
    path = next(p for p in pds.model_files() if p.endswith("RREFam.hmm"))
    hmms = sorted(pds.read_hmms(path), key=lambda h: h.M)[:5]
    models = tmp_path / "small.hmm"
    with open(models, "wb") as fh:
        for hmm in hmms:
            hmm.write(fh)
    return str(fasta), str(models)


def test_a_batched_sweep_through_the_runner(warp_run, monkeypatch, sweep_inputs):
    # msv cells checked on a sample of (model, sequence) results across the batch's models
    monkeypatch.setitem(pjob.REFERENCE_CHECK_CELLS, "msv", 1_000_000)
    fasta, hmm_file = sweep_inputs
    code, doc = warp_run("-d", fasta, "--model", hmm_file, "--batch-models", "3")
    assert code == 0
    runs = doc["runs"]
    assert [(r["model"], r["kind"]) for r in runs] == [
        (f"small[{a}]", k) for a in ("1-3", "4-5") for k in ("ssv", "msv")]
    assert all(r["status"] == "ok" for r in runs), [r["reason"] for r in runs]
    prot = pds.load_fasta(fasta)
    residues = prot.n_residues
    models = [s.load()[0] for s in pds.resolve_models(hmm_file)]
    lengths = sorted(m.M for m in models)
    for r in runs:
        info = r["info"]
        assert info["batch_lengths"] == sorted(info["batch_lengths"])
        assert len(info["batch_models"]) == len(info["batch_lengths"]) and info["batch_size"] == 3
        assert r["cells"] == sum(info["batch_lengths"]) * residues
        assert r["pairs"] == len(info["batch_models"]) * len(prot)
        assert r["sampled"] or r["n_checked"] == r["pairs"]
        assert r["model_length"] == max(info["batch_lengths"])
    assert [m for r in runs[::2] for m in r["info"]["batch_lengths"]] == lengths
    assert [r["sampled"] for r in runs] == [False, True] * 2
    # the msv cells' recomputes ran through the union launch: some model needs them (and
    # some model's full MSV overflows)
    ssv = [pf.ssv_filter(m, prot) for m in models]
    assert any(np.isnan(x).any() for x in ssv)
    assert any(np.isinf(pf.msv_filter(m, prot, x)).any() for m, x in zip(models, ssv))
    rows = report.sweeps(runs)
    assert [(s["kind"], s["models"], s["per_cell"]) for s in rows] == [("ssv", 5, 3),
                                                                       ("msv", 5, 3)]
    ssv = [r for r in runs if r["kind"] == "ssv"]
    assert rows[0]["cells"] == sum(lengths) * residues
    assert rows[0]["gcups_total"] == pytest.approx(
        rows[0]["cells"] / sum(r["timing_s"]["total"] for r in ssv) / 1e9)
    assert "| 5 | 3 |" in report.markdown(doc)


@pytest.mark.parametrize("args, says", [
    (["--batch-models", "0"], "--batch-models: expected a positive integer, got '0'"),
    (["--batch-models", "two"], "--batch-models: expected a positive integer, got 'two'"),
    (["--batch-models", "2", "--kind", "ssv,vf"], "kind vf runs one model per launch"),
    (["--batch-models", "2", "--kind", "pipeline"], "kind pipeline runs one model per launch"),
])
def test_batch_option_errors(args, says, tmp_path, capsys):
    out = tmp_path / "x.json"
    code = cli.main(["run", "--workload", "profile", "-d", "proteins-2e4", "--model", "RREFam",
                     "-b", "profile-numpy", "--quiet", "--json", str(out), *args])
    err = capsys.readouterr().err.strip()
    assert code == 2 and not out.exists()
    assert err.startswith("hmmbench: error: ") and says in err and "\n" not in err


def test_batch_option_belongs_to_the_profile_workload(tmp_path, capsys):
    code = cli.main(["run", "-d", "ren2018-1", "--batch-models", "4", "--quiet",
                     "--json", str(tmp_path / "x.json")])
    assert code == 2 and "--batch-models belongs to the profile workload" in \
        capsys.readouterr().err


def test_batched_cells_group_by_length_and_keep_other_kinds_alone():
    specs = pds.resolve_models("RREFam")
    db = pds.resolve_database("proteins-2e4")
    cells = profile_cells([db], specs + pds.resolve_models("PF02826"), ["ssv", "vf"], 4)
    # the single-model cells are the same cells as without batching (reference cache keys)
    plain = profile_cells([db], specs, ["vf"])
    assert [c.sha256 for c in plain] == [c.sha256 for c in cells[:10]]
    names = [(c.axes["model"], c.axes["kind"]) for c in cells]
    assert names[:11] == [(s.name, "vf") for s in specs] + [("PF02826", "vf")]
    assert names[11:] == [("RREFam[1-4]", "ssv"), ("RREFam[5-8]", "ssv"), ("batch[9-11]", "ssv")]
    last = cells[-1].load()
    assert isinstance(last, ProfileBatch) and last.size == 4
    assert [m.M for m in last.models] == sorted(s.M for s in specs)[8:] + [178]
    assert last.cells == sum(m.M for m in last.models) * last.seqs.n_residues
    assert len({c.sha256 for c in cells}) == len(cells)
    assert pb.group_models(specs, 3)[-1][0].M == max(s.M for s in specs)
    with pytest.raises(UserError, match="cannot be sharded"):
        workload.WORKLOAD.shard_costs(last)


def test_a_batch_subset_and_the_reference_model_by_model(rrefam):
    prot = pds.load_proteome().subset(range(0, 2100, 50))                # 42 sequences
    parts = [ProfileSearch(m, prot, "ssv") for m in rrefam[:3]]
    batch = ProfileBatch(parts, ("a", "b", "c"))
    ref = NumpyProfile()
    ex = ref.run(batch)
    alone = [ref.run(p).log10 for p in parts]
    assert np.array_equal(ex.log10, np.concatenate(alone), equal_nan=True)
    assert ex.info["batch_models"] == ["a", "b", "c"] and ex.info["batch_launches"] == "per model"
    idx = np.array([0, 5, 41, 42, 100, 125])                 # models 0, 0, 0, 1, 2, 2
    sub = batch.subset(idx)
    assert [p.n_items for p in sub.parts] == [3, 1, 2] and sub.size == 3
    want = np.concatenate(alone)[idx]
    assert np.array_equal(ref.run(sub).log10, want, equal_nan=True)
    with pytest.raises(ValueError, match="model order"):
        batch.subset([50, 3])
    assert "runs one model per launch" in OpenCLProfile().refuse_reason(batch)
    assert NumpyProfile().refuse_reason(batch) is None


def _rec(model, kind, cells, total, size=None, n_models=1, backend="b"):
    info = {"batch_models": [model] * n_models, "batch_size": size} if size else {}
    return {"dataset": "db", "backend": backend, "kind": kind, "model": model, "status": "ok",
            "cells": cells, "timing_s": {"total": total, "kernel": total / 2}, "info": info}


def test_sweep_table_sums_batched_cells_apart_from_single_ones():
    runs = [_rec("m1", "ssv", 100, 1.0), _rec("m2", "ssv", 200, 1.0),
            _rec("X[1-4]", "ssv", 1000, 2.0, 4, 4), _rec("X[5-6]", "ssv", 500, 1.0, 4, 2),
            _rec("X[7]", "ssv", 300, 1.0, 4, 1), _rec("Y[1-2]", "msv", 90, 1.0, 2, 2)]
    rows = {(s["kind"], s["per_cell"]): s for s in report.sweeps(runs)}
    assert set(rows) == {("ssv", 1), ("ssv", 4), ("msv", 2)}
    assert (rows["ssv", 1]["models"], rows["ssv", 1]["cells"]) == (2, 300)
    b = rows["ssv", 4]
    assert (b["models"], b["cells"], b["total_s"]) == (7, 1800, 4.0)
    assert b["gcups_total"] == pytest.approx(1800 / 4.0 / 1e9)
    assert b["gcups_kernel"] == pytest.approx(1800 / 2.0 / 1e9)
    assert rows["msv", 2]["models"] == 2              # one cell of two models is a sweep
