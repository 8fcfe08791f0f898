"""The ``hmmbench`` command.

    hmmbench list
    hmmbench run [--dataset D]... [--backend B]... [--chunking original|merged[:N]] [--repeat N]
                 [--max-time S] [--json PATH] [--workload pairhmm]
    hmmbench run --workload profile [-d DATABASE]... [--model M]... [--kind ssv,msv,vf,...]
                 [--backend B]...
    hmmbench score --dataset D --backend B --output PATH
    hmmbench report RESULTS.json... [--plot PNG]
    hmmbench compare BASELINE.json CANDIDATE.json [--max-slowdown PCT]
    hmmbench datasets list [--workload profile] | fetch NAME

Every user mistake (bad input file, unknown name, bad option value) ends as one line on stderr,
``hmmbench: error: <message>``, exit status 2, and no output file.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Optional

from . import __version__
from .errors import UserError


# --- helpers --------------------------------------------------------------------------------

def _console(stderr: bool = False):
    """A rich console; logs and pipes get a wide one so that report tables are not truncated."""
    from rich.console import Console
    stream = sys.stderr if stderr else sys.stdout
    tty = getattr(stream, "isatty", lambda: False)()
    return Console(file=stream, width=None if tty else 200)


def _datasets_module():
    from . import datasets
    return datasets


def _resolve_datasets(names: list) -> list:
    ds_mod = _datasets_module()
    if names:
        return [ds_mod.resolve(n) for n in names]
    return [ds_mod.resolve(d) if isinstance(d, str) else d for d in ds_mod.default_run_set()]


def _dataset_status(ds) -> str:
    if ds.kind in ("synthetic", "chunks") and ds.path is None:
        return "generated"
    if ds.path and Path(ds.path).exists():
        return "found"
    return "missing"


def _catalog_table(catalog):
    from rich.markup import escape
    from rich.table import Table
    from .report import fmt_count
    t = Table(title="datasets", title_justify="left")
    for col in ("name", "kind", "pairs", "cells", "where", "description"):
        t.add_column(col, justify="right" if col in ("pairs", "cells") else "left",
                     no_wrap=col != "description")
    for ds in catalog:
        status = _dataset_status(ds)
        style = {"found": "green", "missing": "yellow"}.get(status, "")
        where = f"[{style}]{status}[/{style}]" if style else status
        t.add_row(ds.name, ds.kind, fmt_count(ds.n_pairs), fmt_count(ds.n_cells), where,
                  escape(ds.description))
    return t


# --- commands -------------------------------------------------------------------------------

def cmd_list(args) -> int:
    from rich.markup import escape
    from rich.table import Table
    from .hostinfo import module_devices
    from .registry import discover, probe
    console = _console()
    t = Table(title=f"backends ({args.workload})", title_justify="left")
    for col in ("name", "api", "family", "precision", "available", "limits"):
        t.add_column(col, no_wrap=col != "available")
    for b in discover(args.workload):
        reason = probe(b).reason
        limits = ", ".join(f"{k}={v}" for k, v in vars(b.limits).items() if v is not None)
        t.add_row(b.name, b.api, b.family, b.precision,
                  "[green]yes[/green]" if reason is None else f"[yellow]no[/yellow]: {escape(reason)}",
                  limits or "-")
    console.print(t)
    for mod, devs in module_devices(args.workload):
        if isinstance(devs, str):
            console.print(f"[bold]{mod}[/bold] devices: [yellow]{escape(devs)}[/yellow]")
            continue
        if not devs:
            console.print(f"[bold]{mod}[/bold] devices: none")
            continue
        dt = Table(title=f"{mod} devices", title_justify="left")
        cols = list(dict.fromkeys(k for d in devs for k in d))
        for c in cols:
            dt.add_column(str(c))
        for d in devs:
            dt.add_row(*(escape(str(d.get(c, ""))) for c in cols))
        console.print(dt)
    _print_catalog(console, args.workload)
    return 0


def _print_catalog(console, workload: str) -> None:
    if workload == "profile":
        for table in _profile_catalog_tables():
            console.print(table)
    else:
        console.print(_catalog_table(_datasets_module().catalog()))


def _profile_catalog_tables() -> list:
    """The profile workload's sequence databases and models."""
    from rich.markup import escape
    from rich.table import Table
    from .profile import datasets as pds
    from .report import fmt_count
    dbs = Table(title="profile databases (-d)", title_justify="left")
    for col in ("name", "sequences", "residues", "description"):
        dbs.add_column(col, justify="right" if col in ("sequences", "residues") else "left",
                       no_wrap=col != "description")
    for ds in pds.catalog():
        dbs.add_row(ds.name, fmt_count(ds.n_pairs), fmt_count(ds.n_cells), escape(ds.description))
    dbs.add_row("proteins-<residues>[:seed]", "-", "any",
                "generated on demand, e.g. proteins-2e8 (Swiss-Prot-sized, ~8 s to generate) or "
                "proteins-2e4:7; lognormal lengths, background composition, deterministic")
    models = Table(title="profile models (--model)", title_justify="left")
    for col in ("name", "M", "description"):
        models.add_column(col, justify="right" if col == "M" else "left", no_wrap=col != "description")
    for spec in pds.shipped_models():
        models.add_row(spec.name, str(spec.M), escape(spec.description))
    models.add_row("random-M<size>[:seed]", "size", "pyhmmer HMM.sample, seeded (default seed "
                   "1): the model-size curve, e.g. random-M100 .. random-M2400; no E-value "
                   "calibration (the pipeline peers refuse it)")
    models.add_row("query-M<size>[:seed]", "size", "a calibrated single-sequence model (pyhmmer "
                   "Builder on a seeded background sequence, as phmmer)")
    return [dbs, models]


