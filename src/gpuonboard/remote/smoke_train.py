"""gpuonboard smoke training: prove a box trains (synthetic data, no download, no state left).

Shipped to the host over the SSH channel's stdin and run with the host's (or the container's)
Python. Trains a small MLP on a synthetic, learnable classification task through a real
DataLoader with the configured workers; saves a checkpoint, reloads it into a fresh model and
compares outputs; prints ONE result line `GPUONBOARD_RESULT {json}` on stdout (exit 0 even when a
rule fails: judging is gpuonboard's job; exit 1 only when the script itself could not run).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
import warnings
from typing import Any

from gpuonboard.remote._common import emit, private_dir

warnings.filterwarnings("ignore", message=".*NumPy.*")


def same_tensors(a: Any, b: Any) -> bool:
    """Whether two (nested dicts / lists of) tensors and numbers are equal bit for bit: the
    optimizer state a resume continues from (Adam's moments), not only the weights."""
    import torch

    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return False
        return a.dtype == b.dtype and a.shape == b.shape and bool(torch.equal(a.cpu(), b.cpu()))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_tensors(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_tensors(x, y) for x, y in zip(a, b))  # noqa: B905 (host Pythons < 3.10)
    return bool(a == b)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--dim", type=int, default=64, help="input features")
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--classes", type=int, default=8)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    p.add_argument("--workdir", default="", help="where the checkpoint goes (default: a temp dir)")
    p.add_argument("--window", type=int, default=5, help="steps averaged for first/last loss")
    p.add_argument("--sample-cost-us", type=float, default=0.0, help="simulated per-sample load cost")
    return p.parse_args(argv)


def make_loader(args: argparse.Namespace, use_cuda: bool) -> Any:
    """A DataLoader over a synthetic, learnable classification task (labels from a random
    linear teacher), `--sample-cost-us` of busy work per sample, the configured workers."""
    import torch
    from torch.utils.data import DataLoader, Dataset

    n_samples = args.steps * args.batch_size
    gen = torch.Generator().manual_seed(args.seed)
    teacher = torch.randn(args.dim, args.classes, generator=gen)
    features = torch.randn(n_samples, args.dim, generator=gen)
    labels = (features @ teacher).argmax(dim=1)
    cost_s = args.sample_cost_us / 1e6

    class Synthetic(Dataset):
        def __len__(self) -> int:
            return n_samples

        def __getitem__(self, i: int) -> tuple[Any, Any]:
            if cost_s:
                end = time.perf_counter() + cost_s
                while time.perf_counter() < end:
                    pass
            return features[i], labels[i]

    return DataLoader(
        Synthetic(),
        batch_size=args.batch_size,
        shuffle=True,
        num_workers=args.workers,
        pin_memory=use_cuda,
        drop_last=True,
        persistent_workers=False,
        generator=torch.Generator().manual_seed(args.seed),
    )


def make_model(args: argparse.Namespace, device: Any) -> Any:
    """The small MLP trained (and, fresh, reloaded from the checkpoint)."""
    from torch import nn

    return nn.Sequential(
        nn.Linear(args.dim, args.hidden),
        nn.ReLU(),
        nn.Linear(args.hidden, args.hidden),
        nn.ReLU(),
        nn.Linear(args.hidden, args.classes),
    ).to(device)


def train_loop(
    loader: Any, model: Any, opt: Any, loss_fn: Any, device: Any, use_cuda: bool
) -> dict[str, Any]:
    """One pass over the loader: the losses, each step's time, and how long the loop waited
    for the loader (the first batch, worker start-up, apart)."""
    import torch

    def sync() -> None:
        if use_cuda:
            torch.cuda.synchronize(device)

    losses: list[float] = []
    step_times: list[float] = []
    wait_total = 0.0
    first_wait = 0.0
    batches = 0
    t_start = time.perf_counter()
    t_prev = t_start
    t_steady = t_start
    for x, y in loader:
        t_got = time.perf_counter()
        if batches == 0:
            first_wait = t_got - t_prev  # worker start-up: reported apart, not in the share
            t_steady = t_got
        else:
            wait_total += t_got - t_prev
        x = x.to(device, non_blocking=True)
        y = y.to(device, non_blocking=True)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        losses.append(float(loss.item()))  # item() synchronises
        sync()
        t_prev = time.perf_counter()
        step_times.append(t_prev - t_got)
        batches += 1
    t_end = time.perf_counter()
    total = t_end - t_start
    steady = t_end - t_steady
    if batches == 0:
        raise RuntimeError("the DataLoader yielded no batch")
    return {
        "losses": losses,
        "step_times": step_times,
        "wait_total": wait_total,
        "first_wait": first_wait,
        "batches": batches,
        "total": total,
        "steady": steady,
    }


def checkpoint_roundtrip(
    args: argparse.Namespace, model: Any, opt: Any, batches: int, device: Any
) -> dict[str, Any]:
    """Save a checkpoint, reload it into a fresh model and optimizer, compare outputs and the
    optimizer state bit for bit, remove it: the result's "checkpoint" entry."""
    import torch

    workdir = args.workdir or tempfile.mkdtemp(prefix="gpuonboard-smoke-", dir=private_dir(__file__))
    ckpt = os.path.join(workdir, "smoke_checkpoint.pt")
    probe = torch.randn(16, args.dim, generator=torch.Generator().manual_seed(args.seed + 1)).to(device)
    model.eval()
    with torch.no_grad():
        before = model(probe)
    t0 = time.perf_counter()
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": batches}, ckpt)
    save_s = time.perf_counter() - t0
    ckpt_bytes = os.path.getsize(ckpt)
    t0 = time.perf_counter()
    state = torch.load(ckpt, map_location=device)
    fresh = make_model(args, device)
    fresh.load_state_dict(state["model"])
    fresh_opt = torch.optim.Adam(fresh.parameters(), lr=args.lr)
    fresh_opt.load_state_dict(state["optimizer"])
    load_s = time.perf_counter() - t0
    fresh.eval()
    with torch.no_grad():
        after = fresh(probe)
    identical = bool(torch.equal(before, after))
    max_diff = float((before - after).abs().max().item())
    optimizer_identical = same_tensors(opt.state_dict()["state"], fresh_opt.state_dict()["state"])
    os.remove(ckpt)
    if not args.workdir:
        os.rmdir(workdir)
    return {
        "bytes": ckpt_bytes,
        "save_s": save_s,
        "load_s": load_s,
        "identical": identical,
        "optimizer_identical": optimizer_identical,
        "max_abs_diff": max_diff,
        "removed": not os.path.exists(ckpt),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    import torch
    from torch import nn

    torch.manual_seed(args.seed)
    cuda = torch.cuda.is_available()
    if args.device == "cuda" and not cuda:
        raise RuntimeError("--device cuda asked for, but torch.cuda.is_available() is False")
    use_cuda = cuda and args.device != "cpu"
    device = torch.device("cuda:0" if use_cuda else "cpu")
    loader = make_loader(args, use_cuda)
    model = make_model(args, device)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()
    if use_cuda:
        torch.cuda.reset_peak_memory_stats(device)
    t = train_loop(loader, model, opt, loss_fn, device, use_cuda)
    losses, batches, total, steady = t["losses"], t["batches"], t["total"], t["steady"]
    # checkpoint round trip: save, reload into a fresh model, compare outputs bit for bit
    checkpoint = checkpoint_roundtrip(args, model, opt, batches, device)

    w = max(1, min(args.window, len(losses) // 3 or 1))
    median_step = statistics.median(t["step_times"])
    return {
        "ok": True,
        "device": "cuda" if use_cuda else "cpu",
        "device_name": torch.cuda.get_device_name(device) if use_cuda else platform.processor() or "cpu",
        "cuda_available": cuda,
        "cuda_device_count": torch.cuda.device_count() if cuda else 0,
        "torch_version": torch.__version__,
        "python": platform.python_version(),
        "workers": args.workers,
        "batch_size": args.batch_size,
        "steps_asked": args.steps,
        "batches": batches,
        "loss_first": statistics.fmean(losses[:w]),
        "loss_last": statistics.fmean(losses[-w:]),
        "loss_window": w,
        "losses": [round(v, 5) for v in losses],
        "step_time_s": median_step,
        "samples_per_s": batches * args.batch_size / total if total > 0 else None,
        "total_s": total,
        "loader_wait_s": t["wait_total"],
        "loader_first_batch_s": t["first_wait"],
        "loader_wait_share": t["wait_total"] / steady if steady > 0 else 0.0,
        "peak_gpu_mem_bytes": int(torch.cuda.max_memory_allocated(device)) if use_cuda else None,
        "checkpoint": checkpoint,
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        result = run(args)
    except Exception as exc:  # report, never a bare traceback only
        emit({"ok": False, "error": f"{type(exc).__name__}: {exc}"})
        return 1
    emit(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
