"""gpuonboard GPU performance: matmul TFLOPS per dtype, memory / host / GPU-to-GPU bandwidth, sustained load.

Shipped to the host and run with its (or the container's) Python: stdlib + torch only; its parts
(remote/_common.py, remote/_perf_sampler.py: the nvidia-smi sampler and `topo -m` readers) are
inlined into the one file shipped (steps.prove.bundle). Prints
`GPUONBOARD_PLAN {"gpus": N, "estimate_s": S}` before measuring and ONE final line
`GPUONBOARD_RESULT {json}` (the shape in the issue-29 contract); exit 1 only when the script
itself could not run (no torch), 2 for a bad argument (one line on stderr).

Phases, on a host with CUDA (each GPU's work in its own worker process, this script re-run with
`--worker N`; workers start together after all are ready, and every one has a deadline past which
it is killed and its GPU reported with an error while the rest is still reported):
1. per GPU, all GPUs at once:
   - `matmul_tflops`: dense n x n @ n x n (n = 8192 x --size-scale, a multiple of 64), counted as
     2 n^3 FLOP per matmul; TFLOPS = 1e12 FLOP/s; fp32 with TF32 off
     (`set_float32_matmul_precision("highest")`), tf32 ("high"), bf16, fp16, and fp8 (e4m3 operands,
     bf16 output, via `torch._scaled_mm`, capability >= 8.9). A dtype that cannot run is absent,
     its reason in `skipped`.
   - `membw_gbps`: device memory, 1 GiB fp32 buffers: copy (`dst.copy_(src)`, counted as 2 x size
     bytes: read + write) and triad (`a = b + 3 c`, 3 x size bytes, as STREAM counts). GB/s = 1e9 B/s.
2. one process, one GPU or pair at a time (so the host's memory and socket links are not what is
   measured): `h2d_gbps` / `d2h_gbps` (256 MiB pinned host buffer <-> device, size bytes per
   copy); `p2p`: `torch.cuda.can_device_access_peer` for each pair and device-to-device copy GB/s
   for each ordered pair (256 MiB, size bytes per copy, the data checked after the copy), with the
   pair links of `nvidia-smi topo -m` when nvidia-smi is there.
3. sustained: all GPUs run bf16 matmul (fp16 below capability 8.0) for --sustain seconds; TFLOPS
   per tenth of the window (first and last reported) while the nvidia-smi sampler's rows in the
   window give the SM clock (first / last tenth medians, min), temperature, power and the
   clock-event (throttle) reasons, counted in samples.
The sampler (`nvidia-smi --query-gpu=SAMPLE_FIELDS -lms 500`) runs for the whole run; `pcie` is the
highest link generation and width it saw (idle links train down, copies and matmul bring them up);
a device's rows are those of its PCI address (`pci.bus_id`), by index only without one.

Timing: CUDA events around batches of calls (perf_counter after synchronising both devices for
P2P), after a warm-up of about a fifth of the measurement; a figure is the median over batches of
about a tenth of --seconds each.

Without CUDA everything that makes sense runs on the CPU at the given sizes: device "cpu", one
`gpus` entry (index 0, name "cpu") with fp32 and bf16 matmul and memory copy/triad; no host copies,
P2P or sustained window.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable
from typing import Any

from gpuonboard.remote._common import REASONS as REASONS  # (this script's names too: the tests')
from gpuonboard.remote._common import emit, exit_on_signal, private_dir, stop_sampler
from gpuonboard.remote._perf_sampler import SAMPLE_FIELDS as SAMPLE_FIELDS
from gpuonboard.remote._perf_sampler import (
    _median,
    parse_samples,
    pcie_seen,
    start_sampler,
    summarize_window,
    topology,
)
from gpuonboard.remote._perf_sampler import parse_topology as parse_topology

warnings.filterwarnings("ignore", message=".*NumPy.*")
PLAN_MARK = "GPUONBOARD_PLAN "
WORKER_MARK = "GPUONBOARD_WORKER "
READY_MARK = "GPUONBOARD_READY "
MODES = {"quick": (1.5, 45.0), "full": (8.0, 300.0)}  # (seconds per measurement, sustained window)
DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8")
BASE_N = 8192  # matmul size at --size-scale 1: 3 x 256 MiB in fp32
MEM_BYTES = 1 << 30  # per buffer for copy / triad (triad: 3 GiB in all)
LINK_BYTES = 256 << 20  # host <-> device and device <-> device copies
STARTUP_S = 120.0  # a worker's time to import torch and make its CUDA context


class OneLineParser(argparse.ArgumentParser):
    """A bad argument: one line on stderr (no usage block), exit 2."""

    def error(self, message: str) -> Any:
        sys.stderr.write(f"gpu_perf.py: error: {message}\n")
        raise SystemExit(2)


def _seconds(text: str, zero_ok: bool = False) -> float:
    value = float(text)
    if not (value >= 0 if zero_ok else value > 0) or value == float("inf"):
        raise argparse.ArgumentTypeError(
            f"must be a number {'of 0 or more' if zero_ok else 'above 0'}, not {text!r}"
        )
    return value


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = OneLineParser(description="GPU performance workloads (see the module docstring)")
    p.add_argument("--mode", choices=tuple(MODES), default="quick")
    p.add_argument("--seconds", type=_seconds, help="per measurement (quick 1.5, full 8)")
    p.add_argument(
        "--sustain",
        type=lambda t: _seconds(t, zero_ok=True),
        help="sustained window s, 0: none (quick 45, full 300)",
    )
    p.add_argument("--size-scale", type=_seconds, default=1.0, help="shrink matrix and buffer sizes")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    # for the workers and the tests: not part of the contract
    p.add_argument("--worker", type=int, default=-1, help=argparse.SUPPRESS)
    p.add_argument("--phase", choices=("perf", "links", "sustain"), default="perf", help=argparse.SUPPRESS)
    p.add_argument("--cpu-workers", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--deadline-s", type=_seconds, help=argparse.SUPPRESS)
    p.add_argument("--inject", default="", help=argparse.SUPPRESS)  # "fail@N" / "hang@N"
    args = p.parse_args(argv)
    seconds, sustain = MODES[args.mode]
    args.seconds = seconds if args.seconds is None else args.seconds
    args.sustain = sustain if args.sustain is None else args.sustain
    return args


def estimate_s(gpus: int, seconds: float, sustain: float, cuda: bool) -> float:
    """The run's expected length: 7 measurements per GPU (5 matmul dtypes, copy, triad; 4 on the
    CPU) each with a fifth more for warm-up, the host and P2P copies one at a time, the window."""
    if not cuda:
        return round(4 * 1.2 * seconds + 3, 1)
    per_gpu = 7 * 1.2 * seconds + 20
    links = 1.2 * (gpus * 2 * seconds / 4 + gpus * (gpus - 1) * p2p_seconds(seconds)) + 15
    return round(per_gpu + links + (sustain + 20 if sustain > 0 else 0), 1)


def p2p_seconds(seconds: float) -> float:
    return max(seconds / 8, 0.05)


class Clock:
    """Times `calls` calls of a function: CUDA events on one GPU; perf_counter after synchronising
    `sync_devices` (P2P: both GPUs); perf_counter alone on the CPU."""

    def __init__(self, torch: Any, gpu: int | None, sync_devices: tuple[int, ...] = ()) -> None:
        self.torch, self.gpu, self.sync_devices = torch, gpu, sync_devices

    def time(self, fn: Callable[[], Any], calls: int) -> float:
        torch = self.torch
        if self.gpu is not None and not self.sync_devices:
            with torch.cuda.device(self.gpu):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                for _ in range(calls):
                    fn()
                end.record()
                end.synchronize()
                return float(start.elapsed_time(end)) / 1000
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        for d in self.sync_devices:
            torch.cuda.synchronize(d)
        return time.perf_counter() - t0


def measure_rate(clock: Clock, fn: Callable[[], Any], work: float, seconds: float) -> float:
    """`work` units per call -> units/s: the median over batches of about seconds/10 each, for
    `seconds` after a warm-up of about seconds/5 (the first calls pick kernels, make handles,
    page memory in and bring the clocks up)."""
    one = clock.time(fn, 1)
    calls, warm_end = 1, time.perf_counter() + seconds / 5
    while time.perf_counter() < warm_end:
        one = clock.time(fn, calls) / calls
        calls = min(max(1, int(seconds / 20 / max(one, 1e-7))), 100_000)
    calls = min(max(1, int(seconds / 10 / max(one, 1e-7))), 100_000)
    rates: list[float] = []
    end = time.perf_counter() + seconds
    while not rates or time.perf_counter() < end:
        rates.append(work * calls / max(clock.time(fn, calls), 1e-9))
    return float(statistics.median(rates))


def matmul_size(scale: float) -> int:
    return max(64, int(BASE_N * scale) // 64 * 64)


def capability_of(torch: Any, gpu: int | None) -> tuple[int, int] | None:
    return tuple(torch.cuda.get_device_capability(gpu)) if gpu is not None else None


def why_not(torch: Any, dtype: str, cap: tuple[int, int] | None) -> str | None:
    """Why `dtype`'s matmul is not measured here (None: it is)."""
    if cap is None:
        return {
            "tf32": "TF32 is a GPU tensor-core mode: no CUDA device",
            "fp16": "CPU run: fp16 matmul not measured",
            "fp8": "no CUDA device: fp8 matmul needs a GPU of capability 8.9 or newer",
        }.get(dtype)
    shown = f"{cap[0]}.{cap[1]}"
    if dtype in ("tf32", "bf16") and cap < (8, 0):
        return f"{dtype} matmul needs capability 8.0 or newer (this GPU: {shown})"
    if dtype == "fp8":
        if not (hasattr(torch, "_scaled_mm") and hasattr(torch, "float8_e4m3fn")):
            return f"torch {torch.__version__} has no float8 matmul (torch._scaled_mm)"
        if cap < (8, 9):
            return f"fp8 matmul needs capability 8.9 or newer (this GPU: {shown})"
    return None


