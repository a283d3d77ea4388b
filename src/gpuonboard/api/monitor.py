"""`invoke monitor`: a live multi-host GPU view over ONE long-lived SSH channel per host.

Each host streams `nvidia-smi --query-gpu=<MONITOR_FIELDS> --format=csv,noheader,nounits -l N`
on one exec channel of its one connection; the bytes are split into lines and parsed line by
line (pure functions below), each line being one GPU of one sample. A host whose stream
stops is marked stale and reconnected with exponential backoff while the others keep
updating. Closing a channel ends the remote nvidia-smi (see shell.until_stdin_closes).

No Invoke imports here.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import select
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO

from gpuonboard import api, shell, termtext
from gpuonboard.connection import ConnectOptions, KnownHosts, Runner, SSHRunner, open_runner
from gpuonboard.errors import CommandError, ExitCode, GpuonboardError, Terminated, UsageError
from gpuonboard.facts.nvidia_smi import parse_query_csv
from gpuonboard.inventory import Host, Inventory
from gpuonboard.steps.base import StepArgsError, truthy
from gpuonboard.units import parse_duration

# Every name accepted by --query-gpu from R450 upward (see facts.nvidia_smi.QUERY_FIELDS).
MONITOR_FIELDS: tuple[str, ...] = (
    "index",
    "count",
    "name",
    "uuid",
    "utilization.gpu",
    "memory.used",
    "memory.total",
    "temperature.gpu",
    "power.draw",
    "enforced.power.limit",
    "clocks_throttle_reasons.active",
    "pstate",
)
PROCESS_FIELDS: tuple[str, ...] = ("gpu_uuid", "pid", "process_name", "used_memory")

# Clock event reasons that mean the GPU is held back by heat or hardware (an alert);
# gpu_idle, sw_power_cap, sync_boost and the clock settings are normal operation.
THROTTLE_ALERT_REASONS = frozenset(
    {"hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"}
)
MAX_LINE = 1 << 16
MAX_DETAIL = 300  # characters of a host's own error text kept in a stale reason


# ------------------------------------------------------------------ pure parsing


@dataclass(frozen=True)
class GpuSample:
    """One GPU in one sample of one host."""

    host: str
    ts: float  # wall-clock seconds when the line arrived
    index: int
    name: str
    uuid: str | None = None
    count: int | None = None  # GPUs nvidia-smi says the host has
    util_pct: int | None = None
    mem_used_mib: int | None = None
    mem_total_mib: int | None = None
    temp_c: int | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    throttle: tuple[str, ...] = ()
    pstate: str | None = None
    top_process: str | None = None
    alerts: tuple[str, ...] = ()
    # what nvidia-smi printed instead of values it cannot read ("GPU requires reset", "GPU is
    # lost", "ERR!"; facts.nvidia_smi.FAULT_WORDS): a GPU in trouble, never a calm row of dashes
    faults: tuple[str, ...] = ()

    @property
    def mem_pct(self) -> float | None:
        """Memory used in percent of total, or None."""
        if self.mem_used_mib is None or not self.mem_total_mib:
            return None
        return 100.0 * self.mem_used_mib / self.mem_total_mib

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (ts as ISO 8601 and epoch seconds)."""
        doc = asdict(self)
        doc["throttle"] = list(self.throttle)
        doc["alerts"] = list(self.alerts)
        doc["faults"] = list(self.faults)
        doc["time"] = (
            time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(self.ts)) + f".{int(self.ts % 1 * 1000):03d}"
        )
        return doc


def split_lines(buffer: bytes, chunk: bytes) -> tuple[list[str], bytes]:
    """Append chunk to the unfinished buffer; return complete lines (decoded, stripped of
    CR/LF, blank ones dropped) and the new unfinished rest. A rest longer than MAX_LINE is
    dropped (not nvidia-smi output)."""
    data = buffer + chunk
    *complete, rest = data.split(b"\n")
    if len(rest) > MAX_LINE:
        rest = b""
    lines = [raw.decode("utf-8", "replace").strip("\r ") for raw in complete]
    return [line for line in lines if line], rest


def parse_line(line: str, host: str, ts: float, fields: Sequence[str] = MONITOR_FIELDS) -> GpuSample | None:
    """One `--format=csv,noheader,nounits` line -> a sample, or None for anything else
    (an error message, a header, a line with the wrong number of cells or without a GPU index).
    A GPU nvidia-smi cannot read (`[GPU requires reset]` in its cells) is a sample with faults."""
    if line.count(",") != len(fields) - 1:
        return None
    cells = next(csv.reader(io.StringIO(line)), [])
    if "index" in fields and not (
        len(cells) == len(fields) and cells[fields.index("index")].strip().isdecimal()
    ):
        return None  # (a header; and a faulted row still needs the GPU it is about)
    report = parse_query_csv(line + "\n", fields)
    if len(report.gpus) != 1:
        return None
    gpu = report.gpus[0]
    if not (
        gpu.name or gpu.utilization_gpu_pct is not None or gpu.memory_total_mib is not None or gpu.faults
    ):
        return None  # e.g. "No devices were found" split at its commas
    return GpuSample(
        host=host,
        ts=ts,
        index=gpu.index,
        name=gpu.name,
        uuid=gpu.uuid,
        count=report.attached_gpus,
        util_pct=gpu.utilization_gpu_pct,
        mem_used_mib=gpu.memory_used_mib,
        mem_total_mib=gpu.memory_total_mib,
        temp_c=gpu.temperature_c,
        power_w=gpu.power_draw_w,
        power_limit_w=gpu.power_limit_w,
        throttle=gpu.clock_event_reasons,
        pstate=gpu.performance_state,
        faults=gpu.faults,
    )


