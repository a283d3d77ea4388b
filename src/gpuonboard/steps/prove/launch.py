"""Running a bundled script (gpuonboard/remote/*.py) on a host for the prove steps: the
settings (`vars.train_*`), the one remote command (the host's Python or the training image,
a private temp dir, the host's `timeout`, stopped with the SSH session), the image's local
name, and the `GPUONBOARD_RESULT {json}` line it prints. Also the step-argument readers the
prove steps share (`_get`, `_int_arg`, `_float_arg`)."""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from gpuonboard import shell
from gpuonboard.inventory import Host
from gpuonboard.steps.base import Step, StepArgsError, StepContext, truthy
from gpuonboard.steps.container import ContainerState, gpu_flags
from gpuonboard.steps.prove.bundle import script_text
from gpuonboard.steps.prove.rules import _gpu_count

MARK = "GPUONBOARD_RESULT "


def script_bytes(name: str) -> bytes:
    """A bundled remote script (package data under gpuonboard/remote/) as it is shipped: one
    file, the parts it imports (remote/_*.py) inlined (see `bundle`)."""
    return script_text(name).encode()


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


# --------------------------------------------------------------------------- running a script


@dataclass(frozen=True)
class Launch:
    """How a bundled script runs on this host: the host's Python, or python in the image."""

    python: str
    in_container: bool
    image: str
    tmp: str
    timeout: float


_LAUNCH_ARGS = {
    "python": "the host's Python with PyTorch (default: vars.train_python, else python3)",
    "in_container": "run in the training image instead (default: vars.train_in_container)",
    "image": "training image for in_container (default: vars.container_image)",
    "tmp_dir": "parent of the private temp dir (default: vars.remote_tmp, else /tmp)",
    "timeout": "seconds before giving up (default: vars.train_timeout)",
}


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


def _torch_hint(why: str, launch: Launch) -> str:
    if "No module named 'torch'" in why or "cannot import torch" in why:
        where = "the image" if launch.in_container else launch.python
        why += f" (install PyTorch for {where}, set vars.train_python, or set vars.train_in_container)"
    return why
