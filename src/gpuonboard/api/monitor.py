"""`invoke monitor`: a live multi-host GPU view over ONE long-lived SSH channel per host.

Each host streams `nvidia-smi --query-gpu=<MONITOR_FIELDS> --format=csv,noheader,nounits -l N`
on one exec channel of its one connection; the bytes are split into lines and parsed line by
line, each line being one GPU of one sample. A host whose stream stops is marked stale and
reconnected with exponential backoff while the others keep updating. Closing a channel ends
the remote nvidia-smi (see shell.until_stdin_closes).

This module is the command: its options, the connections, `--once`, the live loop and its
JSON lines (stdout with --json, the --log file), and the --metrics-file (a Prometheus text
file for node_exporter's textfile collector: report/metrics.py renders it). The parts live
in `gpuonboard.watch`: `samples` (the parsed samples, HostState), `alerts` (thresholds),
`stream` (the remote commands and their streams), `live` (the Monitor's per-host workers,
`sample_once`) and `render` (the rich table); their names are re-exported here, as `monitor.X`
reads them.

No Invoke imports here.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from gpuonboard import api, termtext
from gpuonboard.api.options import MonitorCommand
from gpuonboard.api.run_reports import metrics_file_problem
from gpuonboard.connection import ConnectOptions, KnownHosts, Runner, open_runner
from gpuonboard.errors import CommandError, ExitCode, GpuonboardError, Terminated, UsageError
from gpuonboard.inventory import Host, Inventory
from gpuonboard.units import parse_duration, rfc3339
from gpuonboard.watch.alerts import THROTTLE_ALERT_REASONS, Thresholds, gpu_alerts, host_alerts
from gpuonboard.watch.live import Monitor, MonitorOptions, sample_once
from gpuonboard.watch.render import (
    _WRAPPING,
    COLUMNS,
    OPTIONAL_COLUMNS,
    TABLE_LINES,
    _gpu_cells,
    _host_alert,
    _rows,
    _table,
    alert_lines,
    column_widths,
    fit_alerts,
    fit_columns,
    render_table,
    short_gpu_name,
    table_width,
    text_width,
)
from gpuonboard.watch.samples import (
    MAX_LINE,
    MONITOR_FIELDS,
    PROCESS_FIELDS,
    GpuSample,
    HostState,
    assemble,
    parse_line,
    parse_processes,
    split_lines,
)
from gpuonboard.watch.stream import (
    MAX_DETAIL,
    loop_args,
    process_command,
    query_command,
    silent_reason,
    stream_command,
    stream_end_reason,
)

__all__ = [
    "COLUMNS",
    "MAX_DETAIL",
    "MAX_LINE",
    "MONITOR_FIELDS",
    "OPTIONAL_COLUMNS",
    "PROCESS_FIELDS",
    "TABLE_LINES",
    "THROTTLE_ALERT_REASONS",
    "_WRAPPING",
    "GpuSample",
    "HostState",
    "Monitor",
    "MonitorCommand",
    "MonitorOptions",
    "Thresholds",
    "_gpu_cells",
    "_host_alert",
    "_rows",
    "_table",
    "alert_lines",
    "assemble",
    "column_widths",
    "connector",
    "fit_alerts",
    "fit_columns",
    "gpu_alerts",
    "host_alerts",
    "iter_log",
    "loop_args",
    "monitor",
    "parse_line",
    "parse_processes",
    "process_command",
    "query_command",
    "render_table",
    "sample_once",
    "short_gpu_name",
    "silent_reason",
    "split_lines",
    "stream_command",
    "stream_end_reason",
    "table_width",
    "text_width",
    "write_log",
]


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
    metrics = None
    if settings.metrics_file is not None:
        problem = metrics_file_problem(settings.metrics_file)
        if problem:
            raise UsageError(problem)
        metrics = MetricsFile(settings.metrics_file, interval)
    log = _open_log(cmd.log)
    try:
        if cmd.once:
            return _once(hosts, connect, cmd.json, log, out, metrics)
        stop = stop or threading.Event()
        return _watch(hosts, connect, interval, duration, cmd.json, log, out, stop, metrics)
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


class MetricsFile:
    """The monitor's --metrics-file: its hosts' latest samples, rewritten atomically when a
    sample or a host's state changed, at most once per interval (and at least 1 s apart), and a
    last time when the monitor stops (`gpuonboard_monitor_running 0`). A write that fails (a full
    disk) is recorded and stops the monitor, as a --log file that fails does."""

    def __init__(self, path: Path, interval: float) -> None:
        self.path, self.every = path, max(1.0, interval)
        self.last = float("-inf")
        self.seen: tuple[tuple[str, str, int], ...] | None = None
        self.failed: list[str] = []

    def update(self, states: Sequence[HostState], running: bool = True) -> bool:
        """Write the file if it is due (always when not `running`); False once a write failed."""
        from gpuonboard.report import metrics

        if self.failed:
            return False
        key = tuple((st.name, st.status, st.samples) for st in states)
        now = time.monotonic()
        if running and (key == self.seen or now - self.last < self.every):
            return True
        text = metrics.render(metrics.monitor_families(states, running, time.time()))
        try:
            metrics.write(self.path, text)
        except OSError as exc:
            self.failed.append(
                f"--metrics-file {self.path}: cannot write it any more ({exc.strerror or exc}); the"
                " monitor stopped: free some space there or pass another file."
            )
            return False
        self.seen, self.last = key, now
        return True


def _once(
    hosts: Sequence[Host],
    connect: Callable[[Host], Runner],
    as_json: bool,
    log: TextIO | None,
    out: TextIO,
    metrics: MetricsFile | None = None,
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
    states = []
    for h, (ss, alerts, err) in zip(hosts, results, strict=True):
        st = HostState(h.name, status="stale" if err else "live", error=err, alerts=alerts)
        st.gpus = {s.index: s for s in ss}
        st.gpus_seen = 0 if err else len(ss)
        states.append(st)
    if metrics is not None and not metrics.update(states, running=False):
        raise CommandError(metrics.failed[0])
    if as_json:
        out.write(json.dumps(doc, indent=1) + "\n")
    else:
        from gpuonboard.report import terminal

        con = terminal.console()
        con.print(render_table(states, 0, width=con.width))
    failed = [err for _, _, err in results if err]
    for err in failed:
        print(f"error: {termtext.for_terminal(err, keep='')}", file=sys.stderr)
    return int(ExitCode.UNREACHABLE) if failed and len(failed) == len(hosts) else int(ExitCode.OK)


class _JsonLines:
    """Where the live monitor's samples and events go as JSON lines: the --log file and, with
    --json, stdout. Called on the host workers' threads: an exception here killed the worker,
    and the monitor went on forever without that host (a traceback on stderr), so a failed
    write is recorded and stops the monitor instead."""

    def __init__(self, as_json: bool, log: TextIO | None, out: TextIO, stop: threading.Event) -> None:
        self.as_json, self.log, self.out, self.stop = as_json, log, out, stop
        self.write_lock = threading.Lock()
        self.reader_gone = threading.Event()  # `monitor --json | head`: stop quietly, exit 141
        self.log_failed: list[str] = []  # the --log file could not be written (disk full): stop, say so

    def emit(self, doc: Mapping[str, Any]) -> None:
        """One JSON line to the log file and (--json) stdout."""
        line = json.dumps(doc) + "\n"
        with self.write_lock:
            if self.reader_gone.is_set() or self.log_failed:
                return
            if self.log is not None:
                try:
                    write_log(self.log, line)
                except CommandError as exc:
                    self.log_failed.append(exc.message)
                    self.stop.set()
                    return
            if self.as_json:
                try:
                    self.out.write(line)
                    self.out.flush()
                except BrokenPipeError:
                    self.reader_gone.set()
                    self.stop.set()

    def on_sample(self, s: GpuSample) -> None:
        """A GPU's sample as it arrives."""
        if self.log is not None or self.as_json:
            self.emit(s.to_json())

    def on_event(self, host: str, kind: str, detail: str | None) -> None:
        """A host going stale or live again."""
        if self.log is not None or self.as_json:
            now = time.time()
            self.emit(
                {
                    "time": rfc3339(now),  # RFC 3339, UTC
                    "ts": now,
                    "host": host,
                    "event": kind,
                    "error": detail,
                }
            )


