"""Steps that prove the box trains: `smoke_train`, `allreduce`, `disk_speed` (issue 7).

Each is read-only for the host's state: the scripts arrive over the SSH channel's stdin, go
into a private temp directory (`shell.temp_script`) that is removed on every exit, stop with
the SSH session that started them (`shell.until_session_ends`), and their figures come back as ONE
`GPUONBOARD_RESULT {json}` line. The rules are pure functions over
that JSON (tested on recorded result files). In check mode nothing runs (they load the box).
"""

from __future__ import annotations

import json
import math
import re
import secrets
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any

from gpuonboard import sh, shell
from gpuonboard.connection.gather import TIMED_OUT, Facts
from gpuonboard.errors import UsageError
from gpuonboard.facts import dcgm, topo
from gpuonboard.facts.nvidia_smi_failure import nvidia_smi_failure as smi_failure
from gpuonboard.facts.probe import Probe
from gpuonboard.inventory import Host, Inventory
from gpuonboard.resources import DATA_DIR
from gpuonboard.steps.base import Check, Plan, Step, StepArgsError, StepContext, Verdict, truthy
from gpuonboard.steps.container import ContainerState, gpu_flags
from gpuonboard.units import format_bytes, parse_size
from gpuonboard.yamlload import load_yaml

MARK = "GPUONBOARD_RESULT "
REFERENCE_FILE = DATA_DIR / "allreduce_reference.yml"
GiB = 1 << 30
MiB = 1 << 20


def script_bytes(name: str) -> bytes:
    """A bundled remote script (package data under gpuonboard/remote/)."""
    return resources.files("gpuonboard.remote").joinpath(name).read_bytes()


def parse_result(stdout: str) -> dict[str, Any] | None:
    """The last `GPUONBOARD_RESULT {json}` line of a script's output, or None. The marker may
    follow other text on its line: NCCL (NCCL_DEBUG=INFO) and other C libraries write to the
    same stdout through a buffer that can end part-way through a line."""
    for line in reversed(stdout.splitlines()):
        at = line.find(MARK)
        if at >= 0:
            try:
                data = json.loads(line[at + len(MARK) :])
            except json.JSONDecodeError:
                return None
            return data if isinstance(data, dict) else None
    return None


def _get(args: Mapping[str, Any], host_vars: Mapping[str, Any], key: str, var: str, default: Any) -> Any:
    """Step arg, else `vars.<var>`, else default ('' and None count as unset)."""
    value = args.get(key)
    if value is None or value == "":
        value = host_vars.get(var)
    return default if value is None or value == "" else value


def _gpu_count(facts: Facts) -> int:
    return len(facts.gpu.gpus) if facts.gpu else 0


def nvidia_smi_failure(facts: Facts) -> str | None:
    """Why nvidia-smi listed no GPU on a box that has it (a broken driver: exit 9 "couldn't
    communicate with the NVIDIA driver", or it hung), or None: it listed GPUs, it is absent, or
    it said "No devices were found" (only those two mean "no GPU on this host"). The line quoted
    is the one naming the cause (`facts.nvidia_smi_failure`: a warning may come first)."""
    if facts.gpu and facts.gpu.gpus:
        return None
    raw = facts.gpu_raw if "nvidia_smi" in facts.raw else None
    if raw is None or raw.absent or "No devices were found" in raw.stdout + raw.stderr:
        return None
    if raw.exit_code == TIMED_OUT:
        return "nvidia-smi did not answer (stopped after its timeout)"
    if raw.exit_code == 0:
        return None
    line, _ = smi_failure(raw.stdout, raw.stderr)
    return f"nvidia-smi failed (exit code {raw.exit_code})" + (f": {line[:160]}" if line else "")


def broken_driver_sentence(failure: str) -> str:
    """The one sentence for a box whose nvidia-smi fails (`failure`, as nvidia_smi_failure says
    it): it ran on the CPU, not a GPU-less box; what to do follows the cause its quoted line names
    (`facts.nvidia_smi_failure`), else: fix the driver."""
    _, advice = smi_failure(failure, "")
    advice = advice or "fix the driver (see acceptance's nvidia_driver and gpu_health) and run prove again"
    return (
        f"{failure}: the NVIDIA driver does not answer, so this ran on the CPU and proves nothing"
        f" about the GPUs; {advice}"
    )


def _pct(x: float) -> str:
    return f"{x * 100:.0f} %"


# --------------------------------------------------------------------------- running a script


@dataclass(frozen=True)
class Launch:
    """How a bundled script runs on this host: the host's Python, or python in the image."""

    python: str
    in_container: bool
    image: str
    tmp: str
    timeout: float


def launch_settings(step: Step, host_vars: Mapping[str, Any], default_timeout: float) -> Launch:
    """Resolve python / container / temp dir / timeout from args and `vars.train_*`."""
    from gpuonboard.steps.checks.driver_compat import DEFAULT_IMAGE

    try:
        timeout = float(_get(step.args, host_vars, "timeout", "train_timeout", default_timeout))
    except (TypeError, ValueError):
        raise StepArgsError("timeout must be a number of seconds") from None
    tmp = str(_get(step.args, host_vars, "tmp_dir", "remote_tmp", "/tmp"))
    if not tmp.startswith("/"):
        raise StepArgsError(f"tmp_dir must be an absolute path, not {tmp!r}")
    return Launch(
        python=str(_get(step.args, host_vars, "python", "train_python", "python3")),
        in_container=truthy(
            _get(step.args, host_vars, "in_container", "train_in_container", False), "in_container"
        ),
        image=str(_get(step.args, host_vars, "image", "container_image", DEFAULT_IMAGE)),
        tmp=tmp.rstrip("/") or "/",
        timeout=timeout,
    )


def build_command(
    launch: Launch,
    script: str,
    script_args: Sequence[str],
    workdir: str,
    runtime: Any = None,
    gpus: bool = False,
    launcher: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    remote_timeout: float | None = None,
) -> str:
    """The one remote command: stdin -> workdir/script, run it (host python or container).

    `launcher` goes between python and the script (`-m torch.distributed.run --nnodes=...` for a
    multi-node run, which then also needs the host's network inside a container); `env` is set
    for the python process; `remote_timeout` bounds the python with `timeout` on the host (in
    the container when it runs there), so a hung script cannot outlive the step: the SSH wait
    giving up alone would leave it running (a non-tty session's process gets no signal). The
    script is also stopped within seconds when the SSH session that started it goes away
    (Ctrl-C, the local process killed, the link dropped): see `shell.until_session_ends`."""
    path = f"{workdir}/{script}"
    bound = ["timeout", str(max(1, int(remote_timeout)))] if remote_timeout else []
    stop: tuple[str, str] = ("", "")
    if launch.in_container:
        cli = runtime.cli or "docker"
        name = container_name(workdir)
        # (podman gets its CDI device: podman before 5.0 accepts `--gpus all` and ignores it)
        argv = [cli, "run", "--rm", "--name", name, "--ipc=host", *(gpu_flags(runtime) if gpus else [])]
        if launcher:
            argv.append("--network=host")
        for key, value in (env or {}).items():
            argv += ["-e", f"{key}={value}"]
        argv += ["-v", f"{workdir}:{workdir}", "-w", workdir, launch.image, *bound, "python", *launcher, path]
        inner = runtime.command([*argv, *script_args])
        # the container's processes are not the session's descendants (dockerd starts them)
        stop = (runtime.command([cli, "kill", "--signal=TERM", name]), runtime.command([cli, "kill", name]))
    else:
        inner = shell.with_env(shell.join([*bound, launch.python, *launcher, path, *script_args]), env or {})
    return shell.temp_script(workdir, script, shell.until_session_ends(inner, *stop))


