"""The upload lock: a real flock, held by real processes."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from gpuonboard import machine
from gpuonboard.transfer import uploadlock

HOLD = """
import sys, time
from pathlib import Path
from gpuonboard.transfer import uploadlock
held = uploadlock.acquire(Path(sys.argv[1]), sys.argv[2])
print("held", flush=True)
sys.stdin.read()
"""


def test_lock_name_is_per_host_port_user_and_path() -> None:
    base = uploadlock.lock_name("10.0.0.5", 22, "root", "/data/imagenet")
    assert base == uploadlock.lock_name("10.0.0.5", 22, "root", "/data/imagenet/")
    assert base == uploadlock.lock_name("10.0.0.5".upper(), 22, "root", "/data/imagenet")
    others = {
        uploadlock.lock_name("10.0.0.6", 22, "root", "/data/imagenet"),
        uploadlock.lock_name("10.0.0.5", 2222, "root", "/data/imagenet"),
        uploadlock.lock_name("10.0.0.5", 22, "ubuntu", "/data/imagenet"),
        uploadlock.lock_name("10.0.0.5", 22, "root", "/data/imagenet2"),
    }
    assert base not in others and len(others) == 4
    assert base.endswith(".lock") and "/" not in base


def _holder(lock_dir: Path, name: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(uploadlock.__file__).parents[1])}
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(lock_dir), name],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    return proc


def test_a_held_lock_turns_the_second_taker_away_naming_the_holder(tmp_path: Path) -> None:
    name = uploadlock.lock_name("127.0.0.1", 22, "root", "/data/x")
    proc = _holder(tmp_path, name)
    try:
        with pytest.raises(uploadlock.UploadBusy) as busy:
            uploadlock.acquire(tmp_path, name)
        assert str(busy.value).startswith(f"pid {proc.pid} since ")
        # another path of the same host is free meanwhile
        other = uploadlock.acquire(tmp_path, uploadlock.lock_name("127.0.0.1", 22, "root", "/data/y"))
        other.release()
    finally:
        proc.communicate("")  # the holder exits normally: the lock is free again
    held = uploadlock.acquire(tmp_path, name)
    with pytest.raises(uploadlock.UploadBusy):  # within one process too (one taker per run)
        uploadlock.acquire(tmp_path, name)
    held.release()
    held.release()  # idempotent
    uploadlock.acquire(tmp_path, name).release()


def test_a_killed_holder_leaves_no_stale_lock(tmp_path: Path) -> None:
    name = uploadlock.lock_name("127.0.0.1", 22, "root", "/data/x")
    proc = _holder(tmp_path, name)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    held = uploadlock.acquire(tmp_path, name)  # no wait, no manual cleanup
    assert (tmp_path / name).read_text().startswith(f"pid {os.getpid()} since ")
    assert (tmp_path / name).stat().st_mode & 0o777 == 0o600
    held.release()


# ---------------------------------------------------------------- the host's lease (real sh)


@pytest.fixture(autouse=True)
def _own_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """TAKE_SCRIPT records each upload in ${XDG_CACHE_HOME:-~/.cache}/gpuonboard: a temp dir
    here, never this machine's own cache."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))


def _sh(command: str) -> subprocess.CompletedProcess[str]:
    """Run a remote command as the host's login shell would."""
    return subprocess.run(["sh", "-c", command], capture_output=True, text=True, check=False)


def time_since(path: Path) -> float:
    return time.time() - path.stat().st_mtime


def _age(path: Path, seconds: int) -> None:
    old = path.stat().st_mtime - seconds
    os.utime(path, (old, old))