def _watch(
    hosts: Sequence[Host],
    connect: Callable[[Host], Runner],
    interval: float,
    duration: float | None,
    as_json: bool,
    log: TextIO | None,
    out: TextIO,
    stop: threading.Event,
    metrics: MetricsFile | None = None,
) -> int:
    sink = _JsonLines(as_json, log, out, stop)
    mon = Monitor(hosts, connect, MonitorOptions(interval=interval), sink.on_sample, sink.on_event)
    _run_live(mon, interval, duration, as_json, stop, metrics)
    if sink.log_failed:
        raise CommandError(sink.log_failed[0])
    if metrics is not None and metrics.failed:
        raise CommandError(metrics.failed[0])
    if sink.reader_gone.is_set():
        from gpuonboard.report import terminal

        with contextlib.suppress(OSError, ValueError):  # (not a real file: nothing to silence)
            terminal.reader_left(out)
        return int(ExitCode.READER_LEFT)
    return int(ExitCode.OK)


def _run_live(
    mon: Monitor,
    interval: float,
    duration: float | None,
    as_json: bool,
    stop: threading.Event,
    metrics: MetricsFile | None = None,
) -> None:
    """Run the monitor until `stop`, the --duration or Ctrl-C, the table refreshed 4 times a
    second (without --json) and the --metrics-file when due; every channel and connection
    closed however it ends (and the metrics file written a last time, saying it stopped)."""
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
            if metrics is not None and not metrics.update(mon.snapshot()):
                stop.set()
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
        if metrics is not None:
            metrics.update(mon.snapshot(), running=False)
        if live is not None:
            live.update(
                render_table(mon.snapshot(), interval, width=live.console.width, height=live.console.height)
            )
            live.stop()


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
