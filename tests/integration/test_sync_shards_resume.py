"""Issue 32: a shard cut off mid-stream resumes from the bytes the host kept. The upload (one
shard: the whole dataset) is stopped with SIGTERM once part of the shard reached the host's
`.incoming-*` file, through the real sshd test host, then run again: the rerun checks the
partial by sha256, sends only the rest (counted: its diff's literal_bytes and resumed_bytes),
the host verifies the WHOLE shard, the tree (or the shard) is right and nothing else is left. In
plain and encrypted shard mode, with and without --unpack; and a partial tampered with on the
host is caught: that shard is sent from its start, the result still right."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import Project, age_key, host_entry, interrupt_when

needs_age = pytest.mark.skipif(shutil.which("age") is None, reason="Debian `age` not installed")

FILES, SIZE = 400, 8_000  # one shard of ~3.4 MB (shard_size 64 MiB)


def _step(project: Project) -> dict[str, Any]:
    return dict(project.summary()["hosts"][0]["steps"][0])


def _digest(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _setup(project: Project, tmp_path: Path, **extra: Any) -> tuple[Path, Path]:
    src = tmp_path / "local" / "many"
    for i in range(FILES):
        d = src / f"d{i % 7}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i:04d}.bin").write_bytes(os.urandom(SIZE + i % 300))
    data_dir = tmp_path / "remote data"
    entry = host_entry(project.pool.hosts["dataset"], project.pool, data_dir=str(data_dir))
    entry["vars"].update({"dataset": str(src), "shard_size": "64MiB", "shard_threshold": 100, **extra})
    project.write_inventory({"dataset": entry})
    return src, data_dir


def _partial(store: Path) -> Path | None:
    """The shard's partial on the host (not its .sum, .fifo, ... beside it)."""
    if not store.is_dir():
        return None
    got = [p for p in store.iterdir() if re.fullmatch(r"\.incoming-[0-9a-f]{32}", p.name)]
    return got[0] if got else None


