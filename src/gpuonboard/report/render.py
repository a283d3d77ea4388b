"""`invoke report`: an evidence-grade acceptance report (HTML, Markdown, JSON) from summary.json.

The view model (`context`) is computed here; the Jinja2 templates under `templates/report/`
only lay it out. HTML is rendered with autoescape on: every value from a host or inventory
is text, never markup. A `<file>.sha256` (sha256sum format) is written next to each report.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Any

from gpuonboard import __version__, atomicfile, licences, masking, results
from gpuonboard.errors import UsageError
from gpuonboard.facts.gpu_merge import GPU_PROBES
from gpuonboard.i18n import check_lang, status_word, t, verdict_word
from gpuonboard.report.strictjson import dumps as strict_dumps
from gpuonboard.units import format_bytes, ram_order_bytes

FORMATS = ("html", "md", "json")
RAW_INLINE_LIMIT = 256 * 1024  # raw text shown inline per probe; the file holds it all

# Which probe outputs a rule's verdict is computed from (see facts/gather.py CORE_PROBES).
# every nvidia-smi format the GPU facts are merged from (facts/gpu_merge.py)
_GPU = GPU_PROBES
RULE_PROBES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(
        (
            "nvidia_driver",
            "gpu_model",
            "gpu_count",
            "vram",
            "min_driver",
            "ecc_mode",
            "ecc_uncorrectable",
            "memory_repair",
            "pcie_link",
            "pcie_replays",
            "power_limit",
            "throttling",
            "temperature",
            "sensor_faults",
            "persistence_mode",
            "mig_mode",
            "virtualization",
            "ngc_driver",
            "gpu_health",  # "nothing checked" (no driver / no GPU listed)
            "gpu_identity",
        ),
        _GPU,
    ),
    "foreign_processes": (*_GPU, "nvidia_smi_apps"),
    "cpu_cores": ("lscpu", "nproc"),
    "ram": ("free",),
    "data_disk": ("df", "lsblk"),
    "interconnect": ("nvidia_topo",),
    "host_cuda_toolkit": ("nvcc",),
    "gpu_xid": ("kernel_log",),
    "nvswitch_sxid": ("kernel_log",),
    "nvlink_links": ("nvidia_nvlink",),
    "nvlink_errors": ("nvidia_nvlink_errors",),
    "fabric_manager": ("fabric_manager", "nvidia_smi", "nvidia_smi_q"),
    "rdma_ports": ("rdma_ports",),
}
COMPAT_STEPS = ("driver_compat", "container")
HEALTH_STEPS = ("gpu_health",)


_SAFE = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")
_HASHED = re.compile(r"-[0-9a-f]{8}$")  # the suffix safe_name appends
_SAFE_MAX = 120  # characters kept before the hash (a path component may hold 255 bytes)


def legacy_safe_name(name: str) -> str:
    """The path component of runs whose summary.json records no `raw.<probe>.file`: the name
    reduced to `[A-Za-z0-9._-]`, which is not injective (`武汉1` and `上海1` were both `__1`);
    used only to read those older runs' `raw/` files."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "_", name).lstrip(".")
    return cleaned or "_"


def safe_name(name: str) -> str:
    """A host or probe name as a single path component (`raw/<host>/<probe>.txt`), one per name.

    A name of `[A-Za-z0-9._-]` (not starting with `.`) stays as it is. Any other name is
    reduced to those characters and gets `-` and 8 hex digits of the sha256 of the original:
    `武汉1` -> `__1-a1b2c3d4`, `gpu/1` and `gpu 1` differ. A safe name that already ends like
    such a suffix is suffixed too, so a reduced name never equals another name kept as is."""
    if _SAFE.fullmatch(name) and len(name) <= _SAFE_MAX and not _HASHED.search(name):
        return name
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{legacy_safe_name(name)[:_SAFE_MAX]}-{digest}"


