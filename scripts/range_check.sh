#!/usr/bin/env bash
# On a GPU: do the CUDA and OpenCL backends agree with the reference on reads of 1, 10^4
# and 10^5 bases, inside and past float64's range (docs/reliability.md), or refuse with a reason?
# Usage, from the repo root on the GPU machine (writes $OUT/range.json, or ./range.json):
#   source .device/env.sh && bash scripts/range_check.sh
# Passes when every backend's status is ok (with its past-range pairs counted) or unavailable.
set -euo pipefail
out="${OUT:-.}"
data="$(mktemp -d)/long.in"
python3 - "$data" <<'PY'
import sys
import numpy as np
rng = np.random.default_rng(12)
bases = lambda n: "".join(rng.choice(list("ACGT"), n))
def line(seq, q):
    n = len(seq)
    return f"{seq} {q * n} {'I' * n} {'I' * n} {'+' * n}"
hap1k, hap10k = bases(1000), bases(10_000)
pairs = [(bases(1), hap1k, "5"), (hap10k, hap10k, "I"), (bases(10_000), hap1k, "5"),
         (bases(100_000), hap1k, "5")]
with open(sys.argv[1], "w") as fh:
    fh.write("".join(f"1 1\n{line(r, q)}\n{h}\n" for r, h, q in pairs))
PY
python3 -m hmmbench run -d "$data" -b numpy -b 'cuda-*' -b 'opencl-*' --repeat 1 -q \
    --json "$out/range.json"
python3 - "$out/range.json" <<'PY'
import sys
from hmmbench import results
bad = 0
for r in results.load(sys.argv[1])["runs"]:
    good = r["status"] in ("ok", "unavailable")
    bad += not good
    print(f"{'  ' if good else '!!'} {r['backend']:28} {r['status']:12} "
          f"past-range {r.get('n_past_range', 0)}  {r['reason'][:90]}")
print("range check:", "PASS" if not bad else f"FAIL ({bad} backends)")
sys.exit(1 if bad else 0)
PY