def _run_config(args):
    from .runner import RunConfig
    if args.repeat is not None and args.repeat < 1:
        raise UserError("--repeat must be at least 1")
    if args.max_time <= 0:
        raise UserError("--max-time must be positive")
    if args.sample_pairs is not None and args.sample_pairs < 1:
        raise UserError("--sample-pairs must be at least 1")
    profile = args.workload == "profile"
    sample = args.sample_pairs or (PROFILE_SAMPLE_SEQUENCES if profile else 2000)
    extra = {"reference": "profile-numpy", "workload": "profile"} if profile else {}
    return RunConfig(chunking=",".join(args.chunking), repeat=args.repeat, max_time=args.max_time,
                     tolerance=1e-4 if args.tolerance is None else args.tolerance,
                     tolerance_fixed=args.tolerance is not None, sample_pairs=sample,
                     use_cache=not args.no_cache, **extra)


#: most sequences a profile cross-check covers when the database is too big for the reference
PROFILE_SAMPLE_SEQUENCES = 5000


def _kinds(specs: list) -> list:
    """--kind values (repeatable, comma-separated) in order, checked."""
    from .errors import UnknownName
    from .profile.job import JOB_KINDS
    kinds = [k.strip() for spec in specs for k in spec.split(",") if k.strip()]
    for k in kinds:
        if k not in JOB_KINDS:
            raise UnknownName("score kind", k, JOB_KINDS)
    return list(dict.fromkeys(kinds))


def _profile_plan(args, backends: list) -> tuple:
    """(cells, backends_for, launches) of a profile run: databases x models x kinds."""
    from .profile import datasets as pds
    from .profile.job import PIPELINE
    try:
        import pyhmmer  # noqa: F401 - models, digitizing and the background come from it
    except ImportError:
        raise UserError("the profile workload needs pyhmmer (pip install 'hmmbench[profile]')") \
            from None
    dbs = [pds.resolve_database(n) for n in (args.dataset or pds.DEFAULT_DATABASES)]
    models = [pds.resolve_model(n) for n in (args.model or pds.DEFAULT_MODELS)]
    kinds = _kinds(args.kind) or list(DEFAULT_PROFILE_KINDS)
    # The whole-pipeline peers get a "pipeline" cell per database x model when selected.
    if PIPELINE not in kinds and not args.kind and any(
            PIPELINE in getattr(b, "kinds", ()) for b in backends):
        kinds.append(PIPELINE)
    cells = pds.profile_cells(dbs, models, kinds)
    first = cells[0] if cells else None

    def backends_for(cell) -> list:
        kind = cell.axes["kind"]
        out = []
        for b in backends:
            does = getattr(b, "kinds", None)
            if does is None or kind in does:
                out.append(b)
            elif cell is first and not set(does) & set(kinds):
                out.append(b)      # computes none of the kinds asked for: one row says why
        return out
    return cells, backends_for, pds.launches


