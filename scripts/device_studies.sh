#!/usr/bin/env bash
# The papers' studies, run with the tool itself on the GPU machine; each study writes the result JSON
# that hmmbench wrote into $OUT (copied afterwards to results/<gpu>/). Usage, from the repo root there:
#   source .device/env.sh && bash scripts/device_studies.sh STUDY[,STUDY...]
# with .device and .data (a git-ignored copy of ../shared/data/pairhmm) carried along.
# Studies:
#   tiles      inter-task tile sweep on Ren 2018 Table 1 (6 equal-length sets, 10^6 pairs)  [Fig. 8]
#   table3     intra-task, warp and multi-warp families on Ren 2018 Table 3 (26 sets)       [Fig. 9]
#   smallcount inter tile=4 vs intra naive vs multi-warp on Ren 2016 Table I at 100/1000/10000 pairs
#   chunking   every CUDA family on the real chunks of 1m, one launch per chunk vs merged  [Table 6]
#   apis       CUDA and OpenCL twins side by side: tiny, 10s, 1m (both chunkings), 128x256 x 10^6,
#              and the OpenCL/CUDA kernel-time ratio table                               [issue 4]
#   peak       cuda-subwarp (auto) kernel-only curve on equal-length sets 32..1024          [issue 5]
#   peak-variants  every cuda-subwarp variant on equal-128 and equal-512                      [issue 5]
#   e2e        cuda-subwarp end to end on 10s, 1m and the NA12878-sized chunk set            [issue 5]
#   profile    HMMER3 filters: model-size curve on a Swiss-Prot-sized database (2e8 residues), CUDA
#              backends; peers and every kind/backend on the proteome (parts: profile-curve,
#              profile-proteome, profile-peers, profile-task)                              [issue 6]
set -uo pipefail
export HMMBENCH_DATA_PATH="${HMMBENCH_DATA_PATH:-$PWD/.data/pairhmm}"
export PYTHONUNBUFFERED=1
out="${OUT:-results/runs}"
mkdir -p "$out"
log="$out/studies.log"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv >>"$log" 2>&1

hb() {  # hb NAME ARGS...: one hmmbench run, its JSON in $out/NAME.json, its report in the log
    local name=$1; shift
    echo "=== $name: hmmbench run $* ($(date -u +%T))" | tee -a "$log"
    python3 -m hmmbench run "$@" --json "$out/$name.json" >>"$log" 2>&1
    echo "=== $name: exit $? ($(date -u +%T))" | tee -a "$log"
}

sets() {  # sets PREFIX FIRST LAST SUFFIX: -d PREFIX<i>SUFFIX for i in FIRST..LAST
    local i; for i in $(seq "$2" "$3"); do printf -- '-d %s%s%s ' "$1" "$i" "$4"; done
}

