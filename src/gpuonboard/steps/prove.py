"""Steps that prove the box trains: `smoke_train`, `allreduce`, `disk_speed` (issue 7).

Each is read-only for the host's state: the scripts arrive over the SSH channel's stdin, go
into a private temp directory (`shell.temp_script`) that is removed on every exit, and the
figures come back as ONE `GPUONBOARD_RESULT {json}` line. The rules are pure functions over
that JSON (tested on recorded result files). In check mode nothing runs (they load the box).
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from .. import shell
from ..errors import UsageError
from ..facts import topo
from ..facts.gather import Facts
from ..units import format_bytes, parse_size
from ..yamlload import load_yaml
from .base import Check, Plan, Step, StepArgsError, StepContext, Verdict

MARK = "GPUONBOARD_RESULT "
REFERENCE_FILE = Path(__file__).resolve().parents[1] / "data" / "allreduce_reference.yml"
GiB = 1 << 30
MiB = 1 << 20


def script_bytes(name: str) -> bytes:
    """A bundled remote script (package data under gpuonboard/remote/)."""
    return resources.files("gpuonboard.remote").joinpath(name).read_bytes()


def parse_result(stdout: str) -> dict[str, Any] | None:
    """The last `GPUONBOARD_RESULT {json}` line of a script's output, or None."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(MARK):
            try:
                data = json.loads(line[len(MARK) :])
            except json.JSONDecodeError:
                return None
            return data if isinstance(data, dict) else None
    return None


def _truthy(value: Any) -> bool:
    return value not in (False, None, "", "false", "False", "no", "0", 0)


def _get(args: Mapping[str, Any], host_vars: Mapping[str, Any], key: str, var: str, default: Any) -> Any:
    """Step arg, else `vars.<var>`, else default ('' and None count as unset)."""
    value = args.get(key)
    if value is None or value == "":
        value = host_vars.get(var)
    return default if value is None or value == "" else value


def _gpu_count(facts: Facts) -> int:
    return len(facts.gpu.gpus) if facts.gpu else 0


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
    from .driver_compat import DEFAULT_IMAGE

    try:
        timeout = float(_get(step.args, host_vars, "timeout", "train_timeout", default_timeout))
    except (TypeError, ValueError):
        raise StepArgsError("timeout must be a number of seconds") from None
    tmp = str(_get(step.args, host_vars, "tmp_dir", "remote_tmp", "/tmp"))
    if not tmp.startswith("/"):
        raise StepArgsError(f"tmp_dir must be an absolute path, not {tmp!r}")
    return Launch(
        python=str(_get(step.args, host_vars, "python", "train_python", "python3")),
        in_container=_truthy(_get(step.args, host_vars, "in_container", "train_in_container", False)),
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
) -> str:
    """The one remote command: stdin -> workdir/script, run it (host python or container)."""
    path = f"{workdir}/{script}"
    if launch.in_container:
        cli = runtime.cli or "docker"
        argv = [cli, "run", "--rm", "--ipc=host", *(["--gpus", "all"] if gpus else [])]
        argv += ["-v", f"{workdir}:{workdir}", "-w", workdir, launch.image, "python", path, *script_args]
        inner = runtime.command(argv)
    else:
        inner = shell.join([launch.python, path, *script_args])
    return shell.temp_script(workdir, script, inner)


def run_script(
    ctx: StepContext, launch: Launch, script: str, script_args: Sequence[str]
) -> tuple[dict[str, Any] | None, str]:
    """Run a bundled script on the host; (result JSON, '') or (None, why it failed)."""
    runtime = None
    if launch.in_container:
        from .container import parse_ref, parse_state, probe_command

        try:
            ref = parse_ref(launch.image)
        except StepArgsError as exc:
            return None, str(exc)
        probe = ctx.runner.run(shell.sh_c(probe_command(ref.canonical)), timeout=120)
        runtime = parse_state(probe.stdout)
        if not runtime.cli:
            return None, "train_in_container is set but no container runtime answers (run the container step)"
        if runtime.image_id is None:
            return None, f"image {launch.image} is not on the host; run the container step first"
    workdir = f"{launch.tmp}/gpuonboard-{script.split('.')[0]}-{secrets.token_hex(6)}"
    command = build_command(launch, script, script_args, workdir, runtime, gpus=_gpu_count(ctx.facts) > 0)
    r = ctx.runner.run(command, stdin=script_bytes(script), timeout=launch.timeout)
    data = parse_result(r.stdout)
    if data is None:
        tail = (r.stderr or r.stdout).strip().splitlines()[-3:]
        where = "in the container" if launch.in_container else f"with {launch.python}"
        why = " | ".join(tail) or f"exit {r.exit_code}"
        return None, _torch_hint(f"{script} {where} gave no result: {why}", launch)
    if not data.get("ok"):
        extra = " | ".join(data.get("stderr_tail") or [])[-400:]
        return None, _torch_hint(f"{script}: {data.get('error')}" + (f" ({extra})" if extra else ""), launch)
    return data, ""


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


