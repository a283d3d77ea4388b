"""The report's view model: what the templates show of a run and of each host (`context`),
computed from summary.json as recorded (verdicts are never judged again): ordered vs delivered
(`order_rows`), the verdict and its headline, the raw evidence checked against its recorded
sha256 (`_raw_entries`), the benchmark chart (`chart_svg`), the warned checks and the steps."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from gpuonboard import __version__, licences, results
from gpuonboard.facts.gpu_probes import GPU_PROBES
from gpuonboard.i18n import status_word, t
from gpuonboard.report.runs import legacy_safe_name, raw_file, sha256_bytes
from gpuonboard.units import finite_number, format_bytes, ram_order_bytes

RAW_INLINE_LIMIT = 256 * 1024  # raw text shown inline per probe; the file holds it all

# Which probe outputs a rule's verdict is computed from (see connection/probe_commands.py core_probes).
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
            "gpu_recovery",
            "pcie_link",
            "pcie_replays",
            "power_limit",
            "throttling",
            "temperature",
            "sensor_faults",
            "persistence_mode",
            "compute_mode",
            "mig_mode",
            "virtualization",
            "vgpu_license",
            "ngc_driver",
            "gpu_health",  # "nothing checked" (no driver / no GPU listed)
            "gpu_identity",
        ),
        _GPU,
    ),
    "foreign_processes": (*_GPU, "nvidia_smi_apps"),
    "cpu_cores": ("lscpu", "nproc"),
    "ram": ("free", *_GPU),  # (nvidia-smi: a GPU that shares the system's memory)
    "data_disk": ("df", "lsblk"),
    "interconnect": ("nvidia_topo",),
    "host_cuda_toolkit": ("nvcc",),
    "gpu_xid": ("kernel_log",),
    "nvswitch_sxid": ("kernel_log",),
    "host_hw_errors": ("kernel_log",),
    "nvlink_links": ("nvidia_nvlink",),
    "nvlink_errors": ("nvidia_nvlink_errors",),
    "fabric_manager": ("fabric_manager", "nvidia_smi", "nvidia_smi_q"),
    "rdma_ports": ("rdma_ports",),
}
COMPAT_STEPS = ("driver_compat", "container")
HEALTH_STEPS = ("gpu_health",)


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

    count = facts.get("gpu_count")  # (None: nvidia-smi failed or is missing, not "0 GPUs")
    rows = [
        ("gpu_model", order.get("gpu_model"), delivered("gpu_model", str(facts.get("gpu_model") or "-"))),
        ("gpu_count", order.get("gpu_count"), delivered("gpu_count", "-" if count is None else str(count))),
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
    host: dict[str, Any],
    run_path: Path,
    written: Mapping[str, bytes] | None = None,
    texts: Mapping[str, str] | None = None,
) -> dict[str, dict[str, Any]]:
    """Per probe: recorded sha256/bytes, whether the raw file still matches, and its text.
    `written`: the bytes this process just wrote to the run's raw files, by file
    (`raw/<host>/<probe>.txt`, jsonfile.write_raw), for the summary whose sha256 were computed
    from those very bytes (jsonfile.host_json): matching by construction, they are not read back
    nor hashed again (13 MiB at 50 hosts), only their length is checked. `texts`: by file, the
    ASCII text such bytes were encoded from (jsonfile.raw_outputs_and_texts), which is what
    decoding them gives: kept as it is, not decoded again (a copy: ~200 kB a host)."""
    out = {}
    for probe, rec in sorted((host.get("raw") or {}).items()):
        recorded = rec.get("file")
        known = written is not None and isinstance(recorded, str) and recorded in written
        # (a file written by this process is neither read nor named through a Path: ~23 a host)
        path = None if known else _raw_path(run_path, str(host.get("name", "")), probe, rec)
        entry: dict[str, Any] = {
            "probe": probe,
            "sha256": rec.get("sha256", ""),
            "bytes": rec.get("bytes", 0),
            "exit_code": rec.get("exit_code"),
            # (a key of `written` is already the canonical relative path)
            "file": recorded if path is None else str(path.relative_to(run_path)),
            "text": "",
            "truncated": False,
        }
        try:
            data = (written or {})[recorded] if path is None else path.read_bytes()
        except OSError:
            entry["status"] = "file missing"
        else:
            same = len(data) == entry["bytes"] if known else sha256_bytes(data) == entry["sha256"]
            entry["status"] = "verified" if same else "HASH MISMATCH"
            text = _known_text(texts, recorded, data) if known else None
            if text is None:
                text = data.decode("utf-8", "replace")
            entry["truncated"] = len(text) > RAW_INLINE_LIMIT
            entry["text"] = text[:RAW_INLINE_LIMIT]
        out[probe] = entry
    return out


def _known_text(texts: Mapping[str, str] | None, name: str, data: bytes) -> str | None:
    """The text `data` (a raw file's bytes this process wrote) was encoded from, where `texts`
    holds it as ASCII: decoding `data` gives that very text (an ASCII text's bytes are as many
    as its characters)."""
    text = texts.get(name) if texts is not None else None
    return text if text is not None and text.isascii() and len(text) == len(data) else None


def chart_svg(benchmarks: Sequence[dict[str, Any]], lang: str = "en") -> str:
    """An inline SVG bar chart: each benchmark's value beside its reference (no JavaScript).

    Only numbers reach the markup; names are escaped."""
    from markupsafe import escape

    rows = [b for b in benchmarks if finite_number(b.get("value")) is not None]
    if not rows:
        return ""
    width, label_w, bar_h, gap = 640, 200, 14, 10
    top = max(max(float(b["value"]), finite_number(b.get("reference")) or 0.0) for b in rows) or 1.0
    scale = (width - label_w - 90) / top
    parts = []
    y = 10
    for b in rows:
        value = float(b["value"])
        ref = finite_number(b.get("reference"))
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
    checks of a NO-GO and its unverified ones (', failed: gpu_count, vram; 1 unverified: ecc_mode'),
    else its reasons."""
    if v.go:
        return True, warn_suffix(v.warned, lang, v.unverified)
    if v.failed:
        # (what was not verified is said too: fixing the failed checks alone is not a GO)
        # (under --strict an unverified check is among the failed ones already: named once)
        doubts = [name for name in v.unverified if name not in v.failed]
        unverified = t("and_unverified", lang, n=len(doubts), items=", ".join(doubts))
        return False, t("nogo_failed", lang, items=", ".join(v.failed)) + (unverified if doubts else "")
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


def _rule_rows(host: dict[str, Any], raw: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The host's rules as recorded, each with its evidence: the probes (name, sha256) its
    verdict is computed from (RULE_PROBES) that the run recorded."""
    rules = []
    for r in host.get("rules") or []:
        probes = [raw[p] for p in RULE_PROBES.get(str(r.get("name")), ()) if p in raw]
        rules.append({**r, "evidence": [{"probe": p["probe"], "sha256": p["sha256"]} for p in probes]})
    return rules


def _compat_rows(host: dict[str, Any]) -> list[dict[str, Any]]:
    """The checks of the host's compatibility steps (COMPAT_STEPS), each naming its step; a step
    that recorded no checks is one row of its own (its msg; fail when the step failed)."""
    return [
        {**c, "step": s.get("step")}
        for s in host.get("steps") or []
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


def host_view(
    h: dict[str, Any],
    run_path: Path,
    lang: str,
    written: Mapping[str, bytes] | None,
    strict: bool,
    texts: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """One host as the templates show it: its record (fields it lacks as `-`), its recorded
    verdict and headline, and the tables (order, rules, compat checks, steps, raw evidence)."""
    host_v = results.recorded(h, strict)  # (the run's verdict, never judged again)
    go, reasons = host_verdict(host_v, lang)
    raw = _raw_entries(h, run_path, written, texts)  # (texts: see _raw_entries)
    for e in raw.values():
        e["status_text"] = t(_RAW_STATUS_KEY[e["status"]], lang)
    rules = _rule_rows(h, raw)
    compat = _compat_rows(h)
    benchmarks = list(h.get("benchmarks") or [])
    warned = warned_checks(h)
    unverified = warned_checks(h, "unverified")
    return {
        **_HOST_DEFAULTS,
        **h,
        "go": go,
        "verdict_word": host_v.word,
        "warned_checks": warned,
        "unverified_checks": unverified,
        # after the GO word: " with 2 warnings: mig_mode, persistence_mode" ("" for NO-GO)
        "headline_suffix": warn_suffix([w["name"] for w in warned], lang, host_v.unverified) if go else "",
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


def _run_verdict(hosts: Sequence[dict[str, Any]]) -> tuple[bool, str]:
    """The run's GO (every host GO) and its verdict token: GO, NO-GO, or `no verdict` when no
    host is NO-GO but not all are GO."""
    go = bool(hosts) and all(h["go"] for h in hosts)
    verdict = (
        "GO"
        if go
        else "no verdict"
        if hosts and all(h["verdict_word"] != "NO-GO" for h in hosts)
        else "NO-GO"
    )
    return go, verdict


def _run_checks(hosts: Sequence[dict[str, Any]], verdict: str = "warn") -> list[dict[str, str]]:
    """The run's checks of this verdict (`warn`, `unverified`), each with its host and `label`:
    named with its host when the run has several hosts."""
    several = len(hosts) > 1
    key = "warned_checks" if verdict == "warn" else "unverified_checks"
    return [
        {"host": str(h.get("name")), **w}
        | {"label": f"{h.get('name')}: {w['name']}" if several else w["name"]}
        for h in hosts
        for w in h[key]
    ]


def _listed(checks: Sequence[dict[str, str]]) -> str:
    return "; ".join(f"{c['label']} ({c['actual']})" for c in checks)


def _explain(
    go: bool,
    verdict: str,
    warned: Sequence[dict[str, str]],
    lang: str,
    unverified: Sequence[dict[str, str]] = (),
) -> str:
    """The sentence under the run's verdict: for a GO, the warned checks and those that could
    not be verified (never "every rule passed" while one was not verified); else what the
    verdict means."""
    if not go:
        return t("nogo_explain" if verdict == "NO-GO" else "noverdict_explain", lang)
    if warned:
        text = t("go_warn_explain", lang, n=len(warned), items=_listed(warned))
    else:
        text = t("go_nofail_explain" if unverified else "go_explain", lang)
    if unverified:
        text += " " + t("go_unverified_explain", lang, n=len(unverified), items=_listed(unverified))
    return text


def _top_warnings(hosts: Sequence[dict[str, Any]]) -> list[str]:
    """Vendor numbers of the wrong form; raw evidence that no longer backs the verdicts (a raw
    file edited or lost since the run), named at the top, not only in its table."""
    return [f"{h.get('name')}: {w}" for h in hosts for w in h["vendor_warnings"]] + [
        f"{h.get('name')}: {e['probe']} ({e['file']}): {e['status_text']}"
        for h in hosts
        for e in h["raw_entries"]
        if e["status"] != "verified"
    ]


def context(
    doc: dict[str, Any],
    run_path: Path,
    lang: str = "en",
    written: Mapping[str, bytes] | None = None,
    prepared: Callable[[dict[str, Any], str, bool], dict[str, Any] | None] | None = None,
) -> dict[str, Any]:
    """Everything the templates show (fixed texts in `lang`; data and verdicts as recorded;
    `written`: the raw files' bytes as just written, see _raw_entries; `prepared`: a host
    record's view made from that very record, lang and strict while the run went on
    (report/early.py), else None)."""
    strict = bool(doc.get("strict"))
    hosts = [
        (prepared(h, lang, strict) if prepared is not None else None)
        or host_view(h, run_path, lang, written, strict)
        for h in doc.get("hosts") or []
    ]
    go, verdict = _run_verdict(hosts)
    warned, unverified = _run_checks(hosts), _run_checks(hosts, "unverified")
    suffix = warn_suffix([w["label"] for w in warned], lang, [u["label"] for u in unverified]) if go else ""
    return {
        "doc": _RUN_DEFAULTS | doc,
        "hosts": hosts,
        "go": go,
        "verdict": verdict,
        # the verdict word (translated in html/md) is followed by this; json: "GO with 2 warnings: ..."
        "headline_suffix": suffix,
        "headline": t(verdict, lang) + suffix,
        "explain": _explain(go, verdict, warned, lang, unverified),
        "warned_checks": warned,
        "renderer_version": __version__,
        "any_benchmarks": any(h["benchmarks"] for h in hosts),
        # vendor numbers of the wrong form; raw evidence that no longer backs the verdicts
        "warnings": _top_warnings(hosts),
        "lang": lang,
    }