def assemble(
    pending: tuple[GpuSample, ...], sample: GpuSample
) -> tuple[tuple[GpuSample, ...] | None, tuple[GpuSample, ...]]:
    """Group GPU lines into whole samples: (a finished sample or None, the new pending).

    nvidia-smi -l prints every GPU once per interval in index order, so a sample is done
    when it holds `count` GPUs, or when an index not above the last one starts the next.
    """
    done: tuple[GpuSample, ...] | None = None
    if pending and sample.index <= pending[-1].index:
        done, pending = pending, ()
    pending = (*pending, sample)
    if sample.count and len(pending) >= sample.count:
        return pending if done is None else done, () if done is None else pending
    return done, pending


def parse_processes(text: str) -> dict[str, str]:
    """`--query-compute-apps=gpu_uuid,pid,process_name,used_memory --format=csv,noheader,nounits`
    -> the biggest process per GPU uuid, as `pid name (N MiB)`."""
    best: dict[str, tuple[int, str]] = {}
    for row in csv.reader(io.StringIO(text), skipinitialspace=True):
        if len(row) != len(PROCESS_FIELDS):
            continue
        uuid, pid, name, mem = (cell.strip() for cell in row)
        if not uuid.startswith("GPU-") or not pid.isdecimal():
            continue
        mib = int(mem) if mem.isdecimal() else -1
        short = name.rsplit("/", 1)[-1] or name
        label = f"{pid} {short}" + (f" ({mib} MiB)" if mib >= 0 else "")
        if uuid not in best or mib > best[uuid][0]:
            best[uuid] = (mib, label)
    return {uuid: label for uuid, (_, label) in best.items()}


# ------------------------------------------------------------------ pure alerts


@dataclass(frozen=True)
class Thresholds:
    """When a GPU raises an alert (host vars `monitor_*` override the defaults)."""

    mem_pct: float = 95.0
    temp_c: float = 85.0
    idle_util_pct: float = 5.0
    expect_busy: bool = False

    @classmethod
    def for_host(cls, host: Host) -> Thresholds:
        """Defaults overridden by `vars.expect_busy`, `vars.monitor_mem_pct`, `_temp_c`, `_idle_pct`."""
        v: Mapping[str, Any] = host.vars or {}
        t = cls()
        try:
            expect_busy = truthy(v.get("expect_busy", False), "expect_busy")
        except StepArgsError:
            value = v.get("expect_busy")
            raise UsageError(
                f"host {host.name}: vars.expect_busy must be true or false, not {value!r}."
            ) from None
        try:
            return cls(
                mem_pct=float(v.get("monitor_mem_pct", t.mem_pct)),
                temp_c=float(v.get("monitor_temp_c", t.temp_c)),
                idle_util_pct=float(v.get("monitor_idle_pct", t.idle_util_pct)),
                expect_busy=expect_busy,
            )
        except (TypeError, ValueError):
            raise UsageError(
                f"host {host.name}: vars.monitor_mem_pct, monitor_temp_c and monitor_idle_pct"
                " must be numbers."
            ) from None


def gpu_alerts(s: GpuSample, t: Thresholds) -> tuple[str, ...]:
    """Alerts of one GPU sample (short texts, most urgent first)."""
    out: list[str] = []
    if s.faults:
        out.append(f"unreadable: nvidia-smi reads {', '.join(s.faults)}")
    hot = sorted(THROTTLE_ALERT_REASONS.intersection(s.throttle))
    if hot:
        out.append("throttled: " + ",".join(hot))
    if s.temp_c is not None and s.temp_c >= t.temp_c:
        out.append(f"temperature {s.temp_c}C >= {t.temp_c:g}C")
    pct = s.mem_pct
    if pct is not None and pct > t.mem_pct:
        out.append(f"memory {pct:.0f}% > {t.mem_pct:g}%")
    if t.expect_busy and s.util_pct is not None and s.util_pct <= t.idle_util_pct:
        out.append(f"idle ({s.util_pct}%) while a job is expected")
    return tuple(out)


def host_alerts(gpus_seen: int, ordered: int | None, reported: int | None = None) -> tuple[str, ...]:
    """Alerts of a host as a whole: fewer GPUs than the order (or than nvidia-smi counts)."""
    out: list[str] = []
    if ordered and gpus_seen < ordered:
        out.append(f"GPU missing: {gpus_seen} of {ordered} ordered")
    elif reported and gpus_seen < reported:
        out.append(f"GPU missing: {gpus_seen} of {reported} reported")
    return tuple(out)


# ------------------------------------------------------------------ commands


def loop_args(interval: float) -> list[str]:
    """`-l N` for whole seconds, `-lms N` below or between them."""
    if interval >= 1 and float(interval).is_integer():
        return ["-l", str(int(interval))]
    return ["-lms", str(max(1, round(interval * 1000)))]


