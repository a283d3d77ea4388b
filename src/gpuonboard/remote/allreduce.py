"""gpuonboard all-reduce benchmark: bus bandwidth per message size (nccl-tests' busbw).

Shipped to the host over the SSH channel's stdin, written to a private temp file and run with
the host's (or the container's) Python. Without torchrun's environment it is the LAUNCHER: it
picks the process count (one per GPU, or --nproc; 2 on a CPU-only box) and the backend (NCCL
on GPUs, gloo on CPU), starts `torchrun --standalone` on its own file, and relays rank 0's
result. Each worker times `all_reduce(SUM)` over float32 tensors of growing size; the slowest
rank's time counts. algbw = bytes / time; busbw = algbw * 2(n-1)/n (the nccl-tests
definition, comparable across process counts). Prints ONE line `GPUONBOARD_RESULT {json}`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import warnings
from typing import Any

warnings.filterwarnings("ignore", message=".*NumPy.*")
MARK = "GPUONBOARD_RESULT "
MiB = 1 << 20
PERIOD = 251  # the input pattern's period (a prime: no alignment with chunk sizes)


def emit(result: dict[str, Any]) -> None:
    sys.stdout.write(MARK + json.dumps(result, sort_keys=True) + "\n")
    sys.stdout.flush()


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


def stop(proc: subprocess.Popen[str], grace: float = 30.0) -> None:
    """End torchrun with SIGTERM first: it then stops its workers (they run in sessions of their
    own, so a SIGKILL of torchrun alone would leave ranks hung in a collective, holding GPUs)."""
    proc.terminate()
    try:
        proc.communicate(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()


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
        stop(proc)
        emit({"ok": False, "error": f"torchrun did not finish within {args.timeout:.0f} s (stopped)"})
        return 1
    # the marker may follow other text on its line: NCCL_DEBUG=INFO writes to the ranks' stdout
    # through a C buffer that can end part-way through a line
    lines = [x[x.find(MARK) :] for x in out.splitlines() if MARK in x]
    if proc.returncode != 0 or not lines:
        tail = (err or out).strip().splitlines()[-15:]
        emit({"ok": False, "error": f"torchrun exited {proc.returncode}", "stderr_tail": tail})
        return 1
    result = json.loads(lines[-1][len(MARK) :])
    result.update({"launcher": "torchrun --standalone", "wall_s": time.perf_counter() - t0})
    result["cuda_device_count"] = gpus
    emit(result)
    return 0


def worker(args: argparse.Namespace) -> int:
    import torch
    import torch.distributed as dist

    backend = args.backend
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    gpu = backend == "nccl"
    if gpu:
        torch.cuda.set_device(local_rank)
    device = torch.device(f"cuda:{local_rank}" if gpu else "cpu")
    dist.init_process_group(backend=backend)
    rank, n = dist.get_rank(), dist.get_world_size()
    lo = args.min_bytes or (MiB if gpu else 64 * 1024)
    hi = args.max_bytes or ((1 << 30) if gpu else 64 * MiB)
    warm = args.warmup or (5 if gpu else 1)
    iters = args.iters or (20 if gpu else 3)

    def sync() -> None:
        if gpu:
            torch.cuda.synchronize(device)

    rows = []
    for size in sizes(lo, hi, args.factor):
        numel = max(1, size // 4)
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
        rows.append(
            {
                "bytes": nbytes,
                "time_us": sec * 1e6,
                "algbw_gbps": algbw,
                "busbw_gbps": algbw * 2 * (n - 1) / n,
                "correct": bool(ok.item() == 1.0),
            }
        )
        del t
    if rank == 0:
        emit(
            {
                "ok": True,
                "backend": backend,
                "device": "cuda" if gpu else "cpu",
                "device_name": torch.cuda.get_device_name(device) if gpu else "cpu",
                "world_size": n,
                "torch_version": torch.__version__,
                "nccl_version": ".".join(map(str, torch.cuda.nccl.version())) if gpu else None,
                "iters": iters,
                "rows": rows,
                "peak_busbw_gbps": max(r["busbw_gbps"] for r in rows),
                "max_bytes": rows[-1]["bytes"],
                "all_correct": all(r["correct"] for r in rows),
            }
        )
    dist.destroy_process_group()
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    if "LOCAL_RANK" in os.environ and "TORCHELASTIC_RUN_ID" in os.environ:
        return worker(args)
    return launch(args, argv)


if __name__ == "__main__":
    sys.exit(main())
