"""gpuonboard GPU benchmark: synthetic ResNet-50 training throughput per GPU + sustained load.

Shipped to the host over the SSH channel's stdin and run with the host's (or the container's)
Python. One worker process per GPU (all GPUs at once, as in a real run) trains ResNet-50 v1.5
(defined here: torchvision is not needed) on random images with mixed precision (fp16 autocast
+ GradScaler, channels_last) at a batch sized to the GPU's memory; images/s over the timed
steps, then a sustained-load window (default 120 s) while `nvidia-smi --query-gpu ... -lms`
samples clocks, temperature, power and clock-event (throttle) reasons in the background. On a
host without CUDA it trains once on the CPU in fp32 (information only). Prints ONE result line
`GPUONBOARD_RESULT {json}`; exit 1 only when the script itself could not run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from typing import Any

from gpuonboard.remote._common import emit, exit_on_signal, private_dir, reason_names
from gpuonboard.remote._common import start_sampler as start_smi
from gpuonboard.remote._common import stop_sampler as stop_smi

warnings.filterwarnings("ignore", message=".*NumPy.*")
WORKER_MARK = "GPUONBOARD_WORKER "
SAMPLE_FIELDS = (
    "index",
    "clocks.sm",
    "clocks.max.sm",
    "temperature.gpu",
    "power.draw",
    "power.limit",
    "clocks_throttle_reasons.active",
    "utilization.gpu",
)
LOADED_UTIL_PCT = 50.0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--steps", type=int, default=0, help="timed steps (default 50 GPU / 3 CPU)")
    p.add_argument("--warmup", type=int, default=-1, help="untimed steps (default 10 GPU / 1 CPU)")
    p.add_argument("--batch-size", type=int, default=0, help="0: sized to memory (GPU) / 8 (CPU)")
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--duration", type=float, default=-1, help="sustained window s (default 120 GPU / 0 CPU)")
    p.add_argument("--sample-ms", type=int, default=1000, help="nvidia-smi sampling interval")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    p.add_argument("--worker", type=int, default=-1, help=argparse.SUPPRESS)
    return p.parse_args(argv)


# --------------------------------------------------------------------------- ResNet-50 v1.5


def resnet50(num_classes: int = 1000) -> Any:
    """ResNet-50 v1.5 (stride in the 3x3 conv of the bottleneck), [3, 4, 6, 3] blocks."""
    from torch import nn

    class Bottleneck(nn.Module):
        expansion = 4

        def __init__(self, cin: int, width: int, stride: int) -> None:
            super().__init__()
            cout = width * self.expansion
            self.body = nn.Sequential(
                nn.Conv2d(cin, width, 1, bias=False),
                nn.BatchNorm2d(width),
                nn.ReLU(inplace=True),
                nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False),
                nn.BatchNorm2d(width),
                nn.ReLU(inplace=True),
                nn.Conv2d(width, cout, 1, bias=False),
                nn.BatchNorm2d(cout),
            )
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(
                    nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout)
                )
            self.relu = nn.ReLU(inplace=True)

        def forward(self, x: Any) -> Any:
            skip = x if self.down is None else self.down(x)
            return self.relu(self.body(x) + skip)

    layers: list[Any] = [
        nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False),
        nn.BatchNorm2d(64),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(3, stride=2, padding=1),
    ]
    cin = 64
    for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for i in range(blocks):
            layers.append(Bottleneck(cin, width, stride if i == 0 else 1))
            cin = width * 4
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, num_classes)]
    return nn.Sequential(*layers)


# --------------------------------------------------------------------------- one worker


class Trainer:
    """ResNet-50 with its optimizer on one device (mixed precision and channels_last on a GPU,
    fp32 on the CPU): random batches and one training step at a time."""

    def __init__(self, gpu: int | None, size: int) -> None:
        import torch
        from torch import nn

        self.torch = torch
        self.cuda = gpu is not None
        self.device = torch.device(f"cuda:{gpu}" if self.cuda else "cpu")
        if self.cuda:
            torch.cuda.set_device(self.device)
            torch.backends.cudnn.benchmark = True
        self.size = size
        model = resnet50().to(self.device)
        if self.cuda:
            model = model.to(memory_format=torch.channels_last)
        self.model = model
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.875, weight_decay=3e-5)
        self.loss_fn = nn.CrossEntropyLoss()
        self.scaler = torch.amp.GradScaler("cuda") if self.cuda else None

    def batch_of(self, n: int) -> tuple[Any, Any]:
        torch, size, device = self.torch, self.size, self.device
        x = torch.randn(n, 3, size, size, device=device)
        if self.cuda:
            x = x.contiguous(memory_format=torch.channels_last)
        return x, torch.randint(0, 1000, (n,), device=device)

    def step(self, x: Any, y: Any) -> None:
        torch, opt, loss_fn, model, scaler = self.torch, self.opt, self.loss_fn, self.model, self.scaler
        opt.zero_grad(set_to_none=True)
        if self.cuda:
            with torch.autocast("cuda", dtype=torch.float16):
                loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()  # type: ignore[union-attr]
            scaler.step(opt)  # type: ignore[union-attr]
            scaler.update()  # type: ignore[union-attr]
        else:
            loss_fn(model(x), y).backward()
            opt.step()

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize(self.device)


def first_batch(t: Trainer, args: argparse.Namespace) -> tuple[int, list[int], Any, Any]:
    """Train one step at the batch size: --batch-size, or on a GPU the largest candidate that
    fits (estimate first, then OOM fallback), or 8 on the CPU; (batch, candidates tried, x, y)."""
    torch = t.torch
    tried: list[int] = []
    if args.batch_size:
        batch = args.batch_size
        x, y = t.batch_of(batch)
        t.step(x, y)
    elif t.cuda:
        total = torch.cuda.get_device_properties(t.device).total_memory
        per_image = 0.11 * (1 << 30) * (t.size / 224) ** 2  # ~AMP activations + workspace per image
        batch = 0
        for cand in (512, 384, 256, 192, 128, 96, 64, 32, 16, 8):
            if cand * per_image > 0.8 * total and cand > 8:
                continue
            tried.append(cand)
            try:
                x, y = t.batch_of(cand)
                t.step(x, y)
                batch = cand
                break
            except torch.cuda.OutOfMemoryError:
                x = y = None
                t.opt.zero_grad(set_to_none=True)
                torch.cuda.empty_cache()
        if not batch:
            raise RuntimeError(f"ResNet-50 does not fit even at batch 8 (tried {tried})")
    else:
        batch = 8
        x, y = t.batch_of(batch)
        t.step(x, y)
    return batch, tried, x, y


def sustained(t: Trainer, batch: int, duration: float, x: Any, y: Any) -> dict[str, Any]:
    """Train for `duration` seconds; images/s per tenth of it (windows of at least 0.5 s)."""
    windows: list[float] = []
    window_s = max(duration / 10, 0.5)
    end = time.perf_counter() + duration
    while time.perf_counter() < end:
        w0, n = time.perf_counter(), 0
        while time.perf_counter() - w0 < window_s:
            t.step(x, y)
            n += 1
            if not t.cuda and time.perf_counter() >= end:
                break
        t.sync()
        windows.append(batch * n / (time.perf_counter() - w0))
    return {
        "seconds": duration,
        "window_s": window_s,
        "windows_images_per_s": [round(w, 2) for w in windows],
        "images_per_s": statistics.median(windows) if windows else None,
        "first_images_per_s": windows[0] if windows else None,
        "last_images_per_s": windows[-1] if windows else None,
    }


def train(args: argparse.Namespace, gpu: int | None) -> dict[str, Any]:
    """Train on one device; images/s over the timed steps and over the sustained window."""
    import torch

    torch.manual_seed(0)
    t = Trainer(gpu, args.image_size)
    cuda, device = t.cuda, t.device
    batch, tried, x, y = first_batch(t, args)
    warmup = args.warmup if args.warmup >= 0 else (10 if cuda else 1)
    steps = args.steps or (50 if cuda else 3)
    for _ in range(warmup):
        t.step(x, y)
    t.sync()
    if cuda:
        torch.cuda.reset_peak_memory_stats(device)
    t0 = time.perf_counter()
    for _ in range(steps):
        t.step(x, y)
    t.sync()
    elapsed = time.perf_counter() - t0
    out: dict[str, Any] = {
        "gpu": gpu,
        "device_name": torch.cuda.get_device_name(device) if cuda else platform.processor() or "cpu",
        "batch_size": batch,
        "batch_candidates_tried": tried,
        "steps": steps,
        "warmup": warmup,
        "images_per_s": batch * steps / elapsed if elapsed > 0 else None,
        "step_time_s": elapsed / steps,
        "peak_mem_bytes": torch.cuda.max_memory_allocated(device) if cuda else None,
    }
    duration = args.duration if args.duration >= 0 else (120.0 if cuda else 0.0)
    if duration > 0:
        out["sustained"] = sustained(t, batch, duration, x, y)
    return out


# --------------------------------------------------------------------------- sampler


def decode_reasons(value: str) -> list[str]:
    """Hex mask of `clocks_throttle_reasons.active` -> names (bits past the table: 'bit N')."""
    try:
        mask = int(value.strip(), 16)
    except ValueError:
        return []
    return reason_names(mask)


def _is_mask(value: str) -> bool:
    try:
        int(value.strip(), 16)
    except ValueError:
        return False
    return True


def summarize_samples(text: str) -> dict[str, Any]:
    """`nvidia-smi --query-gpu=<SAMPLE_FIELDS> --format=csv,noheader,nounits -lms N` -> per GPU
    {samples, load_samples (utilization >= LOADED_UTIL_PCT; the clock, power and reason figures
    cover those alone when there are any), sm_clock_mhz min/median, sm_clock_max_mhz,
    temp_max_c (over every sample), power_median_w, power_limit_w, reasons: {name: share},
    reasons_samples (how many of those samples read a reasons mask)}."""
    per: dict[str, list[list[str]]] = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(SAMPLE_FIELDS) or not cells[0].isdecimal():
            continue
        per.setdefault(cells[0], []).append(cells)

    def nums(rows: list[list[str]], i: int) -> list[float]:
        vals = []
        for r in rows:
            with contextlib.suppress(ValueError):
                vals.append(float(r[i]))
        return vals

    out: dict[str, Any] = {}
    for idx, all_rows in per.items():
        # clocks, power and reasons only while the GPU is busy: the sampler also runs through
        # start-up, the batch-size search and the gaps between phases (idle clocks, idle power)
        busy = [r for r in all_rows if any(u >= LOADED_UTIL_PCT for u in nums([r], 7))]
        rows = busy or all_rows
        clocks, maxc, temps = nums(rows, 1), nums(rows, 2), nums(all_rows, 3)
        power, limit = nums(rows, 4), nums(rows, 5)
        counts: dict[str, int] = {}
        for r in rows:
            for name in decode_reasons(r[6]):
                counts[name] = counts.get(name, 0) + 1
        out[idx] = {
            "samples": len(all_rows),
            "load_samples": len(busy),
            "sm_clock_min_mhz": min(clocks) if clocks else None,
            "sm_clock_median_mhz": statistics.median(clocks) if clocks else None,
            "sm_clock_max_mhz": max(maxc) if maxc else None,
            "temp_max_c": max(temps) if temps else None,
            "power_median_w": statistics.median(power) if power else None,
            "power_limit_w": statistics.median(limit) if limit else None,
            "reasons": {k: round(v / len(rows), 3) for k, v in sorted(counts.items())},
            # samples whose clock-event reasons were a mask ([N/A], [Not Supported]: no reading)
            "reasons_samples": sum(1 for r in rows if _is_mask(r[6])),
        }
    return out


# --------------------------------------------------------------------------- parent


def start_sampler(sample_ms: int, log: str) -> subprocess.Popen[bytes] | None:
    """Start `nvidia-smi -lms` sampling SAMPLE_FIELDS into `log` (None: no nvidia-smi here)."""
    return start_smi(SAMPLE_FIELDS, sample_ms, log, subprocess.DEVNULL)


def worker_argv(args: argparse.Namespace) -> list[str]:
    """This script's command line for a worker, less `--worker N`."""
    me = os.path.abspath(__file__)
    return [
        sys.executable,
        me,
        "--image-size",
        str(args.image_size),
        "--duration",
        str(args.duration),
        "--steps",
        str(args.steps),
        "--warmup",
        str(args.warmup),
        "--batch-size",
        str(args.batch_size),
    ]


