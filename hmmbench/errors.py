"""User-facing errors: the CLI prints each as one line on stderr and exits with status 2."""
from __future__ import annotations

from typing import Optional


class UserError(Exception):
    """Bad input or an unknown name. ``str(err)`` is the whole message the user sees."""


class InputError(UserError):
    """A malformed input file, located by path and (1-based) line."""

    def __init__(self, path: str, line: Optional[int], message: str):
        self.path, self.line, self.message = str(path), line, message
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")


class UnknownName(UserError):
    """An unknown dataset or backend name; the message lists the valid ones."""

    def __init__(self, what: str, name: str, valid, hint: str = ""):
        valid = sorted(valid)
        shown = ", ".join(valid[:40]) + (" ..." if len(valid) > 40 else "")
        super().__init__(f"unknown {what} '{name}' (valid: {shown}){hint}")
