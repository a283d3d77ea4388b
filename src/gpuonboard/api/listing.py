"""`invoke inventory`: the selected hosts as a table (host, address, groups, vendor, order) and
the vendors' licence warnings, or with --json one JSON document of the resolved hosts on stdout
(`inventory_doc`, schema `gpuonboard.inventory/1`) while the table and warnings go to stderr.
No Invoke imports here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpuonboard import api
from gpuonboard.errors import ExitCode
from gpuonboard.inventory import Host, Inventory, OrderSpec
from gpuonboard.report import terminal


def list_inventory(selection: api.Selection, settings: api.Settings) -> int:
    """Print hosts with vendor, address and order spec; with --json, the hosts as one JSON
    document on stdout (`inventory_doc`), the table and warnings on stderr."""
    inv, hosts = api._selected(selection, settings, every=True)
    if not settings.json:
        _print_inventory(inv, hosts)
        return int(ExitCode.OK)
    with api.human_lines_to_stderr() as stdout:
        warned = _print_inventory(inv, hosts)
    from gpuonboard.report.strictjson import dumps

    stdout.write(dumps(inventory_doc(inv, hosts, warned), indent=1) + "\n")
    stdout.flush()
    return int(ExitCode.OK)


def order_text(o: OrderSpec) -> str:
    """An order as `invoke inventory` shows it: `8 x A100, 80.0 GiB VRAM, 96 cores, ...` or `-`:
    a count written into the model (`gpu_model: 8x A100 80GB`) shown as the count the rules
    judge, and VRAM in the binary units it is read in (`vram: 80GB` is 80 GiB), as RAM."""
    from gpuonboard.steps.checks.model_match import split_count
    from gpuonboard.units import format_bytes, ram_order_bytes

    parts = []
    model, in_model = split_count(o.gpu_model) if o.gpu_model else (None, None)
    if o.gpu_count or model:
        parts.append(f"{o.gpu_count or in_model or '?'} x {model or 'GPU'}")
    if o.vram_bytes:
        parts.append(f"{format_bytes(o.vram_bytes)} VRAM")
    if o.cpu_cores:
        parts.append(f"{o.cpu_cores} cores")
    if o.ram_bytes:
        parts.append(f"{format_bytes(ram_order_bytes(o.ram_bytes))} RAM")
    if o.data_disk:
        size = (
            f" {format_bytes(o.data_disk.min_size_bytes, binary=False)}" if o.data_disk.min_size_bytes else ""
        )
        parts.append(f"data{size} at {o.data_disk.mount}")
    if o.interconnect:
        parts.append(o.interconnect)
    if o.min_driver:
        parts.append(f"driver >= {o.min_driver}")
    return ", ".join(parts) or "-"


def target_text(h: Host) -> str:
    """Where a host is reached, as `invoke inventory` shows it: `user@address:port via jump`."""
    if h.not_used is not None:  # (Ansible reaches it without SSH: `winrm: not used`)
        return f"{h.connection}: not used"
    via = f" via {' -> '.join(h.jump)}" if h.jump else ""
    address = f"[{h.address}]" if ":" in h.address else h.address  # (IPv6: `[2001:db8::7]:2200`)
    return "local" if h.connection == "local" else f"{h.user}@{address}:{h.port}{via}"


def _print_inventory(inv: Inventory, hosts: Sequence[Host]) -> list[str]:
    """The inventory table and the vendors' licence warnings (returned too) on the terminal."""
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    from gpuonboard.licences import warnings as licence_warnings

    # Text, never markup: a vendor name or order with `[...]` in it lost it (`[/x]`: internal error)
    t = Table(title=Text(f"inventory {inv.source}"), title_justify="left")
    for col in ("host", "address", "groups", "vendor", "order"):
        # fold, never cut: an address shortened to `ubuntu@198.5…` on a narrow terminal is wrong
        t.add_column(col, overflow="fold")
    for h in hosts:
        cells = (h.name, target_text(h), ",".join(h.groups) or "-", h.vendor_name, order_text(h.order))
        t.add_row(*(Text(cell) for cell in cells))
    con = terminal.console()
    con.print(t)
    warned = []
    used = {h.vendor.id for h in hosts if h.vendor}
    for v in sorted((v for v in inv.vendors.values() if v.id in used), key=lambda v: v.id):
        for w in licence_warnings(v.licence, v.icp):  # a format check only: never an error
            warned.append(f"vendor {v.id} ({v.source}): {w}")
            con.print(f"[yellow]warning:[/] vendor {escape(v.id)} ({escape(v.source)}): {escape(w)}")
    return warned


def inventory_doc(inv: Inventory, hosts: Sequence[Host], warnings: Sequence[str]) -> dict[str, Any]:
    """`invoke inventory --json`: the resolved hosts (`gpuonboard.inventory/1`), each with what
    the table shows (`target`, `order_text`) and the fields behind it; never a host's vars
    (they may hold secrets)."""
    from dataclasses import asdict

    from gpuonboard import __version__

    return {
        "schema": "gpuonboard.inventory/1",
        "tool_version": __version__,
        "inventory": str(inv.source),
        "hosts": [
            {
                "name": h.name,
                "address": h.address,
                "port": h.port,
                "user": h.user,
                "connection": h.connection,
                "jump": list(h.jump),
                "target": target_text(h),
                "groups": list(h.groups),
                "vendor": h.vendor.id if h.vendor else None,
                "vendor_name": h.vendor.name if h.vendor else None,
                "key_file": h.key_file,
                "host_key": h.host_key,
                "data_dir": h.data_dir,
                "order": asdict(h.order),
                "order_text": order_text(h.order),
            }
            for h in hosts
        ],
        "warnings": list(warnings),
    }