def test_the_lease_is_taken_refused_taken_over_refreshed_and_given_back(tmp_path: Path) -> None:
    data = tmp_path / "data dir"
    target = str(data / "my 'set'")
    lease = uploadlock.Lease(uploadlock.lease_path(str(data), "my 'set'"), "aaaa")
    path = Path(lease.path)
    assert path == data / ".my 'set'.gpuonboard-upload"
    # none there: made with the target's dir, atomically
    r = _sh(uploadlock.take_command(target, lease, "me", "box-a, pid 11, started T", 11))
    assert r.returncode == 0 and uploadlock.parse_take(r.stdout) == str(path), r
    assert Path(target).is_dir()
    assert path.read_text() == "token aaaa\nowner me\npid 11\nholder box-a, pid 11, started T\n"
    # another owner while it is fresh: turned away, told who and how long ago
    other = uploadlock.Lease(lease.path, "bbbb")
    _age(path, 7)
    r = _sh(uploadlock.take_command(target, other, "you", "box-b, pid 2, started U", 2))
    busy = uploadlock.parse_take(r.stdout)
    assert isinstance(busy, uploadlock.LeaseBusy) and busy.age in (7, 8), r.stdout  # (8: a second ticked)
    assert busy == uploadlock.LeaseBusy("box-a, pid 11, started T", busy.age, "me", 11), r.stdout
    assert isinstance(busy, uploadlock.LeaseBusy) and busy.sentence("h:/d/x") == (
        "another gpuonboard upload to h:/d/x is running from box-a, pid 11, started T (last heard"
        f" from {busy.age} s ago); wait for it to finish, or if that run was stopped, rerun in"
        f" {uploadlock.STALE_S - busy.age} s"
    )
    assert "token aaaa" in path.read_text()
    # a refresh by its holder makes it young again; one with another token changes nothing and
    # exits 1 (the heartbeat's sign that the lease was lost)
    assert _sh(uploadlock.touch_command(other)).returncode == 1
    assert time_since(path) >= 7
    assert _sh(uploadlock.touch_command(lease)).returncode == 0
    assert time_since(path) < 3
    # the same owner: refused while its holder's pid may live (two inventory entries for one
    # machine), taken over once that pid is named as ended
    again = uploadlock.Lease(lease.path, "cccc")
    r = _sh(uploadlock.take_command(target, again, "me", "box-a, pid 12, started V", 12))
    assert isinstance(uploadlock.parse_take(r.stdout), uploadlock.LeaseBusy), r.stdout
    r = _sh(uploadlock.take_command(target, again, "me", "box-a, pid 12, started V", 12, 11))
    assert uploadlock.parse_take(r.stdout) == str(path) and "token cccc" in path.read_text()
    # stale: anyone takes it over
    _age(path, uploadlock.STALE_S + 1)
    r = _sh(uploadlock.take_command(target, other, "you", "box-b, pid 2, started U", 2))
    assert uploadlock.parse_take(r.stdout) == str(path) and "owner you" in path.read_text()
    # giving back: only by the token that holds it
    _sh(uploadlock.release_command(again))
    assert path.exists()
    _sh(uploadlock.release_command(other))
    assert not path.exists()
    assert sorted(p.name for p in data.iterdir()) == ["my 'set'"]  # no temp left


def test_a_lease_cut_short_is_no_lease_and_a_bad_target_is_exit_2(tmp_path: Path) -> None:
    lease = uploadlock.Lease(uploadlock.lease_path(str(tmp_path), "x"), "aaaa")
    Path(lease.path).write_text("")  # a create that a full disk cut short
    r = _sh(uploadlock.take_command(str(tmp_path / "x"), lease, "you", "h", 5))
    assert uploadlock.parse_take(r.stdout) == lease.path, r
    (tmp_path / "file").write_text("")
    r = _sh(uploadlock.take_command(str(tmp_path / "file" / "x"), lease, "you", "h", 5))
    assert r.returncode == 2 and "Not a directory" in r.stderr, r
    with pytest.raises(ValueError):
        uploadlock.parse_take("something else\n")


