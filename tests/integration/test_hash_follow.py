"""The host hashes big files while rsync writes them (transfer/follow.py, sh/hash_follow.sh):
real sshd test host, real rsync, the real script run by the host's sh. A hash counts only for
the inode that landed under the file's real name, whole."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
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
    a, b = os.urandom(6 * MIB), os.urandom(4 * MIB)
    (src / "a.bin").write_bytes(a)
    (src / "sub" / "b bin").write_bytes(b)
    target_dir = project.pool.hosts["dataset"].home / f"follow-{os.getpid()}"
    target_dir.mkdir()
    target = str(target_dir)
    files = [follow.entry(target, r) for r in ("a.bin", "sub/b bin", "never.bin")]

    follower = follow.Follower(["ssh", "-F", str(config), alias], files)
    run = transfer.run_rsync(transfer.rsync_argv(src, target, config, alias, bwlimit="8m"))
    assert run.exit_code == 0, run.stderr
    sums = follower.sums(wait=10)
    # both files, hashed from the host's disk as they grew; nothing for a file never written
    assert sums == {"a.bin": _sha(a), "sub/b bin": _sha(b)}
    assert not _left(target)  # (the host's side ends with its session: shell.SESSION_POLL_S)


def _script_follower(tmp_path: Path, final: Path) -> subprocess.Popen[str]:
    """hash_follow.sh for one file (`final`), run by this machine's sh as a host runs it."""
    args = [str(final.parent), final.name, str(final)]
    script = SHA256_FN + "\n" + load("hash_follow")
    return subprocess.Popen(
        ["sh", "-c", script, "sh", transfer.PARTIAL_DIR, *args], stdout=subprocess.PIPE, text=True
    )


def _stop(proc: subprocess.Popen[str]) -> str:
    if proc.poll() is None:
        proc.terminate()
    out, _ = proc.communicate(timeout=10)
    return out


def test_a_written_file_that_never_lands_under_its_name_gets_no_hash(tmp_path: Path) -> None:
    final = tmp_path / "f.bin"
    proc = _script_follower(tmp_path, final)
    temp = tmp_path / ".f.bin.Ab12Cd"  # (rsync's temp name)
    temp.write_bytes(b"x" * MIB)
    time.sleep(0.3)
    temp.rename(tmp_path / "elsewhere.bin")  # (moved, not landed: e.g. an interrupted rsync's partial)
    time.sleep(0.3)
    assert _stop(proc) == "0 -\n"  # (begun, never landed)


def test_a_file_replaced_by_another_write_is_hashed_as_the_one_that_landed(tmp_path: Path) -> None:
    final = tmp_path / "f.bin"
    proc = _script_follower(tmp_path, final)
    first = tmp_path / ".f.bin.Ab12Cd"
    first.write_bytes(b"stale" * 1000)
    time.sleep(0.3)  # (read by now)
    first.unlink()  # rsync gave that one up and writes the file again
    second, good = tmp_path / ".f.bin.Zz98Yy", os.urandom(MIB)
    with second.open("wb") as f:
        f.write(good[: MIB // 2])
        f.flush()
        time.sleep(0.3)
        f.write(good[MIB // 2 :])
    second.rename(final)
    deadline = time.monotonic() + 10
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _stop(proc) == f"0 -\n0 -\n0 {_sha(good)}\n"  # (begun twice: the first one went)


def test_a_stale_temp_file_read_is_not_taken_for_the_file_that_landed(tmp_path: Path) -> None:
    final = tmp_path / "f.bin"
    stale = tmp_path / ".f.bin.Aaaaaa"  # (an earlier writer's temp, still there)
    stale.write_bytes(b"stale" * 1000)
    proc = _script_follower(tmp_path, final)
    time.sleep(0.3)  # (read by now)
    other = tmp_path / ".f.bin.Zzzzzz"
    other.write_bytes(os.urandom(MIB))
    other.rename(final)  # another inode lands: what was read proves nothing about it
    time.sleep(0.5)
    assert _stop(proc) == "0 -\n"


def test_the_followers_lines_are_read_strictly() -> None:
    h = "ab" * 32
    assert follow.parse_line(f"1 {h}\n", 2) == (1, h)
    assert follow.parse_line("0 -\n", 2) == (0, "")
    for bad in (f"2 {h}", f"x {h}", f"1 {h[:-1]}", f"1 {h[:-1]}g", "1", "", f"-1 {h}", f"1  {h}"):
        assert follow.parse_line(bad, 2) is None, bad


def test_a_file_already_at_its_name_is_not_taken_for_the_one_being_sent(tmp_path: Path) -> None:
    final = tmp_path / "f.bin"
    final.write_bytes(b"the old version")  # (the host's copy rsync is about to replace)
    proc = _script_follower(tmp_path, final)
    time.sleep(0.3)
    assert _stop(proc) == ""


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

    r = project.cli("sync", "--host", "dataset", "--bwlimit", "64m", timeout=120)
    s = project.summary()["hosts"][0]["steps"][0]
    assert r.returncode == 0 and s["status"] == "changed", r.stdout + r.stderr
    assert "2 files verified by sha256" in s["msg"], s["msg"]
    assert s["diff"]["hashed_arriving"] == 1  # the big one; the small one hashed after
    assert _sha((data_dir / "corpus" / "big.bin").read_bytes()) == _sha(big)
    assert not _left(str(data_dir))
