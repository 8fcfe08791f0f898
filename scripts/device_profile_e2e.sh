#!/usr/bin/env bash
# Issue 14 on the GPU machine: the profile workload end to end. Usage, from the repo root there
# (with .device and .whl carried; .whl holds the pyhmmer and hmmer cp312 wheels):
#   bash scripts/device_profile_e2e.sh [STEP,...]        (default: tests,e2e,sweep,sweep-peer)
# Steps (the runs are the steps of `hmmbench suite run profile-e2e`, hmmbench/suites/catalog.py),
# each its own result file under $OUT (a step cut short by a time limit loses only itself):
#   tests       the CUDA profile tests on the GPU, the pipeline among them (pass counts identical
#               to pyhmmer on every shipped model x the proteome, outcome within 0.01 nats)
#   e2e         proteins-2e8 x calibrated query-M100/400/1200 x ssv,msv,vf,pipeline on
#               profile-cuda-warp and profile-hmmsearch (--cpu = every host core: the peer takes
#               os.cpu_count()) in one run: the database is laid out and uploaded once
#   sweep       every RREFam model (10) x the same kinds on proteins-2e8, profile-cuda-warp
#   sweep-peer  hmmsearch on the same sweep (one timed pass per model)
#   host        (not by default) the host side of the pipeline cell and of the db load on this
#               host's CPU, stand-ins for the device (scripts/profile_host_time.py)
#   upload      (not by default) the db upload by staging threads 1,2,4,8 on the GPU
#               (scripts/device_upload_threads.py)
#   paths       (not by default) every way the database can reach the device: staged by chunk
#               size / buffers / threads, page-locked, pinned in place, pageable
#               (scripts/device_upload_paths.py)
#   timeline    (not by default) a pipeline cell's steps with host clocks and CUDA events: where
#               the GPU waits between kernels (scripts/profile_pipeline_timeline.py: query-M1200
#               and M400, $OUT/timeline.{txt,json})
#   batch       (not by default) the RREFam sweep's ssv,msv with --batch-models 1,2,4,8: is a
#               launch of several small models faster? (scripts/profile_batch_models.py:
#               $OUT/batch_models.md and one tarball of the runs, batch_models.tar.gz)
# Then scripts/profile_e2e_summary.py prints the first-search / further-search / hmmsearch table
# and the per-cell total/kernel shares into $OUT/summary.md.
set -uo pipefail
source .device/env.sh || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site2 .whl/pyhmmer-*.whl \
    .whl/hmmer-*.whl && export PYTHONPATH=$PYTHONPATH:/tmp/site2 PATH=$PATH:/tmp/site2/bin
chmod +x /tmp/site2/hmmer/data/bin/* 2>/dev/null
export PYTHONUNBUFFERED=1 HMMBENCH_CACHE_DIR=/tmp/hmmbench-cache
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
log="$OUT/e2e.log"
{ nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.total --format=csv; nproc;
  # transparent huge pages: page-locking a database of 2 MiB pages locks 512x fewer pages
  echo "THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>&1) defrag: $(cat /sys/kernel/mm/transparent_hugepage/defrag 2>&1)";
  grep -i AnonHugePages /proc/meminfo;
  python3 -c "from cpu_reference.profile.backends import HmmsearchPeer as H; print(H.executable(), H().cpus)"; } \
    | tee "$OUT/host.txt"

step_command() {  # the hmmbench run command of one step of the profile-e2e suite
    python3 -m hmmbench suite run profile-e2e --dry-run --out "$OUT" | grep -- "/$1.json\$"
}

steps=${1:-tests,e2e,sweep,sweep-peer}
for step in ${steps//,/ }; do
    case $step in
    tests)
        timeout 300 python3 -m pytest -q -x tests/test_profile_cuda.py 2>&1 | tail -15 \
            | tee "$OUT/pytest.log" ;;
    e2e|sweep|sweep-peer)
        cmd=$(step_command "$step")
        echo "=== $step: $cmd ($(date -u +%T))" | tee -a "$log"
        python3 -m $cmd >>"$log" 2>&1
        echo "=== $step: exit $? ($(date -u +%T))" | tee -a "$log" ;;
    host)
        timeout 300 python3 scripts/profile_host_time.py 2>&1 | tee "$OUT/host_time.txt" ;;
    upload)
        timeout 300 python3 scripts/device_upload_threads.py 2>&1 | tee "$OUT/upload_threads.txt" ;;
    paths)
        mkdir -p "$OUT/evidence"   # not a result file: the summary reads $OUT/*.json
        timeout 300 python3 scripts/device_upload_paths.py --json "$OUT/evidence/upload-paths.json" 2>&1 \
            | tee "$OUT/upload_paths.txt" ;;
    timeline)
        mkdir -p "$OUT/evidence"   # not a result file: the summary reads $OUT/*.json
        timeout 300 python3 scripts/profile_pipeline_timeline.py \
            --json "$OUT/evidence/timeline.json" 2>&1 | tee "$OUT/timeline.txt" ;;
    batch)
        timeout 580 python3 scripts/profile_batch_models.py --out "$OUT" 2>&1 \
            | tee "$OUT/batch_models.log" ;;
    *) echo "unknown step $step" | tee -a "$log" ;;
    esac
done
ls "$OUT"/*.json >/dev/null 2>&1 && python3 scripts/profile_e2e_summary.py "$OUT"/*.json \
    | tee "$OUT/summary.md"