def collect_workers(procs: list[subprocess.Popen[str]]) -> tuple[list[Any], list[str]]:
    """Wait for each worker: (the results they printed, one sentence per GPU that gave none)."""
    workers, errors = [], []
    for i, p in enumerate(procs):
        out, err = p.communicate()
        # the marker may follow a C library's partial line on the same stdout
        line = next((x for x in reversed(out.splitlines()) if WORKER_MARK in x), None)
        if line is None:
            errors.append(f"GPU {i}: exit {p.returncode}: {' | '.join(err.strip().splitlines()[-2:])}")
            continue
        data = json.loads(line[line.find(WORKER_MARK) + len(WORKER_MARK) :])
        if "error" in data:
            errors.append(f"GPU {i}: {data['error']}")
        else:
            workers.append(data)
    return workers, errors


def stop_sampler(sampler: subprocess.Popen[bytes], log: str) -> dict[str, Any]:
    """Stop the sampler (killed after 5 s); its samples summarised per GPU."""
    return summarize_samples(stop_smi(sampler, log))


def run(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    cuda = torch.cuda.is_available()
    if args.device == "cuda" and not cuda:
        raise RuntimeError("--device cuda asked for, but torch.cuda.is_available() is False")
    use_cuda = cuda and args.device != "cpu"
    result: dict[str, Any] = {
        "ok": True,
        "torch_version": torch.__version__,
        "cuda_available": cuda,
        "device": "cuda" if use_cuda else "cpu",
        "precision": "amp-fp16" if use_cuda else "fp32",
        "image_size": args.image_size,
        "sampler": None,
        "cuda_device_order": os.environ.get("CUDA_DEVICE_ORDER"),
    }
    if not use_cuda:
        torch.set_num_threads(max(1, min(os.cpu_count() or 1, 8)))
        result["workers"] = [train(args, None)]
        return result
    n = torch.cuda.device_count()
    result["cuda_device_count"] = n
    tmp = tempfile.mkdtemp(prefix="gpuonboard-bench-", dir=private_dir(__file__))
    sampler = None
    procs: list[subprocess.Popen[str]] = []
    log = os.path.join(tmp, "samples.csv")
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, exit_on_signal)
    try:
        sampler = start_sampler(args.sample_ms, log)
        if sampler is not None:
            result["sampler"] = "nvidia-smi"
        base = worker_argv(args)
        for i in range(n):
            procs.append(
                subprocess.Popen(
                    [*base, "--worker", str(i)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
                )
            )
        workers, errors = collect_workers(procs)
        result["workers"] = workers
        if errors:
            result["worker_errors"] = errors
        if not workers:
            result.update(ok=False, error="; ".join(errors) or "no worker result")
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
        if sampler is not None:
            result["samples"] = stop_sampler(sampler, log)
        shutil.rmtree(tmp, ignore_errors=True)
    return result


def main(argv: list[str] | None = None) -> int:
    # CUDA numbers devices fastest first unless told otherwise, nvidia-smi (the sampler) by PCI
    # bus: in bus order worker N's cuda:N is nvidia-smi's GPU N (the workers inherit it)
    os.environ["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    args = parse_args(argv)
    if args.worker >= 0:
        try:
            emit(train(args, args.worker), WORKER_MARK)
        except Exception as exc:  # reported to the parent, judged there
            emit({"error": f"{type(exc).__name__}: {exc}"}, WORKER_MARK)
        return 0
    try:
        result = run(args)
    except ImportError as exc:
        emit({"ok": False, "error": f"cannot import torch: {exc}", "python": sys.executable})
        return 1
    except Exception as exc:
        emit({"ok": False, "error": f"{type(exc).__name__}: {exc}"})
        return 1
    emit(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
