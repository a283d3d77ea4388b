"""A host key as a known_hosts line writes it (TYPE BASE64), read with the standard library: so
reading our known_hosts file needs no paramiko, whose import then waits for the first login.

A key is kept as paramiko would hand it to the host key policy: its type as paramiko names it
(`ssh-rsa` for a line that says `rsa-sha2-512`) and its blob in the canonical encoding paramiko's
`asbytes()` gives (an RSA number written with extra leading zero bytes is the same key). A key
type paramiko cannot log in with (DSA, FIDO, an Ed25519 or ECDSA certificate) is not read, as
paramiko skipped it; of an RSA certificate (`ssh-keyscan -c` prints them) the RSA key inside is
read, as paramiko read it. A key that is not what its type says (cut short, another type's key,
bytes after it, an ECDSA point off its curve, RSA numbers no RSA key has) is BadLine: the caller
refuses the file, naming the line, where paramiko skipped some of these, read others padded with
zero bytes and refused the file for the rest.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

# the key types paramiko logs in with, by the type name a line may give them
KEY_TYPES = {
    "ssh-ed25519": "ssh-ed25519",
    "ecdsa-sha2-nistp256": "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384": "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521": "ecdsa-sha2-nistp521",
    "ssh-rsa": "ssh-rsa",
    "rsa-sha2-256": "ssh-rsa",
    "rsa-sha2-512": "ssh-rsa",
}
# certificates paramiko read as the RSA key inside them (a nonce, then e and n)
RSA_CERT = "ssh-rsa-cert-v01@openssh.com"
RSA_CERT_TYPES = frozenset(f"{t}-cert-v01@openssh.com" for t in ("ssh-rsa", "rsa-sha2-256", "rsa-sha2-512"))

# NIST curves (y^2 = x^3 - 3x + b mod p): the name in the blob, p, b, and the bytes of a
# coordinate (FIPS 186-4, D.1.2)
_CURVES = {
    "ecdsa-sha2-nistp256": (
        b"nistp256",
        2**256 - 2**224 + 2**192 + 2**96 - 1,
        0x5AC635D8AA3A93E7B3EBBD55769886BC651D06B0CC53B0F63BCE3C3E27D2604B,
        32,
    ),
    "ecdsa-sha2-nistp384": (
        b"nistp384",
        2**384 - 2**128 - 2**96 + 2**32 - 1,
        0xB3312FA7E23EE7E4988E056BE3F82D19181D9C6EFE8141120314088F5013875AC656398D8A2ED19D2A85C8EDD3EC2AEF,
        48,
    ),
    "ecdsa-sha2-nistp521": (
        b"nistp521",
        2**521 - 1,
        0x051953EB9618E1C9A1F929A21A0B68540EEA2DA725B99B315F3B8B489918EF109E156193951EC7E937B1652C0BD3BB1BF073573DF883D2C34F1EF451FD46B503F00,
        66,
    ),
}


class BadLine(ValueError):
    """A known_hosts line that cannot be read (its text is args[0], never shown)."""


@dataclass(frozen=True)
class RecordedKey:
    """A host key as known_hosts records it: its type and canonical blob. It answers what the
    host key policy asks of a paramiko key: get_name() and asbytes()."""

    kind: str
    blob: bytes

    def get_name(self) -> str:
        return self.kind

    def asbytes(self) -> bytes:
        return self.blob


def _ssh_strings(blob: bytes, first: int = 0) -> list[bytes] | None:
    """The SSH strings (4-byte length, then the bytes) `blob` is made of, all of it, or only
    its `first` ones; None where a length runs past its end (or there are fewer)."""
    out: list[bytes] = []
    at = 0
    while at < len(blob) and (not first or len(out) < first):
        if at + 4 > len(blob):
            return None
        size = int.from_bytes(blob[at : at + 4], "big")
        at += 4
        if size > len(blob) - at:
            return None
        out.append(blob[at : at + size])
        at += size
    return None if first and len(out) < first else out


def _string(data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + data


def _mpint(n: int) -> bytes:
    """A positive number as an SSH mpint: big-endian, no leading zero byte unless the top bit
    is set (what paramiko writes)."""
    raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return _string(b"\0" + raw if raw[0] & 0x80 else raw)


def _on_curve(kind: str, fields: list[bytes]) -> bool:
    """An ECDSA key's curve name and uncompressed point (04 || X || Y) on that curve."""
    name, p, b, size = _CURVES[kind]
    point = fields[2] if len(fields) == 3 else b""
    if fields[1:2] != [name] or len(point) != 1 + 2 * size or point[0] != 4:
        return False
    x, y = int.from_bytes(point[1 : 1 + size], "big"), int.from_bytes(point[1 + size :], "big")
    return x < p and y < p and (y * y - (x * x * x - 3 * x + b)) % p == 0


def _canonical(kind: str, blob: bytes) -> bytes | None:
    """`blob` in paramiko's encoding when it is a key of type `kind`, else None."""
    fields = _ssh_strings(blob)
    if not fields or fields[0] != kind.encode():
        return None
    if kind == "ssh-ed25519":
        return blob if len(fields) == 2 and len(fields[1]) == 32 else None
    if kind in _CURVES:
        return blob if _on_curve(kind, fields) else None
    if len(fields) != 3:
        return None
    return _rsa(fields[1], fields[2])


def _rsa(e_field: bytes, n_field: bytes) -> bytes | None:
    """An RSA key's blob from its two numbers (SSH mpints), in paramiko's encoding; None where
    they are no RSA key's."""
    e, n = (int.from_bytes(f, "big", signed=True) for f in (e_field, n_field))
    if not (3 <= e < n and e % 2 == 1):  # (what an RSA public key is: paramiko refused the rest)
        return None
    return _string(b"ssh-rsa") + _mpint(e) + _mpint(n)


def read_key(kind: str, text: str, line: str) -> RecordedKey | None:
    """The key of a line that gives type `kind` and base64 `text` (`line`: for BadLine); None
    for a type paramiko cannot log in with."""
    try:
        blob = base64.decodebytes(text.encode())  # (as paramiko: characters not of base64 ignored)
    except (binascii.Error, ValueError):
        raise BadLine(line) from None
    if kind in RSA_CERT_TYPES:  # (the RSA key inside: its type, a nonce, then e and n)
        own, head = "ssh-rsa", _ssh_strings(blob, first=4) or []
        canonical = _rsa(head[2], head[3]) if head and head[0] == RSA_CERT.encode() else None
    elif kind in KEY_TYPES:
        own = KEY_TYPES[kind]
        canonical = _canonical(own, blob)
    else:
        return None
    if canonical is None:
        raise BadLine(line)
    return RecordedKey(own, canonical)
