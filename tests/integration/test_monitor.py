"""`invoke monitor` and the SSH port forward over real sshd test hosts.

The hosts' `nvidia-smi` is a pure-sh replay (dropped with add_executable, no profile
changed) that supports `-l N` / `-lms N` by printing a timed, finite sequence of real
captured samples: idle H100 (CSV capture), loaded H200 (CSV capture), throttled H100
(GPU 0 of the real 8xH100 `-q` capture: HW Slowdown + HW Power Brake active).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, Project, host_entry

from gpuonboard import api
from gpuonboard.api import monitor, tunnel
from gpuonboard.testing import TestHost, TestHostPool, add_executable
from gpuonboard.testing.gpu_samples import csv_sample, q_sample
from gpuonboard.testing.hosts import parent_map

REAL = REPO / "tests" / "fixtures" / "real"
IDLE_CSV = REAL / "nvidia-smi-query-gpu__h100-80gb-hbm3__1gpu__driver590.48.01__idle.csv"
LOAD_CSV = REAL / "nvidia-smi-query-gpu__h200__1gpu__driver590.48.01__load.csv"
THROTTLED_Q = REAL / "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt"
ALIASES = {"clocks_throttle_reasons.active": "clocks_event_reasons.active"}
HOSTS = ("monA", "monB", "fwd")


def throttled_sample() -> dict[str, str]:
    """GPU 0 of the real 8xH100 -q capture, in --query-gpu terms (count 1: one GPU replayed)."""
    return q_sample(THROTTLED_Q)


def line(sample: dict[str, str]) -> str:
    return ", ".join(sample[ALIASES.get(f, f)] for f in monitor.MONITOR_FIELDS)


SEQUENCE = [line(csv_sample(IDLE_CSV)), line(csv_sample(LOAD_CSV)), line(throttled_sample())]
PROCESS_LINE = "GPU-00000000-0000-0000-0000-000000000000, 4242, /usr/bin/python3, 30000"


def replay_script(rounds: int = 40) -> str:
    """Pure sh: one sample without -l; with -l/-lms the sequence, `rounds` times, sleeping."""
    fields = ",".join(monitor.MONITOR_FIELDS)
    query = f"--query-gpu={fields} --format=csv,noheader,nounits"
    apps = f"--query-compute-apps={','.join(monitor.PROCESS_FIELDS)} --format=csv,noheader,nounits"
    body = "\n".join(f"  printf '%s\\n' {shlex.quote(s)}\n  nap" for s in SEQUENCE)
    return f"""#!/bin/sh
# nvidia-smi replay with -l: a timed, finite sequence of real captured samples (test fixture)
q={shlex.quote(query)}
case "$*" in
  {shlex.quote(apps)}) printf '%s\\n' {shlex.quote(PROCESS_LINE)}; exit 0 ;;
  "$q") printf '%s\\n' {shlex.quote(SEQUENCE[0])}; exit 0 ;;
  "$q -l "*) d=$4 ;;
  "$q -lms "*) d=$(printf '%d.%03d' $(($4 / 1000)) $(($4 % 1000))) ;;
  *) printf 'nvidia-smi replay: no capture for: %s\\n' "$*" >&2; exit 2 ;;
esac
s=
trap '[ -n "$s" ] && kill $s 2>/dev/null; exit 143' TERM HUP INT
nap() {{ sleep "$d" & s=$!; wait $s; s=; }}
n=0
while [ $n -lt {rounds} ]; do
{body}
  n=$((n + 1))
done
"""


@pytest.fixture(scope="module")
def hosts(pool: TestHostPool) -> Iterator[dict[str, TestHost]]:
    added = pool.add_many([(name, None) for name in HOSTS])
    for h in added:
        add_executable(h.bin_dir, "nvidia-smi", replay_script())
    yield {h.name: h for h in added}
    for h in added:
        h.stop()


def remote_processes(host: TestHost) -> list[str]:
    """Command lines of processes running in this test host's SSH sessions."""
    # (HOME, not the host's name: another xdist worker's pool has hosts of the same names)
    marker = f"\0HOME={host.home}\0".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            env = Path(f"/proc/{entry}/environ").read_bytes()
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in b"\0" + env and "sshd" not in cmd:
            found.append(f"{entry}: {cmd}")
    return found


