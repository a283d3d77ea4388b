"""`invoke autostop` refuses to install a watcher that could never shut the box down (no cron
daemon runs) or that others could rewrite (a directory they can write), and keeps the mode of
an existing directory it is pointed at. Real SSH, real files; never a real power-off.
"""

from __future__ import annotations

import csv
import io
import re
import secrets
import subprocess
import time
from pathlib import Path

import pytest
from conftest import Project, argv_watch
from test_autostop import (
    cron_d_entries,
    cron_daemon,
    inventory,
    paths,
    replay_nvidia_smi,
    start_cron_daemon,
    steps,
)

from gpuonboard.connection import ConnectOptions, KnownHosts, open_runner
from gpuonboard.inventory import Host
from gpuonboard.testing import TestHostPool

__all__ = ["cron_daemon", "paths"]  # the fixtures, used by name


def _cron_runs() -> bool:
    return subprocess.run(["pgrep", "-x", "cron|crond|fcron"], capture_output=True).returncode == 0


@pytest.mark.alone  # `pgrep cron` on the host sees this whole machine: another test's fake cron
def test_no_cron_daemon_is_a_failure_that_installs_nothing(
    project: Project, pool: TestHostPool, paths: dict[str, Path]
) -> None:
    # a container rental without cron: the watcher was "installed" and never ran, the box never
    # shut down, and the run said changed
    if _cron_runs():
        pytest.skip("a cron daemon runs on this machine (the test host shares it)")
    inventory(project, pool, paths)
    r = project.cli("autostop", "--host", "autostop", "--idle", "30m")
    assert r.returncode == 1, r.stdout + r.stderr
    [step] = steps(project)
    assert (step["status"], step["msg"]) == (
        "failed",
        "host autostop: no cron daemon runs there (no cron or crond process), so the watcher would"
        " never run and the box would never be shut down: start cron (systemctl enable --now cron,"
        " or service cron start where there is no systemd), then rerun",
    )
    assert not paths["dir"].exists() and list(paths["cron"].iterdir()) == []


@pytest.mark.alone  # (as above)
def test_status_says_when_no_cron_daemon_runs(
    project: Project, pool: TestHostPool, paths: dict[str, Path], tmp_path: Path
) -> None:
    inventory(project, pool, paths)
    daemon = start_cron_daemon(tmp_path / "crond")
    try:
        assert project.cli("autostop", "--host", "autostop").returncode == 0
    finally:
        daemon.kill()
        daemon.wait()
    try:
        if _cron_runs():
            pytest.skip("a cron daemon runs on this machine (the test host shares it)")
        r = project.cli("autostop", "--host", "autostop", "--status")
        assert r.returncode == 1, r.stdout + r.stderr
        assert "cron daemon: NOT RUNNING (no cron or crond process): the watcher never runs" in r.stdout
        assert steps(project)[0]["msg"].endswith("; no cron daemon runs, so the watcher does not run")
    finally:
        daemon = start_cron_daemon(tmp_path / "crond")
        try:
            assert project.cli("autostop", "--host", "autostop", "--cancel").returncode == 0
        finally:
            daemon.kill()
            daemon.wait()


@pytest.mark.usefixtures("cron_daemon")
def test_an_existing_directory_keeps_its_mode(
    project: Project, pool: TestHostPool, paths: dict[str, Path]
) -> None:
    # `autostop_dir: /data`: the install made /data mode 700, locking out the training user
    paths["dir"].mkdir(parents=True)
    paths["dir"].chmod(0o755)
    (paths["dir"] / "checkpoint.pt").write_text("weights\n")
    inventory(project, pool, paths)
    r = project.cli("autostop", "--host", "autostop", "--idle", "30m")
    assert r.returncode == 0, r.stdout + r.stderr
    assert oct(paths["dir"].stat().st_mode & 0o777) == "0o755"
    assert (paths["dir"] / "autostop.sh").exists()
    assert project.cli("autostop", "--host", "autostop", "--cancel").returncode == 0
    assert sorted(p.name for p in paths["dir"].iterdir()) == ["checkpoint.pt"]
    assert oct(paths["dir"].stat().st_mode & 0o777) == "0o755"