def test_a_data_dir_this_login_may_not_write_keeps_the_lease_in_the_copy(tmp_path: Path) -> None:
    """Root's /data holding the user's own copy dir: the lease goes inside the copy."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to act as another user")
    data = Path(tempfile.mkdtemp(prefix="gpob-lease-"))  # (pytest's own tmp dirs are root-only)
    try:
        data.chmod(0o755)
        (data / "mine").mkdir()
        os.chown(data / "mine", 65534, 65534)
        lease = uploadlock.Lease(uploadlock.lease_path(str(data), "mine"), "aaaa")
        cmd = uploadlock.take_command(str(data / "mine"), lease, "me", "h", 5)
        r = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sh", "-c", cmd],
            capture_output=True,
            text=True,
            check=False,
        )
        assert r.returncode == 0, r
        assert uploadlock.parse_take(r.stdout) == str(data / "mine" / ".gpuonboard-upload"), r
    finally:
        shutil.rmtree(data)


def test_parse_take_keeps_only_printable_holder_text() -> None:
    busy = uploadlock.parse_take("busy 3\ntoken t\nowner o\npid 9\nholder evil\x1b[2Jbox\n")
    assert busy == uploadlock.LeaseBusy("evil[2Jbox", 3, "o", 9)


def test_process_ended_tells_a_dead_pid_from_a_live_one() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    assert machine.process_ended(int(done.stdout))
    assert not machine.process_ended(os.getpid()) and not machine.process_ended(0)


def test_the_heartbeat_notices_a_lost_lease(tmp_path: Path) -> None:
    beat = uploadlock.Heartbeat(["sh", "-c", "exit 1"], every=0.05)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not beat.lost:
        time.sleep(0.02)
    beat.stop()
    assert beat.lost
    quiet = uploadlock.Heartbeat(["sh", "-c", "exit 255"], every=0.05)  # ssh could not connect
    time.sleep(0.3)
    quiet.stop()
    assert not quiet.lost


def test_owner_id_is_per_project_dir(tmp_path: Path) -> None:
    a, b = tmp_path / "a" / ".gpuonboard" / "locks", tmp_path / "b" / ".gpuonboard" / "locks"
    assert uploadlock.owner_id(a) == uploadlock.owner_id(a) != uploadlock.owner_id(b)
    assert " " not in uploadlock.owner_id(a)


def test_the_heartbeat_repeats_until_stopped_and_never_after(tmp_path: Path) -> None:
    log = tmp_path / "beats"
    beat = uploadlock.Heartbeat(["sh", "-c", f"echo x >> '{log}'"], every=0.05)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (not log.exists() or len(log.read_text().split()) < 3):
        time.sleep(0.02)
    beat.stop()
    n = len(log.read_text().split())
    assert n >= 3
    time.sleep(0.2)
    assert len(log.read_text().split()) == n


def test_two_spellings_of_one_data_dir_meet_at_one_lease(tmp_path: Path) -> None:
    """--dest through a symlink or with '..' names the same copy: the same lease turns the
    second run away (each had its own local lock)."""
    real = tmp_path / "disk" / "data"
    real.mkdir(parents=True)
    (tmp_path / "link").symlink_to(real)
    spellings = [str(real), str(tmp_path / "link"), str(tmp_path / "disk" / "x" / ".." / "data")]
    (tmp_path / "disk" / "x").mkdir()
    first = uploadlock.Lease(uploadlock.lease_path(spellings[0], "set"), "aaaa")
    r = _sh(uploadlock.take_command(f"{spellings[0]}/set", first, "me", "h", 5))
    assert uploadlock.parse_take(r.stdout) == str(real / ".set.gpuonboard-upload")
    for other in spellings[1:]:
        lease = uploadlock.Lease(uploadlock.lease_path(other, "set"), "bbbb")
        r = _sh(uploadlock.take_command(f"{other}/set", lease, "you", "h2", 6))
        assert isinstance(uploadlock.parse_take(r.stdout), uploadlock.LeaseBusy), (other, r.stdout)


def test_a_directory_where_the_lease_goes_is_refused(tmp_path: Path) -> None:
    lease = uploadlock.Lease(uploadlock.lease_path(str(tmp_path), "set"), "aaaa")
    Path(lease.path).mkdir()
    r = _sh(uploadlock.take_command(str(tmp_path / "set"), lease, "me", "h", 5))
    said = f"{lease.path} is a directory, not an upload lease; remove it"
    assert r.returncode == 3 and r.stderr.strip() == said


def test_peek_reads_a_live_lease_beside_or_inside_the_copy_and_changes_nothing(tmp_path: Path) -> None:
    """Check mode's read-only look: a fresh lease (beside the copy, or inside it) names its
    holder; a stale one, one cut short (no token) or none at all is nobody; nothing is made."""
    data = tmp_path / "data"
    copy = data / "set"
    beside = uploadlock.lease_path(str(data), "set")
    peek = uploadlock.peek_command(beside, [str(copy), str(data / "set.shards")])
    assert uploadlock.parse_peek(_sh(peek).stdout) is None and not data.exists()
    copy.mkdir(parents=True)
    inside = copy / uploadlock.LEASE_IN_COPY
    inside.write_text("token t1\nowner o\npid 41\nholder box-c, pid 41, started W\n")
    _age(inside, 5)
    busy = uploadlock.parse_peek(_sh(peek).stdout)  # 5 s old (6 when a second ticks meanwhile)
    assert busy is not None and busy.age in (5, 6), busy
    assert busy == uploadlock.LeaseBusy("box-c, pid 41, started W", busy.age, "o", 41)
    _age(inside, uploadlock.STALE_S + 1)
    assert uploadlock.parse_peek(_sh(peek).stdout) is None
    Path(beside).write_text("owner o\n")  # cut short: no token line
    assert uploadlock.parse_peek(_sh(peek).stdout) is None
    Path(beside).write_text("token t2\nowner p\npid 7\nholder box-d, pid 7, started X\n")
    busy = uploadlock.parse_peek(_sh(peek).stdout)
    assert busy is not None and busy.holder == "box-d, pid 7, started X" and busy.age < 3
    assert sorted(p.name for p in data.iterdir()) == [".set.gpuonboard-upload", "set"]
    assert uploadlock.parse_peek("busy x\n") is None and uploadlock.parse_peek("") is None


def test_a_plaintext_dir_is_claimed_once_by_one_copy_whatever_its_spelling(tmp_path: Path) -> None:
    """--decrypt-to's mark: the first copy to claim <dir>/<name> gets it (noclobber), the same
    copy spelt through a symlink is still ours, another copy is told whose it is; a removed dir
    is free again."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "via").symlink_to(tmp_path / "a")
    plain = tmp_path / "shm" / "set"
    claim = [uploadlock.claim_command(str(tmp_path / d), "set", str(plain)) for d in ("a", "via", "b")]
    assert _sh(claim[0]).stdout == f"ours {tmp_path}/a/set\n"
    assert (plain / uploadlock.COPY_MARK).read_text() == f"{tmp_path}/a/set\n"
    assert _sh(claim[1]).stdout == f"ours {tmp_path}/a/set\n"
    assert _sh(claim[2]).stdout == f"other {tmp_path}/a/set\n"
    assert _sh(uploadlock.resolve_command(str(tmp_path / "via"), "set")).stdout == f"{tmp_path}/a/set\n"
    shutil.rmtree(plain)
    assert _sh(claim[2]).stdout == f"ours {tmp_path}/b/set\n"
    assert sorted(p.name for p in plain.iterdir()) == [uploadlock.COPY_MARK]
    (plain / uploadlock.COPY_MARK).write_text("")  # cut short before marks were written whole
    assert _sh(claim[0]).stdout == f"ours {tmp_path}/a/set\n"
    (plain / uploadlock.COPY_MARK).unlink()
    (plain / uploadlock.COPY_MARK).mkdir()
    r = _sh(claim[0])
    assert (
        r.returncode == 3
        and r.stderr == f"{plain}/{uploadlock.COPY_MARK} is a directory, not gpuonboard's mark; remove it\n"
    )
    assert sorted(p.name for p in plain.iterdir()) == [uploadlock.COPY_MARK]  # no temp left
    assert uploadlock.parse_take("busy -596\nholder box\n") == uploadlock.LeaseBusy("box", 0)


