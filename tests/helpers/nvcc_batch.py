"""Many specializations of one CUDA kernel source (each a set of ``-D`` defines) compiled by one
nvcc call, for the compile checks: a generated translation unit includes the source once per
specialization, each time in a namespace of its own, after ``#undef`` of every macro the source
and its headers name and ``#define`` of that specialization's values, with the kernel and its
``extern __shared__`` array renamed (``extern "C"`` names and shared arrays share one scope).
The front end (the CUDA headers, about half of a call's CPU time) then runs once instead of once
per specialization; ptxas ``-v`` reports every renamed entry apart, with the registers and spills
of a build of that specialization alone (the test compares one against ``glue.nvcc_cubin``)."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

from hmmbench.apis import cuda as glue

_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
_MACRO = re.compile(r"^\s*#\s*(?:define|undef|ifdef|ifndef)\s+([A-Za-z_]\w*)", re.M)


def sources(source_name: str) -> list[Path]:
    """``kernels_cuda/<source_name>`` and every quoted header it includes, found the way nvcc
    finds them (``glue.include_dirs``)."""
    dirs = [Path(d) for d in glue.include_dirs(source_name)]
    todo, seen = [Path(glue.kernel_dir()) / source_name], []
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.append(path)
        for name in _INCLUDE.findall(path.read_text()):
            todo += [d / name for d in dirs if (d / name).is_file()][:1]
    return seen


def translation_unit(source_name: str, specs: list[dict], renamed: tuple[str, ...],
                     first: int = 0) -> str:
    """One ``.cu`` holding specialization ``first + i`` of ``specs`` as namespace ``spec_<n>``,
    each name of ``renamed`` (the kernel, its shared array) suffixed ``_<n>``."""
    names = set(renamed)
    for path in sources(source_name):
        names |= set(_MACRO.findall(path.read_text()))
    for d in specs:
        names |= set(d)
    undef = "".join(f"#undef {n}\n" for n in sorted(names))
    main = Path(glue.kernel_dir()) / source_name
    parts = []
    for i, d in enumerate(specs, first):
        parts.append(undef)
        parts += [f"#define {f[2:].replace('=', ' ', 1)}\n" for f in glue.define_flags(d)]
        parts += [f"#define {n} {n}_{i}\n" for n in renamed]
        parts.append(f'namespace spec_{i} {{\n#include "{main}"\n}}\n')
    return "".join(parts)


def compile_together(source_name: str, specs: list[dict], renamed: tuple[str, ...], kernel: str,
                     folder: Path, first: int = 0, arch: str = "sm_90"):
    """nvcc of ``translation_unit`` to a cubin with ``glue.nvcc_cubin``'s options; returns the
    CompletedProcess and, per specialization, the part of ptxas' ``-v`` log about its
    ``kernel`` (renamed) entry (None where the log has none)."""
    cu = folder / f"specs_{first}.cu"
    cu.write_text(translation_unit(source_name, specs, renamed, first))
    proc = subprocess.run(["nvcc", "-cubin", f"-arch={arch}", *glue.BASE_OPTIONS, "-Xptxas", "-v",
                           *(f"-I{d}" for d in glue.include_dirs(source_name)), str(cu), "-o",
                           str(folder / f"specs_{first}.cubin")], capture_output=True, text=True)
    entries = re.split(r"(?=ptxas info\s*: Compiling entry function ')", proc.stderr)
    logs = []
    for i in range(first, first + len(specs)):
        head = f"Compiling entry function '{kernel}_{i}'"
        logs.append(next((e for e in entries if head in e), None))
    return proc, logs
