"""What several subcommands share: consoles, the workload option, the run configuration."""
from __future__ import annotations

import os
import sys

from ..apis import opencl
from ..cluster.scaling import of_document
from ..errors import UserError
from ..report import TerminalPrinter, format_names, get_printer, make_console


def given_files(*values) -> list:
    """The values of path options (``--dataset``, ``--model``...) that name existing files:
    the inputs an output path must never be."""
    out = []
    for v in values:
        for item in (v if isinstance(v, (list, tuple)) else [v]):
            if isinstance(item, str) and item and os.path.lexists(item):
                out.append(item)
    return out


def console(stderr: bool = False):
    """A rich console on stdout (or stderr): a terminal's width, else $COLUMNS, else wide
    enough for a log."""
    return make_console(sys.stderr if stderr else sys.stdout)


def terminal(stderr: bool = False):
    """The terminal printer on stdout (or stderr)."""
    return TerminalPrinter(console(stderr))


def add_format_option(parser, default="table", help_extra: str = "") -> None:
    parser.add_argument("--format", choices=format_names(), default=default,
                        help="the printer: table (rich, fitted to the terminal), markdown, csv, "
                             "json or html" + help_extra)


def printer(name: str):
    """The printer ``--format name`` picks, on stdout (table: the terminal printer)."""
    return terminal() if name == "table" else get_printer(name, sys.stdout)


def scaling_of(doc: dict):
    """A cluster document's scaling rows for the printers (None for other documents)."""
    return of_document(doc)


def add_workload_options(parser) -> None:
    parser.add_argument("--workload", default="pairhmm", help="workload (default: pairhmm)")
    parser.add_argument("--opencl-device", metavar="NAME", default=None,
                        help="OpenCL device for the opencl-* backends: a substring of "
                             "'platform / device' (default: $HMMBENCH_OPENCL_DEVICE, else a GPU)")


def select_opencl_device(spec: str) -> None:
    """Point the opencl-* backends at a device; an unknown name is a usage error (exit 2)."""
    os.environ[opencl.ENV_DEVICE] = spec
    try:
        opencl.choose_device(spec)
    except UserError:
        raise
    except Exception:  # noqa: BLE001 - no driver here: the backends say so in their reason
        pass