def test_the_lease_age_is_read_by_the_file_systems_clock_not_dates(tmp_path: Path) -> None:
    """A host whose `date` runs 10 minutes ahead of its (NFS) file server's clock: a lease
    refreshed 5 s ago by the server's clock is still live (by `date` it looked stale and was
    taken over), and no probe file is left."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "date").write_text("#!/bin/sh\necho $(( $(/bin/date +%s) + 600 ))\n")
    (fake / "date").chmod(0o755)
    data = tmp_path / "data"
    lease = uploadlock.Lease(uploadlock.lease_path(str(data), "set"), "aaaa")
    assert _sh(uploadlock.take_command(str(data / "set"), lease, "me", "box-a", 11)).returncode == 0
    _age(Path(lease.path), 5)
    other = uploadlock.Lease(lease.path, "bbbb")
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"}
    r = subprocess.run(
        ["sh", "-c", uploadlock.take_command(str(data / "set"), other, "you", "box-b", 2)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    busy = uploadlock.parse_take(r.stdout)
    assert isinstance(busy, uploadlock.LeaseBusy) and 4 <= busy.age <= 7, r.stdout
    assert sorted(p.name for p in data.iterdir()) == [".set.gpuonboard-upload", "set"]


def test_a_claim_is_refused_over_unmarked_files_or_a_live_upload_of_that_dir(tmp_path: Path) -> None:
    """The mark never lands on files no mark vouches for (another project's plain copy at
    DIR/<name>), nor while an upload whose copy IS that dir runs (its lease, beside or inside);
    this run's own lease there does not count; whatever it refuses, it leaves no mark."""
    (tmp_path / "a").mkdir()
    plain = tmp_path / "shm" / "set"
    plain.mkdir(parents=True)
    (plain / "theirs.bin").write_bytes(b"x")
    claim = uploadlock.claim_command(str(tmp_path / "a"), "set", str(plain), "mine")
    assert _sh(claim).stdout == "unmarked\n"
    assert sorted(p.name for p in plain.iterdir()) == ["theirs.bin"]
    lease = tmp_path / "shm" / ".set.gpuonboard-upload"
    lease.write_text("token other\nowner o\npid 9\nholder box-z, pid 9, started Y\n")
    assert _sh(claim).stdout.startswith("busy ")  # its upload is live: that, not "unmarked"
    (plain / "theirs.bin").unlink()
    lease.write_text("token other\nowner o\npid 9\nholder box-z, pid 9, started Y\n")
    out = _sh(claim).stdout
    busy = uploadlock.parse_take(out)
    assert isinstance(busy, uploadlock.LeaseBusy) and busy.holder == "box-z, pid 9, started Y", out
    assert list(plain.iterdir()) == []
    lease.write_text("token mine\nowner me\npid 1\nholder me\n")  # --decrypt-to is the data dir itself
    assert _sh(claim).stdout == f"ours {tmp_path}/a/set\n"
    # the other side of a race: an upload taking its lease on that dir finds the mark and yields
    other = uploadlock.Lease(str(lease), "tok2")
    lease.unlink()
    take = uploadlock.take_command(str(plain), other, "o", "box-z", 9, plain=str(plain), name="set")
    r = _sh(take)
    assert uploadlock.parse_take(r.stdout) == uploadlock.OtherCopy(f"{tmp_path}/a/set"), r
    assert not lease.exists()


