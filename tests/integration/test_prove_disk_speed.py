"""`disk_speed` tells the truth about the disk and leaves nothing on it, for real: real dd (and
real fio when it is on PATH) on real filesystems, over SSH on a test host of this module's own.

- The test file (GiBs) is removed when the local run is interrupted (Ctrl-C, SIGTERM, SIGKILL)
  or the host's time limit stops the test; one that an earlier run left (a SIGKILL on the host,
  a reboot) is removed by the next run. Before: a session that ended while dd ran left a hidden
  multi-GiB `.gpuonboard-disk.*` file on the data disk (the script died of SIGPIPE before its
  EXIT trap).
- A disk that fills up during the test is one sentence (before: `failed: exit 5`).
- A directory on tmpfs is memory, not a disk (before: `direct I/O`, pass).
- A filesystem that ignores O_DIRECT (ext4 data=journal) is named, and the read starts with
  the file dropped from the page cache (before: labelled `direct I/O`, read from memory).
- fio with a directory that has a space or a colon (before: `unable to open ... job file`).

The mounts (tmpfs, a loop ext4) need root; those tests skip without it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import Project, host_entry

from gpuonboard.steps.prove import disk_checks, disk_script, parse_disk
from gpuonboard.testing import TestHost, TestHostPool, add_executable

GONE_WITHIN_S = 12.0  # the host's watcher looks every second; SIGKILL 5 s after SIGTERM
DD = shutil.which("dd") or "/bin/dd"


@pytest.fixture(scope="module")
def host(pool: TestHostPool) -> Iterator[TestHost]:
    (added,) = pool.add_many([("diskspeed", None)])
    yield added
    added.stop()


def _write(project: Project, host: TestHost, disk: Path, **extra: Any) -> None:
    entry = host_entry(host, project.pool)
    entry["vars"].update({"disk_test_dir": str(disk), "disk_test_size": "16MiB", **extra})
    project.write_inventory({"diskspeed": entry})


def _step(project: Project) -> dict[str, Any]:
    return dict(project.summary()["hosts"][0]["steps"][0])


def _test_files(disk: Path) -> list[Path]:
    return sorted(disk.glob(".gpuonboard-disk.*"))


def _stalling_dd(host: TestHost, marker: Path) -> None:
    """A dd that writes for real, then stalls like a slow fsync, touching `marker` first."""
    add_executable(
        host.bin_dir,
        "dd",
        f"""#!/bin/sh
{DD} "$@"; s=$?
case "$*" in *if=/dev/zero*) touch '{marker}'; tail -f '{marker}' >/dev/null ;; esac
exit $s
""",
    )


def _kill_stallers(tmp_path: Path) -> None:
    """What a failing test may leave: the stalling dd wrappers and their waits (by PID)."""
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and int(proc.name) != os.getpid():
            with contextlib.suppress(OSError):
                if str(tmp_path).encode() in (proc / "cmdline").read_bytes():
                    os.kill(int(proc.name), signal.SIGKILL)


def _wait(what: str, ok: Any, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not ok():
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
def test_interrupted_run_leaves_no_test_file_on_the_data_disk(
    project: Project, host: TestHost, tmp_path: Path, how: signal.Signals
) -> None:
    disk, marker = tmp_path / "data disk", tmp_path / "written"
    disk.mkdir()
    _write(project, host, disk)
    _stalling_dd(host, marker)
    cli = project.start("provision", "--host", "diskspeed", "--playbook", "prove", "--only", "disk_speed")
    try:
        _wait("dd never wrote the test file", marker.exists, 60)
        assert len(_test_files(disk)) == 1
        cli.send_signal(how)
        cli.communicate(timeout=30)
        _wait(
            f"the test file is still on the data disk {GONE_WITHIN_S:.0f} s after the run ended",
            lambda: _test_files(disk) == [],
            GONE_WITHIN_S,
        )
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.communicate()
        _kill_stallers(tmp_path)
        (host.bin_dir / "dd").unlink(missing_ok=True)


def test_host_time_limit_stops_the_test_removes_the_file_and_says_so(
    project: Project, host: TestHost, tmp_path: Path
) -> None:
    disk, marker = tmp_path / "data disk", tmp_path / "written"
    disk.mkdir()
    _write(project, host, disk, disk_timeout=6)
    _stalling_dd(host, marker)
    try:
        r = project.cli("provision", "--host", "diskspeed", "--playbook", "prove", "--only", "disk_speed")
        assert r.returncode == 1, r.stdout + r.stderr
        step = _step(project)
        assert step["status"] == "failed"
        assert step["msg"] == (
            f"disk test in {disk} did not finish within 4 s and was stopped on the host (its test file"
            " removed): a very slow or hung disk; raise vars.disk_timeout (now 6 s) or set"
            " vars.disk_test_size smaller"
        )
        _wait("the test file is still there", lambda: _test_files(disk) == [], 5)
    finally:
        _kill_stallers(tmp_path)
        (host.bin_dir / "dd").unlink(missing_ok=True)


def _dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def test_a_test_file_an_earlier_run_left_is_removed_and_reported(
    project: Project, host: TestHost, tmp_path: Path
) -> None:
    """Left by this host's earlier run (its shell is gone): removed. Another host's (a shared
    NFS dir) or a running test's: kept."""
    disk = tmp_path / "data"
    disk.mkdir()
    me = "".join(c if c.isalnum() or c in "_-" else "_" for c in socket.gethostname())
    stale = disk / f".gpuonboard-disk.{me}.{_dead_pid()}.0a1b2c3d4e5f.Xy12Zq"
    stale.write_bytes(b"\0" * (3 << 20))
    running = disk / f".gpuonboard-disk.{me}.{os.getpid()}.0a1b2c3d4e5f.Ab34Cd"
    other_host = disk / f".gpuonboard-disk.other-box.{_dead_pid()}.0a1b2c3d4e5f.Ef56Gh"
    running.write_bytes(b"1")
    other_host.write_bytes(b"2")
    _write(project, host, disk)
    r = project.cli("provision", "--host", "diskspeed", "--playbook", "prove", "--only", "disk_speed")
    step = _step(project)
    assert "removed 1 test file(s) (3.0 MiB) that an earlier interrupted disk test left in" in step["msg"], (
        r.stdout + r.stderr
    )
    assert _test_files(disk) == sorted([running, other_host])


