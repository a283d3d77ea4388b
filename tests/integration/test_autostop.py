"""`invoke autostop` over real SSH: install twice (one cron entry), valid cron syntax, --status,
--check changes nothing, --cancel removes everything. Never a real power-off: the shutdown
command is a marker, and every path lives in temp dirs (the test host shares this filesystem).
"""

from __future__ import annotations

import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
from conftest import Project, host_entry

from gpuonboard.testing import TestHostPool
from gpuonboard.testing.gpu_samples import csv_sample
from gpuonboard.testing.toolbox import ReplayRule, add_executable, render_script

# The test host has no nvidia-smi on its login's PATH (these tests replay one only where they
# need GPU readings): each plan says the watcher cannot see GPU activity
NO_GPU = (
    "; no nvidia-smi on the login's PATH there, so the watcher cannot see GPU activity: a run on"
    " the GPUs does not keep the box up (give --job, --pid or --container)"
)

CRON_FIELD = re.compile(r"^(\*|\d+(-\d+)?)(/\d+)?(,(\*|\d+(-\d+)?)(/\d+)?)*$")


def cron_d_entries(text: str) -> list[list[str]]:
    """Parse /etc/cron.d format strictly: comments, NAME=value, or 5 time fields + user + command."""
    entries = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", line):
            continue
        fields = line.split(None, 6)
        assert len(fields) == 7, f"not 5 time fields + user + command: {line!r}"
        ranges = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 7)]
        for value, (lo, hi) in zip(fields[:5], ranges, strict=True):
            assert CRON_FIELD.match(value), f"bad cron field {value!r} in {line!r}"
            for n in re.findall(r"\d+", value.split("/")[0]):
                assert lo <= int(n) <= hi, f"{value!r} out of range in {line!r}"
        assert re.fullmatch(r"[a-z_][a-z0-9_-]*", fields[5]), f"bad user {fields[5]!r}"
        assert "%" not in fields[6], "an unescaped % would end the command"
        entries.append(fields)
    return entries


UTIL_ARGS = "--query-gpu=utilization.gpu --format=csv,noheader,nounits"
APPS_ARGS = "--query-compute-apps=pid --format=csv,noheader"


def replay_nvidia_smi(bin_dir: Path, files: Path, util_capture: Path, apps: str | None = None) -> Path:
    """An nvidia-smi on the test host (its login's PATH, not cron's) that replays the REAL
    capture's utilisation (and, given, a compute-apps pid list): the executable, removed by the
    caller."""
    files.mkdir(parents=True, exist_ok=True)
    (files / "util.csv").write_text(f"{csv_sample(util_capture)['utilization.gpu']}\n")
    rules = [ReplayRule(UTIL_ARGS, PurePosixPath("util.csv"))]
    if apps is not None:
        (files / "apps.csv").write_text(apps)
        rules.append(ReplayRule(APPS_ARGS, PurePosixPath("apps.csv")))
    return add_executable(bin_dir, "nvidia-smi", render_script("nvidia-smi", rules, files))


def start_cron_daemon(where: Path) -> subprocess.Popen[bytes]:
    """A process named `cron` (a copy of sleep): the install refuses a box where no cron daemon
    runs (the watcher would never run), and this machine runs none. Ended by the caller, by pid."""
    where.mkdir(parents=True, exist_ok=True)
    binary = where / "cron"
    binary.write_bytes(Path("/bin/sleep").read_bytes())
    binary.chmod(0o755)
    return subprocess.Popen([str(binary), "600"])


@pytest.fixture
def cron_daemon(tmp_path: Path) -> Iterator[None]:
    daemon = start_cron_daemon(tmp_path / "crond")
    try:
        yield
    finally:
        daemon.kill()
        daemon.wait()


@pytest.fixture(autouse=True)
def _cron_for_every_test(cron_daemon: None) -> None:
    """Every test of this module installs on a box where cron runs."""


