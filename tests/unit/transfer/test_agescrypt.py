"""age passphrase files written and read in constant memory, checked against rage (pyrage)."""

from __future__ import annotations

import base64
import io
import os
import subprocess
import sys
from pathlib import Path

import pyrage
import pytest

from gpuonboard.transfer import agescrypt
from gpuonboard.transfer.agescrypt import AgeError

PW = "correct horse ü battery"


def _enc(data: bytes, work_factor: int = 10) -> bytes:
    out = io.BytesIO()
    agescrypt.encrypt_io(io.BytesIO(data), out, PW, work_factor=work_factor)
    return out.getvalue()


def _dec(blob: bytes, pw: str = PW) -> bytes:
    out = io.BytesIO()
    agescrypt.decrypt_io(io.BytesIO(blob), out, pw)
    return out.getvalue()


@pytest.mark.parametrize("size", [0, 1, 65535, 65536, 65537, 3 * 65536, 200_000])
def test_round_trip_and_rage_reads_what_we_write(size: int) -> None:
    """Every chunk boundary case (empty, one byte, exactly one and three full chunks, ...)."""
    data = os.urandom(size)
    ours = _enc(data)
    assert pyrage.passphrase.decrypt(ours, PW) == data  # rage reads what we write
    assert _dec(ours) == data


def test_we_read_what_rage_writes() -> None:
    """(rage picks its own scrypt work factor, ~4 s here: one multi-chunk file)"""
    data = os.urandom(3 * 65536 + 7)
    assert _dec(pyrage.passphrase.encrypt(data, PW)) == data


def test_default_work_factor_is_ages_and_rage_opens_it() -> None:
    blob = _enc(b"x", work_factor=agescrypt.WORK_FACTOR)
    assert blob.splitlines()[1].endswith(b" 18") and pyrage.passphrase.decrypt(blob, PW) == b"x"


def test_wrong_passphrase_tampering_and_truncation_are_refused() -> None:
    data = os.urandom(150_000)
    blob = _enc(data)
    with pytest.raises(AgeError, match="wrong passphrase"):
        _dec(blob, "not it")
    body = blob.index(b"\n---") + 200  # somewhere in the payload
    flipped = blob[:body] + bytes([blob[body] ^ 1]) + blob[body + 1 :]
    with pytest.raises(AgeError, match="altered"):
        _dec(flipped)
    with pytest.raises(AgeError):  # the last chunk cut off: the one before is not marked last
        _dec(blob[: -(len(data) % agescrypt.CHUNK) - agescrypt.TAG])
    with pytest.raises(AgeError):
        _dec(blob + b"\0" * 17)  # bytes appended
    header = blob.split(b"\n---")[0]
    assert pyrage.passphrase.decrypt(blob, PW) == data  # (the untouched file still opens)
    greedy = header.replace(b" 10\n", b" 30\n") + blob[len(header) :]
    with pytest.raises(AgeError, match="work factor 30"):
        _dec(greedy)
    with pytest.raises(AgeError, match="not an age file"):
        _dec(b"hello\n" + blob)
    lines = blob.split(b"\n", 3)  # a sealed file key of the wrong length: refused before scrypt
    short = base64.b64encode(base64.b64decode(lines[2] + b"=")[:30]).rstrip(b"=")
    with pytest.raises(AgeError, match="malformed"):
        _dec(b"\n".join([lines[0], lines[1], short, lines[3]]))


def test_a_large_stream_needs_constant_memory(tmp_path: Path) -> None:
    """256 MiB encrypted to a file and decrypted back, in a child process: its peak RSS stays
    a small fraction of that (pyrage's passphrase API would hold it all, twice)."""
    code = f"""
import io
from gpuonboard.transfer import agescrypt

class Zeros(io.RawIOBase):
    def __init__(self, n): self.left = n
    def readable(self): return True
    def readinto(self, b):
        k = min(len(b), self.left); b[:k] = bytes(k); self.left -= k; return k

class Count:
    n = 0
    def write(self, d): self.n += len(d); return len(d)

size = 256 << 20
with open({str(tmp_path / "big.age")!r}, "wb") as out:
    agescrypt.encrypt_io(io.BufferedReader(Zeros(size)), out, "pw", 10)
back = Count()
with open({str(tmp_path / "big.age")!r}, "rb") as f:
    agescrypt.decrypt_io(f, back, "pw")
assert back.n == size
# VmHWM, this image's own peak (ru_maxrss can carry a big parent's peak across exec)
print([int(x.split()[1]) // 1024 for x in open("/proc/self/status") if x.startswith("VmHWM")][0])
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert int(r.stdout.strip()) < 100, r.stdout  # MiB of peak RSS, for 256 MiB of plaintext