def write_atomic(path: Path, text: str) -> None:
    """Temp file + rename, so a reader never sees half a report. A file name that is not UTF-8
    (its bytes kept as lone surrogates) is written as a `\\udcXX` escape: valid JSON that reads
    back to the same name, and legible in a text report. No secret's value is written (a
    failed login's stderr line in a message): masking.mask_written. (Here rather than in
    jsonfile, which writes summary.json with it: jsonfile imports this module.)"""
    atomicfile.write_text(path, masking.mask_written(text), errors="backslashreplace")


def raw_file(host: str, probe: str) -> str:
    """Where a probe's raw output lies inside the run directory: `raw/<host>/<probe>.txt`."""
    return f"raw/{safe_name(host)}/{safe_name(probe)}.txt"


def sha256_bytes(data: bytes) -> str:
    """Hex sha256."""
    return hashlib.sha256(data).hexdigest()


# ---------------------------------------------------------------- loading


def judged(host: dict[str, Any]) -> bool:
    """Whether a host record of summary.json holds an acceptance verdict (results.judged)."""
    return results.judged(host)


def newest_acceptance_run(reports_dir: Path) -> str | None:
    """The newest run under reports_dir whose summary.json judged a box, or None."""
    paths = sorted(
        (p for p in reports_dir.glob("*/summary.json") if not p.parent.is_symlink()),
        key=lambda p: (p.stat().st_mtime, p.parent.name),
        reverse=True,
    )
    for p in paths:
        try:
            doc = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict) and any(judged(h) for h in doc.get("hosts") or []):
            return p.parent.name
    return None


def run_dir(reports_dir: Path, run: str | None) -> Path:
    """reports/<run>/ (default: the newest run that judged a box, else `latest`), which must
    hold summary.json."""
    name = run or newest_acceptance_run(reports_dir) or "latest"
    if "/" in name or name in ("", ".", ".."):
        raise UsageError(f"--run {name!r} is not a run id like 20261129-175134-c38a.")
    path = reports_dir / name
    if not (path / "summary.json").is_file():
        runs = sorted(
            p.name for p in reports_dir.glob("*/summary.json") for p in [p.parent] if not p.is_symlink()
        )
        hint = f"; known runs: {', '.join(runs[-5:])}" if runs else "; run `invoke provision` first"
        raise UsageError(f"no summary.json in {path}{hint}.")
    return path


# the host fields the report reads, and the JSON type each must have when present and not
# null: (its type, the type of each item or value or None, the words for both)
_HOST_SHAPE: dict[str, tuple[type, type | None, str]] = {
    "facts": (dict, None, "an object"),
    "order": (dict, None, "an object"),
    "vendor_billing": (dict, None, "an object"),
    "rules": (list, dict, "a list of objects"),
    "steps": (list, dict, "a list of objects"),
    "benchmarks": (list, dict, "a list of objects"),
    "raw": (dict, dict, "an object of objects"),
}


def shape_problem(doc: dict[str, Any]) -> str | None:
    """What makes a parsed summary.json unusable for a report (a damaged or hand-edited file):
    `hosts` not a list of objects, or a host field the report reads of another JSON type; None
    when the shape is right."""
    hosts = doc.get("hosts")
    if hosts is None:
        return None
    if not isinstance(hosts, list):
        return "`hosts` is not a list of host records"
    for i, h in enumerate(hosts, 1):
        if not isinstance(h, dict):
            return f"host record {i} is not an object"
        for key, (kind, item, what) in _HOST_SHAPE.items():
            value = h.get(key)
            if value is None:
                continue
            items = value.values() if isinstance(value, dict) else value
            if not isinstance(value, kind) or (
                item is not None and not all(isinstance(v, item) for v in items)
            ):
                return f"host {h.get('name', i)!r} has a `{key}` that is not {what}"
        rate = (h.get("vendor_billing") or {}).get("rate")
        if rate is not None and (isinstance(rate, bool) or not isinstance(rate, int | float)):
            return f"host {h.get('name', i)!r} has a `vendor_billing.rate` that is not a number"
    return None


