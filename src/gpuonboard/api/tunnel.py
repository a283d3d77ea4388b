"""`invoke tensorboard`: start TensorBoard on a host and forward a local port to it.

The forward is a small thread pair per client over the host's ONE SSH connection
(paramiko `direct-tcpip` channels on `SSHRunner.transport`), so it passes through the jump
chain like every other command. What this command started on the host it stops on exit.
No Invoke imports here.
"""

from __future__ import annotations

import contextlib
import json
import posixpath
import select
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from gpuonboard import api, shell, termtext
from gpuonboard.connection import Runner, SSHRunner
from gpuonboard.errors import CommandError, ExitCode, GpuonboardError, HostKeyError, Terminated, UsageError
from gpuonboard.inventory import Host
from gpuonboard.units import parse_duration

# In the command line of the TensorBoard we start (`python3 -m tensorboard.main ...`): a PID
# whose command line lacks it is not ours any more, and is never killed.
TENSORBOARD_MARK = "tensorboard.main"

RECONNECT_FOR = "5m"  # how long a dropped link is tried again (autossh-like) before giving up
BACKOFF_FIRST_S = 1.0  # the waits between those tries: 1, 2, 4 ... seconds,
BACKOFF_MAX_S = 30.0  # never more than this
HEALTH_EVERY_S = 5.0  # how often the host is asked whether TensorBoard still listens
LINK_WAIT_S = 20.0  # how long a browser connection made while the link is down waits for it
ENVIRONMENT_WAIT_S = 10.0  # the most time TensorBoard's /data/environment reply is read for
ENVIRONMENT_MAX_BYTES = 1 << 16  # and the most of it read
# RFC 4254 5.1: how sshd answers a direct-tcpip channel it may not open (AllowTcpForwarding no,
# PermitOpen); a port nothing listens on is CONNECT_FAILED (2).
OPEN_ADMINISTRATIVELY_PROHIBITED = 1