def make_matmul(torch: Any, dtype: str, n: int, device: Any) -> Callable[[], Any]:
    """One n x n matmul of `dtype` on `device`, operands made once."""
    torch.set_float32_matmul_precision("high" if dtype == "tf32" else "highest")
    a = torch.randn(n, n, device=device)
    b = torch.randn(n, n, device=device)
    if dtype == "fp8":
        fa, fb = (a / 4).to(torch.float8_e4m3fn), (b / 4).t().contiguous().to(torch.float8_e4m3fn).t()
        one = torch.tensor(1.0, device=device)

        def scaled() -> Any:
            return torch._scaled_mm(fa, fb, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

        return scaled
    torch_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(dtype, torch.float32)
    a, b = a.to(torch_dtype), b.to(torch_dtype)
    c = torch.empty_like(a)
    return lambda: torch.matmul(a, b, out=c)


def matmul_rates(
    torch: Any, gpu: int | None, n: int, seconds: float
) -> tuple[dict[str, float], dict[str, str]]:
    """TFLOPS per dtype that runs here, and the reason for each that does not."""
    device = torch.device(f"cuda:{gpu}" if gpu is not None else "cpu")
    cap, clock = capability_of(torch, gpu), Clock(torch, gpu)
    tflops: dict[str, float] = {}
    skipped: dict[str, str] = {}
    for dtype in DTYPES:
        reason = why_not(torch, dtype, cap)
        if reason:
            skipped[dtype] = reason
            continue
        try:
            fn = make_matmul(torch, dtype, n, device)
            tflops[dtype] = measure_rate(clock, fn, 2.0 * n**3, seconds) / 1e12
        except Exception as exc:  # a dtype this torch/GPU cannot run after all: a reason, not an abort
            skipped[dtype] = f"{type(exc).__name__}: {exc}"[:300]
        finally:
            fn = None  # type: ignore[assignment]
            if gpu is not None:
                torch.cuda.empty_cache()
    torch.set_float32_matmul_precision("highest")
    return tflops, skipped


def membw_rates(torch: Any, gpu: int | None, nbytes: int, seconds: float) -> dict[str, float]:
    """Device memory GB/s: copy (2 x size bytes) and triad (3 x size bytes)."""
    device = torch.device(f"cuda:{gpu}" if gpu is not None else "cpu")
    n = max(1 << 14, nbytes // 4)
    a = torch.empty(n, device=device)
    b, c = torch.rand(n, device=device), torch.rand(n, device=device)
    clock = Clock(torch, gpu)
    copy = measure_rate(clock, lambda: a.copy_(b), 2.0 * 4 * n, seconds) / 1e9
    triad = measure_rate(clock, lambda: torch.add(b, c, alpha=3.0, out=a), 3.0 * 4 * n, seconds) / 1e9
    return {"copy": copy, "triad": triad}


def bus_id_of(torch: Any, gpu: int | None) -> str | None:
    """The CUDA device's PCI address as nvidia-smi writes it ("00000000:1B:00.0"; None where
    torch's device properties do not carry it): the key that pairs it with nvidia-smi's GPU."""
    props = torch.cuda.get_device_properties(gpu) if gpu is not None else None
    parts = [getattr(props, f"pci_{k}_id", None) for k in ("domain", "bus", "device")]
    if not all(isinstance(x, int) for x in parts):
        return None
    return f"{parts[0]:08X}:{parts[1]:02X}:{parts[2]:02X}.0"


def device_info(torch: Any, gpu: int | None) -> dict[str, Any]:
    cap = capability_of(torch, gpu)
    return {
        "name": torch.cuda.get_device_name(gpu) if gpu is not None else "cpu",
        "capability": f"{cap[0]}.{cap[1]}" if cap else None,
        "pci_bus_id": bus_id_of(torch, gpu),
    }


def perf_one(args: argparse.Namespace, torch: Any, gpu: int | None) -> dict[str, Any]:
    """Phase 1 on one device: matmul per dtype, then copy / triad."""
    tflops, skipped = matmul_rates(torch, gpu, matmul_size(args.size_scale), args.seconds)
    membw = membw_rates(torch, gpu, int(MEM_BYTES * args.size_scale), args.seconds)
    return {"matmul_tflops": tflops, "skipped": skipped, "membw_gbps": membw}


def sustain_one(args: argparse.Namespace, torch: Any, gpu: int, go: Callable[[], None]) -> dict[str, Any]:
    """Phase 3 on one GPU: bf16 (fp16 below 8.0) matmul for args.sustain s, TFLOPS per tenth."""
    dtype = "bf16" if why_not(torch, "bf16", capability_of(torch, gpu)) is None else "fp16"
    n = matmul_size(args.size_scale)
    fn = make_matmul(torch, dtype, n, torch.device(f"cuda:{gpu}"))
    clock = Clock(torch, gpu)
    one = max(clock.time(fn, 3) / 3, 1e-6)
    chunk = max(1, int(0.05 / one))  # calls between synchronisations (~50 ms)
    go()
    window_s = args.sustain / 10
    windows: list[float] = []
    start = time.time()
    for _ in range(10):
        w0, calls = time.perf_counter(), 0
        while time.perf_counter() - w0 < window_s:
            clock.time(fn, chunk)
            calls += chunk
        windows.append(2.0 * n**3 * calls / (time.perf_counter() - w0) / 1e12)
    return {"dtype": dtype, "start": start, "end": time.time(), "windows_tflops": windows}


def links_run(args: argparse.Namespace, torch: Any, out: Callable[[dict[str, Any]], None]) -> None:
    """Phase 2, one line per GPU then per ordered pair (a kill mid-way keeps what came before)."""
    n = torch.cuda.device_count()
    size = max(1 << 14, int(LINK_BYTES * args.size_scale) // 4)
    seconds = args.seconds / 4
    host = torch.empty(size, pin_memory=True)
    for i in range(n):
        try:
            dev = torch.empty(size, device=f"cuda:{i}")
            clock = Clock(torch, i)
            h2d = measure_rate(clock, lambda: dev.copy_(host, non_blocking=True), 4.0 * size, seconds)  # noqa: B023
            d2h = measure_rate(clock, lambda: host.copy_(dev, non_blocking=True), 4.0 * size, seconds)  # noqa: B023
            out({"kind": "host", "index": i, "h2d_gbps": h2d / 1e9, "d2h_gbps": d2h / 1e9})
        except Exception as exc:
            out({"kind": "host", "index": i, "error": f"{type(exc).__name__}: {exc}"[:300]})
    access = [[i == j or bool(torch.cuda.can_device_access_peer(i, j)) for j in range(n)] for i in range(n)]
    out({"kind": "access", "access": access})
    for i in range(n):
        for j in range(n):
            if i != j:
                out(p2p_pair(torch, i, j, size, p2p_seconds(args.seconds)))


def p2p_pair(torch: Any, i: int, j: int, size: int, seconds: float) -> dict[str, Any]:
    """Copy GB/s from GPU i to GPU j, and whether the copy arrived intact."""
    row: dict[str, Any] = {"kind": "p2p", "src": i, "dst": j}
    try:
        src = torch.rand(size, device=f"cuda:{i}")
        dst = torch.empty(size, device=f"cuda:{j}")
        gbps = measure_rate(Clock(torch, i, (i, j)), lambda: dst.copy_(src), 4.0 * size, seconds) / 1e9
        if not torch.equal(dst[: 1 << 20].cpu(), src[: 1 << 20].cpu()):
            row["error"] = "the copy returned other data than was sent"
        else:
            row["gbps"] = gbps
    except Exception as exc:
        row["error"] = f"{type(exc).__name__}: {exc}"[:300]
    return row


def worker_main(args: argparse.Namespace) -> int:
    """`--worker N --phase P`: set up, say READY (with the device's name), wait for the parent's
    go on stdin (EOF: the parent is gone, exit), measure, print one WORKER line per result."""
    gpu: int | None = None if args.device == "cpu" else args.worker
    inject = dict(x.split("@", 1)[::-1] for x in args.inject.split(",") if "@" in x)  # {"1": "hang"}

    def go() -> None:
        emit(info, READY_MARK, allow_nan=False)
        if not sys.stdin.readline():
            raise SystemExit(0)
        if inject.get(str(args.worker)) == "hang":
            time.sleep(1e6)
        if inject.get(str(args.worker)) == "fail":
            raise RuntimeError("injected failure")

    info: dict[str, Any] = {}
    try:
        import torch

        if gpu is None:
            torch.set_num_threads(1)
        else:
            torch.cuda.set_device(gpu)
            torch.zeros(1, device=f"cuda:{gpu}")
        info = device_info(torch, gpu)
        if args.phase == "sustain":
            emit(sustain_one(args, torch, args.worker, go), WORKER_MARK, allow_nan=False)
        elif args.phase == "links":
            go()
            links_run(args, torch, lambda row: emit(row, WORKER_MARK, allow_nan=False))
        else:
            go()
            emit({**info, **perf_one(args, torch, gpu)}, WORKER_MARK, allow_nan=False)
    except Exception as exc:  # reported to the parent, which records it against this GPU
        emit({"error": f"{type(exc).__name__}: {exc}"[:500]}, WORKER_MARK, allow_nan=False)
    return 0


class Worker:
    """One worker process: its READY line, its result lines, and a deadline."""

    def __init__(self, label: str, argv: list[str], tmp: str) -> None:
        self.label = label
        self.err_path = os.path.join(tmp, f"{label.replace(' ', '_')}.err")
        with open(self.err_path, "w") as err:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True
            )
        self.info: dict[str, Any] = {}
        self.results: list[dict[str, Any]] = []
        self.ready = threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            for mark, sink in ((READY_MARK, self._on_ready), (WORKER_MARK, self.results.append)):
                at = line.find(mark)  # the mark may follow a C library's partial line
                if at >= 0:
                    with contextlib.suppress(ValueError):
                        sink(json.loads(line[at + len(mark) :]))
        self.ready.set()

    def _on_ready(self, info: dict[str, Any]) -> None:
        self.info = info
        self.ready.set()

    def go(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            assert self.proc.stdin is not None
            self.proc.stdin.write("go\n")
            self.proc.stdin.flush()

    def finish(self, until: float) -> str | None:
        """Wait until the monotonic deadline `until`; kill past it. An error sentence or None."""
        try:
            self.proc.wait(timeout=max(0.0, until - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.kill()
            self.reader.join(5)
            progress = f"{len(self.results)} result line(s)" if self.ready.is_set() else "never ready"
            return f"no result within the deadline ({progress}; killed)"
        self.reader.join(5)
        if not self.results:
            with open(self.err_path, errors="replace") as f:
                tail = " | ".join(f.read().strip().splitlines()[-2:])
            return f"exit {self.proc.returncode} without a result: {tail}"[:500]
        return None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=10)


def run_phase(workers: list[Worker], startup_s: float, run_s: float) -> list[str | None]:
    """Start together: wait (up to startup_s) until every worker is ready, say go to all, then give
    each until run_s from then. One error (or None) per worker."""
    ready_by = time.monotonic() + startup_s
    for w in workers:
        w.ready.wait(max(0.0, ready_by - time.monotonic()))
    for w in workers:
        w.go()
    until = time.monotonic() + run_s
    return [w.finish(until) for w in workers]


def worker_argv(args: argparse.Namespace, index: int, phase: str) -> list[str]:
    argv = [sys.executable, os.path.abspath(__file__), "--worker", str(index), "--phase", phase]
    argv += [f"--seconds={args.seconds}", f"--sustain={args.sustain}", f"--size-scale={args.size_scale}"]
    argv += ["--device", "cpu" if args.cpu_workers else "cuda", f"--inject={args.inject}"]
    return argv


def phase_deadlines(args: argparse.Namespace, planned_s: float) -> tuple[float, float]:
    """(startup, run) deadlines of a phase: to be ready, then to finish once told to go (3 x the
    plan + 60 s, or --deadline-s)."""
    return STARTUP_S, args.deadline_s or 3 * planned_s + 60


def gpu_entry(index: int) -> dict[str, Any]:
    empty = dict.fromkeys(("name", "capability", "pci_bus_id", "h2d_gbps", "d2h_gbps", "pcie", "error"))
    return {**empty, "index": index, "matmul_tflops": {}, "skipped": {}, "membw_gbps": {}}


def fail_gpu(result: dict[str, Any], index: int, what: str, error: str) -> None:
    entry = result["gpus"][index]
    entry["error"] = error if entry["error"] is None else f"{entry['error']}; {what}: {error}"
    result["worker_errors"].append(f"GPU {index} ({what}): {error}")


def per_gpu_phase(
    args: argparse.Namespace, result: dict[str, Any], n: int, tmp: str, phase: str, planned_s: float
) -> list[dict[str, Any] | None]:
    """One worker per GPU, all at once: each GPU's result (None, and its error recorded, if it failed)."""
    workers = [Worker(f"gpu{i} {phase}", worker_argv(args, i, phase), tmp) for i in range(n)]
    try:
        errors = run_phase(workers, *phase_deadlines(args, planned_s))
    finally:
        for w in workers:
            w.kill()
    out: list[dict[str, Any] | None] = []
    for i, (w, error) in enumerate(zip(workers, errors, strict=True)):
        result["gpus"][i].update(
            {k: v for k, v in w.info.items() if k in ("name", "capability", "pci_bus_id")}
        )
        data = w.results[-1] if w.results else {}
        if error or "error" in data:
            fail_gpu(result, i, phase, error or str(data["error"]))
        out.append(None if error or "error" in data else data)
    return out


def links_phase(args: argparse.Namespace, result: dict[str, Any], n: int, tmp: str) -> None:
    """Phase 2: host copies per GPU, then peer access and the P2P matrix (n > 1), one process."""
    worker = Worker("links", worker_argv(args, 0, "links"), tmp)
    planned = 1.2 * (n * args.seconds / 2 + n * (n - 1) * p2p_seconds(args.seconds))
    startup, run_s = phase_deadlines(args, planned)
    try:
        error = run_phase([worker], startup, run_s)[0]
    finally:
        worker.kill()
    gbps: list[list[float | None]] = [[None] * n for _ in range(n)]
    access: list[list[bool | None]] = [[True if i == j else None for j in range(n)] for i in range(n)]
    for row in worker.results:
        if row.get("kind") == "host":
            if "error" in row:
                fail_gpu(result, row["index"], "host copies", row["error"])
            else:
                result["gpus"][row["index"]].update(h2d_gbps=row["h2d_gbps"], d2h_gbps=row["d2h_gbps"])
        elif row.get("kind") == "access":
            access = row["access"]
        elif row.get("kind") == "p2p":
            if "error" in row:
                result["worker_errors"].append(f"P2P {row['src']}->{row['dst']}: {row['error']}")
            else:
                gbps[row["src"]][row["dst"]] = row["gbps"]
        elif "error" in row:
            error = row["error"]
    if error:
        result["worker_errors"].append(f"host and P2P copies: {error}")
    if n > 1:
        result["p2p"] = {"access": access, "gbps": gbps, "topology": topology()}


def sustained_summary(
    args: argparse.Namespace,
    windows: list[dict[str, Any] | None],
    rows: list[dict[str, Any]],
    buses: list[Any],
) -> dict[str, Any]:
    per_gpu: dict[str, Any] = {}
    for i, w in enumerate(windows):
        if w is None:
            continue
        entry = summarize_window(rows, i, w["start"], w["end"], buses[i])
        entry.update(
            dtype=w["dtype"],
            tflops_first=w["windows_tflops"][0],
            tflops_last=w["windows_tflops"][-1],
            tflops_median=_median(w["windows_tflops"]),
            window_s=w["end"] - w["start"],
        )
        per_gpu[str(i)] = entry
    return {"seconds": float(args.sustain), "per_gpu": per_gpu}


def cuda_run(args: argparse.Namespace, result: dict[str, Any], n: int) -> None:
    """The three phases on n GPUs (or CPU workers, for the tests), the sampler around them."""
    tmp = tempfile.mkdtemp(prefix="gpuonboard-perf-", dir=private_dir(__file__))
    log = os.path.join(tmp, "samples.csv")
    sampler = None if args.cpu_workers else start_sampler(log)
    result["sampler"] = "nvidia-smi" if sampler else None
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, exit_on_signal)
    text = ""
    try:
        for i, data in enumerate(per_gpu_phase(args, result, n, tmp, "perf", 7 * 1.2 * args.seconds)):
            result["gpus"][i].update(data or {})
        if args.cpu_workers:
            return
        links_phase(args, result, n, tmp)
        windows = per_gpu_phase(args, result, n, tmp, "sustain", args.sustain) if args.sustain > 0 else None
        if sampler is not None:
            text = stop_sampler(sampler, log)
            sampler = None
        rows = parse_samples(text)
        if result["sampler"] and not rows:
            result["worker_errors"].append(f"sampler: nvidia-smi gave no samples: {text.strip()[-200:]}")
        buses = [g.get("pci_bus_id") for g in result["gpus"]]
        for i in range(n):
            result["gpus"][i]["pcie"] = pcie_seen(rows, i, buses[i])
        if windows is not None:
            result["sustained"] = sustained_summary(args, windows, rows, buses)
    finally:
        if sampler is not None:
            stop_sampler(sampler, log)
        shutil.rmtree(tmp, ignore_errors=True)


def cpu_run(args: argparse.Namespace, torch: Any, result: dict[str, Any]) -> None:
    """No CUDA: phase 1 in this process on the CPU."""
    torch.set_num_threads(max(1, min(os.cpu_count() or 1, 8)))
    entry = result["gpus"][0]
    entry.update(name="cpu")
    try:
        entry.update(perf_one(args, torch, None))
    except Exception as exc:
        fail_gpu(result, 0, "perf", f"{type(exc).__name__}: {exc}"[:500])


def new_result(args: argparse.Namespace, torch: Any, cuda: bool, n: int) -> dict[str, Any]:
    """The result before measuring: every key of the contract, one entry per GPU."""
    return {
        "schema": 1,
        "ok": True,  # (the result line every shipped script gives: prove.launch.run_script)
        "device": "cuda" if cuda else "cpu",
        "mode": args.mode,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cuda_device_count": torch.cuda.device_count() if cuda else 0,
        "cuda_device_order": os.environ.get("CUDA_DEVICE_ORDER"),
        "seconds": float(args.seconds),
        "size_scale": float(args.size_scale),
        "gpus": [gpu_entry(i) for i in range(n)],
        "p2p": None,
        "sustained": None,
        "sampler": None,
        "worker_errors": [],
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    t0 = time.monotonic()
    cuda = args.device != "cpu" and not args.cpu_workers and torch.cuda.is_available()
    if args.device == "cuda" and not cuda:
        raise RuntimeError("--device cuda asked for, but torch.cuda.is_available() is False")
    n = torch.cuda.device_count() if cuda else max(1, args.cpu_workers)
    plan = {"gpus": n, "estimate_s": estimate_s(n, args.seconds, args.sustain, cuda)}
    emit(plan, PLAN_MARK, allow_nan=False)
    result = new_result(args, torch, cuda, n)
    if cuda or args.cpu_workers:
        cuda_run(args, result, n)
    else:
        cpu_run(args, torch, result)
    result["elapsed_s"] = round(time.monotonic() - t0, 3)
    return result


def main(argv: list[str] | None = None) -> int:
    # CUDA numbers devices fastest first unless told otherwise, nvidia-smi (its sampler, `topo
    # -m`) by PCI bus: in bus order CUDA device i is nvidia-smi's GPU i (workers inherit it)
    os.environ["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    args = parse_args(argv)
    if args.worker >= 0:
        return worker_main(args)
    try:
        result = run(args)
    except ImportError as exc:
        error = {"schema": 1, "ok": False, "error": f"cannot import torch: {exc}", "python": sys.executable}
        emit(error, allow_nan=False)
        return 1
    except Exception as exc:
        emit({"schema": 1, "ok": False, "error": f"{type(exc).__name__}: {exc}"[:500]}, allow_nan=False)
        return 1
    emit(result, allow_nan=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
