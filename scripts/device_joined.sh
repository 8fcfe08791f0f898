#!/usr/bin/env bash
# Issue 13 point 4 on the GPU machine (session 16): the lazy sets' pieces joined into larger calls
# (`--chunking merged:N` with N past a 2M-pair piece), beside a call per piece, in one command
# per set. Parts:
#   chunks    chunks@5e6: merged (3 calls) and merged:5e6 (one call), --repeat 5
#   na12878   chunks-na12878: merged (28 calls) and merged:1e7 (7 calls of ~8M pairs), --repeat 1
#   merged    10s and 1m merged (each one call; unchanged code, for the same machine's figures)
# From the repo root there, carrying .device and .data:
#   source .device/env.sh && bash scripts/device_joined.sh PART...
source "$(dirname "$0")/device_common.sh" joined "chunks na12878 merged" "$@"
subwarp_precompile cuda-subwarp
run=(python3 -m hmmbench run -b cuda-subwarp)
[[ $parts == *" chunks "* ]] && step chunks "${run[@]}" -d chunks@5e6 --chunking merged \
    --chunking merged:5e6 --repeat 5 --json "$out/subwarp-joined-chunks5e6.json"
[[ $parts == *" merged "* ]] && step merged "${run[@]}" -d 10s -d 1m --chunking merged \
    --max-time 3 --json "$out/subwarp-joined-merged.json"
[[ $parts == *" na12878 "* ]] && step na12878 "${run[@]}" -d chunks-na12878 --chunking merged \
    --chunking merged:1e7 --repeat 1 --json "$out/subwarp-joined-na12878.json"
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu --format=csv 2>&1 | tee -a "$log"
exit "$status"
