"""`invoke report --compare`: hosts side by side across runs (delivered spec, verdict, price per
GPU-hour), from each run's summary.json (default: the newest judged record of each host); the
unreadable runs left out with a warning, and one host name that was different machines named."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gpuonboard import __version__, results
from gpuonboard.errors import UsageError
from gpuonboard.report.runs import FORMATS, judged, load_summary, run_dir, write_with_sha
from gpuonboard.report.strictjson import dumps as strict_dumps
from gpuonboard.report.templates import _render_template
from gpuonboard.report.view import host_headline
from gpuonboard.units import format_bytes


def compare_rows(docs: Sequence[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """One row per host and run: delivered spec, verdict, price, price per GPU-hour."""
    rows = []
    for run_id, doc in docs:
        for h in doc.get("hosts") or []:
            facts = h.get("facts") or {}
            billing = h.get("vendor_billing") or {}
            rate = billing.get("rate")
            gpus = facts.get("gpu_count") or 0
            go, why = host_headline(results.recorded(h, bool(doc.get("strict"))))
            counted = judged(h) or h.get("status") == "unreachable"
            rows.append(
                {
                    "run": run_id,
                    "host": h.get("name"),
                    "vendor": h.get("vendor_name") or h.get("vendor") or "-",
                    # a record whose acceptance step did not run (a sync run named in --runs)
                    # judged nothing: not a NO-GO of the box
                    "verdict": ("GO" if go else "NO-GO") if counted else "not judged",
                    # the GO / NO-GO is against this host's own order: "with 2 warnings: ...",
                    # "failed: gpu_count, ram"
                    "verdict_detail": why.lstrip(",: ") if counted else "",
                    "ordered": ordered_gpus(h.get("order")),
                    "gpus": f"{gpus} x {facts.get('gpu_model') or '-'}" if gpus else "none",
                    "interconnect": facts.get("interconnect") or "-",
                    "cpu_cores": facts.get("cpu_cores") or "-",
                    # (binary, as every other RAM figure of the tool: free, the order's rule)
                    "ram": format_bytes(facts["ram_bytes"], binary=True) if facts.get("ram_bytes") else "-",
                    "driver": facts.get("driver_version") or "-",
                    "price": "-"
                    if rate is None
                    else f"{rate:g} {billing.get('currency', '')}/hour (per {billing.get('unit', 'hour')})",
                    "monthly": "-"
                    if billing.get("monthly_rate") is None
                    else f"{billing['monthly_rate']:g} {billing.get('currency', '')}",
                    "per_gpu_hour": "-"
                    if rate is None or not gpus
                    else f"{rate / gpus:.2f} {billing.get('currency', '')}",
                    "throughput": "",
                }
            )
    return rows


def ordered_gpus(order: Any) -> str:
    """What the order asked for, in the compare table's GPUs form: `8 x A100 80GB SXM`."""
    if not isinstance(order, dict) or not (order.get("gpu_count") or order.get("gpu_model")):
        return "-"
    count, model = order.get("gpu_count"), order.get("gpu_model") or "any GPU"
    return f"{count} x {model}" if count else str(model)


def identity_warnings(docs: Sequence[tuple[str, dict[str, Any]]]) -> list[str]:
    """One sentence per host name whose compared records carry different host keys: the same
    name was another machine in another run (a box swapped behind the name), so its rows are
    not two looks at one box."""
    keys: dict[str, dict[str, list[str]]] = {}
    for run_id, doc in docs:
        for h in doc.get("hosts") or []:
            key = h.get("host_key_fingerprint")
            if key:
                keys.setdefault(str(h.get("name")), {}).setdefault(str(key), []).append(run_id)
    return [
        f"host {name} presented different host keys in the compared runs ("
        + "; ".join(f"{key} in {', '.join(runs)}" for key, runs in by_key.items())
        + "): these are different machines behind one name, not the same box"
        for name, by_key in sorted(keys.items())
        if len(by_key) > 1
    ]


def _readable_runs(paths: Sequence[Path], warnings: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """(run id, summary) of each summary.json that parses; one warning per one that does not.

    Raises UsageError when a run was skipped and fewer than two readable runs are left."""
    docs = []
    skipped = []
    for p in paths:
        try:
            doc = load_summary(p)
        except UsageError:
            skipped.append(p)
            warnings.append(f"{p} is not a readable gpuonboard summary.json; that run is left out.")
        else:
            docs.append((p.parent.name, doc))
    if skipped and len(docs) < 2:
        raise UsageError(
            f"--compare needs two readable runs, but only {len(docs)} of {len(paths)} could be read"
            f" (unreadable: {', '.join(str(p) for p in skipped)})."
        )
    return docs


def compare(
    reports_dir: Path, runs: Sequence[str], fmt: str, project: Path, warnings: list[str] | None = None
) -> tuple[Path, str, list[dict[str, Any]]]:
    """reports/compare/compare.<fmt> from the given runs (default: the newest record of each host).

    A run whose summary.json is corrupt or unreadable is left out, with a sentence appended to
    `warnings`; fewer than two readable runs left after that is a UsageError."""
    if fmt not in FORMATS:
        raise UsageError(f"--format {fmt!r} is not one of {', '.join(FORMATS)}.")
    warnings = [] if warnings is None else warnings
    if runs:
        docs = _readable_runs([run_dir(reports_dir, r) / "summary.json" for r in runs], warnings)
    else:
        newest: dict[str, tuple[str, dict[str, Any]]] = {}
        paths = [p for p in sorted(reports_dir.glob("*/summary.json")) if not p.parent.is_symlink()]
        for run_id, doc in _readable_runs(paths, warnings):
            for h in doc.get("hosts") or []:
                if judged(h):  # (a later sync or teardown of the host judged nothing)
                    newest[str(h.get("name"))] = (run_id, {**doc, "hosts": [h]})
        if not newest:
            raise UsageError(
                f"no run under {reports_dir} judged a box (its acceptance step ran); run `invoke check`"
                " or `invoke provision` first."
            )
        docs = sorted(newest.values(), key=lambda d: str(d[1]["hosts"][0].get("name")))
    rows = compare_rows(docs)
    notes = identity_warnings(docs)
    warnings.extend(notes)
    note = (
        "throughput columns are empty: no benchmark results are recorded in summary.json yet;"
        " price per unit of measured throughput will appear once they are"
    )
    if fmt == "json":
        text = strict_dumps(
            {"rows": rows, "note": note, "warnings": notes, "tool_version": __version__}, indent=2
        )
        text += "\n"
    else:
        text = _render_template(
            project,
            fmt,
            f"report/compare.{fmt}.j2",
            rows=rows,
            note=note,
            warnings=notes,
            renderer_version=__version__,
        )
    out = reports_dir / "compare" / f"compare.{fmt}"
    digest = write_with_sha(out, text)
    return out, digest, rows
