"""Many specializations of one CUDA kernel source (each a set of ``-D`` defines) compiled by one
nvcc call, for the compile checks: a generated translation unit includes the source once per
specialization (its quoted headers written in place), each time in a namespace of its own,
after ``#undef`` of every macro the source
and its headers name and ``#define`` of that specialization's values (the system headers they
include once, before the namespaces), with the kernel and its
``extern __shared__`` array renamed (``extern "C"`` names and shared arrays share one scope).
The front end (the CUDA headers, about half of a call's CPU time) then runs once instead of once
per specialization; ptxas ``-v`` reports every renamed entry apart, with the registers and spills
of a build of that specialization alone (the test compares one against ``glue.nvcc_cubin``).
``compile_distinct`` runs ptxas once per distinct entry (specializations whose defines make
the same PTX for a kernel)."""
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


_ENTRY = re.compile(r"^\.visible \.entry (\w+)\(", re.M)
_COMMENT = re.compile(r"^\s*//.*\n?", re.M)


def _own_text(text: str, i: int, renamed: tuple[str, ...]) -> str:
    """PTX of specialization ``i`` with what names it as ``i`` taken out: its renamed symbols
    (plain and mangled in namespace ``spec_<i>``), its namespace, the numbers ptxas' input
    gives per function (branch labels, local depots), comments."""
    ns = f"spec_{i}"
    for n in renamed:
        text = text.replace(f"_ZN{len(ns)}{ns}{len(f'{n}_{i}')}{n}_{i}E", f"@{n}")
        text = re.sub(rf"\b{n}_{i}(?![0-9])", n, text)
    text = text.replace(f"_ZN{len(ns)}{ns}", "_ZN@")
    text = re.sub(r"\$L__BB\d+_", "$L__BB_", text)
    text = re.sub(r"__local_depot\d+", "__local_depot", text)
    return _COMMENT.sub("", text)


def compile_distinct(source_name: str, specs: list[dict], renamed: tuple[str, ...],
                     kernels: tuple[str, ...], folder: Path, first: int = 0,
                     arch: str = "sm_90"):
    """``compile_together`` with ptxas run once per distinct kernel: the translation unit to PTX
    (nvcc -ptx: the front end and cicc, as ``nvcc -cubin`` runs them), then nvcc's ptxas ``-v``
    on that PTX with each entry whose text, and the declarations of its
    specialization, equal an earlier one's but for its number left out (define sets that make
    the same code: the entry PTX ptxas compiles is the same, so are its registers and SASS).
    Returns the CompletedProcess of the step that failed, or ptxas', the cubin's path, and per
    (kernel, specialization) of ``kernels``: (the entry compiled for it, the part of ptxas' log
    about that entry, None where it has none)."""
    cu, ptx = folder / f"specs_{first}.cu", folder / f"specs_{first}.ptx"
    cubin = folder / f"specs_{first}.cubin"
    cu.write_text(translation_unit(source_name, specs, renamed, first))
    proc = subprocess.run(["nvcc", "-ptx", f"-arch={arch}", *glue.BASE_OPTIONS,
                           *(f"-I{d}" for d in glue.include_dirs(source_name)), str(cu), "-o",
                           str(ptx)], capture_output=True, text=True)
    if proc.returncode:
        return proc, cubin, {}
    text = ptx.read_text()
    starts = [m.start() for m in _ENTRY.finditer(text)]
    head = text[:starts[0]] if starts else text
    declared = {i: "".join(_own_text(line, i, renamed) for line in head.splitlines(True)
                           if f"spec_{i}" in line) for i in range(first, first + len(specs))}
    kept, twin = [], {}
    seen: dict = {}
    for a, b in zip(starts, starts[1:] + [len(text)]):
        name = _ENTRY.match(text, a).group(1)
        base, i = name.rsplit("_", 1)
        key = (base, _own_text(text[a:b], int(i), renamed), declared[int(i)])
        twin[name] = seen.setdefault(key, name)
        if twin[name] == name:
            kept.append(text[a:b])
    distinct = folder / f"specs_{first}.distinct.ptx"
    distinct.write_text(head + "".join(kept))
    proc = subprocess.run(["nvcc", "-cubin", f"-arch={arch}", *glue.BASE_OPTIONS, "-Xptxas",
                           "-v", str(distinct), "-o", str(cubin)], capture_output=True, text=True)
    parts = re.split(r"(?=ptxas info\s*: Compiling entry function ')", proc.stderr)
    entries = {}
    for i in range(first, first + len(specs)):
        for k in kernels:
            name = twin.get(f"{k}_{i}")
            head_line = f"Compiling entry function '{name}'"
            entries[k, i] = (name, next((p for p in parts if name and head_line in p), None))
    return proc, cubin, entries