@pytest.mark.usefixtures("cron_daemon")
def test_a_directory_others_can_write_is_refused(
    project: Project, pool: TestHostPool, paths: dict[str, Path]
) -> None:
    # cron runs the script from this directory as root every minute: anyone who can write it
    # could replace autostop.sh and run commands as root
    paths["dir"].mkdir(parents=True)
    paths["dir"].chmod(0o777)
    inventory(project, pool, paths)
    r = project.cli("autostop", "--host", "autostop", "--idle", "30m")
    assert r.returncode == 1, r.stdout + r.stderr
    [step] = steps(project)
    assert (step["status"], step["msg"]) == (
        "failed",
        f"host autostop: the autostop directory {paths['dir']} is writable by other users (mode 777),"
        " and cron runs the watcher from it as root every minute, so another user could run commands"
        " as root: set vars.autostop_dir to a directory only this login can write (and the directories"
        " above it), or remove it to use the default",
    )
    assert list(paths["dir"].iterdir()) == [] and list(paths["cron"].iterdir()) == []


@pytest.mark.usefixtures("cron_daemon")
def test_a_symlinked_directory_or_one_under_an_open_dir_is_refused(
    project: Project, pool: TestHostPool, paths: dict[str, Path], tmp_path: Path
) -> None:
    # a link passes a check of its target, and whoever can write the link's dir swaps the target
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    paths["dir"].parent.mkdir(parents=True)
    paths["dir"].symlink_to(real)
    inventory(project, pool, paths)
    r = project.cli("autostop", "--host", "autostop", "--idle", "30m")
    assert r.returncode == 1, r.stdout + r.stderr
    assert steps(project)[0]["msg"].startswith(
        f"host autostop: the autostop directory {paths['dir']} is a symbolic link, and cron runs"
    )
    assert list(real.iterdir()) == [] and list(paths["cron"].iterdir()) == []
    # a dir above it others can write (no sticky bit): they could rename it away and put theirs
    paths["dir"].unlink()
    paths["dir"].mkdir(mode=0o700)
    paths["dir"].parent.chmod(0o777)
    r = project.cli("autostop", "--host", "autostop", "--idle", "30m")
    assert r.returncode == 1, r.stdout + r.stderr
    assert steps(project)[0]["msg"].startswith(
        f"host autostop: the autostop directory {paths['dir']} lies under {paths['dir'].parent}, which"
        " is writable by other users (mode 777), and cron runs"
    )
    assert list(paths["dir"].iterdir()) == []


# `invoke autostop` over real SSH writes its config (which holds --before-shutdown's command, a
# token in it perhaps: the file is 0600 for it) through sh's stdin: the command never stands in a
# process's arguments on the host, where every user sees it (`ps`), nor in the run's log.


def test_the_before_shutdown_command_is_never_a_process_argument_or_logged(
    project: Project, pool: TestHostPool, paths: dict[str, Path], cron_daemon: None
) -> None:
    inventory(project, pool, paths)
    token = "tok-" + secrets.token_hex(8)
    before = f"curl -fsS -H 'Authorization: Bearer {token}' https://hooks.invalid/ckpt"
    with argv_watch("autostop.conf", token) as seen:  # (the test hosts' processes are this machine's)
        r = project.cli("autostop", "--host", "autostop", "--idle", "30m", "--before-shutdown", before)
    assert r.returncode == 0, r.stdout + r.stderr
    assert steps(project)[0]["status"] == "changed"
    conf = paths["dir"] / "autostop.conf"
    assert token in conf.read_text()  # it was installed ...
    assert oct(conf.stat().st_mode & 0o777) == "0o600"
    # ... but never through a command line on the host (the local CLI's own argv holds it: the
    # user typed it there)
    assert [s for s in seen if token in s and "from gpuonboard.cli import main" not in s] == [], seen
    log = (project.root / ".gpuonboard" / "logs" / f"{project.summary()['run_id']}.log").read_text()
    assert token not in log