@pytest.fixture
def paths(tmp_path: Path) -> dict[str, Path]:
    """The autostop dir, the cron.d dir (made: a cron daemon reads it; the install never makes
    one) and the marker the shutdown command creates."""
    (tmp_path / "cron.d").mkdir()
    return {
        "dir": tmp_path / "var" / "autostop",
        "cron": tmp_path / "cron.d",
        "marker": tmp_path / "shutdown-ran",
    }


def inventory(project: Project, pool: TestHostPool, paths: dict[str, Path]) -> None:
    entry: dict[str, Any] = host_entry(pool.hosts["autostop"], pool)
    entry["vars"].update(
        {
            "autostop_dir": str(paths["dir"]),
            "cron_dir": str(paths["cron"]),
            "autostop_shutdown_command": f"touch {paths['marker']}",
        }
    )
    project.write_inventory({"autostop": entry})


def steps(project: Project) -> list[dict[str, Any]]:
    return list(project.summary()["hosts"][0]["steps"])


def test_install_is_idempotent_and_cancel_removes_everything(
    project: Project, pool: TestHostPool, paths: dict[str, Path]
) -> None:
    inventory(project, pool, paths)
    cron_file = paths["cron"] / "gpuonboard-autostop"

    r = project.cli("autostop", "--host", "autostop", "--idle", "30m", "--check")
    assert r.returncode == 0, r.stdout + r.stderr
    assert steps(project)[0]["msg"].startswith("would install the autostop watcher")
    assert not paths["dir"].exists() and list(paths["cron"].iterdir()) == []

    job = f"train-{paths['dir'].parent.parent.name}.py"  # no other process on this machine has it
    args = ["autostop", "--host", "autostop", "--idle", "45m", "--job", job, "--no-billing-aware"]
    r = project.cli(*args)
    assert r.returncode == 0, r.stdout + r.stderr
    assert steps(project)[0]["status"] == "changed"
    assert sorted(p.name for p in paths["dir"].iterdir()) == ["autostop.conf", "autostop.sh", "installed_at"]
    assert oct(paths["dir"].stat().st_mode & 0o777) == "0o700"
    assert oct((paths["dir"] / "autostop.conf").stat().st_mode & 0o777) == "0o600"
    assert "IDLE=2700\n" in (paths["dir"] / "autostop.conf").read_text()
    first = cron_file.read_text()

    r = project.cli(*args)
    assert r.returncode == 0, r.stdout + r.stderr
    assert [(s["status"], s["msg"]) for s in steps(project)] == [
        (
            "ok",
            f"autostop watcher in {paths['dir']} is up to date ({paths['cron']}/gpuonboard-autostop);"
            " no nvidia-smi on the login's PATH there, so the watcher cannot see GPU activity:"
            f" only --job {job!r} keeps the box up",
        )
    ]
    assert sorted(p.name for p in paths["cron"].iterdir()) == ["gpuonboard-autostop"]
    assert cron_file.read_text() == first
    entries = cron_d_entries(first)
    assert len(entries) == 1
    assert entries[0][:6] == ["*", "*", "*", "*", "*", "root"]
    assert entries[0][6].startswith(f"/bin/sh {paths['dir']}/autostop.sh tick")

    # cron's own command, run once by hand: a tick writes state and log, never the marker
    subprocess.run(["sh", "-c", entries[0][6]], check=True, timeout=20)
    assert (paths["dir"] / "state").exists() and not paths["marker"].exists()

    r = project.cli("autostop", "--host", "autostop", "--status")
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert f"cron: {paths['cron']}/gpuonboard-autostop" in out
    watched = "GPU utilisation (NOT watched: no nvidia-smi on this box)"
    assert f"watching: {watched}; job '{job}' (process, tmux or screen session)" in out
    assert "idle: act after 45m00s idle + 5m00s grace" in out
    assert "mode: idle (--no-billing-aware): acts after idle + grace" in out
    assert "would act: " in out and "(idle), unless activity resumes" in out
    assert "idle timer starts" in out  # the last log lines
    assert f"shutdown command: touch {paths['marker']}" in out

    # --check of a changed setting changes nothing
    conf = (paths["dir"] / "autostop.conf").read_text()
    r = project.cli("autostop", "--host", "autostop", "--idle", "2h", "--check")
    assert r.returncode == 0 and steps(project)[0]["msg"].startswith("would update the autostop watcher")
    assert (paths["dir"] / "autostop.conf").read_text() == conf

    r = project.cli("autostop", "--host", "autostop", "--cancel", "--check")
    assert r.returncode == 0 and cron_file.exists()
    r = project.cli("autostop", "--host", "autostop", "--cancel")
    assert r.returncode == 0, r.stdout + r.stderr
    assert steps(project)[0]["status"] == "changed"
    assert not paths["dir"].exists()
    assert list(paths["cron"].iterdir()) == []
    r = project.cli("autostop", "--host", "autostop", "--cancel")
    assert r.returncode == 0 and steps(project)[0]["msg"] == "autostop is not installed"
    r = project.cli("autostop", "--host", "autostop", "--status")
    assert "autostop is not installed" in r.stdout
    assert not paths["marker"].exists()