def _interrupt(project: Project, flags: list[str], data_dir: Path, at: int) -> int:
    """Start the upload slowly, SIGTERM it once the host's partial holds `at` bytes or more;
    -> the partial's size once the interrupted run ended."""
    argv = [*project.cli_argv(), "sync", "--host", "dataset", *flags, "--bwlimit", "400k"]
    proc = subprocess.Popen(
        argv, cwd=project.root, env=project.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    store = data_dir / "many.shards"

    def far_enough() -> bool:
        part = _partial(store)
        return part is not None and part.stat().st_size >= at

    interrupt_when(proc, far_enough, 90)
    time.sleep(0.5)  # (the host's side of the cut stream settles)
    part = _partial(store)
    assert part is not None, sorted(p.name for p in store.iterdir())
    return part.stat().st_size


def _assert_host_holds_only(data_dir: Path, src: Path, unpack: bool) -> None:
    names = {p.relative_to(data_dir).as_posix() for p in data_dir.rglob("*") if not p.is_dir()}
    store = {n for n in names if n.startswith("many.shards/")}
    assert not [n for n in store if "/.incoming-" in n or "/." in n], sorted(store)
    assert not list(data_dir.glob(".*gpuonboard-unpack-*"))
    if unpack:
        assert _digest(data_dir / "many") == _digest(src)
        extra = {
            n
            for n in store
            if not re.fullmatch(r"many\.shards/(manifest(\.unpacked)?\.json|unpacked-\w+)", n)
        }
        assert not extra, sorted(extra)
    else:
        shards = [n for n in store if n.endswith((".tar", ".age"))]
        assert len(shards) == 1, sorted(store)
        assert not (data_dir / "many").exists()


def _resume(
    project: Project, tmp_path: Path, flags: list[str], unpack: bool, tamper: bool = False, **extra: Any
) -> dict[str, Any]:
    src, data_dir = _setup(project, tmp_path, **extra)
    dataset = sum(p.stat().st_size for p in src.rglob("*") if p.is_file())
    kept = _interrupt(project, flags, data_dir, dataset // 3)
    assert kept >= dataset // 4, kept
    if tamper:  # a byte of the partial changed on the host: its sha256 no longer matches
        part = _partial(data_dir / "many.shards")
        assert part is not None
        data = bytearray(part.read_bytes())
        data[len(data) // 2] ^= 0xFF
        part.write_bytes(bytes(data))
    r = project.cli("sync", "--host", "dataset", *flags)
    s = _step(project)
    assert r.returncode == 0 and s["status"] == "changed", (r.stdout + r.stderr, s)
    diff = s["diff"]
    assert diff["sent_shards"] == 1 == diff["shards"], diff
    whole = diff["literal_bytes"] + diff["resumed_bytes"]  # the shard as stored (tar or ciphertext)
    assert whole >= dataset, diff
    if tamper:
        assert diff["restarted_shards"] == 1 and diff["resumed_shards"] == 0, diff
        assert diff["literal_bytes"] == whole, diff
        assert "sent from the start: the partial an interrupted upload left" in s["msg"], s["msg"]
    else:
        assert diff["resumed_shards"] == 1 and diff["restarted_shards"] == 0, diff
        assert diff["resumed_bytes"] >= kept - 1024 * 1024, (diff, kept)  # (what the host had flushed)
        # only the missing bytes were sent: the shard less what the host kept
        assert diff["literal_bytes"] == whole - diff["resumed_bytes"] <= whole - kept + 1024 * 1024, diff
        assert "resumed from the" in s["msg"], s["msg"]
    _assert_host_holds_only(data_dir, src, unpack)
    r = project.cli("sync", "--host", "dataset", *flags)
    assert r.returncode == 0 and _step(project)["status"] == "ok", _step(project)
    return s


def test_a_shard_cut_off_resumes_from_the_hosts_bytes_unpacked(project: Project, tmp_path: Path) -> None:
    _resume(project, tmp_path, ["--shards", "--unpack"], unpack=True)


def test_a_shard_cut_off_resumes_from_the_hosts_bytes_kept_as_a_shard(
    project: Project, tmp_path: Path
) -> None:
    _resume(project, tmp_path, ["--shards"], unpack=False)


def test_a_tampered_partial_is_sent_again_from_the_start(project: Project, tmp_path: Path) -> None:
    _resume(project, tmp_path, ["--shards", "--unpack"], unpack=True, tamper=True)


@needs_age
def test_an_encrypted_shard_cut_off_resumes_from_the_cached_ciphertext(
    project: Project, tmp_path: Path
) -> None:
    key, pub = age_key(tmp_path)
    flags = ["--encrypt", "--decrypt-on-host", "--shards", "--unpack"]
    _resume(project, tmp_path, flags, unpack=True, age_recipients=[pub], age_identity_file=str(key))


@needs_age
def test_an_encrypted_shard_kept_as_ciphertext_resumes(project: Project, tmp_path: Path) -> None:
    key, pub = age_key(tmp_path)
    _resume(project, tmp_path, ["--encrypt", "--shards"], unpack=False, age_recipients=[pub])


@needs_age
def test_a_tampered_encrypted_partial_is_sent_again_from_the_start(project: Project, tmp_path: Path) -> None:
    key, pub = age_key(tmp_path)
    flags = ["--encrypt", "--decrypt-on-host", "--shards", "--unpack"]
    _resume(
        project, tmp_path, flags, unpack=True, tamper=True, age_recipients=[pub], age_identity_file=str(key)
    )


def _record(project: Project, data_dir: Path) -> Path:
    """The host's list of what uploads wrote in the unpacked tree `many` (uploadlock.WRITTEN_DIR)."""
    home = project.pool.hosts["dataset"].home
    digest = hashlib.sha256(f"{os.path.realpath(data_dir)}/many".encode()).hexdigest()
    (record,) = (home / ".cache" / "gpuonboard").glob(f"written.*/{digest}")
    return record


def _hold_record(record: Path) -> None:
    """The list made a FIFO (its owner's, as the file was): the host's write of a new list,
    which reads the old one first, waits there until `_release` opens it for writing."""
    st = record.stat()
    record.unlink()
    os.mkfifo(record, 0o666)
    os.chown(record, st.st_uid, st.st_gid)
    os.chmod(record, 0o666)


def _release(record: Path, seconds: float) -> bool:
    """Let the waiting write read an empty old list (open the FIFO for writing, close it);
    False when no reader came in `seconds`. The FIFO is then made a file again (empty)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            fd = os.open(record, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # (ENXIO: nobody reads it yet)
            time.sleep(0.05)
            continue
        os.close(fd)
        return True
    return False


def _listing_waits(record: Path, seconds: float) -> bool:
    """Whether the host's list write (its `comm` reading the old list, here the FIFO) started."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        ps = subprocess.run(["ps", "-ww", "-eo", "args"], capture_output=True, text=True).stdout
        if any(line.startswith("comm -z") and str(record) in line for line in ps.splitlines()):
            return True
        time.sleep(0.1)
    return False


def _start(project: Project, hosts: str, flags: list[str]) -> subprocess.Popen[bytes]:
    argv = [*project.cli_argv(), "sync", "--host", hosts, *flags, "--bwlimit", "4000k"]
    return subprocess.Popen(
        argv, cwd=project.root, env=project.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def _unheld(record: Path) -> None:
    """After a test: the FIFO released and gone, whatever the run left of it."""
    _release(record, 2)
    time.sleep(1)
    if record.exists() and not record.is_file():
        record.unlink()


def test_a_two_host_run_stopped_while_one_hosts_list_of_what_uploads_wrote_is_written_ends(
    project: Project, tmp_path: Path
) -> None:
    """Review HH, round 26: `sync --host dataset,dataset2 --shards --unpack`, SIGTERMed while
    host `dataset`'s list of what uploads wrote was being written (the real sshd test host, its
    list made a FIFO: edit, the test's, so the write waits there) hung: the list was written by
    an untracked ssh beside the first stream and the worker waited for it with no timeout. The
    list is written before the first stream over the session's connection again: the run ends
    at once, interrupted, and a rerun (the list released) ends verified with the new list."""
    src, data_a = _setup(project, tmp_path)
    data_b = tmp_path / "remote b"
    entries = [
        host_entry(project.pool.hosts["dataset"], project.pool, data_dir=str(d)) for d in (data_a, data_b)
    ]
    for e in entries:
        e["vars"].update({"dataset": str(src), "shard_size": "64MiB", "shard_threshold": 100})
    project.write_inventory({"dataset": entries[0], "dataset2": entries[1]})
    flags = ["--shards", "--unpack"]
    first = project.cli("sync", "--host", "dataset,dataset2", *flags, timeout=180)
    assert first.returncode == 0, (first.stdout + first.stderr)[-800:]
    record = _record(project, data_a)
    (src / "d0" / "new.bin").write_bytes(os.urandom(SIZE))
    _hold_record(record)
    proc = _start(project, "dataset,dataset2", flags)
    try:
        assert _listing_waits(record, 60), "the host's list write never started"
        time.sleep(8)  # (long enough for the shard to reach the host, were it sent meanwhile)
        proc.send_signal(signal.SIGTERM)
        try:
            out, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            raise AssertionError("the run still ran 30 s after SIGTERM") from None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        _unheld(record)
    assert proc.returncode != 0, (out + err)[-600:]
    assert "new.bin" not in {p.name for p in (data_a / "many").rglob("*")}  # (no swap on the held host)
    again = project.cli("sync", "--host", "dataset,dataset2", *flags, timeout=180)
    assert again.returncode == 0, (again.stdout + again.stderr)[-800:]
    _assert_host_holds_only(data_a, src, unpack=True)
    assert any(e.endswith(b" d0/new.bin") for e in _record(project, data_a).read_bytes().split(b"\0"))


def _kill_masters(tmp_path: Path) -> list[int]:
    """SIGKILL this test's OpenSSH master connections (their control paths are under tmp_path)."""
    ps = subprocess.run(["ps", "-ww", "-eo", "pid,args"], capture_output=True, text=True).stdout
    killed = []
    for line in ps.splitlines():
        pid, _, args = line.strip().partition(" ")
        if "ControlMaster=yes" in args and str(tmp_path) in args:
            os.kill(int(pid), signal.SIGKILL)
            killed.append(int(pid))
    return killed


def test_no_tree_is_swapped_in_while_its_list_of_what_uploads_wrote_may_still_be_written(
    project: Project, tmp_path: Path
) -> None:
    """Review HH, round 26: with the list written over the OpenSSH master beside the first
    stream, a master that died (here SIGKILLed while the host's write waited on the list, a
    FIFO: edit, the test's) ended the list's ssh (255), counted as written: the closing command
    swapped the tree in and the run said `changed` (rc 0) while the host's write still waited,
    to commit later over what the seed added. Now no byte is sent and nothing is swapped before
    the list is written: while it waits the tree stays as it was; once released the run ends
    (verified with the new list, or failed without a swap)."""
    src, data_dir = _setup(project, tmp_path)
    flags = ["--shards", "--unpack"]
    assert project.cli("sync", "--host", "dataset", *flags).returncode == 0
    record = _record(project, data_dir)
    (src / "d0" / "new.bin").write_bytes(os.urandom(SIZE))
    _hold_record(record)
    proc = _start(project, "dataset", flags)
    try:
        assert _listing_waits(record, 60), "the host's list write never started"
        time.sleep(1)
        _kill_masters(tmp_path)
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline and proc.poll() is None:
            assert not (data_dir / "many" / "d0" / "new.bin").exists(), "swapped in while the list waits"
            time.sleep(0.1)
        assert not (data_dir / "many" / "d0" / "new.bin").exists(), "swapped in while the list waits"
        assert _release(record, 5) or proc.poll() is not None
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        _unheld(record)
    s = _step(project)
    if proc.returncode == 0:
        assert s["status"] == "changed", s
        _assert_host_holds_only(data_dir, src, unpack=True)
        assert any(e.endswith(b" d0/new.bin") for e in _record(project, data_dir).read_bytes().split(b"\0"))
    else:
        assert not (data_dir / "many" / "d0" / "new.bin").exists(), (out + err)[-600:]
