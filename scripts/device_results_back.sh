#!/usr/bin/env bash
# Issue 13 point 4 on the GPU machine (session 12): a multi-chunk cuda-subwarp call copies each
# chunk's results back after its own kernels and moves them into its array while later chunks
# run (before: one copy of the whole output after the last chunk). Parts:
#   pytest    the CUDA sub-warp tests (chunked calls against the float64 reference)
#   chunks    hmmbench run -d chunks@5e6 -b cuda-subwarp -b cuda-subwarp-exp-all --chunking merged
#   na12878   hmmbench run -d chunks-na12878 -b cuda-subwarp --chunking merged --repeat 1 (~3.5 min)
#   merged    hmmbench run -d 10s -d 1m -b cuda-subwarp --chunking merged --max-time 3
#   timeline  scripts/subwarp_pipeline_timeline.py on chunks@5e6's first piece (2M pairs)
#   short     the peak sets of short pairs, whose chunks hold up to 4x more pairs since session 12:
#             hmmbench run -d equal-32@4000000 -d equal-64@1953125 -d equal-128@488281
#             -b cuda-subwarp --chunking merged --repeat 5 --sample-pairs 200
# From the repo root there, carrying .device and .data:
#   source .device/env.sh && bash scripts/device_results_back.sh PART...
source "$(dirname "$0")/device_common.sh" results-back "pytest chunks na12878 merged timeline" "$@"
subwarp_precompile cuda-subwarp cuda-subwarp-exp-all
[[ $parts == *" pytest "* ]] && subwarp_pytest
run=(python3 -m hmmbench run)
[[ $parts == *" chunks "* ]] && step chunks "${run[@]}" -d chunks@5e6 -b cuda-subwarp \
    -b cuda-subwarp-exp-all --chunking merged --json "$out/subwarp-results-back-chunks5e6.json"
[[ $parts == *" merged "* ]] && step merged "${run[@]}" -d 10s -d 1m -b cuda-subwarp \
    --chunking merged --max-time 3 --json "$out/subwarp-results-back-merged.json"
[[ $parts == *" timeline "* ]] && step timeline python3 scripts/subwarp_pipeline_timeline.py \
    --set chunks@5000000 --piece 0 --calls 3 --rounds 3 \
    --json "$out/subwarp-timeline-results-back.json"
[[ $parts == *" na12878 "* ]] && step na12878 "${run[@]}" -d chunks-na12878 -b cuda-subwarp \
    --chunking merged --repeat 1 --json "$out/subwarp-results-back-na12878.json"
[[ $parts == *" short "* ]] && step short "${run[@]}" -d equal-32@4000000 -d equal-64@1953125 \
    -d equal-128@488281 -b cuda-subwarp --chunking merged --repeat 5 --sample-pairs 200 \
    --json "$out/subwarp-short-chunks-peak.json"
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv 2>&1 | tee -a "$log"
exit "$status"
