"""Host keys: our own known_hosts file (KnownHosts) and the policy every server key goes
through (HostKeyPolicy): recorded or pinned keys pass, a trusted new one is recorded, an
unknown, changed or revoked one is refused with one sentence saying why.

Never the user's ~/.ssh/known_hosts, and never paramiko's or Fabric's own policies (Fabric's
default, AutoAddPolicy, accepts any key)."""

from __future__ import annotations

import base64
import binascii
import contextlib
import fcntl
import hashlib
import hmac
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuonboard.connection.keyblob import BadLine, RecordedKey, read_key
from gpuonboard.errors import HostKeyError, UsageError


def fingerprint(key: Any) -> str:
    """OpenSSH-style SHA256 fingerprint of a paramiko public key."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def known_hosts_name(address: str, port: int) -> str:
    """The known_hosts host pattern OpenSSH uses: `addr` on 22, `[addr]:port` otherwise."""
    return address if port == 22 else f"[{address}]:{port}"


@dataclass
class Entry:
    """One known_hosts line (or one recorded key): its host names and key."""

    hostnames: list[str]
    key: RecordedKey


def parse_entry(line: str) -> Entry | None:
    """A known_hosts line (stripped, no marker) as paramiko's HostKeyEntry.from_line reads it:
    fields split at each single space or tab; None for fewer than three fields or a key type
    paramiko cannot log in with (skipped, as paramiko skips them); BadLine for a key that cannot
    be read (see keyblob)."""
    fields = re.split(" |\t", line)
    if len(fields) < 3:
        return None
    names, kind, text = fields[:3]
    key = read_key(kind, text, line)
    return None if key is None else Entry(names.split(","), key)


def _hashed_is(pattern: str, name: str) -> bool:
    """Whether the hashed host name `pattern` (`|1|SALT|HASH`, OpenSSH's HashKnownHosts) is
    `name`, as paramiko's HostKeys.hash_host(name, pattern) == pattern decides (a pattern it
    cannot read is no match, where paramiko raised)."""
    parts = pattern.split("|")
    if len(parts) != 4:
        return False
    try:
        salt = base64.decodebytes(parts[2].encode())
    except (binascii.Error, ValueError):
        return False
    if len(salt) != hashlib.sha1().digest_size:
        return False
    mac = hmac.new(salt, name.encode(), hashlib.sha1).digest()
    made = f"|1|{base64.b64encode(salt).decode()}|{base64.b64encode(mac).decode()}"
    return hmac.compare_digest(made.encode(), pattern.encode())


def _bad_line(path: Path, exc: Exception) -> str:
    """`line N` of the known_hosts file that could not be read, or `a line`."""
    text = exc.args[0] if exc.args and isinstance(exc.args[0], str) else ""
    with contextlib.suppress(OSError, UnicodeDecodeError):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if text and line.strip() == text.strip():
                return f"line {number}"
    return "a line"


class KnownHosts:
    """Thread-safe known_hosts file of our own; never the user's ~/.ssh/known_hosts.

    It answers as paramiko's HostKeys would (the first key of a type for a name wins, a repeated
    line is dropped, hashed names match; tested against it), reading the file with the standard
    library: its entries are held in a list of our own and indexed by plain host name, and its
    keys are RecordedKey (type and blob). So a run imports paramiko only for its first login:
    an upload's OpenSSH master connection to a host whose key is recorded starts before that
    import (about 60 ms), not after it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._entries: list[Entry] = []  # in file order
        self._plain: dict[str, list[tuple[int, Entry]]] = {}  # plain host name -> (index, entry)
        self._hashed: list[tuple[int, Entry]] = []  # entries with a hashed name (`|1|salt|hash`): few
        self._revoked: set[bytes] = set()  # key blobs of `@revoked` lines: never accepted
        if path.exists() and not path.is_file():  # (read as empty, then nothing was recorded)
            what = "a directory" if path.is_dir() else "not a regular file"
            raise UsageError(
                f"{path} is {what}, not a known_hosts file; pass --known-hosts the path of a file"
                " (the default is .gpuonboard/known_hosts)."
            )
        if path.is_file():
            try:
                self._load(path)
            except (OSError, UnicodeDecodeError, ValueError) as exc:  # (BadLine among them)
                # the line's text is never shown: a mistyped --known-hosts may name a file of secrets
                raise HostKeyError(
                    f"{path}: cannot read the known_hosts file ({_bad_line(path, exc)} is no host key"
                    " entry; its text is not shown); fix or remove that line, or pass --known-hosts"
                    " the right file."
                ) from None

    def _load(self, path: Path) -> None:
        """paramiko's HostKeys.load, plus OpenSSH's markers, which paramiko read as a bad entry
        (the whole file refused, every host with it): a `@revoked` line's key is refused for
        every host, as OpenSSH (the rsync path) refuses it; a `@cert-authority` line vouches
        for host certificates, which paramiko cannot check, so it vouches for no key here. As in
        HostKeys.load, a name is dropped from a line whose key an earlier line gives it."""
        with open(path, encoding="utf-8") as f:
            for raw in f:
                line = raw.strip()
                if not line or line.startswith("#"):
                    continue
                if line.startswith("@"):
                    marker, _, rest = line.replace("\t", " ").partition(" ")  # (a tab too)
                    if marker == "@revoked":
                        self._revoked.add(_marker_key(line, rest))
                    continue
                entry = parse_entry(line)
                if entry is None:  # a key type paramiko does not know: as paramiko, skipped
                    continue
                names = [h for h in entry.hostnames if not self._has(h, entry.key)]
                if names:
                    entry.hostnames = names
                    self._append(entry)

    def revoked(self, key: Any) -> bool:
        """Whether a `@revoked` line of this file names `key`."""
        return key.asbytes() in self._revoked

    def _append(self, entry: Entry) -> None:
        """Add a parsed entry at the end, and to the index. Caller holds the lock (or owns the
        object)."""
        hit = (len(self._entries), entry)
        self._entries.append(entry)
        for name in entry.hostnames:
            if not name.startswith("|1|"):
                self._plain.setdefault(name, []).append(hit)
        if any(name.startswith("|1|") for name in entry.hostnames):
            self._hashed.append(hit)

    def _find(self, name: str) -> dict[str, Any]:
        """lookup() without the lock (a hashed `name` matches only itself, as in paramiko)."""
        if name.startswith("|1|"):
            hits = [hit for hit in self._hashed if name in hit[1].hostnames]
        else:
            hits = list(self._plain.get(name, ()))
            for i, entry in self._hashed:
                if any(h.startswith("|1|") and _hashed_is(h, name) for h in entry.hostnames):
                    hits.append((i, entry))
        found: dict[str, Any] = {}
        for _, entry in sorted(hits, key=lambda hit: hit[0]):
            found.setdefault(entry.key.get_name(), entry.key)
        return found

    def _has(self, name: str, key: Any) -> bool:
        """paramiko's HostKeys.check: whether `key` is the (first) recorded key of its type for
        `name`."""
        recorded = self._find(name).get(key.get_name())
        return recorded is not None and recorded.asbytes() == key.asbytes()

    def lookup(self, name: str) -> dict[str, Any]:
        """Recorded keys for a host pattern, by key type (the first entry of a type wins,
        as in paramiko's HostKeys.lookup)."""
        with self._lock:
            return self._find(name)

    def add(self, name: str, key: Any, label: str | None = None) -> None:
        """Record a key: one appended line (O_APPEND, under flock so parallel runs never
        interleave), like OpenSSH; never a rewrite of the whole file per host. A file that
        cannot be written is a HostKeyError naming it (`label`: the host, for that sentence)."""
        line = f"{name} {key.get_name()} {key.get_base64()}\n".encode()
        with self._lock:
            # the file first: a key kept in memory only (the file a directory, read-only, on a
            # full disk) let the connection's retry pass, and the next run found it unknown
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                    size = os.fstat(fd).st_size
                    if size and os.pread(fd, 1, size - 1) != b"\n":
                        line = b"\n" + line  # a hand-edited file without a final newline
                    os.write(fd, line)
                finally:
                    os.close(fd)
            except OSError as exc:
                who = f"host {label} ({name})" if label else name
                raise HostKeyError(
                    f"the host key of {who} could not be recorded in {self.path} ({exc.strerror or exc});"
                    " make that file writable (or pass --known-hosts a file you can write to), then rerun."
                ) from None
            # (appended after any recorded key of its type, as the line is: the first one still
            # wins; the policy records a key only for a type not recorded yet)
            self._append(Entry([name], RecordedKey(key.get_name(), key.asbytes())))


