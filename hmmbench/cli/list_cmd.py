"""``hmmbench list``: backends (available or why not), devices and datasets of a workload."""
from __future__ import annotations

from .. import registry  # used through the module: tests stub its discover
from ..hostinfo import module_devices
from ..report import Column, Listing, Styled
from .common import add_workload_options, terminal


def add_parser(sub) -> None:
    sp = sub.add_parser("list", help="backends, devices and datasets")
    add_workload_options(sp)
    sp.set_defaults(func=run)


def run(args, workload) -> int:
    out = terminal()
    t = Listing(f"backends ({workload.name})",
                [Column("name", key=True), Column("api", priority=1),
                 Column("family", priority=2), Column("precision", priority=2),
                 Column("available", wrap=True, priority=0), Column("limits", priority=3)])
    for b in registry.discover(workload.name):
        reason = registry.probe(b, listing=True).reason
        limits = ", ".join(f"{k}={v}" for k, v in vars(b.limits).items() if v is not None)
        t.add(b.name, b.api, b.family, b.precision,
              Styled("yes", "green") if reason is None else Styled(f"no: {reason}", "yellow"),
              limits or "-")
    out.print_listing(t)
    fams = registry.families(workload.name)
    if fams:
        ft = Listing("backend families: parameter axes (hmmbench run -b FAMILY --axis "
                     "NAME=V1,V2)", [Column("family", key=True),
                                     Column("axes (allowed values, default)", wrap=True)])
        for fam in fams.values():
            ft.add(fam.name, fam.describe_axes())
        out.print_listing(ft)
    for mod, devs in module_devices(workload.name):
        if isinstance(devs, str):
            out.print_log(f"{mod} devices: {devs}", "yellow")
            continue
        if not devs:
            out.print_log(f"{mod} devices: none")
            continue
        cols = list(dict.fromkeys(k for d in devs for k in d))
        dt = Listing(f"{mod} devices", [Column(str(c), key=i == 0, wrap=i > 0)
                                        for i, c in enumerate(cols)])
        for d in devs:
            dt.add(*(str(d.get(c, "")) for c in cols))
        out.print_listing(dt)
    for table in workload.catalog_tables():
        out.print_listing(table)
    return 0
