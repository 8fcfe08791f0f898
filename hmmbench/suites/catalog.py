"""The named suites, as data: each step is one ``hmmbench run`` (datasets x backends x options)
writing ``<out>/<step name>.json``. These are the studies whose files sit in
``results/<gpu>/<step name>.json`` (each file's ``command`` field holds the exact command line);
``hmmbench suite run NAME --dry-run`` prints them.

A new suite is one more entry here: {"about": ..., "steps": [{"name", "datasets", "backends",
"options", "workload"}, ...]}. The tests check that every step parses, that its datasets resolve,
that its backends exist, that two steps of one name are the same run (a step name is a result
file's name) and that every committed result file is the run of the step it is named after.
"""
from __future__ import annotations


def _sets(prefix: str, first: int, last: int, suffix: str = "") -> list:
    """prefix<i>suffix for i in first..last: a table of a paper, e.g. ren18-t1.1@1e6 .. t1.6."""
    return [f"{prefix}{i}{suffix}" for i in range(first, last + 1)]


def _peak_sets(lengths=(32, 64, 128, 192, 256, 384, 448, 512, 768, 896, 1024),
               scale: int = 1) -> list:
    """Equal-length sets of 8e9 cells each, at least 65,536 pairs (long reads: enough groups to
    fill the GPU) and at most 4e6; from L = 256, ``scale`` times that. The peer suite's peak
    takes scale 4 there: a call's fixed costs (layout launches, the queues' launches, the
    part-empty last round of equal work items) are then ~1 % of its kernel time instead of 3-9 %
    (H100: results/h100/tail-sizes.json). Shorter sets keep their size: they
    gain nothing from it and gpuPairHMM garbles its output file beyond ~1e6 pairs."""
    def pairs(L: int) -> int:
        s = scale if L >= 256 else 1
        return min(max(s * 8_000_000_000 // (L * L), s * 65536), 4_000_000)
    return [f"equal-{L}@{pairs(L)}" for L in lengths]


#: the peak curve's read lengths (the peer comparison's table and the bins' edges between)
PEAK_LENGTHS = (32, 64, 128, 256, 384, 512, 640, 768, 896, 1024)



def _twin_peak_sets() -> list:
    """The peak curve's sets at L = 64, 128, 256, 512, 1024 (the twins' head to head)."""
    return [s for s in _peak_sets() if int(s.split("-")[1].split("@")[0]) in (64, 128, 256, 512,
                                                                               1024)]


#: every family that exists in both APIs, on NVIDIA's OpenCL beside CUDA
_TWINS = ["cuda-inter-*", "opencl-inter-*", "cuda-intra-*", "opencl-intra-*", "cuda-warp",
          "opencl-warp", "cuda-multiwarp", "opencl-multiwarp"]
_RANDOM = ["random-M100", "random-M400", "random-M1200", "random-M2400"]

#: the parts of the HMMER3 filter study; "profile" runs them in this order, each its
#: own file, so that a part cut short by a time limit loses only itself
_PROFILE = {
    # Model-size curve of the warp kernels, kernel GCUPS, on a generated Swiss-Prot-sized
    # database (2e8 residues, ~557k proteins), in three runs of about a minute each. The NumPy
    # reference cross-checks a deterministic sample of the sequences.
    "profile-curve": {
        "about": "HMMER3 filters over model sizes 100..2400 on proteins-2e8, profile-cuda-warp",
        "steps": [{"name": f"profile-curve-{part}", "workload": "profile",
                   "datasets": ["proteins-2e8"], "backends": ["profile-cuda-warp"],
                   "options": {"model": models, "kind": "ssv,msv,vf", "max-time": 1}}
                  for part, models in (
                      ("a", ["random-M100", "random-M400", "random-M1200"]),
                      ("b", ["random-M2400", "LuxC"]),
                      ("c", ["random-M200", "random-M800", "random-M1600"]))]},
    # Every kind and backend on the real proteome (profile-numpy itself is not timed: its
    # Forward takes 20-45 s a pass; it still cross-checks every row).
    "profile-proteome": {
        "about": "every profile kind and backend on the real proteome, with the CPU peers",
        "steps": [{"name": "profile-proteome", "workload": "profile", "datasets": ["proteome"],
                   "backends": ["profile-pyhmmer", "profile-opencl-task", "profile-cuda-*",
                                "profile-pyhmmer-pipeline", "profile-hmmsearch"],
                   "options": {"model": ["PF02826", "LuxC"],
                               "kind": "ssv,msv,vf,viterbi,forward,pipeline",
                               "opencl-device": "NVIDIA", "max-time": 2}}]},
    # The CPU peers on the full database would take minutes per model: timed on the proteome.
    # The whole-pipeline peers need calibrated models (query-M: pyhmmer Builder, same sizes).
    "profile-peers": {
        "about": "CPU peers (pyhmmer, hmmsearch) beside the CUDA kernels over calibrated models",
        "steps": [{"name": "profile-peers", "workload": "profile", "datasets": ["proteome"],
                   "backends": ["profile-pyhmmer", "profile-pyhmmer-pipeline",
                                "profile-hmmsearch", "profile-cuda-[!t]*"],
                   "options": {"model": [m.replace("random", "query") for m in _RANDOM],
                               "kind": "ssv,msv,pipeline", "max-time": 2}}]},
    # One thread per sequence: a pass over 2e8 residues at M = 2400 would take two minutes,
    # so a tenth of the database and four model sizes.
    "profile-task": {
        "about": "task-parallel filter kernels over model sizes on proteins-2e7",
        "steps": [{"name": "profile-task", "workload": "profile", "datasets": ["proteins-2e7"],
                   "backends": ["profile-cuda-task"],
                   "options": {"model": _RANDOM, "kind": "ssv,msv,vf", "max-time": 2}}]},
}

#: the profile workload end to end on the GPU: one run per step, the database resident across its
#: cells
_PROFILE_E2E_KINDS = "ssv,msv,vf,pipeline"
_PROFILE_E2E = {
    "about": "HMMER3 search end to end: resident proteins-2e8, calibrated query-M100/400/1200 x "
             "ssv,msv,vf,pipeline on profile-cuda-warp beside hmmsearch (every host core), and "
             "the RREFam sweep",
    "steps": [
        {"name": "profile-e2e", "workload": "profile", "datasets": ["proteins-2e8"],
         "backends": ["profile-cuda-warp", "profile-hmmsearch"],
         "options": {"model": ["query-M100", "query-M400", "query-M1200"],
                     "kind": _PROFILE_E2E_KINDS, "max-time": 2}},
        {"name": "profile-sweep", "workload": "profile", "datasets": ["proteins-2e8"],
         "backends": ["profile-cuda-warp"],
         "options": {"model": "RREFam", "kind": _PROFILE_E2E_KINDS, "max-time": 1}},
        {"name": "profile-sweep-peer", "workload": "profile", "datasets": ["proteins-2e8"],
         "backends": ["profile-hmmsearch"],
         "options": {"model": "RREFam", "kind": "pipeline", "repeat": 1}}]}

#: a many-model search in one command: a seeded file of 100 calibrated family models (M = 50..2000)
#: against the resident proteins-2e8, HMMER's pipeline per model on the GPU beside hmmsearch on
#: every host core (one hmmsearch per model, each reading the database as hmmsearch does for
#: every model of a file); one timed pass per cell: the first search is what a many-model run
#: pays (its reference check on a sample of 200 sequences per model)
_PROFILE_MANY = {
    "about": "a many-model search: models-mixed100 (100 calibrated models, M = 50..2000) x "
             "proteins-2e8, the pipeline on profile-cuda-warp beside hmmsearch, per model and "
             "summed (scripts/profile_e2e_table.py)",
    "steps": [{"name": "profile-many", "workload": "profile", "datasets": ["proteins-2e8"],
               "backends": ["profile-cuda-warp", "profile-hmmsearch"],
               "options": {"model": "models-mixed100", "kind": "pipeline", "repeat": 1,
                           "warmup-time": 0.1, "sample-pairs": 200}}]}


def _equal(*sets: str) -> list:
    """equal-<L>@<pairs> for each "L@pairs"."""
    return [f"equal-{x}" for x in sets]


def _regcap(hi: int, *settings: str) -> list:
    """cuda-subwarp's bin ``hi`` under each register cap setting ("max_regs=160,exp_every=28")."""
    return [f"cuda-subwarp-regcap[hi={hi},{x}]" for x in settings]


#: a sub-warp kernel study's options: kernel time on equal-length sets, a sample cross-checked
_KERNEL_OPTIONS = {"chunking": "merged", "repeat": 3, "sample-pairs": 100}

#: the sub-warp kernels' tuning: the bins' shapes, register caps, exponent intervals and where the
#: exponents start, each against cuda-subwarp as registered (docs/subwarp-design.md)
_SUBWARP_TUNING = {
    "about": "cuda-subwarp's bins against other shapes, register caps, exponent check intervals "
             "and exponent thresholds on equal-length sets (kernel time)",
    "steps": [
        {"name": "tail-sizes",
         "datasets": _equal(*(f"{L}@{n}" for L, a, b in (
             (256, 122070, 488280), (320, 78125, 312500), (384, 65536, 262144),
             (448, 65536, 262144), (512, 65536, 262144), (640, 65536, 262144),
             (768, 65536, 262144), (896, 65536, 262144), (1024, 65536, 262144))
             for n in (a, b))),
         "backends": ["cuda-subwarp"], "options": _KERNEL_OPTIONS},
        {"name": "shapes", "datasets": _equal("256@488280", "384@262144", "448@262144",
                                              "512@262144"),
         "backends": ["cuda-subwarp", "cuda-subwarp-shape[hi=256,p=16,k=16,min_blocks=4]",
                      "cuda-subwarp-shape[hi=384,p=16,k=24,min_blocks=3]",
                      "cuda-subwarp-shape[hi=448,p=32,k=16,min_blocks=4]",
                      "cuda-subwarp-shape[hi=512,p=32,k=16,min_blocks=4]",
                      "cuda-subwarp-exp-above[exp_above=448]"],
         "options": _KERNEL_OPTIONS},
        {"name": "exp-above", "datasets": _equal("320@312500", "384@262144", "448@262144",
                                                 "512@262144", "640@262144"),
         "backends": ["cuda-subwarp"] + [f"cuda-subwarp-exp-above[exp_above={x}]"
                                          for x in (384, 448, 512)],
         "options": dict(_KERNEL_OPTIONS, **{"sample-pairs": 200})},
        {"name": "regcap-640", "datasets": _equal("640@262144"),
         "backends": ["cuda-subwarp"] + _regcap(640, "max_regs=160,exp_every=28"),
         "options": _KERNEL_OPTIONS},
        {"name": "regcap-768", "datasets": _equal("768@262144"),
         "backends": ["cuda-subwarp"] + _regcap(
             768, "max_regs=0,exp_every=24,exp_shift=on,code_window=off",
             "max_regs=0,exp_every=24,code_window=off", "max_regs=0,exp_every=24,exp_shift=on"),
         "options": _KERNEL_OPTIONS},
        {"name": "regcap-896", "datasets": _equal("896@262144"),
         "backends": ["cuda-subwarp"] + _regcap(896, "max_regs=200,exp_every=28"),
         "options": _KERNEL_OPTIONS},
        {"name": "regcap-1024", "datasets": _equal("1024@262144"),
         "backends": ["cuda-subwarp"] + _regcap(1024, "max_regs=240,exp_every=28"),
         "options": _KERNEL_OPTIONS},
        {"name": "short-reads", "datasets": _equal("32@4000000", "64@1953125", "128@488281"),
         "backends": ["cuda-subwarp"],
         "options": {"chunking": "merged", "repeat": 5, "sample-pairs": 200}},
        {"name": "long-reads", "datasets": _equal("640@262144", "768@262144", "896@262144",
                                                  "1024@262144"),
         "backends": ["cuda-subwarp"],
         "options": {"chunking": "merged", "repeat": 5, "sample-pairs": 200}}]}

#: the sub-warp call's host path: calls of every size, joined pieces, calls in flight and batched
#: (docs/subwarp-host-path.md)
_SUBWARP_CALLS = {
    "about": "cuda-subwarp's calls end to end: 10s and 1m merged, chunks@5e6 in 3 calls and in "
             "one, the NA12878-sized set in 7 calls of ~8M pairs, 1m's 110 region calls with "
             "1..16 in flight, on lanes and batched",
    "steps": [
        {"name": "calls-merged", "datasets": ["10s", "1m"], "backends": ["cuda-subwarp"],
         "options": {"chunking": "merged", "max-time": 3}},
        {"name": "calls-chunks5e6", "datasets": ["chunks@5e6"], "backends": ["cuda-subwarp"],
         "options": {"chunking": ["merged", "merged:5e6"], "repeat": 5}},
        {"name": "calls-na12878", "datasets": ["chunks-na12878"], "backends": ["cuda-subwarp"],
         "options": {"chunking": "merged:1e7", "repeat": 1}},
        {"name": "in-flight-1", "datasets": ["1m"], "backends": ["cuda-subwarp"],
         "options": {"chunking": "original", "in-flight": 1}}]
    + [{"name": f"in-flight-{n}", "datasets": ["1m"],
        "backends": ["cuda-subwarp", "cuda-subwarp-batched"],
        "options": {"chunking": "original", "in-flight": n}} for n in (4, 8, 16)]}

#: the regression gate on a GPU: cuda-subwarp twice as it is and once with 10 % more kernel work
#: under the same name (HMMBENCH_SUBWARP_EXTRA_WORK, hmmbench/pairhmm/subwarp/extra_work.py),
#: then the kernel stage gated: the second run must pass, the slowed one fail
#: (docs/regression-gate.md)
_GATE_GPU_RUN = {"datasets": _equal("512@262144"), "backends": ["cuda-subwarp"],
                 "options": {"chunking": "merged", "repeat": 10, "sample-pairs": 100}}
_GATE_GPU_COMPARE = {"stage": "kernel", "max-slowdown": 5}
_GATE_GPU = {
    "about": "the compare gate on the GPU: cuda-subwarp on equal-512@262144 twice, then with 10 "
             "% more kernel work under the same name; kernel stage gated at 5 %: the second "
             "run must pass, the slowed one fail",
    "steps": [
        {"name": "gate-gpu-base", **_GATE_GPU_RUN},
        {"name": "gate-gpu-base2", **_GATE_GPU_RUN},
        {"name": "gate-gpu-slow", **_GATE_GPU_RUN,
         "env": {"HMMBENCH_SUBWARP_EXTRA_WORK": "10"}},
        {"name": "gate-gpu-same", "compare": ["gate-gpu-base", "gate-gpu-base2"],
         "options": _GATE_GPU_COMPARE},
        {"name": "gate-gpu-caught", "compare": ["gate-gpu-base", "gate-gpu-slow"],
         "options": _GATE_GPU_COMPARE, "expect": 1}]}

#: the parameter axes on a GPU: a family swept over a grid in one run
_AXES = {
    "about": "cuda-inter over tile x block on 1m merged, cuda-subwarp-fixed over p x k on "
             "equal-256@1e6 (`hmmbench report FILE --pivot gcups_kernel --by tile`)",
    "steps": [
        {"name": "inter-axes", "datasets": ["1m"], "backends": ["cuda-inter"],
         "options": {"chunking": "merged", "axis": ["tile=2,4,6,8", "block=64,128"],
                     "max-time": 5}},
        {"name": "subwarp-axes", "datasets": ["equal-256@1e6"], "backends": ["cuda-subwarp-fixed"],
         "options": {"axis": ["p=4,8,16", "k=8,16"], "max-time": 5}}]}

#: the profile set and the NA12878-sized set sharded over the GPUs of one host (dask-cuda);
#: the worker counts are the host's, so one suite per host size
_PROFILE_SET = {"model": ["PF02826", "Thioesterase", "KR", "LuxC"], "kind": "ssv,msv,vf"}


def _scaling(workers: str, gpus: str, na12878: dict = None) -> dict:
    """``na12878``: more options of its step (a smaller cross-checked sample on more GPUs)."""
    cluster = {"cluster": "local", "workers": workers, "repeat": 5}
    return {
        "about": f"cuda-subwarp on chunks-na12878 and chunks@2e7, profile-cuda-warp on "
                 f"proteins-2e8 x 4 models, sharded over {workers} GPUs of one host "
                 f"(the scaling table)",
        "steps": [
            {"name": f"scaling-{gpus}-na12878", "datasets": ["chunks-na12878"],
             "backends": ["cuda-subwarp"],
             "options": dict(cluster, chunking="merged", **(na12878 or {}))},
            {"name": f"scaling-{gpus}-chunks2e7", "datasets": ["chunks@2e7"],
             "backends": ["cuda-subwarp"], "options": dict(cluster, chunking="merged")},
            {"name": f"scaling-{gpus}-profile", "workload": "profile",
             "datasets": ["proteins-2e8"], "backends": ["profile-cuda-warp"],
             "options": dict(_PROFILE_SET, **cluster)}]}


#: one GPU through a one-worker cluster against the same run in the process
_SCALING_1GPU = {
    "about": "the cluster's own cost: chunks@5e6 in the process and through a one-worker local "
             "cluster, and profile-cuda-warp on proteins-2e7 through it",
    "steps": [
        {"name": "scaling-1gpu-embedded", "datasets": ["chunks@5e6"],
         "backends": ["cuda-subwarp"], "options": {"chunking": "merged", "repeat": 3}},
        {"name": "scaling-1gpu-cluster", "datasets": ["chunks@5e6"],
         "backends": ["cuda-subwarp"],
         "options": {"chunking": "merged", "cluster": "local", "workers": 1, "repeat": 3}},
        {"name": "scaling-1gpu-profile", "workload": "profile", "datasets": ["proteins-2e7"],
         "backends": ["profile-cuda-warp"],
         "options": {"model": "PF02826", "kind": "ssv,msv", "cluster": "local", "workers": 1,
                     "repeat": 3}}]}

#: K models per SSV / MSV launch on the resident database
_PROFILE_BATCH = {
    "about": "profile-cuda-warp on proteins-2e8 x the RREFam models, K = 1, 2, 4, 8 models per "
             "SSV / MSV launch (aggregate GCUPS)",
    "steps": [{"name": f"profile-batch-models-{k}", "workload": "profile",
               "datasets": ["proteins-2e8"], "backends": ["profile-cuda-warp"],
               "options": {"model": "RREFam", "kind": "ssv,msv", "batch-models": k,
                           "max-time": 1.0}} for k in (1, 2, 4, 8)]}

SUITES = {
    "tiles": {
        "about": "inter-task tile sweep on Ren 2018 Table 1 (6 equal-length sets, 10^6 pairs) "
                 "[Ren 2018 Fig. 8]; the interleaved layout's prep is costly, so its kernels "
                 "run on the largest set only",
        "steps": [
            {"name": "tiles", "datasets": _sets("ren18-t1.", 1, 6, "@1e6"),
             "backends": ["cuda-inter-naive", "cuda-inter-tile?"], "options": {"repeat": 3}},
            {"name": "tiles-sorted", "datasets": ["ren18-t1.6@1e6"],
             "backends": ["cuda-inter-*-sorted"], "options": {"repeat": 3}}]},
    "table3": {
        "about": "intra-task, warp and multi-warp families on Ren 2018 Table 3 (26 sets) "
                 "[Ren 2018 Fig. 9]",
        "steps": [{"name": "table3", "datasets": _sets("ren18-t3.", 1, 26, "@1e5")
                   + ["ren18-t3.26@1e6"],
                   "backends": ["cuda-intra-naive", "cuda-intra-tile2", "cuda-warp",
                                "cuda-multiwarp", "cuda-warp-tile4"],
                   "options": {"repeat": 3}}]},
    "smallcount": {
        "about": "inter tile=4 vs intra naive vs multi-warp vs sub-warp on Ren 2016 Table I "
                 "at 100/1000/10000 pairs [Ren 2016 Fig. 8]",
        "steps": [{"name": "smallcount",
                   "datasets": [d for n in (100, 1000, 10000) for d in _sets("ren16-t1.", 1, 8,
                                                                             f"@{n}")],
                   "backends": ["cuda-inter-tile4", "cuda-intra-naive", "cuda-multiwarp",
                                "cuda-subwarp"],
                   "options": {"max-time": 2}}]},
    "chunking": {
        "about": "every CUDA family on the real chunks of 1m, one launch per chunk vs merged "
                 "[Ren 2018 Table 6]",
        "steps": [{"name": "chunking", "datasets": ["1m"],
                   "backends": ["cuda-inter-*", "cuda-intra-*", "cuda-warp", "cuda-multiwarp",
                                "cuda-warp-tile4", "cuda-subwarp"],
                   "options": {"chunking": ["original", "merged"], "max-time": 2}}]},
    "apis": {
        "about": "CUDA and OpenCL twins side by side: tiny, 10s, 1m (both chunkings), 128x256 "
                 "x 10^6; `hmmbench report --summary` prints the ratio table",
        "steps": [
            {"name": "apis-merged", "datasets": ["tiny", "10s", "1m"], "backends": _TWINS,
             "options": {"chunking": "merged", "opencl-device": "NVIDIA", "max-time": 1}},
            {"name": "apis-original", "datasets": ["10s", "1m"], "backends": _TWINS,
             "options": {"chunking": "original", "opencl-device": "NVIDIA", "max-time": 1}},
            {"name": "apis-128x256", "datasets": ["ren16-t1.8@1e6"], "backends": _TWINS,
             "options": {"opencl-device": "NVIDIA", "repeat": 3}}]},
    "twins": {
        "about": "the peak kernels' CUDA and OpenCL twins on one GPU: the sub-warp twins "
                 "(-f64rescue: NVIDIA's OpenCL has no sub-group shuffles for the exponents) on "
                 "equal-length sets 64..1024 and 1m merged, end to end on equal-512 and 1m "
                 "merged, profile-opencl-warp "
                 "vs profile-cuda-warp on proteins-2e8 (M = 400, 1200); `hmmbench report "
                 "--summary` prints the ratio table",
        "steps": [
            {"name": "twins-peak", "datasets": _twin_peak_sets(),
             "backends": ["cuda-subwarp-f64rescue", "opencl-subwarp-f64rescue"],
             "options": {"opencl-device": "NVIDIA", "repeat": 3, "sample-pairs": 200}},
            {"name": "twins-1m", "datasets": ["1m"],
             "backends": ["cuda-subwarp-f64rescue", "opencl-subwarp-f64rescue"],
             "options": {"chunking": "merged", "opencl-device": "NVIDIA", "max-time": 2}},
            # end to end (prep, h2d, kernel, d2h) of the two twins in one run, the ratio the
            # API comparison quotes: their host work is the same (subwarp/opencl_call.py);
            # 30 passes: the median of five 1m calls (~1 ms each) moved by 0.1-0.3 ms run to run
            {"name": "twins-e2e", "datasets": ["equal-512@262144", "1m"],
             "backends": ["cuda-subwarp-f64rescue", "opencl-subwarp-f64rescue"],
             "options": {"chunking": "merged", "opencl-device": "NVIDIA", "repeat": 30,
                         "sample-pairs": 200}},
            {"name": "twins-profile", "workload": "profile", "datasets": ["proteins-2e8"],
             "backends": ["profile-cuda-warp", "profile-opencl-warp"],
             "options": {"model": ["random-M400", "random-M1200"], "kind": "ssv,msv,vf",
                         "opencl-device": "NVIDIA", "max-time": 2}}]},
    "peak": {
        # The float64 reference of 1024^2-cell pairs is slow: 200 sampled pairs per set.
        "about": "cuda-subwarp (auto) kernel-only curve on equal-length sets 32..1024",
        "steps": [{"name": "peak", "datasets": _peak_sets(), "backends": ["cuda-subwarp"],
                   "options": {"repeat": 3, "sample-pairs": 200}}]},
    "exp": {
        "about": "cuda-subwarp (per-thread power-of-two exponents, no float64 recompute), "
                 "-exp-long (exponents over 256 only) and cuda-subwarp-f64rescue (today's float64 "
                 "recompute) on equal-length sets "
                 "32..1024 and on 10s, 1m",
        "steps": [
            {"name": "exp-peak",
             "datasets": [f"equal-{L}@{min(max(8_000_000_000 // (L * L), 65536), 1_000_000)}"
                          for L in (32, 64, 128, 256, 512, 896, 1024)],
             "backends": ["cuda-subwarp", "cuda-subwarp-exp-long", "cuda-subwarp-f64rescue"],
             "options": {"repeat": 3, "sample-pairs": 200}},
            {"name": "exp-real", "datasets": ["10s", "1m"],
             "backends": ["cuda-subwarp", "cuda-subwarp-exp-long", "cuda-subwarp-f64rescue"],
             "options": {"chunking": "merged", "max-time": 2}}]},
    "peak-variants": {
        "about": "every cuda-subwarp variant on equal-128 and equal-512",
        "steps": [{"name": "peak-variants", "datasets": ["equal-128@480000", "equal-512@30000"],
                   "backends": ["cuda-subwarp*"], "options": {"repeat": 3, "sample-pairs": 200}}]},
    "e2e": {
        # ~5 min on an H100, mostly generating the NA12878-sized pieces twice (warm-up + timed).
        "about": "cuda-subwarp end to end on 10s, 1m and the NA12878-sized chunk set (28 "
                 "generated pieces of ~2e6 pairs, 2000 sampled pairs checked per piece)",
        "steps": [
            {"name": "e2e", "datasets": ["10s", "1m"],
             "backends": ["cuda-subwarp", "cuda-subwarp-nostreams"],
             "options": {"chunking": "merged", "max-time": 3}},
            {"name": "e2e-na12878", "datasets": ["chunks-na12878"], "backends": ["cuda-subwarp"],
             "options": {"chunking": "merged", "repeat": 1}}]},
    "peer": {
        # gpuPairHMM is one process per pass: merged chunking only (original is refused).
        "about": "cuda-subwarp beside the gpuPairHMM peer on 10s, 1m and equal-length sets "
                 "32..1024, kernel to kernel (its kernels timed by Nsight Compute) and end to end "
                 "(its own batch time a stage of its own); `hmmbench report FILE --against "
                 "peer-gpupairhmm` shows the ratios; cuda-subwarp's 110 per-region calls of 1m",
        "steps": [
            {"name": "peer-real", "datasets": ["10s", "1m"],
             "backends": ["cuda-subwarp", "cuda-subwarp-f64rescue", "peer-gpupairhmm"],
             "options": {"chunking": "merged", "max-time": 3}},
            {"name": "peer-peak", "datasets": _peak_sets(PEAK_LENGTHS, scale=4),
             "backends": ["cuda-subwarp", "cuda-subwarp-exp-above[exp_above=256]",
                          "peer-gpupairhmm"],
             "options": {"chunking": "merged", "repeat": 5, "sample-pairs": 200}},
            {"name": "subwarp-original", "datasets": ["1m"], "backends": ["cuda-subwarp"],
             "options": {"chunking": "original", "max-time": 3}}]},
    "subwarp-variants": {
        "about": "every cuda-subwarp variant end to end on 10s and 1m, merged",
        "steps": [{"name": "subwarp-variants", "datasets": ["10s", "1m"],
                   "backends": ["cuda-subwarp*"],
                   "options": {"chunking": "merged", "max-time": 2}}]},
    "cuda-real-sets": {
        "about": "the CUDA Ren families (inter, intra, warp, multi-warp) on tiny, 10s and 1m, "
                 "one launch per batch",
        "steps": [{"name": "cuda-real-sets", "datasets": ["tiny", "10s", "1m"],
                   "backends": ["cuda-[imw]*"], "options": {"repeat": 2}}]},
    "cuda-128x256": {
        "about": "every CUDA backend on 10^6 pairs of 128 x 256 (Ren 2016 Table I set 8), one "
                 "merged launch per chunk",
        "steps": [{"name": "cuda-128x256", "datasets": ["ren16-t1.8@1000000"],
                   "backends": ["cuda-*"], "options": {"chunking": "merged", "repeat": 2}}]},
    **_PROFILE,
    "profile": {
        "about": "HMMER3 filters, every part in order: " + ", ".join(_PROFILE),
        "steps": [step for part in _PROFILE.values() for step in part["steps"]]},
    "profile-e2e": _PROFILE_E2E,
    "profile-many": _PROFILE_MANY,
    "profile-batch": _PROFILE_BATCH,
    "subwarp-tuning": _SUBWARP_TUNING,
    "subwarp-calls": _SUBWARP_CALLS,
    "axes": _AXES,
    "scaling-1gpu": _SCALING_1GPU,
    "scaling-2gpu": _scaling("1,2", "2gpu"),
    "scaling-4gpu": _scaling("1,2,4", "4gpu", {"sample-pairs": 200}),
    "gate-gpu": _GATE_GPU,
    "cpu-opencl": {
        "about": "the NumPy references and every OpenCL backend on a CPU: Intel's runtime and "
                 "PoCL, 1m and 10s, both chunkings (results/cpu-2core/)",
        "steps": [
            {"name": "intel-opencl", "datasets": ["1m", "10s"],
             "backends": ["numpy", "numpy-f32", "opencl-*"],
             "options": {"chunking": ["original", "merged"], "opencl-device": "Intel",
                         "max-time": 3}},
            {"name": "pocl-opencl", "datasets": ["1m", "10s"],
             "backends": ["numpy-f32", "opencl-*"],
             "options": {"chunking": ["original", "merged"], "opencl-device": "Portable",
                         "max-time": 3}}]},
    "smoke": {
        "about": "a few seconds on any machine: the NumPy backends of both workloads on "
                 "generated data (the suite machinery's own test)",
        "steps": [
            {"name": "smoke-pairhmm", "datasets": ["equal-32@64"],
             "backends": ["numpy", "numpy-f32"], "options": {"repeat": 1}},
            {"name": "smoke-profile", "workload": "profile", "datasets": ["proteins-2e4"],
             "backends": ["profile-numpy", "profile-pyhmmer"],
             "options": {"model": "PF02826", "kind": "ssv,msv", "repeat": 1}}]},
}
