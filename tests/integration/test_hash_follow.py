"""The host hashes big files while rsync writes them (transfer/follow.py, sh/hash_follow.sh):
real sshd test host, real rsync, the real script run by the host's sh. A hash counts only for
the inode that landed under the file's real name, whole."""

from __future__ import annotations

import contextlib
import hashlib
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from conftest import Project, host_entry
from test_dataset_growing import _ssh_config

from gpuonboard import transfer
from gpuonboard.sh import load
from gpuonboard.transfer import follow
from gpuonboard.transfer.verify import SHA256_FN

pytestmark = pytest.mark.skipif(shutil.which("rsync") is None, reason="rsync not installed")

MIB = 1 << 20


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _left(marker: str, seconds: float = 10) -> list[int]:
    """Processes of this machine (the test hosts' among them) whose command line holds `marker`
    `seconds` from now (at once when there are none)."""
    deadline = time.monotonic() + seconds
    while True:
        out = []
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                if marker.encode() in cmdline.read_bytes():
                    out.append(int(cmdline.parent.name))
            except OSError:
                continue
        if not out or time.monotonic() > deadline:
            return out
        time.sleep(0.1)


def test_the_host_hashes_what_rsync_writes_as_it_arrives_and_only_what_landed(
    project: Project, tmp_path: Path
) -> None:
    config, alias = _ssh_config(project, tmp_path)
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    # (2 and 3 s at 2 MiB/s: the follower, 4 looks a second, takes b up once a landed; a host
    # so loaded that it comes 3 s late would leave b to the ordinary check, by design)
    a, b = os.urandom(4 * MIB), os.urandom(6 * MIB)
    (src / "a.bin").write_bytes(a)
    (src / "sub" / "b bin").write_bytes(b)
    target_dir = project.pool.hosts["dataset"].home / f"follow-{os.getpid()}"
    target_dir.mkdir()
    target = str(target_dir)
    files = [follow.entry(target, r) for r in ("a.bin", "sub/b bin", "never.bin")]

    follower = follow.Follower(["ssh", "-F", str(config), alias], files)
    run = transfer.run_rsync(transfer.rsync_argv(src, target, config, alias, bwlimit="2m"))
    assert run.exit_code == 0, run.stderr
    sums = follower.sums()
    # both files, hashed from the host's disk as they grew; nothing for a file never written
    assert sums == {"a.bin": _sha(a), "sub/b bin": _sha(b)}
    assert not _left(target)  # (the host's side ends with its session: shell.SESSION_POLL_S)


def test_a_resumed_file_is_hashed_as_rsync_writes_its_partial(project: Project, tmp_path: Path) -> None:
    """A file an interrupted upload left a partial of (in the partial dir, which rsync 3.5.0
    writes into in place; others write a temp file beside the target) is
    hashed as it arrives too: it had been left to the read after the upload."""
    config, alias = _ssh_config(project, tmp_path)
    src = tmp_path / "src"
    src.mkdir()
    data = os.urandom(5 * MIB)
    (src / "big.bin").write_bytes(data)
    target_dir = project.pool.hosts["dataset"].home / f"follow-resumed-{os.getpid()}"
    (target_dir / transfer.PARTIAL_DIR).mkdir(parents=True)
    (target_dir / transfer.PARTIAL_DIR / "big.bin").write_bytes(data[: 2 * MIB])
    files = [follow.entry(str(target_dir), "big.bin", len(data))]

    follower = follow.Follower(["ssh", "-F", str(config), alias], files)
    run = transfer.run_rsync(transfer.rsync_argv(src, str(target_dir), config, alias, bwlimit="2m"))
    assert run.exit_code == 0, run.stderr
    assert follower.sums() == {"big.bin": _sha(data)}
    assert (target_dir / "big.bin").read_bytes() == data


def test_a_follower_over_the_master_connection_ends_on_the_host_when_it_is_closed(
    project: Project, tmp_path: Path
) -> None:
    config, alias = _ssh_config(project, tmp_path)
    control = Path(tempfile.mkdtemp(prefix="gpob-test-"))
    opts = transfer.start_master(config, alias, control)
    assert opts, "no master connection"
    try:
        target = str(project.pool.hosts["dataset"].home / f"never-{os.getpid()}")
        ssh = ["ssh", "-F", str(config), *opts, alias]
        follower = follow.Follower(ssh, [follow.entry(target, "big.bin")])
        deadline = time.monotonic() + 20
        while not _left(target, seconds=0) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _left(target, seconds=0), "the follower never ran on the host"
        started = time.monotonic()
        assert follower.sums() == {}  # (it saw no file: nothing to wait for)
        assert time.monotonic() - started < 5  # (not the 10 s a file it never saw once cost)
        # its session shares the master's sshd, which lives on: its stdin's end stopped it
        assert not _left(target)
    finally:
        transfer.stop_master(config, alias, opts)
        shutil.rmtree(control, ignore_errors=True)


