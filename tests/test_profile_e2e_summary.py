"""scripts/profile_e2e_summary.py: each file's first search pays that file's own database load."""
import importlib.util
import json
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "profile_e2e_summary.py"


def _module():
    spec = importlib.util.spec_from_file_location("profile_e2e_summary", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


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
    rows = {r["model"]: r for r in _module().pipeline_rows(_module().load_runs([str(a), str(b)]))}
    assert abs(rows["A"]["first_s"] - 0.050) < 1e-12 and abs(rows["B"]["first_s"] - 0.075) < 1e-12
    assert abs(rows["A"]["x_first"] - 20.0) < 1e-9 and rows["B"]["x_first"] is None
