"""The key lines of an age identity file, picked once (crypto.identity_keys) for what is parsed
here, what the host's `age -i` is sent (shardstream.identity_prefix) and what the log masks."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pyrage
import pytest

from gpuonboard import masking
from gpuonboard.errors import CryptoError
from gpuonboard.masking import Secret
from gpuonboard.transfer import crypto, shardstream


def _key_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "id.txt"
    path.write_text(text)
    path.chmod(0o600)
    return path


def test_key_lines_are_the_stripped_lines_that_are_neither_blank_nor_comments() -> None:
    a, b = (str(pyrage.x25519.Identity.generate()) for _ in range(2))
    text = f"# created: today\r\n  # indented comment\n\n   \n  {a}  \r\n\t{b}\n"
    assert crypto.identity_keys(text) == [a, b]
    assert shardstream.identity_prefix(text) == f"2\n{a}\n{b}\n".encode()
    assert [str(i) for i in crypto.parse_identity(Secret(text))] == [a, b]


def test_every_key_line_the_host_is_sent_is_masked(tmp_path: Path) -> None:
    """Each key of a file with two (indented, CRLF) is a secret of its own: a line quoting one
    alone shows neither."""
    a, b = (str(pyrage.x25519.Identity.generate()) for _ in range(2))
    secret = crypto.load_identity(None, str(_key_file(tmp_path, f"# two keys\r\n  {a}\r\n{b}\r\n")))
    for key in crypto.identity_keys(secret.reveal()):
        assert key in (a, b)
        line = f"age: error with {key} on h1"
        assert key not in masking.mask(line) and key not in masking.mask_written(line)


def test_a_lower_case_key_is_refused_here_not_by_age_on_the_host(tmp_path: Path) -> None:
    """pyrage reads a key in lower case, age (what decrypts on the host) does not: the file
    passed every local check and each shard then failed on the host (`unknown identity
    type`). Refused when loaded, without showing the key."""
    ident = pyrage.x25519.Identity.generate()
    lower = str(ident).lower()
    path = _key_file(tmp_path, f"# public key: {ident.to_public()}\n{lower}\n")
    ct = tmp_path / "m.age"
    ct.write_bytes(pyrage.encrypt(b"x", [ident.to_public()]))
    age = subprocess.run(["age", "-d", "-i", str(path), str(ct)], capture_output=True, text=True)
    assert age.returncode != 0 and "unknown identity type" in age.stderr  # (what the host says)
    with pytest.raises(CryptoError) as err:
        crypto.load_identity(None, str(path))
    assert "upper case" in str(err.value) and lower not in str(err.value)
    upper = _key_file(tmp_path, f"# public key: {ident.to_public()}\n{lower.upper()}\n")
    assert crypto.identity_matches(crypto.load_identity(None, str(upper)), [str(ident.to_public())])