def load_summary(path: Path) -> dict[str, Any]:
    """Parse a summary.json (UsageError when it is not one, or is damaged: `shape_problem`)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: not a readable summary.json ({exc}).") from None
    if not isinstance(doc, dict) or not str(doc.get("schema", "")).startswith("gpuonboard.summary/"):
        raise UsageError(f"{path}: not a gpuonboard summary.json (no schema gpuonboard.summary/1).")
    problem = shape_problem(doc)
    if problem:
        raise UsageError(
            f"{path}: {problem}; the file is damaged (or not written by gpuonboard): rerun"
            " `invoke check` for that host to get a new one."
        )
    return doc


# ---------------------------------------------------------------- view model


def _size(n: Any) -> str:
    if not isinstance(n, int | float):
        return "-"
    return f"{format_bytes(int(n), binary=False)} ({format_bytes(int(n))})"


def order_rows(host: dict[str, Any], lang: str = "en") -> list[dict[str, str]]:
    """Ordered vs delivered, one row per order field (`key`: the rule it is checked by)."""
    order = host.get("order") or {}
    facts = host.get("facts") or {}
    disk = order.get("data_disk") or {}
    rules = {r.get("name"): r for r in host.get("rules") or []}

    def delivered(rule: str, fallback: str) -> str:
        r = rules.get(rule)
        return str(r["actual"]) if r else fallback

    rows = [
        ("gpu_model", order.get("gpu_model"), delivered("gpu_model", str(facts.get("gpu_model") or "-"))),
        ("gpu_count", order.get("gpu_count"), delivered("gpu_count", str(facts.get("gpu_count", "-")))),
        ("vram", order.get("vram_bytes") and _size(order["vram_bytes"]), delivered("vram", "-")),
        ("cpu_cores", order.get("cpu_cores"), delivered("cpu_cores", str(facts.get("cpu_cores") or "-"))),
        (
            "ram",
            # (RAM is sold in binary units: the rule reads 1TB as 1 TiB, and so does this row)
            order.get("ram_bytes") and format_bytes(ram_order_bytes(int(order["ram_bytes"]))),
            delivered("ram", _size(facts.get("ram_bytes"))),
        ),
        (
            "data_disk",
            disk and f"{disk.get('mount')} >= {_size(disk.get('min_size_bytes'))}",
            delivered("data_disk", "-"),
        ),
        (
            "interconnect",
            order.get("interconnect"),
            delivered("interconnect", str(facts.get("interconnect") or "-")),
        ),
        (
            "min_driver",
            order.get("min_driver") and f">= {order['min_driver']}",
            str(facts.get("driver_version") or "-"),
        ),
    ]
    label = {"vram": "o_vram", "min_driver": "o_driver"}
    out = []
    for key, o, d in rows:
        if o in (None, "", {}) and key in rules:  # a summary.json without `order`
            o = rules[key].get("expected")
        out.append(
            {
                "key": key,
                "field": t(label.get(key, f"o_{key}"), lang),
                "ordered": "-" if o in (None, "", {}) else str(o),
                "delivered": d,
            }
        )
    return out


def _reason_text(reason: results.Reason, lang: str) -> str:
    values = dict(reason.values)
    if reason.key == "r_status":
        values["status"] = status_word(values.get("status"), lang)
    return t(reason.key, lang, **values)


def host_verdict(v: results.HostVerdict, lang: str = "en") -> tuple[bool, list[str]]:
    """GO or not, and the reasons against GO in `lang`, of the host's one verdict."""
    return v.go, [_reason_text(r, lang) for r in v.reasons]


def _raw_path(run_path: Path, host: str, probe: str, rec: dict[str, Any]) -> Path:
    """The file a probe's recorded output is in: `file` as summary.json records it (a path
    `raw/<host>/<probe>.txt` inside the run, else where this version writes it); for a run
    that records no `file` (older runs), the old reduced names."""
    recorded = rec.get("file")
    if recorded is None:
        return run_path / "raw" / legacy_safe_name(host) / f"{legacy_safe_name(probe)}.txt"
    rel = PurePosixPath(str(recorded))
    if rel.is_absolute() or len(rel.parts) != 3 or rel.parts[0] != "raw" or ".." in rel.parts:
        rel = PurePosixPath(raw_file(host, probe))
    return run_path.joinpath(*rel.parts)


