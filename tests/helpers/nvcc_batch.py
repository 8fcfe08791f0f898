"""Many specializations of one CUDA kernel source (each a set of ``-D`` defines) compiled by one
nvcc call, for the compile checks: a generated translation unit includes the source once per
specialization (its quoted headers written in place), each time in a namespace of its own,
after ``#undef`` of every macro the source
and its headers name and ``#define`` of that specialization's values (the system headers they
include once, before the namespaces), with the kernel and its
``extern __shared__`` array renamed (``extern "C"`` names and shared arrays share one scope).
The front end (the CUDA headers, about half of a call's CPU time) then runs once instead of once
per specialization; ptxas ``-v`` reports every renamed entry apart, with the registers and spills
of a build of that specialization alone (the test compares one against ``glue.nvcc_cubin``)."""
from __future__ import annotations

import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from hmmbench.apis import cuda as glue

_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
_SYSTEM_INCLUDE = re.compile(r'^\s*#\s*include\s*<[^>]+>', re.M)
_PRAGMA_ONCE = re.compile(r"^\s*#\s*pragma\s+once\b")
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


def inlined(source_name: str) -> str:
    """The source with its quoted headers written in place (found as nvcc finds them: beside
    the including file, then ``glue.include_dirs``), ``#pragma once`` dropped (each namespace
    needs the header again; include guards are undefined between specializations) and ``#line``
    marks, so nvcc's messages still name the file and line they are about."""
    dirs = [Path(d) for d in glue.include_dirs(source_name)]
    out: list[str] = []

    def put(path: Path) -> None:
        out.append(f'#line 1 "{path}"\n')
        for n, line in enumerate(path.read_text().splitlines(keepends=True), 1):
            m = _INCLUDE.match(line)
            found = [d / m.group(1) for d in (path.parent, *dirs)
                     if (d / m.group(1)).is_file()][:1] if m else []
            if found:
                put(found[0])
                out.append(f'#line {n + 1} "{path}"\n')
            elif _PRAGMA_ONCE.match(line):
                out.append("\n")
            else:
                out.append(line if line.endswith("\n") else line + "\n")
    put(Path(glue.kernel_dir()) / source_name)
    return "".join(out)


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
    text = inlined(source_name)
    # system headers first, outside every namespace (their guards then keep them out of the
    # namespaces: ``uint32_t`` declared in ``spec_0`` would be unknown in ``spec_1``)
    parts = list(dict.fromkeys(m.group(0).strip() + "\n" for path in sources(source_name)
                               for m in _SYSTEM_INCLUDE.finditer(path.read_text())))
    for i, d in enumerate(specs, first):
        parts.append(undef)
        parts += [f"#define {f[2:].replace('=', ' ', 1)}\n" for f in glue.define_flags(d)]
        parts += [f"#define {n} {n}_{i}\n" for n in renamed]
        parts.append(f"namespace spec_{i} {{\n{text}}}\n")
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


def compile_each(source_name: str, specs: list[dict], renamed: tuple[str, ...], kernel: str,
                 folder: Path) -> list:
    """``compile_together`` over ``specs`` in one call per CPU (run side by side): per
    specialization, ptxas' log of its ``kernel`` entry, or None where its call failed (the
    caller then builds it alone, for the failure's own message)."""
    n = os.cpu_count() or 2
    size = -(-len(specs) // n)
    folder.mkdir(parents=True, exist_ok=True)
    parts = [(lo, specs[lo:lo + size]) for lo in range(0, len(specs), size)]

    def build(part):
        lo, mine = part
        proc, logs = compile_together(source_name, mine, renamed, kernel, folder, first=lo)
        return [log if proc.returncode == 0 else None for log in logs]
    with ThreadPoolExecutor(max_workers=n) as pool:
        return [log for logs in pool.map(build, parts) for log in logs]
