"""`invoke plan` and `invoke report`: what the CLI calls (plain functions returning exit codes)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from gpuonboard.api.options import PlanArgs
from gpuonboard.errors import ExitCode
from gpuonboard.report import render, terminal
from gpuonboard.steps.prove import planner

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table


def _vendors(project: Path, inventory: str, needed: bool) -> tuple[tuple[planner.Vendor, ...], str]:
    """Vendor profiles of the inventory (only when --hours asks for costs). Without the default
    ./inventory, a note; an --inventory given that is not there is an input error (its typo had
    priced no vendor, with exit 0)."""
    if not needed:
        return (), ""
    from gpuonboard import inventory as inventory_mod
    from gpuonboard.inventory.loader import DEFAULT_INVENTORY, locate

    path = locate(project, inventory)  # (`ansible-inventory:SOURCE` kept)
    if isinstance(path, Path) and not path.exists() and inventory == DEFAULT_INVENTORY:
        return (), f"no inventory at {path}: no vendor costs (pass --inventory PATH)"
    inv = inventory_mod.load(path)
    return tuple(inv.vendors.values()), ""


def plan(args: PlanArgs, project: Path) -> int:
    """Validate, compute, print (rich tables or --json)."""
    from gpuonboard.errors import UsageError

    if not args.params:
        raise UsageError("--params is required, e.g. invoke plan --params 7B.")
    # every flag is validated (and the plan computed) before the inventory is touched
    p = planner.make_plan(
        args.params,
        args.precision,
        args.optimizer,
        args.mode,
        args.seq,
        args.batch,
        args.checkpointing,
        args.dataset_size,
        args.bandwidth,
        args.hours,
    )
    vendors, vendor_note = _vendors(project, args.inventory, p.hours is not None)
    if p.hours is not None:
        p.costs = [planner.vendor_cost(v, p.hours) for v in vendors]
    if vendor_note:
        p.notes.append(vendor_note)
    if args.json:
        print(json.dumps(p.to_json(), ensure_ascii=False, indent=2))
    else:
        print_plan(p)
    return int(ExitCode.OK)


def _gb(n: float) -> str:
    return f"{n / planner.GB:,.1f} GB"


def _memory_table(p: planner.Plan) -> Table:
    """The memory breakdown: weights, gradients, optimizer, activations, overhead, total."""
    from rich.markup import escape
    from rich.table import Table

    m = p.memory
    sh = p.shape
    title = (
        f"{p.params / 1e9:g}B parameters, {p.mode}, {p.precision}, {p.optimizer},"
        f" seq {p.seq} x batch {p.batch}" + (", activation checkpointing" if p.checkpointing else "")
    )
    t = Table(title=f"memory: {title}", title_justify="left")
    t.add_column("part")
    t.add_column("size", justify="right")
    t.add_column("how")
    wb = {"bf16": 2, "fp16": 2, "fp32": 4}[p.precision]
    t.add_row("weights", _gb(m.weights), f"{p.params:,} params" if p.mode == "full" else escape(m.notes[0]))
    t.add_row("gradients", _gb(m.gradients), f"{m.trainable_params:,} trainable x {wb} B")
    t.add_row("optimizer states", _gb(m.optimizer), f"{p.optimizer} (+ fp32 master copy in mixed precision)")
    act_how = "L x 2sbh (checkpointed)" if p.checkpointing else "L x sbh(34 + 5as/h), Korthikanti et al. 2022"
    t.add_row("activations", _gb(m.activations), f"{act_how}; L={sh.layers} h={sh.hidden} a={sh.heads}")
    t.add_row("overhead", _gb(m.overhead_per_gpu), "per GPU: CUDA context, workspaces, fragmentation")
    t.add_row("[bold]total on one GPU[/]", f"[bold]{_gb(m.total_one_gpu)}[/]", "sharded n ways on n GPUs")
    return t


def _fits_table(p: planner.Plan) -> Table:
    """The cards the model fits on, fewest cards first."""
    from rich.markup import escape
    from rich.table import Table

    g = Table(title="GPUs that fit (fewest cards first)", title_justify="left")
    for col in ("card", "memory", "bf16 TFLOPS", "min n", "per GPU", "class", "links", "note"):
        g.add_column(col)
    for f in p.fits:
        if f.count is None:
            continue
        c = f.card
        g.add_row(
            escape(c.card),
            _gb(c.capacity_bytes) + ("" if c.nvidia_smi_mib else " (datasheet)"),
            "-" if c.bf16_tflops is None else f"{c.bf16_tflops:g}",
            str(f.count),
            _gb(f.per_gpu_bytes or 0),
            c.klass,
            ", ".join(c.interconnect),
            escape(f.note),
        )
    return g


def _print_sizing(con: Console, p: planner.Plan) -> None:
    """The recommended cards, the host's CPU/RAM/disk, and the upload time."""
    from rich.markup import escape

    best = p.best()
    if best:
        con.print(
            f"recommended: [bold]{best.count} x {escape(best.card.card)}[/];"
            f" NVLink matters: {escape(p.nvlink)}"
        )
    else:
        con.print(f"recommended: [bold red]none[/]: no card fits on {planner.MAX_GPUS} cards or fewer")
    h = p.host
    each = f"each of {h.servers} servers" if h.servers > 1 else "host"
    con.print(
        f"{each}: CPU >= {h.cpu_cores} cores, RAM >= {_gb(h.ram_bytes)}, disk >= {_gb(h.disk_bytes)}"
        f" ({escape(h.disk_detail)})"
    )
    if p.upload_s is not None and p.dataset_bytes is not None and p.bandwidth is not None:
        con.print(
            f"upload: {_gb(p.dataset_bytes)} at {p.bandwidth * 8 / 1e6:,.1f} Mbit/s takes"
            f" {planner.format_duration(p.upload_s)} at the full nominal rate (TCP/SSH overhead not counted)"
        )


