"""What `gpuonboard facts` prints of saved outputs (api/offline.py reads and judges them): the
facts' summary and JSON, the order file, the terminal's tables."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gpuonboard.connection.gather import Facts
from gpuonboard.facts.gpu_agree import reading_differences
from gpuonboard.facts.nvidia_smi import GpuInfo
from gpuonboard.inventory import ORDER_FILE, OrderSpec, parse_order
from gpuonboard.steps.base import Check
from gpuonboard.yamlload import LineDict, load_yaml

__all__ = ["facts_json", "load_order", "nvcc_version", "print_facts", "summary"]


def nvcc_version(facts: Facts) -> str | None:
    """The CUDA toolkit release of a saved `nvcc --version` (it was recognised, then dropped)."""
    from gpuonboard.steps.checks.driver_compat import nvcc_said

    out = facts.raw.get("nvcc")
    return nvcc_said(out.stdout) if out is not None and facts.given("nvcc") else None


def summary(facts: Facts) -> dict[str, object]:
    """Facts.summary() (its GPU count is unknown without an nvidia-smi output that listed GPUs,
    as live), with the CUDA toolkit a saved nvcc output names."""
    out = facts.summary()
    if facts.given("nvcc"):
        out["cuda_toolkit"] = nvcc_version(facts) or "unreadable"
    return out


def load_order(path: str) -> OrderSpec:
    """An order spec from a YAML file (`order:` mapping or the order fields at top level)."""
    from gpuonboard.errors import InventoryError

    p = Path(path)
    data = load_yaml(p, InventoryError, "order")
    if isinstance(data, dict) and "order" in data:
        data = data["order"]
    if not isinstance(data, dict):
        raise InventoryError(f"{p}, line 1: an order file must be a mapping like gpu_model: A100 80GB SXM.")
    return parse_order(data, p, data if isinstance(data, LineDict) else LineDict(), ORDER_FILE)


def facts_json(facts: Facts) -> dict[str, Any]:
    """Every parsed fact as JSON-able data (raw outputs and the private probes' names left out)."""

    def conv(value: Any) -> Any:
        if isinstance(value, GpuInfo):  # (each format's reading: only where the formats differ)
            doc = {
                f.name: conv(getattr(value, f.name))
                for f in dataclasses.fields(value)
                if f.name != "readings"
            }
            return {**doc, "readings": [{"format": k, **conv(v)} for k, v in reading_differences(value)]}
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {f.name: conv(getattr(value, f.name)) for f in dataclasses.fields(value)}
        if isinstance(value, tuple | list):
            return [conv(v) for v in value]
        if isinstance(value, Mapping):
            return {"-".join(k) if isinstance(k, tuple) else str(k): conv(v) for k, v in value.items()}
        return value

    out = {
        f.name: conv(getattr(facts, f.name))
        for f in dataclasses.fields(facts)
        if f.name not in ("raw", "private", "gpu_evidence")
    }
    if (ev := facts.gpu_evidence) is not None:  # (its report is `gpu`: written once, there)
        out["gpu_evidence"] = conv(dataclasses.replace(ev, report=None) if ev.report is facts.gpu else ev)
        if ev.report is facts.gpu:
            del out["gpu_evidence"]["report"]
    else:
        out["gpu_evidence"] = None
    out["summary"] = summary(facts)
    return out


def print_facts(facts: Facts, checks: list[Check], kinds: list[str]) -> None:
    from rich.markup import escape
    from rich.table import Table

    from gpuonboard.report.terminal import _VERDICT_STYLE, console

    con = console()
    t = Table(title=f"facts from {', '.join(kinds)}", title_justify="left")
    t.add_column("fact")
    t.add_column("value")
    for key, value in summary(facts).items():
        t.add_row(key, "-" if value is None else escape(str(value)))
    con.print(t)
    for w in facts.warnings:
        con.print(f"[yellow]warning:[/] {escape(w)}")
    if checks:
        r = Table(title="rules", title_justify="left")
        for col in ("rule", "expected", "actual", "verdict"):
            r.add_column(col)
        for c in checks:
            actual = escape(c.actual) + (f"\n[dim]{escape(c.detail)}[/]" if c.detail else "")
            r.add_row(
                c.name, escape(c.expected), actual, f"[{_VERDICT_STYLE[c.verdict]}]{c.verdict.upper()}[/]"
            )
        con.print(r)