def smoke_checks(
    r: Mapping[str, Any],
    gpu_count: int,
    loss_margin: float = 0.2,
    loader_wait_warn: float = 0.3,
    nproc: int | None = None,
) -> list[Check]:
    """Rules over a smoke_train.py result (pure)."""
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
    first, last = float(r.get("loss_first", 0.0)), float(r.get("loss_last", 0.0))
    drop = (first - last) / first if first > 0 else 0.0
    falls = first > 0 and last <= first * (1 - loss_margin)
    checks.append(
        Check(
            "loss_falls",
            f"loss of the last {r.get('loss_window')} steps <= {_pct(1 - loss_margin)} of the first's",
            f"{first:.4f} -> {last:.4f} ({-drop * 100:+.0f} %)",
            "pass" if falls else "fail",
            ""
            if falls
            else "the model does not learn a learnable task: suspect numerics (driver, GPU memory errors)",
        )
    )
    ck = r.get("checkpoint") or {}
    same = bool(ck.get("identical"))
    checks.append(
        Check(
            "checkpoint_roundtrip",
            "saved, reloaded, identical outputs",
            f"{format_bytes(ck.get('bytes'))} saved in {float(ck.get('save_s', 0)):.3f} s, reloaded in "
            f"{float(ck.get('load_s', 0)):.3f} s, "
            + ("outputs identical" if same else f"outputs differ (max {ck.get('max_abs_diff')})"),
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
                "warn",
                "PyTorch trains on the CPU: a CPU-only torch build, or a CUDA build the driver is too old"
                " for; use the NGC container (train_in_container) or a matching CUDA wheel",
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
        if ctx.check:
            return Plan(False, "check mode: the smoke training was not run")
        argv = ["--steps", str(steps), "--batch-size", str(batch), "--workers", str(workers)]
        data, why = run_script(ctx, launch, "smoke_train.py", argv)
        if data is None:
            return Plan(False, why, failed=True)
        checks = smoke_checks(data, _gpu_count(ctx.facts), margin, wait, ctx.facts.nproc)
        msg, failed = _summary(f"smoke training on {data.get('device')}", checks)
        return Plan(False, msg, checks=checks, failed=failed, diff={"result": data})


# --------------------------------------------------------------------------- allreduce


def load_references(path: Path = REFERENCE_FILE) -> dict[str, Any]:
    """The all-reduce reference table (see the comment at the top of the file)."""
    data = load_yaml(path, UsageError, "all-reduce reference")
    if not isinstance(data, dict) or not isinstance(data.get("references"), list):
        raise UsageError(f"{path}: needs a 'references:' list")
    return data


def match_reference(
    table: Mapping[str, Any], gpu_name: str, gpu_count: int, interconnect: str
) -> dict[str, Any] | None:
    """The first reference row matching GPU name, count and interconnect, or None."""
    name = gpu_name.lower()
    for row in table["references"]:
        gpu = str(row.get("gpu", "*")).lower()
        if gpu != "*" and gpu not in name:
            continue
        form = row.get("form")
        if form and str(form).lower() not in name:
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


def allreduce_checks(
    r: Mapping[str, Any],
    table: Mapping[str, Any],
    gpu_name: str,
    gpu_count: int,
    interconnect: str,
    acs: dict[str, int] | None = None,
    acs_asked: bool = False,
) -> list[Check]:
    """Rules over an allreduce.py result (pure)."""
    checks: list[Check] = []
    rows = r.get("rows") or []
    ok = bool(r.get("all_correct")) and bool(rows)
    checks.append(
        Check(
            "allreduce_correct",
            "sum over ranks is exact at every size",
            f"{len(rows)} sizes, " + ("all exact" if ok else "WRONG results"),
            "pass" if ok else "fail",
            "" if ok else "a collective that returns wrong sums corrupts training; suspect GPU/PCIe faults",
        )
    )
    peak = float(r.get("peak_busbw_gbps") or 0.0)
    at = max(rows, key=lambda x: x["busbw_gbps"])["bytes"] if rows else 0
    n, backend = r.get("world_size"), r.get("backend")
    actual = f"peak busbw {peak:.2f} GB/s at {format_bytes(at)} ({n} x {backend})"
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
    ref = match_reference(table, gpu_name, gpu_count, interconnect)
    if ref is None:
        checks.append(
            Check(
                "allreduce_busbw",
                f"a reference for {gpu_count} x {gpu_name} ({interconnect})",
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


class AllreduceStep(Step):
    """torchrun all-reduce benchmark (NCCL on GPUs, gloo on CPU) against reference busbw."""

    name = "allreduce"
    read_only = True
    ARGS = {
        **_LAUNCH_ARGS,
        "nproc": "processes (default: one per GPU, 2 on a CPU-only box)",
        "max_size": "largest message (default 1GiB on GPU, 64MiB on CPU)",
        "min_size": "smallest message (default 1MiB on GPU, 64KiB on CPU)",
        "iters": "timed iterations per size (default 20 GPU / 3 CPU)",
    }

    def plan(self, ctx: StepContext) -> Plan:
        """Run the benchmark (not in check mode), compare with the reference for the topology."""
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
        except (StepArgsError, UsageError, ValueError) as exc:
            return Plan(False, f"bad allreduce setting: {exc}", failed=True)
        if ctx.check:
            return Plan(False, "check mode: the all-reduce benchmark was not run")
        argv = []
        if nproc:
            argv += ["--nproc", str(nproc)]
        if iters:
            argv += ["--iters", str(iters)]
        if sizes["max_size"]:
            argv += ["--max-bytes", str(sizes["max_size"])]
        if sizes["min_size"]:
            argv += ["--min-bytes", str(sizes["min_size"])]
        data, why = run_script(ctx, launch, "allreduce.py", argv)
        if data is None:
            return Plan(False, why, failed=True)
        gpus = list(ctx.facts.gpu.gpus) if ctx.facts.gpu else []
        link = topo.interconnect(ctx.facts.topology) if ctx.facts.topology else "unknown"
        acs, asked = None, False
        if data.get("device") == "cuda" and link in ("pcie", "mixed"):
            asked = True
            out = ctx.runner.run(shell.sh_c("lspci -vvv 2>/dev/null | grep ACSCtl"), timeout=60)
            acs = parse_acs(out.stdout)
        checks = allreduce_checks(data, table, gpus[0].name if gpus else "", len(gpus), link, acs, asked)
        msg, failed = _summary(f"all-reduce over {data.get('world_size')} x {data.get('backend')}", checks)
        return Plan(False, msg, checks=checks, failed=failed, diff={"result": data})


# --------------------------------------------------------------------------- disk_speed

BYTES_PER_PARAM_WEIGHTS = 2  # bf16 weights
BYTES_PER_PARAM_FULL = 14  # bf16 weights + fp32 master copy + Adam m and v (4 + 4 + 4)


def disk_script(directory: str, size_mib: int, use_fio: bool = True) -> str:
    """Remote shell text: sequential write (+fsync) then read of one file in `directory`,
    fio when present else dd; prints `TOOL`, `DIRECT`, `WRITE bytes ns`, `READ bytes ns`
    (dd) or fio's JSON between `##FIO-WRITE`/`##FIO-READ` markers. Removes its file."""
    count = max(1, size_mib // 4)
    return f"""D={shell.quote(directory)}; N={count}
[ -d "$D" ] || {{ echo "ERR no such directory: $D"; exit 2; }}
avail=$(df -Pk "$D" | awk 'NR==2 {{print $4}}')
need=$((N * 4096 * 2))
[ "${{avail:-0}}" -ge "$need" ] || {{ echo "ERR only ${{avail}} KiB free in $D, need $need KiB"; exit 3; }}
F=$(mktemp "$D/.gpuonboard-disk.XXXXXX") || {{ echo "ERR cannot create a file in $D"; exit 4; }}
trap 'rm -f -- "$F"' EXIT
trap 'exit 129' HUP; trap 'exit 130' INT; trap 'exit 143' TERM
now() {{ date +%s%N; }}
if {"true" if use_fio else "false"} && command -v fio >/dev/null 2>&1; then
  echo "TOOL fio"
  common="--filename=$F --bs=4M --size=$((N * 4))M --ioengine=psync --output-format=json"
  if fio --name=probe --filename="$F" --rw=write --bs=4M --size=4M --direct=1 --output=/dev/null \
      >/dev/null 2>&1; then dir=1; else dir=0; fi
  echo "DIRECT $dir"
  echo "##FIO-WRITE"; fio --name=write $common --rw=write --direct=$dir --end_fsync=1 || exit 5
  echo "##FIO-READ"; fio --name=read $common --rw=read --direct=$dir || exit 6
  echo "##FIO-END"
else
  echo "TOOL dd"
  t0=$(now)
  if dd if=/dev/zero of="$F" bs=4M count=$N oflag=direct conv=fsync 2>/dev/null; then dir=1
  else t0=$(now); dd if=/dev/zero of="$F" bs=4M count=$N conv=fsync 2>/dev/null || exit 5; dir=0; fi
  t1=$(now)
  echo "DIRECT $dir"
  echo "WRITE $((N * 4194304)) $((t1 - t0))"
  if [ $dir = 1 ]; then flag=iflag=direct; else flag=; fi
  t0=$(now); dd if="$F" of=/dev/null bs=4M $flag 2>/dev/null || exit 6; t1=$(now)
  echo "READ $((N * 4194304)) $((t1 - t0))"
fi
"""


def parse_disk(stdout: str) -> dict[str, Any]:
    """`disk_script` output -> {tool, direct, write_gbps, read_gbps, bytes} (GB/s = 1e9 B/s)."""
    out: dict[str, Any] = {"tool": None, "direct": None, "write_gbps": None, "read_gbps": None}
    for line in stdout.splitlines():
        if line.startswith("ERR "):
            out["error"] = line[4:]
        elif line.startswith("TOOL "):
            out["tool"] = line.split()[1]
        elif line.startswith("DIRECT "):
            out["direct"] = line.split()[1] == "1"
        elif line.startswith(("WRITE ", "READ ")):
            kind, nbytes, ns = line.split()
            out["bytes"] = int(nbytes)
            sec = int(ns) / 1e9
            out[f"{kind.lower()}_gbps"] = int(nbytes) / sec / 1e9 if sec > 0 else None
    if out["tool"] == "fio":
        for kind in ("write", "read"):
            m = re.search(rf"##FIO-{kind.upper()}\n(.*?)\n##FIO-", stdout, re.S)
            if not m:
                continue
            text = m.group(1)
            try:
                job = json.loads(text[text.index("{") :])["jobs"][0][kind]
            except (ValueError, KeyError, IndexError):
                continue
            out[f"{kind}_gbps"] = float(job["bw_bytes"]) / 1e9
            out["bytes"] = int(job.get("io_bytes") or 0)
    return out


def _fmt_s(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min"


def disk_checks(d: Mapping[str, Any], params: int | None, min_gbps: float) -> list[Check]:
    """Rules over a parsed disk measurement (pure)."""
    checks: list[Check] = []
    tool = f"{d.get('tool')}, " + ("direct I/O" if d.get("direct") else "buffered (no O_DIRECT here)")
    for kind in ("write", "read"):
        gbps = d.get(f"{kind}_gbps")
        if gbps is None:
            checks.append(Check(f"disk_{kind}", f">= {min_gbps} GB/s", "not measured", "warn"))
            continue
        note = ""
        if kind == "read" and not d.get("direct"):
            note = "read may come from the page cache (no direct I/O): treat as an upper bound"
        verdict: Verdict = "pass" if gbps >= min_gbps else "warn"
        if verdict == "warn":
            note = (
                f"slow {kind}s make every checkpoint (and a resume) expensive; a local NVMe data disk"
                " writes 1-3 GB/s"
            )
        checks.append(
            Check(
                f"disk_{kind}",
                f">= {min_gbps} GB/s",
                f"{gbps:.2f} GB/s sequential ({format_bytes(d.get('bytes'))}, {tool})",
                verdict,
                note,
            )
        )
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
        from ..planner import parse_params

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
        except (StepArgsError, UsageError, ValueError) as exc:
            return Plan(False, f"bad disk_speed setting: {exc}", failed=True)
        if ctx.check:
            return Plan(False, f"check mode: the disk test of {directory} was not run")
        use_fio = _truthy(_get(self.args, v, "fio", "disk_use_fio", True))
        script = disk_script(str(directory), max(4, size // MiB), use_fio)
        r = ctx.runner.run(shell.sh_c(script), timeout=timeout)
        d = parse_disk(r.stdout)
        if d.get("error") or not r.ok:
            why = d.get("error") or (r.stderr.strip().splitlines() or [f"exit {r.exit_code}"])[-1]
            return Plan(False, f"disk test in {directory} failed: {why}", failed=True)
        checks = disk_checks(d, params, min_gbps)
        msg, failed = _summary(f"disk {directory}", checks)
        return Plan(False, msg, checks=checks, failed=failed, diff={"result": {**d, "dir": directory}})
