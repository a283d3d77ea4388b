"""`invoke sync` against a real sshd test host: real rsync, real SSH, real age."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import Project, age_key, host_entry

pytestmark = pytest.mark.skipif(shutil.which("rsync") is None, reason="rsync not installed")


def tree_digest(root: Path) -> dict[str, str]:
    """rel -> sha256 (files) or 'link:target' (symlinks), the partial dir and a --decrypt-to
    dir's mark excluded."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".gpuonboard-rsync-partial"]
        if dirpath == str(root):
            filenames = [f for f in filenames if f != ".gpuonboard-copy"]
        for n in filenames + [d for d in dirnames if (Path(dirpath) / d).is_symlink()]:
            p = Path(dirpath) / n
            rel = p.relative_to(root).as_posix()
            out[rel] = (
                "link:" + os.readlink(p) if p.is_symlink() else hashlib.sha256(p.read_bytes()).hexdigest()
            )
    return out


def make_dataset(root: Path) -> Path:
    src = root / "my data"
    (src / "sub dir").mkdir(parents=True)
    (src / "plain.txt").write_text("hello\n")
    (src / "sp ace 'q' \"dq\".bin").write_bytes(os.urandom(5000))
    (src / "ünïcødé.txt").write_text("ü\n")
    (src / "-leading-dash").write_text("dash\n")
    (src / "sub dir" / "nested.bin").write_bytes(os.urandom(70_000))
    (src / "link to plain").symlink_to("plain.txt")
    return src


def setup(project: Project, tmp_path: Path, **vars_: Any) -> tuple[Path, Path]:
    src = make_dataset(tmp_path / "local")
    data_dir = tmp_path / "remote data"
    h = project.pool.hosts["dataset"]
    entry = host_entry(h, project.pool, data_dir=str(data_dir))
    # (--unpack here keeps its shards on the host: these tests are about that cache; the default,
    # shards removed once the tree is verified, is test_sync_shards_host_bytes.py's)
    entry["vars"].update({"dataset": str(src), "keep_shards": True, **vars_})
    project.write_inventory({"dataset": entry})
    return src, data_dir


def step(project: Project) -> dict[str, Any]:
    return project.summary()["hosts"][0]["steps"][0]


def test_round_trip_rerun_change_and_check(project: Project, tmp_path: Path) -> None:
    src, data_dir = setup(project, tmp_path)
    r = project.cli("sync", "--host", "dataset")
    assert r.returncode == 0, r.stdout + r.stderr
    s = step(project)
    assert s["status"] == "changed" and s["diff"]["sent_files"] == 5, s
    assert "; 5 files and 1 symlink verified by sha256;" in s["msg"], s["msg"]
    assert tree_digest(data_dir / "my data") == tree_digest(src)
    # rerun: nothing to do, no rsync at all
    r = project.cli("sync", "--host", "dataset")
    assert r.returncode == 0 and step(project)["status"] == "ok", r.stdout
    assert "nothing sent" in step(project)["msg"]
    # a new empty directory alone is not "up to date" (rsync -a makes it, once it runs)
    (src / "empty dir").mkdir()
    r = project.cli("sync", "--host", "dataset", "--check")
    assert "; make 1 empty directory (e.g. 'empty dir')" in step(project)["msg"], step(project)
    r = project.cli("sync", "--host", "dataset")
    assert r.returncode == 0 and (data_dir / "my data" / "empty dir").is_dir(), step(project)
    r = project.cli("sync", "--host", "dataset")
    assert step(project)["status"] == "ok", step(project)
    # change one file: only it is sent
    (src / "sub dir" / "nested.bin").write_bytes(os.urandom(70_001))
    r = project.cli("sync", "--host", "dataset", "--check")
    assert r.returncode == 0 and "would send 1 of 6" in step(project)["msg"], step(project)
    assert tree_digest(data_dir / "my data") != tree_digest(src)  # check mode sent nothing
    r = project.cli("sync", "--host", "dataset")
    s = step(project)
    assert s["status"] == "changed" and s["diff"]["sent_files"] == 1, s
    assert tree_digest(data_dir / "my data") == tree_digest(src)


