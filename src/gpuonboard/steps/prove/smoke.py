"""Step `smoke_train`: the bundled tiny training run (remote/smoke_train.py) and its rules:
the loader yields, the loss falls, the checkpoint reloads identically, the device, the loader
wait (pure, over the script's result JSON)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from gpuonboard.steps.base import Check, Plan, Step, StepArgsError, StepContext
from gpuonboard.steps.prove.launch import (
    _LAUNCH_ARGS,
    _float_arg,
    _int_arg,
    launch_settings,
    run_script,
    torch_where,
)
from gpuonboard.steps.prove.rules import (
    _gpu_count,
    _pct,
    _summary,
    broken_driver_sentence,
    no_cuda_sentence,
    nvidia_smi_failure,
)
from gpuonboard.units import format_bytes

SMOKE_DEFAULTS = {"steps": 60, "batch_size": 128, "workers": 2, "loss_margin": 0.2, "loader_wait_warn": 0.3}


def _loss(value: Any) -> float:
    """A loss figure of the result as a float (NaN when absent or not a number)."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _loss_text(v: float) -> str:
    return f"{v:.4f}" if abs(v) < 1e6 else f"{v:.4g}"


def loss_problem(losses: Sequence[float]) -> str:
    """Why a run's per-step losses cannot show learning, or '': a NaN or infinite loss, or a
    negative one (cross-entropy is >= 0, so a negative figure is broken arithmetic)."""
    for i, v in enumerate(losses):
        if not math.isfinite(v):
            return f"the loss was {v} at step {i + 1}"
        if v < 0:
            return f"the loss was negative ({v:.4g}) at step {i + 1}, impossible for cross-entropy"
    return ""


def loss_check(r: Mapping[str, Any], loss_margin: float) -> Check:
    """`loss_falls` over a smoke_train.py result (pure): every loss finite and >= 0, and the mean
    of the last steps at most (1 - margin) of the first steps' mean AND of the lowest loss of
    the first steps, so a loss that blew up after step 1 and came only part of the way back
    (1e31 -> 1e28) does not count as learning."""
    first, last = _loss(r.get("loss_first")), _loss(r.get("loss_last"))
    w = int(r.get("loss_window") or 1)
    per_step = [_loss(v) for v in r.get("losses") or []]
    expected = f"loss of the last {r.get('loss_window')} steps <= {_pct(1 - loss_margin)} of the first's"
    drop = (first - last) / first if math.isfinite(first) and math.isfinite(last) and first > 0 else 0.0
    actual = f"{_loss_text(first)} -> {_loss_text(last)} ({-drop * 100:+.0f} %)"
    broken = loss_problem(per_step)
    if not broken and loss_problem([first, last]):
        broken = f"the mean loss of the first / last steps was {first} / {last}"
    if broken:
        return Check(
            "loss_falls",
            expected,
            f"{actual}; {broken}",
            "fail",
            "the arithmetic of this training run is broken: suspect numerics (driver, GPU memory errors)",
        )
    lowest_early = min([first, *per_step[:w]])
    falls = first > 0 and last <= first * (1 - loss_margin) and last <= lowest_early * (1 - loss_margin)
    if not falls and first > 0 and last <= first * (1 - loss_margin):
        return Check(
            "loss_falls",
            expected,
            f"{actual}; but the first steps reached {_loss_text(lowest_early)} already",
            "fail",
            "the loss blew up in the first steps and came only part of the way back: the model does"
            " not learn steadily; suspect numerics (driver, GPU memory errors)",
        )
    return Check(
        "loss_falls",
        expected,
        actual,
        "pass" if falls else "fail",
        ""
        if falls
        else "the model does not learn a learnable task: suspect numerics (driver, GPU memory errors)",
    )


def checkpoint_check(r: Mapping[str, Any]) -> Check:
    """`checkpoint_roundtrip`: the saved model reloads with identical outputs and optimizer state."""
    ck = r.get("checkpoint") or {}
    outputs_same = bool(ck.get("identical"))
    # absent in a result of an older host-side script: it compared the outputs only
    optimizer_same = ck.get("optimizer_identical") is not False
    same = outputs_same and optimizer_same
    return Check(
        "checkpoint_roundtrip",
        "saved, reloaded, identical outputs",
        f"{format_bytes(ck.get('bytes'))} saved in {float(ck.get('save_s', 0)):.3f} s, reloaded in "
        f"{float(ck.get('load_s', 0)):.3f} s, "
        + ("outputs identical" if outputs_same else f"outputs differ (max {ck.get('max_abs_diff')})")
        + ("" if optimizer_same else ", optimizer state differs"),
        "pass" if same else "fail",
        "" if same else "a checkpoint that does not reload identically cannot resume a run",
    )


def device_check(r: Mapping[str, Any], gpu_count: int, where: str, gpu_failure: str | None) -> Check:
    """`training_device`: cuda, or the CPU on a box with no GPU; the CPU on a box whose
    nvidia-smi lists GPUs (or fails) is a failure."""
    if r.get("device") == "cuda":
        peak = r.get("peak_gpu_mem_bytes")
        return Check(
            "training_device",
            "cuda",
            f"cuda ({r.get('device_name')}), peak GPU memory {format_bytes(peak)}",
            "pass",
        )
    if gpu_count:
        return Check(
            "training_device",
            "cuda",
            f"cpu although nvidia-smi lists {gpu_count} GPU(s) (torch {r.get('torch_version')},"
            f" cuda available: {r.get('cuda_available')})",
            "fail",
            no_cuda_sentence(gpu_count, where),
        )
    if gpu_failure:
        return Check(
            "training_device", "cuda", f"cpu ({gpu_failure})", "fail", broken_driver_sentence(gpu_failure)
        )
    return Check("training_device", "cuda", "cpu (no GPU on this host: trained on the CPU)", "pass")


