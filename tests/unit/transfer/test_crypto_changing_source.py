"""A dataset file written to while it is encrypted into the ciphertext cache is refused: its
ciphertext would hold bytes part old, part new (a content that never was on disk), and the
plaintext hash it was cached under, read by a second reader of the file, was of yet other bytes."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from gpuonboard.masking import Secret
from gpuonboard.transfer import crypto

SIZE = 48 << 20


def _keypair(tmp: Path) -> tuple[Secret, str]:
    from pyrage import x25519

    ident = x25519.Identity.generate()
    return Secret(f"{ident}\n"), str(ident.to_public())


def _rewrite_until(path: Path, stop: threading.Event, started: threading.Event) -> None:
    """Rewrite the whole file, 4 MiB at a time, alternating its content, until stopped (the
    size never moves: only the mtime and the bytes do)."""
    fill = 0
    with path.open("r+b", buffering=0) as f:
        while not stop.is_set():
            fill ^= 0xFF
            f.seek(0)
            for _ in range(SIZE >> 22):
                f.write(bytes([fill]) * (1 << 22))
                started.set()
                if stop.is_set():
                    return


def test_a_file_rewritten_while_it_is_encrypted_is_refused_and_nothing_is_cached(tmp_path: Path) -> None:
    _, pub = _keypair(tmp_path)
    src = tmp_path / "big.bin"
    src.write_bytes(bytes(SIZE))
    cache = tmp_path / "cache"
    enc = crypto.Encryption(recipients=(pub,))
    stop, started = threading.Event(), threading.Event()
    writer = threading.Thread(target=_rewrite_until, args=(src, stop, started))
    writer.start()
    try:
        assert started.wait(10)
        with pytest.raises(crypto.ChangedWhileEncrypting) as caught:
            crypto.encrypt_to_cache(src, enc, cache)
    finally:
        stop.set()
        writer.join()
    assert caught.value.filename == str(src)
    assert os.listdir(cache) == []  # no ciphertext kept under any hash, no temp file left


def test_the_hash_is_of_the_very_bytes_encrypted(tmp_path: Path) -> None:
    """An unchanged file: its sha256 (one read shared by the encryptor and the hasher) and the
    ciphertext, decrypted, agree with the file, for recipients and for a passphrase."""
    ident, pub = _keypair(tmp_path)
    src = tmp_path / "data.bin"
    src.write_bytes(os.urandom(3 * crypto.CHUNK + 12345))
    for enc, key in (
        (crypto.Encryption(recipients=(pub,)), {"identity": ident}),
        (crypto.Encryption(passphrase=Secret("correct horse")), {"passphrase": Secret("correct horse")}),
    ):
        plain, path = crypto.encrypt_to_cache(src, enc, tmp_path / "cache")
        assert plain == crypto.sha256_file(src)
        out = tmp_path / "out.bin"
        crypto.decrypt_file(path, out, **key)
        assert out.read_bytes() == src.read_bytes()
