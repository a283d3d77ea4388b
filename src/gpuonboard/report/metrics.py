"""Prometheus text files for node_exporter's textfile collector (`--metrics-file`): a run's
verdicts (`check`, `provision`: `run_families`, from the summary.json document) and the
monitor's latest GPU samples (`monitor_families`, named after DCGM exporter's fields), rendered
in the Prometheus text format (`render`, which OpenMetrics parsers read too: gauges only, and a
closing `# EOF`, a comment to the text format) and written atomically (`write`).

The textfile collector reads `*.prom` files of its directory whenever it is scraped: a file
written in place could be read half-written, so it is written to a hidden temp file beside it
(`.NAME.prom.<random>`, which no `*.prom` glob matches) and renamed over it, readable by
others (node_exporter runs as its own user). The collector refuses samples with timestamps:
the time of a figure is a metric of its own (`..._timestamp_seconds`). No I/O but `write`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuonboard import atomicfile, masking

PREFIX = "gpuonboard_"
HOST_VERDICTS = ("GO", "NO-GO", "no verdict")  # results.Word, as summary.json spells them
HOST_STATUSES = ("ok", "changed", "failed", "unreachable")
RULE_VERDICTS = ("pass", "warn", "fail", "unverified")
STEP_STATUSES = ("ok", "changed", "failed", "skipped")
_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


@dataclass
class Family:
    """One metric family: its name, help, type (gauge: every figure here can go down) and samples
    (label set, value), in order. A label set seen twice keeps its first value: the collector
    refuses a file with a duplicate series."""

    name: str
    help: str
    samples: list[tuple[dict[str, str], float]] = field(default_factory=list)
    type: str = "gauge"
    _seen: set[tuple[tuple[str, str], ...]] = field(default_factory=set, repr=False)

    def add(self, value: float | None, **labels: str) -> None:
        """One sample; a value that is unknown (None) is left out, never written as 0."""
        if value is None:
            return
        key = tuple(sorted(labels.items()))
        if key in self._seen:
            return
        self._seen.add(key)
        self.samples.append((labels, float(value)))


def escape_label(value: str) -> str:
    """A label value as the text format quotes it: backslash, double quote and line feed
    escaped (`\\\\`, `\\"`, `\\n`); every other character is itself (UTF-8)."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def escape_help(text: str) -> str:
    """A HELP text: backslash and line feed escaped (quotes stay as they are)."""
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def format_value(value: float) -> str:
    """A sample value as the text format writes it (integers without `.0`; NaN, +Inf, -Inf)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return str(int(value)) if value.is_integer() and abs(value) < 2**53 else repr(value)


def render(families: Iterable[Family]) -> str:
    """The text of a .prom file: per family with samples, its HELP and TYPE lines, then its
    samples; `# EOF` at the end (OpenMetrics' terminator; a comment to the text format)."""
    lines = []
    for fam in families:
        if not _NAME.fullmatch(fam.name):
            raise ValueError(f"not a metric name: {fam.name!r}")
        if not fam.samples:
            continue
        lines.append(f"# HELP {fam.name} {escape_help(fam.help)}")
        lines.append(f"# TYPE {fam.name} {fam.type}")
        for labels, value in fam.samples:
            bad = [k for k in labels if not _LABEL.fullmatch(k) or k.startswith("__")]
            if bad:
                raise ValueError(f"not a label name: {bad[0]!r}")
            inner = ",".join(f'{k}="{escape_label(str(v))}"' for k, v in labels.items())
            lines.append(
                f"{fam.name}{{{inner}}} {format_value(value)}"
                if inner
                else f"{fam.name} {format_value(value)}"
            )
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def write(path: Path, text: str) -> None:
    """Write the file atomically (temp file + rename), mode 0644 less the umask, so that
    node_exporter, another user, reads it whole; a secret of this run is masked as in every
    report. An OSError (a full disk, a missing folder) goes to the caller."""
    data = masking.mask_written(text).encode("utf-8", "backslashreplace")
    with atomicfile.replacing(path, mode=0o644, parents=False) as f:
        f.write(data)


def _number(value: Any) -> float | None:
    """A JSON number as a float; anything else (null, a string, a bool) is unknown."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _epoch(stamp: Any) -> float | None:
    """An RFC 3339 / ISO 8601 time of summary.json (`...Z`, `+00:00`, or the older `+0000`) as
    epoch seconds, or None."""
    from datetime import datetime

    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def run_families(doc: Mapping[str, Any]) -> list[Family]:
    """The metrics of one run from its summary.json document: when and how it ended, then per
    host its verdict, status, rules by verdict, each rule's and step's outcome and the GPUs
    found (and ordered)."""
    playbook = str(doc.get("playbook") or "")
    fams = {
        "run_timestamp": Family(f"{PREFIX}run_timestamp_seconds", "when the run finished (Unix time)"),
        "run_duration": Family(f"{PREFIX}run_duration_seconds", "how long the run took"),
        "run_exit": Family(
            f"{PREFIX}run_exit_code", "the run's exit code (0 GO, 1 NO-GO or a failed step, ...)"
        ),
        "verdict": Family(
            f"{PREFIX}host_verdict",
            "the host's verdict: 1 for its verdict (GO, NO-GO, no verdict), 0 for the others",
        ),
        "status": Family(f"{PREFIX}host_status", "the host's run status: 1 for its status, 0 for the others"),
        "rules": Family(f"{PREFIX}host_rules", "how many of the host's rules ended with each verdict"),
        "rule": Family(
            f"{PREFIX}rule_verdict",
            "each rule's verdict: 1 for its verdict (pass, warn, fail, unverified), 0 for the others",
        ),
        "step": Family(f"{PREFIX}step_status", "each step's status: 1 for its status, 0 for the others"),
        "gpus": Family(f"{PREFIX}host_gpus", "GPUs the host's nvidia-smi listed"),
        "ordered": Family(f"{PREFIX}host_gpus_ordered", "GPUs of the host's order"),
        "gpu": Family(
            f"{PREFIX}gpu_info", "one GPU the host's nvidia-smi listed (always 1; labels as DCGM exporter's)"
        ),
        "duration": Family(f"{PREFIX}host_duration_seconds", "how long the host's run took"),
    }
    run = {"playbook": playbook}
    fams["run_timestamp"].add(_epoch(doc.get("finished")), **run)
    fams["run_duration"].add(_number(doc.get("duration")), **run)
    fams["run_exit"].add(_number(doc.get("exit_code")), **run)
    for host in doc.get("hosts") or []:
        if isinstance(host, Mapping):
            _host_samples(fams, host)
    return list(fams.values())


def _host_samples(fams: Mapping[str, Family], host: Mapping[str, Any]) -> None:
    name = str(host.get("name"))
    word = _field(host, "verdict").get("word")
    for each in HOST_VERDICTS:
        fams["verdict"].add(1 if word == each else 0, host=name, verdict=each)
    for each in HOST_STATUSES:
        fams["status"].add(1 if host.get("status") == each else 0, host=name, status=each)
    fams["duration"].add(_number(host.get("duration")), host=name)
    counts = dict.fromkeys(RULE_VERDICTS, 0)
    for step in host.get("steps") or []:
        if not isinstance(step, Mapping):
            continue
        step_name = str(step.get("step"))
        for each in STEP_STATUSES:
            fams["step"].add(1 if step.get("status") == each else 0, host=name, step=step_name, status=each)
        for check in step.get("checks") or []:
            if not isinstance(check, Mapping):
                continue
            got = str(check.get("verdict"))
            counts[got] = counts.get(got, 0) + 1
            for each in RULE_VERDICTS if got in RULE_VERDICTS else (*RULE_VERDICTS, got):
                fams["rule"].add(
                    1 if got == each else 0,
                    host=name,
                    step=step_name,
                    rule=str(check.get("name")),
                    verdict=each,
                )
    for each, count in counts.items():
        fams["rules"].add(count, host=name, verdict=each)
    facts = _field(host, "facts")
    if facts:
        fams["gpus"].add(_number(facts.get("gpu_count")), host=name)
        for gpu in facts.get("gpus") or []:
            if isinstance(gpu, Mapping):
                fams["gpu"].add(1, **_gpu_labels(name, gpu.get("index"), gpu.get("uuid"), gpu.get("name")))
    fams["ordered"].add(_number(_field(host, "order").get("gpu_count")), host=name)


def _field(record: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """An object field of a record, or {} (missing, null, or of another type)."""
    value = record.get(key)
    return value if isinstance(value, Mapping) else {}


def _gpu_labels(host: str, index: Any, uuid: Any, model: Any) -> dict[str, str]:
    """A GPU's labels, spelled as DCGM exporter spells them (`gpu`, `UUID`, `modelName`), so a
    dashboard's joins work on both."""
    return {"host": host, "gpu": str(index), "UUID": str(uuid or ""), "modelName": str(model or "")}


# The monitor's figures: (our name, the GpuSample field, the DCGM exporter field it matches, help)
MONITOR_GAUGES: tuple[tuple[str, str, str, str], ...] = (
    ("gpu_util", "util_pct", "DCGM_FI_DEV_GPU_UTIL", "GPU utilization (%)"),
    ("fb_used", "mem_used_mib", "DCGM_FI_DEV_FB_USED", "framebuffer memory used (MiB)"),
    ("fb_free", "mem_free_mib", "DCGM_FI_DEV_FB_FREE", "framebuffer memory free (MiB)"),
    ("fb_total", "mem_total_mib", "DCGM_FI_DEV_FB_TOTAL", "framebuffer memory in all (MiB)"),
    ("gpu_temp", "temp_c", "DCGM_FI_DEV_GPU_TEMP", "GPU temperature (C)"),
    ("power_usage", "power_w", "DCGM_FI_DEV_POWER_USAGE", "power draw (W)"),
    ("enforced_power_limit", "power_limit_w", "DCGM_FI_DEV_ENFORCED_POWER_LIMIT", "enforced power limit (W)"),
    ("pstate", "pstate_number", "DCGM_FI_DEV_PSTATE", "performance state (0 for P0, the fastest)"),
)


def _sample_value(sample: Any, attribute: str) -> float | None:
    if attribute == "mem_free_mib":
        used, total = getattr(sample, "mem_used_mib", None), getattr(sample, "mem_total_mib", None)
        return None if used is None or total is None else float(total - used)
    if attribute == "pstate_number":
        pstate = str(getattr(sample, "pstate", None) or "")
        return float(pstate[1:]) if re.fullmatch(r"P\d{1,2}", pstate) else None
    return _number(getattr(sample, attribute, None))


def monitor_families(states: Sequence[Any], running: bool, now: float) -> list[Family]:
    """The monitor's metrics from its hosts' states (watch.samples.HostState): per GPU of each
    host's latest sample the DCGM-like gauges, its active throttle reasons and faults; per host
    whether it streams now, its GPUs, reconnects and the time of its last sample."""
    fams = [Family(f"{PREFIX}{name}", f"{text}, as {dcgm}") for name, _, dcgm, text in MONITOR_GAUGES]
    throttle = Family(f"{PREFIX}clock_throttle_reason", "1 per clock throttle reason active now")
    faults = Family(f"{PREFIX}gpu_fault", "1 per fault nvidia-smi printed instead of a GPU's values")
    alerts = Family(
        f"{PREFIX}gpu_alerts", "how many alerts a GPU raises now (temperature, memory, throttling)"
    )
    up = Family(f"{PREFIX}monitor_host_up", "1 while the host's stream is live, 0 while connecting or stale")
    seen = Family(f"{PREFIX}monitor_host_gpus", "GPUs in the host's last whole sample")
    reconnects = Family(f"{PREFIX}monitor_host_reconnects", "reconnections since the monitor started")
    stamp = Family(
        f"{PREFIX}monitor_last_sample_timestamp_seconds", "when the host's last sample arrived (Unix time)"
    )
    monitor = Family(f"{PREFIX}monitor_running", "1 while `monitor` writes this file, 0 once it stopped")
    written = Family(f"{PREFIX}monitor_timestamp_seconds", "when this file was written (Unix time)")
    monitor.add(1 if running else 0)
    written.add(now)
    for st in states:
        up.add(1 if st.status == "live" else 0, host=st.name)
        seen.add(st.gpus_seen, host=st.name)
        reconnects.add(st.reconnects, host=st.name)
        if st.gpus:
            stamp.add(max(s.ts for s in st.gpus.values()), host=st.name)
        for index in sorted(st.gpus):
            sample = st.gpus[index]
            labels = _gpu_labels(st.name, sample.index, sample.uuid, sample.name)
            for fam, (_, attribute, _, _) in zip(fams, MONITOR_GAUGES, strict=True):
                fam.add(_sample_value(sample, attribute), **labels)
            for reason in sample.throttle:
                throttle.add(1, **labels, reason=str(reason))
            for fault in sample.faults:
                faults.add(1, **labels, fault=str(fault))
            alerts.add(len(sample.alerts), **labels)
    return [*fams, throttle, faults, alerts, up, seen, reconnects, stamp, monitor, written]