def test_heartbeat_lease_is_renewed_by_each_run(
    project: Project, pool: TestHostPool, paths: dict[str, Path]
) -> None:
    inventory(project, pool, paths)
    args = ["autostop", "--host", "autostop", "--heartbeat", "6h", "--max-hours", "12"]
    assert project.cli(*args).returncode == 0
    lease = paths["dir"] / "lease"
    lease.write_text("1\n")
    r = project.cli(*args)
    assert r.returncode == 0
    assert re.fullmatch(
        r"renew the heartbeat lease; max-hours deadline \S+Z \(in 1[12]h\d\dm\d\ds\)" + re.escape(NO_GPU),
        steps(project)[0]["msg"],
    ), steps(project)[0]["msg"]
    assert int(lease.read_text()) > 1
    assert "MAX_SECONDS=43200" in (paths["dir"] / "autostop.conf").read_text()
    assert project.cli("autostop", "--host", "autostop", "--cancel").returncode == 0
    assert not paths["dir"].exists()


def test_max_hours_added_to_a_running_watcher_counts_from_then(
    project: Project, pool: TestHostPool, paths: dict[str, Path]
) -> None:
    # the QA case: a watcher installed two days ago gets --max-hours 2; the deadline is two
    # hours from that run (not from the install), and the run says when it falls
    inventory(project, pool, paths)
    base = ["autostop", "--host", "autostop", "--idle", "30m", "--no-billing-aware"]
    assert project.cli(*base).returncode == 0
    two_days_ago = int(time.time()) - 2 * 86400
    (paths["dir"] / "installed_at").write_text(f"{two_days_ago}\n")

    before = int(time.time())
    r = project.cli(*base, "--max-hours", "2")
    assert r.returncode == 0, r.stdout + r.stderr
    msg = steps(project)[0]["msg"]
    assert re.fullmatch(
        r"update the autostop watcher \(max_since, autostop\.conf\);"
        r" max-hours deadline \S+Z \(in (1h59m\d\ds|2h00m00s)\)" + re.escape(NO_GPU),
        msg,
    ), msg
    since = int((paths["dir"] / "max_since").read_text())
    assert before - 5 <= since <= int(time.time()) + 5

    # the watcher's own tick with the real clock: no warning, no shutdown
    subprocess.run(["sh", str(paths["dir"] / "autostop.sh"), "tick"], check=True, timeout=20)
    assert not paths["marker"].exists()
    assert "max-hours" not in (paths["dir"] / "autostop.log").read_text()

    # the same flags again: nothing changes, the deadline stays where it was
    r = project.cli(*base, "--max-hours", "2")
    assert r.returncode == 0
    assert steps(project)[0]["status"] == "ok"
    assert int((paths["dir"] / "max_since").read_text()) == since

    # a deadline that has passed (the box was stopped past it, say) is announced, not hidden
    (paths["dir"] / "max_since").write_text(f"{two_days_ago}\n")
    r = project.cli(*base, "--max-hours", "2")
    assert r.returncode == 0
    deadline = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(two_days_ago + 7200))
    assert steps(project)[0]["msg"] == (
        f"autostop watcher in {paths['dir']} is up to date ({paths['cron']}/gpuonboard-autostop);"
        f" the max-hours deadline {deadline} has passed: the watcher warns at its next check"
        " and shuts the box down 5m00s (the grace period) after that warning" + NO_GPU
    )
    assert project.cli("autostop", "--host", "autostop", "--cancel").returncode == 0
    assert not paths["dir"].exists() and not paths["marker"].exists()