def container_name(workdir: str) -> str:
    """The name of a script's container: its private temp dir's (random) name."""
    return (
        re.sub(r"[^A-Za-z0-9_.-]", "_", workdir.rstrip("/").rsplit("/", 1)[-1]).lstrip("_.-") or "gpuonboard"
    )


def launcher_argv(launch: Launch, nproc: int | None) -> list[str]:
    """allreduce.py's launcher flags on one node: `--nproc` when set, and its own wait for
    torchrun beyond the host's `timeout` (host_bound), so that a long vars.train_timeout is what
    stops a slow run (the launcher's default, 900 s, stopped it first)."""
    return [
        *(["--nproc", str(nproc)] if nproc else []),
        "--timeout",
        str(int(host_bound(launch.timeout)) + 60),
    ]


def host_bound(timeout: float) -> float:
    """Seconds the host's `timeout` gives a script: a little less than the step's own wait, so
    the host stops it (its temp dir removed, its GPU memory freed) and the exit code comes back."""
    return max(1.0, timeout - min(10.0, timeout * 0.2))


def run_script(
    ctx: StepContext,
    launch: Launch,
    script: str,
    script_args: Sequence[str],
    launcher: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    expect_result: bool = True,
    remote_timeout: float | None = None,
) -> tuple[dict[str, Any] | None, str]:
    """Run a bundled script on the host; (result JSON, '') or (None, why it failed).

    With `expect_result=False` (a multi-node worker host, whose ranks print nothing) a clean
    exit gives `({"ok": True, "result": False}, '')`. The script is stopped on the host after
    `remote_timeout` seconds (default: a little less than `launch.timeout`, see host_bound)."""
    runtime = None
    if launch.in_container:
        runtime, found = container_image(ctx, launch.image)
        if runtime is None:
            return None, found
        launch = replace(launch, image=found)
    workdir = f"{launch.tmp}/gpuonboard-{script.split('.')[0]}-{secrets.token_hex(6)}"
    if remote_timeout is None:
        remote_timeout = host_bound(launch.timeout)
    command = build_command(
        launch,
        script,
        script_args,
        workdir,
        runtime,
        _gpu_count(ctx.facts) > 0,
        launcher,
        env,
        remote_timeout,
    )
    r = ctx.runner.run(command, stdin=script_bytes(script), timeout=launch.timeout)
    data = parse_result(r.stdout)
    if data is None and not expect_result and r.ok:
        return {"ok": True, "result": False}, ""
    where = "in the container" if launch.in_container else f"with {launch.python}"
    if data is None and r.exit_code == 124:
        return None, (
            f"{script} {where} did not finish within {max(1, int(remote_timeout))} s"
            " and was stopped on the host;"
            f" raise vars.train_timeout (now {launch.timeout:.0f} s) or the step's timeout argument"
        )
    if data is None:
        tail = (r.stderr or r.stdout).strip().splitlines()[-3:]
        why = " | ".join(tail) or f"exit {r.exit_code}"
        return None, _torch_hint(f"{script} {where} gave no result: {why}", launch)
    if not data.get("ok"):
        extra = " | ".join(data.get("stderr_tail") or [])[-400:]
        return None, _torch_hint(f"{script}: {data.get('error')}" + (f" ({extra})" if extra else ""), launch)
    return data, ""


def image_local_names(host: Host, image: str) -> tuple[str, ...]:
    """The names the container step leaves `image` under on this host (`Settings.local_names`:
    also each mirror's name for a pin by digest only), from the host's vars and vendor profile as
    that step reads them; only the image's own name when those settings do not resolve (the
    container step fails on them). Raises StepArgsError for an image that is no reference."""
    from gpuonboard.steps.container import ContainerStep, parse_ref

    vendor_mirror = host.vendor.registry_mirror if host.vendor else None
    try:
        return ContainerStep({"image": image}).settings(host.vars, vendor_mirror).local_names
    except StepArgsError:
        return (parse_ref(image).canonical,)


def container_image(ctx: StepContext, image: str) -> tuple[ContainerState | None, str]:
    """Probe the container runtime for the training image: (its state, the name to run the image
    under: the one the runtime holds it as, as the container step's smoke run does), or (None, why
    it cannot run). Docker finds a digest-only pin pulled through a mirror only under the mirror's
    name; a pinned digest must be the local image's (else `docker run` would pull)."""
    from gpuonboard.steps.container import parse_ref, parse_state, probe_command

    try:
        ref = parse_ref(image)
        names = image_local_names(ctx.host, image)
    except StepArgsError as exc:
        return None, str(exc)
    probe = ctx.runner.run(shell.sh_c(probe_command(ref.canonical, names)), timeout=120)
    runtime = parse_state(probe.stdout)
    if not runtime.cli:
        return None, "train_in_container is set but no container runtime answers (run the container step)"
    if runtime.image_id is None:
        also = f" (looked for it as {', '.join(names)})" if len(names) > 1 else ""
        return None, f"image {image} is not on the host{also}; run the container step first"
    name = runtime.image_name or ref.canonical
    if ref.digest and ref.digest not in runtime.digests:
        held = ", ".join(runtime.digests) or "no registry digest"
        return None, (
            f"image {image} is on the host as {name} but not with the pinned digest ({held});"
            " run the container step first"
        )
    return runtime, name


def torch_where(launch: Launch) -> str:
    """Where torch ran, for messages: the host's Python or the image."""
    return f"the image {launch.image}" if launch.in_container else launch.python


def no_cuda_sentence(gpu_count: int, where: str) -> str:
    """The one sentence for a box whose nvidia-smi lists GPUs while torch ran on the CPU."""
    return (
        f"the box lists {gpu_count} GPU(s) but torch in {where} has no CUDA: nothing ran on the GPUs;"
        " use the NGC container (train_in_container) or a CUDA build of torch"
    )


def hidden_gpus_sentence(seen: int, gpu_count: int) -> str:
    """The one sentence for a box where torch sees fewer GPUs than nvidia-smi lists."""
    return (
        f"torch sees {seen} of the {gpu_count} GPUs nvidia-smi lists, so {gpu_count - seen} of them were"
        " not exercised: check CUDA_VISIBLE_DEVICES in the host's environment, MIG mode (acceptance's"
        " mig_mode), and `dmesg` for a GPU that CUDA cannot use (Xid)"
    )


def _torch_hint(why: str, launch: Launch) -> str:
    if "No module named 'torch'" in why or "cannot import torch" in why:
        where = "the image" if launch.in_container else launch.python
        why += f" (install PyTorch for {where}, set vars.train_python, or set vars.train_in_container)"
    return why


def _int_arg(step: Step, host_vars: Mapping[str, Any], key: str, var: str, default: int) -> int:
    try:
        value = int(_get(step.args, host_vars, key, var, default))
    except (TypeError, ValueError):
        raise StepArgsError(f"{key} must be a whole number") from None
    if value < 0:
        raise StepArgsError(f"{key} must be >= 0")
    return value


def _float_arg(step: Step, host_vars: Mapping[str, Any], key: str, var: str, default: float) -> float:
    try:
        return float(_get(step.args, host_vars, key, var, default))
    except (TypeError, ValueError):
        raise StepArgsError(f"{key} must be a number") from None


def _summary(what: str, checks: list[Check]) -> tuple[str, bool]:
    fails = [c.name for c in checks if c.verdict == "fail"]
    warns = [c.name for c in checks if c.verdict == "warn"]
    if fails:
        return f"{what}: {len(fails)} check(s) failed: {', '.join(fails)}", True
    if warns:
        return f"{what}: passed with {len(warns)} warning(s): {', '.join(warns)}", False
    return f"{what}: all {len(checks)} checks passed", False