def query_command(interval: float | None, fields: Sequence[str] = MONITOR_FIELDS) -> str:
    """The nvidia-smi query; looping (-l/-lms) unless interval is None."""
    argv = ["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"]
    if interval is not None:
        argv += loop_args(interval)
    return shell.join(argv)


def stream_command(interval: float, fields: Sequence[str] = MONITOR_FIELDS) -> str:
    """The looping query, wrapped so it dies when our channel closes."""
    return shell.until_stdin_closes(query_command(interval, fields))


def process_command() -> str:
    """Compute processes per GPU (for the top-process column)."""
    return shell.join(
        ["nvidia-smi", f"--query-compute-apps={','.join(PROCESS_FIELDS)}", "--format=csv,noheader,nounits"]
    )


# ------------------------------------------------------------------ streams


def stream_end_reason(status: int | None, detail: str | None) -> str:
    """Why a host's nvidia-smi stream ended, in the host's own words where it gave any (its
    last stderr line, or a last stdout line that was no sample): `nvidia-smi exited 127: sh: 1:
    nvidia-smi: not found`, never just "ended" when the host said why."""
    head = "the nvidia-smi stream ended" if status is None else f"nvidia-smi exited {status}"
    return _with_detail(head, detail)


def silent_reason(seconds: float, detail: str | None) -> str:
    """Why a host whose stream still runs is stale: no sample for that long, and the last line
    it printed instead, in its own words (`no sample for 11s: Unable to determine the device
    handle for GPU0000:0B:00.0: Unknown Error`)."""
    return _with_detail(f"no sample for {seconds:.0f}s", detail)


def _with_detail(head: str, detail: str | None) -> str:
    detail = (detail or "").strip()
    if len(detail) > MAX_DETAIL:
        detail = detail[: MAX_DETAIL - 3] + "..."
    return f"{head}: {detail}" if detail else head


def _last_line(text: str) -> str | None:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else None


class _Stream:
    """A running remote command whose stdout we read; close() ends it."""

    def read(self, timeout: float) -> bytes | None:  # pragma: no cover - interface
        """Bytes (b"" when none arrived within timeout), or None at EOF."""
        raise NotImplementedError

    def exit_status(self, wait: float) -> int | None:  # pragma: no cover - interface
        """The command's exit status once it ended (waiting up to `wait` s), else None."""
        raise NotImplementedError

    def stderr_tail(self) -> str | None:  # pragma: no cover - interface
        """The last line the command wrote to stderr, if any."""
        raise NotImplementedError

    def close(self) -> None:  # pragma: no cover - interface
        """End the remote command and release the channel."""
        raise NotImplementedError


class _SshStream(_Stream):
    def __init__(self, runner: SSHRunner, command: str) -> None:
        self.chan = runner.transport.open_session()
        self.chan.exec_command(command)
        self._stderr = b""

    def _drain_stderr(self) -> None:
        while self.chan.recv_stderr_ready():  # nvidia-smi's complaints: not data, but the reason
            self._stderr = (self._stderr + self.chan.recv_stderr(1 << 16))[-MAX_LINE:]

    def read(self, timeout: float) -> bytes | None:
        chan = self.chan
        if not chan.recv_ready() and not (chan.closed or chan.eof_received):
            select.select([chan], [], [], timeout)
        self._drain_stderr()
        if chan.recv_ready():
            return bytes(chan.recv(1 << 16))
        if chan.closed or chan.eof_received or not chan.get_transport().is_active():
            return None
        return b""

    def exit_status(self, wait: float) -> int | None:
        chan = self.chan
        deadline = time.monotonic() + wait
        with contextlib.suppress(Exception):
            while (
                not chan.exit_status_ready()
                and time.monotonic() < deadline
                and chan.get_transport().is_active()
            ):
                time.sleep(0.02)
        if not chan.exit_status_ready():
            return None
        status = int(chan.recv_exit_status())
        return None if status < 0 else status  # -1: paramiko's "no status" (a signal without one)

    def stderr_tail(self) -> str | None:
        with contextlib.suppress(Exception):
            self._drain_stderr()
        return _last_line(self._stderr.decode("utf-8", "replace"))

    def close(self) -> None:
        chan = self.chan
        with contextlib.suppress(Exception):
            chan.shutdown_write()  # EOF on the remote stdin: the watcher kills nvidia-smi
            deadline = time.monotonic() + 2
            while (
                not chan.exit_status_ready()
                and time.monotonic() < deadline
                and chan.get_transport().is_active()
            ):
                time.sleep(0.02)
        with contextlib.suppress(Exception):
            chan.close()