def assert_nothing_left(*hosts: TestHost, wait: float = 3.0) -> None:
    deadline = time.monotonic() + wait
    while True:
        left = [p for h in hosts for p in remote_processes(h)]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert not left, f"still running on the test hosts: {left}"


def write_inventory(project: Project, pool: TestHostPool, hosts: dict[str, TestHost]) -> None:
    entries: dict[str, dict[str, Any]] = {}
    for name in ("monA", "monB"):
        e = host_entry(hosts[name], pool)
        e["vars"]["expect_busy"] = True
        e["order"] = {"gpu_count": 2}
        entries[name] = e
    entries["fwd"] = host_entry(hosts["fwd"], pool)
    project.write_inventory(entries)


def test_stream_shows_replayed_values_and_alerts_and_logs_json_lines(
    project: Project, pool: TestHostPool, hosts: dict[str, TestHost]
) -> None:
    write_inventory(project, pool, hosts)
    log = project.root / "samples.jsonl"
    log.write_text('{"earlier": "line"}\n')  # --log appends
    r = project.cli(
        "monitor", "--host", "monA", "--interval", "150ms", "--json", "--duration", "1.5", "--log", str(log)
    )
    assert r.returncode == 0, r.stdout + r.stderr
    docs = [json.loads(x) for x in r.stdout.splitlines() if x.strip()]
    samples = [d for d in docs if "event" not in d]
    by_name = {s["name"]: s for s in samples}
    assert {"NVIDIA H100 80GB HBM3", "NVIDIA H200"} <= set(by_name), samples
    load = by_name["NVIDIA H200"]
    assert (load["util_pct"], load["mem_used_mib"], load["mem_total_mib"], load["temp_c"]) == (
        100,
        32362,
        143771,
        52,
    )
    assert (load["power_w"], load["power_limit_w"]) == (627.4, 700.0)
    assert load["top_process"] == "4242 python3 (30000 MiB)"
    assert load["alerts"] == []
    idle = next(s for s in samples if s["util_pct"] == 0 and "gpu_idle" in s["throttle"])
    assert idle["alerts"] == ["idle (0%) while a job is expected"]
    throttled = [s for s in samples if "hw_slowdown" in s["throttle"]]
    assert throttled, samples
    assert throttled[0]["alerts"][0] == "throttled: hw_power_brake_slowdown,hw_slowdown"
    lines = log.read_text().splitlines()
    assert lines[0] == '{"earlier": "line"}'
    logged = [json.loads(x) for x in lines[1:]]
    assert [d for d in logged if "event" not in d] == samples
    assert_nothing_left(hosts["monA"])


def test_table_shows_values_alerts_and_missing_gpu(
    project: Project, pool: TestHostPool, hosts: dict[str, TestHost]
) -> None:
    write_inventory(project, pool, hosts)
    r = project.cli("monitor", "--host", "monA,monB", "--interval", "150ms", "--duration", "1")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "monA" in r.stdout and "monB" in r.stdout
    assert "GPU missing: 1 of 2 ordered" in r.stdout
    assert re.search(r"\d+/\d+ MiB", r.stdout) and "/700 W" in r.stdout
    assert_nothing_left(hosts["monA"], hosts["monB"])