def _raw_entries(
    host: dict[str, Any], run_path: Path, written: Mapping[str, bytes] | None = None
) -> dict[str, dict[str, Any]]:
    """Per probe: recorded sha256/bytes, whether the raw file still matches, and its text.
    `written`: the bytes just written to the run's raw files, by file (`raw/<host>/<probe>.txt`,
    jsonfile.write_raw), checked against the recorded sha256 as the files would be, unread."""
    out = {}
    for probe, rec in sorted((host.get("raw") or {}).items()):
        recorded = rec.get("file")
        known = written is not None and isinstance(recorded, str) and recorded in written
        path = run_path / recorded if known else _raw_path(run_path, str(host.get("name", "")), probe, rec)
        entry: dict[str, Any] = {
            "probe": probe,
            "sha256": rec.get("sha256", ""),
            "bytes": rec.get("bytes", 0),
            "exit_code": rec.get("exit_code"),
            # (a key of `written` is already the canonical relative path)
            "file": recorded if known else str(path.relative_to(run_path)),
            "text": "",
            "truncated": False,
        }
        try:
            data = written[recorded] if known and written is not None else path.read_bytes()
        except OSError:
            entry["status"] = "file missing"
        else:
            entry["status"] = "verified" if sha256_bytes(data) == entry["sha256"] else "HASH MISMATCH"
            text = data.decode("utf-8", "replace")
            entry["truncated"] = len(text) > RAW_INLINE_LIMIT
            entry["text"] = text[:RAW_INLINE_LIMIT]
        out[probe] = entry
    return out


def _number(value: Any) -> float | None:
    """A benchmark's value or reference as a finite number; None for anything else (`"n/a"`, a
    NaN, true: a hand-edited summary.json, which made the report an internal error)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def chart_svg(benchmarks: Sequence[dict[str, Any]], lang: str = "en") -> str:
    """An inline SVG bar chart: each benchmark's value beside its reference (no JavaScript).

    Only numbers reach the markup; names are escaped."""
    from markupsafe import escape

    rows = [b for b in benchmarks if _number(b.get("value")) is not None]
    if not rows:
        return ""
    width, label_w, bar_h, gap = 640, 200, 14, 10
    top = max(max(float(b["value"]), _number(b.get("reference")) or 0.0) for b in rows) or 1.0
    scale = (width - label_w - 90) / top
    parts = []
    y = 10
    for b in rows:
        value = float(b["value"])
        ref = _number(b.get("reference"))
        color = {"fail": "#c0392b", "warn": "#d68910"}.get(str(b.get("verdict")), "#2e86c1")
        parts.append(
            f'<text x="0" y="{y + bar_h - 3}" font-size="12">{escape(str(b.get("name", "")))}</text>'
            f'<rect x="{label_w}" y="{y}" width="{value * scale:.1f}" height="{bar_h}" fill="{color}"/>'
            f'<text x="{label_w + value * scale + 4:.1f}" y="{y + bar_h - 3}" font-size="11">'
            f"{value:g} {escape(str(b.get('unit', '')))}</text>"
        )
        y += bar_h + 2
        if ref is not None:
            parts.append(
                f'<rect x="{label_w}" y="{y}" width="{ref * scale:.1f}" height="{bar_h // 2}"'
                ' fill="#aab7b8"/>'
                f'<text x="{label_w + ref * scale + 4:.1f}" y="{y + bar_h // 2}" font-size="10">'
                f"{escape(t('chart_reference', lang))} {ref:g}</text>"
            )
            y += bar_h // 2
        y += gap
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{escape(t("chart_label", lang))}"'
        f' width="{width}" height="{y}" viewBox="0 0 {width} {y}">' + "".join(parts) + "</svg>"
    )


def warned_checks(host: dict[str, Any], verdict: str = "warn") -> list[dict[str, str]]:
    """A host's rules and benchmarks with this verdict (`warn`, `unverified`): name, actual, detail."""
    out = [
        {"name": str(r.get("name")), "actual": str(r.get("actual", "")), "detail": str(r.get("detail") or "")}
        for r in host.get("rules") or []
        if r.get("verdict") == verdict
    ]
    out += [
        {"name": str(b.get("name")), "actual": f"{b.get('value')} {b.get('unit', '')}".strip(), "detail": ""}
        for b in host.get("benchmarks") or []
        if b.get("verdict") == verdict
    ]
    return out