def start_sync(project: Project, *args: str) -> subprocess.Popen[str]:
    """`invoke sync ARGS` in the background (output captured as text)."""
    return subprocess.Popen(
        [*project.cli_argv(), "sync", *args],
        cwd=project.root,
        env=project.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def ssh_masters_left(project: Project) -> list[str]:
    """Command lines of live processes using this project's generated OpenSSH configs (a master
    connection left running would be one: ControlPersist keeps it for a minute)."""
    needle = str(project.root / ".gpuonboard" / "ssh")
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
            except OSError:
                continue
            if needle in cmd:
                found.append(cmd)
    return found


def test_missing_source_and_flags_override(project: Project, tmp_path: Path) -> None:
    setup(project, tmp_path)
    logins = project.pool.log_counts("dataset")["logins"]
    r = project.cli("sync", "--host", "dataset", "--dataset", str(tmp_path / "nope"))
    assert r.returncode == 2, r.stdout + r.stderr  # (an explicit --dataset: before connecting)
    assert r.stderr == f"error: --dataset {tmp_path / 'nope'} does not exist; check the path.\n"
    assert project.pool.log_counts("dataset")["logins"] == logins
    # the inventory's dataset: the step says so, from the host
    h = project.pool.hosts["dataset"]
    entry = host_entry(h, project.pool, data_dir=str(tmp_path / "remote data"))
    entry["vars"].update({"dataset": str(tmp_path / "nope"), "keep_shards": True})
    project.write_inventory({"dataset": entry})
    r = project.cli("sync", "--host", "dataset")
    assert r.returncode == 1 and "does not exist" in step(project)["msg"]
    setup(project, tmp_path / "again")
    # the upload's master connection, started while logging in, was closed with the failure
    assert ssh_masters_left(project) == []
    other = tmp_path / "elsewhere"
    r = project.cli("sync", "--host", "dataset", "--dest", str(other))
    assert r.returncode == 0, r.stdout
    assert (other / "my data" / "plain.txt").read_text() == "hello\n"
    assert ssh_masters_left(project) == []


def test_refused_login_starts_no_upload_connection(project: Project, tmp_path: Path) -> None:
    """The local scan and the master connection start before the login; a refused login ends
    the host at once, one sentence, and no OpenSSH master is left behind."""
    src, data_dir = setup(project, tmp_path)
    other = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    h = project.pool.hosts["dataset"]
    entry = host_entry(h, project.pool, data_dir=str(data_dir), key_file=str(other))
    entry["vars"]["dataset"] = str(src)
    project.write_inventory({"dataset": entry})
    r = project.cli("sync", "--host", "dataset", "--connect-retries", "0")
    assert r.returncode == 3, r.stdout + r.stderr
    assert "refused the login" in project.summary()["hosts"][0]["msg"]
    assert "Traceback" not in r.stdout + r.stderr
    assert ssh_masters_left(project) == [] and not data_dir.exists()


def test_interrupted_upload_resumes(project: Project, tmp_path: Path) -> None:
    src, data_dir = setup(project, tmp_path)
    big = src / "big.bin"
    big.write_bytes(os.urandom(20 * 1024 * 1024))
    proc = start_sync(project, "--host", "dataset", "--bwlimit", "8m")
    # wait until part of big.bin sits in the partial dir, then kill the local rsync by PID
    deadline = time.monotonic() + 20
    killed = False
    while time.monotonic() < deadline and not killed:
        time.sleep(0.2)
        for p in (data_dir / "my data").rglob("*"):
            partial = ".gpuonboard-rsync-partial" in p.parts or p.name.startswith(".big.bin.")
            if partial and p.is_file() and p.stat().st_size > 4 * 1024 * 1024:
                for pid in _children(proc.pid):
                    if _cmdline(pid).startswith("rsync"):
                        os.kill(pid, signal.SIGTERM)
                        killed = True
                break
    proc.communicate(timeout=30)
    assert killed, "the transfer finished before it could be interrupted"
    assert proc.returncode == 1
    assert "rerun to resume" in step(project)["msg"]
    assert not (data_dir / "my data" / "big.bin").exists()  # a half file never looks complete
    r = project.cli("sync", "--host", "dataset")
    assert r.returncode == 0, r.stdout
    s = step(project)
    assert s["status"] == "changed"
    assert s["diff"]["literal_bytes"] < 17 * 1024 * 1024, s  # the part already there was not re-sent
    assert tree_digest(data_dir / "my data") == tree_digest(src)


def _children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == pid:
                out.append(int(d.name))
    return out


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _wait_for_lease(lease: Path, timeout: float = 20) -> None:
    """Until a run holds the host lease `lease` (its holder line is written)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and "holder " not in (lease.read_text() if lease.exists() else ""):
        time.sleep(0.05)


def _rsyncs_of(proc: subprocess.Popen[str], count: int = 1, timeout: float = 20) -> list[int]:
    """The pids of `proc`'s rsync children, once at least `count` run (fewer after `timeout`)."""
    rsyncs: list[int] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and len(rsyncs) < count:
        time.sleep(0.1)
        rsyncs = [pid for pid in _children(proc.pid) if _cmdline(pid).startswith("rsync")]
    return rsyncs


needs_age = pytest.mark.skipif(shutil.which("age") is None, reason="Debian `age` not installed")


def _age_key(tmp_path: Path) -> tuple[Path, str]:
    return age_key(tmp_path / "keys")


def _secret_line(key: Path) -> str:
    return next(ln for ln in key.read_text().splitlines() if ln.startswith("AGE-SECRET-KEY-"))


@needs_age
def test_encrypted_upload_decrypt_on_host(project: Project, tmp_path: Path) -> None:
    key, pub = _age_key(tmp_path)
    src, data_dir = setup(project, tmp_path, age_recipients=[pub], age_identity_file=str(key))
    (src / "plain.txt").chmod(0o640)
    r = project.cli("sync", "--host", "dataset", "--encrypt", "--decrypt-on-host")
    assert r.returncode == 0, r.stdout + r.stderr
    s = step(project)
    assert s["status"] == "changed", s
    assert "; 1 symlink of the dataset is not uploaded in encrypted mode (e.g. 'link to plain')" in s["msg"]
    want = {k: v for k, v in tree_digest(src).items() if not v.startswith("link:")}
    assert tree_digest(data_dir / "my data") == want
    for rel in want:  # the local file's mode, as rsync -a keeps it (the temp file was 0600)
        mode = stat.S_IMODE((data_dir / "my data" / rel).stat().st_mode)
        assert mode == stat.S_IMODE((src / rel).stat().st_mode), (rel, oct(mode))
    cipher = tree_digest(data_dir / "my data.encrypted")
    assert set(cipher) == {k + ".age" for k in want}
    # rsync's --files-from list was this run's own temp file, removed (not a shared <host>.batch)
    assert list((project.root / ".gpuonboard" / "ssh").glob("*batch")) == []
    # no key material anywhere on the host's side (data dir, host home)
    secret = key.read_text().split("AGE-SECRET-KEY-")[1].split()[0]
    h = project.pool.hosts["dataset"]
    for root in (data_dir, h.home):
        for p in root.rglob("*"):
            if p.is_file() and not p.is_symlink():
                assert secret.encode() not in p.read_bytes(), p
    # the run log never shows it either
    for log in (project.root / ".gpuonboard" / "logs").iterdir():
        assert secret not in log.read_text()
    # rerun: cached ciphertexts, nothing to send or decrypt
    r = project.cli("sync", "--host", "dataset", "--encrypt", "--decrypt-on-host")
    assert r.returncode == 0 and step(project)["status"] == "ok", step(project)
    # a file deleted here stays in the plaintext dir too, and the message says so
    (src / "-leading-dash").unlink()
    r = project.cli("sync", "--host", "dataset", "--encrypt", "--decrypt-on-host")
    assert r.returncode == 0 and step(project)["status"] == "ok", step(project)
    assert (
        f"; 1 file in {data_dir}/my data on the host is not in the dataset and kept there"
        " (e.g. '-leading-dash')"
    ) in step(project)["msg"], step(project)["msg"]


@needs_age
def test_tampered_ciphertext_and_wrong_identity(project: Project, tmp_path: Path) -> None:
    key, pub = _age_key(tmp_path)
    wrong_dir = tmp_path / "wrong"
    wrong_dir.mkdir()
    wrong, _ = _age_key(wrong_dir)
    src, data_dir = setup(project, tmp_path, age_recipients=[pub], age_identity_file=str(wrong))
    r = project.cli("sync", "--host", "dataset", "--encrypt", "--decrypt-on-host")
    # known before any connection (exit 2, issue 27): the identity's public key is not a recipient
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip() == (
        "error: dataset: wrong identity: the age key in vars.age_identity_file is not one of"
        " vars.age_recipients, so the host could not decrypt what would be sent; fix one of them, then"
        " rerun (nothing was sent)."
    ), r.stderr
    assert not data_dir.exists()
    # tamper with one cached ciphertext (as if corrupted): verification re-sends it, decrypt
    # with the right key still refuses a truncated one and leaves no partial plaintext
    setup_key = {"age_recipients": [pub], "age_identity_file": str(key)}
    setup_dataset = project.pool.hosts["dataset"]
    entry = host_entry(setup_dataset, project.pool, data_dir=str(data_dir))
    entry["vars"].update({"dataset": str(src), **setup_key})
    project.write_inventory({"dataset": entry})
    r = project.cli("sync", "--host", "dataset", "--encrypt", "--decrypt-on-host")
    assert r.returncode == 0, r.stdout
    shutil.rmtree(data_dir)  # the host lost its copy; the local ciphertext cache stays
    cache = project.root / ".gpuonboard" / "cache" / "encrypted"
    victim = max(cache.glob("*.age"), key=lambda p: p.stat().st_size)
    data = victim.read_bytes()
    os.chmod(victim, 0o644)
    victim.write_bytes(data[: len(data) // 2])  # truncated ciphertext
    # its sha256 noted at encryption time catches it: removed, the rerun re-encrypts
    r = project.cli("sync", "--host", "dataset", "--encrypt", "--decrypt-on-host")
    assert r.returncode == 1, r.stdout
    assert "was damaged on this machine" in step(project)["msg"], step(project)
    assert not victim.exists()
    # without that note (an older cache), the host's decryption refuses it
    victim.write_bytes(data[: len(data) // 2])
    r = project.cli("sync", "--host", "dataset", "--encrypt", "--decrypt-on-host")
    assert r.returncode == 1, r.stdout
    assert "decrypt" in step(project)["msg"], step(project)
    assert not (data_dir / "my data" / "sub dir" / "nested.bin").exists()
    leftovers = [p for p in (data_dir / "my data").rglob(".gpuonboard-dec*")]
    assert leftovers == []


def test_progress_events_parse_in_process(tmp_path: Path) -> None:
    """run_rsync feeds live progress updates to its callback (local copy, same parser)."""
    from gpuonboard import transfer

    src = tmp_path / "s"
    src.mkdir()
    (src / "f").write_bytes(os.urandom(2_000_000))
    seen: list[transfer.ProgressUpdate] = []
    lock = threading.Lock()

    def on(u: transfer.ProgressUpdate) -> None:
        with lock:
            seen.append(u)

    run = transfer.run_rsync(
        ["rsync", "-a", "--info=progress2", "--stats", "--bwlimit=2m", f"{src}/", f"{tmp_path / 'd'}/"], on
    )
    assert run.exit_code == 0 and run.stats.files_transferred == 1
    assert seen and seen[-1].percent == 100


def test_shard_mode_round_trip_and_one_shard_resent(project: Project, tmp_path: Path) -> None:
    """2,000 small files in shards, unpacked on the host byte-identical; one file changed ->
    exactly one shard re-sent; rerun -> ok; check mode sends nothing."""
    src = tmp_path / "local" / "many"
    for i in range(2000):
        d = src / f"dir{i % 13}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f {i:04d}.bin").write_bytes(os.urandom(200 + i % 700))
    data_dir = tmp_path / "remote data"
    h = project.pool.hosts["dataset"]
    entry = host_entry(h, project.pool, data_dir=str(data_dir))
    entry["vars"].update(
        {"dataset": str(src), "shard_size": "96KiB", "shard_threshold": 1000, "keep_shards": True}
    )
    project.write_inventory({"dataset": entry})
    r = project.cli("sync", "--host", "dataset", "--unpack")
    assert r.returncode == 0, r.stdout + r.stderr
    s = step(project)
    assert s["status"] == "changed", s
    n_shards = s["diff"]["shards"]
    assert n_shards >= 8 and s["diff"]["sent_shards"] == n_shards, s
    assert tree_digest(data_dir / "many") == tree_digest(src)
    cache = project.root / ".gpuonboard" / "cache" / "shards"
    assert len(json.loads(next(cache.glob("*/index.json")).read_text())) == n_shards
    # the uploaded manifest: every shard on the host with its true sha256 and size, every file
    # with its size; the last shard was renamed by the closing command (no .incoming-* left)
    on_host = data_dir / "many.shards"
    manifest = json.loads((on_host / "manifest.json").read_text())
    assert manifest["format"] == "gpuonboard-shards/3" and len(manifest["shards"]) == n_shards
    for sh in manifest["shards"]:
        stored = (on_host / sh["name"]).read_bytes()
        assert hashlib.sha256(stored).hexdigest() == sh["sha256"] and len(stored) == sh["size"], sh["name"]
    listed = {f["path"]: f["size"] for sh in manifest["shards"] for f in sh["files"]}
    assert listed == {p.relative_to(src).as_posix(): p.stat().st_size for p in src.rglob("*.bin")}
    assert not [p for p in on_host.iterdir() if p.name.startswith(".incoming-")]
    before = sorted(p.relative_to(data_dir).as_posix() for p in data_dir.rglob("*"))
    r = project.cli("sync", "--host", "dataset", "--unpack")
    assert r.returncode == 0 and step(project)["status"] == "ok", step(project)
    # the stream opened ahead while planning was closed unused: nothing on the host changed
    assert sorted(p.relative_to(data_dir).as_posix() for p in data_dir.rglob("*")) == before
    assert ssh_masters_left(project) == []
    (src / "dir5" / "f 0005.bin").write_bytes(os.urandom(999))
    r = project.cli("sync", "--host", "dataset", "--unpack", "--check")
    assert "send 1 of" in step(project)["msg"], step(project)
    assert tree_digest(data_dir / "many") != tree_digest(src)
    r = project.cli("sync", "--host", "dataset", "--unpack")
    s = step(project)
    assert r.returncode == 0 and s["diff"]["sent_shards"] == 1, s
    assert tree_digest(data_dir / "many") == tree_digest(src)
    remote_shards = [p for p in (data_dir / "many.shards").iterdir() if p.name.endswith(".tar")]
    assert len(remote_shards) == n_shards  # the replaced shard was removed on the host


@needs_age
def test_encrypted_shards_decrypted_on_host(project: Project, tmp_path: Path) -> None:
    key, pub = _age_key(tmp_path)
    src, data_dir = setup(project, tmp_path, age_recipients=[pub], age_identity_file=str(key))
    r = project.cli("sync", "--host", "dataset", "--encrypt", "--decrypt-on-host", "--shards")
    assert r.returncode == 0, r.stdout + r.stderr
    assert step(project)["status"] == "changed", step(project)
    assert tree_digest(data_dir / "my data") == tree_digest(src)
    assert all(
        p.name.endswith((".age", ".json")) or p.name.startswith("unpacked-")
        for p in (data_dir / "my data.shards").iterdir()
    )
    # the manifest on the host is encrypted too: the dataset's paths are no less private
    import pyrage

    stored = (data_dir / "my data.shards" / "manifest.json").read_bytes()
    assert stored.startswith(b"age-encryption.org/v1\n")
    assert not any(rel.encode() in stored for rel in tree_digest(src))
    doc = json.loads(pyrage.decrypt(stored, [pyrage.x25519.Identity.from_str(_secret_line(key))]))
    assert {f["path"] for sh in doc["shards"] for f in sh["files"]} >= set(tree_digest(src))
    r = project.cli("sync", "--host", "dataset", "--encrypt", "--decrypt-on-host", "--shards")
    assert r.returncode == 0 and step(project)["status"] == "ok", step(project)
    assert (data_dir / "my data.shards" / "manifest.json").read_bytes() == stored  # (one ciphertext)
    # a file the dataset dropped: the encrypted manifest, decrypted here, vouches that an upload
    # put it there (not the user's own file in the tree), so the new tree goes in without it
    dropped = sorted(tree_digest(src))[0]
    (src / dropped).unlink()
    r = project.cli("sync", "--host", "dataset", "--encrypt", "--decrypt-on-host", "--shards")
    assert r.returncode == 0 and step(project)["status"] == "changed", step(project)
    assert tree_digest(data_dir / "my data") == tree_digest(src)


def test_shard_upload_interrupted_then_resumed(project: Project, tmp_path: Path) -> None:
    """Kill the shard stream's ssh half-way (a dropped link): no incomplete shard gets a real name,
    the rerun sends only what had not arrived (plus at most the shard in flight), and the tree
    unpacked on the host is byte-identical."""
    src = tmp_path / "local" / "many"
    for i in range(1500):
        d = src / f"d{i % 7}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i:05d}").write_bytes(os.urandom(8192))
    total = 1500 * (8192 + 512)
    data_dir = tmp_path / "remote data"
    h = project.pool.hosts["dataset"]
    entry = host_entry(h, project.pool, data_dir=str(data_dir))
    entry["vars"].update(
        {"dataset": str(src), "shard_size": "1MiB", "shard_threshold": 1000, "keep_shards": True}
    )
    project.write_inventory({"dataset": entry})
    proc = start_sync(project, "--host", "dataset", "--unpack", "--bwlimit", "2m")
    shard_dir = data_dir / "many.shards"
    deadline = time.monotonic() + 30
    killed = False
    while time.monotonic() < deadline and not killed:
        time.sleep(0.1)
        whole = list(shard_dir.glob("*.tar")) if shard_dir.is_dir() else []
        if len(whole) >= 2 and list(shard_dir.glob(".incoming-*")):  # 2 arrived, one in flight
            for pid in _children(proc.pid):
                if _cmdline(pid).startswith("ssh "):
                    os.kill(pid, signal.SIGTERM)
                    killed = True
    proc.communicate(timeout=60)
    assert killed, "the transfer finished before it could be interrupted"
    assert proc.returncode == 1
    msg = step(project)["msg"]
    assert "rerun to resume" in msg and "shards arrived" in msg, msg
    # nothing unverified looks complete: every named shard is whole (its name is its sha256)
    for p in shard_dir.glob("*.tar"):
        assert hashlib.sha256(p.read_bytes()).hexdigest()[:32] == p.name[:-4]
    assert not (data_dir / "many").exists()
    r = project.cli("sync", "--host", "dataset", "--unpack")
    assert r.returncode == 0, r.stdout + r.stderr
    s = step(project)
    assert s["status"] == "changed", s
    first = int(re.search(r"\((\d+) of \d+ shards arrived", msg).group(1))  # type: ignore[union-attr]
    assert first >= 2, msg
    assert s["diff"]["sent_shards"] <= s["diff"]["shards"] - first + 1, s
    # re-sent bytes: what had not arrived + at most one shard (4x guard) + 1 %
    assert s["diff"]["literal_bytes"] <= total - first * 512 * 1024 + 4 * 1024 * 1024 + total // 100, s
    assert tree_digest(data_dir / "many") == tree_digest(src)
    assert not list(data_dir.glob(".*.gpuonboard-unpack-*"))
    assert not list(shard_dir.glob(".incoming-*"))


@needs_age
def test_decrypt_to_tmpfs_leaves_no_plaintext_on_disk(project: Project, tmp_path: Path) -> None:
    """--decrypt-to /dev/shm/...: ciphertexts on the data disk, plaintext only in tmpfs; a rerun
    after the tmpfs copy vanished (a reboot) unpacks again."""
    key, pub = _age_key(tmp_path)
    src, data_dir = setup(project, tmp_path, age_recipients=[pub], age_identity_file=str(key))
    shm = Path(f"/dev/shm/gpuonboard-test-{os.getpid()}-{tmp_path.name}")
    if not Path("/dev/shm").is_dir():
        pytest.skip("no /dev/shm here")
    flags = ["--encrypt", "--decrypt-on-host", "--shards", "--decrypt-to", str(shm)]
    try:
        r = project.cli("sync", "--host", "dataset", *flags)
        assert r.returncode == 0, r.stdout + r.stderr
        assert tree_digest(shm / "my data") == tree_digest(src)
        assert not (data_dir / "my data").exists()  # nothing decrypted on the data disk
        assert any(p.name.endswith(".age") for p in (data_dir / "my data.shards").iterdir())
        r = project.cli("sync", "--host", "dataset", *flags)
        assert r.returncode == 0 and step(project)["status"] == "ok", step(project)
        shutil.rmtree(shm)  # what a reboot does to tmpfs
        r = project.cli("sync", "--host", "dataset", *flags)
        s = step(project)
        assert r.returncode == 0 and s["status"] == "changed" and s["diff"]["sent_shards"] == 0, s
        assert tree_digest(shm / "my data") == tree_digest(src)
        r = project.cli(
            "sync", "--host", "dataset", "--decrypt-to", "relative/dir", "--encrypt", "--decrypt-on-host"
        )
        assert r.returncode == 2 and "must be an absolute path" in r.stdout + r.stderr, r.stdout + r.stderr
    finally:
        shutil.rmtree(shm, ignore_errors=True)


def _flip_byte(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


def test_tampered_shards_on_the_host_are_caught(project: Project, tmp_path: Path) -> None:
    """A shard damaged on the host (same size) is caught by its sha256 before it is unpacked,
    removed, and re-sent by the rerun; the unpacked tree is never half-replaced."""
    src = tmp_path / "local" / "many"
    for i in range(1200):
        d = src / f"d{i % 5}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i:05d}").write_bytes(os.urandom(300 + i % 500))
    data_dir = tmp_path / "remote data"
    entry = host_entry(project.pool.hosts["dataset"], project.pool, data_dir=str(data_dir))
    entry["vars"].update(
        {"dataset": str(src), "shard_size": "64KiB", "shard_threshold": 1000, "keep_shards": True}
    )
    project.write_inventory({"dataset": entry})
    assert project.cli("sync", "--host", "dataset", "--unpack").returncode == 0
    before = tree_digest(data_dir / "many")
    # the victim: any shard but the one holding the file changed below (that one is re-sent anyway)
    manifest = json.loads((data_dir / "many.shards" / "manifest.json").read_text())
    holder = next(
        sh["name"] for sh in manifest["shards"] if any(f["path"] == "d0/f00000" for f in sh["files"])
    )
    assert (data_dir / "many.shards" / holder).is_file(), holder
    shard_files = sorted(p for p in (data_dir / "many.shards").glob("*.tar") if p.name != holder)
    victim = shard_files[len(shard_files) // 2]
    _flip_byte(victim, 700)
    (src / "d0" / "f00000").write_bytes(b"changed")  # another shard changes: the rest is re-unpacked
    r = project.cli("sync", "--host", "dataset", "--unpack")
    msg = step(project)["msg"]
    assert r.returncode == 1 and f"shard {victim.name} on the host was damaged" in msg, msg
    assert tree_digest(data_dir / "many") == before  # untouched: no half-replaced tree
    assert not victim.exists() and not list(data_dir.glob(".*.gpuonboard-unpack-*"))
    r = project.cli("sync", "--host", "dataset", "--unpack")
    s = step(project)
    assert r.returncode == 0 and s["diff"]["sent_shards"] == 1, s  # the damaged one, re-sent
    assert tree_digest(data_dir / "many") == tree_digest(src)


@needs_age
def test_tampered_encrypted_shard_fails_without_plaintext(project: Project, tmp_path: Path) -> None:
    key, pub = _age_key(tmp_path)
    src, data_dir = setup(project, tmp_path, age_recipients=[pub], age_identity_file=str(key))
    flags = ["--encrypt", "--decrypt-on-host", "--shards"]
    assert project.cli("sync", "--host", "dataset", *flags).returncode == 0
    shutil.rmtree(data_dir / "my data")  # force unpacking from the shards on the host
    (shard,) = (data_dir / "my data.shards").glob("*.age")
    _flip_byte(shard, shard.stat().st_size // 2)
    r = project.cli("sync", "--host", "dataset", *flags)
    msg = step(project)["msg"]
    assert r.returncode == 1 and "age" in msg and shard.name in msg, msg
    assert msg.startswith(f"shard {shard.name} on the host was damaged (age: error: "), msg
    assert msg.endswith(") and has been removed; rerun to re-send it"), msg
    assert not (data_dir / "my data").exists() and not list(data_dir.glob(".*.gpuonboard-unpack-*"))
    assert not shard.exists()  # removed, so the rerun re-sends it (it was stuck failing before)
    r = project.cli("sync", "--host", "dataset", *flags)
    assert r.returncode == 0 and step(project)["diff"]["sent_shards"] == 1, step(project)
    want = {k: v for k, v in tree_digest(src).items() if not v.startswith("link:")}
    assert {k: v for k, v in tree_digest(data_dir / "my data").items() if not v.startswith("link:")} == want


def test_passphrase_encrypted_shards_open_with_age_and_zstd(
    project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Passphrase mode in shard mode: the host holds age(zstd|gzip(tar)); the passphrase opens
    it (pyrage, interoperable with `age -d`) and the tar holds the dataset's files."""
    import io
    import tarfile

    import pyrage

    monkeypatch.setenv("GPOB_TEST_PASS", "correct horse battery staple")
    src, data_dir = setup(project, tmp_path, age_passphrase_env="GPOB_TEST_PASS")
    r = project.cli("sync", "--host", "dataset", "--encrypt", "--shards")
    assert r.returncode == 0, r.stdout + r.stderr
    (shard,) = (data_dir / "my data.shards").glob("*.age")
    packed = pyrage.passphrase.decrypt(shard.read_bytes(), "correct horse battery staple")
    tool = ["zstd", "-dc"] if shard.name.endswith(".tar.zst.age") else ["gzip", "-dc"]
    plain = subprocess.run(tool, input=packed, capture_output=True, check=True).stdout
    assert hashlib.sha256(plain).hexdigest()[:32] == shard.name.split(".")[0]
    with tarfile.open(fileobj=io.BytesIO(plain)) as tar:
        names = {m.name for m in tar.getmembers() if not m.isdir()}
    assert names == set(tree_digest(src))
    # the manifest (the dataset's paths) opens with the passphrase only
    doc = json.loads(
        pyrage.passphrase.decrypt(
            (data_dir / "my data.shards" / "manifest.json").read_bytes(), "correct horse battery staple"
        )
    )
    assert {f["path"] for sh in doc["shards"] for f in sh["files"]} >= names
    for log in (project.root / ".gpuonboard" / "logs").glob("*.log"):
        assert "correct horse" not in log.read_text()


def test_what_warm_opens_is_closed_by_release_even_late(project: Project, tmp_path: Path) -> None:
    """The dataset step opens its OpenSSH master (and shard mode's first stream) before the
    login when the host key is recorded already. release() closes them; one still opening when
    the host's run ends is closed by its own thread; the host is not touched either way."""
    import base64

    import paramiko

    from gpuonboard import inventory, transfer
    from gpuonboard.connection import KnownHosts, known_hosts_name
    from gpuonboard.steps.base import Warm
    from gpuonboard.steps.dataset import DatasetStep

    src, data_dir = setup(project, tmp_path)
    h = project.pool.hosts["dataset"]
    known = project.root / ".gpuonboard" / "known_hosts"
    store = KnownHosts(known)
    blob = base64.b64decode(h.host_key_pub.split()[1])
    store.add(known_hosts_name(h.address, h.port), paramiko.Ed25519Key(data=blob))
    inv = inventory.load(project.root / "inventory")
    host = inv.hosts["dataset"]

    def warmed() -> DatasetStep:
        step = DatasetStep({"source": str(src), "dest": str(data_dir), "shards": True})
        step.warm(Warm(host, inv, project.root, known, False, store=store))
        return step

    step = warmed()  # opened in full, then released
    assert step._early_master is not None
    step._early_master.join(30)
    assert step._first is not None and ssh_masters_left(project)  # what the check below sees
    step.release()
    assert ssh_masters_left(project) == []

    step = warmed()  # released while its thread is still logging in
    step.release()
    assert step._early_master is not None
    step._early_master.join(30)
    assert ssh_masters_left(project) == [] and not data_dir.exists()

    # auto mode: once the local scan has ended, its file count says whether shard mode's first
    # stream is worth opening (below the threshold, a plain upload: it was opened unused)
    transfer.prescan(src)
    deadline = time.monotonic() + 30
    while transfer.prescanned(src) is None and time.monotonic() < deadline:
        time.sleep(0.01)
    for args, first in (({}, False), ({"shard_threshold": 0}, True)):
        step = DatasetStep({"source": str(src), "dest": str(data_dir), **args})
        step.warm(Warm(host, inv, project.root, known, False, store=store))
        assert step._early_master is not None
        step._early_master.join(30)
        assert (step._first is not None) is first and ssh_masters_left(project), args
        step.release()
        assert ssh_masters_left(project) == []


def test_preflight_measures_the_upload_speed_when_the_upload_is_long(
    project: Project, tmp_path: Path
) -> None:
    """An upload that would take 200 s or more at the configured speed gets a 2 s throughput
    probe over the master connection first, and its ETA says so; `upload_probe: false` (or a
    --bwlimit) keeps the configured speed; short uploads are never probed."""
    src, data_dir = setup(project, tmp_path, upload_mbit=0.001)  # ~80 KB at 1 kbit/s: ~10 min
    r = project.cli("sync", "--host", "dataset")
    assert r.returncode == 0, r.stdout + r.stderr
    msg = step(project)["msg"]
    rate = re.search(r"estimate was .* at ([0-9.]+) Mbit/s ≈ [^(]*\(measured\)", msg)
    assert rate and float(rate.group(1)) > 1, msg  # loopback: far above the configured 0.001
    (src / "plain.txt").write_text("changed\n")
    r = project.cli("sync", "--host", "dataset", "--bwlimit", "50m")
    assert r.returncode == 0 and "(configured)" in step(project)["msg"], step(project)
    setup(project, tmp_path / "2", upload_mbit=0.001, upload_probe=False)
    assert project.cli("sync", "--host", "dataset").returncode == 0
    assert "at 0.001 Mbit/s ≈ 10 min (configured)" in step(project)["msg"], step(project)
    setup(project, tmp_path / "3")  # 100 Mbit/s: far below 200 s, no probe
    assert project.cli("sync", "--host", "dataset").returncode == 0
    assert "(configured)" in step(project)["msg"], step(project)


def test_a_stalled_probe_never_hangs_the_upload(project: Project, tmp_path: Path) -> None:
    """The host swallows nothing (its `head -c` stalls for 20 s): the probe gives up after its
    round timeout (`upload_probe_timeout`, 1 s here; 15 s by default) and the ETA falls back to
    the configured speed; a bad upload_probe or upload_probe_timeout is one sentence."""
    from gpuonboard.testing.toolbox import add_executable

    h = project.pool.hosts["dataset"]
    real = shutil.which("head")
    stall = f'#!/bin/sh\ncase "$1" in -c) exec sleep 20 ;; esac\nexec {real} "$@"\n'
    setup(project, tmp_path, upload_mbit=0.001, upload_probe_timeout=1)
    fake = add_executable(h.bin_dir, "head", stall)
    try:
        start = time.monotonic()
        r = project.cli("sync", "--host", "dataset")
        took = time.monotonic() - start
    finally:
        fake.unlink()
    assert r.returncode == 0, r.stdout + r.stderr
    # (a probe that waited for the stalled host would take the 20 s, and say "(measured)")
    assert "(configured)" in step(project)["msg"] and took < 10, (took, step(project))
    setup(project, tmp_path / "2", upload_probe="flase")
    r = project.cli("sync", "--host", "dataset")
    assert r.returncode == 1 and step(project)["msg"] == (
        "upload_probe must be auto, true or false, not 'flase' (vars.upload_probe or the step's upload_probe)"
    ), step(project)
    setup(project, tmp_path / "3", upload_probe_timeout="soon")
    r = project.cli("sync", "--host", "dataset")
    assert r.returncode == 1 and step(project)["msg"] == (
        "upload_probe_timeout must be a number of seconds above 0, not 'soon'"
        " (vars.upload_probe_timeout or the step's upload_probe_timeout)"
    ), step(project)
    setup(project, tmp_path / "4", shard_threshold="lots")  # (was an internal error)
    r = project.cli("sync", "--host", "dataset")
    assert r.returncode == 1 and step(project)["msg"] == (
        "shard_threshold must be a whole number of files, not 'lots'"
        " (vars.shard_threshold or the step's shard_threshold)"
    ), step(project)


def test_a_second_upload_to_the_same_host_copy_is_turned_away(project: Project, tmp_path: Path) -> None:
    """Two syncs of one dataset to one host at once: the second fails at once with one
    sentence naming the first (nothing of the first is disturbed); once the first ends, a
    rerun is free again (the kernel dropped the lock)."""
    src, data_dir = setup(project, tmp_path)
    (src / "big.bin").write_bytes(os.urandom(6 * 1024 * 1024))
    first = start_sync(project, "--host", "dataset", "--unpack", "--bwlimit", "1m")  # ~6 s: past the runs
    try:
        locks = project.root / ".gpuonboard" / "locks"
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not any(
            p.read_text().startswith("pid ") for p in locks.glob("*.lock")
        ):
            time.sleep(0.05)
        holder = next(locks.glob("*.lock")).read_text().strip()
        assert holder.startswith(f"pid {first.pid} since "), holder
        second = project.cli("sync", "--host", "dataset", "--unpack")
        assert first.poll() is None, "the first upload ended before the second started"
    finally:
        out, err = first.communicate(timeout=60)
    assert second.returncode == 1, second.stdout + second.stderr
    assert (
        f"another gpuonboard upload to dataset:{data_dir}/my data is running on this machine"
        f" ({holder}); wait for it to finish (or stop it), then rerun"
    ) in second.stdout, second.stdout
    assert "Traceback" not in second.stdout + second.stderr
    assert first.returncode == 0, out + err
    assert tree_digest(data_dir / "my data") == tree_digest(src)
    r = project.cli("sync", "--host", "dataset", "--unpack")
    assert r.returncode == 0 and step(project)["status"] == "ok", r.stdout
    assert ssh_masters_left(project) == []


def other_project(project: Project, tmp_path: Path) -> Project:
    """A second project dir (as on another machine) with the same inventory."""
    other = Project(tmp_path / "other machine", project.pool)
    for d in ("playbooks", "templates", "inventory"):
        (other.root / d).mkdir(parents=True)
        shutil.copytree(project.root / d, other.root / d, dirs_exist_ok=True, symlinks=True)
    return other


def test_a_live_upload_from_elsewhere_is_turned_away_by_the_host_lease(
    project: Project, tmp_path: Path
) -> None:
    """Another machine (another project dir: this machine's lock does not see it) uploading
    the same copy while one runs: turned away at once by the lease on the host, one sentence
    naming the running one; the running one finishes untouched and gives the lease back."""
    src, data_dir = setup(project, tmp_path)
    (src / "big.bin").write_bytes(os.urandom(12 * 1024 * 1024))
    other = other_project(project, tmp_path)
    lease = data_dir / ".my data.gpuonboard-upload"
    first = start_sync(project, "--host", "dataset", "--bwlimit", "1m")  # ~12 s: past the 3 runs below
    try:
        _wait_for_lease(lease)
        second = other.cli("sync", "--host", "dataset")
        checks = [p.cli("sync", "--host", "dataset", "--check") for p in (other, project)]
        assert first.poll() is None, "the first upload ended before the second started"
    finally:
        out, err = first.communicate(timeout=60)
    assert second.returncode == 1, second.stdout + second.stderr
    for check in checks:  # check mode says it too (not rsync's temp names as files "kept there")
        assert check.returncode == 1 and f"pid {first.pid}, started" in check.stdout, check.stdout
        assert "kept there" not in check.stdout and "Traceback" not in check.stdout + check.stderr
    pattern = (
        rf"another gpuonboard upload to dataset:{re.escape(str(data_dir))}/my data is running from"
        rf" \S+, pid {first.pid}, started [-0-9]+ [:0-9]+ \(last heard from (\d+) s ago\); wait for it to"
        r" finish, or if that run was stopped, rerun in (\d+) s"
    )
    m = re.search(pattern, second.stdout)
    assert m and int(m[1]) + int(m[2]) == 60, second.stdout
    assert "Traceback" not in second.stdout + second.stderr
    assert first.returncode == 0, out + err
    assert tree_digest(data_dir / "my data") == tree_digest(src)
    assert not lease.exists()  # given back
    r = other.cli("sync", "--host", "dataset")
    assert r.returncode == 0 and other.summary()["hosts"][0]["steps"][0]["status"] == "ok", r.stdout


def test_a_killed_uploads_lease_is_taken_over_by_its_rerun_and_stale_ones_by_anyone(
    project: Project, tmp_path: Path
) -> None:
    """SIGKILL (nothing gives the lease back): a rerun from the same project takes it over at
    once (this machine's lock proves the old run has ended); from elsewhere it is refused until
    the lease is STALE_S old (the host's clock), then taken over."""
    src, data_dir = setup(project, tmp_path)
    (src / "big.bin").write_bytes(os.urandom(6 * 1024 * 1024))
    other = other_project(project, tmp_path)
    lease = data_dir / ".my data.gpuonboard-upload"
    first = subprocess.Popen(
        [*project.cli_argv(), "sync", "--host", "dataset", "--bwlimit", "2m"],
        cwd=project.root,
        env=project.env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own process group: the kill reaches its rsync and ssh too
    )
    _wait_for_lease(lease)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait(timeout=30)
    assert f"pid {first.pid}," in lease.read_text()  # left behind
    r = other.cli("sync", "--host", "dataset")
    assert r.returncode == 1 and "is running from " in r.stdout and f"pid {first.pid}," in r.stdout, r.stdout
    old = time.time() - 61
    os.utime(lease, (old, old))
    r = other.cli("sync", "--host", "dataset", "--check")  # check mode takes no lease
    assert r.returncode == 0 and lease.exists(), r.stdout
    # the same project again, at once: taken over, finished, given back
    os.utime(lease, None)
    r = project.cli("sync", "--host", "dataset")
    assert r.returncode == 0, r.stdout
    assert tree_digest(data_dir / "my data") == tree_digest(src) and not lease.exists()
    # a stale lease of another project: taken over by anyone
    (src / "plain.txt").write_text("changed\n")
    lease.write_text("token feed\nowner someone-else\nholder far-away, pid 9, started T\n")
    os.utime(lease, (old, old))
    r = other.cli("sync", "--host", "dataset")
    assert r.returncode == 0, r.stdout
    assert tree_digest(data_dir / "my data") == tree_digest(src) and not lease.exists()


@pytest.fixture
def small_disk(tmp_path: Path) -> Any:
    """mount(path, size): a real, small tmpfs at path (a full disk on either side of the
    upload), unmounted after the test; skipped where this process may not mount."""
    mounted: list[Path] = []

    def mount(path: Path, size: str) -> Path:
        path.mkdir(parents=True, exist_ok=True)
        r = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(path)],
            capture_output=True,
            text=True,
        )
        if r.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
        mounted.append(path)
        return path

    yield mount
    for path in reversed(mounted):
        subprocess.run(["umount", "-l", str(path)], check=False)


def _fill(disk: Path, leave: int) -> Path:
    """Fill a tmpfs up to `leave` free bytes with one filler file."""
    st = os.statvfs(disk)
    filler = disk / "filler"
    with filler.open("wb") as f:
        f.truncate(0)
        left = st.f_bavail * st.f_frsize - leave
        while left > 0:
            try:
                left -= f.write(b"\0" * min(left, 1 << 20))
            except OSError as exc:  # the upload took the last of it meanwhile: full all the same
                if exc.errno != errno.ENOSPC:
                    raise
                break
    return filler


@needs_age
@pytest.mark.parametrize("mode", ["plain", "shards"])
def test_a_full_local_disk_while_encrypting_is_one_sentence(
    project: Project, tmp_path: Path, small_disk: Any, mode: str
) -> None:
    """The ciphertext cache's disk fills up: the step fails with one sentence naming the dir and
    the remedy, leaves no temp ciphertext behind, and once there is room the rerun completes."""
    key, pub = _age_key(tmp_path)
    src, data_dir = setup(project, tmp_path, age_recipients=[pub], age_identity_file=str(key))
    (src / "big.bin").write_bytes(os.urandom(6 * 1024 * 1024))
    cache = small_disk(project.root / ".gpuonboard" / "cache" / "encrypted", "3m")
    flags = ["--shards"] if mode == "shards" else []
    r = project.cli("sync", "--host", "dataset", "--encrypt", *flags)
    assert r.returncode == 1, r.stdout + r.stderr
    what = "big.bin" if mode == "plain" else "shard 1"
    kept = (
        "what already arrived is not sent again"
        if mode == "plain"
        else "0 of 1 shards arrived, only the rest is sent"
    )
    assert step(project)["msg"] == (
        f"no space left on this machine for the encrypted copy of {what} under {cache}; free space"
        f" there (or set the step's cache_dir to a bigger disk), then rerun: {kept}"
    )
    assert "Traceback" not in r.stdout + r.stderr
    assert [p.name for p in cache.iterdir() if p.name.startswith(".")] == []  # no temp ciphertext
    subprocess.run(["umount", str(cache)], check=True)  # room again (the project's own disk)
    r = project.cli("sync", "--host", "dataset", "--encrypt", *flags)
    assert r.returncode == 0, r.stdout + r.stderr
    assert step(project)["status"] == "changed"


def _bytes_under(root: Path) -> int:
    """Bytes in the files under root now (files renamed or removed meanwhile are skipped: the
    upload renames its temp files as it goes)."""
    total = 0
    for dirpath, _, names in os.walk(root):
        for name in names:
            with contextlib.suppress(FileNotFoundError):
                total += os.lstat(os.path.join(dirpath, name)).st_size
    return total


@pytest.mark.parametrize("mode", ["plain", "shards"])
def test_the_host_disk_filling_up_mid_transfer_is_clear_and_resumable(
    project: Project, tmp_path: Path, small_disk: Any, mode: str
) -> None:
    """Free space was enough when planned; something else on the host fills the disk while the
    upload runs: one sentence saying the remote disk is full, exit 1, no complete-looking half
    file; after room is made the rerun finishes byte-identical."""
    src, data_dir = setup(project, tmp_path)
    (src / "big.bin").write_bytes(os.urandom(8 * 1024 * 1024))
    disk = small_disk(data_dir, "16m")
    flags = ["--unpack"] if mode == "shards" else []
    if mode == "shards":  # the preflight counts the shards AND the unpacked tree
        r = project.cli("sync", "--host", "dataset", *flags)
        assert r.returncode == 1 and step(project)["msg"] == (
            f"not enough space under {data_dir} on dataset: 16.0 MiB free, 16.2 MiB needed for 1"
            " shards (the shards, and the whole tree unpacked beside the current one); free space first"
        ), step(project)
        subprocess.run(["mount", "-o", "remount,size=24m", str(disk)], check=True)
    proc = start_sync(project, "--host", "dataset", "--bwlimit", "2m", *flags)
    deadline = time.monotonic() + 20
    filler = None
    while time.monotonic() < deadline and filler is None:
        time.sleep(0.05)
        written = _bytes_under(disk)
        if written > 1024 * 1024:  # the upload is under way: the rest of the disk goes elsewhere
            filler = _fill(disk, 256 * 1024)
    out, err = proc.communicate(timeout=60)
    assert filler is not None, "the upload never started: " + out[-1500:] + err[-800:]
    assert proc.returncode == 1, out + err
    msg = step(project)["msg"]
    assert "the remote disk is full (" in msg and "rerun to resume (" in msg, msg
    assert "No space left on device" in msg.split("the remote disk is full (")[1].split(")")[0], msg
    assert "Traceback" not in out + err
    assert not (data_dir / "my data" / "big.bin").exists()  # a half file never looks complete
    filler.unlink()
    r = project.cli("sync", "--host", "dataset", *flags)
    assert r.returncode == 0, r.stdout + r.stderr
    assert tree_digest(data_dir / "my data") == tree_digest(src)


def test_an_upload_lock_that_cannot_be_made_is_one_sentence(project: Project, tmp_path: Path) -> None:
    src, data_dir = setup(project, tmp_path)
    (project.root / ".gpuonboard").mkdir(exist_ok=True)
    (project.root / ".gpuonboard" / "locks").write_text("not a directory\n")
    r = project.cli("sync", "--host", "dataset")
    assert r.returncode == 1, r.stdout + r.stderr
    assert step(project)["msg"] == (
        f"cannot create the upload lock under {project.root / '.gpuonboard' / 'locks'}: File exists;"
        " check that directory"
    )
    assert not (data_dir / "my data").exists() and ssh_masters_left(project) == []


@pytest.mark.parametrize("mode", [(), ("--encrypt", "--decrypt-on-host"), ("--shards", "--unpack")])
def test_a_file_name_that_is_not_utf8_round_trips_and_reruns(
    project: Project, tmp_path: Path, mode: tuple[str, ...]
) -> None:
    """A name with bytes that are not UTF-8 (an old Latin-1 archive), in each mode: uploaded
    (decrypted, unpacked) byte for byte, reported (the summary stays valid JSON), and a rerun
    finds nothing to do."""
    if mode and mode[0] == "--encrypt" and shutil.which("age") is None:
        pytest.skip("age not installed")
    key, pub = _age_key(tmp_path)
    src, data_dir = setup(project, tmp_path, age_recipients=[pub], age_identity_file=str(key))
    if mode and mode[0] == "--encrypt":
        (src / "link to plain").unlink()  # symlinks travel in plain and shard mode only
    raw = os.fsencode(src) + b"/caf\xe9 dir"
    os.mkdir(raw)
    with open(raw + b"/na\xefve.txt", "wb") as f:
        f.write(b"latin-1\n")
    for n, args in enumerate(((), ("--check",), ())):
        r = project.cli("sync", "--host", "dataset", *mode, *args)
        assert r.returncode == 0, r.stdout + r.stderr
        assert step(project)["status"] == ("changed" if n == 0 else "ok"), step(project)
    assert (os.fsencode(data_dir) + b"/my data/caf\xe9 dir/na\xefve.txt") in [
        os.path.join(d, f) for d, _, fs in os.walk(os.fsencode(data_dir)) for f in fs
    ]
    assert tree_digest(data_dir / "my data") == tree_digest(src)


def test_a_single_file_dataset_sends_that_file_only(project: Project, tmp_path: Path) -> None:
    """--dataset pointing at one file: only it travels, never its neighbours (a key beside
    it, the rest of the disk)."""
    folder = tmp_path / "downloads"
    (folder / "private").mkdir(parents=True)
    (folder / "weights.bin").write_bytes(os.urandom(3000))
    (folder / "my-age-identity.txt").write_text("AGE-SECRET-KEY-1NOTREAL\n")
    (folder / "private" / "passwords.txt").write_text("pw\n")
    setup(project, tmp_path)
    r = project.cli("sync", "--host", "dataset", "--dataset", str(folder / "weights.bin"))
    assert r.returncode == 0, r.stdout + r.stderr
    arrived = tmp_path / "remote data" / "weights.bin"
    assert sorted(p.relative_to(arrived).as_posix() for p in arrived.rglob("*")) == ["weights.bin"]
    assert (arrived / "weights.bin").read_bytes() == (folder / "weights.bin").read_bytes()
    # the message names the file where it is, not only its copy dir
    assert f"to dataset:{arrived}/weights.bin;" in step(project)["msg"], step(project)["msg"]
    r = project.cli("sync", "--host", "dataset", "--dataset", str(folder / "weights.bin"))
    assert r.returncode == 0 and step(project)["status"] == "ok", r.stdout
    assert f"up to date at dataset:{arrived}/weights.bin (" in step(project)["msg"], step(project)["msg"]
    # a symlink to one file: that file's content, still alone
    (tmp_path / "latest.bin").symlink_to(folder / "weights.bin")
    r = project.cli("sync", "--host", "dataset", "--dataset", str(tmp_path / "latest.bin"))
    assert r.returncode == 0, r.stdout
    arrived = tmp_path / "remote data" / "latest.bin"
    assert [p.name for p in arrived.iterdir()] == ["weights.bin"]
    assert not (arrived / "weights.bin").is_symlink()


def _many_small(src: Path, n: int = 600) -> None:
    for i in range(n):
        d = src / f"dir{i % 7}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i:04d}.bin").write_bytes(os.urandom(300 + i % 500))


def _unpacked_upload(project: Project, tmp_path: Path, n: int = 600) -> tuple[Path, Path]:
    """n small files (600; above 100: shard mode) uploaded in 64 KiB shards with --unpack:
    (source, data dir)."""
    src = tmp_path / "local" / "many"
    _many_small(src, n)
    data_dir = tmp_path / "remote data"
    entry = host_entry(project.pool.hosts["dataset"], project.pool, data_dir=str(data_dir))
    entry["vars"].update(
        {"dataset": str(src), "shard_size": "64KiB", "shard_threshold": 100, "keep_shards": True}
    )
    project.write_inventory({"dataset": entry})
    assert project.cli("sync", "--host", "dataset", "--unpack").returncode == 0
    return src, data_dir


def test_shards_the_host_has_are_recognised_without_this_machines_index(
    project: Project, tmp_path: Path
) -> None:
    """A fresh clone of the project, a teammate's machine or a deleted cache has no shard index:
    the shards already on the host are recognised by hashing here, not sent again (a metered
    link paid for twice); a changed file still sends its one shard."""
    src, data_dir = _unpacked_upload(project, tmp_path)
    n_shards = step(project)["diff"]["shards"]
    assert n_shards >= 4, step(project)
    on_host = data_dir / "many.shards"
    stamps = {p.name: p.stat().st_mtime_ns for p in on_host.iterdir()}
    cache = project.root / ".gpuonboard" / "cache"
    shutil.rmtree(cache)
    r = project.cli("sync", "--host", "dataset", "--unpack")
    s = step(project)
    assert r.returncode == 0 and s["status"] == "ok", s
    assert s["msg"] == (
        f"dataset up to date at dataset:{data_dir}/many.shards (600 entries in {n_shards} shards);"
        f" nothing sent; {n_shards} shards already on the host recognised by hashing here (this"
        " machine's shard index did not list them)"
    ), s["msg"]
    assert {p.name: p.stat().st_mtime_ns for p in on_host.iterdir()} == stamps  # nothing rewritten
    # what it learnt is kept: the next run reads no file to know it
    r = project.cli("sync", "--host", "dataset", "--unpack")
    assert step(project)["msg"].endswith(f" in {n_shards} shards); nothing sent"), step(project)
    shutil.rmtree(cache)
    (src / "dir3" / "f 0003.bin").write_bytes(os.urandom(777))
    r = project.cli("sync", "--host", "dataset", "--unpack")
    s = step(project)
    assert r.returncode == 0 and s["status"] == "changed" and s["diff"]["sent_shards"] == 1, s
    assert f"; {n_shards - 1} shards already on the host recognised" in s["msg"], s["msg"]
    assert tree_digest(data_dir / "many") == tree_digest(src)


def test_shards_without_unpack_never_call_an_old_manifest_up_to_date(
    project: Project, tmp_path: Path
) -> None:
    """A deleted file that travelled alone in its shard (any file of half a shard or more) needs
    no shard sent, but the host's manifest and that shard are the old ones: not "up to date";
    an emptied manifest is rewritten too."""
    src = tmp_path / "local" / "big"
    src.mkdir(parents=True)
    for n in "abc":
        (src / f"{n}.bin").write_bytes(os.urandom(40_000))
    data_dir = tmp_path / "remote data"
    entry = host_entry(project.pool.hosts["dataset"], project.pool, data_dir=str(data_dir))
    entry["vars"].update({"dataset": str(src), "shard_size": "64KiB"})
    project.write_inventory({"dataset": entry})
    assert project.cli("sync", "--host", "dataset", "--shards").returncode == 0
    store = data_dir / "big.shards"
    assert len(list(store.glob("*.tar"))) == 3
    (src / "b.bin").unlink()
    where = f"dataset:{store}"
    r = project.cli("sync", "--host", "dataset", "--shards", "--check")
    assert r.returncode == 0 and step(project)["msg"] == (
        f"would update the manifest; remove 1 old or partial shard: all 2 shards of 2 entries are at"
        f" {where} already, nothing to send (check mode: nothing changed)"
    ), step(project)["msg"]
    r = project.cli("sync", "--host", "dataset", "--shards")
    s = step(project)
    assert r.returncode == 0 and s["status"] == "changed", s
    assert s["msg"] == (
        f"all 2 shards were at {where} already; nothing sent; manifest updated; 1 old or partial"
        " shard removed"
    ), s["msg"]
    listed = {
        f["path"] for sh in json.loads((store / "manifest.json").read_text())["shards"] for f in sh["files"]
    }
    assert listed == {"a.bin", "c.bin"} and len(list(store.glob("*.tar"))) == 2
    r = project.cli("sync", "--host", "dataset", "--shards")
    assert step(project)["status"] == "ok" and "up to date" in step(project)["msg"], step(project)
    (store / "manifest.json").write_bytes(b"")
    r = project.cli("sync", "--host", "dataset", "--shards")
    assert step(project)["msg"].endswith("nothing sent; manifest updated"), step(project)["msg"]
    assert json.loads((store / "manifest.json").read_text())["shards"]


def test_what_stands_where_a_copy_or_a_shard_goes_is_named_before_sending(
    project: Project, tmp_path: Path
) -> None:
    """The copy's dir is a file on the host (check mode said "would send", the run failed in
    mkdir); a directory stands where a shard is renamed to (the shard went INTO it, and every
    rerun sent it again): one sentence each, in check mode too, nothing sent."""
    src, data_dir = setup(project, tmp_path)
    data_dir.mkdir()
    (data_dir / "my data").write_text("a file, not a dir\n")
    for args in (("--check",), ()):
        r = project.cli("sync", "--host", "dataset", *args)
        assert r.returncode == 1 and step(project)["msg"] == (
            f"dataset:{data_dir}/my data is there and is not a directory (this upload's copy goes"
            " there); move it away (or delete it) there, then rerun (nothing was sent)"
        ), step(project)["msg"]
    (data_dir / "my data").unlink()
    assert project.cli("sync", "--host", "dataset", "--shards").returncode == 0
    store = data_dir / "my data.shards"
    shard = next(store.glob("*.tar"))
    shard.unlink()
    shard.mkdir()
    (shard / "inner").write_text("x\n")
    for args in (("--check",), ()):
        r = project.cli("sync", "--host", "dataset", "--shards", *args)
        assert r.returncode == 1 and step(project)["msg"] == (
            f"dataset:{shard} is a directory where a shard, the manifest or a marker goes; move it away"
            " (or delete it) there, then rerun (nothing was sent)"
        ), step(project)["msg"]
    assert [p.name for p in shard.iterdir()] == ["inner"]
    shutil.rmtree(shard)
    assert project.cli("sync", "--host", "dataset", "--shards", "--unpack").returncode == 0
    marker = next(store.glob("unpacked-*"))
    marker.unlink()
    marker.mkdir()  # where the unpack's marker goes ("cannot create ...: Is a directory", every run)
    for args in (("--check",), ()):
        r = project.cli("sync", "--host", "dataset", "--shards", "--unpack", *args)
        assert r.returncode == 1 and step(project)["msg"] == (
            f"dataset:{marker} is a directory where a shard, the manifest or a marker goes; move it"
            " away (or delete it) there, then rerun (nothing was sent)"
        ), step(project)["msg"]


@needs_age
def test_decrypt_on_host_over_an_unpacked_tree_never_trusts_its_mtimes(
    project: Project, tmp_path: Path
) -> None:
    """An unpacked tree's files carry the unpack's mtimes: a file edited (same size) in that very
    second matched by size and mtime, was never decrypted, and the run said verified, then "up to
    date". After an unpack, plain --decrypt-on-host decrypts every file once."""
    src, data_dir = _unpacked_upload(project, tmp_path, n=150)  # (each file is encrypted here)
    key, pub = _age_key(tmp_path)
    entry = host_entry(project.pool.hosts["dataset"], project.pool, data_dir=str(data_dir))
    entry["vars"].update(
        {
            "dataset": str(src),
            "shard_threshold": 100000,
            "age_recipients": [pub],
            "age_identity_file": str(key),
        }
    )
    project.write_inventory({"dataset": entry})
    edited = src / "dir2" / "f0002.bin"
    data = bytearray(edited.read_bytes())
    data[0] ^= 0xFF
    edited.write_bytes(bytes(data))
    there = (data_dir / "many" / "dir2" / "f0002.bin").stat().st_mtime
    os.utime(edited, (there, there))  # the unpack's second
    r = project.cli("sync", "--host", "dataset", "--encrypt", "--decrypt-on-host", "--check")
    assert (
        "(all: the tree there was unpacked from shards, so its mtimes prove nothing)" in step(project)["msg"]
    )
    r = project.cli("sync", "--host", "dataset", "--encrypt", "--decrypt-on-host")
    assert r.returncode == 0, r.stdout + r.stderr
    assert tree_digest(data_dir / "many") == tree_digest(src)
    r = project.cli("sync", "--host", "dataset", "--encrypt", "--decrypt-on-host")
    assert r.returncode == 0 and step(project)["status"] == "ok", step(project)  # once only


def test_an_unpacked_tree_damaged_on_the_host_is_unpacked_again(project: Project, tmp_path: Path) -> None:
    """--unpack: a rerun checks the unpacked tree's listing (paths, kinds, sizes) against the
    dataset, not only the marker: a deleted dir, a truncated file or a tree removed whole is
    unpacked again from the shards already there (nothing re-sent), and said so."""
    src, data_dir = _unpacked_upload(project, tmp_path)
    tree = data_dir / "many"
    assert tree_digest(tree) == tree_digest(src)
    shutil.rmtree(tree / "dir3")
    (tree / "dir1" / "f0001.bin").write_bytes(b"short")
    r = project.cli("sync", "--host", "dataset", "--unpack", "--check")
    s = step(project)
    assert r.returncode == 0 and s["status"] == "changed", s
    assert (
        f"the unpacked tree {tree} differs from the dataset (87 missing or changed, e.g. 'dir1/f0001.bin')"
        in s["msg"]
    )
    r = project.cli("sync", "--host", "dataset", "--unpack")
    s = step(project)
    assert r.returncode == 0 and s["status"] == "changed" and s["diff"]["sent_shards"] == 0, s
    assert s["msg"].endswith(  # the final message says why too, not only the plan
        f"unpacked into {tree}; the unpacked tree {tree} differs from the dataset (87 missing or"
        " changed, e.g. 'dir1/f0001.bin'): unpacked again"
    ), s["msg"]
    assert tree_digest(tree) == tree_digest(src)
    shutil.rmtree(tree)
    r = project.cli("sync", "--host", "dataset", "--unpack")
    assert r.returncode == 0 and step(project)["diff"]["sent_shards"] == 0, step(project)
    assert tree_digest(tree) == tree_digest(src)
    r = project.cli("sync", "--host", "dataset", "--unpack")
    assert r.returncode == 0 and step(project)["status"] == "ok", step(project)


def test_unpack_never_swaps_away_files_it_did_not_put_there(project: Project, tmp_path: Path) -> None:
    """A file the user wrote into the unpacked tree (a checkpoint): left alone while nothing is
    to be unpacked; when an unpack is due, the run refuses (check mode too) naming it, and
    loses nothing. A file deleted from the dataset (it came from an earlier upload) is dropped
    without a question."""
    src, data_dir = _unpacked_upload(project, tmp_path)
    tree = data_dir / "many"
    # under the user's own rsync's partial dir (listings left `.rsync-partial` out at any depth:
    # the swap dropped it unseen)
    (tree / "outputs" / ".rsync-partial").mkdir(parents=True)
    (tree / "outputs" / ".rsync-partial" / "ckpt.pt").write_bytes(b"precious")
    r = project.cli("sync", "--host", "dataset", "--unpack")
    assert r.returncode == 0 and step(project)["status"] == "ok", step(project)
    (src / "dir2" / "f0002.bin").write_bytes(b"changed")
    sentence = (
        f"dataset:{tree} holds a file that is in neither the dataset nor a shard upload's manifest"
        " ('outputs/.rsync-partial/ckpt.pt'): a job's output, or left by a plain-mode upload;"
        " --unpack replaces that directory whole, so move it out first (or delete it if unwanted, or unpack"
        " elsewhere with --dest), then rerun"
    )
    for args in (("--check",), ()):
        r = project.cli("sync", "--host", "dataset", "--unpack", *args)
        assert r.returncode == 1 and sentence in r.stdout, r.stdout
    assert (tree / "outputs" / ".rsync-partial" / "ckpt.pt").read_bytes() == b"precious"
    shutil.move(tree / "outputs", tmp_path / "saved outputs")
    (src / "dir4" / "f0004.bin").unlink()  # uploaded before: dropped from the tree, no question
    # (even after a --shards run without --unpack replaced the manifest it was in)
    assert project.cli("sync", "--host", "dataset", "--shards").returncode == 0
    r = project.cli("sync", "--host", "dataset", "--unpack")
    assert r.returncode == 0, r.stdout
    assert tree_digest(tree) == tree_digest(src)


def test_unpack_keeps_the_empty_dirs_a_job_made_in_the_tree(project: Project, tmp_path: Path) -> None:
    """Empty directories a job created in the unpacked tree (an output dir not written yet)
    survive the swap with their mode; where the dataset now has a file or a symlink at that
    path (or on the way to it), the dataset wins and nothing is made through the symlink."""
    src, data_dir = _unpacked_upload(project, tmp_path)
    tree = data_dir / "many"
    (tree / "outputs" / "run1").mkdir(parents=True)
    (tree / "outputs" / "run1").chmod(0o700)
    (tree / "dir3" / "empty").mkdir()
    (tree / "taken").mkdir()
    (src / "taken").write_bytes(b"a dataset file where the host had an empty dir")
    (tree / "link" / "sub" / "deeper").mkdir(parents=True)  # the dataset now has a symlink there
    outside = tmp_path / "outside"
    outside.mkdir()
    (src / "link").symlink_to(outside)
    for i in range(300):
        (tree / "many empty" / f"e{i:03d}").mkdir(parents=True)
    (src / "dir2" / "f0002.bin").write_bytes(b"changed")
    r = project.cli("sync", "--host", "dataset", "--unpack")
    assert r.returncode == 0 and step(project)["status"] == "changed", r.stdout
    assert tree_digest(tree) == tree_digest(src)
    assert (tree / "outputs" / "run1").is_dir() and (tree / "dir3" / "empty").is_dir()
    assert stat.S_IMODE((tree / "outputs" / "run1").stat().st_mode) == 0o700
    assert (tree / "taken").read_bytes() == b"a dataset file where the host had an empty dir"
    assert os.readlink(tree / "link") == str(outside) and list(outside.iterdir()) == []  # not through it
    assert len(list((tree / "many empty").iterdir())) == 300


def test_a_file_a_job_writes_into_the_tree_during_an_unpack_upload_is_never_swapped_away(
    project: Project, tmp_path: Path
) -> None:
    """The plan found nothing foreign in the unpacked tree, then a job wrote a checkpoint into
    it while the shards travelled (and a file deleted from the dataset waits to be dropped): the
    old tree's files the new one lacks are not the set the plan saw, so the closing command keeps
    the old tree whole; the rerun names the file, and once it is moved out unpacks without
    re-sending."""
    src, data_dir = _unpacked_upload(project, tmp_path)
    tree = data_dir / "many"
    (src / "dir1" / "f0001.bin").unlink()  # dropped from the tree by the next unpack: expected
    (src / "big.bin").write_bytes(os.urandom(3 * 1024 * 1024))
    lease = data_dir / ".many.gpuonboard-upload"
    run = start_sync(project, "--host", "dataset", "--unpack", "--bwlimit", "1m")
    try:
        _wait_for_lease(lease)
        (tree / "ckpt.pt").write_bytes(b"precious")
        assert run.poll() is None, "the upload ended before the job wrote"
    finally:
        out, err = run.communicate(timeout=60)
    assert run.returncode == 1, out + err
    assert (
        f"the tree {tree} changed during the upload (files not in the dataset appeared in it, or ones"
        " it no longer has vanished: a job at work?); it was not replaced and nothing was lost: see"
        " what is there, then rerun (the shards are on the host: nothing is sent again)"
    ) in out, out
    assert (tree / "ckpt.pt").read_bytes() == b"precious" and (tree / "dir1" / "f0001.bin").exists()
    r = project.cli("sync", "--host", "dataset", "--unpack")
    assert r.returncode == 1 and "('ckpt.pt')" in r.stdout, r.stdout
    shutil.move(tree / "ckpt.pt", tmp_path / "ckpt.pt")
    r = project.cli("sync", "--host", "dataset", "--unpack")
    assert r.returncode == 0 and step(project)["diff"]["sent_shards"] == 0, r.stdout
    assert tree_digest(tree) == tree_digest(src)


def test_unpack_never_swaps_away_a_fifo_a_job_made_in_the_tree(project: Project, tmp_path: Path) -> None:
    src, data_dir = _unpacked_upload(project, tmp_path)
    tree = data_dir / "many"
    os.mkfifo(tree / "job.fifo")
    (src / "dir2" / "f0002.bin").write_bytes(b"changed")
    r = project.cli("sync", "--host", "dataset", "--unpack")
    assert r.returncode == 1 and "('job.fifo')" in step(project)["msg"], r.stdout
    assert stat.S_ISFIFO((tree / "job.fifo").lstat().st_mode)


def test_a_job_trading_one_file_for_another_during_an_unpack_is_still_caught(
    project: Project, tmp_path: Path
) -> None:
    """The job removes the file the dataset dropped and writes one of its own (the same count),
    while a dataset file became a directory (its old path is no loss): the closing command
    compares the paths, not how many, and keeps the old tree."""
    src, data_dir = _unpacked_upload(project, tmp_path)
    tree = data_dir / "many"
    (src / "dir1" / "f0001.bin").unlink()
    (src / "dir2" / "f0002.bin").unlink()
    (src / "dir2" / "f0002.bin").mkdir()
    (src / "dir2" / "f0002.bin" / "a.bin").write_bytes(b"a")
    (src / "big.bin").write_bytes(os.urandom(3 * 1024 * 1024))
    lease = data_dir / ".many.gpuonboard-upload"
    run = start_sync(project, "--host", "dataset", "--unpack", "--bwlimit", "1m")
    try:
        _wait_for_lease(lease)
        (tree / "dir1" / "f0001.bin").unlink()
        (tree / "dir3" / "ckpt.pt").write_bytes(b"precious")
        assert run.poll() is None, "the upload ended before the job wrote"
    finally:
        out, err = run.communicate(timeout=60)
    assert run.returncode == 1 and f"the tree {tree} changed during the upload" in out, out + err
    assert (tree / "dir3" / "ckpt.pt").read_bytes() == b"precious"
    (tree / "dir3" / "ckpt.pt").unlink()
    r = project.cli("sync", "--host", "dataset", "--unpack")
    assert r.returncode == 0 and tree_digest(tree) == tree_digest(src), r.stdout


def test_sigterm_mid_upload_stops_rsync_too_and_the_rerun_resumes(project: Project, tmp_path: Path) -> None:
    """`kill PID` (SIGTERM to the CLI alone, not its group): unwound like Ctrl-C, exit 143,
    one word; its rsync is gone (it went on sending alone, outliving the upload lock); the
    rerun resumes."""
    src, data_dir = setup(project, tmp_path)
    (src / "big.bin").write_bytes(os.urandom(12 * 1024 * 1024))
    proc = start_sync(project, "--host", "dataset", "--bwlimit", "4m")
    rsyncs = _rsyncs_of(proc)
    assert rsyncs, "no rsync started"
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 143 and err.strip().endswith("terminated"), out + err
    assert "Traceback" not in out + err
    for pid in rsyncs:
        assert not Path(f"/proc/{pid}").exists() or "rsync" not in _cmdline(pid), "rsync outlived the CLI"
    assert not (data_dir / "my data" / "big.bin").exists()
    r = project.cli("sync", "--host", "dataset")
    assert r.returncode == 0, r.stdout
    assert step(project)["diff"]["literal_bytes"] < 12 * 1024 * 1024, step(project)
    assert tree_digest(data_dir / "my data") == tree_digest(src)


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs util-linux setpriv (--pdeathsig)")
def test_sigkill_of_the_cli_alone_takes_its_rsync_along(project: Project, tmp_path: Path) -> None:
    """SIGKILL to the CLI (no handler runs): its rsync gets SIGTERM from the kernel (parent-death
    signal) instead of writing on alone, so the rerun, which takes the lease over at once, is
    the only writer, and what it verified stays on the host."""
    src, data_dir = setup(project, tmp_path)
    (src / "big.bin").write_bytes(os.urandom(16 * 1024 * 1024))  # 16 s at 1m: rsync would outlive
    proc = start_sync(project, "--host", "dataset", "--bwlimit", "1m")
    rsyncs = _rsyncs_of(proc)
    assert rsyncs, "no rsync started"
    time.sleep(0.5)
    proc.kill()
    proc.communicate(timeout=30)
    deadline = time.monotonic() + 20  # (gone at once; later on a loaded machine)
    while time.monotonic() < deadline and any(
        Path(f"/proc/{pid}").exists() and "rsync" in _cmdline(pid) for pid in rsyncs
    ):
        time.sleep(0.1)
    for pid in rsyncs:
        assert not Path(f"/proc/{pid}").exists() or "rsync" not in _cmdline(pid), "rsync outlived the CLI"
    (src / "big.bin").write_bytes(os.urandom(16 * 1024 * 1024))  # a new version, the same size
    r = project.cli("sync", "--host", "dataset")
    assert r.returncode == 0, r.stdout
    time.sleep(2)
    assert tree_digest(data_dir / "my data") == tree_digest(src)


def _without_dac_override(project: Project) -> list[str]:
    """The CLI as root without CAP_DAC_OVERRIDE/DAC_READ_SEARCH: a mode-000 file is unreadable
    to it as to any user (its own files, the key, the project, stay readable: it owns them)."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to make a file unreadable to the CLI")
    return [
        "setpriv",
        "--inh-caps=-all",
        "--bounding-set=-dac_override,-dac_read_search",
        *project.cli_argv(),
    ]


def test_an_unreadable_file_or_dir_in_the_dataset_is_one_sentence(project: Project, tmp_path: Path) -> None:
    """Plain mode: a file this process may not read (rsync skips it, the hashing fails) and a
    directory it may not list (the scan fails): each one sentence naming it, exit 1, never
    'internal error'; once fixed, the rerun completes."""
    src, data_dir = setup(project, tmp_path)
    argv = _without_dac_override(project)
    secret = src / "noread.txt"
    secret.write_text("s\n")
    secret.chmod(0)

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*argv, "sync", "--host", "dataset"],
            cwd=project.root,
            env=project.env(),
            capture_output=True,
            text=True,
        )

    r = run()
    assert r.returncode == 1, r.stdout + r.stderr
    assert (
        "cannot read noread.txt in the dataset on this machine: Permission denied; fix it (or move it"
        " out), then rerun: what already arrived is not sent again"
    ) in r.stdout, r.stdout
    secret.chmod(0o644)
    closed = src / "sub dir" / "closed"
    closed.mkdir()
    closed.chmod(0)
    r = run()
    assert r.returncode == 1 and "Traceback" not in r.stdout + r.stderr, r.stdout + r.stderr
    assert (
        "cannot read sub dir/closed in the dataset on this machine: Permission denied; fix it (or move"
        " it out), then rerun: nothing was sent"
    ) in r.stdout, r.stdout
    closed.chmod(0o755)
    r = run()
    assert r.returncode == 0, r.stdout + r.stderr
    assert tree_digest(data_dir / "my data") == tree_digest(src)
    # shard mode: the packing meets it
    secret.chmod(0)
    r = subprocess.run(
        [*argv, "sync", "--host", "dataset", "--shards"],
        cwd=project.root,
        env=project.env(),
        capture_output=True,
        text=True,
    )
    assert r.returncode == 1, r.stdout + r.stderr
    assert (
        "cannot read noread.txt in the dataset on this machine: Permission denied; fix it (or move it"
        " out), then rerun: 0 of 1 shards arrived, only the rest is sent"
    ) in r.stdout, r.stdout


def test_a_shard_upload_killed_hard_resumes_from_what_arrived(project: Project, tmp_path: Path) -> None:
    """SIGKILL to the whole CLI (an OOM kill, a power cut: nothing runs at the end): the local
    index and hash cache were saved while shards arrived, so the rerun sends only what had not
    arrived (plus at most the shards since the last save), not everything again."""
    src = tmp_path / "local" / "many"
    for i in range(1200):
        d = src / f"d{i % 7}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i:05d}").write_bytes(os.urandom(8192))
    data_dir = tmp_path / "remote data"
    entry = host_entry(project.pool.hosts["dataset"], project.pool, data_dir=str(data_dir))
    entry["vars"].update(
        {"dataset": str(src), "shard_size": "1MiB", "shard_threshold": 1000, "keep_shards": True}
    )
    project.write_inventory({"dataset": entry})
    proc = subprocess.Popen(
        [*project.cli_argv(), "sync", "--host", "dataset", "--unpack", "--bwlimit", "2m"],
        cwd=project.root,
        env=project.env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    shard_dir = data_dir / "many.shards"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(list(shard_dir.glob("*.tar"))) < 3:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    arrived = len(list(shard_dir.glob("*.tar")))
    assert arrived >= 3
    r = project.cli("sync", "--host", "dataset", "--unpack")
    assert r.returncode == 0, r.stdout + r.stderr
    s = step(project)
    assert s["diff"]["sent_shards"] <= s["diff"]["shards"] - arrived + 2, s
    assert tree_digest(data_dir / "many") == tree_digest(src)


def test_the_plan_says_what_it_keeps_on_the_host_and_sizes_only_what_travels(
    project: Project, tmp_path: Path
) -> None:
    """Plain mode keeps host files the dataset no longer has (rsync without --delete) and says
    so, "up to date" included; with --decrypt-on-host the bytes to send and the ETA are the
    upload's (the plaintext's room on the host is checked, not sent)."""
    key, pub = _age_key(tmp_path)
    src, data_dir = setup(project, tmp_path, age_recipients=[pub], age_identity_file=str(key))
    assert project.cli("sync", "--host", "dataset").returncode == 0
    (src / "plain.txt").unlink()
    r = project.cli("sync", "--host", "dataset")
    assert r.returncode == 0 and step(project)["msg"].endswith(
        "nothing sent; 1 file on the host is not in the dataset and kept there (e.g. 'plain.txt')"
    ), step(project)
    assert (data_dir / "my data" / "plain.txt").exists()
    if shutil.which("age") is None:
        return
    (src / "link to plain").unlink()
    r = project.cli("sync", "--host", "dataset", "--encrypt", "--decrypt-on-host", "--check")
    s = step(project)
    size = sum(p.stat().st_size for p in src.rglob("*") if p.is_file())
    assert s["diff"]["bytes"] == size, (s, size)
    assert f"({format_size(size)}) to dataset:" in s["msg"], s


def format_size(n: int) -> str:
    from gpuonboard.units import format_bytes

    return format_bytes(n, binary=True)


def test_shard_mode_says_when_an_unpacked_tree_is_left_behind_or_the_dataset_is_empty(
    project: Project, tmp_path: Path
) -> None:
    """After an --unpack upload, a run without --unpack updates the shards only: the message
    says the tree there is now older. An emptied dataset sends nothing and leaves the host's
    copy (it fell through to a plain rsync into <name>.shards/, 'changed' on every run)."""
    src, data_dir = _unpacked_upload(project, tmp_path)
    (src / "dir2" / "f0002.bin").write_bytes(b"changed")
    older = (
        f"; the unpacked tree {data_dir}/many (600 files) is not updated without --unpack and will be"
        " older than the dataset"
    )
    for args in (("--check",), ()):  # the plan says it, and so does the final message
        r = project.cli("sync", "--host", "dataset", "--shards", *args)
        assert r.returncode == 0 and older in step(project)["msg"], step(project)["msg"]
    r = project.cli("sync", "--host", "dataset", "--shards")  # shards up to date, the tree is not
    assert r.returncode == 0 and step(project)["status"] == "ok", step(project)
    assert (
        f"; the unpacked tree {data_dir}/many differs from the dataset (1 path): --unpack updates it"
        in (step(project)["msg"])
    )
    shutil.rmtree(src)
    src.mkdir()
    before = tree_digest(data_dir)
    for _ in range(2):
        r = project.cli("sync", "--host", "dataset", "--shards")
        assert r.returncode == 0 and step(project)["status"] == "ok", step(project)
    assert step(project)["msg"] == (
        f"the dataset {src} is empty; nothing sent (what dataset:{data_dir}/many.shards holds is left"
        " as it is)"
    )
    assert tree_digest(data_dir) == before


def test_a_bad_flag_value_names_the_flag_not_a_line(project: Project, tmp_path: Path) -> None:
    setup(project, tmp_path)
    r = project.cli("sync", "--host", "dataset", "--bwlimit", "5kkk")
    assert r.returncode == 2, r.stdout + r.stderr
    said = "error: sync: step 'dataset': bwlimit must be a rate like 500k or 5m, not '5kkk'."
    assert said in r.stderr, r.stderr
    r = project.cli("sync", "--host", "dataset", "--dest", "~/x")
    said = "must be an absolute path on the host, like /data, not '~/x'"
    assert r.returncode == 2 and said in r.stderr, r.stderr
    for flag, name in (("--dest", "dest"), ("--decrypt-to", "decrypt_dir")):
        extra = ["--encrypt", "--decrypt-on-host"] if flag == "--decrypt-to" else []
        r = project.cli("sync", "--host", "dataset", *extra, flag, "/srv/nx/../data")
        said = f"step 'dataset': {name} must be spelt without '..', not '/srv/nx/../data'."
        assert r.returncode == 2 and said in r.stderr, r.stderr
    # a line break in the copy's name (the dataset dir's own name) or in --dest
    odd = tmp_path / "local" / "two\nlines"
    odd.mkdir()
    (odd / "x.txt").write_text("x\n")
    r = project.cli("sync", "--host", "dataset", "--dataset", str(odd))
    said = (
        "step 'dataset': name must not hold a line break or another control character (\\n, \\r,"
        " \\t, ESC, a Unicode line separator ...), not 'two\\nlines'; pick another with --name."
    )
    assert r.returncode == 2 and said in r.stderr, r.stderr
    # --name carries its value to the same check (each further line break and Cc character, one
    # by one: tests/unit/steps/dataset/test_options.py, no CLI start each)
    r = project.cli("sync", "--host", "dataset", "--dataset", str(odd), "--name", "cr\rx")
    said = (
        "step 'dataset': name must not hold a line break or another control character (\\n, \\r,"
        " \\t, ESC, a Unicode line separator ...), not 'cr\\rx'; pick another with --name."
    )
    assert r.returncode == 2 and said in r.stderr, r.stderr
    r = project.cli("sync", "--host", "dataset", "--dataset", str(odd), "--name", "two lines")
    assert r.returncode == 0 and (tmp_path / "remote data" / "two lines" / "x.txt").is_file(), r.stdout
    r = project.cli("sync", "--host", "dataset", "--dest", "/srv/a\rb")
    said = (
        "step 'dataset': dest must not hold a line break or another control character (\\n, \\r,"
        " \\t, ESC, a Unicode line separator ...), not '/srv/a\\rb'; pick another."
    )
    assert r.returncode == 2 and said in r.stderr, r.stderr
    # (the lease's and the unpack dir's names too: tests/unit/steps/dataset/test_options.py)
    r = project.cli("sync", "--host", "dataset", "--name", ".gpuonboard-copy")
    said = (
        "step 'dataset': name must not be one gpuonboard uses for its own files on the host"
        " (.gpuonboard-copy, .<name>.gpuonboard-upload, .<name>.gpuonboard-unpack-*), not"
        " '.gpuonboard-copy'; pick another with --name."
    )
    assert r.returncode == 2 and said in r.stderr, r.stderr
    r = project.cli("sync", "--host", "dataset", "--name", "corpus.shards")
    said = (
        "step 'dataset': name must not end in .encrypted or .shards (where gpuonboard keeps the"
        " ciphertexts and shards of the dataset named without it), not 'corpus.shards'; pick another"
        " with --name."
    )
    assert r.returncode == 2 and said in r.stderr, r.stderr
    r = project.cli("sync", "--host", "dataset", "--name", "é" * 108)  # 216 bytes
    said = (
        "step 'dataset': name must be at most 214 bytes (a host's file names hold 255, and gpuonboard"
        " adds up to 41 to it for its own files), not 216; pick a shorter one with --name."
    )
    assert r.returncode == 2 and said in r.stderr, r.stderr


def test_sigterm_with_several_hosts_stops_every_hosts_rsync(project: Project, tmp_path: Path) -> None:
    """Two hosts upload at once (worker threads); `kill PID` reaches the main thread only: the
    other threads' rsync is stopped too (it sent on to the end, unverified), exit 143 at once."""
    src = make_dataset(tmp_path / "local")
    (src / "big.bin").write_bytes(os.urandom(12 * 1024 * 1024))
    hosts = {}
    for name in ("dataset", "good"):
        entry = host_entry(project.pool.hosts[name], project.pool, data_dir=str(tmp_path / f"remote {name}"))
        entry["vars"].update({"dataset": str(src)})
        hosts[name] = entry
    project.write_inventory(hosts)
    proc = start_sync(project, "--host", "dataset,good", "--bwlimit", "1m")
    rsyncs = _rsyncs_of(proc, 2)
    assert len(rsyncs) == 2, "both uploads should be under way"
    proc.send_signal(signal.SIGTERM)
    start = time.monotonic()
    out, err = proc.communicate(timeout=30)
    assert time.monotonic() - start < 6, "the other host's upload ran on (12 MiB at 1 MB/s)"
    assert proc.returncode == 143 and err.strip().endswith("terminated"), out + err
    for pid in rsyncs:
        assert not Path(f"/proc/{pid}").exists() or "rsync" not in _cmdline(pid), "an rsync outlived the CLI"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_with_several_hosts_in_shard_mode_exits_at_once_and_gives_leases_back(
    project: Project, tmp_path: Path, sig: signal.Signals
) -> None:
    """Two hosts stream shards at 50 KB/s (worker threads): the --bwlimit throttle slept through
    the rest of its shard and kept the process alive after Ctrl-C, and the connections were cut
    before the workers gave their upload leases back (another project was refused for a minute)."""
    src = tmp_path / "local" / "many"
    _many_small(src, 300)
    for i in range(2):  # (one 8 MiB shard: the throttle sleeps ~20 s per MiB handed on)
        (src / f"big{i}.bin").write_bytes(os.urandom(2 << 20))
    hosts = {}
    for name in ("dataset", "good"):
        entry = host_entry(project.pool.hosts[name], project.pool, data_dir=str(tmp_path / f"remote {name}"))
        entry["vars"].update({"dataset": str(src), "shard_size": "8MiB", "shard_threshold": 100})
        hosts[name] = entry
    project.write_inventory(hosts)
    proc = start_sync(project, "--host", "dataset,good", "--shards", "--bwlimit", "50k")
    deadline = time.monotonic() + 30
    leases: list[Path] = []
    while len(leases) < 2 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
        leases = [p for name in hosts for p in (tmp_path / f"remote {name}").glob(".*.gpuonboard-upload")]
    assert len(leases) == 2, "both uploads should be under way"
    time.sleep(1.0)  # (into the throttled stream)
    proc.send_signal(sig)
    start = time.monotonic()
    out, err = proc.communicate(timeout=60)
    assert time.monotonic() - start < 8, "the process outlived the interrupt"
    assert proc.returncode == (130 if sig == signal.SIGINT else 143), out + err
    assert "Traceback" not in out + err
    left = [p for name in hosts for p in (tmp_path / f"remote {name}").glob(".*.gpuonboard-upload")]
    assert left == [], "an upload lease was left behind"


@pytest.mark.parametrize("mode", ["plain", "shards"])
def test_an_upload_whose_lease_was_taken_over_stops_before_finishing(
    project: Project, tmp_path: Path, mode: str
) -> None:
    """While this run was not heard from (a suspended laptop), another took its lease over:
    it stops before verifying (plain) or swapping in the unpacked tree (shards), one sentence."""
    src, data_dir = setup(project, tmp_path)
    (src / "big.bin").write_bytes(os.urandom(4 * 1024 * 1024))
    flags = ["--unpack"] if mode == "shards" else []
    proc = start_sync(project, "--host", "dataset", "--bwlimit", "2m", *flags)
    lease = data_dir / ".my data.gpuonboard-upload"
    _wait_for_lease(lease)
    lease.write_text("token feed\nowner elsewhere\npid 1\nholder far-away, pid 1, started T\n")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, out + err
    assert step(project)["msg"] == (
        "another run took over this upload's lease on the host while this one was not heard from for"
        " over 60 s (a suspended machine, or a stalled link); stopped before changing more there:"
        " rerun once that one has finished"
    ), step(project)
    assert "owner elsewhere" in lease.read_text()  # not ours: left to its holder
    assert not (data_dir / "my data" / "plain.txt").exists() or mode == "plain"


@needs_age
@pytest.mark.parametrize("mode", ["plain", "shards"])
def test_decrypt_to_checks_the_room_on_its_own_disk(
    project: Project, tmp_path: Path, small_disk: Any, mode: str
) -> None:
    """--decrypt-to a small tmpfs: the plaintext's room is checked there (it was counted
    against the data dir, which refused a rerun with a full data dir and passed a tmpfs too
    small), before anything is sent."""
    key, pub = _age_key(tmp_path)
    src, data_dir = setup(project, tmp_path, age_recipients=[pub], age_identity_file=str(key))
    (src / "link to plain").unlink()
    (src / "big.bin").write_bytes(os.urandom(2 * 1024 * 1024))
    shm = small_disk(tmp_path / "shm", "1m")
    flags = ["--encrypt", "--decrypt-on-host", "--decrypt-to", str(shm)]
    flags += ["--shards"] if mode == "shards" else []
    r = project.cli("sync", "--host", "dataset", *flags)
    assert r.returncode == 1, r.stdout
    msg = step(project)["msg"]
    assert msg.startswith(f"not enough space under {shm} on dataset for the ") and msg.endswith(
        "needed; free space there (or pick another --decrypt-to)"
    ), msg
    assert not data_dir.exists() or not any(data_dir.rglob("*.age"))  # nothing sent


@needs_age
@pytest.mark.parametrize("mode", ["plain", "shards"])
def test_a_decrypt_to_dir_holding_another_copys_plaintext_is_refused(
    project: Project, tmp_path: Path, mode: str
) -> None:
    """Two uploads of datasets with one name from different data dirs, both --decrypt-to one
    dir (say /dev/shm): the first marks <dir>/<name> as its copy's; the second (check mode too),
    and a plain upload whose copy is that dir, are refused with one sentence and change nothing
    there; the first's reruns go on (the mark survives the unpack's swap)."""
    key, pub = _age_key(tmp_path)
    src, data_dir = setup(project, tmp_path, age_recipients=[pub], age_identity_file=str(key))
    (src / "link to plain").unlink()
    shared = tmp_path / "shared plain"
    flags = ["--encrypt", "--decrypt-on-host", "--decrypt-to", str(shared)]
    flags += ["--shards"] if mode == "shards" else []
    r = project.cli("sync", "--host", "dataset", *flags)
    assert r.returncode == 0, r.stdout + r.stderr
    plain = shared / "my data"
    assert (plain / ".gpuonboard-copy").read_text() == f"{data_dir}/my data\n"
    before = tree_digest(plain)
    assert before == tree_digest(src)
    other = other_project(project, tmp_path)
    sentence = (
        f"dataset:{plain} holds the plaintext of another upload (of the copy {data_dir}/my data), and"
        " this run would write into it; pick another --decrypt-to, --dest or dataset name, or"
        f" remove {plain} if nothing uses it any more, then rerun"
    )
    for args in (("--check",), (), ("--dest", str(shared))):
        if args[:1] != ("--dest",):
            args = ("--dest", str(tmp_path / "other data"), *flags, *args)
        r = other.cli("sync", "--host", "dataset", *args)
        assert r.returncode == 1 and sentence in r.stdout, r.stdout + r.stderr
        assert "Traceback" not in r.stdout + r.stderr
    assert tree_digest(plain) == before
    assert not (tmp_path / "other data").exists() or not any((tmp_path / "other data").rglob("*.age"))
    # shard mode without --unpack writes <dir>/<name>.shards only: not refused
    r = other.cli("sync", "--host", "dataset", "--dest", str(shared), "--shards", "--check")
    assert r.returncode == 0 and "holds the plaintext" not in r.stdout, r.stdout
    (src / "plain.txt").write_text("changed\n")
    r = project.cli("sync", "--host", "dataset", *flags)
    assert r.returncode == 0 and step(project)["status"] == "changed", r.stdout
    assert tree_digest(plain) == tree_digest(src)
    assert (plain / ".gpuonboard-copy").read_text() == f"{data_dir}/my data\n"
    r = project.cli("sync", "--host", "dataset", *flags)
    assert r.returncode == 0 and step(project)["status"] == "ok", r.stdout


def test_a_data_dir_that_cannot_be_written_is_refused_before_sending(
    project: Project, tmp_path: Path, small_disk: Any
) -> None:
    """A data dir (here a read-only mount; for a non-root login, a dir it does not own) whose
    copy's dir exists already: the lease, the copy and an unpack's temp tree cannot be written
    there; the plan says so in one sentence naming the dir, in --check too (it said "would
    send"), for plain and shard mode, exit 1, nothing sent (every rerun failed after sending,
    saying "rerun to resume")."""
    src, data_dir = setup(project, tmp_path)
    disk = small_disk(data_dir, "1m")
    (disk / "my data").mkdir()
    subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
    want = (
        f"dataset:{data_dir} is not writable by root (this upload's lease, copy and temp files go"
        f" there); make it writable there (e.g. sudo chown root {data_dir}), or pick another --dest,"
        " then rerun (nothing was sent)"
    )
    for args in (["--check"], [], ["--shards", "--unpack"], ["--shards", "--unpack", "--check"]):
        r = project.cli("sync", "--host", "dataset", *args)
        assert r.returncode == 1, r.stdout + r.stderr
        assert step(project)["msg"] == want, (args, step(project)["msg"])
        assert "Traceback" not in r.stdout + r.stderr and os.listdir(disk / "my data") == []
    assert ssh_masters_left(project) == []


def test_a_file_written_to_all_through_a_plain_upload_is_named_as_changed_here(
    project: Project, tmp_path: Path
) -> None:
    """A file another process keeps rewriting (same size, new bytes every few ms) while a plain
    upload runs: its host sha256 differs from the one read here even after the re-send, and the
    run blames the change on this machine (not the host or the link); once it is quiet, the
    rerun sends it as it is."""
    src, data_dir = setup(project, tmp_path)
    hot = src / "hot.bin"
    hot.write_bytes(os.urandom(65536))
    stop = threading.Event()

    def rewrite() -> None:
        with hot.open("r+b") as f:
            while not stop.is_set():
                os.pwrite(f.fileno(), os.urandom(65536), 0)
                time.sleep(0.002)

    writer = threading.Thread(target=rewrite)
    writer.start()
    try:
        r = project.cli("sync", "--host", "dataset")
    finally:
        stop.set()
        writer.join()
    assert r.returncode == 1, r.stdout + r.stderr
    assert step(project)["msg"] == (
        "hot.bin changed on this machine during the upload (what arrived is neither the old nor"
        " surely the new content); rerun to send it as it is now"
    )
    r = project.cli("sync", "--host", "dataset")
    assert r.returncode == 0 and tree_digest(data_dir / "my data") == tree_digest(src), r.stdout


@needs_age
def test_decrypt_on_host_never_writes_through_a_symlink_an_earlier_upload_left(
    project: Project, tmp_path: Path
) -> None:
    """A plain upload sent a symlink to a dir outside the data dir; the dataset then has a real
    dir there and is uploaded encrypted and decrypted on the host: the symlink is replaced by a
    dir (as rsync does), and nothing is written through it."""
    key, pub = _age_key(tmp_path)
    src, data_dir = setup(project, tmp_path, age_recipients=[pub], age_identity_file=str(key))
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.bin").write_bytes(b"precious")
    (src / "link").symlink_to(outside)
    assert project.cli("sync", "--host", "dataset").returncode == 0
    assert os.readlink(data_dir / "my data" / "link") == str(outside)
    (src / "link").unlink()
    (src / "link").mkdir()
    (src / "link" / "victim.bin").write_bytes(b"new")
    r = project.cli("sync", "--host", "dataset", "--encrypt", "--decrypt-on-host")
    assert r.returncode == 0, r.stdout + r.stderr
    assert (outside / "victim.bin").read_bytes() == b"precious"
    on_host = data_dir / "my data" / "link"
    assert not on_host.is_symlink() and (on_host / "victim.bin").read_bytes() == b"new"


def test_a_dataset_with_a_name_gpuonboard_keeps_for_itself_is_refused(
    project: Project, tmp_path: Path
) -> None:
    src, data_dir = setup(project, tmp_path)
    (src / ".gpuonboard-copy").write_text("my notes\n")
    for args in ((), ("--check",), ("--shards", "--unpack")):
        r = project.cli("sync", "--host", "dataset", *args)
        assert r.returncode == 1 and step(project)["msg"] == (
            f"the dataset {src} has an entry named .gpuonboard-copy at its top, a name gpuonboard keeps"
            " for itself on the host; rename it, then rerun (nothing was sent)"
        ), r.stdout
    (src / ".gpuonboard-copy").unlink()
    (src / "sub dir" / ".gpuonboard-rsync-partial").mkdir()  # rsync's partial dir, at any depth
    (src / "sub dir" / ".gpuonboard-rsync-partial" / "x").write_text("x\n")
    for args in ((), ("--shards", "--unpack")):
        r = project.cli("sync", "--host", "dataset", *args)
        assert r.returncode == 1 and step(project)["msg"] == (
            f"the dataset {src} has a directory named .gpuonboard-rsync-partial (e.g. 'sub"
            " dir/.gpuonboard-rsync-partial/x'), a name gpuonboard keeps for rsync's partial files;"
            " rename it, then rerun (nothing was sent)"
        ), step(project)["msg"]
    shutil.rmtree(src / "sub dir" / ".gpuonboard-rsync-partial")
    (src / ".gpuonboard-upload").mkdir()  # a directory of that name too
    (src / ".gpuonboard-upload" / "z").write_text("z\n")
    r = project.cli("sync", "--host", "dataset")
    assert r.returncode == 1 and "has an entry named .gpuonboard-upload at its top" in r.stdout, r.stdout
    assert not (data_dir / "my data").exists()


def test_a_plain_upload_into_an_unpacked_tree_makes_the_next_unpack_check_again(
    project: Project, tmp_path: Path
) -> None:
    """--unpack, then a plain upload of an edited file into that same tree, then the edit undone
    (same size): the shards on the host match the dataset again, but the tree does not; the
    unpack run must not say up to date (the plain write dropped the unpacked marker)."""
    src, data_dir = setup(project, tmp_path)
    tree = data_dir / "my data"
    assert project.cli("sync", "--host", "dataset", "--shards", "--unpack").returncode == 0
    (src / "plain.txt").write_text("HELLO\n")
    later = time.time() + 10  # (not the second the unpack wrote the tree in: rsync's quick check)
    os.utime(src / "plain.txt", (later, later))
    assert project.cli("sync", "--host", "dataset").returncode == 0  # plain mode (few files)
    assert (tree / "plain.txt").read_text() == "HELLO\n"
    (src / "plain.txt").write_text("hello\n")
    for args in (("--check",), ()):
        r = project.cli("sync", "--host", "dataset", "--shards", "--unpack", *args)
        assert r.returncode == 0 and step(project)["status"] == "changed", r.stdout
    assert tree_digest(tree) == tree_digest(src)


@needs_age
def test_decrypt_to_never_writes_over_another_projects_plain_copy(project: Project, tmp_path: Path) -> None:
    """Another project uploaded a dataset with the same name, plain, into DIR (its copy is
    DIR/<name>, which no mark covers); --decrypt-to DIR from here is refused with one sentence
    and that copy is left exactly as it was, with no mark added."""
    key, pub = _age_key(tmp_path)
    src, data_dir = setup(project, tmp_path, age_recipients=[pub], age_identity_file=str(key))
    (src / "link to plain").unlink()
    other = other_project(project, tmp_path)
    shared = tmp_path / "shared"
    theirs = tmp_path / "their data" / "my data"
    theirs.mkdir(parents=True)
    (theirs / "plain.txt").write_text("theirs\n")
    assert (
        other.cli("sync", "--host", "dataset", "--dataset", str(theirs), "--dest", str(shared)).returncode
        == 0
    )
    before = tree_digest(shared / "my data")
    flags = ["--encrypt", "--decrypt-on-host", "--decrypt-to", str(shared)]
    for args in ((), ("--shards",), ("--check",), ("--shards", "--check")):  # check mode said "would"
        r = project.cli("sync", "--host", "dataset", *flags, *args)
        assert r.returncode == 1, r.stdout
        assert step(project)["msg"] == (
            f"dataset:{shared}/my data holds files that no gpuonboard upload marked as its plaintext"
            " (another copy of a dataset with this name, or plaintext an older gpuonboard left);"
            " remove it if nothing uses it (the rerun decrypts it again from the copy on the data"
            " disk: nothing is sent again), or pick another --decrypt-to, then rerun"
        )
    assert tree_digest(shared / "my data") == before
    assert not (shared / "my data" / ".gpuonboard-copy").exists()


def test_plain_mode_says_what_a_dir_file_swap_needs(project: Project, tmp_path: Path) -> None:
    """A file that became a directory is replaced on the host (and not called "kept there");
    a directory that became a file cannot be (rsync will not delete a non-empty directory): one
    sentence naming it, not "rerun to resume", which would fail the same way forever."""
    src, data_dir = setup(project, tmp_path)
    assert project.cli("sync", "--host", "dataset").returncode == 0
    (src / "plain.txt").unlink()
    (src / "plain.txt").mkdir()
    (src / "plain.txt" / "inside.txt").write_text("in\n")
    for args in (("--check",), ()):
        r = project.cli("sync", "--host", "dataset", *args)
        assert r.returncode == 0 and "kept there" not in step(project)["msg"], step(project)["msg"]
    assert (data_dir / "my data" / "plain.txt" / "inside.txt").read_text() == "in\n"
    shutil.rmtree(src / "sub dir")
    (src / "sub dir").write_text("a file now\n")
    (data_dir / "my data" / "link to plain").unlink()  # a job made a dir where a symlink was
    (data_dir / "my data" / "link to plain").mkdir()
    (data_dir / "my data" / "link to plain" / "x").write_text("x\n")
    before = tree_digest(data_dir / "my data")
    (src / "zz").write_text("sorted after the conflict\n")
    for args in (("--check",), ()):  # check mode tells it too; the real run sends nothing
        r = project.cli("sync", "--host", "dataset", *args)
        assert r.returncode == 1, r.stdout
        assert step(project)["msg"] == (
            f"dataset:{data_dir}/my data/link to plain is a directory where the dataset now has a"
            " symlink (and 1 other); move it away (or delete it) there, then rerun (nothing was sent)"
        )
    assert tree_digest(data_dir / "my data") == before
    shutil.rmtree(data_dir / "my data" / "link to plain")
    r = project.cli("sync", "--host", "dataset")
    assert r.returncode == 1 and step(project)["msg"] == (
        f"dataset:{data_dir}/my data/sub dir is a directory where the dataset now has a file;"
        " move it away (or delete it) there, then rerun (nothing was sent)"
    )
    shutil.rmtree(data_dir / "my data" / "sub dir")
    r = project.cli("sync", "--host", "dataset")
    assert r.returncode == 0 and tree_digest(data_dir / "my data") == tree_digest(src), r.stdout
    # an EMPTY directory there is no obstacle: rsync replaces it (it was refused)
    (src / "was empty").write_text("now a file\n")
    (data_dir / "my data" / "was empty").mkdir()
    r = project.cli("sync", "--host", "dataset")
    assert r.returncode == 0 and tree_digest(data_dir / "my data") == tree_digest(src), step(project)["msg"]
    # a name with a line break stays on the sentence's one line
    (src / "odd\nname").write_text("o\n")
    (data_dir / "my data" / "odd\nname").mkdir()
    (data_dir / "my data" / "odd\nname" / "x").write_text("x\n")
    r = project.cli("sync", "--host", "dataset")
    assert r.returncode == 1 and step(project)["msg"] == (
        f"dataset:{data_dir}/my data/odd\\nname is a directory where the dataset now has a file;"
        " move it away (or delete it) there, then rerun (nothing was sent)"
    ), step(project)["msg"]


@needs_age
def test_a_directory_in_the_marks_place_is_named_in_check_mode_too(project: Project, tmp_path: Path) -> None:
    """--decrypt-to DIR whose <name>/.gpuonboard-copy is a directory: the claim refuses it; check
    mode says the same (it said "would send"), and nothing is sent."""
    key, pub = _age_key(tmp_path)
    src, data_dir = setup(project, tmp_path, age_recipients=[pub], age_identity_file=str(key))
    shm = tmp_path / "shm"
    (shm / "my data" / ".gpuonboard-copy").mkdir(parents=True)
    for args in (("--check",), ()):
        r = project.cli(
            "sync", "--host", "dataset", "--encrypt", "--decrypt-on-host", "--decrypt-to", str(shm), *args
        )
        assert r.returncode == 1 and step(project)["msg"] == (
            f"on dataset, {shm}/my data/.gpuonboard-copy is a directory, not gpuonboard's mark; remove it,"
            " then rerun"
        ), step(project)["msg"]
    assert not (data_dir / "my data.encrypted").exists()


@needs_age
def test_a_file_and_a_directory_named_like_its_ciphertext(project: Project, tmp_path: Path) -> None:
    """`a` and `a.age/b` in one dataset: the ciphertext of `a` is `a.age`, where the directory
    goes ("cannot write the encrypted copy ... File exists; fix that", which the user could not)."""
    key, pub = _age_key(tmp_path)
    src, data_dir = setup(project, tmp_path, age_recipients=[pub], age_identity_file=str(key))
    (src / "plain.txt.age").mkdir()
    (src / "plain.txt.age" / "b").write_text("b\n")
    for args in (("--check",), ()):
        r = project.cli("sync", "--host", "dataset", "--encrypt", "--decrypt-on-host", *args)
        assert r.returncode == 1 and step(project)["msg"] == (
            f"the dataset {src} has both 'plain.txt' and a directory 'plain.txt.age': in encrypted"
            " mode the first one's ciphertext takes the second one's name; rename one, then rerun"
            " (nothing was sent)"
        ), step(project)["msg"]
    assert not (data_dir / "my data.encrypted").exists()


@needs_age
def test_decrypt_on_host_names_a_dir_where_the_dataset_now_has_a_file(
    project: Project, tmp_path: Path
) -> None:
    """The plaintext dir has directories (a job's, or an earlier upload's) where the dataset now
    has files: named before anything is sent, in check mode too."""
    key, pub = _age_key(tmp_path)
    src, data_dir = setup(project, tmp_path, age_recipients=[pub], age_identity_file=str(key))
    (data_dir / "my data" / "plain.txt").mkdir(parents=True)
    (data_dir / "my data" / "plain.txt" / "job.log").write_text("keep\n")
    (data_dir / "my data" / "-leading-dash").mkdir()
    (data_dir / "my data" / "-leading-dash" / "job.log").write_text("keep\n")
    (data_dir / "my data" / "sp ace 'q' \"dq\".bin").mkdir()  # empty: replaced, not refused
    for args in (("--check",), ()):
        r = project.cli("sync", "--host", "dataset", "--encrypt", "--decrypt-on-host", *args)
        assert r.returncode == 1, r.stdout
        assert step(project)["msg"] == (
            f"dataset:{data_dir}/my data/-leading-dash is a directory where the dataset now has a file"
            " (and 1 other); move it away (or delete it) there, then rerun (nothing was sent)"
        ), step(project)["msg"]
    assert not (data_dir / "my data.enc").exists()
    assert (data_dir / "my data" / "plain.txt" / "job.log").read_text() == "keep\n"
    shutil.rmtree(data_dir / "my data" / "plain.txt")
    shutil.rmtree(data_dir / "my data" / "-leading-dash")
    r = project.cli("sync", "--host", "dataset", "--encrypt", "--decrypt-on-host")
    assert r.returncode == 0, r.stdout
    assert (data_dir / "my data" / "sp ace 'q' \"dq\".bin").read_bytes() == (
        src / "sp ace 'q' \"dq\".bin"
    ).read_bytes()


def test_a_dataset_name_with_wildcards_lands_in_its_own_dir(project: Project, tmp_path: Path) -> None:
    """rsync -s has the host's rsync expand wildcards in the paths it gets: a dataset named `[a]`
    was written into the copy `a` of another dataset in the same data dir."""
    setup(project, tmp_path)
    data_dir = tmp_path / "remote data"
    for name, text in (("a", "plain a\n"), ("[a]", "brackets\n"), ("g*", "star\n")):
        d = tmp_path / "local" / name
        d.mkdir(parents=True)
        (d / "x.txt").write_text(text)
        r = project.cli("sync", "--host", "dataset", "--dataset", str(d))
        assert r.returncode == 0, r.stdout + r.stderr
    assert (data_dir / "a" / "x.txt").read_text() == "plain a\n"
    assert (data_dir / "[a]" / "x.txt").read_text() == "brackets\n"
    assert (data_dir / "g*" / "x.txt").read_text() == "star\n"


def test_plain_mode_sends_a_symlink_pointed_elsewhere_and_never_calls_a_fifo_kept(
    project: Project, tmp_path: Path
) -> None:
    src, data_dir = setup(project, tmp_path)
    os.mkfifo(src / "pipe")  # rsync -a copies it; the scan does not list it
    assert project.cli("sync", "--host", "dataset").returncode == 0
    (src / "link to plain").unlink()
    (src / "link to plain").symlink_to("ünïcødé.txt")
    later = time.time() + 10
    os.utime(src / "link to plain", (later, later), follow_symlinks=False)
    r = project.cli("sync", "--host", "dataset")
    assert r.returncode == 0 and step(project)["status"] == "changed", r.stdout
    assert step(project)["msg"].startswith("sent 0 files and 1 symlink ("), step(project)["msg"]
    assert os.readlink(data_dir / "my data" / "link to plain") == "ünïcødé.txt"
    r = project.cli("sync", "--host", "dataset")
    assert r.returncode == 0 and step(project)["status"] == "ok", r.stdout
    assert "kept there" not in step(project)["msg"], step(project)["msg"]


@needs_age
def test_decrypt_to_the_data_dir_itself_is_plain_decryption(project: Project, tmp_path: Path) -> None:
    key, pub = _age_key(tmp_path)
    src, data_dir = setup(project, tmp_path, age_recipients=[pub], age_identity_file=str(key))
    (src / "link to plain").unlink()
    assert project.cli("sync", "--host", "dataset", "--encrypt", "--decrypt-on-host").returncode == 0
    r = project.cli(
        "sync", "--host", "dataset", "--encrypt", "--decrypt-on-host", "--decrypt-to", f"{data_dir}/"
    )
    assert r.returncode == 0 and step(project)["status"] == "ok", r.stdout
    assert (
        "earlier run" not in step(project)["msg"] and not (data_dir / "my data" / ".gpuonboard-copy").exists()
    )


def test_a_dataset_dir_whose_own_name_is_not_utf8(project: Project, tmp_path: Path) -> None:
    setup(project, tmp_path)
    raw = os.fsencode(tmp_path / "local") + b"/caf\xe9 set"
    os.mkdir(raw)
    with open(raw + b"/a.txt", "wb") as f:
        f.write(b"a\n")
    src = os.fsdecode(raw)
    for args in ((), ("--check",), ("--shards", "--unpack")):
        r = project.cli("sync", "--host", "dataset", "--dataset", src, *args)
        assert r.returncode == 0, r.stdout + r.stderr
    arrived = os.fsencode(tmp_path / "remote data") + b"/caf\xe9 set/a.txt"
    with open(arrived, "rb") as f:
        assert f.read() == b"a\n"


@needs_age
def test_switching_to_decrypt_to_says_the_old_plaintext_is_still_on_the_data_disk(
    project: Project, tmp_path: Path
) -> None:
    key, pub = _age_key(tmp_path)
    src, data_dir = setup(project, tmp_path, age_recipients=[pub], age_identity_file=str(key))
    (src / "link to plain").unlink()
    assert project.cli("sync", "--host", "dataset", "--encrypt", "--decrypt-on-host").returncode == 0
    shm = tmp_path / "shm"
    for _ in range(2):  # the upload's own message, then the rerun's "up to date"
        r = project.cli("sync", "--host", "dataset", "--encrypt", "--decrypt-on-host", f"--decrypt-to={shm}")
        assert r.returncode == 0, r.stdout
        assert step(project)["msg"].endswith(
            f"; 5 plaintext files of an earlier run without --decrypt-to are still at {data_dir}/my data on"
            f" the data disk: delete them if the plaintext should live only under {shm}"
        ), step(project)
    assert (data_dir / "my data" / "plain.txt").exists()  # said, never deleted unasked
    # --decrypt-to spelt through a symlink to the data dir: those files ARE its plaintext, and the
    # advice to delete them would delete what was asked for
    link = tmp_path / "data link"
    link.symlink_to(data_dir)
    r = project.cli("sync", "--host", "dataset", "--encrypt", "--decrypt-on-host", f"--decrypt-to={link}")
    assert r.returncode == 0 and "earlier run without --decrypt-to" not in step(project)["msg"], step(project)


def test_a_directory_where_the_lease_goes_is_one_sentence(project: Project, tmp_path: Path) -> None:
    src, data_dir = setup(project, tmp_path)
    blocker = data_dir / ".my data.gpuonboard-upload"
    blocker.mkdir(parents=True)
    r = project.cli("sync", "--host", "dataset")
    assert r.returncode == 1, r.stdout
    assert step(project)["msg"] == (
        f"on dataset, {blocker} is a directory, not an upload lease; remove it, then rerun"
    ), step(project)
    assert not (data_dir / "my data" / "plain.txt").exists()  # nothing sent
    blocker.rmdir()
    assert project.cli("sync", "--host", "dataset").returncode == 0


def _empty_dirs(root: Path) -> set[str]:
    return {
        Path(d).relative_to(root).as_posix()
        for d, dirnames, filenames in os.walk(root)
        if not dirnames and not filenames and Path(d) != root
    }


def test_the_datasets_empty_directories_reach_an_unpacked_tree(project: Project, tmp_path: Path) -> None:
    """Shards carry the dataset's empty directories (an ImageFolder class with no image yet
    shifts every class index when it is missing): unpacked, rerun up to date, one removed on
    the host is noticed and unpacked again, one added here is sent."""
    src = tmp_path / "local" / "many"
    _many_small(src)
    for rel in ("classes/zebra", "dir1/no files yet", "top empty", "a/b/c"):
        (src / rel).mkdir(parents=True)
    want = _empty_dirs(src)
    assert {"classes/zebra", "top empty", "a/b/c"} <= want
    data_dir = tmp_path / "remote data"
    entry = host_entry(project.pool.hosts["dataset"], project.pool, data_dir=str(data_dir))
    entry["vars"].update(
        {"dataset": str(src), "shard_size": "64KiB", "shard_threshold": 100, "keep_shards": True}
    )
    project.write_inventory({"dataset": entry})
    r = project.cli("sync", "--host", "dataset", "--unpack")
    assert r.returncode == 0, r.stdout
    tree = data_dir / "many"
    assert _empty_dirs(tree) == want and tree_digest(tree) == tree_digest(src)
    manifest = json.loads((data_dir / "many.shards" / "manifest.json").read_text())
    dirs = {f["path"] for s in manifest["shards"] for f in s["files"] if f.get("dir")}
    assert dirs == want
    r = project.cli("sync", "--host", "dataset", "--unpack")
    assert r.returncode == 0 and step(project)["status"] == "ok", r.stdout
    (tree / "classes" / "zebra").rmdir()
    r = project.cli("sync", "--host", "dataset", "--unpack")
    assert r.returncode == 0 and step(project)["status"] == "changed", r.stdout
    assert "'classes/zebra'" in step(project)["msg"], step(project)
    assert _empty_dirs(tree) == want
    (src / "classes" / "okapi").mkdir()
    r = project.cli("sync", "--host", "dataset", "--unpack")
    assert r.returncode == 0 and step(project)["status"] == "changed", r.stdout
    assert step(project)["diff"]["sent_shards"] == 1, step(project)
    assert _empty_dirs(tree) == want | {"classes/okapi"} and tree_digest(tree) == tree_digest(src)


@needs_age
def test_encrypted_shards_carry_empty_directories_to_the_decrypted_tree(
    project: Project, tmp_path: Path
) -> None:
    key, pub = _age_key(tmp_path)
    src = tmp_path / "local" / "many"
    _many_small(src, 150)
    (src / "classes" / "zebra").mkdir(parents=True)
    data_dir = tmp_path / "remote data"
    entry = host_entry(project.pool.hosts["dataset"], project.pool, data_dir=str(data_dir))
    entry["vars"].update(
        {
            "dataset": str(src),
            "shard_size": "64KiB",
            "shard_threshold": 100,
            "age_recipients": [pub],
            "age_identity_file": str(key),
        }
    )
    project.write_inventory({"dataset": entry})
    r = project.cli("sync", "--host", "dataset", "--encrypt", "--decrypt-on-host", "--shards")
    assert r.returncode == 0, r.stdout + r.stderr
    tree = data_dir / "many"
    assert _empty_dirs(tree) == {"classes/zebra"} and tree_digest(tree) == tree_digest(src)
    r = project.cli("sync", "--host", "dataset", "--encrypt", "--decrypt-on-host", "--shards")
    assert r.returncode == 0 and step(project)["status"] == "ok", step(project)


def test_unpack_refuses_a_copy_that_is_a_symlink_and_one_dest_spelling_is_one_tree(
    project: Project, tmp_path: Path
) -> None:
    """The data dir spelt `/x//data/.` is the same tree (its unpack marker was keyed by the
    spelling: every run unpacked again, never `ok`); a copy that is a symlink to a directory is
    refused (the swap renamed the link away and left the old copy at its target)."""
    src, data_dir = _unpacked_upload(project, tmp_path)
    odd = str(data_dir).replace("/", "//") + "/."
    r = project.cli("sync", "--host", "dataset", "--unpack", "--dest", odd)
    assert r.returncode == 0 and step(project)["status"] == "ok", step(project)
    real = tmp_path / "elsewhere" / "many"
    shutil.move(data_dir / "many", real)
    (data_dir / "many").symlink_to(real)
    (src / "dir1" / "new.bin").write_bytes(b"new")
    for args in (["--check"], []):
        r = project.cli("sync", "--host", "dataset", "--unpack", *args)
        assert r.returncode == 1, r.stdout + r.stderr
        assert step(project)["msg"] == (
            f"dataset:{data_dir}/many is a symlink (to {real}); an unpack replaces the tree by a rename,"
            " which would replace the link and leave the old copy where it points: name the real"
            " directory with --dest and --name, or remove the link, then rerun (nothing was sent)"
        ), step(project)["msg"]
    assert (data_dir / "many").is_symlink() and not (real / "dir1" / "new.bin").exists()


def test_a_bwlimit_below_1k_is_refused_before_connecting(project: Project, tmp_path: Path) -> None:
    setup(project, tmp_path)
    r = project.cli("sync", "--host", "dataset", "--bwlimit", "100b")
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip() == (
        "error: sync: step 'dataset': bwlimit must be at least 1k (1 KiB/s), or 0 for none, not '100b'."
    ), r.stderr