DEFAULT_PROFILE_KINDS = ("ssv", "msv", "vf")


def cmd_run(args) -> int:
    from . import results
    from .hostinfo import enrich_devices
    from .registry import select
    from .report import make_progress, render
    from .runner import run_benchmark
    cfg = _run_config(args)
    backends = select(args.backend, args.workload)
    plan = {}
    if args.workload == "profile":
        datasets, plan["backends_for"], plan["launches_fn"] = _profile_plan(args, backends)
    else:
        if args.model or args.kind:
            raise UserError("--model and --kind belong to the profile workload "
                            "(--workload profile)")
        datasets = _resolve_datasets(args.dataset)
    to_stdout = args.json == "-"
    out_path = None if to_stdout else Path(args.json) if args.json else results.default_path()
    if out_path is not None and out_path.exists() and out_path.is_dir():
        raise UserError(f"{out_path}: is a directory")
    bench = run_benchmark(datasets, backends, cfg, progress=make_progress(sys.stderr), **plan)
    enrich_devices(bench.devices, args.workload)
    doc = results.make_document(bench, ["hmmbench"] + list(args.argv))
    if to_stdout:
        import json
        results.validate(doc, "<stdout>")
        sys.stdout.write(json.dumps(doc, indent=1, allow_nan=False) + "\n")
        render(doc, _console(stderr=True))
    else:
        results.write(doc, out_path)
        if not args.quiet:
            render(doc, _console())
        print(f"results: {out_path}", file=sys.stderr)
    return 0


def cmd_score(args) -> int:
    """Pair-HMM: one log10 per pair; profile: name, nats, bits per sequence (every workload of
    ``registry.WORKLOADS`` runs and scores; main() rejects other names)."""
    from .registry import probe, select
    backends = select([args.backend], args.workload)
    if len(backends) != 1:
        raise UserError(f"--backend '{args.backend}' matches {len(backends)} backends; "
                        "score needs exactly one")
    backend = backends[0]
    reason = probe(backend).reason
    if reason:
        raise UserError(f"backend '{backend.name}' is unavailable: {reason}")
    try:
        if args.workload == "profile":
            n = _score_profile(args, backend)
        else:
            n = _score_pairs(args, backend)
    finally:
        backend.close()
    print(f"{n} scores: {args.output}", file=sys.stderr)
    return 0


def _score_pairs(args, backend) -> int:
    """One log10 likelihood per pair, dataset order."""
    from .fileio import atomic_open
    ds = _resolve_datasets([args.dataset])[0]
    fmt = f"%.{args.digits}f\n"
    n = 0
    # Streamed chunk by chunk (lazy sets are larger than memory), renamed into place at the end.
    with atomic_open(args.output) as out:
        for chunk in ds.chunks():
            refusal = backend.refuse_reason(chunk)
            if refusal:
                raise UserError(f"backend '{backend.name}' refuses dataset '{ds.name}': {refusal}")
            values = backend.run(chunk).log10
            if len(values) != chunk.n_pairs:
                raise RuntimeError(f"backend returned {len(values)} values for "
                                   f"{chunk.n_pairs} pairs")
            out.writelines(fmt % v for v in values)
            n += len(values)
    return n


def _score_profile(args, backend) -> int:
    """One line per sequence of the database, database order: name, score in nats (HMMER's raw
    score of that kind, before the null model; inf = overflow, nan = HMMER's "no result"), bits
    against the null model. One model and one kind."""
    from cpu_reference.profile_generic import bits
    from .fileio import atomic_open
    from .profile import datasets as pds
    from .profile.job import PIPELINE, ProfileSearch
    if len(args.model) > 1:
        raise UserError("score writes one model's scores: give one --model")
    kinds = _kinds(args.kind)
    if len(kinds) != 1 or kinds[0] == PIPELINE:
        raise UserError("score needs exactly one --kind with per-sequence scores "
                        "(ssv, msv, vf, viterbi, forward, ...)")
    db = pds.resolve_database(args.dataset)
    model, hmm = pds.resolve_model(args.model[0] if args.model else pds.DEFAULT_MODELS[0]).load()
    seqs = db.load()
    job = ProfileSearch(model, seqs, kinds[0], hmm)
    refusal = backend.refuse_reason(job)
    if refusal:
        raise UserError(f"backend '{backend.name}' refuses {kinds[0]}: {refusal}")
    nats = backend.run(job).log10
    if len(nats) != len(seqs):
        raise RuntimeError(f"backend returned {len(nats)} scores for {len(seqs)} sequences")
    score_bits = bits(nats, seqs.lengths)
    d = args.digits
    with atomic_open(args.output) as out:
        out.write("# name\tnats\tbits\n")
        out.writelines(f"{name}\t{v:.{d}f}\t{b:.{d}f}\n"
                       for name, v, b in zip(seqs.names, nats, score_bits))
    return len(seqs)


