"""MkDocs hook: render the reference tables from the code and data files that define them.

A page holds a marker such as `<!-- gen:exit-codes -->`; `on_page_markdown` replaces it with a
Markdown table built from the code (the exit-code enum and the errors mapped to it, the Invoke
tasks and their flags, the step registry and its arguments, rule thresholds) or from a data file
under `src/gpuonboard/data/` (Xid actions, NGC releases, reference figures ...). So the docs cannot
drift from what the program does. An unknown marker fails the build (strict docs, one sentence).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import yaml

DATA = Path(__file__).resolve().parents[2] / "src" / "gpuonboard" / "data"
MARKER = re.compile(r"<!-- gen:([a-z0-9-]+) -->")


def _cell(value: Any) -> str:
    """One table cell: text with `|` and line breaks escaped; a URL becomes a link; None a dash."""
    if value is None or value == "":
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(_cell(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_cell(v)}" for k, v in value.items())
    text = " ".join(str(value).split()).replace("|", "\\|")
    return re.sub(r"(?<![(<])(https?://[^\s,;)]+)", r"<\1>", text)


def _table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A Markdown table."""
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def _first_line(doc: str | None) -> str:
    """The first sentence-line of a docstring (what the object is)."""
    return " ".join((inspect.cleandoc(doc or "").split("\n\n")[0]).split())


def exit_codes() -> str:
    """The ExitCode enum, with the error classes that map to each code."""
    from gpuonboard import errors

    classes: dict[int, list[str]] = {}
    for name, obj in vars(errors).items():
        if inspect.isclass(obj) and issubclass(obj, errors.GpuonboardError):
            classes.setdefault(int(obj.exit_code), []).append(f"`{name}`")
    rows = [
        (f"`{code.value}`", f"`{code.name}`", ", ".join(classes.get(code.value, [])))
        for code in errors.ExitCode
    ]
    return _table(["code", "name (`errors.ExitCode`)", "errors that exit with it"], rows)


def _flag(arg: Any) -> str:
    name = arg.names[0]
    if arg.positional:
        return f"`{name.upper()}` (positional)"
    kind = {bool: "", int: " N"}.get(arg.kind, " TEXT")
    return f"`--{name}{kind}`"


def tasks() -> str:
    """Every Invoke task (`invoke --list`), its one-line doc, and each flag with its help."""
    from gpuonboard.cli import ns

    parts = []
    for name in sorted(ns.task_names):
        task = ns[name]
        parts.append(f"### `invoke {name}`\n\n{_first_line(task.__doc__)}\n")
        rows = []
        for arg in task.get_arguments():
            default = arg.default if arg.default not in (None, "", False) else None
            rows.append((_flag(arg), arg.help, default))  # (get_arguments moves task.help here)
        parts.append(_table(["flag", "meaning", "default"], rows) if rows else "(no flags)")
    return "\n\n".join(parts)


def steps() -> str:
    """The step registry: each playbook `step:` type, whether it changes the host, its arguments."""
    from gpuonboard.steps import FACT_CHECKS, REGISTRY

    rows = []
    for name in REGISTRY:
        step = REGISTRY[name]
        kind = (
            "fact check" if name in FACT_CHECKS else ("read-only" if step.read_only else "changes the host")
        )
        args = "; ".join(f"`{k}`: {v}" for k, v in step.ARGS.items())
        rows.append((f"`{name}`", kind, _first_line(step.__doc__), args))
    return _table(["step", "kind", "what it is", "arguments"], rows)


def gpu_health_thresholds() -> str:
    """gpu_health's default thresholds (overridable by step args or `vars.gpu_health`)."""
    from gpuonboard.steps.checks.gpu_health import DEFAULTS

    return _table(["threshold", "default"], ((f"`{k}`", v) for k, v in DEFAULTS.items()))


def acceptance_tolerances() -> str:
    """The acceptance step's size tolerances (fraction that may be missing)."""
    from gpuonboard.steps.checks.acceptance import DEFAULT_TOLERANCE

    return _table(["argument", "default"], ((f"`{k}_tolerance`", v) for k, v in DEFAULT_TOLERANCE.items()))


def sim_profiles() -> str:
    """The simulator's hardware profiles (`sim.up --profile NAME`) and what each box is."""
    profiles = Path(__file__).resolve().parents[2] / "src" / "gpuonboard" / "testing" / "profiles"
    rows = []
    for path in sorted(profiles.glob("*.yml")):
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        rows.append((f"`{path.stem}`", doc.get("description", "")))
    return _table(
        ["profile", "the box (every output replayed from a real capture, or derived from one)"], rows
    )


def _load(name: str) -> Any:
    return yaml.safe_load((DATA / name).read_text(encoding="utf-8"))


