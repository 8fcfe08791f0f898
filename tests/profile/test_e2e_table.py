"""hmmbench.profile.e2e_table: each file's first search pays that file's own database load."""
import json

from hmmbench.profile import e2e_table


def _run(model, kind, total, load=None, backend="profile-cuda-warp"):
    info = {"pass_counts": {"msv": 1}}
    if load is not None:
        info["db_load_s"] = {"prep": load / 2, "h2d": load / 2}
    return {"dataset": "db", "model": model, "model_length": 10, "backend": backend,
            "status": "ok", "kind": kind, "timing_s": {"total": total}, "info": info}


def test_first_search_takes_the_load_of_its_own_run(tmp_path):
    a, b = tmp_path / "e2e.json", tmp_path / "sweep.json"
    a.write_text(json.dumps({"runs": [_run("A", "ssv", 0.01, load=0.030),
                                      _run("A", "pipeline", 0.020),
                                      _run("A", "pipeline", 1.0, backend="profile-hmmsearch")]}))
    b.write_text(json.dumps({"runs": [_run("B", "ssv", 0.01, load=0.050),
                                      _run("B", "pipeline", 0.025)]}))
    runs = e2e_table.load_runs([str(a), str(b)])
    rows = {r["model"]: r for r in e2e_table.pipeline_rows(runs)}
    assert abs(rows["A"]["first_s"] - 0.050) < 1e-12 and abs(rows["B"]["first_s"] - 0.075) < 1e-12
    assert abs(rows["A"]["x_first"] - 20.0) < 1e-9 and rows["B"]["x_first"] is None
    table = e2e_table.markdown(runs)
    assert "| db | A | 10 | profile-cuda-warp | ok | 0.050 s | 0.020 s | 1.000 s | 20.0 | 50.0 |" \
        in table


def test_a_many_model_search_sums_its_models_with_one_load(tmp_path):
    """The whole search: the file's database load once plus every model's pipeline total,
    against the peer's sum over the same models; the pass counts compared model by model."""
    runs = [_run("A", "pipeline", 0.020, load=0.010), _run("B", "pipeline", 0.030),
            _run("A", "pipeline", 1.0, backend="profile-hmmsearch"),
            _run("B", "pipeline", 2.0, backend="profile-hmmsearch")]
    runs[3]["info"]["pass_counts"] = {"msv": 2}             # B's counts differ
    for r in runs:
        r["cells"] = 1e9
    path = tmp_path / "many.json"
    path.write_text(json.dumps({"runs": runs}))
    (sweep,) = e2e_table.sweep_rows(e2e_table.load_runs([str(path)]))
    assert sweep["models"] == 2 and abs(sweep["first_s"] - 0.060) < 1e-12
    assert abs(sweep["x_first"] - 50.0) < 1e-9 and abs(sweep["gcups_first"] - 2e9 / 0.06 / 1e9) < 1e-6
    assert (sweep["same_counts"], sweep["compared"]) == (1, 2)
    assert "| 2 | 10..10 | 0.010 s | 0.06 s | 3.0 s | 50.0 |" in e2e_table.markdown(
        e2e_table.load_runs([str(path)]))