def cmd_report(args) -> int:
    from . import results
    from .report import plot_gcups, render
    from .report import csv_text, markdown
    docs = [results.load(p) for p in args.results]
    if args.pivot:
        from .report import pivot_markdown, pivot_table
        runs = [r for doc in docs for r in doc["runs"]]
        if args.format == "markdown":
            sys.stdout.write(pivot_markdown(runs, args.pivot))
        else:
            _console().print(pivot_table(runs, args.pivot))
    elif args.format == "markdown":
        sys.stdout.write("\n".join(markdown(doc) for doc in docs))
    elif args.format == "csv":
        # One header for all files: the rows of every file, in order.
        sys.stdout.write(csv_text([r for doc in docs for r in doc["runs"]]))
    else:
        console = _console()
        for path, doc in zip(args.results, docs):
            console.print(f"[bold]{path}[/bold]")
            render(doc, console)
    if args.plot:
        plot_gcups([r for d in docs for r in d["runs"]], args.plot)
        print(f"plot: {args.plot}", file=sys.stderr)
    return 0


def cmd_compare(args) -> int:
    from . import compare, results
    if args.max_slowdown < 0:
        raise UserError("--max-slowdown must not be negative")
    base, cand = results.load(args.baseline), results.load(args.candidate)
    comp = compare.compare(base, cand, args.max_slowdown)
    compare.render(comp, _console(), str(args.baseline), str(args.candidate))
    return comp.exit_code


def cmd_datasets(args) -> int:
    ds_mod = _datasets_module()
    if args.datasets_cmd == "fetch":
        path = ds_mod.fetch(args.name)
        print(f"{args.name}: {path}")
        return 0
    from .registry import WORKLOADS
    if args.workload not in WORKLOADS:
        raise UserError(f"unknown workload '{args.workload}' (valid: {', '.join(WORKLOADS)})")
    _print_catalog(_console(), args.workload)
    return 0