def warn_suffix(names: Sequence[str], lang: str = "en", unverified: Sequence[str] = ()) -> str:
    """' with 3 warnings: a, b, c' after the GO word, '; 1 unverified: d' after it; '' when
    nothing warned and everything was verified."""
    out = ""
    if names:
        key = "go_warn_one" if len(names) == 1 else "go_warn_many"
        out = t(key, lang, n=len(names), items=", ".join(names))
    if unverified:
        key = "and_unverified" if out else "go_unverified"
        out += t(key, lang, n=len(unverified), items=", ".join(unverified))
    return out


def host_headline(v: results.HostVerdict, lang: str = "en") -> tuple[bool, str]:
    """One host's GO (its one verdict) and the words after its verdict word: the warned and
    unverified checks of a GO (' with 2 warnings: persistence_mode, mig_mode'), the failed
    checks of a NO-GO (', failed: gpu_count, vram'), else its reasons."""
    if v.go:
        return True, warn_suffix(v.warned, lang, v.unverified)
    if v.failed:
        return False, t("nogo_failed", lang, items=", ".join(v.failed))
    return False, t("nogo_reasons", lang, items="; ".join(_reason_text(r, lang) for r in v.reasons))


def step_rows(host: dict[str, Any]) -> list[dict[str, Any]]:
    """Every step of the host as recorded (step, status, msg, duration; `-` where a record
    lacks one), for the steps table of the HTML and Markdown reports: a step that was skipped
    or failed shows as such, never only as the absence of a failed rule."""
    return [
        {
            "step": st.get("step", "-"),
            "status": st.get("status") or "-",
            "msg": st.get("msg") or "",
            "duration": st.get("duration", "-"),
        }
        for st in host.get("steps") or []
        if isinstance(st, dict)
    ]


_RAW_STATUS_KEY = {"verified": "raw_verified", "HASH MISMATCH": "raw_mismatch", "file missing": "raw_missing"}


# What the templates read of a run and of a host, for a summary.json that lacks a field (an
# older or hand-made one): shown as `-`, not an undefined-variable error blamed on the template.
_RUN_DEFAULTS = dict.fromkeys(
    ("run_id", "playbook", "inventory", "started", "finished", "duration", "tool_version", "schema"), "-"
) | {"check_mode": False}
_HOST_DEFAULTS = dict.fromkeys(("name", "address", "port", "status", "msg"), "-") | dict.fromkeys(
    ("vendor", "vendor_name", "host_key_fingerprint", "facts"), None
)