def test_taking_the_lease_sweeps_this_copys_unpack_dirs_of_killed_runs(tmp_path: Path) -> None:
    """A killed --unpack run leaves a half-built tree (plaintext, when encrypted) beside the
    dataset; the next run of that copy, whatever its mode, removes it once it holds the lease:
    beside the data dir's copy and beside a --decrypt-to tree; other datasets' are left alone, and
    so is another copy's of a dataset with the same name (a --decrypt-to tree there)."""
    data, shm = tmp_path / "data", tmp_path / "shm"
    tag = uploadlock.unpack_tag(str(data / "set"))
    theirs = uploadlock.unpack_tag(str(shm / "set"))  # the copy shm/set of another project
    assert tag != theirs and tag == uploadlock.unpack_tag(f"{data}//set/")
    left = [data / f".set.gpuonboard-unpack-{tag}-0a", shm / f".set.gpuonboard-unpack-{tag}-1b"]
    kept = [
        data / f".other.gpuonboard-unpack-{tag}-2c",
        data / f".set2.gpuonboard-unpack-{tag}-3d",
        shm / f".set.gpuonboard-unpack-{theirs}-4e",
    ]
    for d in left + kept:
        (d / "half").mkdir(parents=True)
    lease = uploadlock.Lease(uploadlock.lease_path(str(data), "set"), "t")
    plain = str(shm / "set")
    take = uploadlock.take_command(
        str(data / "set.shards"), lease, "me", "box", 1, plain=plain, name="set", tag=tag
    )
    r = _sh(take)
    assert uploadlock.parse_take(r.stdout) == str(Path(lease.path)), r
    assert not any(d.exists() for d in left) and all(d.exists() for d in kept)


