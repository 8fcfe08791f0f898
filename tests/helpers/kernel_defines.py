"""The ``#define``s of the kernels' shared headers (kernels_common/), read from the source: the
NumPy emulations of the kernels take their constants from here, so the two cannot drift apart.

``defines(header, **config)`` runs the header's conditionals (``#if``/``#ifdef``/``#ifndef``/
``#else``/``#endif``, ``#undef``) the way the compiler does with ``-D`` ``config``, and returns
the object-like macros it defines; ``value(header, name, **config)`` evaluates one of them as a
Python int or float (C's integer division, ``?:``, ``&&``/``||``/``!`` and hex floats)."""
from __future__ import annotations

import ast
import re

from helpers.paths import REPO

KERNELS_COMMON = REPO / "kernels_common"
_DIRECTIVE = re.compile(r"^\s*#\s*(\w+)\s*(.*?)\s*$")
_OBJECT_MACRO = re.compile(r"([A-Za-z_]\w*)(?!\()\s*(.*)$")
_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_HEX_FLOAT = re.compile(r"\b(0x[0-9a-fA-F.]+p[+-]?\d+)f?\b")
_FLOAT = re.compile(r"\b(\d+\.\d*(?:e[+-]?\d+)?|\d+e[+-]?\d+)f?\b", re.IGNORECASE)
_SIMPLE_PARENS = re.compile(r"\(\s*(-?[\w.]+)\s*\)")
_TERNARY = re.compile(r"\(([^()?:]+)\?([^()?:]+):([^()?:]+)\)")
_ALLOWED = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp,
            ast.Constant, ast.operator, ast.unaryop, ast.boolop, ast.cmpop)


def _evaluate(expr: str, table: dict, where: str):
    expr = re.sub(r"\bdefined\s*\(?\s*(\w+)\s*\)?", lambda m: "1" if m.group(1) in table else "0",
                  expr)
    for _ in range(50):                                   # expand macros to a fixed point
        new = re.sub(r"\b[A-Za-z_]\w*\b",
                     lambda m: f"({table[m.group(0)]})" if m.group(0) in table else m.group(0),
                     expr)
        if new == expr:
            break
        expr = new
    expr = _HEX_FLOAT.sub(lambda m: repr(float.fromhex(m.group(1))), expr)
    is_float = bool(_FLOAT.search(expr))
    expr = _FLOAT.sub(r"\1", expr)
    if not is_float:
        expr = expr.replace("/", "//")                    # C's integer division
    expr = expr.replace("&&", " and ").replace("||", " or ")
    expr = re.sub(r"!(?!=)", " not ", expr)
    while True:
        simpler = _TERNARY.sub(r"(\2 if \1 else \3)", _SIMPLE_PARENS.sub(r"\1", expr))
        if simpler == expr:
            break
        expr = simpler
    expr = re.sub(r"\b[A-Za-z_]\w*\b", lambda m: m.group(0) if m.group(0) in
                  ("and", "or", "not", "if", "else") else "0", expr)   # undefined: 0, as cpp
    tree = ast.parse(expr.strip(), mode="eval")
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED):
            raise ValueError(f"{where}: not a constant expression: {expr!r}")
    result = eval(compile(tree, where, "eval"))  # noqa: S307 - checked above: constants only
    return int(result) if isinstance(result, bool) else result


def defines(header: str, **config) -> dict:
    """{name: replacement text} after running ``kernels_common/<header>`` with ``-D`` config."""
    text = _COMMENT.sub(" ", (KERNELS_COMMON / header).read_text().replace("\\\n", " "))
    table = {k: str(v) for k, v in config.items()}
    stack: list = []                      # per open conditional: (taking now, some branch taken)
    for line in text.splitlines():
        m = _DIRECTIVE.match(line)
        if not m:
            continue
        word, rest = m.groups()
        active = all(s[0] for s in stack)
        if word in ("if", "ifdef", "ifndef"):
            if not active:
                stack.append((False, True))
                continue
            cond = (rest in table if word == "ifdef" else rest not in table if word == "ifndef"
                    else bool(_evaluate(rest, table, header)))
            stack.append((cond, cond))
        elif word == "elif":
            taken = stack[-1][1]
            outer = all(s[0] for s in stack[:-1])
            cond = outer and not taken and bool(_evaluate(rest, table, header))
            stack[-1] = (cond, taken or cond)
        elif word == "else":
            stack[-1] = (not stack[-1][1], True)
        elif word == "endif":
            stack.pop()
        elif active and word == "define":
            d = _OBJECT_MACRO.match(rest)
            if d:
                table[d.group(1)] = d.group(2).strip()
        elif active and word == "undef":
            table.pop(rest, None)
    return table


def value(header: str, name: str, **config):
    """The constant ``name`` of ``header`` (built with ``-D`` ``config``) as an int or float."""
    return _evaluate(name, defines(header, **config), f"{header}: {name}")