@pytest.fixture
def mounted(tmp_path: Path) -> Iterator[Any]:
    """mount(kind, *options) -> a fresh mount point under tmp_path (unmounted afterwards)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a test filesystem needs root")
    points: list[Path] = []

    def mount(kind: str, *options: str) -> Path:
        point = tmp_path / f"mnt{len(points)}"
        point.mkdir()
        if kind == "ext4-journal":
            image = tmp_path / f"img{len(points)}"
            subprocess.run(["truncate", "-s", "200M", str(image)], check=True)
            subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True, capture_output=True)
            argv = ["mount", "-o", "loop,data=journal", str(image), str(point)]
        else:
            argv = ["mount", "-t", kind, "-o", ",".join(options) or "defaults", kind, str(point)]
        done = subprocess.run(argv, capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"cannot mount {kind} here: {done.stderr.strip()}")
        points.append(point)
        return point

    yield mount
    for point in reversed(points):
        subprocess.run(["umount", "-l", str(point)], check=False)


def test_a_disk_that_fills_up_during_the_test_is_one_sentence(
    project: Project, host: TestHost, tmp_path: Path, mounted: Any
) -> None:
    disk = mounted("tmpfs", "size=64m")
    other = disk / "another-writer"
    # another process fills the disk after the free-space check, then the real dd runs
    add_executable(
        host.bin_dir,
        "dd",
        f"""#!/bin/sh
case "$*" in *if=/dev/zero*) {DD} if=/dev/zero of='{other}' bs=1M 2>/dev/null ;; esac
exec {DD} "$@"
""",
    )
    try:
        _write(project, host, disk)
        r = project.cli("provision", "--host", "diskspeed", "--playbook", "prove", "--only", "disk_speed")
        assert r.returncode == 1, r.stdout + r.stderr
        msg = _step(project)["msg"]
        assert msg.startswith(
            f"disk test in {disk} failed: the disk filled up while the 16.0 MiB test file was written (write"
            " failed: "
        ), msg
        assert "dd: error writing" in msg, msg
        assert msg.endswith(
            "No space left on device); the test file was removed. Something else is writing there, or"
            " not all the free space df reports is usable: free space there or set vars.disk_test_size"
            " smaller"
        ), msg
        assert "Traceback" not in r.stdout + r.stderr
        assert _test_files(disk) == []
    finally:
        (host.bin_dir / "dd").unlink(missing_ok=True)


def _run_script(directory: Path, use_fio: bool = False, path: str | None = None) -> dict[str, Any]:
    env = {**os.environ, **({"PATH": path} if path else {})}
    out = subprocess.run(
        ["sh", "-c", disk_script(str(directory), 16, use_fio, "0a1b2c3d4e5f")],
        capture_output=True,
        text=True,
        env=env,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert _test_files(directory) == []
    return parse_disk(out.stdout)


def test_tmpfs_is_memory_not_a_disk(mounted: Any) -> None:
    disk = mounted("tmpfs", "size=64m")
    rules = {c.name: c for c in disk_checks(_run_script(disk), None, 0.5, str(disk), "/data")}
    assert rules["disk_device"].verdict == "fail"
    assert rules["disk_device"].actual == f"{disk} is on tmpfs (tmpfs) mounted at {disk}: memory, not a disk"


def test_filesystem_that_ignores_o_direct_is_named_and_the_read_skips_the_page_cache(mounted: Any) -> None:
    """ext4 with data=journal accepts O_DIRECT and goes through the page cache anyway."""
    if shutil.which("fincore") is None:
        pytest.skip("fincore (util-linux) not installed")
    disk = mounted("ext4-journal")
    d = _run_script(disk)
    assert d["direct"] is True and d["cached_after_write"] == d["bytes"] == 16 << 20
    assert d["dropped"] is True and d["cached_before_read"] == 0  # the read is the disk's
    rules = {c.name: c for c in disk_checks(d, None, 0.0, str(disk), None)}
    assert "O_DIRECT ignored by this filesystem: buffered, fsync'd" in rules["disk_write"].actual
    assert rules["disk_read"].verdict == "pass" and "page cache" not in rules["disk_read"].actual
    assert rules["disk_device"].actual.startswith(f"{disk} is on /dev/loop")


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed")
def test_fio_with_a_space_and_a_colon_in_the_directory(tmp_path: Path) -> None:
    disk = tmp_path / "data disk:1"
    disk.mkdir()
    d = _run_script(disk, use_fio=True)
    assert d["tool"] == "fio" and d["bytes"] == 16 << 20, d
    assert d["write_gbps"] > 0 and d["read_gbps"] > 0
