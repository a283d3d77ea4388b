"""The live monitor: one worker thread per host streaming samples into shared state (stale
hosts reconnected with exponential backoff while the others keep updating), and one sample
of a host without the loop (`monitor --once`).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from gpuonboard.connection import Runner
from gpuonboard.errors import GpuonboardError
from gpuonboard.inventory import Host
from gpuonboard.watch.alerts import Thresholds, gpu_alerts, host_alerts
from gpuonboard.watch.samples import GpuSample, HostState, assemble, parse_line, parse_processes, split_lines
from gpuonboard.watch.stream import (
    Stream,
    last_line,
    open_stream,
    process_command,
    query_command,
    silent_reason,
    stream_command,
    stream_end_reason,
)


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
        self._streams: dict[str, Stream] = {}
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
        stream: Stream | None = None
        got = False
        try:
            procs = self._processes(runner)
            next_procs = time.monotonic() + opts.process_every
            stream = open_stream(runner, stream_command(opts.interval))
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
                    other = last_line(buffer.decode("utf-8", "replace")) or other  # (no final newline)
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
