"""gpuonboard all-reduce benchmark: bus bandwidth per message size (nccl-tests' busbw).

Shipped to the host over the SSH channel's stdin, written to a private temp file and run with
the host's (or the container's) Python. Without torchrun's environment it is the LAUNCHER: it
picks the process count (one per GPU, or --nproc; 2 on a CPU-only box) and the backend (NCCL
on GPUs, gloo on CPU), starts `torchrun --standalone` on its own file, and relays rank 0's
result. Each worker times `all_reduce(SUM)` over float32 tensors of growing size; the slowest
rank's time counts. algbw = bytes / time; busbw = algbw * 2(n-1)/n (the nccl-tests
definition, comparable across process counts). Prints ONE line `GPUONBOARD_RESULT {json}`.

Never a hang (issue 29): before the process group exists each NCCL rank asks CUDA whether every
pair of its node's GPUs has peer access (`p2p_decision`); where a pair has none, NCCL runs with
NCCL_P2P_DISABLE=1 (through host memory: NCCL can hang using P2P between such GPUs), unless the
environment already sets NCCL_P2P_DISABLE or NCCL_P2P_LEVEL (kept, and recorded). Local rank 0
prints that decision (`GPUONBOARD_P2P {json}`) at once, so the launcher can name it when the run
fails. The process group gets a timeout (--collective-timeout) that NCCL honours through async
error handling (`error_handling_env`: TORCH_NCCL_ASYNC_ERROR_HANDLING from torch 2.2, before
that NCCL_ASYNC_ERROR_HANDLING; torchrun sets it for its workers, this fills it in otherwise):
a collective that does not complete ends the ranks, and the launcher says so.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any

from gpuonboard.remote._common import MARK as MARK  # (this script's name too: the tests')
from gpuonboard.remote._common import emit

warnings.filterwarnings("ignore", message=".*NumPy.*")
MiB = 1 << 20
PERIOD = 251  # the input pattern's period (a prime: no alignment with chunk sizes)
P2P_MARK = "GPUONBOARD_P2P "
COLLECTIVE_TIMEOUT = 180.0  # seconds; torch's own default is 10 min (NCCL) / 30 min (gloo)
P2P_VARS = ("NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL")  # a user's choice: never overridden
# NCCL honours the process group's timeout only with one of these set (torch 2.2 renamed them:
# pytorch/pytorch#114077, the old names still read, with a warning)
ERROR_HANDLING_VARS = (
    "TORCH_NCCL_ASYNC_ERROR_HANDLING",
    "NCCL_ASYNC_ERROR_HANDLING",
    "TORCH_NCCL_BLOCKING_WAIT",
    "NCCL_BLOCKING_WAIT",
)
# a rank ended by the timeout: in a collective (NCCL's watchdog under async error handling, a
# blocking wait, gloo), or while the process group started (a rank that never joined the store)
COLLECTIVE_TIMEOUT_TEXT = re.compile(
    r"collective operation timeout|before timing out|timed out waiting", re.I
)
INIT_TIMEOUT_TEXT = re.compile(r"DistStoreError|wait timeout after", re.I)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--nproc", type=int, default=0, help="processes (default: GPUs, or 2 on CPU)")
    p.add_argument("--backend", choices=("auto", "nccl", "gloo"), default="auto")
    p.add_argument("--min-bytes", type=int, default=0, help="default 1 MiB (GPU) / 64 KiB (CPU)")
    p.add_argument("--max-bytes", type=int, default=0, help="default 1 GiB (GPU) / 64 MiB (CPU)")
    p.add_argument("--factor", type=int, default=4, help="size step (x factor)")
    p.add_argument("--warmup", type=int, default=0, help="default 5 (GPU) / 1 (CPU)")
    p.add_argument("--iters", type=int, default=0, help="default 20 (GPU) / 3 (CPU)")
    p.add_argument("--timeout", type=float, default=900.0, help="launcher: seconds before giving up")
    p.add_argument(
        "--collective-timeout",
        type=float,
        default=COLLECTIVE_TIMEOUT,
        help="seconds one collective (or the process group's start) may take before the ranks end",
    )
    return p.parse_args(argv)


def sizes(lo: int, hi: int, factor: int) -> list[int]:
    out, s = [], max(4, lo)
    while s < hi:
        out.append(s)
        s *= max(2, factor)
    out.append(hi)
    return out


def _is_nproc(argv: list[str], i: int) -> bool:
    """argv[i] is `--nproc`, its value, or `--nproc=N`."""
    a = argv[i]
    return a == "--nproc" or a.startswith("--nproc=") or (i > 0 and argv[i - 1] == "--nproc")


def stop(proc: subprocess.Popen[str], grace: float = 30.0) -> str:
    """End torchrun with SIGTERM first: it then stops its workers (they run in sessions of their
    own, so a SIGKILL of torchrun alone would leave ranks hung in a collective, holding GPUs).
    Returns its stdout (everything it wrote, the part read before the timeout included)."""
    proc.terminate()
    try:
        out, _ = proc.communicate(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    return out or ""


def pattern(numel: int, rank: int, device: Any) -> Any:
    """Rank `rank`'s input: element i holds (rank + 1) + (i mod 251), so the exact sum differs
    from element to element and an all-reduce that puts a chunk in the wrong place (or returns
    another chunk's partial sum) is caught, not only one that gets every value wrong. Every sum
    stays an integer below 2**24, exact in float32."""
    import torch

    ramp = torch.arange(PERIOD, dtype=torch.float32, device=device)
    reps = -(-numel // PERIOD)
    return ramp.repeat(reps)[:numel].add_(float(rank + 1))


def is_exact_sum(t: Any, n: int, device: Any) -> bool:
    """Whether `t` is the sum over `n` ranks of `pattern(...)`: n * (i mod 251) + n(n+1)/2."""
    want = pattern(t.numel(), -1, device).mul_(float(n)).add_(n * (n + 1) / 2)
    return bool(t.equal(want))


def pairs_without_access(gpus: Sequence[int], can_access: Callable[[int, int], bool]) -> list[list[int]]:
    """The pairs [i, j] (i before j in `gpus`) where either GPU cannot access the other's memory
    (`can_access(i, j)`: torch.cuda.can_device_access_peer on the host)."""
    out = []
    for at, i in enumerate(gpus):
        for j in gpus[at + 1 :]:
            if not (can_access(i, j) and can_access(j, i)):
                out.append([i, j])
    return out


def p2p_off_in(env: Mapping[str, str]) -> bool:
    """Whether NCCL's P2P transport is off under `env`: NCCL_P2P_LEVEL, when set, decides (LOC or 0
    = never; it overrides NCCL_P2P_DISABLE), else NCCL_P2P_DISABLE=1."""
    level = env.get("NCCL_P2P_LEVEL", "").strip()
    if level:
        return level.upper() in ("LOC", "0")
    return env.get("NCCL_P2P_DISABLE", "").strip() == "1"


def p2p_decision(
    gpus: Sequence[int], can_access: Callable[[int, int], bool], env: Mapping[str, str]
) -> dict[str, Any]:
    """Pure: whether NCCL must run without P2P on this node. `gpus`: the local ranks' devices;
    `env`: the environment NCCL will read. Where some pair lacks peer access and the environment
    sets neither NCCL_P2P_DISABLE nor NCCL_P2P_LEVEL, `set_env` holds NCCL_P2P_DISABLE=1 (to put in
    the environment before NCCL starts); a user's own setting is kept and recorded
    (`environment`). `nccl_p2p_disabled`: whether NCCL's P2P transport ends up off."""
    missing = pairs_without_access(list(gpus), can_access)
    user = {k: env[k] for k in P2P_VARS if env.get(k, "").strip()}  # NCCL reads "" as unset
    set_env = {"NCCL_P2P_DISABLE": "1"} if missing and not user else {}
    return {
        "gpus": list(gpus),
        "pairs_without_access": missing,
        "nccl_p2p_disabled": bool(set_env) or p2p_off_in(user),
        "set_by": "gpuonboard" if set_env else ("environment" if user else None),
        "environment": user,
        "set_env": set_env,
    }