def context(
    doc: dict[str, Any], run_path: Path, lang: str = "en", written: Mapping[str, bytes] | None = None
) -> dict[str, Any]:
    """Everything the templates show (fixed texts in `lang`; data and verdicts as recorded;
    `written`: the raw files' bytes as just written, see _raw_entries)."""
    hosts = []
    strict = bool(doc.get("strict"))
    for h in doc.get("hosts") or []:
        host_v = results.recorded(h, strict)  # (the run's verdict, never judged again)
        go, reasons = host_verdict(host_v, lang)
        raw = _raw_entries(h, run_path, written)
        for e in raw.values():
            e["status_text"] = t(_RAW_STATUS_KEY[e["status"]], lang)
        rules = []
        for r in h.get("rules") or []:
            probes = [raw[p] for p in RULE_PROBES.get(str(r.get("name")), ()) if p in raw]
            rules.append({**r, "evidence": [{"probe": p["probe"], "sha256": p["sha256"]} for p in probes]})
        compat = [
            {**c, "step": s.get("step")}
            for s in h.get("steps") or []
            if s.get("step") in COMPAT_STEPS
            for c in (
                s.get("checks")
                or [
                    {
                        "name": s.get("step"),
                        "expected": "-",
                        "actual": s.get("msg", ""),
                        "verdict": "fail" if s.get("status") == "failed" else "pass",
                        "detail": "",
                    }
                ]
            )
        ]
        benchmarks = list(h.get("benchmarks") or [])
        warned = warned_checks(h)
        unverified = warned_checks(h, "unverified")
        hosts.append(
            {
                **_HOST_DEFAULTS,
                **h,
                "go": go,
                "verdict_word": host_v.word,
                "warned_checks": warned,
                "unverified_checks": unverified,
                # after the GO word: " with 2 warnings: mig_mode, persistence_mode" ("" for NO-GO)
                "headline_suffix": warn_suffix([w["name"] for w in warned], lang, host_v.unverified)
                if go
                else "",
                "reasons": reasons,
                "order_rows": order_rows(h, lang),
                "rule_rows": rules,
                "compat_rows": compat,
                "step_rows": step_rows(h),
                "raw_entries": list(raw.values()),
                "benchmarks": benchmarks,
                "chart": chart_svg(benchmarks, lang),
                "vendor_warnings": licences.warnings(h.get("vendor_licence"), h.get("vendor_icp"), lang),
            }
        )
    go = bool(hosts) and all(h["go"] for h in hosts)
    verdict = (
        "GO"
        if go
        else "no verdict"
        if hosts and all(h["verdict_word"] != "NO-GO" for h in hosts)
        else "NO-GO"
    )
    # name each warning with its host when the run has several hosts
    several = len(hosts) > 1
    warned = [
        {"host": str(h.get("name")), **w}
        | {"label": f"{h.get('name')}: {w['name']}" if several else w["name"]}
        for h in hosts
        for w in h["warned_checks"]
    ]
    unverified_names = [
        f"{h.get('name')}: {w['name']}" if several else w["name"]
        for h in hosts
        for w in h["unverified_checks"]
    ]
    suffix = warn_suffix([w["label"] for w in warned], lang, unverified_names) if go else ""
    explain = (
        t(
            "go_warn_explain",
            lang,
            n=len(warned),
            items="; ".join(f"{w['label']} ({w['actual']})" for w in warned),
        )
        if go and warned
        else t("go_explain" if go else "nogo_explain" if verdict == "NO-GO" else "noverdict_explain", lang)
    )
    return {
        "doc": _RUN_DEFAULTS | doc,
        "hosts": hosts,
        "go": go,
        "verdict": verdict,
        # the verdict word (translated in html/md) is followed by this; json: "GO with 2 warnings: ..."
        "headline_suffix": suffix,
        "headline": t(verdict, lang) + suffix,
        "explain": explain,
        "warned_checks": warned,
        "renderer_version": __version__,
        "any_benchmarks": any(h["benchmarks"] for h in hosts),
        # vendor numbers of the wrong form; raw evidence that no longer backs the verdicts (a
        # raw file edited or lost since the run), named at the top, not only in its table
        "warnings": [f"{h.get('name')}: {w}" for h in hosts for w in h["vendor_warnings"]]
        + [
            f"{h.get('name')}: {e['probe']} ({e['file']}): {e['status_text']}"
            for h in hosts
            for e in h["raw_entries"]
            if e["status"] != "verified"
        ],
        "lang": lang,
    }


# ---------------------------------------------------------------- rendering


def report_limits() -> Any:
    """What one report rendering may do: the user-template limits (templating.TemplateLimits),
    with room for a fleet's report (the raw evidence of hundreds of hosts is tens of MiB of
    HTML). A function: templating imports Jinja2, which commands without a report never need."""
    from gpuonboard.templating import MIB, TemplateLimits

    return TemplateLimits(text=64 * MIB, work=512 * MIB, steps=20_000_000, seconds=120.0)


def _bytecode_cache(kind: str) -> Any:
    """Compiled report templates kept between runs (the HTML report is written by every run:
    compiling it cost ~60 ms a run), in Jinja2's per-user cache folder (made 0700 and checked
    to be the user's), under a name of ours per kind of environment (`bounded`: the sandbox's
    code; `shipped`: plain Jinja2's): no other program's Jinja2, whose code is not bounded,
    shares the bounded entries (`-2`: the code our guard makes; a change of it, which the
    cache's checksum of the template source does not see, takes a new name). None where that
    folder cannot be had."""
    import jinja2

    name = {
        "bounded": "gpuonboard-bounded-report-2-%s.cache",
        "shipped": "gpuonboard-shipped-report-1-%s.cache",
    }
    try:
        return jinja2.FileSystemBytecodeCache(None, name[kind])
    except (OSError, RuntimeError):
        return None