def test_cancel_while_before_shutdown_runs_prevents_the_shutdown(
    project: Project, pool: TestHostPool, paths: dict[str, Path], tmp_path: Path
) -> None:
    # a tick decides to act and runs its before_shutdown (up to 10 min); --cancel meanwhile
    # must leave the box up: the tick is stopped by the pid in its lock, and a tick that
    # survived would find its config gone before running the shutdown command
    inventory(project, pool, paths)
    started, go = tmp_path / "upload-started", tmp_path / "upload-go"
    upload = f"touch {started}; while [ ! -e {go} ]; do sleep 0.1; done"
    args = ["autostop", "--host", "autostop", "--idle", "1m", "--grace", "0", "--no-billing-aware"]
    r = project.cli(*args, "--before-shutdown", upload)
    assert r.returncode == 0, r.stdout + r.stderr
    script = str(paths["dir"] / "autostop.sh")
    now = int(time.time())
    env = {"PATH": "/usr/bin:/bin", "GPUONBOARD_NOW": str(now), "GPUONBOARD_BOOT_ID": "b1"}
    subprocess.run(["sh", script, "tick"], check=True, timeout=20, env=env)  # idle timer starts
    env["GPUONBOARD_NOW"] = str(now + 120)
    tick = subprocess.Popen(["sh", script, "tick"], env=env, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert started.exists(), "the tick never ran before_shutdown"
        r = project.cli("autostop", "--host", "autostop", "--cancel")
        assert r.returncode == 0, r.stdout + r.stderr
        # stopped by the cancel (SIGTERM to the pid in its lock), not left to finish
        assert tick.wait(timeout=20) == -signal.SIGTERM
    finally:
        go.touch()  # ends the upload loop (left to finish by the cancel)
        if tick.poll() is None:
            tick.kill()
            tick.wait()
    time.sleep(0.5)
    assert not paths["marker"].exists()
    assert not paths["dir"].exists()
    assert list(paths["cron"].iterdir()) == []


def test_bad_flag_is_a_usage_error(project: Project, pool: TestHostPool, paths: dict[str, Path]) -> None:
    inventory(project, pool, paths)
    r = project.cli("autostop", "--host", "autostop", "--idle", "5x")
    assert r.returncode == 2
    assert r.stderr.strip() == "error: autostop: --idle: '5x' is not a duration like 30s, 5m or 2h."
    r = project.cli("autostop", "--host", "autostop", "--job", "a", "--pid", "3")
    assert r.returncode == 2 and "give only one of --job, --pid and --container" in r.stderr
    assert not paths["dir"].exists()


@pytest.mark.parametrize(
    ("flag", "value", "sentence"),
    [
        (
            "--heartbeat",
            "6",
            "--heartbeat must be at least 5m (a bare number counts as seconds: write 6h for six hours),"
            " not '6'",
        ),
        *(
            (
                "--max-hours",
                v,
                f"--max-hours must be a number of hours from 0.25 to 8760 (or 0 for no deadline), not '{v}'",
            )
            for v in ("0.001", "nan", "inf", "1e400")
        ),
        *(
            (
                "--pid",
                v,
                "--pid must be a process id from 2 to 4194304 (0 and 1 are always alive,"
                f" so the box would never count as idle), not '{v}'",
            )
            for v in ("0", "1")
        ),
        ("--max-hours", "1_0", "--max-hours must be a number of hours, not '1_0'"),
        ("--gpu-threshold", "5.5", "--gpu-threshold must be a whole percentage from 0 to 99, not '5.5'"),
        (
            "--gpu-threshold",
            "100",
            "--gpu-threshold must be a whole percentage from 0 to 99 (a GPU counts as busy above it:"
            " above 100 none ever would, so a box training at 100 % would be shut down as idle), not '100'",
        ),
    ],
)
def test_out_of_range_flag_is_one_sentence_and_exit_2(
    project: Project, pool: TestHostPool, paths: dict[str, Path], flag: str, value: str, sentence: str
) -> None:
    inventory(project, pool, paths)
    r = project.cli("autostop", "--host", "autostop", flag, value)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip() == f"error: autostop: {sentence}."
    assert not paths["dir"].exists()


def test_grace_not_shorter_than_a_hard_deadline_is_one_sentence_and_exit_2(
    project: Project, pool: TestHostPool, paths: dict[str, Path]
) -> None:
    # --max-hours 0.25 --grace 2h said "deadline in 15m" while the box went down 2h later
    inventory(project, pool, paths)
    r = project.cli("autostop", "--host", "autostop", "--max-hours", "0.25", "--grace", "2h")
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip() == (
        "error: autostop: --grace must be shorter than --max-hours (15m00s), not '2h': the warning goes"
        " out one grace period before that deadline."
    )
    r = project.cli("autostop", "--host", "autostop", "--heartbeat", "6h", "--grace", "366d")
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip() == (
        "error: autostop: --grace must be shorter than --heartbeat (6h00m00s), not '366d': the warning"
        " goes out one grace period before that deadline."
    )
    assert not paths["dir"].exists()


def test_user_crontab_mode_keeps_other_entries(
    project: Project, pool: TestHostPool, paths: dict[str, Path], tmp_path: Path
) -> None:
    # a test double of `crontab` (the real one would edit this machine's root crontab)
    table = tmp_path / "crontab.txt"
    table.write_text("# mine\n0 3 * * * /usr/local/bin/backup\n")
    fake = pool.hosts["autostop"].bin_dir / "crontab"
    fake.parent.mkdir(exist_ok=True)
    fake.write_text(
        f'#!/bin/sh\ncase "$1" in -l) cat {table} ;; -) cat > {table}.new && mv {table}.new {table} ;;'
        " *) exit 2 ;; esac\n"
    )
    fake.chmod(0o755)
    try:
        inventory(project, pool, paths)
        entry = host_entry(pool.hosts["autostop"], pool)
        entry["vars"].update({"autostop_dir": str(paths["dir"]), "autostop_cron": "crontab"})
        project.write_inventory({"autostop": entry})
        for _ in range(2):
            r = project.cli("autostop", "--host", "autostop", "--no-billing-aware")
            assert r.returncode == 0, r.stdout + r.stderr
        assert (
            steps(project)[0]["msg"]
            == f"autostop watcher in {paths['dir']} is up to date (the user's crontab){NO_GPU}"
        )
        lines = table.read_text().splitlines()
        assert lines[:2] == ["# mine", "0 3 * * * /usr/local/bin/backup"]
        assert lines[2].startswith("# gpuonboard-autostop")
        assert (
            lines[3]
            == f"* * * * * /bin/sh {paths['dir']}/autostop.sh tick >>{paths['dir']}/autostop.log 2>&1"
        )
        assert len(lines) == 4
        assert "cron: the user's crontab" in project.cli("autostop", "--host", "autostop", "--status").stdout
        assert project.cli("autostop", "--host", "autostop", "--cancel").returncode == 0
        assert table.read_text() == "# mine\n0 3 * * * /usr/local/bin/backup\n"
        assert not paths["dir"].exists()
    finally:
        fake.unlink()


def test_a_host_name_with_a_line_break_never_reaches_the_cron_script(
    project: Project, pool: TestHostPool, paths: dict[str, Path], tmp_path: Path
) -> None:
    # "h1\ntouch /tmp/PWNED\n" rendered unquoted into the script's comment line became a command
    # line of its own, in a script cron runs as root every minute
    pwned = tmp_path / "PWNED"
    entry: dict[str, Any] = host_entry(pool.hosts["autostop"], pool)
    entry["vars"].update(
        {
            "autostop_dir": str(paths["dir"]),
            "cron_dir": str(paths["cron"]),
            "autostop_shutdown_command": f"touch {paths['marker']}",
        }
    )
    evil = f"h1\ntouch {pwned}\n"
    hosts = project.write_inventory({evil: entry})
    line = next(i for i, text in enumerate(hosts.read_text().splitlines(), 1) if "h1" in text)
    r = project.cli("autostop", "--idle", "30m")
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr == (
        f"error: {hosts}, line {line}: host name {evil!r} holds a line break ('\\n'); a host name must"
        " be one line of printable text: rename it.\n"
    )
    assert not paths["dir"].exists() and list(paths["cron"].iterdir()) == [] and not pwned.exists()


def test_an_install_in_the_other_cron_mode_removes_the_earlier_watchers_entry(
    project: Project, pool: TestHostPool, paths: dict[str, Path], tmp_path: Path
) -> None:
    """A watcher installed through cron.d (root's default), then again in the login's crontab
    (vars.autostop_cron: crontab) into another dir, and back. Before, the earlier entry stayed
    and cron ran both watchers: the earlier one, with its old --idle and --job, shut the box down
    under the new settings (and `--status` named only the new one)."""
    table = tmp_path / "crontab.txt"
    table.write_text("# mine\n0 3 * * * /usr/local/bin/backup\n")
    fake = pool.hosts["autostop"].bin_dir / "crontab"  # (a test double: never this machine's crontab)
    fake.parent.mkdir(exist_ok=True)
    fake.write_text(
        f'#!/bin/sh\ncase "$1" in -l) cat {table} ;; -) cat > {table}.new && mv {table}.new {table} ;;'
        " *) exit 2 ;; esac\n"
    )
    fake.chmod(0o755)
    cron_file = paths["cron"] / "gpuonboard-autostop"
    other = tmp_path / "var" / "autostop-2"
    try:
        inventory(project, pool, paths)
        r = project.cli("autostop", "--host", "autostop", "--idle", "30m", "--no-billing-aware")
        assert r.returncode == 0 and cron_file.exists(), r.stdout + r.stderr

        entry = host_entry(pool.hosts["autostop"], pool)
        entry["vars"].update(
            {
                "autostop_dir": str(other),
                "cron_dir": str(paths["cron"]),
                "autostop_cron": "crontab",
                "autostop_shutdown_command": f"touch {paths['marker']}",
            }
        )
        project.write_inventory({"autostop": entry})
        r = project.cli("autostop", "--host", "autostop", "--idle", "4h", "--no-billing-aware")
        assert r.returncode == 0, r.stdout + r.stderr
        msg = steps(project)[0]["msg"]
        assert f"{cron_file} (an earlier install's entry, removed: cron ran both watchers)" in msg, msg
        assert not cron_file.exists()  # (only the new watcher runs)
        assert f"{other}/autostop.sh tick" in table.read_text()

        inventory(project, pool, paths)  # back to cron.d
        r = project.cli("autostop", "--host", "autostop", "--idle", "30m", "--no-billing-aware")
        assert r.returncode == 0 and cron_file.exists(), r.stdout + r.stderr
        msg = steps(project)[0]["msg"]
        assert "the user's crontab (an earlier install's entry, removed: cron ran both watchers)" in msg, msg
        assert table.read_text() == "# mine\n0 3 * * * /usr/local/bin/backup\n"
    finally:
        fake.unlink()