def torch_at_least(version: str, major: int, minor: int) -> bool:
    """Whether a torch version string ("2.4.0+cu121", "2.2.0a0+81ea7a4", "1.13.1") is at least
    major.minor; an unreadable one counts as new."""
    m = re.match(r"(\d+)\.(\d+)", version)
    return m is None or (int(m.group(1)), int(m.group(2))) >= (major, minor)


def error_handling_env(torch_version: str, env: Mapping[str, str]) -> dict[str, str]:
    """Pure: the variable to set so that NCCL honours the process group's timeout (a collective
    that does not complete in time ends the process instead of hanging): async error handling,
    under the name this torch reads (TORCH_NCCL_ASYNC_ERROR_HANDLING from 2.2, before that
    NCCL_ASYNC_ERROR_HANDLING); nothing when the environment (torchrun, or the user) already sets
    either name or a blocking wait."""
    if any(env.get(k, "").strip() for k in ERROR_HANDLING_VARS):
        return {}
    new = torch_at_least(torch_version, 2, 2)
    return {"TORCH_NCCL_ASYNC_ERROR_HANDLING" if new else "NCCL_ASYNC_ERROR_HANDLING": "1"}


def pair_list(pairs: Sequence[Sequence[int]], most: int = 12) -> str:
    """ "0-3, 1-2" (the first `most` pairs, then how many more)."""
    shown = ", ".join(f"{a}-{b}" for a, b in pairs[:most])
    return shown + (f" and {len(pairs) - most} more" if len(pairs) > most else "")


