"""Teardown steps: pull results back (rsync, sha256-verified), then remove what provisioning placed.

`teardown_pull` runs `rsync` on this machine over the host's own SSH settings (key, port,
our known_hosts with StrictHostKeyChecking=yes, ProxyJump through the jump chain; stopped
with us on a signal), then compares a sha256 manifest computed on the host (one remote
command: listing, name and symlink checks, `find ... -exec sha256sum`) with the local files.
When files are missing or corrupt, or a symlink points out of the results, the step fails,
so the runner skips every later step that changes the host: nothing is deleted while a copy
is incomplete (unless `force`); an unverified copy keeps no symlink pointing out of itself.
rsync receives without device nodes, fifos, sockets, owners, groups, setuid/setgid/sticky bits
or group/other write (RECEIVE_SAFELY). A verified pull leaves a record (host, dir, listing, sha256)
in the copy, written atomically; until then the record's place holds the mark of the pull (host,
dir), and a local dir holding anything else (the user's files, another host's or dir's copy) is
never pulled into: rsync would replace its files of the same names. `teardown_containers` and
`teardown_files` remove containers, the image and directories; every path is checked (never `/`, a home dir, a
system dir) both here and again on the host after resolving symlinks, and the results dir
only goes when the host's listing still equals the record's, checked in the removing command,
and the local copy still holds every recorded file; gpuonboard's own cache dir on the host
(`own_cache`) goes too.
`teardown_cost` prints what the rental cost, rounded up by the vendor's billing unit.

Pure helpers (cost, path safety, manifests, ssh/rsync command lines) are tested in
tests/unit/test_teardown.py.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import hashlib
import json
import math
import os
import posixpath
import re
import shutil
import stat
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuonboard import atomicfile, shell, transfer
from gpuonboard.connection import openssh
from gpuonboard.facts.probe import Probe
from gpuonboard.steps.base import Plan, Step, StepArgsError, StepContext, last_line, truthy
from gpuonboard.transfer import uploadlock
from gpuonboard.units import format_bytes

if TYPE_CHECKING:
    from gpuonboard.inventory import Host, Inventory

# rsync's dir for partial files in the local copy. rsync excludes this name at any depth on the
# host too, so a host entry of this name would be neither pulled nor checked: refused instead
PARTIAL_DIR = ".gpuonboard-rsync-partial"
RECORD = ".gpuonboard-verified.sha256"  # in the local copy after a verified pull
RECORD_TAG = "# gpuonboard-verified "  # the record's first line: host, dir, listing (JSON)
# while a pull runs the record's place holds only this line (host, dir): whose copy the dir is
PULLING_TAG = "# gpuonboard-pulling "
CHANGED_EXIT = 3  # the removal script's exit code when the results changed since the pull
UNIT_SECONDS = {"second": 1, "minute": 60, "hour": 3600}
SHOWN = 3  # how many paths a message names before "+N more"

# never deleted, at any depth below them
_SYSTEM_TREES = (
    *("/proc", "/sys", "/dev", "/boot", "/etc", "/bin", "/sbin", "/usr"),
    *("/lib", "/lib32", "/lib64", "/libx32", "/snap"),
)
_USER_TMPFS = "/dev/shm"  # in /dev, yet its entries are users' files (never /dev/shm itself)
# their direct children are home dirs or system state (/home/alice, /var/lib): refused too
_GUARDED_PARENTS = ("/home", "/var", "/root", "/Users")


def _probe_name(kind: str, key: str) -> str:
    # (a path that is not UTF-8 holds lone surrogates: its own bytes)
    return f"{kind}:{hashlib.sha1(key.encode('utf-8', 'surrogateescape')).hexdigest()[:10]}"


# ---------------------------------------------------------------- pure: cost


@dataclass(frozen=True)
class Cost:
    """What a rental cost: elapsed time, billed time (rounded up by unit), amount."""

    start: float
    end: float
    source: str
    unit: str
    rate: float | None
    currency: str

    @property
    def elapsed(self) -> float:
        """Seconds rented (never negative)."""
        return max(0.0, self.end - self.start)

    @property
    def billed_units(self) -> int:
        """Started billing units: a started hour (minute, second) is a paid one, the first too
        (a rental that started just now has started its first unit)."""
        return max(1, math.ceil(self.elapsed / UNIT_SECONDS[self.unit] - 1e-9))

    @property
    def billed_seconds(self) -> int:
        """Billed time in seconds."""
        return self.billed_units * UNIT_SECONDS[self.unit]

    @property
    def amount(self) -> float | None:
        """billed hours x hourly rate, or None without a rate."""
        if self.rate is None:
            return None
        return round(self.billed_seconds / 3600 * self.rate, 2)

    def text(self) -> str:
        """One sentence for the step message."""
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.start))
        head = (
            f"rented {_duration(self.elapsed)} since {since} ({self.source}); billed per {self.unit}:"
            f" {self.billed_units} {self.unit}{'' if self.billed_units == 1 else 's'}"
        )
        if self.amount is None:
            return head + "; no billing rate in the vendor profile, so no amount"
        return f"{head} x {self.rate:g} {self.currency}/hour = {self.amount:.2f} {self.currency}".rstrip()

    def to_json(self) -> dict[str, Any]:
        """For the step's diff (summary.json)."""
        return {
            "since": self.start,
            "until": self.end,
            "source": self.source,
            "elapsed_s": round(self.elapsed, 1),
            "unit": self.unit,
            "billed_units": self.billed_units,
            "billed_s": self.billed_seconds,
            "rate_per_hour": self.rate,
            "currency": self.currency,
            "amount": self.amount,
        }


def _duration(seconds: float) -> str:
    s = int(seconds)
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    return (f"{d}d" if d else "") + f"{h}h{m:02d}m{s:02d}s"


def rental_cost(
    start: float, end: float, unit: str, rate: float | None, currency: str = "", source: str = ""
) -> Cost:
    """The rental's cost from start to end, rounded UP by the billing unit, times the hourly rate."""
    if unit not in UNIT_SECONDS:
        raise ValueError(f"billing unit must be one of {', '.join(UNIT_SECONDS)}, not {unit!r}")
    return Cost(start, end, source, unit, rate, currency)


def parse_since(value: Any) -> float | None:
    """`vars.rented_since`: epoch seconds or ISO 8601 (`2026-11-29T17:35:00+08:00`); None when unset."""
    if value is None or value == "":
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _in_range(float(value), value)
    if isinstance(value, datetime):
        return _in_range(value.timestamp(), value)
    text = str(value).strip()
    try:
        return _in_range(float(text), value)
    except ValueError as exc:
        if "between" in str(exc):
            raise
    try:
        return _in_range(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp(), value)
    except (ValueError, OverflowError) as exc:
        if "between" in str(exc):
            raise
        raise ValueError(f"{value!r} is not epoch seconds or an ISO 8601 time") from None


SINCE_RANGE = (946684800.0, 4102444800.0)  # 2000-01-01 .. 2100-01-01 UTC


def _in_range(epoch: float, value: Any) -> float:
    """epoch when it is a time a rental can have started at, else ValueError."""
    if not (math.isfinite(epoch) and SINCE_RANGE[0] <= epoch < SINCE_RANGE[1]):
        raise ValueError(f"{value!r} is not a time between the years 2000 and 2100")
    return epoch


def _utc(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def run_id_time(run_id: str) -> float | None:
    """The local time a run id (`20261129-173501-3fa2`) starts with, or None."""
    try:
        return time.mktime(time.strptime(run_id[:15], "%Y%m%d-%H%M%S"))
    except (ValueError, OverflowError):
        return None


def journal_start(state_dir: Path, host: str) -> tuple[float, str] | None:
    """The earliest run recorded for `host` in its provision journal (else any of its journals
    but teardown's): (epoch, where it came from)."""
    found: list[tuple[int, float, str]] = []
    try:
        files = sorted(state_dir.glob("*.json"))
    except OSError:
        return None
    for path in files:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict) or data.get("host") != host or data.get("playbook") == "teardown":
            continue
        ids = [str(data.get("first_run_id") or ""), str(data.get("run_id") or "")]
        ids += [str(r.get("run_id") or "") for r in (data.get("steps") or {}).values() if isinstance(r, dict)]
        times = [t for t in (run_id_time(i) for i in ids if i) if t is not None]
        if times:
            rank = 0 if data.get("playbook") == "provision" else 1
            found.append((rank, min(times), f"the {data.get('playbook')} journal"))
    if not found:
        return None
    best_rank = min(f[0] for f in found)
    t, src = min((f[1], f[2]) for f in found if f[0] == best_rank)
    return t, src


# ---------------------------------------------------------------- pure: path safety


def _holds(path: str, inner: str) -> bool:
    """Pure: `path` is `inner` or a directory above it (both absolute, normalised)."""
    top = path.rstrip("/")
    return inner == path or inner.startswith(top + "/")


def path_problem(path: str, home: str | None = None) -> str | None:
    """Why deleting `path` on a host is refused, or None when it is safe to delete."""
    if not path or not path.strip():
        return "an empty path"
    if any(c in path for c in "\n\r\0"):
        return "a path with a line break"
    if not posixpath.isabs(path):
        return "not an absolute path"
    if ".." in path.split("/"):
        return "a path with '..'"
    norm = posixpath.normpath(path)
    if norm.startswith("//"):
        norm = "/" + norm.lstrip("/")
    if norm == "/":
        return "the root directory"
    for tree in _SYSTEM_TREES:
        # (/dev/shm's entries are users' files, e.g. `sync --decrypt-to /dev/shm`'s plaintext)
        if _holds(tree, norm) and not norm.startswith(_USER_TMPFS + "/"):
            return "a system directory"
    parts = norm.strip("/").split("/")
    if len(parts) == 1:
        return "a top-level directory"
    if len(parts) == 2 and "/" + parts[0] in _GUARDED_PARENTS:
        return "a home directory" if parts[0] in ("home", "Users") else "a system directory"
    if home and home.startswith("/"):
        h = posixpath.normpath(home)
        if norm == h:
            return "the login user's home directory"
        if _holds(norm, h):
            return "a directory holding the login user's home directory"
    return None


# ---------------------------------------------------------------- pure: manifests


