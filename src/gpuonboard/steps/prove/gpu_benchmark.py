"""`gpu_benchmark` step (issue 7): synthetic ResNet-50 training images/s per GPU and a
sustained-load window, against `data/gpu_reference.yml`; likely causes of a low figure come from
the gpu_health rules over the facts and from the nvidia-smi samples taken under load."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from gpuonboard.errors import UsageError
from gpuonboard.facts.nvidia_smi import GpuInfo
from gpuonboard.resources import DATA_DIR
from gpuonboard.steps.base import Check, Plan, Step, StepArgsError, StepContext, Verdict
from gpuonboard.steps.checks import gpu_health
from gpuonboard.steps.prove.launch import _LAUNCH_ARGS, _float_arg, _int_arg, launch_settings, run_script
from gpuonboard.steps.prove.references import mig_note, row_matches_name, variant_note
from gpuonboard.steps.prove.rules import (
    _gpu_count,
    _pct,
    _summary,
    broken_driver_sentence,
    hidden_gpus_sentence,
    nvidia_smi_failure,
)
from gpuonboard.yamlload import load_yaml

GPU_REFERENCE_FILE = DATA_DIR / "gpu_reference.yml"
# reasons seen under load that slow a GPU (gpu_idle / sync_boost / display clocks do not)
SLOWING = ("sw_power_cap", *gpu_health.HARD_THROTTLE)


def load_gpu_references(path: Path = GPU_REFERENCE_FILE) -> dict[str, Any]:
    """The ResNet-50 reference table (see the comment at the top of the file)."""
    data = load_yaml(path, UsageError, "GPU benchmark reference")
    if not isinstance(data, dict) or not isinstance(data.get("references"), list):
        raise UsageError(f"{path}: needs a 'references:' list")
    for row in data["references"]:
        if not isinstance(row, dict) or not row.get("id") or not row.get("source"):
            raise UsageError(f"{path}: every reference needs an id and a source")
        if not isinstance(row.get("images_per_s"), (int, float)) or row["images_per_s"] <= 0:
            raise UsageError(f"{path}: reference {row.get('id')}: images_per_s must be a positive number")
    return data


def match_gpu_reference(table: Mapping[str, Any], gpu_name: str) -> dict[str, Any] | None:
    """The first row whose `gpu` (and `form`, when given) names part of the GPU name (see
    prove.name_has: "H200" does not match a GH200, "A10" not an A100)."""
    for row in table["references"]:
        if row.get("gpu") and row_matches_name(row, gpu_name):
            return dict(row)
    return None


def default_timeout(duration: float) -> float:
    """Seconds the benchmark may take when no timeout is set: 20 min, or the sustained window
    asked for plus 10 min (start-up, batch-size search, timed steps), so a long
    `benchmark_duration` is not stopped part-way by the default."""
    return max(1200.0, duration + 600.0)


def likely_causes(gpus: Sequence[GpuInfo], samples: Mapping[str, Any] | None) -> list[str]:
    """Why a GPU may be slow: the gpu_health rules that did not pass over the facts, and the
    slowing clock-event reasons seen in the samples under load (with their share)."""
    causes: list[str] = []
    if gpus:
        for check in (
            gpu_health.rule_throttle(list(gpus)),
            gpu_health.rule_pcie_link(list(gpus)),
            gpu_health.rule_power_limit(
                list(gpus), gpu_health.DEFAULTS["power_cap_warn"], gpu_health.DEFAULTS["power_cap_fail"]
            ),
        ):
            if check.verdict != "pass" and check.actual not in ("not reported",):
                causes.append(f"{check.name}: {check.actual}")
    for idx, s in sorted((samples or {}).items()):
        seen = {k: v for k, v in (s.get("reasons") or {}).items() if k in SLOWING and v > 0}
        if seen:
            what = ", ".join(f"{k} {v * 100:.0f} % of samples" for k, v in seen.items())
            causes.append(f"GPU {idx} under load: {what}")
    return causes


def cpu_benchmark_checks(r: Mapping[str, Any], gpus: Sequence[GpuInfo]) -> list[Check]:
    """`resnet50_throughput` per worker of a run on the CPU: information only, with the
    reason when nvidia-smi lists GPUs that torch could not use."""
    checks: list[Check] = []
    for w in list(r.get("workers") or []):
        checks.append(
            Check(
                "resnet50_throughput",
                "(information only: CPU, fp32, no GPU reference)",
                f"{float(w.get('images_per_s') or 0):,.1f} images/s on the CPU"
                f" (batch {w.get('batch_size')},"
                f" {r.get('image_size')} px)",
                "pass",
                "measured on the CPU: the GPU figure needs a CUDA PyTorch"
                + (
                    f" (nvidia-smi lists {len(gpus)} GPU(s) but torch has no CUDA: use the NGC container)"
                    if gpus
                    else ""
                ),
            )
        )
    return checks


def throughput_check(
    r: Mapping[str, Any],
    w: Mapping[str, Any],
    gpus: Sequence[GpuInfo],
    table: Mapping[str, Any],
    causes: Callable[[], list[str]],
) -> Check:
    """`resnet50_gpu<N>`: one GPU's images/s against its reference row (`causes`: the likely
    causes of a low figure, computed once per run when first asked)."""
    warn_below = float(table.get("warn_below", 0.85))
    fail_below = float(table.get("fail_below", 0.5))
    size_note = (
        "" if int(r.get("image_size") or 224) == 224 else f" at {r.get('image_size')} px (reference: 224 px)"
    )
    idx = w.get("gpu")
    name = str(w.get("device_name") or (gpus[idx].name if idx is not None and idx < len(gpus) else ""))
    ips = float(w.get("images_per_s") or 0.0)
    peak = w.get("peak_mem_bytes")
    actual = f"GPU {idx} {name}: {ips:,.0f} images/s (batch {w.get('batch_size')}, AMP fp16"
    actual += f", peak {peak / (1 << 30):.1f} GiB)" if peak else ")"
    info = gpus[idx] if isinstance(idx, int) and 0 <= idx < len(gpus) else None
    mig = mig_note(idx, name, info)
    ref = None if mig else match_gpu_reference(table, name)
    if ref is None:
        return Check(
            f"resnet50_gpu{idx}",
            f"a reference for {name}",
            actual,
            "warn",
            (f"{note}; " if (note := mig or variant_note(name)) else "")
            + "no reference row for this GPU; add one to data/gpu_reference.yml",
        )
    want = float(ref["images_per_s"])
    ratio = ips / want if want else 0.0
    if size_note:
        # images/s scale with the pixels per image: another size cannot be judged by this row
        return Check(
            f"resnet50_gpu{idx}",
            f">= {warn_below * want:,.0f} images/s at 224 px ({ref['id']})",
            f"{actual}{size_note}: not comparable",
            "warn",
            f"images/s at {r.get('image_size')} px say nothing against a 224 px reference (a"
            " smaller image trains many times faster); unset benchmark_image_size (default"
            " 224) for a verdict on this GPU",
        )
    verdict: Verdict = "pass" if ratio >= warn_below else "warn" if ratio >= fail_below else "fail"
    detail = ""
    if verdict != "pass":
        found = (
            "; ".join(causes())
            if causes()
            else "none found in the facts (no throttling, full PCIe link, default power limit)"
        )
        detail = (
            f"below {_pct(warn_below)} of the reference: likely causes: {found}."
            " Without one: virtualisation overhead, another tenant's load, or an older software"
            f" stack; reference source {ref.get('source')}"
            + ("" if ref.get("verified") else " (reference not verified)")
        )
    return Check(
        f"resnet50_gpu{idx}",
        f">= {warn_below * want:,.0f} images/s ({_pct(warn_below)} of {want:,.0f}, {ref['id']})",
        f"{actual}, {_pct(ratio)} of reference",
        verdict,
        detail,
    )


def sustained_check(
    w: Mapping[str, Any], samples: Mapping[str, Any] | None, sustained_drop_warn: float
) -> Check | None:
    """`sustained_gpu<N>`: the GPU's throughput holds over the run, no thermal or hardware
    slowdown while it ran; None when the worker measured no first/last figures."""
    idx = w.get("gpu")
    sus = w.get("sustained") or {}
    first, last = sus.get("first_images_per_s"), sus.get("last_images_per_s")
    if not (first and last):
        return None
    drop = 1 - float(last) / float(first)
    s_idx = samples.get(str(idx)) if samples else None
    extra = ""
    if s_idx:
        extra = "; " + load_summary(s_idx)
    slowing = {k: v for k, v in ((s_idx or {}).get("reasons") or {}).items() if k in gpu_health.HARD_THROTTLE}
    bad = drop > sustained_drop_warn or bool(slowing)
    # the sampler ran but gave this GPU no sample, or no clock-event reasons mask in any ([N/A],
    # [Not Supported]): no slowdown seen is no slowdown read (a summary from before
    # `reasons_samples` was counted is taken as read; no sampler at all: load_sampling says so)
    unread = samples is not None and (not s_idx or s_idx.get("reasons_samples") == 0)
    if unread and not bad:
        extra += "; clock-event reasons not read (no sample, or [N/A] / [Not Supported] in every one)"
    return Check(
        f"sustained_gpu{idx}",
        f"throughput holds over {float(sus.get('seconds') or 0):.0f} s"
        f" (drop <= {_pct(sustained_drop_warn)}),"
        " no thermal/hardware slowdown",
        f"{float(first):,.0f} -> {float(last):,.0f} images/s ({-drop * 100:+.0f} %){extra}"
        + (f"; slowdown: {', '.join(sorted(slowing))}" if slowing else ""),
        "warn" if bad else "unverified" if unread else "pass",
        "the GPU slows down under sustained load: cooling, power delivery or a capped limit;"
        " ask the vendor to check"
        if bad
        else "the throughput held, but nvidia-smi gave no clock-event reasons under load, so a"
        " thermal or hardware slowdown could not be seen: no claim either way"
        if unread
        else "",
    )


def benchmark_checks(
    r: Mapping[str, Any],
    table: Mapping[str, Any],
    gpus: Sequence[GpuInfo],
    sustained_drop_warn: float = 0.1,
) -> list[Check]:
    """Rules over a gpu_benchmark.py result (pure)."""
    checks: list[Check] = []
    workers = list(r.get("workers") or [])
    errors = list(r.get("worker_errors") or [])
    samples = r.get("samples") if isinstance(r.get("samples"), dict) else None
    if r.get("device") != "cuda":
        return cpu_benchmark_checks(r, gpus)
    if errors:
        checks.append(
            Check(
                "resnet50_workers",
                "every GPU ran the benchmark",
                "; ".join(errors)[-400:],
                "fail",
                "a GPU that cannot train ResNet-50 cannot train your model; see gpu_health",
            )
        )
    seen = r.get("cuda_device_count")
    seen = int(seen) if isinstance(seen, int) else len(workers) + len(errors)
    if gpus and seen < len(gpus):
        checks.append(
            Check(
                "resnet50_gpus",
                f"all {len(gpus)} GPUs nvidia-smi lists",
                f"torch saw {seen}: {seen} benchmarked",
                "fail",
                hidden_gpus_sentence(seen, len(gpus)),
            )
        )
    found: list[list[str]] = []  # the likely causes, looked for once, when a GPU is slow

    def causes() -> list[str]:
        if not found:
            found.append(likely_causes(gpus, samples))
        return found[0]

    for w in workers:
        checks.append(throughput_check(r, w, gpus, table, causes))
        sustained = sustained_check(w, samples, sustained_drop_warn)
        if sustained is not None:
            checks.append(sustained)
    if r.get("sampler") is None:
        checks.append(
            Check(
                "load_sampling",
                "nvidia-smi samples under load",
                "nvidia-smi not found where the benchmark ran",
                "warn",
                "clocks, temperature, power and throttle reasons under load were not sampled",
            )
        )
    return checks


def _num(value: Any) -> str:
    try:
        return f"{float(value):.0f}"
    except (TypeError, ValueError):
        return "?"


def load_summary(s: Mapping[str, Any]) -> str:
    """One GPU's sampler summary as text: clocks and power under load, hottest temperature."""
    load = s.get("load_samples")  # absent in a summary from an older host-side script
    if load is None:
        where = "all samples"
    else:
        where = "under load" if load else "all samples (none at >= 50 % utilisation)"
    return (
        f"{where}: SM clock {_num(s.get('sm_clock_min_mhz'))}-{_num(s.get('sm_clock_median_mhz'))}"
        f" (max {_num(s.get('sm_clock_max_mhz'))}) MHz, median {_num(s.get('power_median_w'))}"
        f" of {_num(s.get('power_limit_w'))} W; max {_num(s.get('temp_max_c'))} °C"
    )


