"""`sync --verify` re-hashes the host's copy (sha256) and sends again what differs: a dataset file
flipped by one byte on the host at the same size and mtime stayed "dataset up to date ... nothing
sent" forever (rsync's quick check). Real sshd test host and real rsync, as in test_dataset.py
(whose helpers this module uses)."""

from __future__ import annotations

import hashlib
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


def _flip(path: Path, at: int = 100) -> None:
    """One byte of `path` flipped, its size and mtime kept: rsync's quick check and the listing
    cannot see it."""
    st = path.stat()
    data = bytearray(path.read_bytes())
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_a_shard_flipped_on_the_host_is_found_and_sent_again(project: Project, tmp_path: Path) -> None:
    """Shard mode (review safety32: --verify was refused there): each shard the host keeps is
    hashed there and compared here with its sha256 (its name); one that differs is sent again."""
    _, data_dir = setup(project, tmp_path)
    r = project.cli("sync", "--host", "dataset", "--shards")
    assert r.returncode == 0, r.stdout + r.stderr
    store = data_dir / "my data.shards"
    tars = sorted(store.glob("*.tar"))
    assert tars, sorted(store.iterdir())
    _flip(tars[0], at=600)
    r = project.cli("sync", "--host", "dataset", "--shards")
    assert r.returncode == 0 and "nothing sent" in step(project)["msg"], step(project)  # (as documented)

    r = project.cli("sync", "--host", "dataset", "--shards", "--verify")
    assert r.returncode == 0, r.stdout + r.stderr
    s = step(project)
    assert s["status"] == "changed", s
    assert f"differ from their sha256, sent again: {tars[0].name}" in s["msg"], s["msg"]
    assert hashlib.sha256(tars[0].read_bytes()).hexdigest().startswith(tars[0].name[: -len(".tar")])
    r = project.cli("sync", "--host", "dataset", "--shards", "--verify")
    assert r.returncode == 0 and step(project)["status"] == "ok", step(project)
    assert "already on the host match their sha256" in step(project)["msg"], step(project)["msg"]


def test_a_file_of_an_unpacked_tree_flipped_on_the_host_is_unpacked_again(
    project: Project, tmp_path: Path
) -> None:
    """--unpack (the shards not kept on the host): every file of the unpacked tree is hashed
    there against the dataset's sha256; one that differs makes the tree drift: its shards are
    sent again and the tree unpacked again."""
    src, data_dir = setup(project, tmp_path)
    r = project.cli("sync", "--host", "dataset", "--shards", "--unpack")
    assert r.returncode == 0, r.stdout + r.stderr
    tree = data_dir / "my data"
    assert tree_digest(tree) == tree_digest(src)
    _flip(tree / "sub dir" / "nested.bin")
    r = project.cli("sync", "--host", "dataset", "--shards", "--unpack")
    assert r.returncode == 0 and "nothing sent" in step(project)["msg"], step(project)

    r = project.cli("sync", "--host", "dataset", "--shards", "--unpack", "--verify")
    assert r.returncode == 0, r.stdout + r.stderr
    s = step(project)
    assert s["status"] == "changed", s
    assert "differ from the dataset (sha256): sub dir/nested.bin" in s["msg"], s["msg"]
    assert tree_digest(tree) == tree_digest(src)
    r = project.cli("sync", "--host", "dataset", "--shards", "--unpack", "--verify")
    assert r.returncode == 0 and step(project)["status"] == "ok", step(project)
    assert "of the unpacked tree" in step(project)["msg"], step(project)["msg"]
    assert "match the dataset (sha256)" in step(project)["msg"], step(project)["msg"]


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


@needs_age
def test_an_encrypted_shard_flipped_on_the_host_is_found_and_sent_again(
    project: Project, tmp_path: Path
) -> None:
    """Encrypted shards: each is compared with the ciphertext cached here that the upload sent."""
    key, pub = age_key(tmp_path / "keys")
    _, data_dir = setup(project, tmp_path, age_recipients=[pub], age_identity_file=str(key))
    args = ["sync", "--host", "dataset", "--shards", "--encrypt"]
    r = project.cli(*args)
    assert r.returncode == 0, r.stdout + r.stderr
    store = data_dir / "my data.shards"
    ages = sorted(store.glob("*.age"))
    assert ages, sorted(store.iterdir())
    before = ages[0].read_bytes()
    _flip(ages[0], at=300)
    r = project.cli(*args, "--verify")
    assert r.returncode == 0, r.stdout + r.stderr
    s = step(project)
    assert s["status"] == "changed", s
    assert f"differ from their sha256, sent again: {ages[0].name}" in s["msg"], s
    assert ages[0].read_bytes() == before
    r = project.cli(*args, "--verify")
    assert r.returncode == 0 and step(project)["status"] == "ok", step(project)


@needs_age
def test_encrypted_shards_with_no_ciphertext_cached_here_are_said_not_verified(
    project: Project, tmp_path: Path
) -> None:
    """Encrypted shards whose ciphertext is not cached here (another machine uploaded them, the
    cache was cleared): each is sent again (its size there cannot be told from here), so no shard
    on the host is left to check, and --verify says plainly that it verified none. Before (review
    revF), it said "the 0 shards already on the host ... match their sha256"."""
    key, pub = age_key(tmp_path / "keys")
    _, data_dir = setup(project, tmp_path, age_recipients=[pub], age_identity_file=str(key))
    args = ["sync", "--host", "dataset", "--shards", "--encrypt"]
    r = project.cli(*args)
    assert r.returncode == 0, r.stdout + r.stderr
    cached = sorted((project.root / ".gpuonboard" / "cache" / "encrypted").glob("*.age"))
    assert cached
    for path in cached:
        path.unlink()
    r = project.cli(*args, "--verify")
    assert r.returncode == 0, r.stdout + r.stderr
    msg = step(project)["msg"]  # (each shard sent again: its size there cannot be told from here)
    assert msg.startswith("sent 1 of 1 shards"), msg
    assert "--verify: not verified: no shard on the host that this run does not send" in msg, msg
    assert "match their sha256" not in msg, msg
