"""``hmmbench run``: benchmark backends on datasets, write the result file, print the report."""
from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

from .. import results
from .. import hostinfo
from ..errors import UserError
from ..fileio import check_output_path, output_lock
from ..memory import MemoryLimit
from ..options import run_options
from ..registry import probe, select
from ..runner import RunConfig, kept_records, plan_cells, run_benchmark
from ..runner.memory import check_memory
from ..runner.stopping import CRITERIA
from . import cluster_args
from .common import add_workload_options, given_files, scaling_of, terminal


def add_parser(sub, workloads) -> None:
    sp = sub.add_parser("run", help="benchmark backends on datasets")
    sp.add_argument("--dataset", "-d", action="append", default=[],
                    help="dataset name or file (repeatable; default: the default run set); "
                         "profile workload: a sequence database (proteome, proteins-2e8[:SEED], "
                         "...; default proteome)")
    for w in workloads:
        w.add_arguments("run", sp)
    sp.add_argument("--backend", "-b", action="append", default=[],
                    help="backend name or glob such as 'cuda-*' (repeatable; default: all)")
    sp.add_argument("--axis", action="append", default=[], metavar="NAME=V1,V2,...",
                    help="sweep a parameter axis of the selected backend families (repeatable: "
                         "the cartesian product), e.g. -b cuda-inter --axis tile=2,4,6,8; "
                         "`hmmbench list` shows each family's axes")
    sp.add_argument("--chunking", action="append", default=[],
                    help="original (a launch per batch), merged, or merged:N (about N pairs "
                         "per launch; on a set generated in pieces, such as chunks-na12878, an "
                         "N past one piece joins whole pieces into launches of at most N "
                         "pairs); repeatable (an axis of the benchmark); default: each "
                         "dataset's own (original for real sets, merged for synthetic)")
    sp.add_argument("--in-flight", type=int, default=1, metavar="N",
                    help="launches (per-region calls) kept outstanding at once, as a caller "
                         "working on several regions does (default 1: one after the other); "
                         "total is then the wall time of all of them; the *-subwarp-batched "
                         "backends run the calls in flight as one call")
    sp.add_argument("--repeat", type=int, default=None,
                    help="timed repeats, a fixed count (--stopping fixed:count=N; default: "
                         "until the stopping criterion says enough)")
    sp.add_argument("--stopping", default=None, metavar="NAME[:KEY=VALUE,...]",
                    help="when to stop repeating: " + "; ".join(
                        f"{c.name}: {c.summary}".replace("%", "%%") for c in CRITERIA.values()) +
                    ". Bounded by min_repeats (3), max_repeats (1000) and max_time (--max-time)"
                    ", e.g. noise:max_noise=0.01,min_repeats=6 (default: stable)")
    sp.add_argument("--max-time", type=float, default=10.0,
                    help="seconds of timed repeats per dataset x backend (default 10)")
    sp.add_argument("--warmup-time", type=float, default=0.2, metavar="S",
                    help="untimed repeats after the checked one until S seconds have passed "
                         "(default 0.2; none for sets generated piece by piece or where the "
                         "checked repeat took over 10 S): a short call right after the "
                         "cross-check finds the host's caches cold")
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
    sp.add_argument("--resume", metavar="FILE",
                    help="run only the cells an interrupted run left out of its result FILE "
                         "(the same options, sources and datasets are needed); the result goes "
                         "to FILE unless --json says otherwise")
    sp.add_argument("--memory-limit", metavar="SIZE",
                    help="most memory the run may take, such as 8G or 512M (default: the "
                         "memory available now); a backend whose estimated need is more is "
                         "refused before anything is allocated (docs/working-memory.md)")
    sp.add_argument("--device-memory-limit", metavar="SIZE",
                    help="most memory the run may take of a GPU, such as 40G (default: the "
                         "device's free memory now; on a cluster, each worker's): a backend "
                         "whose estimated device need is more is refused before anything is "
                         "allocated")
    sp.add_argument("--quiet", "-q", action="store_true", help="do not print the report")
    add_workload_options(sp)
    cluster_args.add_arguments(sp)
    sp.set_defaults(func=run)


def parse_axes(specs: list) -> dict:
    """{axis: [value text, ...]} from repeated ``--axis NAME=V1,V2`` options."""
    axes: dict = {}
    for spec in specs:
        name, eq, values = spec.partition("=")
        vals = [v.strip() for v in values.split(",") if v.strip()]
        if not eq or not name.strip() or not vals:
            raise UserError(f"--axis {spec}: expected NAME=VALUE[,VALUE...]")
        if name.strip() in axes:
            raise UserError(f"--axis {name.strip()}: given twice")
        axes[name.strip()] = vals
    return axes


def runnable(backends: list) -> tuple:
    """``hmmbench run`` without ``--backend``: (the backends that can run here, None or the one
    line that says how many others cannot and why; ``hmmbench list`` names each)."""
    ok, missing = [], []
    for b in backends:
        reason = probe(b).reason
        if reason:
            missing.append((b, reason))
        else:
            ok.append(b)
    if not ok:
        raise UserError("no backend can run here (see `hmmbench list`)")
    return ok, unavailable_summary(missing) if missing else None


