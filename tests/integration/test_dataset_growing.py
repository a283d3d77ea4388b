"""Plain encrypted mode sends a big file while it is encrypted (steps/dataset/growing.py): real
sshd test host, real rsync, real age. The mechanism test grows the ciphertext by hand (the one
simulated part: the encryptor's pace), so it can hold the file unfinished until the host has
received part of it."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import Project, age_key, host_entry
from test_dataset import _children, _cmdline, needs_age, start_sync

from gpuonboard import shell, transfer
from gpuonboard.connection import openssh
from gpuonboard.inventory import Host
from gpuonboard.steps.dataset import growing
from gpuonboard.steps.dataset.encryption import _alone
from gpuonboard.transfer import crypto

pytestmark = pytest.mark.skipif(shutil.which("rsync") is None, reason="rsync not installed")

MIB = 1 << 20


def test_alone_gives_each_big_file_a_batch_of_its_own() -> None:
    assert _alone([3, 2], [False, True, False, False, False]) == [1, 1, 1, 2]
    assert _alone([2, 1], [True, True, False]) == [1, 1, 1]
    assert _alone([4], [False, False, False, True]) == [3, 1]
    assert _alone([1, 1], [False, False]) == [1, 1]
    assert _alone([], []) == []


def test_the_encryption_yields_the_cpu_to_rsync_and_ssh_and_the_cache_records_do_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pyrage

    src = tmp_path / "big.bin"
    src.write_bytes(os.urandom(growing.GROW_FIRST + MIB))
    enc = crypto.Encryption(recipients=(str(pyrage.x25519.Identity.generate().to_public()),))
    nice: dict[str, int] = {}
    base = os.getpriority(os.PRIO_PROCESS, 0)
    real = crypto.encrypt_to_cache

    def watched(*args: Any, started: Callable[[Path], None], **kwargs: Any) -> tuple[str, Path]:
        nice["encrypt"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        return real(*args, started=started, **kwargs)

    def made(plain: str, path: Path) -> None:  # (the caches' bookkeeping: it starts threads)
        nice["made"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    monkeypatch.setattr(crypto, "encrypt_to_cache", watched)
    g = growing.start(src, enc, tmp_path / "cache", "big.bin", tmp_path / "stage" / "big.bin.age", made)
    growing.finish(g)
    assert nice["encrypt"] == min(base + growing.ENCRYPT_NICE, 19)
    assert nice["made"] == base and os.getpriority(os.PRIO_PROCESS, 0) == base


def _ssh_config(project: Project, tmp_path: Path) -> tuple[Path, str]:
    h = project.pool.hosts["dataset"]
    known = tmp_path / "known_hosts"
    known.write_text(h.known_hosts_line() + "\n")
    host = Host(
        name="grow", address=h.address, port=h.port, user="root", key_file=str(project.pool.client_key)
    )
    text, alias = openssh.config_text(host, None, known)
    return openssh.write_config(tmp_path, host, text), alias


def _remote(config: Path, alias: str) -> Callable[[str], bool]:
    def remote(command: str) -> bool:
        argv = ["ssh", "-F", str(config), alias, command]
        return subprocess.run(argv, capture_output=True, timeout=30, check=False).returncode == 0

    return remote


def _following(where: Path) -> bool:
    """Whether a hash_follow.sh of `where` runs on this machine (the test host's side)."""
    needle = str(where).encode()
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes()
        except OSError:
            continue
        if needle in text and b"e_d_$i" in text:
            return True
    return False


def test_a_growing_file_reaches_the_partial_dir_before_it_is_whole_then_lands_sent_once(
    project: Project, tmp_path: Path
) -> None:
    config, alias = _ssh_config(project, tmp_path)
    data = os.urandom(24 * MIB)
    stage = tmp_path / "stage"
    (stage / "sub").mkdir(parents=True)
    link = stage / "sub" / "big.bin.age"
    link.write_bytes(b"")
    g = growing.Growing("sub/big.bin", link)
    g.linked.set()
    target = project.pool.hosts["dataset"].home / f"grow-{os.getpid()}"
    partial = target / "sub" / transfer.PARTIAL_DIR / "big.bin.age"
    seen_early = [0]

    def encryptor() -> None:  # 8 MiB, 1 MiB at a time until the host holds part of it, the rest
        with link.open("ab") as f:
            f.write(data[: 8 * MIB])
            f.flush()
            done, deadline = 8 * MIB, time.monotonic() + 30
            while time.monotonic() < deadline and not (partial.exists() and partial.stat().st_size):
                time.sleep(0.02)
            seen_early[0] = partial.stat().st_size if partial.exists() else 0
            while time.monotonic() < deadline and not _following(partial.parent):
                time.sleep(0.02)  # (the host's follower runs: it sees the file grow, under load too)
            while done < 16 * MIB:  # (so that there are runs after the first)
                f.write(data[done : done + MIB])
                f.flush()
                done += MIB
                time.sleep(0.05)
            f.write(data[done:])
        g.done.set()

    def argv(src: Path, host_dir: str, names: Path, append: bool) -> list[str]:
        return transfer.rsync_argv(src, host_dir, config, alias, files_from=names, append=append)

    runs: list[tuple[list[str], transfer.RsyncRun]] = []

    def run(a: list[str]) -> transfer.RsyncRun:
        runs.append((a, transfer.run_rsync(a)))
        return runs[-1][1]

    def complete() -> None:  # (finish: the stage still links the file that grew)
        g.same = True

    writer = threading.Thread(target=encryptor)
    writer.start()
    sender = growing.Sender(_remote(config, alias), str(target), argv, run, tmp_path / "list")
    sender.ssh = ["ssh", "-F", str(config), alias]  # (the host hashes it as it grows: follow.py)
    out = growing.send_growing(g, sender, complete)
    writer.join()
    assert out.failed is None and out.landed, [r.stderr for _, r in runs]
    assert sender.followed == {"sub/big.bin.age": hashlib.sha256(data).hexdigest()}
    assert 0 < seen_early[0] <= 16 * MIB  # the host had its first bytes while it was unfinished
    assert len(runs) >= 3
    assert "--append" not in runs[0][0] and all("--append" in a for a, _ in runs[1:])
    assert out.literal == sum(r.stats.literal_bytes for _, r in runs) == len(data)  # each byte once
    assert (target / "sub" / "big.bin.age").read_bytes() == data  # under its real name
    assert not partial.parent.exists()  # (the emptied partial dir is gone)


def test_landing_renames_only_a_whole_partial_onto_a_name_that_is_no_directory(
    project: Project, tmp_path: Path
) -> None:
    config, alias = _ssh_config(project, tmp_path)
    remote = _remote(config, alias)
    target = project.pool.hosts["dataset"].home / f"land-{os.getpid()}"
    part = target / transfer.PARTIAL_DIR
    part.mkdir(parents=True)
    (part / "f.age").write_bytes(b"x" * 10)
    (target / "d.age").mkdir()

    def land(name: str, size: int) -> bool:
        script = ["sh", "-c", growing.LAND_SCRIPT, "sh", str(part), "f.age", str(target / name), str(size)]
        return remote(shell.join(script))

    assert not land("f.age", 11)  # a partial of another size: it stays where it is
    assert not land("d.age", 10)  # (mv would move it into that dir)
    assert (part / "f.age").stat().st_size == 10 and not (target / "f.age").exists()
    assert not list((target / "d.age").iterdir())
    assert land("f.age", 10)
    assert (target / "f.age").read_bytes() == b"x" * 10 and not part.exists()


def _encrypted_corpus(project: Project, tmp_path: Path, files: dict[str, bytes]) -> tuple[Path, Path, Path]:
    """A dataset of `files` uploaded encrypted to the test host: (age identity, dataset, the
    host's encrypted copy)."""
    key, pub = age_key(tmp_path / "keys")
    src = tmp_path / "local" / "corpus"
    src.mkdir(parents=True)
    for name, data in files.items():
        (src / name).write_bytes(data)
    data_dir = tmp_path / "remote data"
    entry = host_entry(project.pool.hosts["dataset"], project.pool, data_dir=str(data_dir))
    entry["vars"].update({"dataset": str(src), "age_recipients": [pub], "age_identity_file": str(key)})
    project.write_inventory({"dataset": entry})
    return key, src, data_dir / "corpus.encrypted"


def _opens_to(key: Path, ciphertext: Path, plaintext: Path) -> bool:
    """Whether age decrypts the host's ciphertext to the dataset file's bytes."""
    got = subprocess.run(["age", "-d", "-i", str(key), str(ciphertext)], capture_output=True, check=True)
    return hashlib.sha256(got.stdout).digest() == hashlib.sha256(plaintext.read_bytes()).digest()


@needs_age
def test_an_encrypted_big_file_is_sent_while_encrypted_and_opens_on_the_host(
    project: Project, tmp_path: Path
) -> None:
    big = os.urandom(growing.GROW_MIN + 3 * MIB)
    key, src, copy = _encrypted_corpus(
        project, tmp_path, {"a.txt": b"small\n", "big.bin": big, "z.txt": b"after\n"}
    )

    r = project.cli("sync", "--host", "dataset", "--encrypt", timeout=120)
    s = project.summary()["hosts"][0]["steps"][0]
    assert r.returncode == 0 and s["status"] == "changed", r.stdout + r.stderr
    assert "sent 3 files" in s["msg"] and "3 files verified by sha256" in s["msg"], s["msg"]
    for name in ("a.txt", "big.bin", "z.txt"):
        assert _opens_to(key, copy / f"{name}.age", src / name)
    assert not (copy / transfer.PARTIAL_DIR).exists()
    cache = project.root / ".gpuonboard" / "cache" / "encrypted"
    assert not [p for p in cache.iterdir() if p.name.startswith(".enc.")]  # no temp left

    r = project.cli("sync", "--host", "dataset", "--encrypt", timeout=120)  # a rerun: nothing to send
    s = project.summary()["hosts"][0]["steps"][0]
    assert r.returncode == 0 and s["status"] == "ok", s


@needs_age
def test_ctrl_c_while_a_big_file_is_sent_as_it_is_encrypted_stops_and_the_rerun_finishes(
    project: Project, tmp_path: Path
) -> None:
    key, src, copy = _encrypted_corpus(project, tmp_path, {"big.bin": os.urandom(growing.GROW_MIN + 8 * MIB)})
    partial = copy / transfer.PARTIAL_DIR / "big.bin.age"

    proc = start_sync(project, "--host", "dataset", "--encrypt", "--bwlimit", "8m")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (partial.exists() and partial.stat().st_size > 2 * MIB):
        time.sleep(0.05)
    rsyncs = [pid for pid in _children(proc.pid) if _cmdline(pid).startswith("rsync")]
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert partial.exists(), "the growing runs never reached the host's partial dir"
    assert proc.returncode != 0 and "Traceback" not in out + err, out + err
    assert not (copy / "big.bin.age").exists()  # no partial ciphertext under the real name
    for pid in rsyncs:  # (no rsync of this run keeps sending)
        assert not Path(f"/proc/{pid}").exists() or "rsync" not in _cmdline(pid)

    r = project.cli("sync", "--host", "dataset", "--encrypt", timeout=120)
    s = project.summary()["hosts"][0]["steps"][0]
    assert r.returncode == 0 and s["status"] == "changed", r.stdout + r.stderr
    assert _opens_to(key, copy / "big.bin.age", src / "big.bin")
    assert not (copy / transfer.PARTIAL_DIR).exists()
