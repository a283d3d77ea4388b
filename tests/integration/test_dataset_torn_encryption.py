"""`invoke sync --encrypt` while a dataset file is being rewritten: never "verified" over a
ciphertext whose plaintext is part old, part new (real sshd test host, real rsync, real age)."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import threading
from pathlib import Path

import pytest
from conftest import Project, host_entry
from test_dataset import _age_key

pytestmark = pytest.mark.skipif(
    shutil.which("rsync") is None or shutil.which("age") is None, reason="rsync or Debian `age` not installed"
)

SIZE = 256 << 20


def _rewrite_until(path: Path, stop: threading.Event) -> None:
    """A job regenerating the file in place (4 MiB writes, content alternating) until stopped."""
    fill = 0
    with path.open("r+b", buffering=0) as f:
        while not stop.is_set():
            fill ^= 0xFF
            f.seek(0)
            for _ in range(SIZE >> 22):
                f.write(bytes([fill]) * (1 << 22))
                if stop.is_set():
                    return


def test_a_file_rewritten_during_an_encrypted_upload_is_named_not_verified(
    project: Project, tmp_path: Path
) -> None:
    key, pub = _age_key(tmp_path)
    src = tmp_path / "local" / "corpus"
    src.mkdir(parents=True)
    (src / "small.txt").write_text("kept\n")
    big = src / "big.bin"
    big.write_bytes(bytes(SIZE))
    data_dir = tmp_path / "remote data"
    h = project.pool.hosts["dataset"]
    entry = host_entry(h, project.pool, data_dir=str(data_dir))
    entry["vars"].update({"dataset": str(src), "age_recipients": [pub], "age_identity_file": str(key)})
    project.write_inventory({"dataset": entry})

    stop = threading.Event()
    writer = threading.Thread(target=_rewrite_until, args=(big, stop))
    writer.start()
    try:
        r = project.cli("sync", "--host", "dataset", "--encrypt", timeout=120)
    finally:
        stop.set()
        writer.join()
    s = project.summary()["hosts"][0]["steps"][0]
    assert r.returncode != 0 and s["status"] == "failed", s
    assert s["msg"].startswith("big.bin changed on this machine while it was being encrypted"), s["msg"]
    assert "rerun to send it as it is now" in s["msg"] and "Traceback" not in r.stdout + r.stderr
    copy = data_dir / "corpus.encrypted"
    assert not (copy / "big.bin.age").exists()  # nothing of it reached the host
    cache = project.root / ".gpuonboard" / "cache" / "encrypted"
    assert not [p for p in cache.iterdir() if p.name.startswith(".enc.")]  # no temp left

    # the file left alone: the rerun sends it, and the host's ciphertext opens to the file
    r = project.cli("sync", "--host", "dataset", "--encrypt", timeout=120)
    s = project.summary()["hosts"][0]["steps"][0]
    assert r.returncode == 0 and s["status"] == "changed", s
    got = subprocess.run(
        ["age", "-d", "-i", str(key), str(copy / "big.bin.age")], capture_output=True, check=True
    ).stdout
    assert hashlib.sha256(got).hexdigest() == hashlib.sha256(big.read_bytes()).hexdigest()