def _data_table(name: str, key: str | None, columns: Sequence[str]) -> Callable[[], str]:
    """A renderer of one data file's rows (under `key`, or a top-level list) with `columns`."""

    def render() -> str:
        data = _load(name)
        rows = data[key] if key else data
        head = f"From `src/gpuonboard/data/{name}`"
        limits = (
            {k: v for k, v in data.items() if isinstance(v, int | float)} if isinstance(data, dict) else {}
        )
        if limits:
            head += " (" + ", ".join(f"`{k}`: {v}" for k, v in limits.items()) + ")"
        body = _table([f"`{c}`" for c in columns], ([r.get(c) for c in columns] for r in rows))
        return f"{head}:\n\n{body}"

    render.__doc__ = f"The rows of data/{name}."
    return render


def gpu_perf_floors() -> str:
    """The gpu_perf floors per GPU model (`*` a floor backed by a cited measurement, `†` a pass line)."""
    data = _load("gpu_perf_floors.yml")
    metrics = [
        "fp32_tflops", "tf32_tflops", "bf16_tflops", "fp16_tflops", "fp8_tflops",
        "membw_gbps", "h2d_gbps", "d2h_gbps", "p2p_nvlink_gbps", "power_w",
    ]  # fmt: skip
    rows = []
    for r in data["floors"]:
        match = " ".join(
            [str(r["gpu"]), str(r.get("form") or ""), f"{r['memory_gb']} GB" if r.get("memory_gb") else ""]
        ).strip() + (f" (not {', '.join(r['exclude'])})" if r.get("exclude") else "")
        cells = []
        for m in metrics:
            f = r["floors"].get(m)
            mark = "†" if f and f.get("kind") == "pass_line" else "*" if f and f["verified"] else ""
            cells.append("" if f is None else f"{f['value']:g}{mark}")
        rows.append((f"`{r['id']}`", match, *cells))
    head = (
        "From `src/gpuonboard/data/gpu_perf_floors.yml` (`*`: backed by a cited measurement, PASS"
        f" from {data.get('warn_band', 1.1)} x the floor, WARN from the floor, FAIL below; `†`: a"
        " production pass line, PASS from it, FAIL below, no warn band; unmarked: an estimate from"
        " a datasheet share, PASS from it, `unverified` below (no hardware claim); each number's"
        " source is in the file and `src/gpuonboard/data/SOURCES.md`)"
    )
    return f"{head}:\n\n" + _table(["row", "GPU", *(f"`{m}`" for m in metrics)], rows)


GENERATORS: dict[str, Callable[[], str]] = {
    "exit-codes": exit_codes,
    "tasks": tasks,
    "steps": steps,
    "gpu-health-thresholds": gpu_health_thresholds,
    "acceptance-tolerances": acceptance_tolerances,
    "sim-profiles": sim_profiles,
    "xid": _data_table("xid.yml", "xid", ["code", "name", "action", "nvidia_resolution", "verified"]),
    "ngc-pytorch": _data_table(
        "ngc_pytorch.yml",
        None,
        ["release", "cuda", "pytorch", "min_driver", "forward_compat", "architectures", "source"],
    ),
    "cuda-minor-compat": _data_table("cuda_minor_compat.yml", None, ["cuda_major", "min_driver", "source"]),
    "pcie-replay": _data_table("pcie_replay.yml", None, ["name", "value", "source", "verified"]),
    "nvlink-errors": _data_table("nvlink_errors.yml", "counters", ["name", "warn_at", "fail_at", "source"]),
    "nvlink-links": _data_table(
        "nvlink_links.yml", "models", ["match", "links", "nvswitch", "source", "verified"]
    ),
    "gpu-reference": _data_table(
        "gpu_reference.yml", "references", ["id", "gpu", "form", "images_per_s", "source", "verified"]
    ),
    "gpu-perf-floors": gpu_perf_floors,
    "allreduce-reference": _data_table(
        "allreduce_reference.yml",
        "references",
        ["id", "gpu", "gpus", "interconnect", "busbw_gbps", "source", "verified"],
    ),
    "gpu-catalogue": _data_table(
        "gpu_catalogue.yml",
        None,
        ["card", "memory_gb", "nvidia_smi_mib", "bf16_tflops", "interconnect", "class", "verified"],
    ),
}


def render_markers(markdown: str, where: str) -> str:
    """Replace every `<!-- gen:NAME -->` marker in `markdown`; an unknown NAME is an error."""

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            known = ", ".join(sorted(GENERATORS))
            raise ValueError(f"{where}: unknown marker gen:{name}; the known ones are: {known}")
        return GENERATORS[name]()

    return MARKER.sub(replace, markdown)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """MkDocs event: fill the page's generated tables before it is rendered."""
    return render_markers(markdown, page.file.src_path)
