"""The database kept on the device, through the OpenCL CPU backend (profile-opencl-task): a run
uploads each database once and every model and kind reuses it (uploads counted), the one-off load is reported apart
from the cells' stages, and --model takes a whole HMM file (a sweep, summed in the report)."""
from __future__ import annotations

import time

import numpy as np
import pytest

from hmmbench import cli, report, results

pytest.importorskip("pyhmmer", reason="pyhmmer not installed (pip install pyhmmer)")
pytest.importorskip("pyopencl", reason="pyopencl not installed")

from hmmbench.profile.reference import NumpyProfile  # noqa: E402
from hmmbench.profile import datasets as pds  # noqa: E402
from hmmbench.profile.device.opencl import OpenCLProfile  # noqa: E402
from helpers.profile_models import use_backends  # noqa: E402

DB = "proteins-2e4"          # 54 proteins, 20k residues


@pytest.fixture
def opencl(monkeypatch, tmp_path):
    """One profile-opencl-task instance the run uses (its upload counter is read after)."""
    backend = OpenCLProfile()
    if backend.unavailable_reason():
        pytest.skip(backend.unavailable_reason())
    use_backends(monkeypatch, tmp_path, NumpyProfile(), backend)
    return backend


def run(tmp_path, *args) -> tuple:
    out = tmp_path / "run.json"
    # no untimed warm-up passes (0.2 s of spinning per cell): the checked pass and two timed
    code = cli.main(["run", "--workload", "profile", "--repeat", "2", "--warmup-time", "0",
                     "--quiet", "--json", str(out), *args])
    return code, (results.load(out) if out.exists() else None)


def test_database_uploaded_once_across_models_and_kinds(opencl, tmp_path):
    code, doc = run(tmp_path, "-d", DB, "--model", "PF02826", "--model", "LuxC",
                    "--kind", "ssv,msv,vf", "-b", "profile-opencl-task")
    assert code == 0
    runs = [r for r in doc["runs"] if r["backend"] == "profile-opencl-task"]
    assert len(runs) == 6 and all(r["status"] == "ok" for r in runs)
    assert opencl.runner().resident.loads == 1             # 6 cells x 3 passes, one upload
    loaded = [r for r in runs if "db_load_s" in r["info"]]
    assert len(loaded) == 1 and loaded[0] is runs[0]
    assert set(loaded[0]["info"]["db_load_s"]) == {"prep", "h2d"}
    assert loaded[0]["info"]["db_load_s"]["h2d"] > 0
    seqs = pds.resolve_database(DB).load()
    # residues, offsets and the layout: launch order, classes (int32) and the length model's
    # loop and move (float32) per sequence
    want = seqs.residues.nbytes + seqs.offsets.nbytes + 16 * len(seqs)
    assert loaded[0]["info"]["db_load_bytes"] == want
    notes = [text for _, _, text in report.notes(runs)]
    assert any("db load" in t and "first search" in t and "GB/s" in t for t in notes)


def test_a_second_database_is_a_second_upload(opencl, tmp_path):
    code, doc = run(tmp_path, "-d", DB, "-d", "proteins-1e4:3", "--model", "PF02826",
                    "--kind", "ssv,vf", "-b", "profile-opencl-task")
    assert code == 0 and all(r["status"] == "ok" for r in doc["runs"])
    assert opencl.runner().resident.loads == 2
    assert [r["dataset"] for r in doc["runs"] if "db_load_s" in r["info"]] == \
        [DB, "proteins-1e4:3"]