def test_the_plan_reads_what_uploads_wrote_in_a_tree_however_its_dir_is_spelt(tmp_path: Path) -> None:
    """The sync plan reads the host's list of what uploads wrote in the copy (to tell a file
    changed on the host from one an upload or an unpack wrote): it finds the list the take
    command keys by the tree's resolved dir (here written under a link to the data dir, read
    through the link and the real path), each file's sizes and mtimes; none where no list is."""
    home, data = tmp_path / "home", tmp_path / "data"
    home.mkdir()
    (data / "ds").mkdir(parents=True)
    (tmp_path / "via").symlink_to(data)
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin"}

    def sh(command: str, stdin: bytes = b"") -> str:
        done = subprocess.run(["sh", "-c", command], input=stdin, capture_output=True, env=env, check=True)
        return done.stdout.decode()

    assert uploadlock.parse_written(sh(uploadlock.read_listing_command(str(data / "ds")))) is None
    listing = uploadlock.listing_stdin([("f", "a b.bin", 8, 1_700_000_000), ("l", "ln", 0, 0)])
    resolved = f"{data.resolve()}/ds"  # (as the take command records it: realpath of the dir)
    sh(uploadlock.write_listing_command(resolved), listing)
    for spelt in (str(data / "ds"), str(tmp_path / "via" / "ds")):
        assert uploadlock.parse_written(sh(uploadlock.read_listing_command(spelt))) == {
            "a b.bin": {(8, 1_700_000_000)}
        }


def test_a_list_of_what_uploads_wrote_whose_write_fails_is_removed_not_left_as_it_was(
    tmp_path: Path,
) -> None:
    """An upload's list write that fails (here a file size limit of 0, as a full disk: the
    sorted list cannot be written) removed the tree's old list, exit 1: left in place, it
    listed the file as the earlier upload wrote it, and the next --check called the file this
    upload wrote "changed there since an upload wrote it". The next run finds no list."""
    home = tmp_path / "home"
    (home).mkdir()
    (tmp_path / "ds").mkdir()
    tree = str((tmp_path / "ds").resolve())
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin"}

    def sh(command: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(["sh", "-c", command], input=stdin, capture_output=True, env=env, check=False)

    v1 = uploadlock.listing_stdin([("f", "a.txt", 3, 1_700_000_000)])
    assert sh(uploadlock.write_listing_command(tree), v1).returncode == 0
    read = uploadlock.read_listing_command(tree)
    assert uploadlock.parse_written(sh(read).stdout.decode()) == {"a.txt": {(3, 1_700_000_000)}}
    v2 = uploadlock.listing_stdin([("f", "a.txt", 9, 1_700_000_100)])
    cut = sh("ulimit -f 0; " + uploadlock.write_listing_command(tree), v2)
    assert cut.returncode == 1, cut
    assert uploadlock.parse_written(sh(read).stdout.decode()) is None
    leftover = [p.name for p in (home / ".cache" / "gpuonboard").rglob("*") if p.is_file()]
    assert leftover == [], leftover


def test_a_list_of_what_uploads_wrote_cut_short_in_its_input_is_never_committed(tmp_path: Path) -> None:
    """The host's list write read its stdin to EOF and committed what came: an input cut short
    (the link dropped, the sending process killed mid-write) was written as a valid shorter list,
    its last entry cut (`F 9 1700000100 a.t`), the files after it missing: teardown then judged the
    tree by a list that never was. The input now ends with LISTING_END; one without it is a failed
    write (exit 1, the old list removed, no temp file left), at every cut point."""
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "ds").mkdir()
    tree = str((tmp_path / "ds").resolve())
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin"}

    def sh(command: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(["sh", "-c", command], input=stdin, capture_output=True, env=env, check=False)

    read = uploadlock.read_listing_command(tree)
    write = uploadlock.write_listing_command(tree)
    v1 = uploadlock.listing_stdin([("f", "a.txt", 3, 1_700_000_000)])
    assert sh(write, v1).returncode == 0
    v2 = uploadlock.listing_stdin([("f", "a.txt", 9, 1_700_000_100), ("f", "b.txt", 4, 1_700_000_100)])
    for cut in (len(v2) - 2, len(v2) - 5, len(v2) - 20, 0):  # (in the end mark, before it, mid-entry, empty)
        assert sh(write, v1).returncode == 0
        r = sh(write, v2[:cut])
        assert r.returncode == 1, (cut, r)
        assert uploadlock.parse_written(sh(read).stdout.decode()) is None, cut
    leftover = [p.name for p in (home / ".cache" / "gpuonboard").rglob("*") if p.is_file()]
    assert leftover == [], leftover
    assert v2.endswith(b"\0end\0")
    assert sh(write, v2).returncode == 0
    assert uploadlock.parse_written(sh(read).stdout.decode()) == {
        "a.txt": {(9, 1_700_000_100)},
        "b.txt": {(4, 1_700_000_100)},
    }
    assert uploadlock.listing_stdin([]) == b"end\0"
    assert sh(write, uploadlock.listing_stdin([])).returncode == 0  # (an upload that writes nothing)
    assert uploadlock.parse_written(sh(read).stdout.decode()) == {}


def test_the_plan_reads_a_list_of_what_uploads_wrote_only_up_to_a_cap(tmp_path: Path) -> None:
    """The plan's read of the host's list of what uploads wrote was a `cat` of it whole (2M
    entries: 9.6 s and 1.3 GB here): one longer than READ_LISTING_MAX is not read (`cut`),
    and counts as no list, as does one cut short mid-entry (grown while read); the entries
    read are those of the files asked for."""
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "ds").mkdir()
    tree = str((tmp_path / "ds").resolve())
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin"}

    def sh(command: str, stdin: bytes = b"") -> str:
        done = subprocess.run(["sh", "-c", command], input=stdin, capture_output=True, env=env, check=True)
        return done.stdout.decode()

    listing = uploadlock.listing_stdin([("f", "a", 1, 5), ("f", "b", 2, 6)])
    sh(uploadlock.write_listing_command(tree), listing)
    read = uploadlock.read_listing_command(tree)
    assert uploadlock.parse_written(sh(read), {"b", "z"}) == {"b": {(2, 6)}}
    assert uploadlock.parse_written(sh(read)[:-3]) is None  # (cut short mid-entry)
    (record,) = (home / ".cache" / "gpuonboard").glob("written.*/*")
    with record.open("r+b") as f:  # (sparse: as long as the cap and one byte)
        f.truncate(uploadlock.READ_LISTING_MAX + 1)
    assert sh(read) == "cut\n"
    assert uploadlock.parse_written(sh(read)) is None