def p2p_sentence(p2p: Mapping[str, Any] | None, hung: bool) -> str:
    """What the P2P decision says about a failed run ("" without one); `hung`: a collective or
    the whole run timed out."""
    if not p2p:
        return ""
    pairs = p2p.get("pairs_without_access") or []
    user = ", ".join(f"{k}={v}" for k, v in (p2p.get("environment") or {}).items())
    if pairs and p2p.get("set_by") == "gpuonboard":
        return f"; peer access missing between GPUs {pair_list(pairs)}: NCCL ran with NCCL_P2P_DISABLE=1"
    if pairs:
        return (
            f"; peer access missing between GPUs {pair_list(pairs)} and the environment's {user} was"
            " kept" + ("" if p2p.get("nccl_p2p_disabled") else ": set NCCL_P2P_DISABLE=1 instead")
        )
    if user:
        return f"; NCCL ran with the environment's {user}"
    if hung and len(p2p.get("gpus") or []) > 1:
        return (
            "; CUDA reports peer access between every GPU pair: if P2P does not work on this box"
            " (IOMMU on, PCIe ACS redirecting, some VMs), set NCCL_P2P_DISABLE=1 in the host's"
            " environment and rerun"
        )
    return ""


def last_p2p(out: str) -> dict[str, Any] | None:
    """The P2P decision a local rank 0 printed (`GPUONBOARD_P2P {json}`), or None."""
    for line in reversed(out.splitlines()):
        at = line.find(P2P_MARK)
        if at >= 0:
            try:
                data = json.loads(line[at + len(P2P_MARK) :])
            except json.JSONDecodeError:
                return None
            return data if isinstance(data, dict) else None
    return None