# `invoke autostop --heartbeat` over real SSH writes, with the lease, its moment in seconds since
# boot and the boot (lease_up), so that the watcher counts the lease's age on the uptime: a step of
# the wall clock (chrony, ntpd, a resumed VM) does not make it run out early. The test host shares
# this machine's kernel, so its /proc/uptime and boot id are the ones read here.


@pytest.mark.usefixtures("cron_daemon")
def test_each_run_writes_the_leases_uptime_and_boot_and_cancel_removes_it(
    project: Project, pool: TestHostPool, paths: dict[str, Path]
) -> None:
    inventory(project, pool, paths)
    before = int(float(Path("/proc/uptime").read_text().split()[0]))
    r = project.cli("autostop", "--host", "autostop", "--heartbeat", "6h", "--no-billing-aware")
    assert r.returncode == 0, r.stdout + r.stderr
    after = int(float(Path("/proc/uptime").read_text().split()[0]))
    lease = (paths["dir"] / "lease").read_text().split()
    epoch, up, boot = (paths["dir"] / "lease_up").read_text().split()
    assert [epoch] == lease and abs(int(epoch) - time.time()) < 60
    assert before <= int(up) <= after
    assert boot == Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    r = project.cli("autostop", "--host", "autostop", "--status")
    assert r.returncode == 0, r.stdout + r.stderr
    m = re.search(r"heartbeat: lease renewed (\S+Z), expires (\S+Z)", r.stdout)
    assert m, r.stdout
    assert steps(project)[0]["status"] == "ok"
    assert project.cli("autostop", "--host", "autostop", "--cancel").returncode == 0
    assert not paths["dir"].exists()


# `invoke autostop` over real SSH on a test host whose nvidia-smi (the replay toolbox, REAL
# captured utilisation of an H200 under load: 100 %) lies on the login's PATH but not on cron's:
# the installed cron entry, run with cron's environment (PATH=/usr/bin:/bin), must still see the
# busy GPU. Before, it found no nvidia-smi, judged the box idle, and shut it down 35 minutes into
# a training run. Never a real power-off: the shutdown command is a marker.

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
LOAD_UTIL = FIXTURES / "real" / "nvidia-smi-query-gpu__h200__1gpu__driver590.48.01__load.csv"


@pytest.mark.usefixtures("cron_daemon")
def test_the_cron_entry_sees_a_busy_gpu_the_login_found_outside_crons_path(
    project: Project, pool: TestHostPool, paths: dict[str, Path], tmp_path: Path
) -> None:
    inventory(project, pool, paths)
    host = pool.hosts["autostop"]
    tool = replay_nvidia_smi(host.bin_dir, tmp_path / "replay", LOAD_UTIL)
    try:
        r = project.cli("autostop", "--host", "autostop", "--idle", "30m", "--no-billing-aware")
        assert r.returncode == 0, r.stdout + r.stderr
        assert steps(project)[0]["status"] == "changed"

        # cron's own command, in cron's environment
        [entry] = cron_d_entries((paths["cron"] / "gpuonboard-autostop").read_text())
        env = {"PATH": "/usr/bin:/bin", "HOME": "/root", "SHELL": "/bin/sh", "LOGNAME": "root"}
        subprocess.run(["/bin/sh", "-c", entry[6]], check=True, timeout=30, env=env)
        log = (paths["dir"] / "autostop.log").read_text()
        assert "busy: GPU 0 utilisation 100% > 5%; idle timer reset" in log, log
        assert f"NVIDIA_SMI={tool}\n" in (paths["dir"] / "autostop.conf").read_text()

        # the same flags again: up to date (the recorded path is stable)
        r = project.cli("autostop", "--host", "autostop", "--idle", "30m", "--no-billing-aware")
        assert r.returncode == 0 and steps(project)[0]["status"] == "ok", r.stdout
    finally:
        tool.unlink()
        project.cli("autostop", "--host", "autostop", "--cancel")
    assert not paths["dir"].exists() and not paths["marker"].exists()