def test_a_list_of_what_uploads_wrote_that_cannot_be_removed_is_marked_stale(tmp_path: Path) -> None:
    """An upload whose list write fails on a list it cannot remove either (`chattr +i`, as
    review S made it) left the old list, read as true once the file was writable again: the
    next --check called the file this upload wrote "changed there since an upload wrote it".
    A stale mark beside it makes it read as no list, exit 1; the next write that succeeds
    lists afresh (the stale entries not carried on) and removes the mark. Where not even the
    mark can be made (its dir immutable), exit RECORD_STUCK."""
    if shutil.which("chattr") is None or os.geteuid() != 0:
        pytest.skip("needs chattr as root")
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "a.txt").write_text("v2 here\n")
    tree = str((tmp_path / "ds").resolve())
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin"}

    def sh(command: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(["sh", "-c", command], input=stdin, capture_output=True, env=env, check=False)

    read = uploadlock.read_listing_command(tree)
    sh(uploadlock.write_listing_command(tree), uploadlock.listing_stdin([("f", "a.txt", 3, 1_700_000_000)]))
    (record,) = (home / ".cache" / "gpuonboard").glob("written.*/*")
    v2 = uploadlock.listing_stdin([("f", "a.txt", 8, 1_700_000_100)])
    subprocess.run(["chattr", "+i", str(record.parent)], check=True)
    try:
        stuck = sh(uploadlock.write_listing_command(tree), v2)
        assert stuck.returncode == uploadlock.RECORD_STUCK, stuck
    finally:
        subprocess.run(["chattr", "-i", str(record.parent)], check=True)
    subprocess.run(["chattr", "+i", str(record)], check=True)
    try:
        assert sh(uploadlock.write_listing_command(tree), v2).returncode == 1
        assert uploadlock.parse_written(sh(read).stdout.decode()) is None
    finally:
        subprocess.run(["chattr", "-i", str(record)], check=True)
    assert uploadlock.parse_written(sh(read).stdout.decode()) is None  # (writable again: still stale)
    assert sh(uploadlock.write_listing_command(tree), v2).returncode == 0
    assert uploadlock.parse_written(sh(read).stdout.decode()) == {"a.txt": {(8, 1_700_000_100)}}
    assert sorted(p.name for p in record.parent.iterdir()) == [record.name]