def _unescape(name: str) -> str:
    out, i = [], 0
    while i < len(name):
        c = name[i]
        if c == "\\" and i + 1 < len(name):
            nxt = name[i + 1]
            out.append({"n": "\n", "r": "\r", "\\": "\\"}.get(nxt, nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def parse_manifest(text: str) -> dict[str, str]:
    """`sha256sum` output (run in the results dir on `./path`s) -> {relative path: sha256}.

    sha256sum escapes a name holding a backslash or newline and marks the line with a
    leading backslash. Every file counts: the host never holds our partial dir (refused).
    """
    out: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        escaped = line.startswith("\\")
        if escaped:
            line = line[1:]
        digest, sep, name = line.partition("  ")
        if not sep or len(digest) != 64:
            name_parts = line.split(" ", 1)
            if len(name_parts) != 2 or len(name_parts[0]) != 64:
                continue
            digest, name = name_parts[0], name_parts[1].lstrip("*")
        if escaped:
            name = _unescape(name)
        name = name[2:] if name.startswith("./") else name
        out[name] = digest.lower()
    return out


def sha256_file(path: Path) -> str:
    """sha256 of a local file, streamed."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def local_manifest(dest: Path, names: Iterable[str]) -> dict[str, str | None]:
    """sha256 of each named file under dest (None when it is missing or not a file)."""
    out: dict[str, str | None] = {}
    for name in names:
        p = dest / name
        try:
            out[name] = sha256_file(p) if p.is_file() and not p.is_symlink() else None
        except OSError:
            out[name] = None
    return out


def compare_manifests(
    remote: Mapping[str, str], local: Mapping[str, str | None]
) -> tuple[list[str], list[str]]:
    """(missing, corrupt): remote files absent locally, and those whose sha256 differs."""
    missing = sorted(n for n in remote if local.get(n) is None)
    corrupt = sorted(n for n, d in remote.items() if local.get(n) is not None and local[n] != d)
    return missing, corrupt


def _names(paths: Sequence[str], limit: int = SHOWN) -> str:
    shown = ", ".join(paths[:limit])
    return shown + (f" (+{len(paths) - limit} more)" if len(paths) > limit else "")


def describe_problems(missing: Sequence[str], corrupt: Sequence[str], total: int) -> str:
    """`2 of 5 files not verified: missing 1 (a.txt); corrupt 1 (b.bin)` (first paths + count)."""
    parts = []
    if missing:
        parts.append(f"missing {len(missing)} ({_names(missing)})")
    if corrupt:
        parts.append(f"corrupt {len(corrupt)} ({_names(corrupt)})")
    return f"{len(missing) + len(corrupt)} of {total} files not verified: " + "; ".join(parts)


# ---------------------------------------------------------------- pure: host listings and checks

# `%y %s %T@ %p` of each file and symlink: what the removal compares with the verified pull
LISTING_FORMAT = "%y %s %T@ %p"


# sh: each upload `sync` recorded on the host (uploadlock.UPLOADS_RECORD), one a line, with its
# stores: what teardown_files removes of them (it reads the same record)
_RECORDED_REMOVED = (
    f'r="{uploadlock.UPLOADS_RECORD}"; if [ -f "$r" ]; then tr \'\\0\' \'\\n\' < "$r" |'
    " while IFS= read -r x; do case $x in /?*) printf '%s\\n%s.shards\\n%s.encrypted\\n'"
    ' "$x" "$x" "$x" ;; esac; done; fi'
)


def _names_checks_script(removed: Sequence[str] | None, recorded: bool = False) -> str:
    """sh, run in the results dir with $root its physical path: one NUL-terminated record per
    entry bearing a name teardown keeps for itself (`reserved ./x`), and per symlink whose target
    is missing (`dangling ./x`, then `to TARGET` as the link says it), resolves into one of the
    `removed` dirs (resolved on the host: `doomed ./x`, `to TARGET`) or elsewhere outside $root
    (`outside ./x`, `to TARGET`); with `recorded`, the uploads `sync` recorded on the host (and
    their stores) count as removed dirs too. With `removed` None (not known) every target outside
    $root counts as doomed, and a `strict` record says so. Each device node, fifo or socket: `special
    TYPE ./x` (find's %y letter: b, c, p, s); the pull never copies them."""
    judge = (
        'r=$1; g=$2; shift 2; for l; do t=$(realpath -e -- "$l" 2>/dev/null) ||'
        ' { printf "dangling %s\\0to %s\\0" "$l" "$(readlink -- "$l")"; continue; };'
        ' case $t in "$r"|"$r"/*) continue ;; esac;'
        # under a dir teardown removes (or that dir itself)? `g` holds them, one a line
        ' if [ "$g" = "*" ] || printf "%s\\n" "$g" | { while IFS= read -r d; do [ -n "$d" ] || continue;'
        ' case $t in "$d"|"$d"/*) exit 0 ;; esac; done; exit 1; }; then k=doomed; else k=outside; fi;'
        ' printf "%s %s\\0to %s\\0" "$k" "$l" "$t"; done; exit 0'
    )
    if removed is None:
        gone = "g='*' && printf 'strict\\0'"
    else:
        each = " ".join(shell.quote(d) for d in removed if d)
        listed = [f'for d in {each}; do realpath -m -- "$d"; done'] if each else []
        listed += [_RECORDED_REMOVED] if recorded else []
        gone = f"g=$({'; '.join(listed)})" if listed else "g="
    return (
        f"find . \\( -name {shell.quote(PARTIAL_DIR)} -o -path {shell.quote('./' + RECORD + '*')} \\)"
        f" -printf 'reserved %p\\0' && "
        "find . \\( -type b -o -type c -o -type p -o -type s \\) -printf 'special %y %p\\0' && "
        f"{gone} && "
        f'find . -type l -exec sh -c {shell.quote(judge)} sh "$root" "$g" {{}} +'
    )


def records(text: str) -> list[tuple[str, str]]:
    """NUL-terminated `kind rest` records -> [(kind, rest)] (a name may hold any byte but NUL)."""
    out = []
    for token in text.split("\0"):
        if token:
            kind, _, rest = token.partition(" ")
            out.append((kind, rest))
    return out


def _rel(path: str) -> str:
    return path[2:] if path.startswith("./") else path


@dataclass(frozen=True)
class TreeChecks:
    """What the host's results hold that a verified copy cannot stand for.

    `bad_links`: symlinks whose target teardown deletes (in a dir it removes; any target outside
    the results when those dirs are not known: `strict`), as (path, target). `kept_links`:
    symlinks to a missing target or to one outside every removed dir: copied as links, their
    targets stay where they are. `specials`: device nodes, fifos and sockets as (path, find's
    %y letter): never pulled (rsync --no-devices --no-specials), said in the step's message."""

    reserved: tuple[str, ...] = ()
    bad_links: tuple[tuple[str, str], ...] = ()
    kept_links: tuple[tuple[str, str], ...] = ()
    strict: bool = False
    specials: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, recs: Iterable[tuple[str, str]]) -> TreeChecks:
        """From `reserved` / `dangling` / `outside` / `doomed` records (each link's `to TARGET` after
        it); a `strict` record: the removed dirs were not known, every link out of the results is bad."""
        recs = list(recs)
        strict = ("strict", "") in recs
        reserved: list[str] = []
        specials: list[tuple[str, str]] = []
        links: list[tuple[str, str, str]] = []
        for kind, rest in recs:
            if kind == "reserved":
                reserved.append(_rel(rest))
            elif kind == "special":
                letter, _, path = rest.partition(" ")
                specials.append((_rel(path), letter))
            elif kind in ("dangling", "outside", "doomed"):
                links.append((kind, _rel(rest), ""))
            elif kind == "to" and links and not links[-1][2]:
                links[-1] = (*links[-1][:2], rest)
        bad = sorted((p, t) for k, p, t in links if k == "doomed" or (strict and k != "doomed"))
        kept = sorted((p, t) for k, p, t in links if k != "doomed" and not strict)
        return cls(tuple(sorted(reserved)), tuple(bad), tuple(kept), strict, tuple(sorted(specials)))

    def problem(self, src: str, results: str) -> tuple[str, str] | None:
        """(what is wrong, what to do) or None."""
        if self.reserved:
            return (
                f"{src} holds {self.reserved[0]}, a name teardown keeps for its own files (rsync's"
                " partial files, the verification record), so it would not be pulled",
                "rename it on the host, then rerun",
            )
        if self.bad_links:
            n, (first, target) = len(self.bad_links), self.bad_links[0]
            where = "is outside it or missing" if self.strict else "lies in a directory teardown deletes"
            return (
                f"{src} holds {n} symlink{'' if n == 1 else 's'} whose target {where}"
                f" (first: {first} -> {target}), so the copy would not hold that data",
                f"copy the targets into {results} (or delete the links) on the host, then rerun",
            )
        return None

    def kept_note(self) -> str:
        """'; 2 symlinks are copied as links ...' for the links whose targets stay, or ''."""
        if not self.kept_links:
            return ""
        n, (first, target) = len(self.kept_links), self.kept_links[0]
        s = "" if n == 1 else "s"
        return (
            f"; {n} symlink{s} copied as link{s}, not their targets (missing, or outside every directory"
            f" teardown removes, so they stay; first: {first} -> {target})"
        )

    def specials_note(self) -> str:
        """'; not pulled: 1 device node (first: ...) ...' for the special files, or ''.

        A device node, fifo or socket holds no data a copy could keep, and on this machine a
        device node (a raw disk, /dev/mem) is a hazard: never pulled; a device node in results
        is suspicious (no training job writes one), so it is named as such."""
        if not self.specials:
            return ""
        kinds = {"b": "a block device", "c": "a character device", "p": "a fifo", "s": "a socket"}
        devices = [(p, k) for p, k in self.specials if k in ("b", "c")]
        others = [(p, k) for p, k in self.specials if k not in ("b", "c")]
        parts = []
        if devices:
            n, (first, kind) = len(devices), devices[0]
            parts.append(f"{n} device node{'' if n == 1 else 's'} (first: {first}, {kinds.get(kind, kind)})")
        if others:
            n, (first, kind) = len(others), others[0]
            parts.append(
                f"{n} fifo{'' if n == 1 else 's'} or socket{'' if n == 1 else 's'}"
                f" (first: {first}, {kinds.get(kind, kind)})"
            )
        note = f"; not pulled: {' and '.join(parts)}, which hold no data to copy"
        if devices:
            note += " (a device node in results is suspicious: check what on the host made it)"
        return note


def parse_pull_output(text: str) -> tuple[list[str], TreeChecks, dict[str, str]]:
    """The manifest command's output -> (listing of files and symlinks, checks, sha256 manifest)."""
    head, sep, sums = text.partition("\0sums\0")
    if not sep:
        head, sums = (text[:-5], "") if text.endswith("sums\0") else (text, "")
    recs = records(head)
    listing = [rest for kind, rest in recs if kind == "e" and rest[:2] in ("f ", "l ")]
    return listing, TreeChecks.of(recs), parse_manifest(sums)


def listing_digest(entries: Iterable[str]) -> str:
    """sha256 of the entries as the host's `find -printf 'FMT\\0' | LC_ALL=C sort -z` prints them."""
    raw = sorted(e.encode("utf-8", "surrogateescape") for e in entries)
    return hashlib.sha256(b"".join(r + b"\0" for r in raw)).hexdigest()


def listing_changes(before: Iterable[str], after: Iterable[str]) -> list[str]:
    """Paths (relative) of files/symlinks new or changed (size, mtime, kind) since `before`,
    then those gone; each listing entry is `%y %s %T@ %p`."""

    def table(entries: Iterable[str]) -> dict[str, str]:
        out = {}
        for e in entries:
            parts = e.split(" ", 3)
            if len(parts) == 4:
                out[_rel(parts[3])] = " ".join(parts[:3])
        return out

    old, new = table(before), table(after)
    changed = sorted(p for p, v in new.items() if old.get(p) != v)
    return changed + sorted(p for p in old if p not in new)


# ---------------------------------------------------------------- pure: the verification record


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


def foreign_dest(dest: Path, host: Host, results: str, key: str = "") -> str | None:
    """What in `dest` no pull of host:results put there (rsync would overwrite a local file of
    the same name as a host file), or None: dest is missing or empty, or its record (or mark of
    a pull in progress) is of this host's address and port and this results dir."""
    owner = read_owner(dest)
    if owner is not None and owner.of(host, results, key):
        return None
    try:
        entries = sorted(p.name for p in dest.iterdir() if p.name != PARTIAL_DIR)
    except OSError:  # missing, or not a dir this machine can list: the pull says why it cannot write
        return None
    if not entries:
        return None
    if owner is not None:
        what = "the verified copy" if owner.verified else "an unfinished pull"
        return f"{what} of {owner.dir} from {owner.host} ({owner.address}:{owner.port})"
    n = len(entries)
    return f"{n} entr{'y' if n == 1 else 'ies'} no pull of {results} from it put there (first: {entries[0]})"


def exposed_dest(dest: Path) -> str | None:
    """Why another local user could change what a pull writes into `dest` (it is theirs, or
    anyone may write it), or None: missing, or this user's (root's) and not world-writable."""
    try:
        st = dest.stat()
    except OSError:
        return None
    if st.st_uid not in (os.getuid(), 0):
        return f"belongs to another user (uid {st.st_uid})"
    if st.st_mode & 0o002:
        return f"is writable by every user (mode {st.st_mode & 0o7777:o})"
    return None


def copy_unverified(dest: Path, record: Record) -> tuple[list[str], list[str]]:
    """(missing, corrupt): the files the record lists that are no longer in dest, and those whose
    sha256 now differs from the one the verified pull recorded. By content, not by size and
    mtime: a copy corrupted after its pull (size and mtime kept, or zeroed) is no copy."""
    return compare_manifests(record.sums, local_manifest(dest, record.sums))


def held_bytes(dest: Path) -> int:
    """Bytes of the regular files under dest (rsync's partial files too; no link followed):
    what an interrupted pull into it already brought."""
    total = 0
    for top, _, files in os.walk(dest):
        for name in files:
            try:
                st = os.lstat(os.path.join(top, name))
            except OSError:
                continue
            total += st.st_size if stat.S_ISREG(st.st_mode) else 0
    return total


def free_bytes(dest: Path) -> int | None:
    """Bytes this user may still write on the file system that holds (or will hold) dest;
    None when no dir on its path can be asked."""
    for part in (dest, *dest.parents):
        try:
            return shutil.disk_usage(part).free
        except OSError:
            continue
    return None


def room_problem(size: int, held: int, free: int | None) -> int | None:
    """Pure: the bytes the pull still needs when they surely exceed what is free (a lower
    bound: file system blocks and rsync's temp files need more), else None."""
    need = max(0, size - held)
    return need if free is not None and need > free else None


def mark_stale(dest: Path, names: Sequence[str], listing: Sequence[str]) -> None:
    """Give each local file whose sha256 differs from the host's an mtime one second off the
    host's one: rsync's quick check (size and mtime in whole seconds) skipped it, and a rerun,
    skipping it again, could never mend the copy (a corrupted copy, or a file the host rewrote
    at its size within the second it was pulled). Its content stays: the rerun's rsync sends
    only what differs from it."""
    mtimes = {}
    for entry in listing:
        kind, _, mtime, path = (entry.split(" ", 3) + ["", "", ""])[:4]
        if kind == "f":
            mtimes[_rel(path)] = mtime
    root = dest.resolve()
    for name in names:
        with contextlib.suppress(OSError, ValueError):
            host = int(float(mtimes.get(name) or "0"))
            p = dest / name
            # (names come from the host's manifest: `../x` or `/etc/x` there never reaches a file
            # of this machine outside the copy; nor does a path through a symlink in it)
            if (
                name.startswith("/")
                or ".." in Path(name).parts
                or not p.parent.resolve().is_relative_to(root)
            ):
                continue
            st = p.lstat()
            if stat.S_ISREG(st.st_mode):
                os.utime(p, ns=(st.st_atime_ns, (host - 1 if host > 0 else host + 1) * 10**9))


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


# ---------------------------------------------------------------- pure: ssh / rsync command lines


# What the receiving rsync (on this machine) must not take from the host as it is: `-a` keeps
# device nodes, fifos and sockets (as root: a raw-disk node a compromised host chose), owners
# and groups (as root: a file owned by anyone), and setuid/setgid/sticky bits and group/other
# write (a setuid-root binary in the results). Contents, mtimes and the owner's bits stay.
RECEIVE_SAFELY = (
    "--no-devices",
    "--no-specials",
    "--no-owner",
    "--no-group",
    "--chmod=ugo-st,go-w",
)


def rsync_argv(alias: str, config: Path, remote_dir: str, dest: Path) -> list[str]:
    """rsync resumable pull of remote_dir's contents into dest (argv, run without a shell),
    through `ssh -F config` (see gpuonboard.connection.openssh: same key, port, jumps, strict host keys),
    receiving data, not privileges (RECEIVE_SAFELY)."""
    return [
        "rsync",
        "-a",
        "--protect-args",  # the remote path travels inside the protocol, never through a shell
        "--partial",
        f"--partial-dir={PARTIAL_DIR}",
        *RECEIVE_SAFELY,
        # the host's sender gives a silent link up by itself, as the upload's receiver does (a
        # link dropped without FIN/RST left it running for hours); passed on to the host's rsync
        f"--timeout={transfer.RSYNC_TIMEOUT_S}",
        "-e",
        shell.join(["ssh", "-F", str(config)]),
        # the source reaches the host as `./` in the dir its shell entered (quoted): with
        # --protect-args the host's rsync expands wildcards, so `[x]` or `*` in it named others
        "--rsync-path=" + shell.join(["cd", "--", remote_dir.rstrip("/") or "/"]) + " && rsync",
        f"{alias}:./",
        f"{dest}/",
    ]


def links_out_of(dest: Path) -> list[tuple[str, str]]:
    """Symlinks under dest whose target, resolved on this machine, lies outside dest:
    (relative path, link text), sorted. No link is followed while walking."""
    root = os.path.realpath(dest)
    out = []
    for top, dirs, files in os.walk(dest, followlinks=False):
        for name in (*dirs, *files):
            path = os.path.join(top, name)
            if not os.path.islink(path):
                continue
            resolved = os.path.realpath(path)
            if resolved != root and not resolved.startswith(root.rstrip(os.sep) + os.sep):
                try:
                    out.append((os.path.relpath(path, dest), os.readlink(path)))
                except OSError:
                    continue
    return sorted(out)


def drop_links_out(dest: Path) -> str:
    """Remove the symlinks under dest that point out of it (an unverified copy keeps none of
    them: followed later, they would read or write this machine's files); -> a note for the
    step's message ('' when there were none)."""
    gone = []
    for rel, target in links_out_of(dest):
        with contextlib.suppress(OSError):
            (dest / rel).unlink()
            gone.append((rel, target))
    if not gone:
        return ""
    n, (first, target) = len(gone), gone[0]
    links, were = ("symlink", "was") if n == 1 else ("symlinks", "were")
    return (
        f"; the {n} pulled {links} pointing out of {dest} {were} removed from it (first: {first} -> {target})"
    )


def manifest_command(remote_dir: str, removed: Sequence[str] | None = None, recorded: bool = False) -> str:
    """One remote command, in remote_dir: the listing of every entry (`e %y %s %T@ %p`, taken
    BEFORE hashing, so a file written meanwhile differs from the record), the name and symlink
    checks, then `sums` and the sha256 of every file as `./relative/path`."""
    return shell.sh_c(
        f"export LC_ALL=C; cd -- {shell.quote(remote_dir)} && root=$(pwd -P) && "
        f"find . -printf 'e {LISTING_FORMAT}\\0' && {_names_checks_script(removed, recorded)} && "
        "printf 'sums\\0' && find . -type f -exec sha256sum -- {} +"
    )


def pull_probe_command(remote_dir: str, removed: Sequence[str] | None = None, recorded: bool = False) -> str:
    """The pull step's probe: NUL-terminated records `home`, `rsync`/`no-rsync`, then for the
    results dir `missing`, `notdir KIND`, or `real PATH`, `files N BYTES` and the checks."""
    return (
        "printf 'home %s\\0' \"$HOME\"; "
        "if command -v rsync >/dev/null 2>&1; then printf 'rsync\\0'; else printf 'no-rsync\\0'; fi; "
        f"d={shell.quote(remote_dir or '/')}; "
        'if [ -d "$d" ]; then if ! cd -- "$d" 2>/dev/null; then'
        " printf 'notdir a directory this login cannot enter\\0'; exit 0; fi; "
        "root=$(pwd -P) && printf 'real %s\\0' \"$root\" && "
        "{ find . -type f -printf '%s\\n' | awk '{n++; b+=$1} END {printf \"files %d %.0f\", n, b}';"
        " printf '\\0'; } && "
        f"{_names_checks_script(removed, recorded)}; "
        'elif [ -L "$d" ] && ! [ -e "$d" ]; then printf \'notdir a symlink to nothing\\0\'; '
        "elif [ -f \"$d\" ]; then printf 'notdir a file, not a directory\\0'; "
        "elif [ -e \"$d\" ]; then printf 'notdir not a directory\\0'; else printf 'missing\\0'; fi"
    )


# ---------------------------------------------------------------- steps


def _check_dir_arg(value: Any, name: str) -> str:
    text = str(value or "").strip()
    if text and not posixpath.isabs(text):
        raise StepArgsError(f"argument {name!r} must be an absolute path on the host, not {text!r}")
    return posixpath.normpath(text) if text else ""


def copy_dir(raw: Any, ctx: StepContext) -> Path:
    """The local copy's directory: `raw` (else vars.results_dest, else results/<host> under the
    project); `{host}` in it is replaced."""
    return copy_path(
        str(raw or "") or str(ctx.host.vars.get("results_dest") or ""), ctx.host.name, ctx.project
    )


def copy_path(text: str, host: str, project: Path) -> Path:
    """Pure: the local copy's directory for a dest `text` ('': results/<host>) of `host`, `{host}`
    in it replaced, relative to the project."""
    path = Path(os.path.expanduser((text or str(Path("results") / "{host}")).replace("{host}", host)))
    return path if path.is_absolute() else project / path


@dataclass
class PullOutcome:
    """What rsync and the manifest comparison found."""

    rsync_code: int
    rsync_error: str
    remote: dict[str, str]
    missing: list[str]
    corrupt: list[str]
    manifest_error: str = ""
    listing: list[str] = field(default_factory=list)
    checks: TreeChecks = field(default_factory=TreeChecks)
    local_error: str = ""
    mark_error: str = ""  # the mark of this pull could not be written (disk full): nothing pulled
    config_error: str = ""  # rsync's OpenSSH config could not be written: nothing made or pulled
    no_room: str = ""  # why rsync could not write here: the disk (or the user's quota) filled up


# what rsync's receiver says when this machine's disk (or the user's quota) is full
_NO_ROOM = ("No space left on device", "Disk quota exceeded")


class TeardownPullStep(Step):
    """Pull the results dir back with rsync and verify every file against a host-side sha256."""

    name = "teardown_pull"
    read_only = False
    ARGS = {
        "results": "remote results/checkpoint directory to pull ('' = nothing to pull)",
        "dest": "local directory (default results/<host> under the project; '{host}' is replaced)",
        "force": "continue (delete later) even when the pull is incomplete or unverified",
        "known_hosts": "known_hosts file rsync's ssh uses (default .gpuonboard/known_hosts)",
        "inventory": "inventory path, to resolve jump hosts given by name",
        "removed": "the other dirs teardown removes (teardown_files' paths): a symlink in the results"
        " into one of them is refused, one to anywhere else is copied as a link (unset: any symlink"
        " out of the results is refused)",
        "recorded_uploads": "with `removed`: the uploads `sync` recorded on the host (removed by"
        " teardown_files' recorded_uploads) count as removed dirs too",
    }

    def __init__(self, args: Mapping[str, Any], label: str | None = None) -> None:
        super().__init__(args, label)
        self.results = _check_dir_arg(self.args.get("results"), "results")
        self.force = truthy(self.args.get("force", False), "force")
        raw = self.args.get("removed")
        if isinstance(raw, str):
            raw = [raw]
        if raw is not None and not isinstance(raw, list):
            raise StepArgsError("argument 'removed' must be a list of paths")
        self.removed: list[str] | None = None
        if raw is not None:
            texts = (str(p).strip() for p in raw)
            self.removed = [t for t in texts if t and t.lower() not in ("none", "null")]
        self.recorded = truthy(self.args.get("recorded_uploads", False), "recorded_uploads")
        command = pull_probe_command(self.results, self.removed, self.recorded)
        self.probe = Probe(_probe_name("teardown_pull", command), command)

    def probes(self) -> list[Probe]:
        """$HOME, rsync, and the results dir: where it resolves, its files, names and symlinks."""
        return [self.probe] if self.results else []

    def dest(self, ctx: StepContext) -> Path:
        """The local copy's directory."""
        return copy_dir(self.args.get("dest"), ctx)

    def _refuse(self, ctx: StepContext, what: str, fix: str) -> Plan:
        if self.force:
            return Plan(False, f"{what}; nothing pulled, continuing (--force)")
        return Plan(
            False,
            f"refusing to delete anything on {ctx.host.name}: {what}; {fix}, or pass --force to wipe anyway",
            failed=True,
        )

    def plan(self, ctx: StepContext) -> Plan:
        """Nothing to pull; an unsafe, missing or odd results dir (fail unless force); or pull N files."""
        if not self.results:
            return Plan(False, "no results dir given (--results or vars.results_dir); nothing to pull")
        recs = records(ctx.facts.raw[self.probe.name].stdout)
        found = dict(recs)
        src = f"{ctx.host.name}:{self.results}"
        home = found.get("home")
        real = found.get("real", "")
        why = path_problem(self.results, home)
        why = f"it is {why}" if why else None
        if not why and real and real != self.results:
            why = path_problem(real, home)
            why = f"it resolves to {real}, {why}" if why else None
        if why:  # never pulled (nor deleted), --force or not
            return Plan(
                False,
                f"refusing to pull and delete {src}: {why}; give --results (or vars.results_dir) the"
                " directory your job writes its results into",
                failed=True,
            )
        dest = self.dest(ctx)
        if "notdir" in found:
            return self._refuse(
                ctx,
                f"{src} is {found['notdir']}",
                "give --results (or vars.results_dir) the directory your job writes its results into",
            )
        if "real" not in found:
            record = read_record(dest)
            if record is not None and record.of(
                ctx.host, self.results, host_key(ctx)
            ):  # a rerun after the removal
                n = len(record.sums)
                return Plan(False, f"{src} is gone; its verified copy ({n} files) is in {dest}")
            other = ""
            if record is not None and (record.address, record.port) == (ctx.host.address, ctx.host.port):
                other = f" ({dest} holds the verified copy of {record.dir}, not of it)"
            return self._refuse(
                ctx,
                f"results dir {src} not found on the host{other}",
                "check the path (--results or vars.results_dir)",
            )
        checks = TreeChecks.of(recs)
        problem = checks.problem(src, self.results)
        if problem and not self.force:
            return self._refuse(ctx, *problem)
        exposed = exposed_dest(dest)
        if exposed:  # another user could swap what the pull writes into (or read it)
            return self._refuse(
                ctx, f"{dest} {exposed}", "give --dest a directory only you can write (a new one is made)"
            )
        held = foreign_dest(dest, ctx.host, self.results, host_key(ctx))
        if held:  # the user's files (another run's copy): rsync would replace those of the same names
            return self._refuse(
                ctx,
                f"{dest} already holds {held}, which the pull could overwrite",
                "give --dest an empty or new directory (or move what it holds away), then rerun",
            )
        # --force goes on, but what will be lost is said (in --check too)
        forced = f"; {problem[0]}: wiping anyway (--force)" if problem else ""
        counts = found.get("files", "").split()
        whole = len(counts) == 2 and counts[0].isdecimal()
        count, size = (int(counts[0]), int(counts[1])) if whole else (0, 0)
        free = free_bytes(dest)
        need = room_problem(size, held_bytes(dest), free)
        if need is not None:  # rsync would fill this machine's disk, then fail: paid hours for nothing
            still = f", {format_bytes(need, binary=False)} of it not yet in {dest}," if need < size else ""
            return self._refuse(
                ctx,
                f"{src} holds {format_bytes(size, binary=False)} ({count} files){still} but the disk of"
                f" {dest} on this machine has only {format_bytes(free, binary=False)} free",
                "make room there (or give --dest a directory on a disk with room), then rerun",
            )
        if "no-rsync" in found and not self.force:
            return Plan(
                False,
                f"host {ctx.host.name} has no rsync, so {src} cannot be pulled; install rsync there"
                " (refusing to delete anything; --force wipes anyway)",
                failed=True,
            )
        return Plan(
            True,
            f"pull {count} files ({format_bytes(size, binary=False)}) from {src} to {dest} and verify"
            f" them (sha256){checks.kept_note()}{checks.specials_note()}{forced}",
            diff={"results": self.results, "dest": str(dest), "files": count, "bytes": size},
        )

    def _inventory(self, ctx: StepContext) -> Inventory | None:
        if ctx.inventory is not None or not self.args.get("inventory"):
            return ctx.inventory
        from gpuonboard import inventory as inventory_mod

        return inventory_mod.load(Path(str(self.args["inventory"])))

    def apply(self, ctx: StepContext, plan: Plan) -> Any:
        """rsync into dest (resumable), then compare the host's sha256 manifest with local files."""
        dest = self.dest(ctx)
        # rsync's OpenSSH config first: when it cannot be written, nothing is made, marked or pulled
        default_known = ctx.known_hosts or ctx.project / ".gpuonboard" / "known_hosts"
        known = Path(str(self.args.get("known_hosts") or default_known))
        config = openssh.write_for(ctx.host, self._inventory(ctx), known, ctx.project)
        if isinstance(config, str):
            return PullOutcome(0, "", {}, [], [], config_error=config)
        try:
            dest.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            return PullOutcome(0, "", {}, [], [], local_error=f"{dest}: {exc.strerror or exc}")
        # the record is rewritten once this pull is verified; until then its place says whose
        # pull this dir holds (a rerun resumes it, another host's or dir's pull is refused)
        h = ctx.host
        failed = mark_pulling(dest, Owner(h.name, h.address, h.port, self.results, False, host_key(ctx)))
        if failed:
            return PullOutcome(0, "", {}, [], [], mark_error=failed)
        argv = rsync_argv(config[1], config[0], self.results, dest)
        try:
            # run so that a signal (or our death) stops rsync and its forked receiver too
            run = transfer.run_rsync(argv)
            code, err = run.exit_code, last_line(run.stderr, run.exit_code) if run.exit_code else ""
            no_room = next((w for w in _NO_ROOM if code and w in run.stderr), "")
        except FileNotFoundError:
            code, err, no_room = 127, "rsync is not installed on this machine", ""
        result = ctx.runner.run(manifest_command(self.results, self.removed, self.recorded))
        if not result.ok:
            return PullOutcome(code, err, {}, [], [], last_line(result.stderr, result.exit_code))
        listing, checks, remote = parse_pull_output(result.stdout)
        missing, corrupt = compare_manifests(remote, local_manifest(dest, remote))
        return PullOutcome(
            code, err, remote, missing, corrupt, listing=listing, checks=checks, no_room=no_room
        )

    def verify(self, ctx: StepContext, plan: Plan, applied: Any) -> str | None:
        """Refuse (fail, so nothing is deleted) unless every remote file is here with its sha256,
        no symlink points out of the results, and the record of it is written."""
        out: PullOutcome = applied
        dest = self.dest(ctx)
        src = f"{ctx.host.name}:{self.results}"
        if out.config_error:
            return f"refusing to delete anything on {ctx.host.name}: nothing pulled: {out.config_error}"
        if out.local_error:
            return (
                f"refusing to delete anything on {ctx.host.name}: cannot create the local copy's directory"
                f" ({out.local_error}); give --dest a directory on this machine you can write to"
            )
        if out.mark_error:
            return (
                f"refusing to delete anything on {ctx.host.name}: nothing pulled: could not write"
                f" {dest / RECORD} ({out.mark_error}); make room on this machine (or give another"
                " --dest), then rerun"
            )
        plan.diff = {**(plan.diff or {}), "verified": len(out.remote) - len(out.missing) - len(out.corrupt)}
        plan.diff.update(missing=out.missing, corrupt=out.corrupt, rsync_exit=out.rsync_code)
        rsync_note = f" (rsync exit {out.rsync_code}: {out.rsync_error})" if out.rsync_code else ""
        fix = "rerun teardown to resume the pull"
        incomplete = f"the pull of {src} to {dest} is incomplete: "
        if out.manifest_error:
            detail = f"could not compute the sha256 manifest on the host ({out.manifest_error})"
        elif found := out.checks.problem(src, self.results):
            (detail, fix), incomplete = found, ""
        elif out.missing or out.corrupt:
            detail = describe_problems(out.missing, out.corrupt, len(out.remote))
            if out.no_room:  # a rerun alone fills the disk again
                rsync_note = f" (rsync: {out.no_room} on this machine)"
                fix = f"make room on the disk of {dest} (or give another --dest), then rerun"
        else:
            h = ctx.host
            record = Record(
                h.name, h.address, h.port, self.results, tuple(out.listing), out.remote, host_key(ctx)
            )
            failed = write_record(dest, record)
            if failed is None:
                plan.msg = (
                    f"pulled {src} to {dest}: {len(out.remote)} files verified (sha256){rsync_note}"
                    f"{out.checks.kept_note()}{out.checks.specials_note()}"
                )
                return None
            detail = f"could not write the verification record {dest / RECORD} ({failed})"
            fix = "make room on this machine (or give another --dest), then rerun"
            incomplete = rsync_note = ""
        # not verified: the copy keeps no link out of itself (the host's word on its links does
        # not count; a rerun pulls them again)
        rsync_note += drop_links_out(dest)
        if not self.force:  # a rerun pulls the corrupt files again (--force wipes: nothing reruns)
            mark_stale(dest, out.corrupt, out.listing)
        if self.force:
            plan.msg = f"pull of {src} to {dest} NOT verified: {detail}{rsync_note}; wiping anyway (--force)"
            return None
        refusal = f"refusing to delete anything on {ctx.host.name}: {incomplete}{detail}{rsync_note}"
        return f"{refusal}; {fix}, or pass --force to wipe anyway"


def _guarded_rm_script(targets: Sequence[tuple[str, str]], unchanged: tuple[str, str] | None = None) -> str:
    """sh: for each (path, resolved path seen by the probe) re-resolve, compare, then rm -rf the
    resolved path (the data: `rm -rf` of a symlink removes only the link) and the link itself.

    A path whose resolution changed since the probe (a new symlink) is left alone. With
    `unchanged` (results dir, sha256 of its verified listing), nothing at all is removed when
    that dir's files and symlinks (path, size, mtime) differ now: the script prints `changed`
    and the current listing (NUL-terminated) and exits CHANGED_EXIT.
    """
    lines = ["export LC_ALL=C", "rc=0"]
    if unchanged is not None:
        d, digest = shell.quote(unchanged[0]), unchanged[1]
        ls = f"find . \\( -type f -o -type l \\) -printf '{LISTING_FORMAT}\\0'"
        lines.append(
            f"if [ -d {d} ]; then now=$(cd -- {d} && {ls} | sort -z | sha256sum);"
            f" if [ \"${{now%% *}}\" != {digest} ]; then printf 'changed\\0';"
            f" cd -- {d} && {ls}; exit {CHANGED_EXIT}; fi; fi"
        )
    for path, resolved in targets:
        p, r = shell.quote(path), shell.quote(resolved)
        lines.append(
            f'if [ -e {p} ] || [ -L {p} ]; then if [ "$(realpath -m -- {p})" = {r} ]; then'
            # a mount point keeps its (now empty) directory: rm's EBUSY on it is fine
            f' {{ rm -rf -- {r} 2>/dev/null || {{ mountpoint -q {r} && [ -z "$(ls -A {r})" ]; }}; }}'
            f" && {{ ! [ -L {p} ] || rm -f -- {p}; }}"
            f" || {{ echo could not remove {p} >&2; rc=1; }}; else echo changed {p} >&2; rc=1; fi; fi"
        )
    lines.append("exit $rc")
    return "\n".join(lines)


# gpuonboard's own dir on a host (the login's): container smoke records, TensorBoard logs
CACHE_DIR = "${XDG_CACHE_HOME:-$HOME/.cache}/gpuonboard"
# sh, with $p the cache dir: `mine NAME` (this machine's record of uploads, when there is one)
# and `other NAME` per other machine's record there (a home shared between machines)
_RECORDS_SEEN = (
    f'm={uploadlock.RECORD_PREFIX}{uploadlock.MACHINE_SH}; for x in "$p"/{uploadlock.RECORD_PREFIX}*;'
    ' do [ -f "$x" ] || continue; if [ "${x##*/}" = "$m" ]; then echo "mine $m";'
    " else printf 'other %s\\n' \"${x##*/}\"; fi; done; true"
)


@dataclass(frozen=True)
class OwnCache:
    """gpuonboard's cache dir as the files step's probe found it: removed when `target` is set."""

    path: str
    target: str = ""  # what is removed: the path resolved on the host ('' when absent or refused)
    problem: str = ""  # why it is left alone (a relative $XDG_CACHE_HOME, no $HOME, a link to /)
    link: bool = False
    # a home shared between machines (NFS): the other machines' records of uploads found in it,
    # for which the dir stays (their teardown needs them), and this machine's record, removed alone
    others: tuple[str, ...] = ()
    record: str = ""

    def link_note(self) -> str:
        """', a symlink: its target T is removed too', or ''."""
        return f"; a symlink: its target {self.target} is removed too" if self.link else ""


def own_cache(lines: Sequence[str], home: str | None) -> OwnCache | None:
    """The probe's `cache PATH` line and PATH's state line -> OwnCache (None when not probed).

    Unlike a configured path, a cache path that is unsafe to delete never fails the step: it is
    left, and said (its place comes from the host's environment, not from the inventory)."""
    if len(lines) < 2 or not lines[0].startswith("cache "):
        return None
    path, (kind, _, resolved) = lines[0][6:], lines[1].partition(" ")
    if kind not in ("yes", "link"):
        return OwnCache(path)
    why = path_problem(path, home)
    if not why and resolved != posixpath.normpath(path):
        why = path_problem(resolved, home)
        why = f"resolved to {resolved}, {why}" if why else None
    if why:
        return OwnCache(path, problem=why)
    others = tuple(sorted(x[6:] for x in lines[2:] if x.startswith("other ")))
    if others:  # (only this machine's record goes; `mine NAME` when there is one)
        mine = next((x[5:] for x in lines[2:] if x.startswith("mine ")), "")
        return OwnCache(path, others=others, record=posixpath.join(resolved, mine) if mine else "")
    return OwnCache(path, resolved, link=kind == "link")


def shared_cache_note(cache: OwnCache) -> str:
    """Pure: what the message says of a cache dir left for other machines' records."""
    if not cache.others:
        return ""
    return (
        f" (gpuonboard's cache {cache.path} is left: it holds the upload records of other machines"
        f" sharing this home ({_names(list(cache.others), 3)}); the teardown of each removes its own)"
    )


# the data dir's entries that gpuonboard's dataset upload made (sync reserves these names)
COPY_MARK = ".gpuonboard-copy"  # in a plaintext copy that a decryption or unpack marked
STORE_SUFFIXES = (".encrypted", ".shards")  # <name>.encrypted (ciphertexts), <name>.shards
LEASE_SUFFIX = ".gpuonboard-upload"  # .<name>.gpuonboard-upload: an upload's lease
LEASE_IN_COPY = uploadlock.LEASE_IN_COPY  # <name>/.gpuonboard-upload: one kept inside the copy
UNPACK_INFIX = ".gpuonboard-unpack-"  # .<name>.gpuonboard-unpack-*: an interrupted unpack's dir
FS_ENTRIES = ("lost+found",)  # the file system's own, never the user's data nor said


# sh, inside uploads_probe_command's loop over a dir `$p` named *.shards: `m=i` when it holds no
# manifest but an interrupted upload's `.incoming-N` and nothing but a shard store's own names
# (shards, their `.sum`s, unpack markers, manifests), so no job's file; `a=1` when it holds age
# ciphertexts (encrypted shards)
_INTERRUPTED_STORE = (
    'if [ "$m" = - ]; then m=i; n=; for q in "$p"/* "$p"/.[!.]* "$p"/..?*; do'
    ' [ -e "$q" ] || [ -L "$q" ] || continue; case "${q##*/}" in'
    " .incoming-[0-9]*) n=1 ;; unpacked-*|manifest.json|manifest.unpacked.json|*.tar.*) ;;"
    ' *) m=-; break ;; esac; done; [ -n "$n" ] || m=-; fi;'
    ' for q in "$p"/*.age; do [ -e "$q" ] && a=1; break; done'
)


# sh, with `$d` set: uploads_probe_command's listing of the dir $d
_LISTING = (
    "[ -d \"$d\" ] || { printf 'none\\0'; exit 0; }; "
    'printf \'dir %s\\0uid %s\\0\' "$(realpath -- "$d")" "$(id -u)"; '
    'for p in "$d"/* "$d"/.[!.]* "$d"/..?*; do [ -e "$p" ] || [ -L "$p" ] || continue; '
    'k=f; if [ -L "$p" ]; then k=l; elif [ -d "$p" ]; then k=d; fi; m=-; '
    f'if [ "$k" = d ]; then [ -f "$p/{COPY_MARK}" ] && m=c; [ -f "$p/manifest.json" ] && m=s; '
    '[ "$m" = s ] && [ -f "$p/manifest.unpacked.json" ] && m=u; fi; a=; '
    f'case "$k ${{p##*/}}" in "d "*.shards) {_INTERRUPTED_STORE} ;; esac; '
    'printf \'%s %s %s %s\\0\' "$k" "$m" "$(stat -c %u -- "$p")" "${p##*/}"; '
    f'[ "$m" = c ] && printf \'mark %s\\0\' "$(head -n 1 -- "$p/{COPY_MARK}")"; '
    "[ -n \"$a\" ] && printf 'age\\0'; "
    # an upload's lease: how long ago it was refreshed (a running upload refreshes it often);
    # beside the copy, or inside it (where a data dir the login may not write keeps it)
    f'l=; case "$k ${{p##*/}}" in "f ".*{LEASE_SUFFIX}) l=$p ;; "d "*) [ -f "$p/{LEASE_IN_COPY}" ] &&'
    f' ! [ -L "$p/{LEASE_IN_COPY}" ] && l=$p/{LEASE_IN_COPY} ;; esac; '
    '[ -n "$l" ] && printf \'lease %s\\0\' "$(( $(date +%s) - $(stat -c %Y -- "$l") ))"; done; true'
)


def uploads_probe_command(data_dir: str) -> str:
    """sh: the data dir resolved (`dir PATH`), this login's uid (`uid N`), then each entry in it
    as `KIND MARK UID NAME`, every record NUL-terminated (a name may hold a line break). KIND: d
    (dir), l (symlink), f (other); MARK of a dir: c (holds a .gpuonboard-copy file: its first
    line follows as a record `mark LINE`), s (holds manifest.json), u (and manifest.unpacked.json:
    a shard store a tree was unpacked from), i (a `*.shards` dir an interrupted upload left: no
    manifest, an `.incoming-N`, nothing but a store's own names), else -; a record `age` follows
    a `*.shards` dir holding age ciphertexts. `none` when the data dir is not a directory."""
    return f"d={shell.quote(data_dir)}; {_LISTING}"


def recorded_probe_command() -> str:
    """sh: the uploads `sync` recorded on the host (uploadlock.UPLOADS_RECORD): `none` when there
    is no record, else `record`, then `rec PATH` per recorded path, then per dir holding any of them
    `section DIR` and uploads_probe_command's listing of DIR; every record NUL-terminated."""
    paths = (
        "tr '\\0' '\\n' < \"$r\" | while IFS= read -r x; do"
        " case $x in /?*) printf '%s\\n' \"$x\" ;; esac; done"
    )
    return (
        f'r="{uploadlock.UPLOADS_RECORD}"; [ -f "$r" ] || {{ printf \'none\\0\'; exit 0; }}; '
        "printf 'record\\0'; "
        f"{paths} | while IFS= read -r x; do printf 'rec %s\\0' \"$x\"; done; "
        # (each path's dir by expansion, not a `dirname` per path: thousands of recorded uploads)
        f"{paths} | while IFS= read -r x; do x=${{x%/*}}; printf '%s\\n' \"${{x:-/}}\"; done | sort -u | "
        f"while IFS= read -r d; do printf 'section %s\\0' \"$d\"; ( {_LISTING} ); done; true"
    )


def parse_recorded(output: str) -> tuple[dict[str, set[str]], dict[str, str]] | None:
    """Pure: recorded_probe_command's output -> ({dir: names recorded in it}, {dir: its
    listing, for classify_uploads}); None when the host holds no record."""
    records = output.split("\0")
    if records[0] != "record":  # (`none`: no record; nothing: the probe did not run)
        return None
    names: dict[str, set[str]] = {}
    listings: dict[str, list[str]] = {}
    current: list[str] | None = None
    for rec in records:
        if rec.startswith("rec ") and current is None:
            parent, name = posixpath.split(rec[4:])
            if name:
                names.setdefault(parent, set()).add(name)
        elif rec.startswith("section "):
            current = listings.setdefault(rec[8:], [])
        elif current is not None:
            current.append(rec)
    return names, {d: "\0".join(r) for d, r in listings.items()}


@dataclass(frozen=True)
class Uploads:
    """What the data dir holds: the entries gpuonboard's upload made (`ours`, removed) and the
    rest (`others`, left on the host and said), as names in `root` (resolved on the host)."""

    root: str
    ours: tuple[str, ...]
    others: tuple[str, ...]
    # the stores of age ciphertexts (`X.encrypted`, encrypted `X.shards`), ours or not: their
    # plaintext may have been decrypted outside the data dir (`sync --decrypt-to`)
    ciphertexts: tuple[str, ...] = dataclasses.field(default=(), compare=False)
    # upload leases refreshed less than uploadlock.STALE_S ago: an upload runs there now
    live_leases: tuple[str, ...] = dataclasses.field(default=(), compare=False)


@dataclass(frozen=True)
class _Entry:
    kind: str
    mark: str
    owner: str
    name: str
    mark_text: str = ""
    age: bool = False
    lease_age: int | None = None  # seconds since an upload lease was refreshed


def _upload_entries(records: Sequence[str]) -> list[_Entry]:
    """The probe's entry records (a `mark` record belongs to the entry before it)."""
    entries: list[_Entry] = []
    for rec in records:
        if rec.startswith("mark ") and entries and entries[-1].mark == "c":
            entries[-1] = dataclasses.replace(entries[-1], mark_text=rec[5:])
            continue
        if rec == "age" and entries:
            entries[-1] = dataclasses.replace(entries[-1], age=True)
            continue
        # (ASCII digits only: str.isdecimal() passes `²` and a lstrip passes `--5`, which int() refuses)
        if rec.startswith("lease ") and entries and re.fullmatch(r"-?[0-9]+", rec[6:]):
            entries[-1] = dataclasses.replace(entries[-1], lease_age=int(rec[6:]))
            continue
        kind, mark, owner, name = (rec.split(" ", 3) + ["", "", ""])[:4]
        if name and kind in ("d", "l", "f"):
            entries.append(_Entry(kind, mark, owner, name))
    return entries


def classify_uploads(
    output: str,
    dataset_name: str = "",
    skip: Iterable[str] = (),
    recorded: Mapping[str, Iterable[str]] | None = None,
    only_recorded: bool = False,
) -> Uploads | None:
    """Pure: uploads_probe_command's output -> Uploads (None when the data dir is not there).

    Ours, each on evidence of its own and only when this login owns it (another user cannot
    make an entry this login owns): the configured dataset's copy `N` and its stores
    `N.encrypted`, `N.shards`; a dir whose .gpuonboard-copy mark names that very dir (a `cp -a`
    of a copy carries a mark naming the original), with its stores; a shard store (`X.shards`
    holding its manifest.json), and the tree `X` beside one a tree was unpacked from (its
    manifest.unpacked.json); leases (`.X.gpuonboard-upload`) and interrupted unpack dirs. Never
    a symlink (its target is not ours to judge), nor a sibling on a store's word alone (a tree
    beside a store nothing was unpacked from stays, named). `skip`: names removed by another
    path. `recorded`: names `sync` recorded as its copies, by dir (see parse_recorded): each is
    a copy as the configured dataset's is. `only_recorded`: a dir that is not the data dir (one
    holding a recorded upload: /dev/shm, a --dest under the home dir): a shard store, and a tree
    beside one, count only as a recorded copy's (the user's own `ckpt.shards/manifest.json`
    there is no upload's)."""
    records = output.split("\0")
    if len(records) < 2 or not records[0].startswith("dir ") or not records[1].startswith("uid "):
        return None
    root, uid = records[0][4:], records[1][4:]
    entries = [e for e in _upload_entries(records[2:]) if e.name not in FS_ENTRIES and e.name not in skip]
    here = root.rstrip("/")
    stems = {dataset_name} if dataset_name else set()
    stems |= set((recorded or {}).get(root.rstrip("/") or "/", ()))
    stems |= {
        e.name for e in entries if e.kind == "d" and e.mark == "c" and e.mark_text == f"{here}/{e.name}"
    }
    family = {stem + suffix for stem in stems for suffix in ("", *STORE_SUFFIXES)}
    stores = {
        e.name: e
        for e in entries
        if e.kind == "d" and e.mark in ("s", "u", "i") and e.name.endswith(".shards")
    }
    unpacked = {n[: -len(".shards")] for n, e in stores.items() if e.mark == "u" and e.owner == uid}

    def ours(e: _Entry) -> bool:
        if e.owner != uid:
            return False
        if e.kind == "f":
            return e.name.startswith(".") and e.name.endswith(LEASE_SUFFIX)
        if e.kind != "d":
            return False
        return (
            e.name in family
            or (not only_recorded and (e.name in stores or e.name in unpacked))
            or (e.name.startswith(".") and UNPACK_INFIX in e.name)
        )

    mine = tuple(sorted(e.name for e in entries if ours(e)))
    rest = tuple(sorted(e.name for e in entries if e.name not in mine))
    sealed = tuple(
        sorted(e.name for e in entries if e.kind == "d" and (e.age or e.name.endswith(".encrypted")))
    )
    from gpuonboard.transfer.uploadlock import STALE_S

    live = tuple(sorted(e.name for e in entries if e.lease_age is not None and e.lease_age < STALE_S))
    return Uploads(root, mine, rest, sealed, live)


def plaintext_note(data_dir: str, ciphertexts: Sequence[str]) -> str:
    """Pure: what the message says of the plaintext of encrypted uploads, which `sync
    --decrypt-to DIR` put in DIR/<name> outside the data dir, where teardown cannot find it."""
    if not ciphertexts:
        return ""
    return (
        f"; the data dir held age ciphertexts ({_names([f'{data_dir}/{c}' for c in ciphertexts])}): plaintext"
        " that `sync --decrypt-on-host --decrypt-to DIR` put in DIR/<name> is not looked for and stays"
        " on the host unless vars.decrypted_dir names it: delete it there yourself (e.g. rm -rf"
        " /dev/shm/<name>)"
    )


class TeardownFilesStep(Step):
    """Remove directories provisioning placed (dataset, decrypted data, markers, pulled results)."""

    name = "teardown_files"
    read_only = False
    ARGS = {
        "paths": "remote directories/files to remove ('' entries are ignored: unset vars)",
        "results": "the remote results dir (removed too: its copy was pulled and verified first)",
        "dest": "the local copy of the results (its record says what was verified; as teardown_pull)",
        "force": "remove the results dir without comparing it with the verified copy's record",
        "own_cache": "also remove gpuonboard's own cache dir on the host,"
        " ${XDG_CACHE_HOME:-~/.cache}/gpuonboard (container smoke records, TensorBoard logs)",
        "uploads_in": "the data dir: remove what gpuonboard's dataset upload made in it (the dataset's"
        " copy and stores, marked copies, leases), and name the rest, which stays",
        "dataset": "the dataset (a local path) whose copy <uploads_in>/<its base name> is removed",
        "recorded_uploads": "also remove the uploads `sync` recorded on the host, wherever they are"
        " (under another --dest, --decrypt-to plaintext): each copy, its stores and leases",
    }

    def __init__(self, args: Mapping[str, Any], label: str | None = None) -> None:
        super().__init__(args, label)
        self.own_cache = truthy(self.args.get("own_cache", False), "own_cache")
        raw = self.args.get("paths") or []
        if isinstance(raw, str):
            raw = [raw]
        if not isinstance(raw, list):
            raise StepArgsError("argument 'paths' must be a list of paths")
        results = str(self.args.get("results") or "").strip()
        self.results = posixpath.normpath(results) if results.lower() not in ("", "none", "null") else ""
        self.force = truthy(self.args.get("force", False), "force")
        wanted = [str(p).strip() for p in [*raw, results]]
        self.paths = list(dict.fromkeys(p for p in wanted if p and p.lower() not in ("none", "null")))
        quoted = " ".join(shell.quote(p) for p in self.paths) or "''"
        state = (
            'if [ -L "$p" ]; then echo "link $(realpath -m -- "$p")";'
            ' elif [ -e "$p" ]; then echo "yes $(realpath -m -- "$p")"; else echo no; fi'
        )
        command = f'echo "home $HOME"; for p in {quoted}; do [ -n "$p" ] || continue; {state}; done'
        if self.own_cache:  # where tunnel.private_log and the container step's SMOKE_DIR put it
            command += f'; p="{CACHE_DIR}"; printf \'cache %s\\n\' "$p"; {state}; {_RECORDS_SEEN}'
        self.probe = Probe(_probe_name("teardown_files", command), command)
        uploads_in = str(self.args.get("uploads_in") or "").strip()
        self.uploads_in = uploads_in if uploads_in.lower() not in ("none", "null") else ""
        dataset = str(self.args.get("dataset") or "").strip().rstrip("/")
        self.dataset_name = posixpath.basename(dataset) if dataset.lower() not in ("none", "null") else ""
        listing = uploads_probe_command(self.uploads_in)
        self.uploads_probe = Probe(_probe_name("teardown_uploads", listing), listing)
        self.recorded = truthy(self.args.get("recorded_uploads", False), "recorded_uploads")
        listing = recorded_probe_command()
        self.recorded_probe = Probe(_probe_name("teardown_recorded", listing), listing)

    def probes(self) -> list[Probe]:
        """$HOME and, per path, whether it exists (`yes`), is a symlink (`link`), and where it
        resolves; with `uploads_in`, the entries of the data dir; with `recorded_uploads`, the
        uploads `sync` recorded and the entries of each dir holding one."""
        found = [self.probe] if self.paths or self.own_cache or self.uploads_in or self.recorded else []
        found += [self.uploads_probe] if self.uploads_in else []
        return found + ([self.recorded_probe] if self.recorded else [])

    def _uploads(
        self, ctx: StepContext, home: str | None
    ) -> tuple[list[tuple[str, str]], str, str | None, str | None]:
        """(what to remove of gpuonboard's uploads: (path, resolved), the note on what stays,
        why the data dir itself is refused or None, the refusal while an upload runs there or
        None): those in the data dir, and with `recorded_uploads` those `sync` recorded."""
        recorded = None
        if self.recorded:
            raw = ctx.facts.raw.get(self.recorded_probe.name)
            recorded = parse_recorded(raw.stdout if raw is not None else "")
        names, listings = recorded or ({}, {})
        ours: list[tuple[str, str]] = []
        note, data_root = "", None
        if self.uploads_in:
            if not posixpath.isabs(self.uploads_in):
                return [], "", f"{self.uploads_in} (not an absolute path)", None
            raw = ctx.facts.raw.get(self.uploads_probe.name)
            norm = posixpath.normpath(self.uploads_in)
            found = classify_uploads(
                raw.stdout if raw is not None else "", self.dataset_name, self._skipped(norm), names
            )
            if found is not None:
                busy = self._running(ctx, norm, found)
                if busy:
                    return [], "", None, busy
                data_root = found.root
                here = norm.rstrip("/")
                others = self._removable(found, here, home, ours)
                if others:
                    n = len(others)
                    spelt = [repr(f"{here}/{o}") if "\n" in o else f"{here}/{o}" for o in sorted(others)]
                    shown = _names(spelt)
                    note = (
                        f"; left on the host: {n} {'entry' if n == 1 else 'entries'} in {here} that teardown"
                        " cannot tell for gpuonboard's uploads (it knows vars.dataset's copy, marked ones and"
                        f" those `sync` recorded on the host) nor pulled ({shown}): pull or delete them"
                        " yourself, or set vars.dataset_dir to a dir teardown should remove whole"
                    )
                if recorded is None:  # (a host where no sync recorded its uploads: an older one's)
                    note += plaintext_note(here, found.ciphertexts)
        left: list[str] = []
        holding: list[str] = []
        for where, listing in sorted(listings.items()):  # the dirs holding recorded uploads
            found = classify_uploads(listing, "", self._skipped(where), names, only_recorded=True)
            if found is None or found.root == data_root:
                continue
            busy = self._running(ctx, where, found)
            if busy:
                return [], "", None, busy
            here = where.rstrip("/")
            theirs: list[tuple[str, str]] = []
            others = self._removable(found, here, home, theirs)
            # (the rest of a dir such as /dev/shm is not the upload's: said only when recorded)
            left += [f"{here}/{o}" for o in others if o in names.get(where, ())]
            for path, resolved in theirs:
                if data_root is not None and _holds(resolved, data_root):
                    holding.append(path)  # (a copy made the data dir: it is never removed whole)
                elif (path, resolved) not in ours:
                    ours.append((path, resolved))
        if left:
            note += (
                f"; left on the host: {_names(left)}, recorded by sync as its uploads but not removable"
                " now (a symlink, another user's, or an unsafe path): delete them yourself"
            )
        if holding:
            note += (
                f"; left on the host: {_names(holding)}, recorded by sync as its uploads but holding the"
                f" data dir {data_root}, which teardown never removes whole (it may hold other runs'"
                " outputs that no pull took): delete what you no longer need there yourself"
            )
        return ours, note, None, None

    def _skipped(self, where: str) -> set[str]:
        """Names in `where` that a configured path removes (never twice)."""
        paths = map(posixpath.normpath, self.paths)
        return {posixpath.basename(p) for p in paths if posixpath.dirname(p) == where}

    @staticmethod
    def _running(ctx: StepContext, where: str, found: Uploads) -> str | None:
        """The refusal while an upload runs in `where` (a lease refreshed within a minute), or None:
        removing its copy under it fails the upload, and a rerun puts it back."""
        if not found.live_leases:
            return None
        lease = found.live_leases[0]
        beside = lease.startswith(".") and lease.endswith(LEASE_SUFFIX)  # (else: a copy holding it)
        name = lease[1 : -len(LEASE_SUFFIX)] if beside else lease
        return (
            f"refusing to delete anything on {ctx.host.name}: an upload to {where.rstrip('/')}/{name} is"
            " running (its lease was refreshed within the last minute); wait for it to end, or stop"
            " it, then rerun"
        )

    @staticmethod
    def _removable(found: Uploads, here: str, home: str | None, ours: list[tuple[str, str]]) -> list[str]:
        """Add found.ours that pass the path check to `ours` (path, resolved); the names that stay."""
        others = list(found.others)
        for name in found.ours:  # (each is removed: the same check as a configured path)
            path, resolved = f"{here}/{name}", f"{found.root.rstrip('/')}/{name}"
            if path_problem(path, home) or path_problem(resolved, home):
                others.append(name)  # (a name with a line break: left, said, never fatal)
            elif (path, resolved) not in ours:
                ours.append((path, resolved))
        return others

    def plan(self, ctx: StepContext) -> Plan:
        """Refuse unsafe paths (before deleting anything); list the ones that exist."""
        if not self.paths and not self.own_cache and not self.uploads_in and not self.recorded:
            return Plan(False, "no provisioned directories configured; nothing to remove")
        lines = ctx.facts.raw[self.probe.name].stdout.splitlines()
        home = lines[0][5:] if lines and lines[0].startswith("home ") else None
        states = lines[1 : 1 + len(self.paths)]
        if len(states) != len(self.paths):
            return Plan(False, f"could not inspect {', '.join(self.paths)} on the host", failed=True)
        cache = own_cache(lines[1 + len(self.paths) :], home) if self.own_cache else None
        present: list[tuple[str, str]] = []
        links: set[str] = set()
        refused: list[str] = []
        for path, state in zip(self.paths, states, strict=True):
            why = path_problem(path, home)
            kind, _, resolved = state.partition(" ")
            resolved = resolved if kind in ("yes", "link") else ""
            if kind == "link":
                links.add(path)
            # (the resolved path is what is deleted: it passes the same check)
            if not why and resolved and resolved != posixpath.normpath(path):
                why = path_problem(resolved, home)
                why = f"it resolves to {resolved}, {why}" if why else None
            if why:
                refused.append(f"{path} ({why})")
            elif resolved:
                present.append((path, resolved))
        uploads, left, bad, busy = self._uploads(ctx, home)
        if busy:
            return Plan(False, busy, failed=True)
        if bad:
            refused.append(bad)
        if refused:
            return Plan(
                False,
                "refusing to delete unsafe paths: " + "; ".join(refused) + "; fix the host vars",
                failed=True,
            )
        said = [f"{p} (a symlink: its target {r} is removed too)" if p in links else p for p, r in present]
        gone = {r for _, r in present}
        uploads = [(p, r) for p, r in uploads if r not in gone]  # (a configured path removes it)
        if uploads:
            present.extend(uploads)
            norm = posixpath.normpath(self.uploads_in) if self.uploads_in else ""
            where = f" in {self.uploads_in}" if all(posixpath.dirname(p) == norm for p, _ in uploads) else ""
            said.append(f"{_names([p for p, _ in uploads], 5)} (gpuonboard's uploads{where})")
        note = left
        if cache is not None and cache.target:
            present.append((cache.path, cache.target))
            said.append(f"{cache.path} (gpuonboard's own cache on the host{cache.link_note()})")
            if cache.link_note():
                links.add(cache.path)
        elif cache is not None and cache.problem:
            note += f" (gpuonboard's cache {cache.path} is left: it is {cache.problem})"
        elif cache is not None and cache.others:
            note += shared_cache_note(cache)
            if cache.record:  # (last, as the dir would go: the uploads it names went first)
                present.append((cache.record, cache.record))
                said.append(f"{cache.record} (this machine's record of gpuonboard's uploads)")
        if not present:
            looked = self.paths + ([f"uploads in {self.uploads_in}"] if self.uploads_in else [])
            looked += ["the uploads sync recorded"] if self.recorded else []
            return Plan(False, f"already clean: {_names(looked, 5) or 'gpuonboard cache'} not present{note}")
        names = [p for p, _ in present]
        diff = {"removed": names, "targets": {p: r for p, r in present if p in links}}
        return Plan(True, f"remove {', '.join(said)}{note}", diff=diff, data=present)

    def apply(self, ctx: StepContext, plan: Plan) -> Any:
        """One remote command removing every path after re-checking its resolution and, first,
        that the results dir still holds exactly what the verified pull recorded."""
        present: list[tuple[str, str]] = plan.data
        unchanged = None
        results = next((p for p, _ in present if self.results and posixpath.normpath(p) == self.results), "")
        if results and not self.force:
            dest = copy_dir(self.args.get("dest"), ctx)
            record = read_record(dest)
            if record is None or not record.of(ctx.host, self.results, host_key(ctx)):
                return (
                    f"refusing to delete anything on {ctx.host.name}: {dest} holds no verified copy of"
                    f" {ctx.host.name}:{self.results} (no matching {RECORD}); run the whole teardown (its"
                    " pull verifies the copy), or pass --force to wipe anyway"
                )
            # by content, right before deleting: the copy may have lost or changed files since its
            # pull was verified (moved, deleted, corrupted: a rerun of `--only files`, `--resume`)
            missing, corrupt = copy_unverified(dest, record)
            if missing or corrupt:
                problems = describe_problems(missing, corrupt, len(record.sums))
                return (
                    f"refusing to delete anything on {ctx.host.name}: the verified copy {dest} of"
                    f" {ctx.host.name}:{self.results} no longer matches its pull (sha256): {problems};"
                    " run the whole teardown (its pull brings them back), or pass --force to wipe anyway"
                )
            unchanged = (results, listing_digest(record.listing))
            plan.data = (present, record)
        # on sh's stdin, not in the command: one line per path (a host with hundreds of recorded
        # uploads) made a command over sshd's and execve's limits, and the connection was reset
        script = _guarded_rm_script(present, unchanged).encode("utf-8", "surrogateescape")
        return ctx.runner.run("sh -s", stdin=script)

    def verify(self, ctx: StepContext, plan: Plan, applied: Any) -> str | None:
        """The removal must succeed; results changed since the pull removed nothing."""
        if isinstance(applied, str):
            return applied
        if applied.ok:
            return None
        if applied.exit_code == CHANGED_EXIT and applied.stdout.startswith("changed\0"):
            _, record = plan.data
            now = [e for e in applied.stdout[len("changed\0") :].split("\0") if e]
            changed = listing_changes(record.listing, now) or ["?"]
            host = ctx.host.name
            return (
                f"refusing to delete anything on {host}: {host}:{self.results} changed after it was pulled"
                f" (e.g. {_names(changed, 1)}): a job may still be writing; stop it, then rerun"
            )
        return f"could not remove everything: {last_line(applied.stderr, applied.exit_code)}"


def _image_refs(image: str, mirror: str) -> list[str]:
    """The image's local names: canonical, plus each mirror's copy when pulled through one
    (`mirror`: one mirror, or a list as the playbook renders it, `['a', 'b']`)."""
    if not image:
        return []
    refs = [image]
    if mirror:
        try:
            from gpuonboard.steps.container import parse_mirrors, parse_ref

            listed: object = mirror
            if mirror[:1] + mirror[-1:] in ("[]", "()"):  # (a host's list, a vendor's tuple)
                listed = ast.literal_eval(mirror)
            ref = parse_ref(image)  # (each mirror as the container step named its copy)
            refs = [ref.canonical, *(ref.on(m) for m, _ in parse_mirrors(listed))]
        except (ImportError, StepArgsError, AttributeError, ValueError, SyntaxError):
            pass  # (a malformed mirror: the container step pulled nothing through it)
    return list(dict.fromkeys(refs))


class TeardownContainersStep(Step):
    """Stop and remove the project's containers and (unless keep_image) the training image."""

    name = "teardown_containers"
    read_only = False
    ARGS = {
        "containers": "container names started for this project (e.g. vars.containers)",
        "label": "also remove containers carrying this label key (default gpuonboard)",
        "image": "the training image (vars.container_image)",
        "registry_mirror": "mirror the image was pulled through (its copy is removed too)",
        "keep_image": "keep the image",
    }

    def __init__(self, args: Mapping[str, Any], label: str | None = None) -> None:
        super().__init__(args, label)
        raw = self.args.get("containers") or []
        if isinstance(raw, str):  # a rendered template: "a,b"
            raw = [n.strip() for n in raw.split(",")]
        if not isinstance(raw, list):
            raise StepArgsError("argument 'containers' must be a list of container names")
        self.names = [str(n) for n in raw if str(n).strip()]
        self.label_key = str(self.args.get("label") or "gpuonboard")
        self.keep_image = truthy(self.args.get("keep_image", False), "keep_image")
        mirror = str(self.args.get("registry_mirror") or "")
        self.images = _image_refs(str(self.args.get("image") or ""), mirror)
        names = " ".join(shell.quote(n) for n in self.names) or "''"
        images = " ".join(shell.quote(i) for i in self.images) or "''"
        fmt = shell.quote("{{.Names}}")
        command = (
            "c=; for x in docker podman; do command -v $x >/dev/null 2>&1 || continue; "
            'if $x info >/dev/null 2>&1; then c=$x; break; else echo "down $x"; fi; done; '
            '[ -n "$c" ] || exit 0; echo "cli $c"; '
            f"$c ps -a --filter label={shell.quote(self.label_key)} --format {fmt} | sed 's/^/ctr /'; "
            f'for n in {names}; do [ -n "$n" ] || continue; '
            '$c container inspect "$n" >/dev/null 2>&1 && echo "ctr $n"; done; '
            f'for i in {images}; do [ -n "$i" ] || continue; '
            '$c image inspect "$i" >/dev/null 2>&1 && echo "img $i"; done; true'
        )
        self.probe = Probe(_probe_name("teardown_containers", command), command)

    def probes(self) -> list[Probe]:
        """Which runtime answers, which of our containers and image refs exist."""
        return [self.probe]

    def plan(self, ctx: StepContext) -> Plan:
        """No runtime: nothing to do; else the containers and image refs to remove."""
        cli, ctrs, imgs, down = "", [], [], []
        for line in ctx.facts.raw[self.probe.name].stdout.splitlines():
            kind, _, rest = line.partition(" ")
            if kind == "cli":
                cli = rest.strip()
            elif kind == "ctr" and rest.strip():
                ctrs.append(rest.strip())
            elif kind == "img":
                imgs.append(rest.strip())
            elif kind == "down":
                down.append(rest.strip())
        if not cli:
            why = f" ({', '.join(down)} installed but not answering)" if down else ""
            return Plan(False, f"no container runtime answers{why}; no containers or image to remove")
        ctrs = list(dict.fromkeys(ctrs))
        kept = imgs if self.keep_image else []
        imgs = [] if self.keep_image else imgs
        parts = []
        if ctrs:
            parts.append(f"stop and remove containers {', '.join(ctrs)}")
        if imgs:
            parts.append(f"remove image {', '.join(imgs)}")
        note = f" (keeping image {', '.join(kept)})" if kept else ""
        if not parts:
            what = "containers" if self.keep_image else "containers or image"
            return Plan(False, f"no project {what} on {cli}{note}")
        return Plan(
            True,
            " and ".join(parts) + f" ({cli}){note}",
            diff={"containers": ctrs, "images": imgs, "kept": kept},
            data=(cli, ctrs, imgs),
        )

    def apply(self, ctx: StepContext, plan: Plan) -> Any:
        """`rm -f` (stops too) the containers, then `rmi` the image refs, in one command."""
        cli, ctrs, imgs = plan.data
        parts = []
        if ctrs:
            parts.append(shell.join([cli, "rm", "-f", *ctrs]))
        if imgs:
            parts.append(shell.join([cli, "rmi", *imgs]))
        return ctx.runner.run(shell.sh_c(" && ".join(parts)))

    def verify(self, ctx: StepContext, plan: Plan, applied: Any) -> str | None:
        """The runtime must have removed them."""
        if applied.ok:
            return None
        return f"could not remove containers/image: {last_line(applied.stderr, applied.exit_code)}"


class TeardownCostStep(Step):
    """Read-only: what the rental cost from provisioning (or vars.rented_since) to now."""

    name = "teardown_cost"
    read_only = True
    ARGS = {
        "since": "rental start (vars.rented_since): epoch seconds or ISO 8601; default: the journal",
        "unit": "billing unit: second | minute | hour (vendor billing.unit)",
        "rate": "price per hour (vendor billing.rate)",
        "currency": "currency (vendor billing.currency)",
        "state_dir": "journal directory (default .gpuonboard/state under the project)",
        "now": "end of the rental in epoch seconds (default: now; for tests)",
    }

    def plan(self, ctx: StepContext) -> Plan:
        """Compute the cost; never fails the run (an unknown start is said in the message)."""
        try:
            since = parse_since(self.args.get("since"))
        except ValueError as exc:
            return Plan(False, f"cost unknown: vars.rented_since: {exc}")
        source = "vars.rented_since"
        if since is None:
            state_dir = Path(str(self.args.get("state_dir") or ctx.project / ".gpuonboard" / "state"))
            found = journal_start(state_dir, ctx.host.name)
            if found is None:
                return Plan(
                    False, "cost unknown: no provision run in the journal; set vars.rented_since on the host"
                )
            since, source = found
        unit = str(self.args.get("unit") or "hour")
        raw_rate = self.args.get("rate")
        try:
            rate = float(raw_rate) if raw_rate not in (None, "", "None") else None
            if rate is not None and not (math.isfinite(rate) and rate >= 0):
                raise ValueError(f"the billing rate must be a price per hour (0 or more), not {raw_rate!r}")
            now = float(self.args["now"]) if self.args.get("now") not in (None, "") else time.time()
            cost = rental_cost(since, now, unit, rate, str(self.args.get("currency") or ""), source)
        except (TypeError, ValueError) as exc:
            return Plan(False, f"cost unknown: {exc}")
        if since > now + 60:
            return Plan(
                False,
                f"cost unknown: the rental start {_utc(since)} ({source}) is after now ({_utc(now)});"
                " check it (or this machine's clock)",
            )
        if since > now:  # a minute of clock skew is no error: billed as just started, and said
            skew = f"{source}, {math.ceil(since - now)}s after this machine's clock: counted from now"
            cost = rental_cost(now, now, unit, rate, str(self.args.get("currency") or ""), skew)
        return Plan(False, cost.text(), diff={"cost": cost.to_json()})