@lru_cache(maxsize=8)
def _env(roots: tuple[str, ...], html: bool, shipped: bool = False) -> Any:
    """The report templates' environment (cached per template folders: Jinja then compiles each
    template once per process, not once per report). `shipped`: the environment for a template
    this package ships (see _environment_for)."""
    import jinja2

    from gpuonboard.templating import BoundedSandbox

    options: dict[str, Any] = {
        "loader": jinja2.FileSystemLoader(list(roots)),
        "bytecode_cache": _bytecode_cache("shipped" if shipped else "bounded"),
        "undefined": jinja2.StrictUndefined,
        "autoescape": html,
        "keep_trailing_newline": True,
        "trim_blocks": True,
        "lstrip_blocks": True,
    }
    filters = {"mdcell": md_cell, "mdcode": md_code, "size": _size}
    if shipped:
        env = jinja2.Environment(**options)
        env.filters.update(filters)
        return env
    # the bounded immutable sandbox, as for playbooks and templates/ (templating.py): a
    # project's own report template is configuration, never a way to run code on this machine
    # or to build a value without end
    return BoundedSandbox(**options, filters=filters)


def _environment_for(project: Path, name: str, html: bool) -> Any:
    """The environment that renders report template `name` for `project`: a template the project
    brings (its own templates/ folder holds `name`) renders in the bounded sandbox; the one this
    package ships, code of ours tested with it, renders in plain Jinja2 (the sandbox's checks on
    every attribute, call and output piece were about a third of a fleet's HTML report). Its
    output is still limited to report_limits().text."""
    from gpuonboard.resources import search_dirs, shipped_root

    roots = search_dirs(project, "templates")
    origin = next((root for root in roots if (root / name).is_file()), None)
    root = shipped_root()
    if origin is not None and root is not None and origin.resolve() == (root / "templates").resolve():
        return _env((str(origin),), html, shipped=True)
    return _env(tuple(str(d) for d in roots), html)


# Markdown (CommonMark/GFM) escaping of data: a backslash before each character that could
# start markup - raw HTML or an autolink (<), a table cell end (|), code (`), emphasis (*, and
# _ at a word edge), a link ([ ]), an entity (&name;) - and before a literal backslash. Text
# such as ">= 1.0 TB" stays as it is: HTML entities (&gt;) are for the HTML report only.
_MD_SPECIAL = re.compile(r"[\\`*\[\]<|]|&(?=#?\w+;)|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")


def md_cell(value: Any) -> str:
    """A value as one Markdown table cell: markup characters backslash-escaped, newlines as <br>."""
    text = "" if value is None else str(value)
    text = _MD_SPECIAL.sub(lambda m: "\\" + m.group(0), text)
    return text.replace("\r", "").replace("\n", "<br>")


def md_code(value: Any) -> str:
    """A value as inline code in a Markdown table cell (backslash escapes do not work in code:
    the fence is longer than any backtick run inside, and only `|` is escaped, for the table)."""
    text = ("" if value is None else str(value)).replace("\r", "").replace("\n", " ")
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text.replace('|', chr(92) + '|')}{pad}{fence}"


