"""`sync --verify` re-hashes the host's copy (sha256) and sends again what differs: a dataset file
flipped by one byte on the host at the same size and mtime stayed "dataset up to date ... nothing
sent" forever (rsync's quick check). Real sshd test host and real rsync, as in test_dataset.py
(whose helpers this module uses)."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import Project, age_key
from test_dataset import needs_age, setup, step, tree_digest


def test_a_byte_flipped_on_the_host_is_found_and_sent_again(project: Project, tmp_path: Path) -> None:
    src, data_dir = setup(project, tmp_path)
    r = project.cli("sync", "--host", "dataset")
    assert r.returncode == 0, r.stdout + r.stderr
    # one byte flipped on the host, size and mtime kept: rsync's quick check cannot see it
    flipped = data_dir / "my data" / "sub dir" / "nested.bin"
    st = flipped.stat()
    data = bytearray(flipped.read_bytes())
    data[100] ^= 0xFF
    flipped.write_bytes(bytes(data))
    os.utime(flipped, ns=(st.st_atime_ns, st.st_mtime_ns))
    r = project.cli("sync", "--host", "dataset")
    assert r.returncode == 0 and "nothing sent" in step(project)["msg"], step(project)  # (documented)

    r = project.cli("sync", "--host", "dataset", "--verify", "--check")
    assert r.returncode == 0, r.stdout + r.stderr
    msg = step(project)["msg"]
    assert "would send 1 of 6 files" in msg, msg
    assert "; --verify: 1 of the 6 files and symlinks already on the host differ from the dataset" in msg, msg
    assert tree_digest(data_dir / "my data") != tree_digest(src)  # (check mode sent nothing)
    r = project.cli("sync", "--host", "dataset", "--verify")
    assert r.returncode == 0, r.stdout + r.stderr
    s = step(project)
    assert s["status"] == "changed" and s["diff"]["sent_files"] == 1, s
    assert "(sha256), sent again: sub dir/nested.bin" in s["msg"], s["msg"]
    assert tree_digest(data_dir / "my data") == tree_digest(src)
    # all match now: said, nothing sent
    r = project.cli("sync", "--host", "dataset", "--verify")
    assert r.returncode == 0 and step(project)["status"] == "ok", step(project)
    assert (
        "nothing sent; --verify: the 6 files and symlinks already on the host match the dataset (sha256)"
        in (step(project)["msg"])
    ), step(project)["msg"]


def test_verify_in_shard_mode_is_refused_not_ignored(project: Project, tmp_path: Path) -> None:
    setup(project, tmp_path)
    r = project.cli("sync", "--host", "dataset", "--shards", "--verify")
    assert r.returncode == 1, r.stdout + r.stderr
    assert step(project)["msg"] == (
        "--verify re-hashes a plain or encrypted copy file by file, and this upload is in shard mode; nothing"
        " sent:"
        " rerun without --verify"
    )


@needs_age
def test_a_ciphertext_flipped_on_the_host_is_found_and_sent_again(project: Project, tmp_path: Path) -> None:
    """Encrypted mode: each ciphertext on the host is hashed there and compared with the one cached
    here, which the upload sent (age encrypts afresh each time: the plaintext's hash says nothing
    of the host's bytes). Before, `--verify` was refused in encrypted mode."""
    key, pub = age_key(tmp_path / "keys")
    src, data_dir = setup(project, tmp_path, age_recipients=[pub], age_identity_file=str(key))
    r = project.cli("sync", "--host", "dataset", "--encrypt")
    assert r.returncode == 0, r.stdout + r.stderr
    store = data_dir / "my data.encrypted"
    before = tree_digest(store)
    flipped = store / "sub dir" / "nested.bin.age"
    st = flipped.stat()
    data = bytearray(flipped.read_bytes())
    data[200] ^= 0xFF
    flipped.write_bytes(bytes(data))
    os.utime(flipped, ns=(st.st_atime_ns, st.st_mtime_ns))
    r = project.cli("sync", "--host", "dataset", "--encrypt")
    assert r.returncode == 0 and "nothing sent" in step(project)["msg"], step(project)

    r = project.cli("sync", "--host", "dataset", "--encrypt", "--verify")
    assert r.returncode == 0, r.stdout + r.stderr
    s = step(project)
    assert s["status"] == "changed", s
    assert (
        "already on the host differ from the dataset (sha256), sent again: sub dir/nested.bin.age" in s["msg"]
    ), s
    assert tree_digest(store) == before
    r = project.cli("sync", "--host", "dataset", "--encrypt", "--verify")
    assert r.returncode == 0 and step(project)["status"] == "ok", step(project)
    assert "already on the host match the dataset (sha256)" in step(project)["msg"], step(project)["msg"]


@needs_age
def test_a_plaintext_flipped_on_the_host_is_found_and_decrypted_again(
    project: Project, tmp_path: Path
) -> None:
    """--decrypt-on-host: the plaintext the host decrypted is hashed there too and compared here
    with the dataset's own sha256 (the host's digest read back: nothing of the plaintext, nor its
    digest, nor the key is sent for it); one that differs is decrypted again from the ciphertext
    there. Before, `--verify` left the plaintext unchecked (documented), so a byte flipped in it at
    the same size and mtime stayed "up to date" forever."""
    key, pub = age_key(tmp_path / "keys")
    src, data_dir = setup(project, tmp_path, age_recipients=[pub], age_identity_file=str(key))
    args = ["sync", "--host", "dataset", "--encrypt", "--decrypt-on-host"]
    r = project.cli(*args)
    assert r.returncode == 0, r.stdout + r.stderr
    plain = data_dir / "my data"
    want = {k: v for k, v in tree_digest(src).items() if not v.startswith("link:")}  # (no symlinks)
    assert tree_digest(plain) == want
    flipped = plain / "sub dir" / "nested.bin"
    st = flipped.stat()
    data = bytearray(flipped.read_bytes())
    data[100] ^= 0xFF
    flipped.write_bytes(bytes(data))
    os.utime(flipped, ns=(st.st_atime_ns, st.st_mtime_ns))
    r = project.cli(*args)
    assert r.returncode == 0 and "nothing sent" in step(project)["msg"], step(project)

    r = project.cli(*args, "--verify", "--check")
    assert r.returncode == 0, r.stdout + r.stderr
    msg = step(project)["msg"]
    assert "--verify: 1 of the 5 decrypted files already in" in msg, msg
    assert "differ from the dataset (sha256), decrypted again: sub dir/nested.bin" in msg, msg
    assert tree_digest(plain) != want  # (check mode changed nothing)
    r = project.cli(*args, "--verify")
    assert r.returncode == 0, r.stdout + r.stderr
    s = step(project)
    assert s["status"] == "changed", s
    assert "decrypted again: sub dir/nested.bin" in s["msg"], s["msg"]
    assert tree_digest(plain) == want
    r = project.cli(*args, "--verify")
    assert r.returncode == 0 and step(project)["status"] == "ok", step(project)
    assert "--verify: the 5 decrypted files already in" in step(project)["msg"], step(project)["msg"]
    assert "match the dataset (sha256)" in step(project)["msg"], step(project)["msg"]