def test_once_json(project: Project, pool: TestHostPool, hosts: dict[str, TestHost]) -> None:
    write_inventory(project, pool, hosts)
    r = project.cli("monitor", "--host", "monA,monB", "--once", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    assert [s["host"] for s in doc["samples"]] == ["monA", "monB"]
    s = doc["samples"][0]
    assert (s["index"], s["name"], s["util_pct"], s["temp_c"], s["power_w"]) == (
        0,
        "NVIDIA H100 80GB HBM3",
        0,
        41,
        69.85,
    )
    assert s["alerts"] == ["idle (0%) while a job is expected"]
    assert doc["hosts"]["monA"] == {
        "status": "ok",
        "error": None,
        "alerts": ["GPU missing: 1 of 2 ordered"],
        "gpus": 1,
    }
    assert_nothing_left(hosts["monA"], hosts["monB"])


def test_ctrl_c_exits_cleanly_closing_every_channel(
    project: Project, pool: TestHostPool, hosts: dict[str, TestHost]
) -> None:
    write_inventory(project, pool, hosts)
    proc = subprocess.Popen(
        [*project.cli_argv(), "monitor", "--host", "monA,monB", "--interval", "1s", "--json"],
        cwd=project.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=project.env(),
    )
    assert proc.stdout is not None
    seen: set[str] = set()
    deadline = time.monotonic() + 10
    while len(seen) < 2 and time.monotonic() < deadline:
        seen.add(json.loads(proc.stdout.readline())["host"])
    assert seen == {"monA", "monB"}
    assert remote_processes(hosts["monA"])  # the stream runs remotely (-l 1: sleeping)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    assert_nothing_left(hosts["monA"], hosts["monB"])


def test_stopped_host_goes_stale_and_recovers_while_the_other_keeps_updating(
    project: Project, pool: TestHostPool, hosts: dict[str, TestHost]
) -> None:
    write_inventory(project, pool, hosts)
    settings = api.Settings(project=project.root)
    inv, selected = api.load_hosts(api.Selection(str(project.root / "inventory"), ["monA", "monB"]), settings)
    opts = monitor.MonitorOptions(interval=0.15, backoff=0.3, backoff_max=0.6, process_every=0)
    mon = monitor.Monitor(selected, monitor.connector(settings, inv), opts)

    def state(name: str) -> monitor.HostState:
        return next(s for s in mon.snapshot() if s.name == name)

    def wait_for(cond: Any, what: str, timeout: float = 8) -> None:
        deadline = time.monotonic() + timeout
        while not cond():
            assert time.monotonic() < deadline, f"timed out waiting for {what}: {mon.snapshot()}"
            time.sleep(0.05)

    mon.start()
    try:
        wait_for(lambda: state("monA").samples > 0 and state("monB").samples > 0, "first samples")
        hosts["monA"].stop()
        wait_for(lambda: state("monA").status == "stale", "monA stale")
        b_before = state("monB").samples
        time.sleep(0.8)  # monA keeps failing to reconnect meanwhile
        assert state("monA").status == "stale" and state("monA").reconnects >= 1
        assert state("monB").status == "live" and state("monB").samples > b_before
        table = monitor.render_table(mon.snapshot(), 0.15)
        from rich.console import Console

        con = Console(width=200, record=True)
        con.print(table)
        assert "monA STALE" in con.export_text()
        hosts["monA"].start()
        a_before = state("monA").samples
        wait_for(
            lambda: state("monA").status == "live" and state("monA").samples > a_before, "monA recovered"
        )
    finally:
        hosts["monA"].start()
        mon.stop()
    assert_nothing_left(hosts["monA"], hosts["monB"])


def test_port_forward_carries_http_over_ssh(
    project: Project, pool: TestHostPool, hosts: dict[str, TestHost]
) -> None:
    write_inventory(project, pool, hosts)
    h = hosts["fwd"]
    settings = api.Settings(project=project.root)
    inv, (host,) = api.load_hosts(api.Selection(str(project.root / "inventory"), ["fwd"]), settings)
    runner = monitor.connector(settings, inv)(host)
    (h.home / "www").mkdir(exist_ok=True)
    (h.home / "www" / "hello.txt").write_text("hello through ssh\n")
    port = tunnel.free_port(h.address)
    pid = tunnel.start_background(
        runner,
        ["python3", "-m", "http.server", "--bind", h.address, "--directory", str(h.home / "www"), str(port)],
        str(h.home / "http.log"),
    )
    try:
        assert tunnel.wait_remote_port(runner, h.address, port, timeout=10)
        with tunnel.Forwarder(runner, h.address, port) as fwd:
            assert fwd.local_port and fwd.local_port != port
            url = f"http://127.0.0.1:{fwd.local_port}/hello.txt"
            results: list[str] = []

            def get() -> None:
                with urllib.request.urlopen(url, timeout=5) as resp:
                    results.append(resp.read().decode())

            threads = [threading.Thread(target=get) for _ in range(3)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(10)
            assert results == ["hello through ssh\n"] * 3
        assert "GET /hello.txt" in (h.home / "http.log").read_text()
    finally:
        tunnel.stop_background(runner, pid)
        runner.close()
    assert_nothing_left(h)


def test_tensorboard_command_starts_forwards_and_stops(
    project: Project, pool: TestHostPool, hosts: dict[str, TestHost]
) -> None:
    """`invoke tensorboard` end to end; the host's `python3 -m tensorboard.main` is a stand-in
    (http.server on the requested --host/--port) since TensorBoard is not installed here."""
    write_inventory(project, pool, hosts)
    h = hosts["fwd"]
    add_executable(h.bin_dir, "python3", FAKE_TENSORBOARD)
    logdir = h.home / "runs"
    logdir.mkdir(exist_ok=True)
    (logdir / "index.html").write_text("fake tensorboard\n")
    rport = tunnel.free_port("127.0.0.1")
    proc = subprocess.Popen(
        [
            *project.cli_argv(),
            "tensorboard",
            "--host",
            "fwd",
            "--logdir",
            str(logdir),
            "--port",
            str(rport),
            "--local-port",
            "0",
        ],
        cwd=project.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=project.env(),
    )
    try:
        assert proc.stdout is not None
        url = ""
        deadline = time.monotonic() + 15
        while not url and time.monotonic() < deadline:
            m = re.search(r"(http://127\.0\.0\.1:\d+/)", proc.stdout.readline())
            url = m.group(1) if m else ""
        assert url, proc.stderr.read() if proc.poll() is not None and proc.stderr else "no URL"
        with urllib.request.urlopen(url, timeout=5) as resp:
            assert resp.read().decode() == "fake tensorboard\n"
        assert any("http.server" in p for p in remote_processes(h))
        # its log: in the login's private cache dir (never a fixed name under /tmp)
        cache = h.home / ".cache" / "gpuonboard"
        assert (cache / f"tensorboard-{rport}.log").is_file()
        assert oct(cache.stat().st_mode & 0o777) == "0o700"
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
        (h.bin_dir / "python3").unlink()
    assert proc.returncode == 0, err
    assert "stopped TensorBoard" in out
    assert not (h.home / ".cache" / "gpuonboard" / f"tensorboard-{rport}.log").exists()  # removed
    assert_nothing_left(h)


FAKE_TENSORBOARD = """#!/bin/sh
# python3 on the test host: `-m tensorboard.main` serves --logdir over http.server on the given
# --host/--port, with `tensorboard.main` kept in its command line, as the real one has it
if [ "$1 $2" = "-m tensorboard.main" ]; then
  shift 2; port=6006; addr=127.0.0.1; dir=.
  while [ $# -gt 0 ]; do
    case "$1" in --port) port=$2; shift ;; --host) addr=$2; shift ;; --logdir) dir=$2; shift ;; esac; shift
  done
  exec /usr/bin/python3 -c 'import runpy, sys; sys.argv = ["http.server", *sys.argv[2:]]; \
runpy.run_module("http.server", run_name="__main__")' \\
    tensorboard.main --bind "$addr" --directory "$dir" "$port"
fi
exec /usr/bin/python3 "$@"
"""


def test_tensorboard_missing_on_the_host_is_one_sentence(
    project: Project, pool: TestHostPool, hosts: dict[str, TestHost]
) -> None:
    """No TensorBoard on the host: paramiko's 'Secsh channel N open FAILED' lines (8 of them)
    came before the sentence on stderr."""
    write_inventory(project, pool, hosts)
    h = hosts["fwd"]
    r = subprocess.run(
        [*project.cli_argv(), "tensorboard", "--host", "fwd", "--logdir", str(h.home), "--local-port", "0"],
        cwd=project.root,
        capture_output=True,
        text=True,
        env=project.env(),
        timeout=120,
    )
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stderr.startswith(  # one sentence, nothing before it
        "error: host fwd: TensorBoard did not start on port 6006: /usr/bin/python3: Error while finding"
        " module specification for 'tensorboard.main' (ModuleNotFoundError: No module named 'tensorboard')"
        " (is `tensorboard` installed for the host's python3?)."
    ), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "stopped TensorBoard" not in r.stdout, r.stdout  # (it never came up: nothing was stopped)
    assert_nothing_left(h)


def session_pids(host: TestHost) -> list[int]:
    """The per-connection sshd processes of a test host (children of its listening daemon)."""
    return [pid for pid, parent in parent_map().items() if parent == host.pid]


def start_tensorboard(
    project: Project, h: TestHost, logdir: Path, rport: int, *extra: str
) -> tuple[subprocess.Popen[str], str]:
    """`gpuonboard tensorboard` against the fake TensorBoard; (the process, its URL)."""
    add_executable(h.bin_dir, "python3", FAKE_TENSORBOARD)
    logdir.mkdir(exist_ok=True)
    (logdir / "index.html").write_text("fake tensorboard\n")
    proc = subprocess.Popen(
        [*project.cli_argv(), "tensorboard", "--host", "fwd", "--logdir", str(logdir)]
        + ["--port", str(rport), "--local-port", "0", *extra],
        cwd=project.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=project.env(),
    )
    assert proc.stdout is not None
    url = ""
    deadline = time.monotonic() + 15
    while not url and time.monotonic() < deadline and proc.poll() is None:
        m = re.search(r"(http://127\.0\.0\.1:\d+/)", proc.stdout.readline())
        url = m.group(1) if m else ""
    assert url, proc.stderr.read() if proc.stderr else "no URL"
    with urllib.request.urlopen(url, timeout=5) as resp:
        assert resp.read().decode() == "fake tensorboard\n"
    return proc, url


def test_tensorboard_is_stopped_over_a_new_connection_when_the_link_dropped(
    project: Project, pool: TestHostPool, hosts: dict[str, TestHost]
) -> None:
    """The link dropped (the host's sshd session died, the daemon lives): the TensorBoard this
    command started (nohup, detached) was left running there, holding its port, with a 'kill
    PID' sentence; now a new connection stops it and removes its log."""
    write_inventory(project, pool, hosts)
    h = hosts["fwd"]
    rport = tunnel.free_port("127.0.0.1")
    proc, _ = start_tensorboard(project, h, h.home / "runs-drop", rport, "--reconnect-for", "0")
    try:
        assert any("tensorboard.main" in p for p in remote_processes(h))
        for pid in session_pids(h):
            os.kill(pid, signal.SIGTERM)  # the link drops; sshd itself keeps listening
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        (h.bin_dir / "python3").unlink()
        deadline = time.monotonic() + 20  # (a loaded machine is slow to end them)
        while True:
            left = [int(p.split(":")[0]) for p in remote_processes(h) if "tensorboard.main" in p]
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        for pid in left:  # (a failure here must not fail the other tests on this host)
            os.kill(pid, signal.SIGTERM)
    assert not left, out + err
    assert proc.returncode == 3, out + err
    assert "the SSH connection dropped" in err and "Traceback" not in err
    assert "stopped TensorBoard" in out and "could not stop" not in err, out + err
    assert not (h.home / ".cache" / "gpuonboard" / f"tensorboard-{rport}.log").exists()
    assert_nothing_left(h)


def test_tensorboard_sigterm_stops_it_and_exits_143(
    project: Project, pool: TestHostPool, hosts: dict[str, TestHost]
) -> None:
    write_inventory(project, pool, hosts)
    h = hosts["fwd"]
    rport = tunnel.free_port("127.0.0.1")
    proc, _ = start_tensorboard(project, h, h.home / "runs-term", rport)
    try:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        (h.bin_dir / "python3").unlink()
    assert proc.returncode == 143, out + err  # the exit code of a terminated command, not 0
    assert "stopped TensorBoard" in out
    assert_nothing_left(h)


def test_tensorboard_never_kills_a_process_that_took_its_pid(
    project: Project, pool: TestHostPool, hosts: dict[str, TestHost]
) -> None:
    """After our TensorBoard ended (and the host perhaps rebooted), its PID can belong to
    someone's training job: the stop leaves a process without `tensorboard.main` alone."""
    h = hosts["fwd"]
    write_inventory(project, pool, hosts)
    settings = api.Settings(project=project.root)
    inv, (host,) = api.load_hosts(api.Selection(str(project.root / "inventory"), ["fwd"]), settings)
    runner = monitor.connector(settings, inv)(host)
    other = tunnel.start_background(runner, ["sleep", "300"], str(h.home / "sleep.log"))
    try:
        assert tunnel.stop_background(runner, other, tunnel.TENSORBOARD_MARK)  # "gone": not ours
        time.sleep(0.3)
        assert f"{other}: sleep 300 " in remote_processes(h)  # and still running
        assert tunnel.stop_background(runner, other, "sleep")
        assert_nothing_left(h)  # (no other test's process runs on fwd meanwhile)
    finally:
        runner.run(shlex.join(["kill", str(other)]))
        runner.close()
    assert_nothing_left(h)


def test_monitor_sigterm_exits_143_closing_every_channel(
    project: Project, pool: TestHostPool, hosts: dict[str, TestHost]
) -> None:
    write_inventory(project, pool, hosts)
    proc = project.start("monitor", "--host", "monA", "--interval", "1s", "--json")
    assert proc.stdout is not None
    assert json.loads(proc.stdout.readline())["host"] == "monA"
    assert remote_processes(hosts["monA"])
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=15)
    assert proc.returncode == 143, err  # as the exit code table says, not 0
    assert "Traceback" not in err
    assert_nothing_left(hosts["monA"])


def test_once_table_on_an_80_column_terminal_shows_util_temp_and_alerts(
    project: Project, pool: TestHostPool, hosts: dict[str, TestHost]
) -> None:
    """The tests ran with COLUMNS=200; at 80 (a pipe, a default terminal) util and temp read
    '…' and the alerts column had no width at all."""
    write_inventory(project, pool, hosts)
    r = subprocess.run(
        [*project.cli_argv(), "monitor", "--host", "monA", "--once"],
        cwd=project.root,
        capture_output=True,
        text=True,
        env={**project.env(), "COLUMNS": "80"},
        timeout=60,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert max(len(x) for x in r.stdout.splitlines()) <= 80
    row = next(x for x in r.stdout.splitlines() if "H100 80GB HBM3" in x)  # the real idle capture
    assert " 0% " in row and " 41C " in row and "70/700 W" in row, r.stdout
    assert "monA: GPU missing: 1 of 2 ordered" in r.stdout
    assert "monA gpu 0: idle (0%) while a job is expected" in r.stdout


def test_a_stream_that_ends_says_why(project: Project, pool: TestHostPool) -> None:
    """A box without its driver (profile no-driver: no nvidia-smi on PATH) went stale with
    'the nvidia-smi stream ended'; the host's own words say why."""
    h = pool.hosts.get("monNoDriver") or pool.add("monNoDriver", "no-driver")
    project.write_inventory({"monNoDriver": host_entry(h, pool)})
    r = project.cli("monitor", "--host", "monNoDriver", "--json", "--interval", "150ms", "--duration", "1.5")
    assert r.returncode == 0, r.stdout + r.stderr
    events = [json.loads(x) for x in r.stdout.splitlines() if x.strip()]
    stale = [e for e in events if e.get("event") == "stale"]
    assert stale, events
    assert re.fullmatch(r"nvidia-smi exited 127: .*nvidia-smi: not found", stale[0]["error"]), stale[0]


def test_json_into_a_reader_that_left_exits_141_quietly(
    project: Project, pool: TestHostPool, hosts: dict[str, TestHost]
) -> None:
    """`monitor --json | head -n 2`: the host worker died of BrokenPipeError (a traceback on
    stderr) and the monitor went on forever, its reader gone, never exiting."""
    write_inventory(project, pool, hosts)
    proc = project.start("monitor", "--host", "monA", "--interval", "150ms", "--json")
    assert proc.stdout is not None and proc.stderr is not None
    assert json.loads(proc.stdout.readline())["host"] == "monA"
    proc.stdout.close()  # the reader leaves
    try:
        proc.wait(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = proc.stderr.read()
    assert proc.returncode == 141, err
    assert err == ""
    assert_nothing_left(hosts["monA"])


@pytest.mark.parametrize("once", [False, True], ids=["watch", "once"])
def test_a_log_file_that_stops_taking_lines_is_one_sentence(
    project: Project, pool: TestHostPool, hosts: dict[str, TestHost], once: bool
) -> None:
    """--log on a full disk (/dev/full): 'internal error (OSError ...)', exit 70, and (watching)
    a dead host worker with a traceback while the monitor ran on without logging."""
    write_inventory(project, pool, hosts)
    extra = ["--once"] if once else ["--interval", "150ms", "--duration", "20"]
    r = project.cli("monitor", "--host", "monA", "--log", "/dev/full", *extra)
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stderr == (
        "error: --log /dev/full: cannot write to it any more (No space left on device); the monitor"
        " stopped: free some space there or pass another --log file.\n"
    )
    assert_nothing_left(hosts["monA"])