# --- parser ---------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="hmmbench", description=(
        "Benchmark GPU/CPU strategies for the GATK Pair-HMM forward algorithm, cross-checked "
        "against a float64 reference."))
    p.add_argument("--version", action="version", version=f"hmmbench {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def workload(sp):
        sp.add_argument("--workload", default="pairhmm", help="workload (default: pairhmm)")
        sp.add_argument("--opencl-device", metavar="NAME", default=None,
                        help="OpenCL device for the opencl-* backends: a substring of "
                             "'platform / device' (default: $HMMBENCH_OPENCL_DEVICE, else a GPU)")

    sp = sub.add_parser("list", help="backends, devices and datasets")
    workload(sp)
    sp.set_defaults(func=cmd_list)

    sp = sub.add_parser("run", help="benchmark backends on datasets")
    sp.add_argument("--dataset", "-d", action="append", default=[],
                    help="dataset name or file (repeatable; default: the default run set); "
                         "profile workload: a sequence database (proteome, proteins-2e8[:SEED], "
                         "...; default proteome)")
    sp.add_argument("--model", action="append", default=[],
                    help="profile workload: a model (repeatable): a shipped one (PF02826, LuxC, "
                         "...) or random-M<size>[:seed] (default: PF02826 and LuxC)")
    sp.add_argument("--kind", action="append", default=[],
                    help="profile workload: score kinds, comma-separated or repeated, of "
                         "ssv,msv,vf,viterbi,forward,gmsv,pipeline (default: ssv,msv,vf, plus "
                         "pipeline for the whole-pipeline peers)")
    sp.add_argument("--backend", "-b", action="append", default=[],
                    help="backend name or glob such as 'cuda-*' (repeatable; default: all)")
    sp.add_argument("--chunking", action="append", default=[],
                    help="original (a launch per batch), merged, or merged:N (about N pairs "
                         "per launch); repeatable (an axis of the benchmark); default: each dataset's own (original for real sets, merged for synthetic)")
    sp.add_argument("--repeat", type=int, default=None,
                    help="timed repeats (default: until stable or --max-time)")
    sp.add_argument("--max-time", type=float, default=10.0,
                    help="seconds of timed repeats per dataset x backend (default 10)")
    sp.add_argument("--tolerance", type=float, default=None,
                    help="absolute log10 tolerance of the cross-check (default 1e-4; profile: "
                         "per kind, hmmbench.profile.job.TOLERANCE, in nats)")
    sp.add_argument("--sample-pairs", type=int, default=None,
                    help="pairs cross-checked per chunk of huge datasets (default 2000); "
                         "profile: most sequences checked on big databases (default 5000)")
    sp.add_argument("--no-cache", action="store_true",
                    help="recompute the reference instead of using the on-disk cache")
    sp.add_argument("--json", metavar="PATH",
                    help="result file (default: results/runs/hmmbench-<UTC time>Z.json; "
                         "'-' for stdout, the report then goes to stderr)")
    sp.add_argument("--quiet", "-q", action="store_true", help="do not print the report")
    workload(sp)
    sp.set_defaults(func=cmd_run)

    sp = sub.add_parser("score", help="write one log10 likelihood per pair, in dataset order "
                        "(profile workload: name, nats, bits per sequence of one model and kind)")
    sp.add_argument("--dataset", "-d", required=True)
    sp.add_argument("--backend", "-b", required=True)
    sp.add_argument("--model", action="append", default=[],
                    help="profile workload: the model (default: PF02826)")
    sp.add_argument("--kind", action="append", default=[],
                    help="profile workload: the score kind (ssv, msv, vf, viterbi, forward, gmsv)")
    sp.add_argument("--output", "-o", required=True)
    sp.add_argument("--digits", type=int, default=6, help="decimals per value (default 6)")
    workload(sp)
    sp.set_defaults(func=cmd_score)

    sp = sub.add_parser("report", help="re-render stored result files")
    sp.add_argument("results", nargs="+")
    sp.add_argument("--plot", metavar="PNG", help="also write a GCUPS bar chart (matplotlib)")
    sp.add_argument("--format", choices=("table", "markdown", "csv"), default="table",
                    help="table (rich, default), markdown (for results/README.md) or csv")
    sp.add_argument("--pivot", metavar="METRIC",
                    help="one table of METRIC, datasets x backends: gcups_kernel, gcups_total, "
                         "kernel, total or max_abs_err")
    sp.set_defaults(func=cmd_report)

    sp = sub.add_parser("compare", help="regression gate: candidate vs baseline results")
    sp.add_argument("baseline")
    sp.add_argument("candidate")
    sp.add_argument("--max-slowdown", type=float, default=10.0, metavar="PCT",
                    help="fail when a run is more than PCT %% slower (default 10)")
    sp.set_defaults(func=cmd_compare)

    sp = sub.add_parser("datasets", help="dataset catalog and downloads")
    dsub = sp.add_subparsers(dest="datasets_cmd", required=True, metavar="ACTION")
    lp = dsub.add_parser("list", help="every known dataset")
    lp.add_argument("--workload", default="pairhmm",
                    help="pairhmm (default) or profile (sequence databases and models)")
    f = dsub.add_parser("fetch", help="download a real dataset into the user cache")
    f.add_argument("name")
    sp.set_defaults(func=cmd_datasets)
    return p


def _select_opencl_device(spec: str) -> None:
    """Point the opencl-* backends at a device; an unknown name is a usage error (exit 2)."""
    from .backends import opencl
    os.environ[opencl.ENV_DEVICE] = spec
    try:
        opencl.choose_device(spec)
    except UserError:
        raise
    except Exception:  # noqa: BLE001 - no driver here: the backends say so in their reason
        pass


def main(argv: Optional[list] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    args.argv = argv
    try:
        from .registry import WORKLOADS
        if getattr(args, "workload", "pairhmm") not in WORKLOADS:
            raise UserError(f"unknown workload '{args.workload}' (valid: {', '.join(WORKLOADS)})")
        if getattr(args, "opencl_device", None):
            _select_opencl_device(args.opencl_device)
        return int(args.func(args) or 0)
    except UserError as exc:
        print(f"hmmbench: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("hmmbench: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