class _LocalStream(_Stream):
    def __init__(self, command: str) -> None:
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            ["/bin/sh", "-c", command],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
        )

    def read(self, timeout: float) -> bytes | None:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            return b""
        data = self.proc.stdout.read1(1 << 16)  # type: ignore[attr-defined]
        return bytes(data) or None

    def exit_status(self, wait: float) -> int | None:
        try:
            status = self.proc.wait(wait)
        except subprocess.TimeoutExpired:
            return None
        return 128 - status if status < 0 else status  # killed by signal N: 128 + N, as a shell says

    def stderr_tail(self) -> str | None:
        self._stderr.seek(0)
        return _last_line(self._stderr.read()[-MAX_LINE:].decode("utf-8", "replace"))

    def close(self) -> None:
        with contextlib.suppress(OSError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        try:
            self.proc.wait(2)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._stderr.close()


def _open_stream(runner: Runner, command: str) -> _Stream:
    if isinstance(runner, SSHRunner):
        return _SshStream(runner, command)
    return _LocalStream(command)


# ------------------------------------------------------------------ the monitor


@dataclass
class HostState:
    """What the monitor knows about one host right now."""

    name: str
    status: str = "connecting"  # connecting | live | stale
    error: str | None = None
    gpus: dict[int, GpuSample] = field(default_factory=dict)
    gpus_seen: int = 0  # GPUs in the last whole sample
    alerts: tuple[str, ...] = ()  # host-level alerts
    updated: float = 0.0  # monotonic time of the last line
    samples: int = 0  # whole samples received since start
    reconnects: int = 0
    retry_at: float | None = None  # monotonic time of the next connection attempt

    def copy(self) -> HostState:
        """A snapshot safe to read while the monitor runs."""
        return replace(self, gpus=dict(self.gpus))


@dataclass
class MonitorOptions:
    """How often and how patiently to watch."""

    interval: float = 2.0
    backoff: float = 0.5  # first reconnect delay; doubles up to backoff_max
    backoff_max: float = 15.0
    stale_after: float | None = None  # no line for this long: stale (default 3 intervals + 5 s)
    process_every: float = 15.0  # refresh the top-process column this often (0: never)


class Monitor:
    """One worker thread per host streaming samples into shared state."""

    def __init__(
        self,
        hosts: Sequence[Host],
        connect: Callable[[Host], Runner],
        options: MonitorOptions,
        on_sample: Callable[[GpuSample], None] | None = None,
        on_event: Callable[[str, str, str | None], None] | None = None,
    ) -> None:
        self.hosts = list(hosts)
        self.connect = connect
        self.options = options
        self.on_sample = on_sample
        self.on_event = on_event
        self.stop_event = threading.Event()
        self._lock = threading.Lock()
        self._states = {h.name: HostState(h.name) for h in self.hosts}
        self._threads: list[threading.Thread] = []
        self._streams: dict[str, _Stream] = {}
        self._runners: dict[str, Runner] = {}

    def start(self) -> None:
        """Start the per-host workers."""
        for host in self.hosts:
            t = threading.Thread(target=self._work, args=(host,), name=f"monitor-{host.name}", daemon=True)
            t.start()
            self._threads.append(t)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop every worker, closing every channel and connection."""
        self.stop_event.set()
        deadline = time.monotonic() + timeout
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))
        with self._lock:  # a worker stuck in a connect: close what it holds
            leftovers = list(self._streams.values()), list(self._runners.values())
        for stream in leftovers[0]:
            stream.close()
        for runner in leftovers[1]:
            with contextlib.suppress(Exception):
                runner.close()

    def snapshot(self) -> list[HostState]:
        """Copies of every host's state, in selection order."""
        with self._lock:
            return [self._states[h.name].copy() for h in self.hosts]

    # -------------------------------------------------------------- worker

    def _set(self, name: str, **changes: Any) -> None:
        with self._lock:
            state = self._states[name]
            for key, value in changes.items():
                setattr(state, key, value)

    def _event(self, host: str, kind: str, detail: str | None = None) -> None:
        if self.on_event is not None:
            self.on_event(host, kind, detail)

    def _work(self, host: Host) -> None:
        attempt = 0
        while not self.stop_event.is_set():
            try:
                got_data, error = self._session(host)
            except Exception as exc:  # any failure of this host: stale, retry; never the others
                error = exc.message if isinstance(exc, GpuonboardError) else f"{type(exc).__name__}: {exc}"
                got_data = False
            if self.stop_event.is_set():
                break
            attempt = 0 if got_data else attempt + 1
            delay = min(self.options.backoff_max, self.options.backoff * (2 ** max(0, attempt - 1)))
            self._set(host.name, status="stale", error=error, retry_at=time.monotonic() + delay)
            self._event(host.name, "stale", error)
            self.stop_event.wait(delay)
            with self._lock:
                self._states[host.name].reconnects += 1

    def _session(self, host: Host) -> tuple[bool, str]:
        """One connection: stream until it fails or we stop. (Whether any sample arrived, why
        the stream ended.)"""
        opts = self.options
        stale_after = opts.stale_after or 3 * opts.interval + 5
        runner = self.connect(host)
        with self._lock:
            self._runners[host.name] = runner
        stream: _Stream | None = None
        got = False
        try:
            procs = self._processes(runner)
            next_procs = time.monotonic() + opts.process_every
            stream = _open_stream(runner, stream_command(opts.interval))
            with self._lock:
                self._streams[host.name] = stream
            buffer, pending = b"", ()  # type: tuple[bytes, tuple[GpuSample, ...]]
            # (the time of the last SAMPLE: lines that are none, such as nvidia-smi's "Unable to
            # determine the device handle" for a GPU fallen off the bus, keep no host live)
            last = time.monotonic()
            thresholds = Thresholds.for_host(host)
            other: str | None = None  # the last stdout line that was no sample (an error text)
            while not self.stop_event.is_set():
                chunk = stream.read(0.25)
                now = time.monotonic()
                if chunk is None:
                    other = _last_line(buffer.decode("utf-8", "replace")) or other  # (no final newline)
                    return got, stream_end_reason(stream.exit_status(1.0), stream.stderr_tail() or other)
                lines, buffer = split_lines(buffer, chunk) if chunk else ([], buffer)
                for line in lines:
                    sample = parse_line(line, host.name, time.time())
                    if sample is None:
                        other = line
                        continue
                    other, last = None, now
                    sample = replace(
                        sample,
                        top_process=procs.get(sample.uuid or "", None) if procs is not None else None,
                    )
                    sample = replace(sample, alerts=gpu_alerts(sample, thresholds))
                    done, pending = assemble(pending, sample)
                    self._record(host, sample, done, now)
                    got = True
                if now - last > stale_after:
                    raise GpuonboardError(silent_reason(now - last, other))
                if chunk and opts.process_every and now >= next_procs:
                    procs = self._processes(runner)
                    next_procs = now + opts.process_every
            return got, "stopped"
        finally:
            with self._lock:
                self._streams.pop(host.name, None)
                self._runners.pop(host.name, None)
            if stream is not None:
                stream.close()
            with contextlib.suppress(Exception):
                runner.close()

    def _processes(self, runner: Runner) -> dict[str, str] | None:
        if not self.options.process_every:
            return None
        try:
            result = runner.run(process_command(), timeout=10)
        except GpuonboardError:
            return None
        return parse_processes(result.stdout) if result.ok else None

    def _record(self, host: Host, sample: GpuSample, done: tuple[GpuSample, ...] | None, now: float) -> None:
        with self._lock:
            state = self._states[host.name]
            recovered = state.status != "live"
            state.status, state.error, state.retry_at, state.updated = "live", None, None, now
            state.gpus[sample.index] = sample
            if done is not None:
                state.samples += 1
                state.gpus_seen = len(done)
                for index in [i for i in state.gpus if i not in {s.index for s in done} | {sample.index}]:
                    del state.gpus[index]  # a GPU that fell off the bus
                state.alerts = host_alerts(len(done), host.order.gpu_count, done[-1].count)
            elif state.samples == 0 and sample.count and len(state.gpus) >= sample.count:
                state.gpus_seen = len(state.gpus)
                state.alerts = host_alerts(len(state.gpus), host.order.gpu_count, sample.count)
        if recovered:
            self._event(host.name, "live")
        if self.on_sample is not None:
            self.on_sample(sample)


# ------------------------------------------------------------------ one-shot


def sample_once(host: Host, runner: Runner, process: bool = True) -> tuple[list[GpuSample], tuple[str, ...]]:
    """One sample of every GPU (no loop) and the host-level alerts."""
    result = runner.run(query_command(None), timeout=30)
    if not result.ok:
        detail = (result.stderr or result.stdout).strip().splitlines()
        raise GpuonboardError(
            f"host {host.name}: nvidia-smi failed (exit {result.exit_code})"
            + (f": {detail[-1]}" if detail else "")
        )
    procs: dict[str, str] = {}
    if process:
        extra = runner.run(process_command(), timeout=30)
        procs = parse_processes(extra.stdout) if extra.ok else {}
    thresholds = Thresholds.for_host(host)
    now = time.time()
    samples = []
    for line in split_lines(b"", result.stdout.encode("utf-8", "surrogateescape") + b"\n")[0]:
        s = parse_line(line, host.name, now)
        if s is not None:
            s = replace(s, top_process=procs.get(s.uuid or ""))
            samples.append(replace(s, alerts=gpu_alerts(s, thresholds)))
    reported = samples[0].count if samples else None
    return samples, host_alerts(len(samples), host.order.gpu_count, reported)


# ------------------------------------------------------------------ rendering

COLUMNS: tuple[str, ...] = (
    "host",
    "gpu",
    "util",
    "memory",
    "temp",
    "power",
    "throttle",
    "top process",
    "alerts",
)
# Dropped in this order when the table is wider than the terminal (the throttle reasons that
# matter are alerts too); the alerts then go below the table, where they are never cut off.
OPTIONAL_COLUMNS: tuple[str, ...] = ("top process", "throttle")
_WRAPPING = frozenset({"host", "gpu", "memory", "top process", "alerts"})  # util, temp, power stay whole
TABLE_LINES = 5  # a table's lines besides its rows: title, top border, header, its rule, bottom border


def short_gpu_name(name: str) -> str:
    """'NVIDIA H100 80GB HBM3' -> 'H100 80GB HBM3' (every GPU here is an NVIDIA one)."""
    return name[len("NVIDIA ") :] if name.startswith("NVIDIA ") and len(name) > len("NVIDIA ") else name


def _host_alert(st: HostState) -> str:
    stale = st.status != "live"  # (the error is the host's own words: no escape sequence passes)
    return termtext.for_terminal(
        "; ".join(x for x in ((st.error if stale else None), *st.alerts) if x), keep=""
    )


def alert_lines(states: Sequence[HostState], per_alert: bool = False) -> list[str]:
    """Every alert as one line (`host: ...`, `host gpu N: ...`): below a table too narrow for
    them. `per_alert`: one line per host and alert text instead, naming its GPUs (`host gpu
    0,3: ...`), above a table taller than the terminal (8 GPUs idle: one line, not 8)."""
    out: list[str] = []
    for st in states:
        host_alert = _host_alert(st)
        if host_alert:
            out.append(f"{st.name}: {host_alert}")
        if not per_alert:
            out += [
                f"{st.name} gpu {i}: {'; '.join(s.alerts)}" for i, s in sorted(st.gpus.items()) if s.alerts
            ]
            continue
        gpus: dict[str, list[str]] = {}
        for i, s in sorted(st.gpus.items()):
            for alert in s.alerts:
                gpus.setdefault(alert, []).append(str(i))
        out += [f"{st.name} gpu {','.join(idx)}: {alert}" for alert, idx in gpus.items()]
    return out


def _gpu_cells(s: GpuSample) -> dict[str, str]:
    used = "?" if s.mem_used_mib is None else s.mem_used_mib  # ([N/A] is not 0 MiB used)
    mem = f"{used}/{s.mem_total_mib or '?'} MiB"
    if s.mem_pct is not None:
        mem += f" ({s.mem_pct:.0f}%)"
    power = (
        f"{s.power_w:.0f}/{s.power_limit_w:.0f} W"
        if s.power_w is not None and s.power_limit_w
        else (f"{s.power_w:.0f} W" if s.power_w is not None else "-")
    )
    cells = {
        "gpu": f"{s.index} {short_gpu_name(s.name)}",
        "util": "-" if s.util_pct is None else f"{s.util_pct}%",
        "memory": mem,
        "temp": "-" if s.temp_c is None else f"{s.temp_c}C",
        "power": power,
        "throttle": ",".join(r for r in s.throttle if r != "gpu_idle") or "-",
        "top process": s.top_process or "-",
    }
    # (a process name on a shared box is anyone's text: an ESC in it must not reach the terminal)
    return {col: termtext.for_terminal(text, keep="") for col, text in cells.items()}


def _rows(states: Sequence[HostState], now: float) -> list[dict[str, Any]]:
    """The table's cells, every column of COLUMNS, as rich Text: one row per GPU (one per
    host without GPUs yet)."""
    from rich.text import Text

    rows: list[dict[str, Any]] = []
    for st in states:
        stale = st.status != "live"
        if stale:
            wait = f", retry in {max(0.0, st.retry_at - now):.0f}s" if st.retry_at else ""
            label = Text(f"{st.name} {st.status.upper()}{wait}", style="bold magenta")
        else:
            label = Text(st.name)
        host_alert = _host_alert(st)
        if not st.gpus:
            cells = {c: Text("-") for c in COLUMNS}
            cells.update(host=label, alerts=Text(host_alert, style="red"))
            rows.append(cells)
            continue
        style = "dim" if stale else ""
        for i, (_, s) in enumerate(sorted(st.gpus.items())):
            alerts = "; ".join(s.alerts + ((host_alert,) if host_alert and i == 0 else ()))
            cells = {c: Text(v, style=style) for c, v in _gpu_cells(s).items()}
            cells.update(
                host=label if i == 0 else Text(""), alerts=Text(alerts, style="bold red" if alerts else "")
            )
            rows.append(cells)
    return rows


def text_width(text: str) -> int:
    """Terminal cells of a cell's text when nothing limits it: its widest line (as rich
    measures a Text; wide characters count 2)."""
    from rich.cells import cell_len

    return max((cell_len(line) for line in text.splitlines()), default=0)


def column_widths(rows: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Each column's content width (header included, padding not): measured once per refresh."""
    widths = {c: text_width(c) for c in COLUMNS}
    for row in rows:
        for col, cell in row.items():
            w = text_width(cell.plain)
            if w > widths[col]:
                widths[col] = w
    return widths


def table_width(widths: Mapping[str, int], columns: Sequence[str]) -> int:
    """Terminal columns the table takes with these columns: each cell padded by one on both
    sides, a border on both edges and one between columns (rich's default box)."""
    return sum(widths[c] + 2 for c in columns) + 2 + len(columns) - 1


def fit_columns(widths: Mapping[str, int], width: int) -> tuple[list[str], bool]:
    """The columns to show on a terminal `width` wide, and whether the alerts go below the
    table: the optional columns are left out first, then the alerts column."""
    columns = list(COLUMNS)
    for drop in OPTIONAL_COLUMNS:
        if table_width(widths, columns) <= width:
            return columns, False
        columns.remove(drop)
    if table_width(widths, columns) <= width:
        return columns, False
    columns.remove("alerts")
    return columns, True


def _table(
    rows: Sequence[Mapping[str, Any]],
    interval: float,
    columns: Sequence[str],
    widths: Mapping[str, int] | None = None,
) -> Any:
    """The rich table of these rows and columns; `widths` fixes the columns' widths (rich then
    measures no cell again), only for a table known to fit the terminal."""
    from rich.table import Table

    every = f"every {interval:g}s; Ctrl-C to quit" if interval > 0 else "one sample"  # (--once: "every 0s")
    t = Table(title=f"GPU monitor ({every})", title_justify="left")
    for col in columns:
        t.add_column(col, no_wrap=col not in _WRAPPING, width=None if widths is None else widths[col])
    for cells in rows:
        t.add_row(*(cells[c] for c in columns))
    return t


def fit_alerts(lines: list[str], width: int, height: int) -> list[str]:
    """Pure: the alert lines that fit above a table on a `width` x `height` terminal, keeping
    the table's header and first row in view (TABLE_LINES + 1 lines); when some do not fit, the
    last line shown says how many more there are (the live view shows its top only: an alert
    past the bottom was never seen)."""
    room = max(height - TABLE_LINES - 1, 1)

    def used(line: str) -> int:  # (a line wider than the terminal wraps)
        return max(-(-len(line) // max(width, 1)), 1)

    if sum(used(line) for line in lines) <= room:
        return lines
    more = "... and {} more alert lines: `invoke monitor --once` prints every one"
    shown: list[str] = []
    taken = used(more.format(len(lines)))
    for line in lines:
        if taken + used(line) > room:
            break
        shown.append(line)
        taken += used(line)
    return [*shown, more.format(len(lines) - len(shown))]


def render_table(
    states: Sequence[HostState],
    interval: float,
    now: float | None = None,
    width: int | None = None,
    height: int | None = None,
) -> Any:
    """The rich table: one row per GPU (one per host without GPUs yet). Given the terminal's
    `width`, a table wider than it loses the optional columns, then its alerts column, whose
    alerts are printed below it instead: util, temp and the alerts are never squeezed away.
    Given its `height`, a table taller than it (the live view shows its top only) has every
    alert above it instead, one line per host and alert (`host gpu 0,3: ...`).

    The cells are measured once (column_widths) and the layout decided on those numbers
    (fit_columns): a refresh of 256 GPUs builds one table, not one per column tried."""
    now = time.monotonic() if now is None else now
    rows = _rows(states, now)
    if width is None:
        return _table(rows, interval, COLUMNS)
    widths = column_widths(rows)
    columns, alerts_below = fit_columns(widths, width)
    fits = table_width(widths, columns) <= width
    table = _table(rows, interval, columns, widths if fits else None)
    below = alert_lines(states) if alerts_below else []
    # (at least: a row that wraps takes more than one line)
    too_tall = height is not None and len(rows) + TABLE_LINES + len(below) > height
    if not (below or too_tall):
        return table
    from rich.console import Group
    from rich.text import Text

    if too_tall:
        assert height is not None
        lines = fit_alerts(alert_lines(states, per_alert=True), width, height)
        above = [Text(line, style="bold red") for line in lines]
        return Group(*above, table) if above else table
    return Group(table, *(Text(line, style="bold red") for line in below))


# ------------------------------------------------------------------ entry point


@dataclass
class MonitorCommand:
    """The command line of `invoke monitor`."""

    interval: str = "2s"
    once: bool = False
    json: bool = False
    log: str = ""
    duration: str = ""


def _parse_seconds(flag: str, value: str, minimum: float) -> float:
    try:
        seconds = parse_duration(value)
    except ValueError as exc:
        raise UsageError(f"{flag}: {exc}.") from None
    if seconds < minimum:
        raise UsageError(f"{flag} must be at least {minimum:g}s, not {value!r}.")
    return seconds


def connector(settings: api.Settings, inv: Inventory, retries: int = 0) -> Callable[[Host], Runner]:
    """open_runner with our host-key policy (the monitor does its own backoff)."""
    store = KnownHosts(settings.known_hosts or settings.state_root() / "known_hosts")
    options = ConnectOptions(
        known_hosts=store.path, trust_new_hosts=settings.trust_new_hosts, retries=retries
    )
    return lambda host: open_runner(host, options, store, inv)


def monitor(
    selection: api.Selection,
    settings: api.Settings,
    cmd: MonitorCommand,
    out: TextIO | None = None,
    stop: threading.Event | None = None,
) -> int:
    """Run `invoke monitor`; returns the exit code (0, or 3 when --once reached no host)."""
    interval = _parse_seconds("--interval", cmd.interval, 0.1)
    duration = _parse_seconds("--duration", cmd.duration, 0) if cmd.duration else None
    inv, hosts = api.load_hosts(selection, settings)
    out = out or sys.stdout
    connect = connector(settings, inv, retries=settings.connect_retries if cmd.once else 0)
    log = _open_log(cmd.log)
    try:
        if cmd.once:
            return _once(hosts, connect, cmd.json, log, out)
        return _watch(hosts, connect, interval, duration, cmd.json, log, out, stop or threading.Event())
    finally:
        if log is not None:
            with contextlib.suppress(OSError):  # (every line was flushed: a full disk said so then)
                log.close()


def _open_log(path: str) -> TextIO | None:
    if not path:
        return None
    target = Path(path).expanduser()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        return target.open("a", buffering=1, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"--log {path}: cannot open it for appending ({exc.strerror}).") from None


def _once(
    hosts: Sequence[Host], connect: Callable[[Host], Runner], as_json: bool, log: TextIO | None, out: TextIO
) -> int:
    from concurrent.futures import ThreadPoolExecutor

    def one(host: Host) -> tuple[list[GpuSample], tuple[str, ...], str | None]:
        try:
            runner = connect(host)
        except GpuonboardError as exc:
            return [], (), exc.message
        try:
            samples, alerts = sample_once(host, runner)
            return samples, alerts, None
        except GpuonboardError as exc:
            return [], (), exc.message
        finally:
            runner.close()

    with ThreadPoolExecutor(max_workers=max(1, min(20, len(hosts)))) as pool:
        results = list(pool.map(one, hosts))
    samples = [s for r in results for s in r[0]]
    doc = {
        "samples": [s.to_json() for s in samples],
        "hosts": {
            h.name: {
                "status": "error" if err else "ok",
                "error": err,
                "alerts": list(alerts),
                "gpus": len(ss),
            }
            for h, (ss, alerts, err) in zip(hosts, results, strict=True)
        },
    }
    if log is not None:
        for s in samples:
            write_log(log, json.dumps(s.to_json()) + "\n")
    if as_json:
        out.write(json.dumps(doc, indent=1) + "\n")
    else:
        states = []
        for h, (ss, alerts, err) in zip(hosts, results, strict=True):
            st = HostState(h.name, status="stale" if err else "live", error=err, alerts=alerts)
            st.gpus = {s.index: s for s in ss}
            states.append(st)
        from gpuonboard.report import terminal

        con = terminal.console()
        con.print(render_table(states, 0, width=con.width))
    failed = [err for _, _, err in results if err]
    for err in failed:
        print(f"error: {termtext.for_terminal(err, keep='')}", file=sys.stderr)
    return int(ExitCode.UNREACHABLE) if failed and len(failed) == len(hosts) else int(ExitCode.OK)


def _watch(
    hosts: Sequence[Host],
    connect: Callable[[Host], Runner],
    interval: float,
    duration: float | None,
    as_json: bool,
    log: TextIO | None,
    out: TextIO,
    stop: threading.Event,
) -> int:
    write_lock = threading.Lock()
    reader_gone = threading.Event()  # `monitor --json | head`: stop quietly, exit 141
    log_failed: list[str] = []  # the --log file could not be written (disk full): stop, say so

    def emit(doc: Mapping[str, Any]) -> None:
        # (called on the host workers' threads: an exception here killed the worker, and the
        # monitor went on forever without that host, a traceback on stderr)
        line = json.dumps(doc) + "\n"
        with write_lock:
            if reader_gone.is_set() or log_failed:
                return
            if log is not None:
                try:
                    write_log(log, line)
                except CommandError as exc:
                    log_failed.append(exc.message)
                    stop.set()
                    return
            if as_json:
                try:
                    out.write(line)
                    out.flush()
                except BrokenPipeError:
                    reader_gone.set()
                    stop.set()

    def on_sample(s: GpuSample) -> None:
        if log is not None or as_json:
            emit(s.to_json())

    def on_event(host: str, kind: str, detail: str | None) -> None:
        if log is not None or as_json:
            emit(
                {
                    "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
                    "ts": time.time(),
                    "host": host,
                    "event": kind,
                    "error": detail,
                }
            )

    mon = Monitor(hosts, connect, MonitorOptions(interval=interval), on_sample, on_event)
    deadline = None if duration is None else time.monotonic() + duration
    live: Any = None
    try:
        mon.start()
        if not as_json:
            from rich.live import Live

            from gpuonboard.report import terminal

            con = terminal.console()  # its width is read at each update: a resized terminal fits
            live = Live(
                render_table(mon.snapshot(), interval, width=con.width, height=con.height),
                console=con,
                refresh_per_second=4,
            )
            live.start()
        while not stop.is_set() and (deadline is None or time.monotonic() < deadline):
            wait = 0.25 if deadline is None else max(0.0, min(0.25, deadline - time.monotonic()))
            stop.wait(wait)
            if live is not None:
                live.update(
                    render_table(
                        mon.snapshot(), interval, width=live.console.width, height=live.console.height
                    )
                )
    except Terminated:
        raise  # SIGTERM/SIGHUP: 143 (errors.Terminated), once everything below is closed
    except KeyboardInterrupt:
        pass  # Ctrl-C is how a monitor ends: close everything below, exit 0
    finally:
        mon.stop()
        if live is not None:
            live.update(
                render_table(mon.snapshot(), interval, width=live.console.width, height=live.console.height)
            )
            live.stop()
    if log_failed:
        raise CommandError(log_failed[0])
    if reader_gone.is_set():
        from gpuonboard.report import terminal

        with contextlib.suppress(OSError, ValueError):  # (not a real file: nothing to silence)
            terminal.reader_left(out)
        return int(ExitCode.READER_LEFT)
    return int(ExitCode.OK)


def write_log(log: TextIO, line: str) -> None:
    """Append one line to the --log file, flushed; a file that stops taking lines (a full disk)
    is one sentence (CommandError), never an internal error or a dead host worker."""
    try:
        log.write(line)
        log.flush()
    except OSError as exc:
        raise CommandError(
            f"--log {getattr(log, 'name', '?')}: cannot write to it any more ({exc.strerror or exc});"
            " the monitor stopped: free some space there or pass another --log file."
        ) from None


def iter_log(lines: Iterable[str]) -> list[dict[str, Any]]:
    """Samples from `--log` JSON lines (event lines skipped), for plots and reports."""
    docs = [json.loads(line) for line in lines if line.strip()]
    return [d for d in docs if "event" not in d]
