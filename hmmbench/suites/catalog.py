"""The named suites, as data: each step is one ``hmmbench run`` (datasets x backends x options)
writing ``<out>/<step name>.json``. These are the studies whose files sit in ``results/<gpu>/``
(each file's ``command`` field holds the exact command line); ``hmmbench suite run NAME
--dry-run`` prints them.

A new suite is one more entry here: {"about": ..., "steps": [{"name", "datasets", "backends",
"options", "workload"}, ...]}; tests/test_suites.py checks that every step parses, that its
datasets resolve and that its backends exist.
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
    (H100, session 19: results/h100/subwarp-tail-sizes.json). Shorter sets keep their size: they
    gain nothing from it and gpuPairHMM garbles its output file beyond ~1e6 pairs."""
    def pairs(L: int) -> int:
        s = scale if L >= 256 else 1
        return min(max(s * 8_000_000_000 // (L * L), s * 65536), 4_000_000)
    return [f"equal-{L}@{pairs(L)}" for L in lengths]


#: the peak curve's read lengths (issue 13's table and the bins' edges between)
PEAK_LENGTHS = (32, 64, 128, 256, 384, 512, 640, 768, 896, 1024)



def _twin_peak_sets() -> list:
    """The peak curve's sets at L = 64, 128, 256, 512, 1024 (the twins' head to head)."""
    return [s for s in _peak_sets() if int(s.split("-")[1].split("@")[0]) in (64, 128, 256, 512,
                                                                               1024)]


#: every family that exists in both APIs (issue 4), on NVIDIA's OpenCL beside CUDA
_TWINS = ["cuda-inter-*", "opencl-inter-*", "cuda-intra-*", "opencl-intra-*", "cuda-warp",
          "opencl-warp", "cuda-multiwarp", "opencl-multiwarp"]
_RANDOM = ["random-M100", "random-M400", "random-M1200", "random-M2400"]

#: the parts of the HMMER3 filter study (issue 6); "profile" runs them in this order, each its
#: own file, so that a part cut short by a time limit loses only itself
_PROFILE = {
    # Model-size curve, kernel GCUPS, on a generated Swiss-Prot-sized database (2e8 residues,
    # ~557k proteins); every CUDA profile backend but the task-parallel one (profile-task).
    # The NumPy reference cross-checks a deterministic sample of the sequences.
    "profile-curve": {
        "about": "HMMER3 filters over model sizes 100..2400 on proteins-2e8, CUDA warp kernels",
        "steps": [{"name": "profile-curve", "workload": "profile", "datasets": ["proteins-2e8"],
                   "backends": ["profile-cuda-[!t]*"],
                   "options": {"model": [f"random-M{m}" for m in (100, 200, 400, 800, 1200, 1600,
                                                                  2400)] + ["LuxC"],
                               "kind": "ssv,msv,vf", "max-time": 2}}]},
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

#: issue 14: the profile workload end to end on the GPU (scripts/device_profile_e2e.sh runs the
#: same steps after the CUDA tests): one run per step, the database resident across its cells
_PROFILE_E2E_KINDS = "ssv,msv,vf,pipeline"
_PROFILE_E2E = {
    "about": "HMMER3 search end to end: resident proteins-2e8, calibrated query-M100/400/1200 x "
             "ssv,msv,vf,pipeline on profile-cuda-warp beside hmmsearch (every host core), and "
             "the RREFam sweep [issue 14]",
    "steps": [
        {"name": "e2e", "workload": "profile", "datasets": ["proteins-2e8"],
         "backends": ["profile-cuda-warp", "profile-hmmsearch"],
         "options": {"model": ["query-M100", "query-M400", "query-M1200"],
                     "kind": _PROFILE_E2E_KINDS, "max-time": 2}},
        {"name": "sweep", "workload": "profile", "datasets": ["proteins-2e8"],
         "backends": ["profile-cuda-warp"],
         "options": {"model": "RREFam", "kind": _PROFILE_E2E_KINDS, "max-time": 1}},
        {"name": "sweep-peer", "workload": "profile", "datasets": ["proteins-2e8"],
         "backends": ["profile-hmmsearch"],
         "options": {"model": "RREFam", "kind": "pipeline", "repeat": 1}}]}

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
                 "x 10^6 [issue 4]; the ratio table: scripts/api_ratios.py on the three files",
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
                 "equal-length sets 64..1024 and 1m merged, profile-opencl-warp "
                 "vs profile-cuda-warp on proteins-2e8 (M = 400, 1200) [issue 16]; the ratio "
                 "table and the compiler evidence: scripts/device_twins.sh",
        "steps": [
            {"name": "twins-peak", "datasets": _twin_peak_sets(),
             "backends": ["cuda-subwarp-f64rescue", "opencl-subwarp-f64rescue"],
             "options": {"opencl-device": "NVIDIA", "repeat": 3, "sample-pairs": 200}},
            {"name": "twins-1m", "datasets": ["1m"],
             "backends": ["cuda-subwarp-f64rescue", "opencl-subwarp-f64rescue"],
             "options": {"chunking": "merged", "opencl-device": "NVIDIA", "max-time": 2}},
            {"name": "twins-profile", "workload": "profile", "datasets": ["proteins-2e8"],
             "backends": ["profile-cuda-warp", "profile-opencl-warp"],
             "options": {"model": ["random-M400", "random-M1200"], "kind": "ssv,msv,vf",
                         "opencl-device": "NVIDIA", "max-time": 2}}]},
    "peak": {
        # The float64 reference of 1024^2-cell pairs is slow: 200 sampled pairs per set.
        "about": "cuda-subwarp (auto) kernel-only curve on equal-length sets 32..1024 [issue 5]",
        "steps": [{"name": "peak", "datasets": _peak_sets(), "backends": ["cuda-subwarp"],
                   "options": {"repeat": 3, "sample-pairs": 200}}]},
    "exp": {
        "about": "cuda-subwarp (per-thread power-of-two exponents, no float64 recompute), "
                 "-exp-long (exponents over 256 only) and cuda-subwarp-f64rescue (today's float64 "
                 "recompute) on equal-length sets "
                 "32..1024 and on 10s, 1m [issue 13 point 2] (scripts/device_exp.sh)",
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
        "about": "every cuda-subwarp variant on equal-128 and equal-512 [issue 5]",
        "steps": [{"name": "peak-variants", "datasets": ["equal-128@480000", "equal-512@30000"],
                   "backends": ["cuda-subwarp*"], "options": {"repeat": 3, "sample-pairs": 200}}]},
    "e2e": {
        # ~5 min on an H100, mostly generating the NA12878-sized pieces twice (warm-up + timed).
        "about": "cuda-subwarp end to end on 10s, 1m and the NA12878-sized chunk set (28 "
                 "generated pieces of ~2e6 pairs, 2000 sampled pairs checked per piece) [issue 5]",
        "steps": [
            {"name": "e2e", "datasets": ["10s", "1m"],
             "backends": ["cuda-subwarp", "cuda-subwarp-nostreams"],
             "options": {"chunking": "merged", "max-time": 3}},
            {"name": "e2e-na12878", "datasets": ["chunks-na12878"], "backends": ["cuda-subwarp"],
             "options": {"chunking": "merged", "repeat": 1}}]},
    "peer": {
        # gpuPairHMM is one process per pass: merged chunking only (original is refused).
        "about": "cuda-subwarp beside the gpuPairHMM peer (its own batch time as kernel, process "
                 "wall as total) on 10s, 1m and the issue's equal-length sets; cuda-subwarp's "
                 "110 per-region calls of 1m [issue 13]",
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
        "about": "every cuda-subwarp variant end to end on 10s and 1m, merged "
                 "(scripts/device_subwarp.sh tool)",
        "steps": [{"name": "subwarp-variants", "datasets": ["10s", "1m"],
                   "backends": ["cuda-subwarp*"],
                   "options": {"chunking": "merged", "max-time": 2}}]},
    "cuda-real-sets": {
        "about": "the CUDA Ren families (inter, intra, warp, multi-warp) on tiny, 10s and 1m, "
                 "one launch per batch (scripts/device_cuda.sh runner)",
        "steps": [{"name": "cuda-real-sets", "datasets": ["tiny", "10s", "1m"],
                   "backends": ["cuda-[imw]*"], "options": {"repeat": 2}}]},
    "cuda-128x256": {
        "about": "every CUDA backend on 10^6 pairs of 128 x 256 (Ren 2016 Table I set 8), one "
                 "merged launch per chunk (scripts/device_cuda.sh runner-synth)",
        "steps": [{"name": "cuda-128x256", "datasets": ["ren16-t1.8@1000000"],
                   "backends": ["cuda-*"], "options": {"chunking": "merged", "repeat": 2}}]},
    **_PROFILE,
    "profile": {
        "about": "HMMER3 filters, every part in order: " + ", ".join(_PROFILE) + " [issue 6]",
        "steps": [step for part in _PROFILE.values() for step in part["steps"]]},
    "profile-e2e": _PROFILE_E2E,
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