# `invoke autostop --ssh-sessions` over real SSH: a session without a terminal (VS Code Remote,
# an `ssh -N -L` tunnel to a notebook, `ssh host cmd`) has no utmp entry, so `who` never lists it,
# and the box was judged idle and shut down under a user who was working on it. The watcher now
# also counts sshd's session processes (`sshd: USER@notty`). Real sshd test host, a real session
# held open, the installed cron entry run in cron's environment; the GPU replays a REAL idle H100
# capture. Never a real power-off: the shutdown command is a marker.

IDLE_UTIL = FIXTURES / "real" / "nvidia-smi-query-gpu__h100-80gb-hbm3__1gpu__driver590.48.01__idle.csv"
CRON_ENV = {"PATH": "/usr/bin:/bin", "HOME": "/root", "SHELL": "/bin/sh", "LOGNAME": "root"}


def _notty_sessions() -> int:
    """sshd session processes without a terminal on this machine (the test hosts' are here)."""
    out = subprocess.run(["ps", "-eo", "args="], capture_output=True, text=True, check=True).stdout
    return sum(1 for line in out.splitlines() if line.strip().endswith("@notty") and line.startswith("sshd"))


def _wait(what: str, ok: object, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if ok():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError(what)


@pytest.mark.alone  # the tick's `ps` sees every SSH session of this machine (another worker's too)
@pytest.mark.usefixtures("cron_daemon")
def test_a_session_without_a_terminal_keeps_the_box_up(
    project: Project, pool: TestHostPool, paths: dict[str, Path], tmp_path: Path
) -> None:
    inventory(project, pool, paths)
    h = pool.hosts["autostop"]
    tool = replay_nvidia_smi(h.bin_dir, tmp_path / "replay", IDLE_UTIL)
    args = ["autostop", "--host", "autostop", "--idle", "30m", "--no-billing-aware", "--ssh-sessions"]
    try:
        r = project.cli(*args)
        assert r.returncode == 0, r.stdout + r.stderr
        [entry] = cron_d_entries((paths["cron"] / "gpuonboard-autostop").read_text())

        def tick() -> str:
            subprocess.run(["/bin/sh", "-c", entry[6]], check=True, timeout=30, env=CRON_ENV)
            return (paths["dir"] / "autostop.log").read_text().splitlines()[-1]

        _wait("a session of another test is still open", lambda: _notty_sessions() == 0)
        assert "idle" in tick()  # (nobody connected: the idle GPU decides)
        # a user's session without a terminal, as VS Code Remote holds one
        host = Host(
            name=h.name,
            address=h.address,
            port=h.port,
            user="root",
            key_file=str(pool.client_key),
            host_key=h.fingerprint,
        )
        known = tmp_path / "known_hosts"
        runner = open_runner(host, ConnectOptions(known_hosts=known), KnownHosts(known))
        try:
            chan = runner.transport.open_session()  # type: ignore[attr-defined]
            chan.exec_command("sleep 60")
            _wait("the session never showed in ps", lambda: _notty_sessions() == 1)
            assert tick().endswith("busy: an SSH session is open (root); idle timer reset"), tick()
            r = project.cli("autostop", "--host", "autostop", "--status")
            assert "watching: GPU utilisation > 5%; logged-in users and SSH sessions" in r.stdout, r.stdout
        finally:
            runner.close()
        _wait("the session outlived its connection", lambda: _notty_sessions() == 0)
        assert "busy" not in tick()
    finally:
        tool.unlink()
        project.cli("autostop", "--host", "autostop", "--cancel")
    assert not paths["marker"].exists()


# `invoke autostop --gpu-processes` over real SSH: the flag reaches the installed config, the
# watcher on the host then counts a process holding a GPU as busy (nvidia-smi on the test host
# replays REAL captured outputs: see tests/fixtures/compute-apps/SOURCES.md), and `--status` says
# which signal kept the box busy. Never a real power-off: the shutdown command is a marker.

THREE_PROCESSES = (
    FIXTURES / "compute-apps" / "nvidia-smi-query-compute-apps__h200-mig__1gpu__driver590.48.01__load.csv"
)


def pid_column(capture: Path) -> str:
    """`--query-compute-apps=pid --format=csv,noheader` on the captured box: the real capture's
    `pid` column (picked by its header name), one value a line, no header."""
    header, *rows = list(csv.reader(io.StringIO(capture.read_text()), skipinitialspace=True))
    col = [h.strip() for h in header].index("pid")
    return "".join(f"{row[col].strip()}\n" for row in rows)


def install_replay(bin_dir: Path, files: Path) -> Path:
    """nvidia-smi on the test host: an idle H100's 0 % utilisation, an H200's three processes."""
    return replay_nvidia_smi(bin_dir, files, IDLE_UTIL, pid_column(THREE_PROCESSES))


@pytest.mark.usefixtures("cron_daemon")
def test_gpu_processes_flag_reaches_the_host_and_status_names_the_process(
    project: Project, pool: TestHostPool, paths: dict[str, Path], tmp_path: Path
) -> None:
    inventory(project, pool, paths)
    host = pool.hosts["autostop"]
    conf = paths["dir"] / "autostop.conf"
    args = ["autostop", "--host", "autostop", "--idle", "30m", "--no-billing-aware"]
    tool = install_replay(host.bin_dir, tmp_path / "replay")
    try:
        r = project.cli(*args, "--gpu-processes")
        assert r.returncode == 0, r.stdout + r.stderr
        assert steps(project)[0]["status"] == "changed"
        assert "GPU_PROCESSES=1\n" in conf.read_text()

        # the same flags again: up to date (one cron entry, nothing rewritten)
        r = project.cli(*args, "--gpu-processes")
        assert r.returncode == 0 and steps(project)[0]["status"] == "ok", r.stdout

        # a tick on the host, with the host's PATH (the replayed nvidia-smi first): busy
        env = {"PATH": f"{host.bin_dir}:/usr/bin:/bin", "GPUONBOARD_NOW": str(int(time.time()))}
        subprocess.run(["sh", str(paths["dir"] / "autostop.sh"), "tick"], check=True, timeout=30, env=env)
        log = (paths["dir"] / "autostop.log").read_text()
        assert "busy: GPU process 12249 holds GPU memory (and 2 more); idle timer reset" in log

        r = project.cli("autostop", "--host", "autostop", "--status")
        assert r.returncode == 0, r.stdout + r.stderr
        assert "watching: GPU utilisation > 5%; GPU processes (any process holding GPU memory)" in r.stdout
        assert (
            "idle since: - (busy at the last check: GPU process 12249 holds GPU memory (and 2 more))"
            in r.stdout
        )

        # a rerun without the flag turns the signal off again (the default)
        r = project.cli(*args)
        assert r.returncode == 0, r.stdout + r.stderr
        assert steps(project)[0]["msg"].startswith("update the autostop watcher (autostop.conf)")
        assert "GPU_PROCESSES=0\n" in conf.read_text()
        r = project.cli("autostop", "--host", "autostop", "--status")
        assert "GPU processes" not in r.stdout.split("watching: ", 1)[1].splitlines()[0]
    finally:
        tool.unlink()
        project.cli("autostop", "--host", "autostop", "--cancel")
    assert not paths["dir"].exists() and not paths["marker"].exists()
