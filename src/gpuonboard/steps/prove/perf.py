"""`gpu_perf` step (issue 29): is the box fast, not only alive. Runs the bundled
`remote/gpu_perf.py` (matmul TFLOPS per dtype, device memory, host<->device and GPU-to-GPU
copies, a sustained-load window, one process per GPU at once) and judges its result with
`floors` against `data/gpu_perf_floors.yml` and the host's `vars.perf_floors`. Says the mode and
how long it will take before it starts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpuonboard.connection.gather import Facts
from gpuonboard.errors import UsageError
from gpuonboard.facts.nvidia_smi import GpuInfo
from gpuonboard.remote.gpu_perf import MODES, estimate_s
from gpuonboard.steps.base import Check, Plan, Step, StepArgsError, StepContext
from gpuonboard.steps.checks.gpu_health import HARD_THROTTLE
from gpuonboard.steps.prove.floors import load_floors, pair_facts, parse_overrides, perf_checks, unit
from gpuonboard.steps.prove.gpu_benchmark import likely_causes
from gpuonboard.steps.prove.launch import _LAUNCH_ARGS, _float_arg, _get, launch_settings, run_script
from gpuonboard.steps.prove.rules import (
    _gpu_count,
    _summary,
    broken_driver_sentence,
    hidden_gpus_sentence,
    no_cuda_sentence,
    nvidia_smi_failure,
)

SCRIPT = "gpu_perf.py"


@dataclass(frozen=True)
class PerfSettings:
    """The run's settings: mode, per-measurement seconds, sustained window, size scale, margin."""

    mode: str
    seconds: float
    sustain: float
    size_scale: float
    straggler_margin: float

    def argv(self) -> list[str]:
        """gpu_perf.py's command line."""
        argv = ["--mode", self.mode, "--seconds", f"{self.seconds:g}", "--sustain", f"{self.sustain:g}"]
        return argv + (["--size-scale", f"{self.size_scale:g}"] if self.size_scale != 1 else [])


# on a host whose facts list no GPU the run is information only: small and short
CPU_DEFAULTS = (0.5, 0.0, 0.0625)  # seconds per measurement, sustained window, size scale


def perf_settings(step: Step, host_vars: Mapping[str, Any], cpu: bool = False) -> PerfSettings:
    """The step's args, else `vars.perf_*`, else the mode's defaults (CPU_DEFAULTS on a host
    without GPUs); StepArgsError naming the setting when one is out of range."""
    mode = str(_get(step.args, host_vars, "mode", "perf_mode", "quick")).strip().lower()
    if mode not in MODES:
        raise StepArgsError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    seconds, sustain, scale = CPU_DEFAULTS if cpu else (*MODES[mode], 1.0)
    seconds = _float_arg(step, host_vars, "seconds", "perf_seconds", seconds)
    sustain = _float_arg(step, host_vars, "sustain", "perf_sustain", sustain)
    scale = _float_arg(step, host_vars, "size_scale", "perf_size_scale", scale)
    margin = _float_arg(step, host_vars, "straggler_margin", "perf_straggler_margin", 0.10)
    if seconds <= 0:
        raise StepArgsError("seconds must be > 0")
    if sustain < 0:
        raise StepArgsError("sustain must be >= 0 (0: no sustained window)")
    if not 0 < scale <= 1:
        raise StepArgsError("size_scale must be > 0 and <= 1")
    if not 0 < margin < 1:
        raise StepArgsError("straggler_margin must be between 0 and 1")
    return PerfSettings(mode, seconds, sustain, scale, margin)


def about(settings: PerfSettings, gpus: int) -> tuple[float, str]:
    """The run's estimated seconds (gpu_perf.py's own formula) and the sentence said before it
    starts: "quick mode, about 2 min for 8 GPUs"."""
    est = estimate_s(gpus, settings.seconds, settings.sustain, gpus > 0)
    span = f"{est:.0f} s" if est < 90 else f"{est / 60:.0f} min"
    where = f"{gpus} GPU{'s' if gpus != 1 else ''}" if gpus else "the CPU (no GPU listed)"
    return est, f"{settings.mode} mode, about {span} for {where}"