def _cost_table(p: planner.Plan, hours: float) -> Table:
    """What `hours` cost with each vendor profile."""
    from rich.markup import escape
    from rich.table import Table

    ct = Table(title=f"cost of {hours:g} hours per vendor profile", title_justify="left")
    for col in ("vendor", "billed", "hourly billing", "monthly rate", "cheaper"):
        ct.add_column(col)
    for v in p.costs:
        cur = escape(v.currency)
        ct.add_row(
            escape(f"{v.name} ({v.vendor})"),
            f"{v.billed_units:,} {v.unit}{'' if v.billed_units == 1 else 's'}",
            "-" if v.hourly_amount is None else f"{v.hourly_amount:,.2f} {cur} ({v.rate:g}/hour)",
            "-"
            if v.monthly_amount is None
            else f"{v.monthly_amount:,.2f} {cur} ({v.months} x {v.monthly_rate:g})",
            escape(v.cheaper),
        )
    return ct


def print_plan(p: planner.Plan) -> None:
    """Rich tables: memory breakdown, cards, host, upload, cost."""
    from rich.markup import escape

    con = terminal.console()
    con.print(_memory_table(p))
    con.print(_fits_table(p))
    _print_sizing(con, p)
    if p.hours is not None:
        con.print(_cost_table(p, p.hours))
    m = p.memory
    for note in p.notes + list(m.notes[1:] if p.mode != "full" else ()):
        con.print(f"note: {escape(note)}")


def report(
    reports_dir: Path,
    project: Path,
    run: str = "",
    fmt: str = "html",
    compare: bool = False,
    runs: str = "",
    lang: str = "en",
) -> int:
    """Render reports/<run>/report.<fmt> (or the comparison) and print where it is."""
    from rich.markup import escape

    from gpuonboard.api import split_names
    from gpuonboard.i18n import check_lang, t

    lang = check_lang(lang)
    con = terminal.console()
    if compare:
        warnings: list[str] = []
        out, digest, rows = render.compare(reports_dir, split_names(runs), fmt, project, warnings)
        for warning in warnings:  # one sentence per run left out (a corrupt summary.json)
            print(f"warning: {warning}", file=sys.stderr)
        # as it is: one line (a wrapped path cannot be copied), no markup (`[v2]` in a path)
        con.print(f"compared {len(rows)} host record(s): {escape(str(out))}  sha256 {digest}", soft_wrap=True)
        return int(ExitCode.OK)
    out, digest, go = render.report(reports_dir, run or None, fmt, project, lang)
    # the report's own headline: "GO with 2 warnings: ..." (a bare GO hid them)
    ctx = render.context(render.load_summary(out.parent / "summary.json"), out.parent, lang)
    suffix, word = ctx["headline_suffix"], ctx["verdict"]
    verdict = (
        f"[bold green]{t('GO', lang)}[/]{escape(suffix)}"
        if go
        else f"[bold red]{t('NO-GO', lang)}[/]"
        if word == "NO-GO"
        else f"[bold]{t('no verdict', lang)}[/]"
    )
    con.print(f"{verdict}  {t('report_written', lang, path=escape(str(out)), digest=digest)}", soft_wrap=True)
    return int(ExitCode.OK)