def failure(code: int | None, out: str, err: str, backend: str, collective_timeout: float) -> dict[str, Any]:
    """The result of a torchrun that exited without rank 0's result: a collective, or the process
    group's start, that ran out of `collective_timeout` is named as such, with what the P2P
    decision a rank printed says about it."""
    p2p = last_p2p(out)
    tail = (err or out).strip().splitlines()[-15:]
    lib = "NCCL" if backend == "nccl" else backend
    text = err + "\n" + out
    if COLLECTIVE_TIMEOUT_TEXT.search(text):
        error = (
            f"{lib} did not complete an all-reduce within {collective_timeout:.0f} s (the collective"
            f" timeout; the ranks were ended, torchrun exited {code})"
        ) + p2p_sentence(p2p, True)
    elif INIT_TIMEOUT_TEXT.search(text):
        error = (
            f"the {lib} process group did not start within {collective_timeout:.0f} s (a rank did not"
            f" join in time; torchrun exited {code})"
        ) + p2p_sentence(p2p, False)
    else:
        error = f"torchrun exited {code}" + p2p_sentence(p2p, False)
    return {"ok": False, "error": error, "stderr_tail": tail, "p2p": p2p}


def launch(args: argparse.Namespace, argv: list[str]) -> int:
    """Launcher: choose process count and backend, run torchrun on this file, relay rank 0."""
    try:
        import torch
    except Exception as exc:
        emit({"ok": False, "error": f"cannot import torch: {exc}"})
        return 1
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    backend = args.backend
    if backend == "auto":
        backend = "nccl" if gpus and torch.distributed.is_nccl_available() else "gloo"
    nproc = args.nproc or (gpus if backend == "nccl" else 2)
    if backend == "nccl" and nproc > gpus:
        emit({"ok": False, "error": f"--nproc {nproc} asks for more GPUs than torch sees ({gpus})"})
        return 1
    # the workers get the sweep settings only: torchrun's parser would take `--nproc` after the
    # script for an ambiguous abbreviation of its own --nproc_per_node / --nproc-per-node
    passed = [a for i, a in enumerate(argv) if not _is_nproc(argv, i)]
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
        os.path.abspath(__file__), *passed, "--backend", backend,
    ]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        out, err = proc.communicate(timeout=args.timeout)
    except subprocess.TimeoutExpired:
        p2p = last_p2p(stop(proc))
        error = f"torchrun did not finish within {args.timeout:.0f} s (stopped)" + p2p_sentence(p2p, True)
        emit({"ok": False, "error": error, "p2p": p2p})
        return 1
    # the marker may follow other text on its line: NCCL_DEBUG=INFO writes to the ranks' stdout
    # through a C buffer that can end part-way through a line
    lines = [x[x.find(MARK) :] for x in out.splitlines() if MARK in x]
    if proc.returncode != 0 or not lines:
        emit(failure(proc.returncode, out, err or "", backend, args.collective_timeout))
        return 1
    result = json.loads(lines[-1][len(MARK) :])
    result.update({"launcher": "torchrun --standalone", "wall_s": time.perf_counter() - t0})
    result["cuda_device_count"] = gpus
    emit(result)
    return 0


def prepare_nccl(torch: Any, local_rank: int) -> dict[str, Any]:
    """Before NCCL starts in this rank: the P2P decision over this node's local ranks' GPUs (the
    same on every rank of the node), its NCCL_P2P_DISABLE and the async error handling put in the
    environment NCCL and the process group read; local rank 0 prints the decision at once."""

    def can_access(i: int, j: int) -> bool:
        try:
            return bool(torch.cuda.can_device_access_peer(i, j))
        except Exception:  # an unanswered question counts as no access: P2P off costs bandwidth only
            return False

    local = int(os.environ.get("LOCAL_WORLD_SIZE", "0")) or torch.cuda.device_count()
    p2p = p2p_decision(range(local), can_access, os.environ)
    os.environ.update(p2p["set_env"])
    os.environ.update(error_handling_env(torch.__version__, os.environ))
    if local_rank == 0:
        sys.stdout.write(P2P_MARK + json.dumps(p2p, sort_keys=True) + "\n")
        sys.stdout.flush()
    return p2p


def local_ranks() -> int:
    """This node's rank count (torchrun's LOCAL_WORLD_SIZE; 1 without it)."""
    return int(os.environ.get("LOCAL_WORLD_SIZE", "0") or 0) or 1