def render(
    doc: dict[str, Any],
    run_path: Path,
    fmt: str,
    project: Path,
    lang: str = "en",
    written: Mapping[str, bytes] | None = None,
) -> str:
    """The report text in html, md or json (json: always English, machine-readable); `written`:
    see _raw_entries."""
    lang = check_lang(lang)
    ctx = context(doc, run_path, "en" if fmt == "json" else lang, written)
    if fmt == "json":
        slim = {k: v for k, v in ctx.items() if k != "doc"}
        slim["run"] = {k: v for k, v in doc.items() if k != "hosts"}
        slim["hosts"] = [
            {k: v for k, v in h.items() if k not in ("steps", "step_rows", "chart")}
            | {"raw_entries": [{k: v for k, v in e.items() if k != "text"} for e in h["raw_entries"]]}
            for h in ctx["hosts"]
        ]
        return strict_dumps(slim, indent=2) + "\n"
    from markupsafe import Markup

    for h in ctx["hosts"]:
        h["chart"] = Markup(h["chart"])  # built from numbers and escaped names only

    def _(key: str, **fields: Any) -> str:
        return t(key, lang, **fields)

    return _render_template(
        project,
        fmt,
        f"report/{fmt}.j2",
        **ctx,
        _=_,
        report_file=report_name(fmt, lang),
        verdict_word=lambda v: verdict_word(v, lang),
        status_word=lambda s: status_word(s, lang),
    )


def preload(project: Path, fmt: str = "html") -> None:
    """Load the report template a run will render (its environment, imports and compiled
    code), so that a run can do it while its hosts still run."""
    _environment_for(project, f"report/{fmt}.j2", fmt == "html").get_template(f"report/{fmt}.j2")


def _render_template(project: Path, fmt: str, name: str, **fields: Any) -> str:
    """A report template rendered; its error (a project's own template that tries to reach
    Python internals, a syntax or expression error) is one sentence naming it (exit 2)."""
    import jinja2

    env = _environment_for(project, name, fmt == "html")
    where = name
    try:
        template = env.get_template(name)
        where = template.filename or name
        return _bounded_render(template, fields)
    except jinja2.TemplateError as exc:
        line = getattr(exc, "lineno", None)
        at = f"{getattr(exc, 'filename', None) or where}" + (f", line {line}" if line else "")
        why = str(exc).rstrip(".")
        raise UsageError(
            f"report template {at}: {why}; fix the template (or remove it to use the shipped one)."
        ) from None


def _bounded_render(template: Any, fields: dict[str, Any]) -> str:
    """The template's output within report_limits(). Rendered whole, not streamed piece by
    piece (a fleet's report is ~2,000 pieces a host): every piece is already charged to the
    rendering's work budget as it is written, so the text cannot outgrow that meanwhile."""
    from gpuonboard.templating import TemplateLimitError, _bounded

    limits = report_limits()
    with _bounded(limits):
        text = str(template.render(**fields))
    if len(text) > limits.text:
        raise TemplateLimitError(
            f"its output is longer than {limits.text >> 20} MiB, the most a report may be"
        )
    return text


def write_with_sha(path: Path, text: str) -> str:
    """Write the report and `<file>.sha256` beside it (sha256sum -c format); return the hex digest.

    A write that fails (a full disk) is one sentence naming the file (exit 2), not an internal
    error "rerun with --debug and report it"; the report is written whole or not at all."""
    sha_path = path.with_name(path.name + ".sha256")
    try:
        write_atomic(path, text)
        digest = sha256_bytes(path.read_bytes())
        write_atomic(sha_path, f"{digest}  {path.name}\n")
    except OSError as exc:
        raise UsageError(
            f"cannot write {path} ({exc.strerror or exc}); free space there (or fix its permissions)"
            " and run `invoke report` again."
        ) from None
    return digest


def report_name(fmt: str, lang: str = "en") -> str:
    """report.html, or report.zh.html for another language (json is always English)."""
    return f"report.{fmt}" if lang == "en" or fmt == "json" else f"report.{lang}.{fmt}"


def report(
    reports_dir: Path, run: str | None, fmt: str, project: Path, lang: str = "en"
) -> tuple[Path, str, bool]:
    """Render reports/<run>/report.<fmt>; return (path, sha256, go)."""
    if fmt not in FORMATS:
        raise UsageError(f"--format {fmt!r} is not one of {', '.join(FORMATS)}.")
    lang = check_lang(lang)
    path = run_dir(reports_dir, run)
    doc = load_summary(path / "summary.json")
    text = render(doc, path, fmt, project, lang)
    out = path / report_name(fmt, lang)
    digest = write_with_sha(out, text)
    return out, digest, context(doc, path)["go"]


# ---------------------------------------------------------------- comparison


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