def test_model_file_sweep_on_the_proteome(opencl, proteome, tmp_path):
    """Every model of a HMM file against every 20th protein of the proteome (a FASTA file of
    105 proteins), one upload for the whole sweep."""
    path = next(p for p in pds.model_files() if p.endswith("RREFam.hmm"))
    fasta = tmp_path / "proteome-every-20th.faa"
    with open(fasta, "wb") as fh:
        for seq in proteome.to_pyhmmer(range(0, len(proteome), 20)):
            seq.textize().write(fh)
    code, doc = run(tmp_path, "-d", str(fasta), "--model", path, "--kind", "ssv",
                    "-b", "profile-opencl-task")
    assert code == 0
    runs = doc["runs"]
    assert len({r["model"] for r in runs}) == 10 and all(r["status"] == "ok" for r in runs)
    assert opencl.runner().resident.loads == 1
    (sweep,) = report.sweeps(runs)
    assert (sweep["backend"], sweep["kind"], sweep["models"]) == ("profile-opencl-task", "ssv", 10)
    assert sweep["cells"] == sum(r["cells"] for r in runs)
    assert sweep["gcups_total"] == pytest.approx(
        sweep["cells"] / sum(r["timing_s"]["total"] for r in runs) / 1e9)
    assert sweep["db_load_s"] > 0 and sweep["gcups_first"] < sweep["gcups_total"]
    assert "model sweeps" in report.markdown(doc)


def test_shipped_file_stem_names_every_model_in_it():
    specs = pds.resolve_models("RREFam")
    assert len(specs) == 10 and all(s.name.startswith("RREFam/") for s in specs)
    assert [s.name for s in pds.resolve_models("LuxC")] == ["LuxC"]


@pytest.mark.parametrize("content,message", [("hello\n", "not a readable HMM file"),
                                             ("", "not a readable HMM file")])