def _marker_key(line: str, rest: str) -> bytes:
    """The key blob of a `@revoked HOSTS TYPE BASE64` line, as the policy compares a server's key
    (BadLine when unreadable: a revocation that cannot be read must not be dropped silently)."""
    fields = rest.split()
    if len(fields) < 3:
        raise BadLine(line)
    # (a certificate, or a type paramiko cannot log in with: never presented to it, kept as written)
    key = None if fields[1].endswith("-cert-v01@openssh.com") else read_key(fields[1], fields[2], line)
    if key is not None:
        return key.blob
    try:
        return base64.b64decode(fields[2], validate=True)
    except ValueError:
        raise BadLine(line) from None


class HostKeyPolicy:
    """paramiko policy called for every server key (the client's own key list stays empty)."""

    def __init__(
        self, host_label: str, pinned: str | None, store: KnownHosts, trust_new: bool, note: str | None = None
    ) -> None:
        self.host_label = host_label
        self.pinned = pinned
        self.store = store
        self.trust_new = trust_new
        # where the user's own settings would have ssh accept an unknown key (Host.host_key_note):
        # not followed, and said in the refusal so the user knows why `ssh HOST` connects
        self.note = note
        self.seen: str | None = None
        # the type of a presented key that did not match the pin: the server may hold the pinned
        # key under another type (a vendor mail lists the RSA or ECDSA fingerprint), so the login
        # is tried again without it (see _open_hop)
        self.pin_missed: str | None = None

    def missing_host_key(self, client: Any, hostname: str, key: Any) -> None:
        """Accept a recorded or pinned key, record a trusted new one, refuse the rest."""
        fp = fingerprint(key)
        self.seen = fp
        if self.store.revoked(key):
            raise HostKeyError(
                f"host {self.host_label} ({hostname}) presented host key {fp}, which {self.store.path}"
                " marks @revoked; the connection was refused. A revoked key may be in an attacker's"
                " hands: ask the vendor for the server's new key."
            )
        recorded = self.store.lookup(hostname)
        same_type = recorded.get(key.get_name())
        if same_type is not None and same_type.asbytes() == key.asbytes():
            if self.pinned and fp != self.pinned:
                raise HostKeyError(self._pin_mismatch(hostname, fp, key))
            return
        if recorded:
            # a key of the same type that differs, or a key of a type never recorded for a
            # host we know: both are what a man-in-the-middle would present. A pin vouches for a
            # key of a type never recorded (the server has several), but not for a key that
            # differs from the recorded one of its type (that was accepted silently, a second
            # line appended on every run, while the address without the pin was refused): one
            # of the two is stale, and only the user can say which
            old = same_type or next(iter(recorded.values()))
            if self.pinned and fp == self.pinned and same_type is None:
                self.store.add(hostname, key, self.host_label)  # another of its keys, vouched for by the pin
                return
            if self.pinned and fp == self.pinned:
                raise HostKeyError(
                    f"host {self.host_label} ({hostname}) presented the host key the inventory pins"
                    f" ({fp}), but {self.store.path} records another one for it ({fingerprint(old)});"
                    " the connection was refused. If the vendor reinstalled the server and the pin is"
                    " the new key, delete the old line there, then rerun."
                )
            if self.pinned and same_type is None:
                self.pin_missed = key.get_name()  # (the pinned key may be of a third type)
            raise HostKeyError(
                f"host {self.host_label} ({hostname}) presented a DIFFERENT host key ({fp}) than the"
                f" one recorded in {self.store.path} ({fingerprint(old)}); this may be a"
                " man-in-the-middle attack, so the connection was refused. If the vendor reinstalled"
                " the server, confirm the new fingerprint with them and delete the old line"
                f"{self._not_followed() if 'accept-new' not in (self.note or '') else ''}."
            )
        if self.pinned:
            if fp != self.pinned:
                raise HostKeyError(self._pin_mismatch(hostname, fp, key))
            self.store.add(hostname, key, self.host_label)
            return
        if self.trust_new:
            self.store.add(hostname, key, self.host_label)
            return
        raise HostKeyError(
            f"host {self.host_label} ({hostname}) has an unknown host key {fp}; confirm it with the"
            " vendor, then rerun with --trust-new-hosts or pin it as host_key in the inventory"
            f"{self._not_followed()}."
        )

    def _not_followed(self) -> str:
        """The clause saying which of the user's settings would have had ssh accept the key."""
        if not self.note:
            return ""
        if "UserKnownHostsFile" in self.note:  # (alone: ssh asks about every key, records none)
            return (
                f" (gpuonboard does not follow {self.note}, which has ssh forget every host key and ask"
                " about it each time: it never accepts one silently)"
            )
        return (
            f" (gpuonboard does not follow {self.note}, which has ssh accept a host key it does not"
            " know: it never accepts one silently)"
        )

    def _pin_mismatch(self, hostname: str, fp: str, key: Any) -> str:
        self.pin_missed = key.get_name()
        return (
            f"host {self.host_label} ({hostname}) presented host key {fp}, but the inventory pins"
            f" {self.pinned}; the connection was refused (possible man-in-the-middle)."
        )
