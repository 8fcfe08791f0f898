"""Your own dataset: write pairs in hmmbench's block format from Python, then benchmark them by path.

A block-format file (``*.in``, the format of the shipped ``tiny``, ``10s`` and ``1m`` sets) is a
series of blocks -- say one per active region -- each a header line ``R H``, then R read lines
``bases base-quals ins-quals del-quals gap-continuation-quals`` (Phred+33, one character per base)
and H haplotype lines. Every read of a block is aligned to every haplotype of that block.

    python examples/custom_dataset.py [OUTDIR]      # writes OUTDIR/my_pairs.in and .json

``hmmbench run -d PATH`` takes any such file (or a GATK ``.txt`` test file) like a named set: it
loads and validates it (a bad line is reported with its file and line number), computes the
float64 reference once and cross-checks every backend against it.
"""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

BASES = np.array(list("ACGT"))


def phred(q: int, n: int) -> str:
    """n quality characters of Phred score q (Phred+33)."""
    return chr(33 + q) * n


def mutate(rng, hap: str, start: int, length: int) -> str:
    """A read taken from the haplotype, with about 2 % of its bases changed (sequencing errors)."""
    read = list(hap[start:start + length])
    for k in np.flatnonzero(rng.random(length) < 0.02):
        read[k] = rng.choice(BASES)
    return "".join(read)


def write_block_file(path: Path, seed: int = 7) -> int:
    """Three regions of 4 reads x 2 haplotypes each, plus one read that fits no haplotype at all;
    returns the number of pairs written."""
    rng = np.random.default_rng(seed)
    blocks = []
    for _ in range(3):
        ref = "".join(rng.choice(BASES, 120))
        alt = ref[:60] + ("A" if ref[60] != "A" else "C") + ref[61:]      # a SNP at position 60
        reads = [mutate(rng, [ref, alt][r % 2], int(rng.integers(0, 40)), 80) for r in range(4)]
        blocks.append((reads, [ref, alt], 10))
    # Every base a confident mismatch and every gap costly (gap continuation Q40): a likelihood
    # near 1e-190, far below float32's range even scaled by 2^120, so float32 backends must
    # recompute this pair in float64 (the 'fallback' column).
    blocks.append((["A" * 50], ["C" * 50], 40))
    with open(path, "w") as out:
        for reads, haps, gap_q in blocks:
            out.write(f"{len(reads)} {len(haps)}\n")
            for r in reads:
                out.write(f"{r} {phred(30, len(r))} {phred(45, len(r))} {phred(45, len(r))} "
                          f"{phred(gap_q, len(r))}\n")
            out.writelines(h + "\n" for h in haps)
    return sum(len(reads) * len(haps) for reads, haps, _ in blocks)


def main(outdir: str = ".") -> int:
    path = Path(outdir) / "my_pairs.in"
    results = path.with_suffix(".json")
    n_pairs = write_block_file(path)
    print(f"wrote {path}: {n_pairs} pairs")
    # The command line is hmmbench's public interface; `python -m hmmbench` is the same as
    # `hmmbench` on PATH.
    subprocess.run([sys.executable, "-m", "hmmbench", "run", "--dataset", str(path),
                    "--backend", "numpy-f32", "--repeat", "1", "--json", str(results), "--quiet"],
                   check=True)
    for run in json.loads(results.read_text())["runs"]:
        print(f"{run['dataset']}: {run['backend']} {run['status']}, {run['pairs']} pairs, "
              f"max error {run['max_abs_err']:.1e}, {run['n_fallback']} recomputed in float64")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