for study in ${1//,/ }; do
    case $study in
    tiles)
        hb tiles $(sets ren18-t1. 1 6 @1e6) -b 'cuda-inter-naive' -b 'cuda-inter-tile?' --repeat 3
        # The interleaved layout's prep is costly; its kernels are timed on the largest set only.
        hb tiles-sorted -d ren18-t1.6@1e6 -b 'cuda-inter-*-sorted' --repeat 3 ;;
    table3)
        hb table3 $(sets ren18-t3. 1 26 @1e5) -d ren18-t3.26@1e6 \
            -b cuda-intra-naive -b cuda-intra-tile2 -b cuda-warp -b cuda-multiwarp -b cuda-warp-tile4 \
            --repeat 3 ;;
    smallcount)
        hb smallcount $(sets ren16-t1. 1 8 @100) $(sets ren16-t1. 1 8 @1000) $(sets ren16-t1. 1 8 @10000) \
            -b cuda-inter-tile4 -b cuda-intra-naive -b cuda-multiwarp -b cuda-subwarp --max-time 2 ;;
    chunking)
        hb chunking -d 1m --chunking original --chunking merged -b 'cuda-inter-*' -b 'cuda-intra-*' \
            -b cuda-warp -b cuda-multiwarp -b cuda-warp-tile4 -b cuda-subwarp --max-time 2 ;;
    apis)
        # Every family that exists in both APIs, side by side; then the ratio table.
        twins=(-b 'cuda-inter-*' -b 'opencl-inter-*' -b 'cuda-intra-*' -b 'opencl-intra-*'
               -b cuda-warp -b opencl-warp -b cuda-multiwarp -b opencl-multiwarp --opencl-device NVIDIA)
        hb apis-merged -d tiny -d 10s -d 1m --chunking merged "${twins[@]}" --max-time 1
        hb apis-original -d 10s -d 1m --chunking original "${twins[@]}" --max-time 1
        hb apis-128x256 -d ren16-t1.8@1e6 "${twins[@]}" --repeat 3
        python3 scripts/api_ratios.py "$out"/apis-{original,merged,128x256}.json 2>&1 | tee -a "$log" ;;
    peak)
        # Kernel-only curve of the auto backend: 8e9 cells per length, but at least 65536 pairs
        # (long reads: enough groups to fill the GPU) and at most 4e6; the cross-check on 200
        # sampled pairs per set (the float64 reference of 1024^2-cell pairs is slow).
        hb peak $(for L in 32 64 128 192 256 384 448 512 768 896 1024; do
                      n=$(( 8000000000 / (L * L) )); n=$(( n < 65536 ? 65536 : n > 4000000 ? 4000000 : n ))
                      printf -- '-d equal-%s@%s ' $L $n
                  done) -b cuda-subwarp --repeat 3 --sample-pairs 200 ;;
    peak-variants)
        hb peak-variants -d equal-128@480000 -d equal-512@30000 -b 'cuda-subwarp*' --repeat 3 \
            --sample-pairs 200 ;;
    e2e)
        # 10s and 1m (whole-set cross-check) and the NA12878-sized lazy set (28 generated pieces of
        # ~2e6 pairs, one timed run() each; 2000 sampled pairs per piece checked). ~5 min on an
        # H100, mostly generating the pieces twice (warm-up + timed pass): run it alone in a call.
        hb e2e -d 10s -d 1m --chunking merged -b cuda-subwarp -b cuda-subwarp-nostreams --max-time 3
        hb e2e-na12878 -d chunks-na12878 --chunking merged -b cuda-subwarp --repeat 1 ;;
    profile|profile-curve|profile-proteome|profile-peers|profile-task)
        # HMMER3 filters [issue 6]; 'profile' runs the four parts in this order (each writes its
        # own JSON, so a part cut short by the time limit loses only itself). About 8 minutes.
        # Model-size curve, kernel GCUPS, on a generated Swiss-Prot-sized database (2e8 residues,
        # ~557k proteins, generated once per hmmbench run, ~8 s). The NumPy reference is slow:
        # those cells are cross-checked on a deterministic sample (a per-kind cell budget, at
        # most 5,000 sequences; the report says "checked a sample of N sequences").
        # 'profile-cuda-[!t]*': every CUDA profile backend but the task-parallel one (last part).
        curve=""; for M in 100 200 400 800 1200 1600 2400; do curve="$curve --model random-M$M"; done
        [[ $study == profile || $study == profile-curve ]] &&
            hb profile-curve --workload profile -d proteins-2e8 $curve --model LuxC --kind ssv,msv,vf \
                -b 'profile-cuda-[!t]*' --max-time 2
        # Every kind and backend on the proteome (profile-numpy itself is left out as a timed
        # backend, its Forward takes 20-45 s per pass; it still cross-checks every row).
        [[ $study == profile || $study == profile-proteome ]] &&
            hb profile-proteome --workload profile -d proteome --model PF02826 --model LuxC \
                --kind ssv,msv,vf,viterbi,forward,pipeline -b profile-pyhmmer -b profile-opencl-task \
                -b 'profile-cuda-*' -b profile-pyhmmer-pipeline -b profile-hmmsearch \
                --opencl-device NVIDIA --max-time 2
        # The CPU peers on the full 2e8 database would take minutes per model: they are timed on
        # the proteome (682,583 residues). The whole-pipeline peers need calibrated models: their
        # model-size curve uses query-M models (pyhmmer Builder, same sizes).
        peers=""; for M in 100 400 1200 2400; do peers="$peers --model query-M$M"; done
        [[ $study == profile || $study == profile-peers ]] &&
            hb profile-peers --workload profile -d proteome $peers --kind ssv,msv,pipeline -b profile-pyhmmer \
                -b profile-pyhmmer-pipeline -b profile-hmmsearch -b 'profile-cuda-[!t]*' --max-time 2
        # The task-parallel kernels last (one thread per sequence: 0.03-0.08 TCUPS SSV/MSV and
        # ~0.005 Viterbi filter, so a pass over 2e8 residues at M = 2400 would take 2 minutes):
        # a tenth of the database (2e7 residues, same generator) and four model sizes.
        task_curve=""; for M in 100 400 1200 2400; do task_curve="$task_curve --model random-M$M"; done
        [[ $study == profile || $study == profile-task ]] &&
            hb profile-task --workload profile -d proteins-2e7 $task_curve --kind ssv,msv,vf \
                -b profile-cuda-task --max-time 2
        ;;
    *) echo "unknown study '$study'" | tee -a "$log" ;;
    esac
done
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv >>"$log" 2>&1