def test_bad_model_file_is_one_line_exit_2(tmp_path, capsys, content, message):
    bad = tmp_path / "bad.hmm"
    bad.write_text(content)
    code = cli.main(["run", "--workload", "profile", "-d", DB, "--model", str(bad),
                     "-b", "profile-numpy", "--json", str(tmp_path / "x.json")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and not (tmp_path / "x.json").exists()
    assert len(err) == 1 and err[0].startswith("hmmbench: error: ") and message in err[0]


def test_a_load_goes_to_info_or_to_the_stages():
    from types import SimpleNamespace
    from hmmbench.profile.device.resident import load_info
    load = {"prep": 0.5, "h2d": 2.0}
    timing = {"prep": 1.0, "h2d": 0.0}
    assert load_info(SimpleNamespace(database="sha"), load, timing) == {"db_load_s": load}
    assert timing == {"prep": 1.0, "h2d": 0.0}              # a resident load: not the cell's
    assert load_info(SimpleNamespace(database=None), load, timing) == {}
    assert timing == {"prep": 1.5, "h2d": 2.0}              # a one-off set pays it in its stages
    assert load_info(SimpleNamespace(database="sha"), None, timing) == {}


def edge_sequences(model):
    """Every 30th proteome protein plus length 1, degenerate residues (codes 21..27), a long
    random one and the model's consensus three times over (SSV overflows where it cannot
    decide: NaN; the full MSV's overflow: inf), as one set."""
    from hmmbench.profile.model import SequenceSet
    rng = np.random.default_rng(11)
    prot = pds.load_proteome()
    consensus = np.argmax(model.match_scores[:20, 1:], axis=0).astype(np.uint8)
    parts = [prot.codes(i) for i in range(0, len(prot), 30)]
    parts += [np.array([3], np.uint8), np.array([27], np.uint8),
              rng.integers(21, 28, 60).astype(np.uint8),
              rng.integers(0, 20, 3000).astype(np.uint8), np.tile(consensus, 3)]
    offs = np.zeros(len(parts) + 1, np.int64)
    np.cumsum([p.size for p in parts], out=offs[1:])
    return SequenceSet([f"s{i}" for i in range(len(parts))], np.concatenate(parts), offs)


@pytest.mark.parametrize("spec", pds.shipped_models() if pds.pyhmmer_data_dir() else [],
                         ids=lambda s: s.name)
def test_scores_finished_on_the_device_are_the_references(opencl, spec):
    """The filter scores finished on the device (kernels_common/profile/finish.h) identical to
    the reference's, NaN (SSV cannot decide) and inf (overflow) included."""
    from cpu_reference.profile import filters as pf
    from hmmbench.profile.job import ProfileSearch
    model, hmm = spec.load()
    seqs = edge_sequences(model)
    ssv = pf.ssv_filter(model, seqs)
    want = {"ssv": ssv, "msv": pf.msv_filter(model, seqs, ssv),
            "vf": pf.viterbi_filter(model, seqs)}
    for kind in ("ssv", "msv", "vf"):
        got = opencl.run(ProfileSearch(model, seqs, kind, hmm, database="edge")).log10
        ref = want[kind].astype(np.float64)
        assert ((got == ref) | (np.isnan(got) & np.isnan(ref))).all(), kind
    # the consensus overflows: SSV inf (a sure overflow) or NaN (recompute), the others inf
    assert not np.isfinite(ssv[-1]) and np.isinf(want["msv"][-1]) and np.isinf(want["vf"][-1])


class AsyncDriver:
    """A stand-in for pycuda.driver whose host-to-device copies run late (when an event after
    them, or the stream, is synchronized), reading their source only then: a staging buffer
    overwritten too early would corrupt what arrives."""

    SPAN = 1 << 32

    def __init__(self):
        self.memory, self.pending, self.pinned = {}, [], 0

    def mem_alloc(self, nbytes):
        base = (len(self.memory) + 1) * self.SPAN
        self.memory[base] = bytearray(nbytes)
        return base

    def pagelocked_empty(self, n, dtype):
        self.pinned += 1
        return np.zeros(n, dtype)

    def memcpy_htod_async(self, dst, src, stream):
        self.pending.append((dst, src))

    def _run(self, upto):
        for dst, src in self.pending[:upto]:
            base = dst - dst % self.SPAN
            self.memory[base][dst - base:dst - base + src.nbytes] = src.tobytes()
        del self.pending[:upto]

    def Event(self):  # noqa: N802 - pycuda's name
        drv = self

        class _Event:
            def record(self, stream=None):
                self.mark = len(drv.pending)

            def synchronize(self):
                drv._run(self.mark)
                self.mark = 0
        return _Event()

    def Stream(self):  # noqa: N802
        drv = self

        class _Stream:
            def synchronize(self):
                drv._run(len(drv.pending))
        return _Stream()


def test_staged_upload_delivers_every_byte(monkeypatch):
    """The resident database's CUDA upload through two page-locked buffers (no GPU: a driver
    stand-in with late copies): every array arrives whole, chunk after chunk, and the staging
    buffers are allocated once for every later upload."""
    from hmmbench.apis import cuda as glue
    from hmmbench.profile.device import cuda_resident as pcuda
    drv = AsyncDriver()
    monkeypatch.setattr(glue, "driver", lambda: drv)
    monkeypatch.setattr(pcuda, "UPLOAD_CHUNK", 1000)
    monkeypatch.setattr(pcuda, "_STAGING", [])
    rng = np.random.default_rng(2)
    arrays = {"residues": rng.integers(0, 29, 10_500).astype(np.uint8),
              "offsets": np.cumsum(rng.integers(1, 9, 700)).astype(np.int64),
              "order": rng.permutation(700).astype(np.int32), "empty": np.zeros(0, np.int32)}
    for _ in range(2):
        bufs, seconds, unpin = pcuda.upload_database(arrays)
        assert set(seconds) == {"h2d"} and not drv.pending
        unpin()
        for name, arr in arrays.items():
            got = bytes(drv.memory[bufs[name]][:arr.nbytes])
            assert got == arr.tobytes(), name
    assert drv.pinned == 2


def test_launch_order_and_length_classes_without_a_full_sort():
    from hmmbench.profile.device.host import launch_order
    from hmmbench.profile.model import SequenceSet
    from hmmbench.profile.pipeline import length_classes
    rng = np.random.default_rng(0)
    for n, top in ((1000, 50), (1, 5), (500, 70_000)):        # 70,000: past 16-bit keys
        L = rng.integers(0, top, n)
        offs = np.zeros(n + 1, np.int64)
        np.cumsum(L, out=offs[1:])
        seqs = SequenceSet([str(i) for i in range(n)], np.zeros(offs[-1], np.uint8), offs)
        order = launch_order(seqs)
        assert (order == np.argsort(-L, kind="stable")).all()
        sub = rng.choice(n, n // 2, replace=False)
        assert (launch_order(seqs, sub) == sub[np.argsort(-L[sub], kind="stable")]).all()
        (u1, c1), (u2, c2) = length_classes(L), length_classes(L, order)
        assert (u1 == u2).all() and (c1 == c2).all()


def test_staged_upload_filled_by_several_threads(monkeypatch):
    """The same upload with each staging buffer filled in slices by several host threads."""
    from hmmbench.apis import cuda as glue
    from hmmbench.profile.device import cuda_resident as pcuda
    drv = AsyncDriver()
    monkeypatch.setattr(glue, "driver", lambda: drv)
    monkeypatch.setattr(pcuda, "UPLOAD_CHUNK", 3 << 20)
    monkeypatch.setattr(pcuda, "UPLOAD_THREADS", 3)
    monkeypatch.setattr(pcuda, "_STAGING", [])
    rng = np.random.default_rng(3)
    arrays = {"residues": rng.integers(0, 29, 10_000_001).astype(np.uint8),
              "offsets": np.cumsum(rng.integers(1, 9, 300_000)).astype(np.int64)}
    bufs, *_ = pcuda.upload_database(arrays)
    for name, arr in arrays.items():
        assert bytes(drv.memory[bufs[name]][:arr.nbytes]) == arr.tobytes(), name


class HostPins:
    """A stand-in for the driver's page-locking (cuMemHostRegister): records the locked ranges,
    refuses a range overlapping a locked one (as the driver does) and, once ``refuse_after``
    ranges are locked, every further one."""

    def __init__(self, refuse_after=None):
        self.locked, self.refuse_after, self.unlocked = {}, refuse_after, []

    def register(self, ptr, nbytes):
        if self.refuse_after is not None and len(self.locked) >= self.refuse_after:
            return False
        if any(p < ptr + nbytes and ptr < p + n for p, n in self.locked.items()):
            return False
        self.locked[ptr] = nbytes
        return True

    def unregister(self, ptr):
        self.unlocked.append(ptr)
        return self.locked.pop(ptr, None) is not None


@pytest.mark.parametrize("refuse_after", [None, 2, 0])
def test_large_arrays_pinned_in_place_by_page_aligned_chunks(monkeypatch, refuse_after):
    """Arrays of PIN_MIN bytes or more are page-locked in place chunk by chunk (chunk bounds on
    page bounds, together the whole array, none locked twice), each chunk's copy enqueued from
    the array itself; what the driver refuses to lock goes through the staging buffers; every
    byte arrives; the locked chunks stay locked while the database is resident and are unlocked
    once, when it is dropped."""
    import mmap
    from hmmbench.apis import cuda as glue
    from hmmbench.profile.device import cuda_resident as pcuda
    from hmmbench.profile.model import SequenceSet
    from hmmbench.profile.device.resident import ResidentCache
    drv, pins = AsyncDriver(), HostPins(refuse_after)
    monkeypatch.setattr(glue, "driver", lambda: drv)
    monkeypatch.setattr(glue, "host_register", pins.register)
    monkeypatch.setattr(glue, "host_unregister", pins.unregister)
    monkeypatch.setattr(pcuda, "PIN_CHUNK", 4 * mmap.PAGESIZE)
    monkeypatch.setattr(pcuda, "PIN_MIN", 6 * mmap.PAGESIZE)
    monkeypatch.setattr(pcuda, "UPLOAD_CHUNK", 5000)
    monkeypatch.setattr(pcuda, "_STAGING", [])
    rng = np.random.default_rng(4)
    n = 15 * mmap.PAGESIZE + 123
    L = np.full(n // 100, 100)
    L[-1] += n - L.sum()
    offs = np.zeros(L.size + 1, np.int64)
    np.cumsum(L, out=offs[1:])
    residues = rng.integers(0, 29, 1 + n).astype(np.uint8)[1:]    # not on a page bound
    seqs = SequenceSet([str(i) for i in range(L.size)], residues, offs)
    cache = ResidentCache(pcuda.upload_database)
    db, _ = cache.get_seqs(seqs, "db")
    assert len(pins.unlocked) == (refuse_after != 0)    # the process setup's first locking
    pins.unlocked.clear()
    assert bytes(drv.memory[db.buffers["residues"]][:n]) == residues.tobytes()
    assert bytes(drv.memory[db.buffers["offsets"]][:offs.nbytes]) == offs.tobytes()
    ranges = sorted(pins.locked.items())
    base, page = residues.ctypes.data, mmap.PAGESIZE
    assert all(p + k <= q for (p, k), (q, _) in zip(ranges, ranges[1:]))     # disjoint
    assert all(p == base or p % page == 0 for p, _ in ranges)
    assert all(base <= p and p + k <= base + n for p, k in ranges)
    if refuse_after is None:                   # the whole array, chunk after chunk
        assert ranges[0][0] == base and len(ranges) == -(-n // pcuda.PIN_CHUNK)
        assert all(p + k == q for (p, k), (q, _) in zip(ranges, ranges[1:]))
        assert ranges[-1][0] + ranges[-1][1] == base + n
    else:                                      # the first chunks, then staging
        assert len(ranges) == refuse_after
        assert not ranges or (ranges[0][0] == base and all(
            p + k == q for (p, k), (q, _) in zip(ranges, ranges[1:])))
    was_locked = set(pins.locked)
    assert pins.unlocked == []                  # resident: still locked
    cache.clear()
    del db
    assert sorted(pins.unlocked) == sorted(was_locked) and pins.locked == {}


def test_device_order_replaces_the_host_sort(monkeypatch):
    """With a device order the load uploads no host order, counts the device's sort as layout
    ("prep"), downloads the order only when the host asks (once), and leaves databases with
    more distinct lengths than the device tables hold to the host sort."""
    from hmmbench.profile.device import host
    from hmmbench.profile.model import SequenceSet
    from hmmbench.profile.device.resident import ResidentCache
    rng = np.random.default_rng(2)
    L = rng.integers(1, 60, 5000)
    offs = np.zeros(L.size + 1, np.int64)
    np.cumsum(L, out=offs[1:])
    seqs = SequenceSet([str(i) for i in range(L.size)], np.zeros(offs[-1], np.uint8), offs)
    fetched, prepared = [], []

    class DeviceOrder:
        max_classes = 59

        def prepare(self):
            prepared.append(1)

        def __call__(self, buffers, n, n_classes):
            assert "order" not in buffers and n == L.size and n_classes == len(np.unique(L))
            buffers["order"] = "device order"
            time.sleep(0.02)

            def fetch():
                fetched.append(1)
                return host.launch_order(seqs)
            return fetch
    sorts = []
    monkeypatch.setattr("hmmbench.profile.device.resident.launch_order",
                        lambda s: sorts.append(1) or host.launch_order(s))
    upload = lambda arrays, later: ({**arrays, **later()}, {"h2d": 0.0})  # noqa: E731
    cache = ResidentCache(upload, None, DeviceOrder())
    db, load = cache.get_seqs(seqs, "db")
    assert sorts == [] and db.order is None and load["prep"] >= 0.02 and prepared == [1]
    assert db.buffers["order"] == "device order"
    assert not db.is_whole_order(None) and fetched == []
    want = host.launch_order(seqs)
    assert np.array_equal(db.host_order(), want) and db.is_whole_order(db.host_order())
    assert fetched == [1]
    few = DeviceOrder()
    few.max_classes = len(np.unique(L)) - 1
    small = ResidentCache(upload, None, few)
    db2, _ = small.get_seqs(seqs, "db")
    assert sorts == [1] and np.array_equal(db2.order, want)
