"""age v1 passphrase encryption (the scrypt recipient), streaming in constant memory.

pyrage's passphrase API takes and returns whole byte strings, so a 10 GiB file would need
10 GiB of RAM; X25519 recipients stream through pyrage already. This module writes and reads
the same format (https://age-encryption.org/v1, the format `age -p` and rage produce) with
`cryptography`'s primitives, one 64 KiB chunk at a time:

    age-encryption.org/v1
    -> scrypt <salt, 16 bytes, base64> <log2 of scrypt N>
    <the 16-byte file key sealed with ChaCha20-Poly1305 under scrypt(passphrase), base64>
    --- <HMAC-SHA256 of the header above, key HKDF(file key, "header"), base64>
    <16-byte nonce> <STREAM: ChaCha20-Poly1305 chunks of 64 KiB, key HKDF(file key, nonce,
    "payload"), nonce = 11-byte chunk counter + 0x01 on the last chunk, else 0x00>

Base64 is RFC 4648 without padding. Interoperability is tested against pyrage (rage) both ways.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
from typing import IO, Protocol

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

INTRO = b"age-encryption.org/v1\n"
CHUNK = 64 * 1024
TAG = 16
WORK_FACTOR = 18  # log2 of scrypt's N, as `age -p` uses (about 1 s and 256 MiB once per file)
MAX_WORK_FACTOR = 22  # a header asking for more is refused, as age does (it would take minutes)


class AgeError(ValueError):
    """The input is not an age passphrase file, the passphrase is wrong, or it was altered."""


class Writer(Protocol):
    def write(self, data: bytes, /) -> int | None: ...


def _b64(data: bytes) -> bytes:
    return base64.b64encode(data).rstrip(b"=")


def _unb64(text: bytes) -> bytes:
    """Strict unpadded base64 (age refuses padding and non-canonical encodings)."""
    try:
        data = base64.b64decode(text + b"=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise AgeError("the header holds malformed base64") from None
    if b"=" in text or _b64(data) != text:
        raise AgeError("the header holds non-canonical base64")
    return data


def _hkdf(key: bytes, salt: bytes, info: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=salt, info=info).derive(key)


def _wrap_key(passphrase: str, salt: bytes, work_factor: int) -> bytes:
    kdf = Scrypt(salt=b"age-encryption.org/v1/scrypt" + salt, length=32, n=1 << work_factor, r=8, p=1)
    return kdf.derive(passphrase.encode("utf-8", "surrogateescape"))  # (an env var's own bytes)


def _read_full(src: IO[bytes], n: int) -> bytes:
    """Up to n bytes, fewer only at end of input (pipes return short reads)."""
    parts, got = [], 0
    while got < n:
        data = src.read(n - got)
        if not data:
            break
        parts.append(data)
        got += len(data)
    return b"".join(parts)


def _chunk_nonce(counter: int, last: bool) -> bytes:
    return counter.to_bytes(11, "big") + (b"\x01" if last else b"\x00")


def encrypt_io(src: IO[bytes], dst: Writer, passphrase: str, work_factor: int = WORK_FACTOR) -> None:
    """Encrypt src (read to its end) to dst for `passphrase`, holding one chunk at a time."""
    file_key, salt = os.urandom(16), os.urandom(16)
    sealed = ChaCha20Poly1305(_wrap_key(passphrase, salt, work_factor)).encrypt(bytes(12), file_key, None)
    header = INTRO + b"-> scrypt " + _b64(salt) + b" %d\n" % work_factor + _b64(sealed) + b"\n---"
    mac = hmac.new(_hkdf(file_key, b"", b"header"), header, hashlib.sha256).digest()
    nonce = os.urandom(16)
    dst.write(header + b" " + _b64(mac) + b"\n" + nonce)
    aead = ChaCha20Poly1305(_hkdf(file_key, nonce, b"payload"))
    counter, chunk = 0, _read_full(src, CHUNK)
    while True:
        following = _read_full(src, CHUNK) if len(chunk) == CHUNK else b""
        last = not following
        dst.write(aead.encrypt(_chunk_nonce(counter, last), chunk, None))
        if last:
            return
        counter, chunk = counter + 1, following


def _header(src: IO[bytes], passphrase: str) -> bytes:
    """Read and check the header; the file key."""
    lines = [src.readline(1024) for _ in range(4)]
    if lines[0] != INTRO:
        raise AgeError("not an age file")
    args = lines[1].rstrip(b"\n").split(b" ")
    if len(args) != 4 or args[:2] != [b"->", b"scrypt"] or not args[3].isdigit():
        raise AgeError("not a passphrase-encrypted age file (or more than one recipient)")
    salt, work_factor = _unb64(args[2]), int(args[3])
    if len(salt) != 16 or not 1 <= work_factor <= MAX_WORK_FACTOR or args[3] != b"%d" % work_factor:
        raise AgeError(f"the scrypt parameters are refused (work factor {work_factor})")
    sealed = _unb64(lines[2].rstrip(b"\n"))
    if not lines[3].startswith(b"--- ") or not lines[3].endswith(b"\n") or len(sealed) != 32:
        raise AgeError("the age header is malformed")
    try:  # (scrypt, ~1 s and 256 MiB, only once the header's shape is right)
        file_key = ChaCha20Poly1305(_wrap_key(passphrase, salt, work_factor)).decrypt(bytes(12), sealed, None)
    except InvalidTag:
        raise AgeError("wrong passphrase (or the header was altered)") from None
    signed = b"".join(lines[:3]) + b"---"
    mac = hmac.new(_hkdf(file_key, b"", b"header"), signed, hashlib.sha256).digest()
    if not hmac.compare_digest(mac, _unb64(lines[3][4:].rstrip(b"\n"))):
        raise AgeError("the age header was altered")
    return file_key


def decrypt_io(src: IO[bytes], dst: Writer, passphrase: str) -> None:
    """Decrypt src to dst, one chunk at a time. A chunk is written only once authenticated, so
    what reaches dst is always a true prefix of the plaintext; a truncated, extended or altered
    payload raises AgeError (the caller discards dst)."""
    file_key = _header(src, passphrase)
    nonce = _read_full(src, 16)
    if len(nonce) != 16:
        raise AgeError("the age payload is truncated")
    aead = ChaCha20Poly1305(_hkdf(file_key, nonce, b"payload"))
    counter, sealed = 0, _read_full(src, CHUNK + TAG)
    while True:
        following = _read_full(src, CHUNK + TAG) if len(sealed) == CHUNK + TAG else b""
        last = not following
        try:
            plain = aead.decrypt(_chunk_nonce(counter, last), sealed, None)
        except InvalidTag:
            raise AgeError("the age payload was altered or truncated") from None
        if not plain and counter > 0:
            raise AgeError("the age payload ends with an empty chunk")
        dst.write(plain)
        if last:
            return
        counter, sealed = counter + 1, following