def default_timeout(estimate: float) -> float:
    """Seconds the run may take when no timeout is set: twice the estimate plus 5 min, >= 15 min."""
    return max(900.0, 2 * estimate + 300.0)


def cpu_checks(r: Mapping[str, Any], facts: Facts, where: str) -> list[Check]:
    """A result from the CPU: the figures as information, and a failure when the box lists GPUs
    (torch without CUDA) or its nvidia-smi fails (a broken driver)."""
    gpus = len(facts.gpu.gpus) if facts.gpu else 0
    checks: list[Check] = []
    for g in r.get("gpus") or []:
        figures = [
            f"{dtype} {float(v):,.1f} TFLOPS" for dtype, v in (g.get("matmul_tflops") or {}).items() if v
        ]
        figures += [f"{k} {float(v):,.1f} GB/s" for k, v in (g.get("membw_gbps") or {}).items() if v]
        checks.append(
            Check(
                "perf_cpu",
                "(information only: CPU, no floor)",
                f"on the CPU: {', '.join(figures) or g.get('error') or 'no figure'}",
                "pass",
                "measured on the CPU: the GPU figures need a CUDA PyTorch",
            )
        )
    if gpus:
        checks.append(
            Check(
                "perf_device",
                "cuda",
                f"cpu although nvidia-smi lists {gpus} GPU(s)",
                "fail",
                no_cuda_sentence(gpus, where),
            )
        )
    elif failure := nvidia_smi_failure(facts):
        checks.append(
            Check("perf_device", "cuda", f"cpu ({failure})", "fail", broken_driver_sentence(failure))
        )
    return checks


def run_checks(r: Mapping[str, Any], gpus: Sequence[GpuInfo]) -> list[Check]:
    """`perf_workers` (a GPU whose worker failed), `perf_gpus` (torch sees fewer GPUs than
    nvidia-smi lists) and `perf_sampling` (no nvidia-smi where the script ran)."""
    checks: list[Check] = []
    errors = [str(e) for e in r.get("worker_errors") or []]
    errors += [f"GPU {g.get('index')}: {g['error']}" for g in r.get("gpus") or [] if g.get("error")]
    if errors:
        checks.append(
            Check(
                "perf_workers",
                "every GPU ran every measurement",
                "; ".join(dict.fromkeys(errors))[-400:],
                "fail",
                "a GPU that cannot run a matmul or a copy cannot train; see gpu_health and gpu_xid",
            )
        )
    seen = r.get("cuda_device_count")
    if gpus and isinstance(seen, int) and seen < len(gpus):
        checks.append(
            Check(
                "perf_gpus",
                f"all {len(gpus)} GPUs nvidia-smi lists",
                f"torch saw {seen}",
                "fail",
                hidden_gpus_sentence(seen, len(gpus)),
            )
        )
    if r.get("device") == "cuda" and r.get("sampler") is None:
        checks.append(
            Check(
                "perf_sampling",
                "nvidia-smi samples under load",
                "nvidia-smi not found where the run ran",
                "warn",
                "clocks, temperature, power, throttle reasons and the PCIe link under load were"
                " not sampled: the sustained window and the link under load could not be judged",
            )
        )
    return checks


def causes_for(r: Mapping[str, Any], gpus: Sequence[GpuInfo]) -> Any:
    """A function naming the likely causes of a low figure on GPU N: gpu_health's rules over the
    GPU's facts (throttling, PCIe link, power limit) and the slowing reasons sampled under load."""
    facts = pair_facts(r, gpus)
    per_gpu = (r.get("sustained") or {}).get("per_gpu") or {}

    def causes(idx: int) -> str:
        found = likely_causes([facts[idx]], None) if idx in facts else []
        reasons = (per_gpu.get(str(idx)) or {}).get("reasons") or {}
        slowing = [
            f"{k} in {v} samples" for k, v in reasons.items() if v and k in ("sw_power_cap", *HARD_THROTTLE)
        ]
        if slowing:
            found.append(f"GPU {idx} under load: {', '.join(slowing)}")
        return (
            "; ".join(found)
            or "none found in the facts or samples (no throttling, full PCIe link, default power limit)"
        )

    return causes


