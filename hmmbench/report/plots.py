"""The PNG plots of ``hmmbench report --plot`` (matplotlib): GCUPS bars, the peak curve over
the set length, the stage breakdown, the model-size curve. The numbers come from
:mod:`.figures`, shared with the HTML page."""
from __future__ import annotations

import math
from collections import OrderedDict
from pathlib import Path

from ..errors import UserError
from ..fileio import atomic_open
from ..history import trend_rows
from .figures import model_size_curves, peak_curves, stage_groups
from .rows import cell_label

STAGE_COLOURS = {"prep": "#8c8c8c", "h2d": "#4c72b0", "kernel": "#55a868", "d2h": "#c44e52",
                 "other": "#dddddd"}


def pyplot():
    """matplotlib's pyplot on the Agg backend; a user error when matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UserError("plots need matplotlib (pip install 'hmmbench[plot]')") from None
    return plt


def save(fig, path) -> None:
    """Write a figure atomically (its format from the suffix) and free it."""
    import matplotlib.pyplot as plt
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fmt = Path(path).suffix.lstrip(".").lower() or "png"
    if fmt not in fig.canvas.get_supported_filetypes():
        plt.close(fig)
        raise UserError(f"--plot {path}: unknown image type '.{fmt}' (use .png, .svg or .pdf)")
    with atomic_open(path, binary=True) as fh:
        fig.savefig(fh, format=fmt, dpi=120)
    plt.close(fig)


def plot_gcups(runs: list, path) -> None:
    """Grouped bar chart: GCUPS (kernel and end-to-end) per dataset, one bar per backend."""
    plt = pyplot()
    ok = [r for r in runs if r.get("gcups_total") is not None]
    if not ok:
        raise UserError("nothing to plot: no run has GCUPS figures")
    label = cell_label
    datasets = list(OrderedDict.fromkeys(label(r) for r in ok))
    backends = list(OrderedDict.fromkeys(r["backend"] for r in ok))
    value = {(label(r), r["backend"]): r for r in ok}
    fig, axes = plt.subplots(2, 1, figsize=(max(6, 1.2 * len(datasets) * max(1, len(backends)) / 2
                                                + 3), 8), sharex=True)
    width = 0.8 / len(backends)
    for ax, key, label in ((axes[0], "gcups_kernel", "GCUPS (kernel)"),
                           (axes[1], "gcups_total", "GCUPS (end-to-end)")):
        for i, b in enumerate(backends):
            xs = [d + (i - (len(backends) - 1) / 2) * width for d in range(len(datasets))]
            ys = [(value.get((d, b)) or {}).get(key) or float("nan") for d in datasets]
            bars = ax.bar(xs, ys, width, label=b)
            ax.bar_label(bars, labels=["" if y != y else f"{y:.3g}" for y in ys], fontsize=7)
        ax.set_ylabel(label)
        ax.set_yscale("log")
        ax.grid(axis="y", alpha=0.3)
    axes[1].set_xticks(range(len(datasets)))
    axes[1].set_xticklabels(datasets, rotation=30, ha="right")
    axes[0].legend(fontsize="small", ncol=2)
    axes[1].set_xlabel("dataset")
    fig.suptitle("GCUPS per backend and dataset (giga cell updates per second, log scale)")
    fig.tight_layout()
    save(fig, path)


def _curve_axes(plt, curves: "OrderedDict[str, dict]", xlabel: str, title: str):
    n = len(curves)
    cols = min(2, n)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(6.5 * cols, 4.2 * rows), squeeze=False)
    for ax, (series, lines) in zip(axes.flat, curves.items()):
        for i, (line, pts) in enumerate(lines.items()):
            xs = [p[0] for p in pts]
            ax.plot(xs, [p[1] for p in pts], "o-", color=f"C{i % 10}", label=line)
            ax.plot(xs, [p[2] or float("nan") for p in pts], "--", color=f"C{i % 10}", alpha=0.5)
        ax.set_title(series, fontsize="medium")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("GCUPS (solid: kernel, dashed: end-to-end)")
        ax.set_yscale("log")
        ax.grid(alpha=0.3)
        ax.legend(fontsize="x-small", ncol=2)
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_peak(runs: list, path) -> bool:
    """GCUPS over the length L of equal-length sets, one line per backend (peers included);
    False (nothing written) when the runs hold no such series."""
    return _plot_curves(peak_curves(runs), path,
                        "set length L (bases; haplotype length of every pair)",
                        "peak curve: GCUPS over L")


def plot_model_size(runs: list, path) -> bool:
    """GCUPS over the cell size (profile: model length M); False when there is none."""
    return _plot_curves(model_size_curves(runs), path, "model length M (match states)",
                        "model-size curve: GCUPS over M")


def _plot_curves(curves, path, xlabel: str, title: str) -> bool:
    if not curves:
        return False
    save(_curve_axes(pyplot(), curves, xlabel, title), path)
    return True


def plot_stages(runs: list, path, max_groups: int = 12) -> bool:
    """Stacked horizontal bars of the stage times (ms) per backend, one panel per cell (the
    first ``max_groups``); False when nothing was timed."""
    groups = list(stage_groups(runs).items())[:max_groups]
    if not groups:
        return False
    plt = pyplot()
    heights = [0.5 + 0.32 * len(rows) for _, rows in groups]
    fig, axes = plt.subplots(len(groups), 1, figsize=(10, sum(heights) + 1), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    for ax, (label, rows) in zip(axes[:, 0], groups):
        left = [0.0] * len(rows)
        for stage, colour in STAGE_COLOURS.items():
            widths = [st[stage] * 1e3 for _, st in rows]
            ax.barh(range(len(rows)), widths, left=left, color=colour, label=stage)
            left = [a + b for a, b in zip(left, widths)]
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels([name for name, _ in rows], fontsize="x-small")
        ax.invert_yaxis()
        ax.set_title(label, fontsize="small", loc="left")
        ax.set_xlabel("time per pass (ms)")
    axes[0, 0].legend(ncol=5, fontsize="x-small", loc="lower right")
    fig.suptitle("stage breakdown (median pass): prep, h2d, kernel, d2h, other host time")
    fig.tight_layout()
    save(fig, path)
    return True


#: The charts beside ``report --plot PATH``: PATH-<suffix>, by what draws them.
EXTRA_PLOTS = ("peak", "stages", "model-size")


def plot_paths(path) -> list:
    """Every file ``report --plot PATH`` may write: PATH and the charts beside it."""
    p = Path(path)
    return [p] + [p.with_name(f"{p.stem}-{suffix}{p.suffix or '.png'}") for suffix in EXTRA_PLOTS]


def plot_all(runs: list, path) -> list:
    """``report --plot PATH``: the GCUPS bars at PATH, and beside it PATH-peak, PATH-stages and
    PATH-model-size where the runs hold such data. Returns the paths written."""
    p, *extras = plot_paths(path)
    plot_gcups(runs, p)
    written = [p]
    for extra, fn in zip(extras, (plot_peak, plot_stages, plot_model_size)):
        if fn(runs, extra):
            written.append(extra)
    return written


def plot_history(hist, path, min_points: int = 2, max_cells: int = 12) -> int:
    """Kernel (solid) and total (dashed) GCUPS per cell over the ordered files, vertical lines
    where the sources (grey) or a device (red) changed; the cells with most points first.
    Returns how many cells were drawn."""
    plt = pyplot()
    rows = sorted(trend_rows(hist, min_points), key=lambda r: -len(r["points"]))[:max_cells]
    if not rows:
        raise UserError(f"nothing to plot: no cell appears in {min_points} or more result files")
    fig, ax = plt.subplots(figsize=(11, 6))
    for i, r in enumerate(rows):
        xs = [p.snapshot + 1 for p in r["points"]]
        colour = f"C{i % 10}"
        label = " / ".join(str(k) for k in r["key"] if k)
        ax.plot(xs, [p.gcups_kernel or float("nan") for p in r["points"]], "o-", color=colour,
                label=label)
        ax.plot(xs, [p.gcups_total or float("nan") for p in r["points"]], "s--", color=colour,
                alpha=0.6)
        for p in r["points"]:
            if "S" in p.marks:
                ax.axvline(p.snapshot + 0.5, color="grey", ls=":", lw=0.8)
            if "D" in p.marks:
                ax.axvline(p.snapshot + 0.5, color="red", ls=":", lw=0.8)
    ax.set_yscale("log")
    ax.set_xlabel("result file (oldest first, numbers as in the table)")
    ax.set_ylabel("GCUPS (solid: kernel, dashed: end-to-end)")
    ax.set_title("history: GCUPS per cell; dotted lines: sources (grey) or device (red) changed")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="x-small", ncol=2)
    fig.tight_layout()
    save(fig, path)
    return len(rows)