_LAUNCH_ARGS = {
    "python": "the host's Python with PyTorch (default: vars.train_python, else python3)",
    "in_container": "run in the training image instead (default: vars.train_in_container)",
    "image": "training image for in_container (default: vars.container_image)",
    "tmp_dir": "parent of the private temp dir (default: vars.remote_tmp, else /tmp)",
    "timeout": "seconds before giving up (default: vars.train_timeout)",
}


# --------------------------------------------------------------------------- smoke_train

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
    checks: list[Check] = []
    steps, workers, batches = int(r.get("steps_asked", 0)), r.get("workers"), int(r.get("batches", 0))
    checks.append(
        Check(
            "loader_yields",
            f"{steps} batches of {r.get('batch_size')} with {workers} workers",
            f"{batches} batches",
            "pass" if batches >= steps > 0 else "fail",
            "" if batches >= steps > 0 else "the DataLoader stopped early or yielded nothing",
        )
    )
    checks.append(loss_check(r, loss_margin))
    ck = r.get("checkpoint") or {}
    outputs_same = bool(ck.get("identical"))
    # absent in a result of an older host-side script: it compared the outputs only
    optimizer_same = ck.get("optimizer_identical") is not False
    same = outputs_same and optimizer_same
    checks.append(
        Check(
            "checkpoint_roundtrip",
            "saved, reloaded, identical outputs",
            f"{format_bytes(ck.get('bytes'))} saved in {float(ck.get('save_s', 0)):.3f} s, reloaded in "
            f"{float(ck.get('load_s', 0)):.3f} s, "
            + ("outputs identical" if outputs_same else f"outputs differ (max {ck.get('max_abs_diff')})")
            + ("" if optimizer_same else ", optimizer state differs"),
            "pass" if same else "fail",
            "" if same else "a checkpoint that does not reload identically cannot resume a run",
        )
    )
    device = r.get("device")
    if device == "cuda":
        peak = r.get("peak_gpu_mem_bytes")
        checks.append(
            Check(
                "training_device",
                "cuda",
                f"cuda ({r.get('device_name')}), peak GPU memory {format_bytes(peak)}",
                "pass",
            )
        )
    elif gpu_count:
        checks.append(
            Check(
                "training_device",
                "cuda",
                f"cpu although nvidia-smi lists {gpu_count} GPU(s) (torch {r.get('torch_version')},"
                f" cuda available: {r.get('cuda_available')})",
                "fail",
                no_cuda_sentence(gpu_count, where),
            )
        )
    elif gpu_failure:
        checks.append(
            Check(
                "training_device", "cuda", f"cpu ({gpu_failure})", "fail", broken_driver_sentence(gpu_failure)
            )
        )
    else:
        checks.append(
            Check("training_device", "cuda", "cpu (no GPU on this host: trained on the CPU)", "pass")
        )
    share = float(r.get("loader_wait_share", 0.0))
    if share > loader_wait_warn:
        more = f" (the host has {nproc} cores)" if nproc else ""
        checks.append(
            Check(
                "loader_bottleneck",
                f"data-loader wait <= {_pct(loader_wait_warn)} of step time",
                f"{_pct(share)} waiting for batches with {workers} workers",
                "warn",
                f"the GPU waits for data: raise DataLoader num_workers{more}, set pin_memory=True,"
                " prefetch_factor and persistent_workers=True, or pre-process the data once",
            )
        )
    else:
        checks.append(
            Check(
                "loader_bottleneck",
                f"data-loader wait <= {_pct(loader_wait_warn)} of step time",
                f"{_pct(share)} with {workers} workers",
                "pass",
            )
        )
    sps = r.get("samples_per_s")
    checks.append(
        Check(
            "train_throughput",
            "(information)",
            f"{float(sps or 0):,.0f} samples/s, median step {float(r.get('step_time_s', 0)) * 1000:.2f} ms"
            f" on {device}",
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


# --------------------------------------------------------------------------- allreduce


def load_references(path: Path = REFERENCE_FILE) -> dict[str, Any]:
    """The all-reduce reference table (see the comment at the top of the file)."""
    data = load_yaml(path, UsageError, "all-reduce reference")
    if not isinstance(data, dict) or not isinstance(data.get("references"), list):
        raise UsageError(f"{path}: needs a 'references:' list")
    return data


def name_has(gpu_name: str, token: str, model: bool = True) -> bool:
    """Whether a reference row's `token` ("H100", "RTX 4090"; a form: "SXM", "PCIe") names part of
    nvidia-smi's GPU name, case-insensitively, at the start of a word: a model is not inside a
    longer model number ("A10" is not in "A100", "H200" not in "GH200"; a letter may follow:
    "A10" is in "A10G"); a form may be followed by its generation ("SXM" is in "A100-SXM4-80GB")."""
    pattern = r"(?<![a-z0-9])" + re.escape(token.lower()) + (r"(?![0-9])" if model else "")
    return re.search(pattern, gpu_name.lower()) is not None


def row_matches_name(row: Mapping[str, Any], gpu_name: str) -> bool:
    """A reference row's `gpu` ("*" = any), `form` and `exclude` (a list) against a GPU name."""
    gpu = str(row.get("gpu", "*"))
    if gpu != "*" and not name_has(gpu_name, gpu):
        return False
    form = row.get("form")
    if form and not name_has(gpu_name, str(form), model=False):
        return False
    excluded = row.get("exclude") or []
    return not any(name_has(gpu_name, str(x), model=False) for x in excluded)


def match_reference(
    table: Mapping[str, Any], gpu_name: str, gpu_count: int, interconnect: str
) -> dict[str, Any] | None:
    """The first reference row matching GPU name, count and interconnect, or None."""
    for row in table["references"]:
        if not row_matches_name(row, gpu_name):
            continue
        if row.get("gpus") is not None and int(row["gpus"]) != gpu_count:
            continue
        if row.get("interconnect") and row["interconnect"] != interconnect:
            continue
        return dict(row)
    return None


def parse_acs(lspci_vvv: str) -> dict[str, int] | None:
    """Count PCIe bridges whose ACS redirects peer traffic (ReqRedir+/CmpltRedir+) in
    `lspci -vvv` output; None when no ACSCtl line is readable (needs root)."""
    lines = [x for x in lspci_vvv.splitlines() if "ACSCtl:" in x]
    if not lines:
        return None
    on = [x for x in lines if re.search(r"\b(ReqRedir|CmpltRedir)\+", x)]
    return {"ports": len(lines), "redirecting": len(on)}


def correct_check(r: Mapping[str, Any], suspect: str) -> Check:
    """`allreduce_correct` over an allreduce.py result: exact sums at every size measured."""
    rows = r.get("rows") or []
    ok = bool(r.get("all_correct")) and bool(rows)
    return Check(
        "allreduce_correct",
        "sum over ranks is exact at every size",
        f"{len(rows)} sizes, " + ("all exact" if ok else "WRONG results"),
        "pass" if ok else "fail",
        "" if ok else f"a collective that returns wrong sums corrupts training; suspect {suspect}",
    )


def peak_busbw(r: Mapping[str, Any]) -> tuple[float, int]:
    """(peak bus bandwidth in GB/s, the message size in bytes where it was reached)."""
    rows = r.get("rows") or []
    at = max(rows, key=lambda x: x["busbw_gbps"])["bytes"] if rows else 0
    return float(r.get("peak_busbw_gbps") or 0.0), int(at)


def allreduce_checks(
    r: Mapping[str, Any],
    table: Mapping[str, Any],
    gpu_name: str,
    gpu_count: int,
    interconnect: str,
    acs: dict[str, int] | None = None,
    acs_asked: bool = False,
    where: str = "this Python",
    gpu_failure: str | None = None,
    nproc_asked: int = 0,
) -> list[Check]:
    """Rules over an allreduce.py result (pure). ``where``: the Python / image torch ran in;
    ``nproc_asked``: the process count the settings asked for (0: one per GPU).

    On a box whose nvidia-smi lists GPUs (``gpu_count``), an all-reduce that ran on the CPU over
    gloo fails ``allreduce_busbw``: it measured the CPU, not the GPUs or their links; one that
    ran over fewer GPUs than listed, because torch saw fewer, fails ``allreduce_gpus``."""
    checks = [correct_check(r, "GPU/PCIe faults")]
    peak, at = peak_busbw(r)
    n, backend = r.get("world_size"), r.get("backend")
    actual = f"peak busbw {peak:.2f} GB/s at {format_bytes(at)} ({n} x {backend})"
    if r.get("device") != "cuda" and gpu_count:
        checks.append(
            Check(
                "allreduce_busbw",
                f"measured on the {gpu_count} GPU(s) with NCCL",
                f"{actual} on the CPU",
                "fail",
                no_cuda_sentence(gpu_count, where),
            )
        )
        return checks
    if r.get("device") != "cuda" and gpu_failure:
        checks.append(
            Check(
                "allreduce_busbw",
                "measured on the GPUs with NCCL",
                f"{actual} on the CPU ({gpu_failure})",
                "fail",
                broken_driver_sentence(gpu_failure),
            )
        )
        return checks
    if r.get("device") != "cuda":
        checks.append(
            Check(
                "allreduce_busbw",
                "(information only: CPU / gloo, no GPU reference)",
                actual,
                "pass",
                "measured on the CPU with gloo; the GPU figure needs CUDA + NCCL",
            )
        )
        return checks
    seen = int(r.get("cuda_device_count") or n or 0)
    if gpu_count and seen < gpu_count and not nproc_asked:
        checks.append(
            Check(
                "allreduce_gpus",
                f"all {gpu_count} GPUs nvidia-smi lists",
                f"torch saw {seen}; the all-reduce ran over {n}",
                "fail",
                hidden_gpus_sentence(seen, gpu_count),
            )
        )
    if n == 1:
        checks.append(
            Check(
                "allreduce_busbw",
                "(information only: one GPU, no inter-GPU traffic)",
                f"1 x {backend}: nothing crosses a link (bus bandwidth is 0 by definition with one rank)",
                "pass",
                "the bus-bandwidth comparison needs 2+ GPUs in the host, or a multi-node run"
                " (allreduce_nodes)",
            )
        )
        return checks
    max_bytes = int(r.get("max_bytes") or 0)
    if max_bytes < GiB:
        checks.append(
            Check(
                "allreduce_sizes",
                ">= 1 GiB messages",
                f"up to {format_bytes(max_bytes)}",
                "warn",
                "peak bus bandwidth is not reached below 1 GiB; the comparison understates the box",
            )
        )
    # a row is for an all-reduce over its `gpus`: the ranks that ran (allreduce_nproc may ask for
    # fewer than the box has), not the GPUs listed
    ranks = int(n or gpu_count)
    ref = match_reference(table, gpu_name, ranks, interconnect)
    if ref is None:
        checks.append(
            Check(
                "allreduce_busbw",
                f"a reference for {ranks} x {gpu_name} ({interconnect})",
                actual,
                "warn",
                "no reference row for this topology; add one to data/allreduce_reference.yml",
            )
        )
    else:
        want = float(ref["busbw_gbps"])
        ratio = peak / want if want else 0.0
        warn_below = float(table.get("warn_below", 0.85))
        fail_below = float(table.get("fail_below", 0.5))
        verdict: Verdict = "pass" if ratio >= warn_below else "warn" if ratio >= fail_below else "fail"
        unverified = "" if ref.get("verified") else " (reference not verified)"
        checks.append(
            Check(
                "allreduce_busbw",
                f">= {warn_below * want:.0f} GB/s ({_pct(warn_below)} of {want:.0f} GB/s, {ref['id']})",
                f"{actual}, {_pct(ratio)} of reference",
                verdict,
                ""
                if verdict == "pass"
                else "low bus bandwidth: check `nvidia-smi topo -m`, NVLink errors (`nvidia-smi nvlink -e`),"
                f" PCIe ACS, and NCCL_DEBUG=INFO for the transport used;"
                f" source {ref.get('source')}{unverified}",
            )
        )
    if acs_asked:
        if acs is None:
            checks.append(Check("pcie_acs", "disabled on PCIe switches", "not readable (needs root)", "warn"))
        elif acs["redirecting"]:
            checks.append(
                Check(
                    "pcie_acs",
                    "disabled on PCIe switches",
                    f"redirecting on {acs['redirecting']} of {acs['ports']} ports",
                    "warn",
                    "ACS redirects GPU peer traffic through the root complex (can halve peer bandwidth);"
                    " ask the vendor to disable it in the BIOS on bare metal",
                )
            )
        else:
            checks.append(
                Check("pcie_acs", "disabled on PCIe switches", f"off on {acs['ports']} ports", "pass")
            )
    return checks


# --------------------------------------------------------------------------- dcgmi diag (in allreduce)

DCGM_PROBE = Probe("prove_dcgmi", "command -v dcgmi")
# seconds before `dcgmi diag -r <level>` is given up (levels 3 and 4 run for 30 min / 1-2 h)
DCGM_TIMEOUTS = {1: 300, 2: 900, 3: 3600, 4: 3 * 3600}


def dcgm_level(value: Any, budget: Any) -> int:
    """The diagnostic level: `dcgm_level` when set (0 = off), else the deepest level that fits
    `dcgm_budget` seconds, else 1 (quick)."""
    if value not in (None, ""):
        try:
            level = int(value)
        except (TypeError, ValueError):
            raise StepArgsError(f"dcgm_level must be 0 (off) or 1-4, not {value!r}") from None
        if level != 0 and level not in dcgm.LEVEL_SECONDS:
            raise StepArgsError(f"dcgm_level must be 0 (off) or 1-4, not {level}")
        return level
    if budget not in (None, ""):
        try:
            return dcgm.level_for_budget(float(budget))
        except (TypeError, ValueError):
            raise StepArgsError(f"dcgm_budget must be a number of seconds, not {budget!r}") from None
    return 1


def dcgm_checks(diag: dcgm.DcgmDiag | None, level: int, why: str = "") -> list[Check]:
    """Rules over a parsed `dcgmi diag -j` (pure): one `dcgm_<test>` rule per DCGM test (Fail
    fails with DCGM's message, Warn warns, Skip passes and says so) plus a `dcgm_diag` summary.
    `diag=None` without `why`: DCGM is not installed (information, never a failure)."""
    want = f"dcgmi diag -r {level}: every test Pass"
    if diag is None and not why:
        return [
            Check(
                "dcgm_diag",
                "(information) dcgmi diag when DCGM is installed",
                "DCGM not installed: skipped",
                "pass",
                "install NVIDIA DCGM (datacenter-gpu-manager) to add its diagnostics to this step",
            )
        ]
    if diag is None or diag.error:
        reason = why or (diag.error if diag else "") or "no output"
        return [
            Check(
                "dcgm_diag",
                want,
                f"could not read dcgmi output: {reason}",
                "warn",
                "dcgmi needs its host engine: `systemctl start nvidia-dcgm` (or `nv-hostengine`);"
                " run `dcgmi diag -r 1 -j` by hand to see why",
            )
        ]
    counts = {k: sum(1 for t in diag.tests if t.status == k) for k in ("pass", "fail", "warn", "skip")}
    other = len(diag.tests) - sum(counts.values())
    nothing_run = counts["skip"] == len(diag.tests)
    checks = [
        Check(
            "dcgm_diag",
            want,
            f"DCGM {diag.version or '?'}"
            + (f" (driver {diag.driver})" if diag.driver else "")
            + f", level {level}: {len(diag.tests)} tests, "
            + ", ".join(f"{n} {k}" for k, n in counts.items() if n)
            + (f", {other} unrecognised" if other else ""),
            "warn" if nothing_run else "pass",
            "DCGM skipped every test: nothing was verified" if nothing_run else "",
        )
    ]
    seen: set[str] = set()
    for t in diag.tests:
        name = f"dcgm_{dcgm.slug(t.name)}"
        if name in seen:
            name = f"{name}_{dcgm.slug(t.category)}"
        seen.add(name)
        gpus = f" on GPU {', '.join(t.gpus)}" if t.gpus and t.status in ("fail", "warn") else ""
        said = " | ".join(t.messages)
        if t.status == "pass":
            checks.append(Check(name, "Pass", f"{t.raw_status} ({t.category})", "pass"))
        elif t.status == "skip":
            checks.append(
                Check(name, "Pass", f"{t.raw_status} ({t.category}): not run by DCGM", "pass", said)
            )
        elif t.status in ("fail", "warn"):
            checks.append(
                Check(
                    name,
                    "Pass",
                    f"{t.raw_status}{gpus}" + (f": {t.messages[0]}" if t.messages else ""),
                    "fail" if t.status == "fail" else "warn",
                    said
                    or f"DCGM's {t.name} test reported {t.raw_status}; `dcgmi diag -r {level} -v` tells more",
                )
            )
        else:
            checks.append(Check(name, "Pass", f"unrecognised status {t.raw_status!r}", "warn", said))
    return checks


def dcgm_failure_note(checks: Sequence[Check]) -> str:
    """'; DCGM software: <message>' for the first failed DCGM test (for the step's message)."""
    for c in checks:
        if c.name.startswith("dcgm_") and c.name != "dcgm_diag" and c.verdict == "fail":
            return f"; DCGM {c.name[5:]}: {c.actual}"
    return ""


def run_dcgm(ctx: StepContext, level: int, timeout: float) -> tuple[list[Check], dict[str, Any] | None]:
    """Run `dcgmi diag -r <level> -j` when the fact probe found dcgmi; rules and the parsed result."""
    found = ctx.facts.raw.get(DCGM_PROBE.name)
    if found is None or found.exit_code != 0 or not found.stdout.strip():
        return dcgm_checks(None, level), None
    # a level 3 / 4 diag loads the GPUs for up to hours: it must not outlive the session either
    cmd = shell.sh_c(
        shell.until_session_ends(
            shell.join(["timeout", str(max(1, int(timeout)))]) + " " + dcgm.command(level)
        )
    )
    r = ctx.runner.run(cmd, timeout=timeout + 30)
    if r.exit_code == 124:
        why = (
            f"dcgmi diag -r {level} did not finish within {timeout:.0f} s"
            " (raise dcgm_timeout or lower dcgm_level)"
        )
        return dcgm_checks(None, level, why), None
    diag = dcgm.parse(r.stdout)
    if diag.error and r.stderr.strip():
        diag = dcgm.DcgmDiag(
            diag.version, diag.driver, diag.tests, f"{diag.error}; {r.stderr.strip().splitlines()[-1]}"
        )
    return dcgm_checks(diag, level), {**asdict(diag), "level": level, "exit_code": r.exit_code}


# --------------------------------------------------------------------------- multi-node all-reduce


@dataclass(frozen=True)
class NodePlan:
    """This host's place in a multi-node all-reduce over the hosts of one inventory group."""

    group: str
    members: tuple[str, ...]  # the group's hosts in declared order; node rank = index
    rank: int
    master: str
    master_addr: str
    master_port: int


def group_members(inventory: Inventory, group: str) -> tuple[str, ...]:
    """The hosts of a group in declared order (names the inventory knows)."""
    return tuple(m for m in inventory.groups.get(group, ()) if m in inventory.hosts)


def node_plan(host: Host, inventory: Inventory | None, nodes: str) -> NodePlan | None:
    """Pure: None for a single-node run (`nodes` empty), else this host's node rank, the master
    (the group's first host) and its rendezvous address and port; StepArgsError says what to fix."""
    if not nodes:
        return None
    if inventory is None:
        raise StepArgsError("a multi-node all-reduce needs the inventory's groups")
    if nodes == "group":
        shared = [g for g in host.groups if len(group_members(inventory, g)) >= 2]
        if not shared:
            raise StepArgsError(
                f"host {host.name} is in no group with another host; put the nodes in one group"
                " or set allreduce_nodes to a group name"
            )
        if len(shared) > 1:
            raise StepArgsError(
                f"host {host.name} is in several groups with other hosts ({', '.join(shared)});"
                " set allreduce_nodes to one of them"
            )
        group = shared[0]
    else:
        group = nodes
        if group not in inventory.groups:
            raise StepArgsError(f"allreduce_nodes names group {group!r}, which the inventory does not have")
    members = group_members(inventory, group)
    if host.name not in members:
        raise StepArgsError(f"host {host.name} is not in group {group} (allreduce_nodes)")
    if len(members) < 2:
        raise StepArgsError(f"group {group} has only one host; a multi-node all-reduce needs two or more")
    master = inventory.hosts[members[0]]
    addr = str(master.vars.get("allreduce_master_addr") or master.address)
    try:
        port = int(master.vars.get("allreduce_master_port") or 29500)
    except (TypeError, ValueError):
        raise StepArgsError("allreduce_master_port must be a port number") from None
    if not 0 < port < 65536:
        raise StepArgsError(f"allreduce_master_port must be 1-65535, not {port}")
    return NodePlan(group, members, members.index(host.name), master.name, addr, port)


def torchrun_args(plan: NodePlan, nproc: int, join_timeout: float) -> list[str]:
    """`python -m torch.distributed.run` arguments for this node (static rendezvous on the master)."""
    return [
        "-m",
        "torch.distributed.run",
        f"--nnodes={len(plan.members)}",
        f"--node_rank={plan.rank}",
        f"--nproc_per_node={nproc}",
        f"--master_addr={plan.master_addr}",
        f"--master_port={plan.master_port}",
        f"--rdzv_conf=timeout={max(1, int(join_timeout))}",
    ]


class _Gate:
    """The hosts of one group meeting in this process before they start torchrun together."""

    def __init__(self, members: Sequence[str]) -> None:
        self.members = frozenset(members)
        self.arrived: dict[str, dict[str, Any]] = {}
        self.closed = False
        self.left = 0


_GATE_LOCK = threading.Condition()
_GATES: dict[tuple[int, str, str], _Gate] = {}


def multinode_selection_problem(nodes: NodePlan, run_hosts: frozenset[str], forks: int) -> str:
    """Pure: why this run cannot hold the whole group at once ("" when it can): a member not
    selected, or --forks below the group size (the gate would wait for the join timeout)."""
    n = len(nodes.members)
    fix = f"run all {n} hosts of the group together (--group {nodes.group} --forks {n} or more)"
    absent = [m for m in nodes.members if run_hosts and m not in run_hosts]
    if absent:
        return (
            f"multi-node all-reduce over group {nodes.group}: {', '.join(absent)}"
            f" {'is' if len(absent) == 1 else 'are'} not in this run; {fix}"
        )
    if forks and forks < n:
        return (
            f"multi-node all-reduce over group {nodes.group} needs {n} hosts at once,"
            f" --forks is {forks}; {fix}"
        )
    return ""


def meet_group(
    key: tuple[int, str, str], members: Sequence[str], me: str, info: dict[str, Any], timeout: float
) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Wait (up to `timeout` s) until every member of the group has reached this step in this run;
    returns (what each arrived host said, the members that never came). The runner runs hosts in
    parallel, so a member that does not come is not selected, unreachable, or queued behind
    --forks: without this gate its peers would sit in torchrun's rendezvous."""
    deadline = time.monotonic() + timeout
    with _GATE_LOCK:
        gate = _GATES.setdefault(key, _Gate(members))
        if gate.closed:
            missing = sorted(gate.members - set(gate.arrived) - {me})
            return dict(gate.arrived), missing or [me]
        gate.arrived[me] = info
        _GATE_LOCK.notify_all()
        while not gate.members <= set(gate.arrived) and not gate.closed:
            left = deadline - time.monotonic()
            if left <= 0:
                gate.closed = True
                _GATE_LOCK.notify_all()
                break
            _GATE_LOCK.wait(left)
        missing = sorted(gate.members - set(gate.arrived))
        gate.left += 1
        if gate.left >= len(gate.arrived) and _GATES.get(key) is gate:
            del _GATES[key]
        return dict(gate.arrived), missing


def multinode_checks(r: Mapping[str, Any], plan: NodePlan, nproc: int, backend: str) -> list[Check]:
    """Rules for one node of a multi-node all-reduce (pure): rank 0's host judges the sums and
    reports the cross-node bus bandwidth (information: no reference for a network), the others
    report that they took part."""
    n = len(plan.members)
    if not r.get("result", True):
        return [
            Check(
                "allreduce_multinode",
                f"took part in the {n}-node all-reduce of group {plan.group}",
                f"node rank {plan.rank} of {n} ({nproc} x {backend});"
                f" the figures are in {plan.master}'s report",
                "pass",
            )
        ]
    peak, at = peak_busbw(r)
    return [
        correct_check(r, "the NICs or GPUs"),
        Check(
            "allreduce_multinode",
            f"(information) cross-node busbw over group {plan.group}",
            f"peak busbw {peak:.2f} GB/s at {format_bytes(at)} ({n} nodes, world size {r.get('world_size')}"
            f" x {r.get('backend')})",
            "pass",
            "compare with the interconnect ordered (e.g. 400 Gbit/s InfiniBand ~ 40-48 GB/s busbw per node);"
            " NCCL_DEBUG=INFO shows the transport used",
        ),
    ]


class AllreduceStep(Step):
    """torchrun all-reduce benchmark (NCCL on GPUs, gloo on CPU) against reference busbw; NVIDIA
    DCGM's `dcgmi diag` folded into the rules when installed; optionally across a group's hosts."""

    name = "allreduce"
    read_only = True
    ARGS = {
        **_LAUNCH_ARGS,
        "nproc": "processes (default: one per GPU, 2 on a CPU-only box; 1 per CPU node multi-node)",
        "max_size": "largest message (default 1GiB on GPU, 64MiB on CPU)",
        "min_size": "smallest message (default 1MiB on GPU, 64KiB on CPU)",
        "iters": "timed iterations per size (default 20 GPU / 3 CPU)",
        "dcgm_level": "dcgmi diag level 1-4, 0 = off (default: vars.dcgm_level, else by dcgm_budget, else 1)",
        "dcgm_budget": "seconds dcgmi diag may take: picks the deepest level that fits (vars.dcgm_budget)",
        "dcgm_timeout": "seconds before dcgmi diag is given up (default 300 / 900 / 3600 / 10800 by level)",
        "nodes": "'group' (this host's group) or a group name: all-reduce across its hosts"
        " (default: vars.allreduce_nodes; unset = this host only)",
        "join_timeout": "seconds the group's hosts wait for each other"
        " (default: vars.allreduce_join_timeout, else 300)",
    }

    def probes(self) -> list[Probe]:
        """Whether dcgmi is on the PATH rides in the batched fact probe."""
        return [DCGM_PROBE]

    def check_host(self, host: Host) -> None:
        """Bad DCGM settings are reported before connecting."""
        dcgm_level(_get(self.args, host.vars, "dcgm_level", "dcgm_level", None), None)

    def plan(self, ctx: StepContext) -> Plan:
        """Run dcgmi diag and the benchmark (not in check mode), compare with the reference."""
        v = ctx.host.vars
        try:
            launch = launch_settings(self, v, 900)
            nproc = _int_arg(self, v, "nproc", "allreduce_nproc", 0)
            iters = _int_arg(self, v, "iters", "allreduce_iters", 0)
            sizes = {}
            for key in ("max_size", "min_size"):
                raw = _get(self.args, v, key, f"allreduce_{key}", "")
                sizes[key] = parse_size(raw) if raw != "" else 0
            table = load_references()
            level = dcgm_level(
                _get(self.args, v, "dcgm_level", "dcgm_level", None),
                _get(self.args, v, "dcgm_budget", "dcgm_budget", None),
            )
            dcgm_timeout = _float_arg(self, v, "dcgm_timeout", "dcgm_timeout", DCGM_TIMEOUTS.get(level, 300))
            join_timeout = _float_arg(self, v, "join_timeout", "allreduce_join_timeout", 300)
            nodes = node_plan(
                ctx.host, ctx.inventory, str(_get(self.args, v, "nodes", "allreduce_nodes", ""))
            )
        except (StepArgsError, UsageError, ValueError) as exc:
            return Plan(False, f"bad allreduce setting: {exc}", failed=True)
        if ctx.check:
            return Plan(False, "check mode: the all-reduce benchmark was not run")
        argv = []
        if iters:
            argv += ["--iters", str(iters)]
        if sizes["max_size"]:
            argv += ["--max-bytes", str(sizes["max_size"])]
        if sizes["min_size"]:
            argv += ["--min-bytes", str(sizes["min_size"])]
        checks, dcgm_result = run_dcgm(ctx, level, dcgm_timeout) if level else ([], None)
        diff: dict[str, Any] = {"dcgm": dcgm_result} if dcgm_result else {}
        if nodes is not None:
            return self._multinode(ctx, launch, nodes, nproc, argv, join_timeout, checks, diff)
        argv += launcher_argv(launch, nproc)
        data, why = run_script(ctx, launch, "allreduce.py", argv)
        if data is None:
            return Plan(False, why + dcgm_failure_note(checks), checks=checks, failed=True, diff=diff or None)
        gpus = list(ctx.facts.gpu.gpus) if ctx.facts.gpu else []
        link = topo.interconnect(ctx.facts.topology) if ctx.facts.topology else "unknown"
        acs, asked = None, False
        if data.get("device") == "cuda" and link in ("pcie", "mixed"):
            asked = True
            out = ctx.runner.run(shell.sh_c("lspci -vvv 2>/dev/null | grep ACSCtl"), timeout=60)
            acs = parse_acs(out.stdout)
        checks += allreduce_checks(
            data,
            table,
            gpus[0].name if gpus else "",
            len(gpus),
            link,
            acs,
            asked,
            torch_where(launch),
            nvidia_smi_failure(ctx.facts),
            nproc,
        )
        msg, failed = _summary(f"all-reduce over {data.get('world_size')} x {data.get('backend')}", checks)
        return Plan(
            False,
            msg + dcgm_failure_note(checks),
            checks=checks,
            failed=failed,
            diff={**diff, "result": data},
        )

    def _multinode(
        self,
        ctx: StepContext,
        launch: Launch,
        nodes: NodePlan,
        nproc: int,
        argv: list[str],
        join_timeout: float,
        checks: list[Check],
        diff: dict[str, Any],
    ) -> Plan:
        """Meet the group's other hosts, then run this node's torchrun (static rendezvous on the
        group's first host); every host starts together because the runner runs them in parallel."""
        n = len(nodes.members)
        key = (id(ctx.inventory), nodes.group, self.label)
        early = multinode_selection_problem(nodes, ctx.run_hosts, ctx.forks)
        if early:
            return Plan(False, early, checks=checks, failed=True, diff=diff or None)
        if ctx.progress:
            ctx.progress(f"step {self.label}: waiting for the {n} hosts of group {nodes.group}")
        seen, missing = meet_group(
            key, nodes.members, ctx.host.name, {"gpus": _gpu_count(ctx.facts)}, join_timeout
        )
        if missing:
            msg = (
                f"multi-node all-reduce over group {nodes.group}: {', '.join(missing)} did not reach this"
                f" step within {join_timeout:.0f} s; run all {n} hosts of the group together"
                f" (--group {nodes.group} --forks {n} or more) and check that they are reachable"
            )
            return Plan(False, msg, checks=checks, failed=True, diff=diff or None)
        # one backend for every node: NCCL only when each host has GPUs, else gloo on the CPU
        backend = "nccl" if all(int(i.get("gpus") or 0) > 0 for i in seen.values()) else "gloo"
        per_node = nproc or (_gpu_count(ctx.facts) if backend == "nccl" else 1)
        launcher = torchrun_args(nodes, per_node, join_timeout)
        data, why = run_script(
            ctx,
            launch,
            "allreduce.py",
            [*argv, "--backend", backend],
            launcher=launcher,
            env={"OMP_NUM_THREADS": "1"},
            expect_result=nodes.rank == 0,
            remote_timeout=max(1.0, launch.timeout - 10),  # ends before the SSH wait
        )
        where = f"node {nodes.rank} of {n} (master {nodes.master} {nodes.master_addr}:{nodes.master_port})"
        if data is None:
            msg = f"multi-node all-reduce over group {nodes.group}, {where}: {why}"
            return Plan(False, msg + dcgm_failure_note(checks), checks=checks, failed=True, diff=diff or None)
        checks += multinode_checks(data, nodes, per_node, backend)
        msg, failed = _summary(f"{n}-node all-reduce over group {nodes.group}, {where}", checks)
        result = {**data, "node_rank": nodes.rank, "nodes": list(nodes.members), "group": nodes.group}
        return Plan(
            False,
            msg + dcgm_failure_note(checks),
            checks=checks,
            failed=failed,
            diff={**diff, "result": result},
        )


# --------------------------------------------------------------------------- disk_speed

BYTES_PER_PARAM_WEIGHTS = 2  # bf16 weights
BYTES_PER_PARAM_FULL = 14  # bf16 weights + fp32 master copy + Adam m and v (4 + 4 + 4)
DISK_FILE = ".gpuonboard-disk"  # test file: <dir>/.gpuonboard-disk.<host>.<shell pid>.<token>.XXXXXX
RAM_FILESYSTEMS = ("tmpfs", "ramfs")
CACHED_READ_SHARE = 0.1  # more of the file than this in the page cache before the read: not a disk figure


def disk_file_blocks(size_mib: int) -> int:
    """The disk test file's size in 4 MiB blocks (at least one) for a requested size in MiB."""
    return max(1, size_mib // 4)


def disk_script(directory: str, size_mib: int, use_fio: bool = True, token: str = "run") -> str:
    """Remote shell text: sequential write (+fsync) then read of one file in `directory`,
    fio when present else dd; prints `TOOL`, `FS type source mountpoint`, `SIZE bytes`, `DIRECT`, `WRITE bytes
    ns`, `READ bytes ns` (dd) or fio's JSON between `##FIO-WRITE`/`##FIO-READ` markers, and the
    file's bytes in the page cache after the write / before the read (`CACHED_AFTER_WRITE`,
    `CACHED_BEFORE_READ`, when `fincore` exists; the cache is dropped for the file in between).
    Removes its file on every exit it can trap, and first removes the files that earlier runs on
    this host left (their shell is gone: SIGKILL, a reboot), printing `SWEPT bytes` for each.
    `token` (letters/digits) is in the file name, so the caller can remove it by pattern."""
    count = disk_file_blocks(size_mib)
    fio = "true" if use_fio else "false"
    # the values prove_disk.sh reads, as shell words before it (the first line of the script)
    values = f"D={shell.quote(directory)}; N={count}; T={shell.quote(token)}; FIO={fio}"
    return f"{values}; BASE={shell.quote(DISK_FILE)}\n" + sh.load("prove_disk")


def _fio_job(text: str, kind: str) -> dict[str, Any] | None:
    """fio's JSON (stderr lines may come before or after it) -> the job's `read`/`write` part."""
    start = text.find("{")
    if start < 0:
        return None
    try:
        data, _ = json.JSONDecoder().raw_decode(text[start:])
        job = data["jobs"][0][kind]
    except (ValueError, KeyError, IndexError, TypeError):
        return None
    return job if isinstance(job, dict) else None


def parse_disk(stdout: str) -> dict[str, Any]:
    """`disk_script` output -> {tool, direct, write_gbps, read_gbps, bytes (the file's size), fs,
    swept, dropped, cached_after_write, cached_before_read} (GB/s = 1e9 B/s)."""
    out: dict[str, Any] = {"tool": None, "direct": None, "write_gbps": None, "read_gbps": None}
    for line in stdout.splitlines():
        word, _, rest = line.partition(" ")
        if word == "ERR":
            out["error"] = rest
        elif word == "TOOL":
            out["tool"] = rest.strip()
        elif word == "DIRECT":
            out["direct"] = rest.strip() == "1"
        elif word == "DROPPED":
            out["dropped"] = rest.strip() == "1"
        elif word == "FS":
            fstype, _, where = rest.partition(" ")
            source, _, mount = where.partition(" ")
            out["fs"] = {"type": fstype, "source": source, "mount": mount}
        elif word in ("SWEPT", "SIZE", "CACHED_AFTER_WRITE", "CACHED_BEFORE_READ") and (
            rest.strip().isdecimal()
        ):
            if word == "SWEPT":
                out.setdefault("swept", []).append(int(rest))
            elif word == "SIZE":
                out["bytes"] = int(rest)
            else:
                out[word.lower()] = int(rest)
        elif word in ("WRITE", "READ"):
            parts = rest.split()
            if len(parts) != 2 or not all(p.isdecimal() for p in parts):
                continue
            nbytes, ns = int(parts[0]), int(parts[1])
            out["bytes"] = nbytes
            out[f"{word.lower()}_gbps"] = nbytes / (ns / 1e9) / 1e9 if ns > 0 else None
    if out["tool"] == "fio":
        for kind in ("write", "read"):
            m = re.search(rf"##FIO-{kind.upper()}\n(.*?)\n##FIO-", stdout, re.S)
            job = _fio_job(m.group(1), kind) if m else None
            if job is None:
                continue
            if job.get("bw_bytes") is not None:
                bw = float(job["bw_bytes"])
            elif job.get("bw") is not None:  # fio 2.x: KiB/s only
                bw = float(job["bw"]) * 1024
            else:
                continue
            out[f"{kind}_gbps"] = bw / 1e9 if bw > 0 else None
            if "bytes" not in out and job.get("bw_bytes") is not None:  # (fio 2.x: io_bytes in KiB)
                out["bytes"] = int(job.get("io_bytes") or 0)
    return out


def disk_failure(directory: str, why: str, size: int) -> str:
    """The step's sentence for a disk test that stopped with `why` (the script's ERR text)."""
    what = f"disk test in {directory} failed"
    file = f"the {format_bytes(size)} test file"
    if "No space left on device" in why:
        return (
            f"{what}: the disk filled up while {file} was written ({why}); the test file was removed."
            " Something else is writing there, or not all the free space df reports is usable:"
            " free space there or set vars.disk_test_size smaller"
        )
    if "quota exceeded" in why.lower():
        return (
            f"{what}: a disk quota stopped {file} although df shows enough free space ({why});"
            " the test file was removed. Raise the quota or set vars.disk_test_size smaller"
        )
    return f"{what}: {why}"


def _fmt_s(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min"


def _share(cached: Any, total: Any) -> float | None:
    """The part of the test file that was in the page cache (None when not measured)."""
    if not isinstance(cached, int) or not total:
        return None
    return min(1.0, cached / float(total))


def disk_fs_check(d: Mapping[str, Any], directory: str, data_disk: str | None) -> Check | None:
    """Which filesystem the figures are of: memory (tmpfs) fails, the system disk when the order
    has a data disk warns; None when the script did not say (an older recording)."""
    fs = d.get("fs")
    if not isinstance(fs, Mapping):
        return None
    fstype, source, mount = str(fs.get("type")), str(fs.get("source")), str(fs.get("mount"))
    actual = f"{directory} is on {source} ({fstype}) mounted at {mount}"
    if fstype in RAM_FILESYSTEMS:
        return Check(
            "disk_device",
            "a disk",
            f"{actual}: memory, not a disk",
            "fail",
            "these figures are RAM speed, and what is written there is gone after a reboot: point"
            " vars.disk_test_dir at a directory on the data disk (or ask the vendor why the data"
            " disk is a tmpfs)",
        )
    if data_disk and data_disk != "/" and mount == "/":
        return Check(
            "disk_device",
            f"the data disk at {data_disk}",
            f"{actual}: the system disk",
            "warn",
            f"these figures are the system disk's: the order's data disk is not mounted at {data_disk}"
            " (see the data_disk rule), or vars.disk_test_dir points at the system disk",
        )
    return Check("disk_device", "(information)", actual, "pass")


def disk_checks(
    d: Mapping[str, Any],
    params: int | None,
    min_gbps: float,
    directory: str = "",
    data_disk: str | None = None,
) -> list[Check]:
    """Rules over a parsed disk measurement (pure)."""
    checks: list[Check] = []
    size = d.get("bytes")
    after_write = _share(d.get("cached_after_write"), size)
    before_read = _share(d.get("cached_before_read"), size)
    direct = bool(d.get("direct"))
    ignored = direct and after_write is not None and after_write > 0.5
    if ignored:
        mode = "O_DIRECT ignored by this filesystem: buffered, fsync'd"
    else:
        mode = "direct I/O" if direct else "buffered (no O_DIRECT here)"
    tool = f"{d.get('tool')}, {mode}"
    fs_check = disk_fs_check(d, directory, data_disk)
    if fs_check is not None:
        checks.append(fs_check)
    for kind in ("write", "read"):
        gbps = d.get(f"{kind}_gbps")
        if gbps is None:
            checks.append(Check(f"disk_{kind}", f">= {min_gbps} GB/s", "not measured", "warn"))
            continue
        actual = f"{gbps:.2f} GB/s sequential ({format_bytes(size)}, {tool})"
        note = ""
        verdict: Verdict = "pass" if gbps >= min_gbps else "warn"
        if verdict == "warn":
            note = (
                f"slow {kind}s make every checkpoint (and a resume) expensive; a local NVMe data disk"
                " writes 1-3 GB/s"
            )
        if kind == "read" and before_read is not None and before_read > CACHED_READ_SHARE:
            actual += f"; {before_read:.0%} of the file was in the page cache when the read began"
            verdict, note = (
                "warn",
                "not a disk figure: the read came from memory (the page cache could not be dropped"
                " for the test file here); judge the disk by disk_write",
            )
        elif kind == "read" and before_read is None and not (direct and not ignored) and not d.get("dropped"):
            verdict, note = (
                "warn",
                "read may come from the page cache (no direct I/O, and the file's cache could not"
                " be dropped): treat as an upper bound, not a disk figure",
            )
        checks.append(Check(f"disk_{kind}", f">= {min_gbps} GB/s", actual, verdict, note))
    wr = d.get("write_gbps")
    if params and wr:
        w = params * BYTES_PER_PARAM_WEIGHTS
        full = params * BYTES_PER_PARAM_FULL
        checks.append(
            Check(
                "checkpoint_time",
                "(information)",
                f"{params / 1e9:g}B params: weights {format_bytes(w, binary=False)} in"
                f" {_fmt_s(w / (wr * 1e9))}; with Adam state {format_bytes(full, binary=False)} in"
                f" {_fmt_s(full / (wr * 1e9))}",
                "pass",
            )
        )
    return checks


def disk_command(directory: str, script: str, token: str, timeout: float) -> str:
    """The one remote command: the script under the host's `timeout` (a little less than the
    step's wait), stopped with the SSH session that started it (`shell.until_session_ends`); a
    script killed before its own trap ran has its test file removed by name then."""
    inner = shell.join(["timeout", str(max(1, int(host_bound(timeout)))), "sh", "-c", script])
    leftover = f"rm -f -- {shell.quote(directory.rstrip('/') or '/')}/{DISK_FILE}.*.{token}.*"
    return shell.sh_c("trap '' PIPE\n" + shell.until_session_ends(inner, stop_kill=leftover))


class DiskSpeedStep(Step):
    """Sequential write (+fsync) and read of a checkpoint-sized file on the data disk."""

    name = "disk_speed"
    read_only = True
    ARGS = {
        "dir": "directory to test (default: vars.disk_test_dir, else the order's data_disk mount)",
        "size": "file size (default: vars.disk_test_size, else 4GiB)",
        "model_params": "model size for the checkpoint estimate, e.g. 7B (default: vars.model_params)",
        "min_gbps": "warn below this many GB/s (default 0.5)",
        "fio": "use fio when present (default true)",
        "timeout": "seconds before giving up (default 900)",
    }

    def plan(self, ctx: StepContext) -> Plan:
        """Write, fsync, read, remove; judge GB/s and the checkpoint time."""
        from gpuonboard.steps.prove.planner import parse_params

        v = ctx.host.vars
        order_disk = ctx.host.order.data_disk
        directory = _get(self.args, v, "dir", "disk_test_dir", order_disk.mount if order_disk else "")
        if not directory:
            return Plan(False, "no directory to test: set vars.disk_test_dir or order data_disk", failed=True)
        try:
            size = parse_size(_get(self.args, v, "size", "disk_test_size", "4GiB"))
            min_gbps = _float_arg(self, v, "min_gbps", "disk_min_gbps", 0.5)
            timeout = _float_arg(self, v, "timeout", "disk_timeout", 900)
            raw_params = _get(self.args, v, "model_params", "model_params", "")
            params = parse_params(str(raw_params)) if raw_params else None
            use_fio = truthy(_get(self.args, v, "fio", "disk_use_fio", True), "fio")
        except (StepArgsError, UsageError, ValueError) as exc:
            return Plan(False, f"bad disk_speed setting: {exc}", failed=True)
        if ctx.check:
            return Plan(False, f"check mode: the disk test of {directory} was not run")
        size_mib = max(4, size // MiB)
        token = secrets.token_hex(6)
        script = disk_script(str(directory), size_mib, use_fio, token)
        r = ctx.runner.run(disk_command(str(directory), script, token, timeout), timeout=timeout)
        d = parse_disk(r.stdout)
        if r.exit_code == 124 and not d.get("error"):
            return Plan(
                False,
                f"disk test in {directory} did not finish within {max(1, int(host_bound(timeout)))} s and"
                f" was stopped on the host (its test file removed): a very slow or hung disk; raise"
                f" vars.disk_timeout (now {timeout:.0f} s) or set vars.disk_test_size smaller",
                failed=True,
            )
        if d.get("error") or not r.ok:
            why = d.get("error") or (r.stderr.strip().splitlines() or [f"exit {r.exit_code}"])[-1]
            size_made = disk_file_blocks(size_mib) * 4 * MiB
            return Plan(False, disk_failure(str(directory), why, size_made), failed=True)
        checks = disk_checks(d, params, min_gbps, str(directory), order_disk.mount if order_disk else None)
        msg, failed = _summary(f"disk {directory}", checks)
        swept = d.get("swept") or []
        if swept:
            msg += (
                f"; removed {len(swept)} test file(s) ({format_bytes(sum(swept))}) that an earlier"
                f" interrupted disk test left in {directory}"
            )
        return Plan(False, msg, checks=checks, failed=failed, diff={"result": {**d, "dir": directory}})
