"""``hmmbench list``: backends (available or why not), devices and datasets of a workload."""
from __future__ import annotations

from .common import add_workload_options, console


def add_parser(sub) -> None:
    sp = sub.add_parser("list", help="backends, devices and datasets")
    add_workload_options(sp)
    sp.set_defaults(func=run)


def run(args, workload) -> int:
    from rich.markup import escape
    from rich.table import Table
    from ..hostinfo import module_devices
    from ..registry import discover, families, probe
    out = console()
    t = Table(title=f"backends ({workload.name})", title_justify="left")
    for col in ("name", "api", "family", "precision", "available", "limits"):
        t.add_column(col, no_wrap=col != "available")
    for b in discover(workload.name):
        reason = probe(b).reason
        limits = ", ".join(f"{k}={v}" for k, v in vars(b.limits).items() if v is not None)
        t.add_row(b.name, b.api, b.family, b.precision,
                  "[green]yes[/green]" if reason is None else f"[yellow]no[/yellow]: {escape(reason)}",
                  limits or "-")
    out.print(t)
    fams = families(workload.name)
    if fams:
        ft = Table(title="backend families: parameter axes (hmmbench run -b FAMILY --axis "
                         "NAME=V1,V2)", title_justify="left")
        for col in ("family", "axes (allowed values, default)"):
            ft.add_column(col)
        for fam in fams.values():
            ft.add_row(fam.name, escape(fam.describe_axes()))
        out.print(ft)
    for mod, devs in module_devices(workload.name):
        if isinstance(devs, str):
            out.print(f"[bold]{mod}[/bold] devices: [yellow]{escape(devs)}[/yellow]")
            continue
        if not devs:
            out.print(f"[bold]{mod}[/bold] devices: none")
            continue
        dt = Table(title=f"{mod} devices", title_justify="left")
        cols = list(dict.fromkeys(k for d in devs for k in d))
        for c in cols:
            dt.add_column(str(c))
        for d in devs:
            dt.add_row(*(escape(str(d.get(c, ""))) for c in cols))
        out.print(dt)
    for table in workload.catalog_tables():
        out.print(table)
    return 0