def _script_follower(
    tmp_path: Path, final: Path, env: dict[str, str] | None = None, size: int = -1
) -> subprocess.Popen[str]:
    """hash_follow.sh for one file (`final`, of `size` bytes), run by this machine's sh as a
    host runs it."""
    args = [str(final.parent), final.name, str(final), str(size)]
    script = SHA256_FN + "\n" + load("hash_follow")
    return subprocess.Popen(
        ["sh", "-c", script, "sh", *args],
        stdin=subprocess.PIPE,  # (its end stops the script)
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env=env,
    )


def _begun(proc: subprocess.Popen[str], word: str = "-") -> bool:
    """Whether the follower says it began to read a file (its "0 -"; lines before it are
    skipped; or another `word`), then time for two of its looks."""
    assert proc.stdout is not None
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        line = proc.stdout.readline()
        if line == f"0 {word}\n":
            time.sleep(0.6)  # (hash_follow.sh looks every 0.25 s)
            return True
        if not line:
            break
    return False


def _stop(proc: subprocess.Popen[str]) -> list[str]:
    """The follower's lines from here on, stopped: all but its "+" (read more) lines."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)  # (its group: the subshells it started too)
    if proc.stdin is not None and proc.stdin.closed:
        proc.stdin = None  # (communicate would flush it)
    out, _ = proc.communicate(timeout=10)
    return [line for line in out.splitlines() if not line.endswith(" +")]


def test_a_written_file_that_never_lands_under_its_name_gets_no_hash(tmp_path: Path) -> None:
    final = tmp_path / "f.bin"
    proc = _script_follower(tmp_path, final)
    temp = tmp_path / ".f.bin.Ab12Cd"  # (rsync's temp name)
    temp.write_bytes(b"x" * MIB)
    assert _begun(proc)
    temp.rename(tmp_path / "elsewhere.bin")  # (moved, not landed: e.g. an interrupted rsync's partial)
    assert _begun(proc, "x")  # (given up: not at its paths any more)
    assert _stop(proc) == []  # (and nothing else: no hash)


@pytest.mark.parametrize("reading", [True, False])
def test_a_follower_whose_stdin_closes_ends_with_all_it_started(tmp_path: Path, reading: bool) -> None:
    final = tmp_path / "f.bin"
    proc = _script_follower(tmp_path, final)
    if reading:  # (a file it reads, not landed yet: its reading subshell runs too)
        (tmp_path / ".f.bin.Ab12Cd").write_bytes(b"x" * MIB)
        assert _begun(proc)
    time.sleep(0.6)
    assert proc.poll() is None  # (still following)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.close()  # the caller is done
    try:
        assert proc.wait(timeout=10) != 0
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and _group_alive(proc.pid):
            time.sleep(0.05)
        assert not _group_alive(proc.pid)
    finally:
        _stop(proc)  # (what a failure left)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_file_replaced_by_another_write_is_hashed_as_the_one_that_landed(tmp_path: Path) -> None:
    final = tmp_path / "f.bin"
    proc = _script_follower(tmp_path, final)
    first = tmp_path / ".f.bin.Ab12Cd"
    first.write_bytes(b"stale" * 1000)
    assert _begun(proc)  # (read by now)
    first.unlink()  # rsync gave that one up and writes the file again
    second, good = tmp_path / ".f.bin.Zz98Yy", os.urandom(MIB)
    with second.open("wb") as f:
        f.write(good[: MIB // 2])
        f.flush()
        assert _begun(proc)  # (what exists of it is read by now)
        f.write(good[MIB // 2 :])
    second.rename(final)
    deadline = time.monotonic() + 10
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _stop(proc) == [f"0 {_sha(good)}"]


def test_a_file_read_to_its_size_is_hashed_and_the_follower_ends_soon_after_it_landed(
    tmp_path: Path,
) -> None:
    """The caller (the upload's verification) waits for the hash and then for the follower's
    end: a file read to its size is looked at again 20 ms later, not a nap (0.25 s) later, and
    no look follows the last file's hash. Here a nap lasts 3 s: either would take that long."""
    spy = tmp_path / "bin"
    spy.mkdir()
    real = shutil.which("sleep")
    (spy / "sleep").write_text(f'#!/bin/sh\n[ "$1" = 0.02 ] && exec {real} 0.02\nexec {real} 3\n')
    (spy / "sleep").chmod(0o755)
    final, temp, data = tmp_path / "f.bin", tmp_path / ".f.bin.Ab12Cd", os.urandom(MIB)
    temp.write_bytes(data)
    env = {**os.environ, "PATH": f"{spy}:{os.environ['PATH']}"}
    proc = _script_follower(tmp_path, final, env, size=len(data))
    try:
        assert proc.stdout is not None
        assert [proc.stdout.readline() for _ in range(2)] == ["0 -\n", "0 +\n"]  # (read whole)
        landed = time.monotonic()
        temp.rename(final)
        assert proc.stdout.readline() == f"0 {_sha(data)}\n"
        hashed = time.monotonic()
        assert hashed - landed < 1.5  # (not at the next nap's end: 3 s)
        assert proc.wait(timeout=10) == 0
        assert time.monotonic() - hashed < 1.5  # (not one more nap)
    finally:
        _stop(proc)


def test_a_stale_temp_file_read_is_not_taken_for_the_file_that_landed(tmp_path: Path) -> None:
    final = tmp_path / "f.bin"
    stale = tmp_path / ".f.bin.Aaaaaa"  # (an earlier writer's temp, still there)
    stale.write_bytes(b"stale" * 1000)
    proc = _script_follower(tmp_path, final)
    assert _begun(proc)  # (read by now)
    other = tmp_path / ".f.bin.Zzzzzz"
    other.write_bytes(os.urandom(MIB))
    other.rename(final)  # another inode lands: what was read proves nothing about it
    time.sleep(0.6)
    assert _stop(proc) == []


def test_the_follower_is_told_each_files_size_where_it_is_known() -> None:
    """The biggest files go to the follower with their sizes (`biggest`, `entry`): its command
    carries DIR NAME FINAL SIZE per file, -1 where the size is not known (a growing file)."""
    big = follow.FOLLOW_MIN
    assert follow.biggest([("s", 1), ("b", big + 1), ("a", big)]) == [("b", big + 1), ("a", big)]
    files = [follow.entry("/data/ds", "sub/b.bin", big + 1), follow.Followed("g.age", "/p", "g", "/data/g")]
    assert [f.size for f in files] == [big + 1, -1]
    command = follow.follow_command(files)
    tail = f"/data/ds/sub b.bin /data/ds/sub/b.bin {big + 1} /p g /data/g -1"
    assert tail in command.replace("'", "")


def test_the_followers_lines_are_read_strictly() -> None:
    h = "ab" * 32
    assert follow.parse_line(f"1 {h}\n", 2) == (1, h)
    assert [follow.parse_line(f"0 {w}\n", 2) for w in "-+x"] == [(0, "-"), (0, "+"), (0, "x")]
    for bad in (f"2 {h}", f"x {h}", f"1 {h[:-1]}", f"1 {h[:-1]}g", "1", "", f"-1 {h}", f"1  {h}", "1 y"):
        assert follow.parse_line(bad, 2) is None, bad


def test_a_file_already_at_its_name_is_not_taken_for_the_one_being_sent(tmp_path: Path) -> None:
    final = tmp_path / "f.bin"
    final.write_bytes(b"the old version")  # (the host's copy rsync is about to replace)
    proc = _script_follower(tmp_path, final)
    time.sleep(0.3)
    assert _stop(proc) == []


@pytest.mark.parametrize("size", [follow.FOLLOW_MIN + MIB])
def test_a_big_file_uploaded_is_verified_by_the_hash_taken_as_it_arrived(
    project: Project, tmp_path: Path, size: int
) -> None:
    src = tmp_path / "local" / "corpus"
    src.mkdir(parents=True)
    big = os.urandom(size)
    (src / "big.bin").write_bytes(big)
    (src / "small.txt").write_bytes(b"small\n")
    data_dir = tmp_path / "remote data"
    entry = host_entry(project.pool.hosts["dataset"], project.pool, data_dir=str(data_dir))
    entry["vars"]["dataset"] = str(src)
    project.write_inventory({"dataset": entry})

    # (4 s at 16 MiB/s: time for the follower to start under load)
    r = project.cli("sync", "--host", "dataset", "--bwlimit", "16m", timeout=120)
    s = project.summary()["hosts"][0]["steps"][0]
    assert r.returncode == 0 and s["status"] == "changed", r.stdout + r.stderr
    assert "2 files verified by sha256" in s["msg"], s["msg"]
    assert s["diff"]["hashed_arriving"] == 1  # the big one; the small one hashed after
    assert _sha((data_dir / "corpus" / "big.bin").read_bytes()) == _sha(big)
    assert not _left(str(data_dir))


@pytest.mark.parametrize("suffix", ["abcdef", "QWERTY", "202401"])
def test_a_temp_name_of_one_kind_of_character_is_followed_when_written_since_the_start(
    tmp_path: Path, suffix: str
) -> None:
    """About 1 % of rsync's temp suffixes are letters or digits of one kind only: such a file,
    written since the follower began, is rsync's; an older one is a user's (`.f.bin.202401`)."""
    final = tmp_path / "f.bin"
    old = tmp_path / f".f.bin.{suffix.swapcase() if suffix.isalpha() else '199912'}"
    old.write_bytes(b"the user's own" * 1000)
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    proc = _script_follower(tmp_path, final)
    time.sleep(0.6)  # (looked at the user's file: not taken)
    temp, data = tmp_path / f".f.bin.{suffix}", os.urandom(MIB)
    temp.write_bytes(data)
    assert _begun(proc)
    temp.rename(final)
    deadline = time.monotonic() + 10
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _stop(proc) == [f"0 {_sha(data)}"]