class GpuBenchmarkStep(Step):
    """Synthetic ResNet-50 training throughput per GPU and a sustained-load window."""

    name = "gpu_benchmark"
    read_only = True
    ARGS = {
        **_LAUNCH_ARGS,
        "duration": "sustained-load window in seconds (default: vars.benchmark_duration, else 120 on GPU)",
        "steps": "timed steps (default 50 on GPU, 3 on CPU)",
        "batch_size": "per-GPU batch (default: sized to GPU memory)",
        "image_size": "image side in pixels (default 224; the reference is for 224)",
        "sustained_drop_warn": "warn when the last window is this fraction below the first (default 0.1)",
    }

    def plan(self, ctx: StepContext) -> Plan:
        """Run the benchmark (not in check mode) and judge it against the reference table."""
        v = ctx.host.vars
        try:
            duration = _float_arg(self, v, "duration", "benchmark_duration", -1)
            launch = launch_settings(self, v, default_timeout(duration))
            steps = _int_arg(self, v, "steps", "benchmark_steps", 0)
            batch = _int_arg(self, v, "batch_size", "benchmark_batch_size", 0)
            size = _int_arg(self, v, "image_size", "benchmark_image_size", 224)
            drop = _float_arg(self, v, "sustained_drop_warn", "benchmark_sustained_drop_warn", 0.1)
            table = load_gpu_references()
        except (StepArgsError, UsageError) as exc:
            return Plan(False, f"bad gpu_benchmark setting: {exc}", failed=True)
        if size < 32:
            return Plan(False, "bad gpu_benchmark setting: image_size must be >= 32", failed=True)
        if ctx.check:
            return Plan(False, "check mode: the GPU benchmark was not run")
        argv = ["--image-size", str(size), "--duration", str(duration)]
        if steps:
            argv += ["--steps", str(steps)]
        if batch:
            argv += ["--batch-size", str(batch)]
        data, why = run_script(ctx, launch, "gpu_benchmark.py", argv)
        if data is None:
            return Plan(False, why, failed=True)
        gpus = list(ctx.facts.gpu.gpus) if ctx.facts.gpu else []
        checks = benchmark_checks(data, table, gpus, drop)
        if data.get("device") != "cuda" and _gpu_count(ctx.facts):
            checks.append(
                Check(
                    "benchmark_device",
                    "cuda",
                    f"cpu although nvidia-smi lists {len(gpus)} GPU(s)",
                    "fail",
                    "PyTorch has no CUDA here (a CPU-only build or a driver too old for its CUDA): the"
                    " GPUs were not benchmarked; use the NGC container (train_in_container) or a CUDA"
                    " build of torch",
                )
            )
        elif data.get("device") != "cuda" and (failure := nvidia_smi_failure(ctx.facts)):
            checks.append(
                Check("benchmark_device", "cuda", f"cpu ({failure})", "fail", broken_driver_sentence(failure))
            )
        msg, failed = _summary(f"ResNet-50 benchmark on {data.get('device')}", checks)
        return Plan(False, msg, checks=checks, failed=failed, diff={"result": data})