def unavailable_summary(missing: list) -> str:
    """One line for (backend, reason) pairs, grouped by reason: "28 backends unavailable here,
    not run: 27 cuda backends: pycuda not installed; peer-gpupairhmm: no NVIDIA GPU"."""
    by_reason: dict = {}
    for backend, reason in missing:
        by_reason.setdefault(" ".join(str(reason).split()), []).append(backend)
    parts = []
    for reason, group in by_reason.items():
        apis = "/".join(sorted({str(b.api) for b in group}))
        what = group[0].name if len(group) == 1 else f"{len(group)} {apis} backends"
        parts.append(f"{what}: {reason}")
    n = len(missing)
    return (f"{n} backend{'s' if n != 1 else ''} unavailable here, not run "
            f"(`hmmbench list` names them): {'; '.join(parts)}")


def run(args, workload) -> int:
    cluster = cluster_args.cluster_options(args)
    opts = run_options(vars(args), workload)
    cfg = RunConfig.from_options(opts, workload.run_defaults(), workload.sample_items)
    backends = select(list(opts.backends), workload.name, axes=parse_axes(opts.axes))
    unavailable_line = None
    if not opts.backends and not cluster:          # a cluster's workers have their own devices
        backends, unavailable_line = runnable(backends)
    datasets, plan = workload.plan(opts, backends)
    to_stdout = opts.json == "-"
    out_path = None if to_stdout else Path(opts.json or opts.resume or results.default_path())
    option = "--json" if opts.json else "--resume"
    if out_path is not None:    # never a dataset or model file (the --resume file is the output)
        inputs = [d.path for d in datasets if getattr(d, "path", None)]
        check_output_path(out_path, option, inputs + given_files(
            list(opts.datasets), getattr(opts.workload_options, "models", None)))
    if opts.resume and cluster:
        raise UserError("--resume continues runs of one process, not --cluster runs")
    if opts.in_flight > 1 and cluster:
        raise UserError("--in-flight is for runs of one process, not --cluster runs")
    if not cluster:                  # a cluster's workers check their own memory
        check_memory(plan_cells(datasets, backends, cfg, plan.get("backends_for")), cfg,
                     MemoryLimit.of(opts.memory_limit, opts.device_memory_limit))
    matrix = (opts, cfg, backends, datasets, plan)
    if out_path is None:
        return _run(args, workload, matrix, None, unavailable_line, cluster)
    with output_lock(out_path, option):
        return _run(args, workload, matrix, out_path, unavailable_line, cluster)


def _run(args, workload, matrix: tuple, out_path, unavailable_line, cluster) -> int:
    """The benchmark of ``matrix`` (options, config, backends, datasets, plan), its result
    file (``out_path``; None: stdout) and report; ``unavailable_line``: the backends left out;
    ``cluster``: the ClusterOptions of a --cluster run, else None."""
    opts, cfg, backends, datasets, plan = matrix
    to_stdout = out_path is None
    header = results.document_header(["hmmbench"] + list(opts.argv))
    kept = _kept(opts, datasets, backends, cfg, plan, header) if opts.resume else None
    written = {}

    def checkpoint(bench) -> None:
        """After every finished cell: the file holds every finished cell and names the rest."""
        results.write(results.make_document(bench, header=header), out_path)
        written.update(kept=len(bench.records), left=len(bench.not_run))

    progress = terminal(stderr=True).progress()
    try:
        if cluster:
            from ..cluster.command import run_cluster  # the Dask layer only with --cluster
            bench = run_cluster(cluster, workload, cfg, backends, datasets, plan, progress)
        else:
            bench = run_benchmark(datasets, backends, cfg, progress=progress, kept=kept,
                                  checkpoint=checkpoint if out_path else None, **plan)
    except KeyboardInterrupt:
        if not written:
            raise
        raise KeyboardInterrupt(f"{written['kept']} finished cells kept in {out_path}, "
                                f"{written['left']} not run (add --resume {out_path} to run "
                                "them)") from None
    finally:  # device memory back now, not at exit: `suite run` runs many of these in one process
        for b in backends:
            b.close()
    hostinfo.enrich_devices(bench.devices, workload.name)  # on the module: tests stub it
    doc = results.make_document(bench, header=header)
    shown = results.restore_floats(copy.deepcopy(doc))   # the report wants floats, not "NaN"
    if to_stdout:
        results.validate(doc, "<stdout>")
        sys.stdout.write(json.dumps(doc, indent=1, allow_nan=False) + "\n")
        terminal(stderr=True).print_run(shown, scaling=scaling_of(shown))
    else:
        results.write(doc, out_path)
        if not opts.quiet:
            terminal().print_run(shown, scaling=scaling_of(shown))
    if unavailable_line:              # once all went well: an error stays the only line
        print(unavailable_line, file=sys.stderr)
    if out_path is not None:
        print(f"results: {out_path}", file=sys.stderr)
    return 0


def _kept(opts, datasets, backends, cfg, plan, header) -> dict:
    """The finished cells of the --resume file, if it is an unfinished run of this matrix."""
    doc = results.load(opts.resume)
    cells = plan_cells(datasets, backends, cfg, plan.get("backends_for"))
    return kept_records(doc, cells, cfg, header["source_sha256"], opts.resume)
