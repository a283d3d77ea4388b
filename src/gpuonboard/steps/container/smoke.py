"""The container step's smoke run of the pulled image: a plain run, then on a GPU host the
container must list every GPU the host lists and a python check (torch sees them, a matmul on
each, NCCL) must pass; a passed run is recorded on the host. `gpu_flags`: how a container gets
the GPUs (docker's `--gpus all`, podman's CDI device), also used by prove's in-container runs."""

from __future__ import annotations

from typing import Any

from gpuonboard import shell
from gpuonboard.steps.base import StepContext, last_line
from gpuonboard.steps.checks.driver_compat import driver_failure
from gpuonboard.steps.container.run_errors import run_failure
from gpuonboard.steps.container.state import Applied, ContainerState, host_gpu_count, smoke_file, smoke_key

_GPU_CHECK_OK = "##gpuonboard-gpu-check-ok"


def gpu_python_check(n: int) -> str:
    """The `python -c` text run in the image on a GPU host: torch sees exactly n GPUs, a small
    matmul on each gives the right answer, NCCL is available. Explicit checks that exit non-zero
    (never `assert`: an image with PYTHONOPTIMIZE set would skip them); the last line, printed
    only when every check passed, carries a marker the step requires."""
    return (
        "import sys, torch, torch.distributed as d\n"
        "n = torch.cuda.device_count()\n"
        f"if n != {int(n)}: sys.exit(f'torch sees {{n}} GPUs, nvidia-smi lists {int(n)}')\n"
        "for i in range(n):\n"
        "    a = torch.ones(256, 256, device=f'cuda:{i}')\n"
        "    s = (a @ a).sum().item()\n"
        "    if s != 256.0 ** 3: sys.exit(f'matmul on cuda:{i} gave {s}')\n"
        "if not d.is_nccl_available(): sys.exit('torch.distributed has no NCCL')\n"
        f"print(f'torch sees {{n}} GPUs; matmul ok on each; NCCL available {_GPU_CHECK_OK}')"
    )


def gpu_flags(state: ContainerState) -> list[str]:
    """How a container gets every GPU: docker's `--gpus all` (the NVIDIA toolkit's hook), podman's
    CDI device `nvidia.com/gpu=all` (podman before 5.0 accepts `--gpus` and ignores it, podman
    behind the `docker` shim included). Where the toolkit's hook runs in another mode than
    legacy (csv on a Jetson / IGX iGPU, Tegra, where "auto" means csv; cdi), it refuses
    `--gpus` ("Please use the NVIDIA Container Runtime (e.g. specify the --runtime=nvidia flag)
    instead", NVIDIA/TensorRT-LLM#799): `--runtime nvidia` with NVIDIA_VISIBLE_DEVICES=all,
    which its csv mode needs to inject any device."""
    if state.info.engine == "podman" or state.cli == "podman":
        return ["--device", "nvidia.com/gpu=all"]
    # (prove passes its own probe's state, typed Any there: any object with cli and info will do)
    if getattr(state, "hook_mode", "legacy") != "legacy":
        return ["--runtime", "nvidia", "-e", "NVIDIA_VISIBLE_DEVICES=all"]
    return ["--gpus", "all"]


def gpu_check_command(state: ContainerState, image: str, n: int) -> str:
    """`docker run --rm --gpus all IMAGE python -c CHECK` (torch sees n GPUs, matmul, NCCL)."""
    return state.command(
        [state.cli or "docker", "run", "--rm", *gpu_flags(state), image, "python", "-c", gpu_python_check(n)]
    )


def _smoke(ctx: StepContext, state: ContainerState, image: str, out: Applied) -> None:
    """Plain run, then on a GPU host: the container lists every GPU the host lists, and the
    python check passed (its marker line printed); any shortfall sets out.smoke_error."""
    cli = state.cli or "docker"
    arch = ctx.facts.cpu.architecture if ctx.facts.cpu else None

    def why(r: Any) -> str:  # (the known cause on any line, else the last line not noise)
        return run_failure(r.stdout, r.stderr, r.exit_code, arch)

    r = ctx.runner.run(state.command([cli, "run", "--rm", image, "true"]), timeout=300)
    if not r.ok:
        out.smoke_error = f"smoke run `{cli} run --rm {image} true` failed: {why(r)}"
        return
    out.smoke.append("plain container run ok")
    host_n = host_gpu_count(ctx.facts)
    if host_n is None:  # never "skipped": the GPUs may be there, unseen by a broken driver
        what, advice = driver_failure(ctx.facts)
        out.smoke_error = (
            f"GPU smoke run not possible: {what} on the host, so whether containers see its GPUs is"
            f" unknown; {advice}"
        )
        return
    if not host_n:
        out.smoke.append("GPU smoke run skipped: no NVIDIA GPU on this host (nvidia-smi lists none)")
        return
    r = ctx.runner.run(
        state.command([cli, "run", "--rm", *gpu_flags(state), image, "nvidia-smi", "-L"]), timeout=300
    )
    if not r.ok:
        out.smoke_error = f"GPU smoke run (nvidia-smi -L in the container) failed: {why(r)}"
        return
    n = len([line for line in r.stdout.splitlines() if line.startswith("GPU ")])
    if n < host_n:
        out.smoke_error = (
            f"GPU smoke run: the container sees {n} of the {host_n} GPUs nvidia-smi lists on the host;"
            " check the NVIDIA container toolkit's configuration and NVIDIA_VISIBLE_DEVICES"
        )
        return
    out.smoke.append(f"container sees {n} GPUs")
    r = ctx.runner.run(gpu_check_command(state, image, host_n), timeout=600)
    if not r.ok:
        out.smoke_error = f"GPU python check in the container failed: {why(r)}"
        return
    done = [line for line in r.stdout.splitlines() if _GPU_CHECK_OK in line]
    if not done:
        out.smoke_error = (
            "GPU python check in the container did not finish (exit 0 without its final line:"
            f" {last_line(r.stdout, r.exit_code)})"
        )
        return
    out.smoke.append(done[-1].replace(_GPU_CHECK_OK, "").strip())


def _record_smoke(ctx: StepContext, state: ContainerState, local: str, out: Applied) -> None:
    """Record a passed smoke run on the host (no secrets), or drop the record after a failure."""
    path = smoke_file(local)
    if out.smoke_error:
        ctx.runner.run(shell.sh_c(f'rm -f "{path}"'), timeout=60)
        return
    key = smoke_key(state, host_gpu_count(ctx.facts))
    ctx.runner.run(
        shell.sh_c(f'f="{path}"; mkdir -p "${{f%/*}}" && printf \'%s\\n\' {shell.quote(key)} > "$f"'),
        timeout=60,
    )