def one_size(
    torch: Any, dist: Any, numel: int, rank_of: tuple[int, int], device: Any, warm: int, iters: int
) -> dict[str, Any]:
    """One all-reduce size on this rank (`rank_of`: its rank, the world size): whether the sum
    is exact on every rank, and the slowest rank's time per call."""
    rank, n = rank_of

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    t = pattern(numel, rank, device)
    dist.all_reduce(t)
    correct = is_exact_sum(t, n, device)
    for _ in range(warm - 1):
        dist.all_reduce(t)
    sync()
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        dist.all_reduce(t)
    sync()
    elapsed = torch.tensor([(time.perf_counter() - t0) / iters], dtype=torch.float64, device=device)
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)  # the slowest rank decides
    ok = torch.tensor([1.0 if correct else 0.0], device=device)
    dist.all_reduce(ok, op=dist.ReduceOp.MIN)
    sec = float(elapsed.item())
    nbytes = numel * 4
    algbw = nbytes / sec / 1e9 if sec > 0 else 0.0
    return {
        "bytes": nbytes,
        "time_us": sec * 1e6,
        "algbw_gbps": algbw,
        "busbw_gbps": algbw * 2 * (n - 1) / n,
        "correct": bool(ok.item() == 1.0),
    }


def worker(args: argparse.Namespace) -> int:
    import torch
    import torch.distributed as dist

    backend = args.backend
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    gpu = backend == "nccl"
    p2p: dict[str, Any] | None = None
    if gpu:
        torch.cuda.set_device(local_rank)
        p2p = prepare_nccl(torch, local_rank)
    device = torch.device(f"cuda:{local_rank}" if gpu else "cpu")
    limit = float(getattr(args, "collective_timeout", COLLECTIVE_TIMEOUT))
    dist.init_process_group(backend=backend, timeout=timedelta(seconds=limit))
    rank, n = dist.get_rank(), dist.get_world_size()
    lo = args.min_bytes or (MiB if gpu else 64 * 1024)
    hi = args.max_bytes or ((1 << 30) if gpu else 64 * MiB)
    warm = args.warmup or (5 if gpu else 1)
    iters = args.iters or (20 if gpu else 3)

    rows = [
        one_size(torch, dist, max(1, size // 4), (rank, n), device, warm, iters)
        for size in sizes(lo, hi, args.factor)
    ]
    if rank == 0:
        emit(
            {
                "ok": True,
                "backend": backend,
                "device": "cuda" if gpu else "cpu",
                "device_name": torch.cuda.get_device_name(device) if gpu else "cpu",
                # the GPUs this node's ranks ran on (local rank i on cuda:i), by name: on a box of
                # mixed models the reference row must fit every one of them
                "device_names": [torch.cuda.get_device_name(i) for i in range(local_ranks())]
                if gpu
                else None,
                "world_size": n,
                "torch_version": torch.__version__,
                "nccl_version": ".".join(map(str, torch.cuda.nccl.version())) if gpu else None,
                "iters": iters,
                "rows": rows,
                "peak_busbw_gbps": max(r["busbw_gbps"] for r in rows),
                "max_bytes": rows[-1]["bytes"],
                "all_correct": all(r["correct"] for r in rows),
                "p2p": p2p,
                "collective_timeout_s": limit,
                "nccl_error_handling": {k: os.environ[k] for k in ERROR_HANDLING_VARS if k in os.environ}
                if gpu
                else None,
            }
        )
    dist.destroy_process_group()
    return 0


def main(argv: list[str] | None = None) -> int:
    # in PCI bus order (CUDA's own is fastest first) local rank i's cuda:i is nvidia-smi's GPU i,
    # whose facts judge it (torchrun's ranks inherit it)
    os.environ["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    if "LOCAL_RANK" in os.environ and "TORCHELASTIC_RUN_ID" in os.environ:
        return worker(args)
    return launch(args, argv)


if __name__ == "__main__":
    sys.exit(main())