def free_port(address: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on at `address` right now."""
    with socket.socket() as s:
        s.bind((address, 0))
        return int(s.getsockname()[1])


def _transport(runner: Runner) -> Any:
    if not isinstance(runner, SSHRunner):
        raise UsageError(f"host {runner.host.name}: port forwarding needs an SSH connection.")
    return runner.transport


def remote_port_open(runner: Runner, host: str, port: int) -> bool:
    """True when the host can open a TCP connection to host:port (asked over SSH)."""
    return probe_port(runner, host, port, timeout=5) is True


def forwarding_forbidden(name: str) -> CommandError:
    """The error when the host's sshd refuses every forward (`AllowTcpForwarding no`)."""
    return CommandError(
        f"host {name}: its sshd does not allow port forwarding (AllowTcpForwarding no), so"
        " TensorBoard cannot be reached over SSH; ask the provider to allow it, or run"
        " TensorBoard elsewhere."
    )


def probe_port(runner: Runner, host: str, port: int, timeout: float = 10) -> bool | None:
    """Does host:port (seen from the host) accept connections? True; False when the host
    refused it (nothing listens); None when that cannot be told now (the link is down or slow).
    A host whose sshd forbids forwarding is a CommandError (forwarding_forbidden): its refusal
    says nothing about the port, and waiting for the port would wait for ever."""
    if not isinstance(runner, SSHRunner):
        try:
            socket.create_connection((host, port), timeout=2).close()
            return True
        except OSError:
            return False
    from gpuonboard.connection import import_paramiko

    try:
        chan = runner.transport.open_channel("direct-tcpip", (host, port), ("127.0.0.1", 0), timeout=timeout)
    except import_paramiko().ChannelException as exc:  # the host's connect() to host:port failed
        if getattr(exc, "code", None) == OPEN_ADMINISTRATIVELY_PROHIBITED:
            raise forwarding_forbidden(runner.host.name) from None
        return False
    except Exception:  # no answer in time, or the connection is gone
        return None
    chan.close()
    return True


def served_logdir(runner: Runner, port: int) -> str | None:
    """The logdir the TensorBoard on the host's 127.0.0.1:port serves (its `/data/environment`
    page's `data_location`), or None when that page does not say (not TensorBoard, no answer)."""
    if not isinstance(runner, SSHRunner):
        return None
    try:
        local = ("127.0.0.1", 0)
        chan = runner.transport.open_channel("direct-tcpip", ("127.0.0.1", port), local, timeout=10)
    except Exception:  # (it answered the probe a moment ago: the link is slow or gone)
        return None
    try:
        # (whatever listens there may be another user's service: a reply dripped a byte at a
        # time is read for ENVIRONMENT_WAIT_S in all, not 5 s per byte, and no more than 64 KiB)
        deadline = time.monotonic() + ENVIRONMENT_WAIT_S
        chan.settimeout(5)
        chan.sendall(b"GET /data/environment HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        reply = b""
        while len(reply) < ENVIRONMENT_MAX_BYTES:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            chan.settimeout(min(5.0, left))
            data = chan.recv(1 << 14)
            if not data:
                break
            reply += data
    except Exception:  # (socket.timeout, a closed channel)
        return None
    finally:
        chan.close()
    return environment_logdir(reply)


def environment_logdir(reply: bytes) -> str | None:
    """Pure: the `data_location` of TensorBoard's `/data/environment` HTTP reply, or None when
    the reply is not one (another status, not JSON, JSON nested too deep to read, no string)."""
    head, _, body = reply.partition(b"\r\n\r\n")
    status = head.split(b"\r\n", 1)[0].split()
    if len(status) < 2 or not status[0].startswith(b"HTTP/") or status[1] != b"200":
        return None
    try:
        location = json.loads(body).get("data_location")
    except (ValueError, AttributeError, RecursionError):  # ([[[[... : RecursionError, no ValueError)
        return None
    # (printed on the user's terminal: another user's service could send escape sequences)
    return location if isinstance(location, str) and location and location.isprintable() else None


def same_logdir(served: str, wanted: str) -> bool:
    """Whether TensorBoard's `data_location` is the logdir asked for (relative paths are the
    login directory's: `runs` is `/home/u/runs`)."""
    a, b = posixpath.normpath(served), posixpath.normpath(wanted)
    return a == b or (not b.startswith("/") and a.endswith("/" + b))


def already_running_line(name: str, port: int, served: str | None, wanted: str) -> str:
    """What is said when something listens on the host's port already: whose logdir, when
    TensorBoard said, and when it is not the one asked for, how to get that one."""
    if served is None:
        return f"{name}: something already listens on 127.0.0.1:{port}; using it."
    if same_logdir(served, wanted):
        return f"{name}: TensorBoard already runs on 127.0.0.1:{port} for logdir {served}; using it."
    return (
        f"{name}: the TensorBoard already running on 127.0.0.1:{port} serves logdir {served}, not {wanted};"
        f" using it (pass another --port to start one for {wanted})."
    )


def backoff_delays(first: float = BACKOFF_FIRST_S, most: float = BACKOFF_MAX_S) -> Iterator[float]:
    """1, 2, 4, ... seconds, each at most `most`: the waits between reconnection tries."""
    delay = first
    while True:
        yield min(delay, most)
        delay = min(delay * 2, most)


def reconnect(
    connect: Callable[[], Runner],
    window: float,
    stop: threading.Event,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[Runner | None, str]:
    """Try `connect` (its own settings, host-key checks and retries) again and again, waiting
    backoff_delays between tries, for up to `window` seconds or until `stop` is set: (the new
    runner, ""), or (None, the last try's error). A host key that changed is never retried."""
    deadline = clock() + window
    delays = backoff_delays()
    last = "no try was made"
    while not stop.is_set():
        try:
            return connect(), ""
        except HostKeyError:
            raise
        except GpuonboardError as exc:
            last = exc.message
        left = deadline - clock()
        if left <= 0:
            break
        stop.wait(min(next(delays), left))
    return None, last


def wait_remote_port(runner: Runner, host: str, port: int, timeout: float, pid: int | None = None) -> bool:
    """Poll until host:port accepts connections (False on timeout or when `pid` died)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if remote_port_open(runner, host, port):
            return True
        if pid is not None and not runner.run(shell.join(["kill", "-0", pid]), timeout=10).ok:
            return False
        time.sleep(0.2)
    return False


def start_background(runner: Runner, argv: Sequence[object], log: str) -> int:
    """Start argv detached on the host (output to `log`); its PID."""
    result = runner.run(shell.background(shell.join(argv), log), timeout=30)
    pid = result.stdout.strip().splitlines()[-1:] if result.ok else []
    if not pid or not pid[0].isdecimal():
        raise CommandError(f"host {runner.host.name}: could not start {argv[0]} ({result.stderr.strip()}).")
    return int(pid[0])


def private_log(runner: Runner, name: str) -> str:
    """The absolute path of `name` in the host user's private gpuonboard cache dir (made 0700):
    a fixed name under /tmp could be a symlink another user of the box planted, which the
    redirect would follow."""
    made = runner.run(
        shell.sh_c(
            'd="${XDG_CACHE_HOME:-$HOME/.cache}/gpuonboard"; mkdir -p -m 700 -- "$d" && printf %s "$d"'
        ),
        timeout=30,
    )
    if not made.ok or not made.stdout.startswith("/"):
        raise CommandError(
            f"host {runner.host.name}: cannot make the cache dir ~/.cache/gpuonboard"
            f" ({made.stderr.strip() or 'no home directory'})."
        )
    return f"{made.stdout}/{name}"


def remove_file(runner: Runner, path: str) -> None:
    """rm -f one file on the host; nothing when the connection is gone."""
    with contextlib.suppress(GpuonboardError):
        runner.run(shell.join(["rm", "-f", "--", path]), timeout=10)


def stop_command(pid: int, expect: str | None = None) -> str:
    """The remote command of stop_background. With `expect`, a process whose command line
    (/proc/PID/cmdline) lacks that text is not the one we started: its PID was reused after
    ours ended (the host rebooted while the link was down) and it is left alone, as gone."""
    kill = shell.join(["kill", pid])
    alive = shell.join(["kill", "-0", pid])
    script = f"{kill} 2>/dev/null || ! {alive} 2>/dev/null"
    if expect:
        cmdline = shell.quote(f"/proc/{pid}/cmdline")
        script = (
            f"if [ -r {cmdline} ] && ! tr '\\000' ' ' <{cmdline} | grep -qF -- {shell.quote(expect)}; then"
            f" exit 0; fi; {script}"
        )
    return shell.sh_c(script)


def stop_background(runner: Runner, pid: int, expect: str | None = None) -> bool:
    """Stop a process started by start_background (TERM); True when it was signalled or is gone
    already, False when that could not be done (the connection dropped, kill refused). See
    stop_command for `expect`."""
    try:
        return runner.run(stop_command(pid, expect), timeout=10).ok
    except GpuonboardError:
        return False


def connected(runner: Runner) -> bool:
    """False when the runner's SSH connection is gone (a local runner is always connected)."""
    return not isinstance(runner, SSHRunner) or bool(runner.transport.is_active())


def stop_started(
    runner: Runner, reconnect: Callable[[], Runner], pid: int, log: str, expect: str | None = None
) -> bool:
    """Stop what this command started on the host and remove its log; when the connection it
    was started over is gone (the link dropped), over a new one, so it is not left running
    (holding the port and memory) for want of the old link. True when stopped or gone."""

    def stop(over: Runner) -> bool:
        if not stop_background(over, pid, expect):
            return False
        remove_file(over, log)
        return True

    if stop(runner):
        return True
    if connected(runner):
        return False  # the host refused the kill: nothing a new connection changes
    try:
        again = reconnect()
    except GpuonboardError:
        return False
    try:
        return stop(again)
    finally:
        again.close()


class Forwarder:
    """Listen on 127.0.0.1:local_port; carry each connection to remote host:port over SSH.

    After the link dropped, `relink` hands it the new connection: it keeps listening on the
    same port meanwhile (the browser's tab keeps its URL), and a connection made while the
    link is down waits up to LINK_WAIT_S for it."""

    def __init__(self, runner: Runner, remote_host: str, remote_port: int, local_port: int = 0) -> None:
        self.transport = _transport(runner)
        self.remote = (remote_host, remote_port)
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.listener.bind(("127.0.0.1", local_port))
        except OSError as exc:
            self.listener.close()
            raise UsageError(
                f"local port {local_port} is taken ({exc.strerror}); pass another --local-port (0: any)."
            ) from None
        self.listener.listen(16)
        self.listener.settimeout(0.25)
        self.local_port = int(self.listener.getsockname()[1])
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._open: set[Any] = set()
        self._accepter = threading.Thread(target=self._accept, name="forward-accept", daemon=True)
        self._accepter.start()

    def __enter__(self) -> Forwarder:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, peer = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._carry, args=(client, peer), daemon=True).start()

    def relink(self, runner: Runner) -> None:
        """Carry new connections over `runner` (the host's connection made again)."""
        self.transport = _transport(runner)

    def _channel(self, peer: tuple[str, int]) -> Any:
        """A channel to the remote end; None when refused there, or the link stayed down."""
        deadline = time.monotonic() + LINK_WAIT_S
        while not self._stop.is_set():
            transport = self.transport
            try:
                return transport.open_channel("direct-tcpip", self.remote, peer, timeout=10)
            except Exception:  # refused on the far side, or the connection is gone
                if transport.is_active() or time.monotonic() > deadline:
                    return None
            while self.transport is transport and time.monotonic() < deadline and not self._stop.is_set():
                self._stop.wait(0.25)  # (until relink)
        return None

    def _carry(self, client: socket.socket, peer: tuple[str, int]) -> None:
        chan = self._channel(peer)
        if chan is None:
            client.close()
            return
        with self._lock:
            self._open.update((client, chan))
        try:
            client.setblocking(True)
            while not self._stop.is_set():
                ready, _, _ = select.select([client, chan], [], [], 0.25)
                if client in ready:
                    data = client.recv(1 << 16)
                    if not data:
                        break
                    chan.sendall(data)
                if chan in ready:
                    data = chan.recv(1 << 16)
                    if not data:
                        break
                    client.sendall(data)
        except OSError:
            pass
        finally:
            with self._lock:
                self._open.difference_update((client, chan))
            with contextlib.suppress(Exception):
                chan.close()
            with contextlib.suppress(OSError):
                client.close()

    def close(self) -> None:
        """Stop listening and close every carried connection."""
        self._stop.set()
        with contextlib.suppress(OSError):
            self.listener.close()
        self._accepter.join(2)
        with self._lock:
            leftovers = list(self._open)
        for item in leftovers:
            with contextlib.suppress(Exception):
                item.close()


def remote_home_path(path: str) -> str:
    """`~/runs` -> `runs`: every argument is quoted, so the host's shell never expands `~`, and
    TensorBoard watched a directory literally named `~` (empty: no error, no data). Commands
    start in the login's home directory, so the relative path is the one meant."""
    if path == "~":
        return "."
    return path[2:] or "." if path.startswith("~/") else path


def log_tail(runner: Runner, log: str) -> str:
    """The last non-empty line of a log on the host ("" when it is empty or cannot be read)."""
    try:
        out = runner.run(shell.join(["tail", "-n", "5", log]), timeout=10).stdout
    except GpuonboardError:
        return ""
    lines = [x.strip() for x in out.splitlines() if x.strip()]
    return termtext.for_terminal(lines[-1]) if lines else ""  # (printed: a host's text)


def tensorboard_gone(runner: Runner, port: int, pause: float = 1.0) -> bool:
    """True when the host refused a connection to its 127.0.0.1:port twice, `pause` apart (a
    probe that got no answer, on a slow or dropping link, is no evidence)."""
    if probe_port(runner, "127.0.0.1", port) is not False:
        return False
    time.sleep(pause)
    return probe_port(runner, "127.0.0.1", port) is False


def gone_sentence(name: str, port: int, started: int | None, tail: str, log: str) -> str:
    """The error when TensorBoard stopped listening while the forward ran."""
    if started is None:
        return (
            f"host {name}: the TensorBoard that was already running on 127.0.0.1:{port} stopped"
            " listening; run `invoke tensorboard` again to start one."
        )
    return (
        f"host {name}: TensorBoard (pid {started}) stopped listening on 127.0.0.1:{port}"
        + (f"; the last line of its log: {tail}" if tail else "; its log is empty")
        + f" (all of it in {log} on the host)."
    )


def one_host_problem(names: list[str]) -> str:
    """Pure: the sentence for a tensorboard selection of other than one host (it forwards one
    host's port)."""
    if not names:
        return (
            "tensorboard forwards one host's port, and the selection picked none; give one with --host NAME."
        )
    shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
    return (
        f"tensorboard forwards one host's port, and the selection picked {len(names)} hosts ({shown});"
        " give one with --host NAME."
    )


@dataclass
class _Session:
    """What one `tensorboard` run holds while it forwards: the host, its connection (made again
    after a drop), and what it started there (the clean-up stops exactly that)."""

    host: Host
    connect: Callable[[Host], Runner]
    runner: Runner
    port: int
    started: int | None = None
    log: str = ""
    forward: Forwarder | None = None
    announced: bool = False
    crashed: bool = False
    url: str = ""


def _tensorboard_windows(
    port: int, local_port: int | None, duration: str, reconnect_for: str
) -> tuple[float | None, float]:
    """Check the port flags; (--duration in seconds or None, --reconnect-for in seconds)."""
    if not 0 < port < 65536:
        raise UsageError(f"--port must be 1..65535, not {port}.")
    if local_port is not None and not 0 <= local_port < 65536:
        raise UsageError(f"--local-port must be 0..65535, not {local_port}.")
    try:
        seconds = parse_duration(duration) if duration else None
    except ValueError as exc:
        raise UsageError(f"--duration: {exc}.") from None
    try:
        window = parse_duration(reconnect_for)
    except ValueError as exc:
        raise UsageError(f"--reconnect-for: {exc}.") from None
    return seconds, window


def _start_or_join(s: _Session, logdir: str) -> None:
    """Use the TensorBoard already listening on the host's port, or start one there."""
    runner, port, name = s.runner, s.port, s.host.name
    if remote_port_open(runner, "127.0.0.1", port):
        print(already_running_line(name, port, served_logdir(runner, port), logdir), flush=True)
        return
    s.log = private_log(runner, f"tensorboard-{port}.log")
    argv = ["python3", "-m", TENSORBOARD_MARK, "--logdir", logdir, "--port", port]
    s.started = start_background(runner, [*argv, "--host", "127.0.0.1"], s.log)
    if not wait_remote_port(runner, "127.0.0.1", port, timeout=90, pid=s.started):
        tail = log_tail(runner, s.log)
        raise CommandError(
            f"host {name}: TensorBoard did not start on port {port}"
            + (f": {tail}" if tail else "")
            + " (is `tensorboard` installed for the host's python3?)."
        )
    print(f"{name}: started TensorBoard (pid {s.started}) on logdir {logdir}.", flush=True)
    s.announced = True


def _forward_url(s: _Session, local_port: int | None) -> str:
    """Open the local forward (over SSH) and return the URL the browser uses."""
    if not isinstance(s.runner, SSHRunner):
        return f"http://127.0.0.1:{s.port}/"
    want = s.port if local_port is None else local_port
    try:
        s.forward = Forwarder(s.runner, "127.0.0.1", s.port, want)
    except UsageError:
        if local_port is not None:
            raise
        s.forward = Forwarder(s.runner, "127.0.0.1", s.port, 0)  # the default port is taken
    return f"http://127.0.0.1:{s.forward.local_port}/"


def _relink(
    s: _Session, stop: threading.Event, deadline: float | None, window: float, reconnect_for: str
) -> int | None:
    """The SSH link dropped: make it again (None) or the exit code to end with."""
    name = s.host.name
    if not window:
        print(f"error: host {name}: the SSH connection dropped.", file=sys.stderr)
        return int(ExitCode.UNREACHABLE)
    print(
        f"warning: host {name}: the SSH connection dropped; reconnecting for up to"
        f" {reconnect_for} (Ctrl-C to stop).",
        file=sys.stderr,
        flush=True,
    )
    left = window if deadline is None else min(window, deadline - time.monotonic())
    again, why = reconnect(lambda: s.connect(s.host), left, stop)
    if again is None:
        if stop.is_set() or (deadline is not None and time.monotonic() >= deadline):
            return int(ExitCode.OK)  # (--duration ended meanwhile)
        print(
            f"error: host {name}: the SSH connection dropped and could not be made"
            f" again within {reconnect_for}: {why}",
            file=sys.stderr,
            flush=True,
        )
        return int(ExitCode.UNREACHABLE)
    s.runner.close()
    s.runner = again
    if s.forward is not None:
        s.forward.relink(s.runner)
    print(f"{name}: the SSH connection is back; TensorBoard at {s.url} again.", flush=True)
    return None


def _raise_if_gone(s: _Session) -> None:
    """Exit 1 (with its log's last line) when TensorBoard stopped listening on the host."""
    if tensorboard_gone(s.runner, s.port):
        s.crashed = True
        tail = log_tail(s.runner, s.log) if s.started is not None else ""
        raise CommandError(gone_sentence(s.host.name, s.port, s.started, tail, s.log))


def _forward_until(
    s: _Session, stop: threading.Event, seconds: float | None, window: float, reconnect_for: str
) -> int:
    """Forward until Ctrl-C, `stop` or --duration; relink a dropped link, watch TensorBoard."""
    deadline = None if seconds is None else time.monotonic() + seconds
    next_check = time.monotonic() + HEALTH_EVERY_S
    try:
        while not stop.is_set() and (deadline is None or time.monotonic() < deadline):
            stop.wait(0.25 if deadline is None else max(0.0, min(0.25, deadline - time.monotonic())))
            if not connected(s.runner):
                code = _relink(s, stop, deadline, window, reconnect_for)
                if code is not None:
                    return code
                next_check = 0.0  # (did TensorBoard outlive the outage? the host may have rebooted)
            if time.monotonic() >= next_check:
                _raise_if_gone(s)
                next_check = time.monotonic() + HEALTH_EVERY_S
    except Terminated:
        raise  # SIGTERM/SIGHUP: 143 once everything below is stopped (the finally)
    except KeyboardInterrupt:
        pass  # Ctrl-C is how this command ends
    return int(ExitCode.OK)


def _clean_up(s: _Session) -> None:
    """Close the forward, stop what this command started on the host, close the link."""
    if s.forward is not None:
        s.forward.close()
    if s.started is not None and s.crashed:
        # (one that hangs, not listening, is stopped; its log is kept: it says what happened)
        stop_background(s.runner, s.started, TENSORBOARD_MARK)
    elif s.started is not None:
        # (its log said what TensorBoard printed: shown on failure, removed with it)
        if stop_started(s.runner, lambda: s.connect(s.host), s.started, s.log, TENSORBOARD_MARK):
            if s.announced:  # (one that never came up was not "started": nothing to say)
                print(f"{s.host.name}: stopped TensorBoard (pid {s.started}).", flush=True)
        else:  # never claim a stop that did not happen: it keeps a port and memory on the box
            print(
                f"warning: host {s.host.name}: could not stop the TensorBoard this command started"
                f" (pid {s.started}); it still runs there: run `kill {s.started}` on the host.",
                file=sys.stderr,
                flush=True,
            )
    s.runner.close()


def tensorboard(
    selection: api.Selection,
    settings: api.Settings,
    logdir: str = "",
    port: int = 6006,
    local_port: int | None = None,
    duration: str = "",
    stop: threading.Event | None = None,
    reconnect_for: str = RECONNECT_FOR,
) -> int:
    """Start TensorBoard on the one selected host unless it runs, forward, wait, clean up.

    While it forwards, a dropped SSH link is made again (with backoff, for up to
    `reconnect_for`; "0": not at all) on the same local port, and every HEALTH_EVERY_S the
    host is asked whether TensorBoard still listens (exit 1 with its log's last line if not)."""
    from gpuonboard.api.monitor import connector

    seconds, window = _tensorboard_windows(port, local_port, duration, reconnect_for)
    inv, hosts = api.load_hosts(selection, settings)
    if len(hosts) != 1:
        raise UsageError(one_host_problem([h.name for h in hosts]))
    host = hosts[0]
    logdir = remote_home_path(logdir or str(host.vars.get("tensorboard_logdir") or "runs"))
    stop = stop or threading.Event()
    connect = connector(settings, inv, retries=settings.connect_retries)
    s = _Session(host, connect, connect(host), port)
    try:
        _start_or_join(s, logdir)
        s.url = _forward_url(s, local_port)
        print(f"TensorBoard of {host.name}: {s.url}  (Ctrl-C to stop)", flush=True)
        return _forward_until(s, stop, seconds, window, reconnect_for)
    finally:
        _clean_up(s)
