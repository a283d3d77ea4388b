"""The verification record of a pull and the mark of one in progress, in the local copy
(`.gpuonboard-verified.sha256`): what was verified, from which host, dir and host key, written
atomically; and whose copy a local dir is."""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuonboard import atomicfile
from gpuonboard.steps.base import StepContext
from gpuonboard.transfer import parse_manifest

if TYPE_CHECKING:
    from gpuonboard.inventory import Host

RECORD = ".gpuonboard-verified.sha256"  # in the local copy after a verified pull


RECORD_TAG = "# gpuonboard-verified "  # the record's first line: host, dir, listing (JSON)


# while a pull runs the record's place holds only this line (host, dir): whose copy the dir is
PULLING_TAG = "# gpuonboard-pulling "


@dataclass(frozen=True)
class Record:
    """`DEST/.gpuonboard-verified.sha256`: what a verified pull copied, from which host and dir.

    First line: `# gpuonboard-verified {json}` (host name, address, port, dir, file count, the
    listing); then one sha256sum line per file, so `sha256sum -c` works in the copy."""

    host: str
    address: str
    port: int
    dir: str
    listing: tuple[str, ...]
    sums: dict[str, str]
    key: str = ""  # the host key's fingerprint ('' in a record written before it was kept)

    @property
    def owner(self) -> Owner:
        """Whose verified copy this record says the dir is."""
        return Owner(self.host, self.address, self.port, self.dir, True, self.key)

    def of(self, host: Host, results: str, key: str = "") -> bool:
        """True when it records this host's (address, port), this results dir and, where both
        are known, this host key (a rental's address reused for another box is another host)."""
        return self.owner.of(host, results, key)

    def to_bytes(self) -> bytes:
        """The file's bytes (a name that is not UTF-8 keeps its own bytes)."""
        head = {
            "version": 2,
            "host": self.host,
            "address": self.address,
            "port": self.port,
            "dir": self.dir,
            "files": len(self.sums),
            "listing": sorted(self.listing),
        }
        if self.key:
            head["key"] = self.key
        lines = [RECORD_TAG + json.dumps(head, sort_keys=True)]  # ASCII: odd bytes as \\udcXX
        for name, digest in sorted(self.sums.items()):
            if any(c in name for c in "\\\n\r"):
                esc = name.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
                lines.append(f"\\{digest}  ./{esc}")
            else:
                lines.append(f"{digest}  ./{name}")
        return ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape")

    @classmethod
    def parse(cls, data: bytes) -> Record | None:
        """A complete record of this format, else None (an old, empty or cut one never counts)."""
        text = data.decode("utf-8", "surrogateescape")
        first, _, rest = text.partition("\n")
        if not first.startswith(RECORD_TAG) or not text.endswith("\n"):
            return None
        try:
            head = json.loads(first[len(RECORD_TAG) :])
        except ValueError:
            return None
        if not isinstance(head, dict) or head.get("version") != 2:
            return None
        fields = (head.get("host"), head.get("address"), head.get("port"), head.get("dir"))
        listing, files = head.get("listing"), head.get("files")
        if not (
            all(isinstance(f, str) for f in fields[:2] + fields[3:])
            and isinstance(fields[2], int)
            and isinstance(files, int)
            and isinstance(listing, list)
            and all(isinstance(e, str) for e in listing)
        ):
            return None
        sums = parse_manifest(rest)
        if len(sums) != files:
            return None
        key = str(head.get("key") or "")
        return cls(head["host"], head["address"], head["port"], head["dir"], tuple(listing), sums, key)


def host_key(ctx: StepContext) -> str:
    """The fingerprint of the host key this run's connection verified ('' with none: local)."""
    return str(getattr(ctx.runner, "fingerprint", None) or "")


def read_record(dest: Path) -> Record | None:
    """The record in a local copy, or None."""
    try:
        return Record.parse((dest / RECORD).read_bytes())
    except OSError:
        return None


@dataclass(frozen=True)
class Owner:
    """Whose copy a local dir is: the host (name, address, port) and results dir a pull into it
    started (`pulling`, written before rsync) or verified (the record)."""

    host: str
    address: str
    port: int
    dir: str
    verified: bool
    key: str = ""  # the host key's fingerprint, when known

    def of(self, host: Host, results: str, key: str = "") -> bool:
        """True when it is this host's (address, port), this results dir and, where both are
        known, this host key."""
        same = (self.address, self.port, self.dir) == (host.address, host.port, results)
        return same and (not self.key or not key or self.key == key)

    def to_bytes(self) -> bytes:
        """The mark of a pull in progress: one line, never a record (Record.parse refuses it)."""
        head: dict[str, Any] = {
            "host": self.host,
            "address": self.address,
            "port": self.port,
            "dir": self.dir,
        }
        if self.key:
            head["key"] = self.key
        return (PULLING_TAG + json.dumps(head, sort_keys=True) + "\n").encode("utf-8", "surrogateescape")


def read_owner(dest: Path) -> Owner | None:
    """The owner a local copy names: its verified record, or the mark of a pull in progress."""
    try:
        data = (dest / RECORD).read_bytes()
    except OSError:
        return None
    record = Record.parse(data)
    if record is not None:
        return record.owner
    first = data.decode("utf-8", "surrogateescape").partition("\n")[0]
    if not first.startswith(PULLING_TAG):
        return None
    try:
        head = json.loads(first[len(PULLING_TAG) :])
    except ValueError:
        return None
    if not isinstance(head, dict):
        return None
    name, address, port, where = (head.get(k) for k in ("host", "address", "port", "dir"))
    if not (isinstance(name, str) and isinstance(address, str) and isinstance(port, int)):
        return None
    key = str(head.get("key") or "")
    return Owner(name, address, port, where, False, key) if isinstance(where, str) else None


def _replace_record(dest: Path, data: bytes) -> str | None:
    """Put `data` in the record's place atomically (temp file, fsync, rename); -> why it failed
    (the temp file removed), else None."""
    try:
        with atomicfile.replacing(dest / RECORD, f"{RECORD}.", 0o644, fsync=True, parents=False) as f:
            f.write(data)
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def mark_pulling(dest: Path, owner: Owner) -> str | None:
    """Replace the record by the mark of this pull before rsync runs: a rerun after an
    interrupt resumes into it, a pull of another host or dir is refused."""
    return _replace_record(dest, owner.to_bytes())


def write_record(dest: Path, record: Record) -> str | None:
    """Write the record atomically; -> why it failed, else None. On failure no record is left
    (neither a partial one nor an older one); the mark of the pull in progress stays (a rerun
    resumes into this dir)."""
    failed = _replace_record(dest, record.to_bytes())
    if failed and read_record(dest) is not None:
        with contextlib.suppress(OSError):
            (dest / RECORD).unlink()
    return failed
