"""Measuring: every dataset x backend cell of a benchmark, repeated until stable, cross-checked.

Like nvbench, measuring is kept apart from printing: :func:`run_benchmark` returns plain data
(:class:`RunRecord` objects); :mod:`hmmbench.report` renders them and :mod:`hmmbench.results`
stores them.

Axes: dataset x chunking mode (how the pairs are cut into launches) x backend.

One *pass* runs the backend over every launch of the dataset once. The first pass is an untimed
warm-up whose results are cross-checked against the float64 reference (the ``numpy`` backend,
cached on disk per dataset); then timed passes repeat until the stopping criterion says enough
(:mod:`.stopping`; by default until the running median of the total time is stable, or the time
cap is reached, at least ``min_repeats`` passes unless one pass alone exceeds the cap). Stage
times (prep/h2d/kernel/d2h) are the backend's own, summed over launches; ``total`` is the wall
time around the backend calls of a pass.

Lazy datasets (generated chunk by chunk, too large for memory) are regenerated for every pass;
the chunking mode applies within each generated chunk, generation time is not counted, and the
cross-check covers a deterministic sample of ``sample_pairs`` pairs per chunk (``n_checked`` says
how many). Datasets above ``full_check_max_cells`` are likewise checked on a sample, because the
float64 CPU reference is slow.

Workloads: the unit of work a backend runs is the dataset's load() (a PairSet for "pairhmm"; a
:class:`hmmbench.profile.job.ProfileSearch` for "profile", whose "datasets" are the
database x model x kind cells built by :func:`hmmbench.profile.cells.profile_cells`). A
dataset may carry runner hints as attributes: ``axes`` (extra record fields), ``tolerance``,
``check_cells`` (a reference cell budget: above it the check is sampled), ``nonfinite_equal``
(NaN == NaN and inf == inf count as agreement, as HMMER's filters report them) and
``loading_note()`` (a progress line before a slow load). Backends with ``scores = False``
(whole-pipeline peers) are timed but never checked: their status is ``peer``.

Where each concern lives: :mod:`.config` (RunConfig, RunRecord, Progress), :mod:`.reference`
(the reference store and its disk cache), :mod:`.check` (what is checked, the tally),
:mod:`.stopping` (the registered stopping criteria), :mod:`.cell` (one cell), :mod:`.benchmark`
(every cell, speed-ups, throttle flags, a checkpoint after every cell), :mod:`.resume` (what an
unfinished result file already holds, for ``--resume``).
"""
from .benchmark import (Benchmark, Cell, chunking_modes, fill_speedups, flag_throttling,
                        plan_cells, run_benchmark, summarize)
from .cell import merge_infos, run_cell
from .check import MIN_SAMPLE, CheckTally, check_plan, sample_indexes
from .config import REFERENCE_BACKEND, TIMING_KEYS, Progress, RunConfig, RunRecord
from .reference import CACHE_FORMAT, ReferenceStore
from .resume import kept_records
from .stopping import (CRITERIA, StoppingCriterion, criterion_for, register,
                       running_median_spread)
from .units import n_items, subset_items

__all__ = ["Benchmark", "CACHE_FORMAT", "Cell", "kept_records", "plan_cells", "summarize", "CheckTally", "MIN_SAMPLE", "Progress", "REFERENCE_BACKEND",
           "ReferenceStore", "RunConfig", "RunRecord", "TIMING_KEYS", "check_plan", "chunking_modes",
           "fill_speedups", "flag_throttling", "merge_infos", "n_items", "run_benchmark", "run_cell",
           "running_median_spread", "sample_indexes", "subset_items", "CRITERIA",
           "StoppingCriterion", "criterion_for", "register"]
