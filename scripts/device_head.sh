#!/usr/bin/env bash
# Issue 13 point 4 on the GPU machine (session 15): the head of a multi-chunk call, i.e. what
# the GPU waits for before its first kernel (the first chunk's staging and upload), A/B'd in one
# process per setting with scripts/subwarp_pipeline_timeline.py on a 2M-pair piece of
# chunks@5e6 (values alternating, 3 rounds or SW_ROUNDS, 3 warm calls each). Parts:
#   bythread  the first chunk's arrays staged by a task per array piece (0) or per thread (1)
#   pieces    tasks per array of the first chunk (stream_pieces) 2, 4, 8, by thread
#   ramp      the first chunks at 1/2^n .. 1/2 of a chunk, n = 0..3, by thread
#   threads   staging threads 8, 12, 16, by thread
#   first     the first chunk streamed (each array uploaded once staged) or in one copy, by thread
#   check     (commit 3d2ea86 only) a multi-chunk call's input checks while its first chunk stages
#             or before it (by thread); dropped after it
#   switch    (commit 2ec8bf2 only) the GIL's switch interval during multi-chunk calls: 5 ms
#             (Python's), 0.5, 0.1 ms; dropped after it
#   pytest    the CUDA sub-warp tests and the host-call tests
#   e2e       hmmbench run -d chunks@5e6 and -d 10s -d 1m merged (cuda-subwarp as it is)
#   na12878   hmmbench run -d chunks-na12878 --repeat 1
#   original  1m as 110 region calls: one call at a time, and 4 / 8 / 16 in flight beside
#             cuda-subwarp-batched (as device_inflight.sh run batched; one tarball of JSONs)
# From the repo root there, carrying .device and .data:
#   source .device/env.sh && bash scripts/device_head.sh PART...
source "$(dirname "$0")/device_common.sh" head "bythread pieces ramp threads" "$@"
subwarp_precompile cuda-subwarp cuda-subwarp-batched
[[ $parts == *" pytest "* ]] && subwarp_pytest tests/test_cuda_subwarp.py \
    tests/test_subwarp_host_calls.py
tl() {  # NAME ARGS...: one timeline A/B, its per-round walls in the log
    local name=$1
    shift
    step "$name" python3 scripts/subwarp_pipeline_timeline.py --rounds "${SW_ROUNDS:-3}" --calls 3 \
        --json "$out/timeline-$name.json" "$@"
}
[[ $parts == *" bythread "* ]] && tl bythread --setting stream_by_thread=0,1
[[ $parts == *" pieces "* ]] && tl pieces --setting stream_pieces=2,4,8 --fixed stream_by_thread=1
[[ $parts == *" ramp "* ]] && tl ramp --setting ramp_chunks=0,1,2,3 --fixed stream_by_thread=1
[[ $parts == *" threads "* ]] && tl threads --setting prep_threads=8,12,16 \
    --fixed stream_by_thread=1
[[ $parts == *" first "* ]] && tl first --setting stream_first=1,0
run=(python3 -m hmmbench run)
[[ $parts == *" e2e "* ]] && step chunks "${run[@]}" -d chunks@5e6 -b cuda-subwarp \
    --chunking merged --json "$out/subwarp-head-chunks5e6.json" \
    && step merged "${run[@]}" -d 10s -d 1m -b cuda-subwarp --chunking merged --max-time 3 \
    --json "$out/subwarp-head-merged.json"
[[ $parts == *" na12878 "* ]] && step na12878 "${run[@]}" -d chunks-na12878 -b cuda-subwarp \
    --chunking merged --repeat 1 --json "$out/subwarp-head-na12878.json"
if [[ $parts == *" original "* ]]; then
    step original1 "${run[@]}" -d 1m -b cuda-subwarp --chunking original --in-flight 1 \
        --json "$out/subwarp-head-original.json"
    for n in 4 8 16; do
        step "batched$n" "${run[@]}" -d 1m -b cuda-subwarp -b cuda-subwarp-batched \
            --chunking original --in-flight "$n" --json "$out/batched$n.json"
    done
    # one tarball: the machine returns at most 8 files
    tar -czf "$out/original.tgz" -C "$out" subwarp-head-original.json batched4.json \
        batched8.json batched16.json && rm -f "$out"/batched*.json "$out/subwarp-head-original.json"
fi
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv 2>&1 | tee -a "$log"
exit "$status"