def summary(what: str, checks: list[Check]) -> tuple[str, bool]:
    """_summary's sentence (naming the checks that could not be judged, never counted a pass)."""
    return _summary(what, checks)


def table_rows(r: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The per-GPU table for the report's diff: one row per GPU, a column per figure."""
    per_gpu = (r.get("sustained") or {}).get("per_gpu") or {}
    rows = []
    for g in r.get("gpus") or []:
        row: dict[str, Any] = {"gpu": g.get("index"), "name": g.get("name")}
        row |= {f"{k}_tflops": v for k, v in (g.get("matmul_tflops") or {}).items()}
        row |= {f"membw_{k}_gbps": v for k, v in (g.get("membw_gbps") or {}).items()}
        row |= {k: g.get(k) for k in ("h2d_gbps", "d2h_gbps") if g.get(k) is not None}
        if (s := per_gpu.get(str(g.get("index")))) is not None:
            row |= {"power_w": s.get("power_median_w"), "temp_max_c": s.get("temp_max_c")}
        rows.append(row)
    return rows


class GpuPerfStep(Step):
    """Matmul TFLOPS, memory, host and GPU-to-GPU bandwidth under sustained load, against per-model floors."""

    name = "gpu_perf"
    read_only = True
    ARGS = {
        **_LAUNCH_ARGS,
        "mode": "quick (about 2 min on 8 GPUs) or full (about 10 min) (default: vars.perf_mode, else quick)",
        "seconds": "seconds per measurement (default: vars.perf_seconds, else 1.5 quick / 8 full)",
        "sustain": "sustained-load window in seconds, 0: none (default: vars.perf_sustain, else 45 / 300)",
        "size_scale": "shrink matrices and buffers, > 0 and <= 1 (default: vars.perf_size_scale, else 1)",
        "straggler_margin": "a GPU this fraction below its peers' median fails (default 0.10)",
    }

    def plan(self, ctx: StepContext) -> Plan:
        """Say the mode and estimate, run gpu_perf.py (not in check mode), judge its result."""
        v = ctx.host.vars
        gpus = list(ctx.facts.gpu.gpus) if ctx.facts.gpu else []
        try:
            settings = perf_settings(self, v, cpu=not gpus)
            est, said = about(settings, _gpu_count(ctx.facts))
            launch = launch_settings(self, v, default_timeout(est))
            overrides = parse_overrides(v.get("perf_floors"))
            table = load_floors()
        except (StepArgsError, UsageError) as exc:
            return Plan(False, f"bad gpu_perf setting: {exc}", failed=True)
        if ctx.check:
            return Plan(False, f"check mode: the GPU performance run ({said}) was not started")
        if ctx.progress:
            ctx.progress(f"step {self.label}: {said}")
        data, why = run_script(ctx, launch, SCRIPT, settings.argv())
        if data is None:
            return Plan(False, f"{why} ({said})", failed=True)
        checks = run_checks(data, gpus)
        if data.get("device") == "cuda":
            checks = (
                perf_checks(data, table, gpus, overrides, settings.straggler_margin, causes_for(data, gpus))
                + checks
            )
        else:
            where = f"the image {launch.image}" if launch.in_container else launch.python
            checks = cpu_checks(data, ctx.facts, where) + checks
        msg, failed = summary(f"GPU performance on {data.get('device')} ({said})", checks)
        diff = {"result": data, "estimate_s": est, "mode": settings.mode, "table": table_rows(data)}
        if overrides:
            diff["perf_floors"] = {k: f"{x:g} {unit(k)}" for k, x in overrides.items()}
        return Plan(False, msg, checks=checks, failed=failed, diff=diff)