def loader_check(r: Mapping[str, Any], loader_wait_warn: float, nproc: int | None) -> Check:
    """`loader_bottleneck`: the share of step time spent waiting for batches."""
    workers = r.get("workers")
    share = float(r.get("loader_wait_share", 0.0))
    if share > loader_wait_warn:
        more = f" (the host has {nproc} cores)" if nproc else ""
        return Check(
            "loader_bottleneck",
            f"data-loader wait <= {_pct(loader_wait_warn)} of step time",
            f"{_pct(share)} waiting for batches with {workers} workers",
            "warn",
            f"the GPU waits for data: raise DataLoader num_workers{more}, set pin_memory=True,"
            " prefetch_factor and persistent_workers=True, or pre-process the data once",
        )
    return Check(
        "loader_bottleneck",
        f"data-loader wait <= {_pct(loader_wait_warn)} of step time",
        f"{_pct(share)} with {workers} workers",
        "pass",
    )


def smoke_checks(
    r: Mapping[str, Any],
    gpu_count: int,
    loss_margin: float = 0.2,
    loader_wait_warn: float = 0.3,
    nproc: int | None = None,
    where: str = "this Python",
    gpu_failure: str | None = None,
) -> list[Check]:
    """Rules over a smoke_train.py result (pure). ``where``: the Python / image torch ran in;
    ``gpu_failure``: why nvidia-smi failed on this box (then training on the CPU fails too).

    On a box whose nvidia-smi lists GPUs, training on the CPU fails ``training_device``: the
    GPUs were not exercised, so nothing here proves them."""
    steps, workers, batches = int(r.get("steps_asked", 0)), r.get("workers"), int(r.get("batches", 0))
    checks = [
        Check(
            "loader_yields",
            f"{steps} batches of {r.get('batch_size')} with {workers} workers",
            f"{batches} batches",
            "pass" if batches >= steps > 0 else "fail",
            "" if batches >= steps > 0 else "the DataLoader stopped early or yielded nothing",
        ),
        loss_check(r, loss_margin),
        checkpoint_check(r),
        device_check(r, gpu_count, where, gpu_failure),
        loader_check(r, loader_wait_warn, nproc),
    ]
    sps = r.get("samples_per_s")
    checks.append(
        Check(
            "train_throughput",
            "(information)",
            f"{float(sps or 0):,.0f} samples/s, median step {float(r.get('step_time_s', 0)) * 1000:.2f} ms"
            f" on {r.get('device')}",
            "pass",
        )
    )
    return checks


class SmokeTrainStep(Step):
    """Bundled tiny training run: loader yields, loss falls, checkpoint round trip, device, loader."""

    name = "smoke_train"
    read_only = True
    ARGS = {
        **_LAUNCH_ARGS,
        "steps": f"training steps (default {SMOKE_DEFAULTS['steps']})",
        "batch_size": f"samples per batch (default {SMOKE_DEFAULTS['batch_size']})",
        "workers": f"DataLoader workers (default: vars.train_workers, else {SMOKE_DEFAULTS['workers']})",
        "loss_margin": "the last steps' loss must be this fraction below the first's (default 0.2)",
        "loader_wait_warn": "warn when the loader wait share exceeds this (default 0.3)",
    }

    def plan(self, ctx: StepContext) -> Plan:
        """Run the script (not in check mode) and judge its result."""
        v = ctx.host.vars
        try:
            launch = launch_settings(self, v, 600)
            steps = _int_arg(self, v, "steps", "train_steps", int(SMOKE_DEFAULTS["steps"]))
            batch = _int_arg(self, v, "batch_size", "train_batch_size", int(SMOKE_DEFAULTS["batch_size"]))
            workers = _int_arg(self, v, "workers", "train_workers", int(SMOKE_DEFAULTS["workers"]))
            margin = _float_arg(self, v, "loss_margin", "train_loss_margin", SMOKE_DEFAULTS["loss_margin"])
            wait = _float_arg(self, v, "loader_wait_warn", "train_loader_wait_warn", 0.3)
        except StepArgsError as exc:
            return Plan(False, f"bad smoke_train setting: {exc}", failed=True)
        if steps < 3 or batch < 1:
            return Plan(False, "bad smoke_train setting: steps must be >= 3 and batch_size >= 1", failed=True)
        if not 0 < margin < 1:
            return Plan(
                False,
                f"bad smoke_train setting: loss_margin (vars.train_loss_margin) must be between 0 and 1"
                f" (0.2: the loss must fall by 20 %), not {margin:g}: 0 or less passes a loss that"
                " does not fall, 1 or more fails every run",
                failed=True,
            )
        if ctx.check:
            return Plan(False, "check mode: the smoke training was not run")
        argv = ["--steps", str(steps), "--batch-size", str(batch), "--workers", str(workers)]
        data, why = run_script(ctx, launch, "smoke_train.py", argv)
        if data is None:
            return Plan(False, why, failed=True)
        checks = smoke_checks(
            data,
            _gpu_count(ctx.facts),
            margin,
            wait,
            ctx.facts.nproc,
            torch_where(launch),
            nvidia_smi_failure(ctx.facts),
        )
        msg, failed = _summary(f"smoke training on {data.get('device')}", checks)
        return Plan(False, msg, checks=checks, failed=failed, diff={"result": data})
