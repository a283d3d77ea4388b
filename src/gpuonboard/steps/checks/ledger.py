"""The local GPU ledger: which physical GPUs (serial, UUID, board part number) each host
reported, run by run, like a hardware asset register.

One JSON file per host, `.gpuonboard/ledger/<host>.json` under the project (so hosts of one
run never write the same file), holding the last KEEP_RUNS runs of that host, oldest first,
one run per line:

    {"schema": "gpuonboard.gpu-ledger/1", "host": "gpu-a",
     "runs": [{"time": 1767225600.5, "date": "2026-01-01T00:00:00+0000", "check_mode": true,
               "acceptance": {"verdict": "fail", "failed": ["throttling"]},
               "gpus": [{"index": 0, "serial": "1650124031592", "uuid": "GPU-ee79...",
                         "board_part_number": "692-2G520-0200-000",
                         "pci_bus_id": "00000000:19:00.0", "name": "NVIDIA H100 80GB HBM3"}]}]}

Written atomically (atomicfile: temp file + rename) under an flock of `ledger/.lock`, so two
processes recording the same host never lose each other's run and a reader never sees half a
file. A file that cannot be read as such is refused (LedgerError, one sentence naming it and
what to do), never overwritten: it may be the only history of a box.

Serials and UUIDs are hardware identifiers, not secrets: they appear in reports.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from gpuonboard import atomicfile
from gpuonboard.errors import GpuonboardError
from gpuonboard.facts.nvidia_smi import GpuInfo
from gpuonboard.units import rfc3339

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Windows: no lock there
    fcntl = None  # type: ignore[assignment]

SCHEMA = "gpuonboard.gpu-ledger/1"
KEEP_RUNS = 50  # runs kept per host (the oldest are dropped): ~50 KiB for an 8-GPU box
MAX_LEDGER_BYTES = 8 * 2**20  # a file larger than this is not a ledger this tool wrote

Outcome = Literal["pass", "fail", "unknown"]


class LedgerError(GpuonboardError):
    """A ledger file that cannot be read as one (corrupt, edited, another tool's, too large)."""


@dataclass(frozen=True)
class GpuIdentity:
    """What identifies one physical GPU: serial and UUID (None where not reported or not usable
    as an identifier), plus its board part number and where it sat (index, PCI bus id)."""

    index: int
    serial: str | None
    uuid: str | None
    board_part_number: str | None = None
    pci_bus_id: str | None = None
    name: str | None = None

    @property
    def identified(self) -> bool:
        """Whether a serial or a UUID says which GPU this is."""
        return bool(self.serial or self.uuid)

    def label(self) -> str:
        """`serial X`, else `UUID Y`, else `no serial or UUID`."""
        if self.serial:
            return f"serial {self.serial}"
        if self.uuid:
            return f"UUID {self.uuid}"
        return "no serial or UUID"


@dataclass(frozen=True)
class LedgerEntry:
    """One run of one host: when, its GPUs, and the acceptance outcome recorded with it."""

    host: str
    time: float  # seconds since the epoch (orders runs; this run's own start is compared to it)
    date: str  # the same instant as local ISO 8601, for people
    gpus: tuple[GpuIdentity, ...]
    acceptance: Outcome = "unknown"
    failed_rules: tuple[str, ...] = ()
    check_mode: bool = False

    def day(self) -> str:
        """`2026-01-01 14:03`: the run's date as a report sentence names it."""
        return self.date[:16].replace("T", " ") if len(self.date) >= 16 else self.date


def _identifier(value: str | None) -> str | None:
    """A usable identifier, or None: blank and all-zero serials (vGPUs, some boards) say nothing."""
    text = (value or "").strip()
    if not text or set(text) <= {"0", "-"}:
        return None
    return text


def identities(gpus: Iterable[GpuInfo]) -> tuple[GpuIdentity, ...]:
    """Pure: the identity of each GPU, in index order. A serial (or UUID) that several GPUs of the
    same box share identifies none of them (a vGPU, a board that reports a placeholder): it is
    dropped for those GPUs rather than make them look like one GPU."""
    listed = sorted(gpus, key=lambda g: g.index)
    serials = [_identifier(g.serial) for g in listed]
    uuids = [_identifier(g.uuid) for g in listed]
    return tuple(
        GpuIdentity(
            index=g.index,
            serial=s if s and serials.count(s) == 1 else None,
            uuid=u if u and uuids.count(u) == 1 else None,
            board_part_number=_identifier(g.board_part_number),
            pci_bus_id=g.pci_bus_id,
            name=g.name or None,
        )
        for g, s, u in zip(listed, serials, uuids, strict=True)
    )


def ledger_dir(project: Path) -> Path:
    """`.gpuonboard/ledger/` under the project (beside state/, logs/, known_hosts)."""
    return project / ".gpuonboard" / "ledger"


def ledger_path(directory: Path, host: str) -> Path:
    """`<host>.json`; a name whose characters had to be replaced (`gpu 1`, `gpu/1`) gets a digest
    of the real name, so it never shares the file of another host (`gpu_1`)."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in host).lstrip(".")
    if safe != host or not safe:
        safe = (safe or "_") + "-" + hashlib.sha256(host.encode("utf-8", "surrogateescape")).hexdigest()[:10]
    return directory / f"{safe}.json"


def _entry_json(entry: LedgerEntry) -> dict[str, Any]:
    return {
        "time": entry.time,
        "date": entry.date,
        "check_mode": entry.check_mode,
        "acceptance": {"verdict": entry.acceptance, "failed": list(entry.failed_rules)},
        "gpus": [
            {
                "index": g.index,
                "serial": g.serial,
                "uuid": g.uuid,
                "board_part_number": g.board_part_number,
                "pci_bus_id": g.pci_bus_id,
                "name": g.name,
            }
            for g in entry.gpus
        ],
    }


def _opt_str(value: Any, what: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise ValueError(f"{what} is not text")


def _gpu_from(data: Any, where: str) -> GpuIdentity:
    if (
        not isinstance(data, dict)
        or isinstance(data.get("index"), bool)
        or not isinstance(data.get("index"), int)
    ):
        raise ValueError(f"{where} is not a GPU record with an index")
    return GpuIdentity(
        index=data["index"],
        serial=_opt_str(data.get("serial"), f"{where}.serial"),
        uuid=_opt_str(data.get("uuid"), f"{where}.uuid"),
        board_part_number=_opt_str(data.get("board_part_number"), f"{where}.board_part_number"),
        pci_bus_id=_opt_str(data.get("pci_bus_id"), f"{where}.pci_bus_id"),
        name=_opt_str(data.get("name"), f"{where}.name"),
    )


def _entry_from(host: str, data: Any, where: str) -> LedgerEntry:
    if not isinstance(data, dict):
        raise ValueError(f"{where} is not a run record")
    when, date, gpus = data.get("time"), data.get("date"), data.get("gpus")
    if isinstance(when, bool) or not isinstance(when, int | float) or not isinstance(date, str):
        raise ValueError(f"{where} has no time and date")
    if not isinstance(gpus, list):
        raise ValueError(f"{where}.gpus is not a list")
    outcome = data.get("acceptance") or {}
    verdict = outcome.get("verdict", "unknown") if isinstance(outcome, dict) else None
    failed = outcome.get("failed", []) if isinstance(outcome, dict) else None
    if verdict not in ("pass", "fail", "unknown"):
        raise ValueError(f"{where}.acceptance.verdict is not pass, fail or unknown")
    if not isinstance(failed, list) or not all(isinstance(f, str) for f in failed):
        raise ValueError(f"{where}.acceptance.failed is not a list of rule names")
    return LedgerEntry(
        host=host,
        time=float(when),
        date=date,
        gpus=tuple(_gpu_from(g, f"{where}.gpus[{i}]") for i, g in enumerate(gpus)),
        acceptance=verdict,
        failed_rules=tuple(failed),
        check_mode=data.get("check_mode") is True,
    )


def parse(text: str, path: Path, host: str | None = None) -> tuple[str, list[LedgerEntry]]:
    """Pure: (the host the file is of, its runs oldest first). LedgerError when it is not a
    ledger (of `host`, when given): one sentence naming the file and what to do."""
    try:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("it is not a JSON object")
        if data.get("schema") != SCHEMA:
            raise ValueError(f"its schema is {data.get('schema')!r}, not {SCHEMA!r}")
        owner = data.get("host")
        if not isinstance(owner, str) or not owner:
            raise ValueError("it names no host")
        if host is not None and owner != host:
            raise ValueError(f"it is the ledger of host {owner!r}, not of {host!r}")
        runs = data.get("runs")
        if not isinstance(runs, list):
            raise ValueError("its runs are not a list")
        entries = [_entry_from(owner, r, f"runs[{i}]") for i, r in enumerate(runs)]
    except ValueError as exc:  # (json.JSONDecodeError is one)
        raise LedgerError(
            f"the GPU ledger {path} is unreadable ({exc}): move it aside or delete it to start a new"
            " GPU history for this host (the GPUs are then compared from the next run on)"
        ) from None
    return owner, sorted(entries, key=lambda e: e.time)


def _read(path: Path) -> str | None:
    """The file's text, None when absent; LedgerError when it cannot be read as text."""
    try:
        with path.open("rb") as f:
            data = f.read(MAX_LEDGER_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise LedgerError(
            f"the GPU ledger {path} cannot be read ({exc.strerror or exc}): fix its permissions, or"
            " move it aside to start a new GPU history for this host"
        ) from None
    if len(data) > MAX_LEDGER_BYTES:
        raise LedgerError(
            f"the GPU ledger {path} is larger than {MAX_LEDGER_BYTES // 2**20} MiB, which this tool"
            " never writes: move it aside or delete it to start a new GPU history for this host"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise LedgerError(
            f"the GPU ledger {path} is not UTF-8 text: move it aside or delete it to start a new GPU"
            " history for this host"
        ) from None


def load(directory: Path, host: str) -> list[LedgerEntry]:
    """The recorded runs of `host`, oldest first ([] when none is recorded); LedgerError when its
    file is corrupt or unreadable."""
    path = ledger_path(directory, host)
    text = _read(path)
    return [] if text is None else list(_parse_once(text, path, host)[1])


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """An exclusive flock of `directory/.lock` (another process recording meanwhile waits)."""
    directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(directory / ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # (closing drops the flock)


def record(directory: Path, entry: LedgerEntry, keep: int = KEEP_RUNS) -> Path:
    """Append one run to its host's ledger, keeping the last `keep` runs; returns the file.
    LedgerError when the existing file is corrupt (it is left as it is); OSError when the
    directory cannot be written."""
    path = ledger_path(directory, entry.host)
    with _locked(directory):
        text = _read(path)
        runs = [] if text is None else _parse_once(text, path, entry.host)[1]
        runs = [*runs, entry][-max(1, keep) :]
        atomicfile.write_text(path, _text(entry.host, runs), mode=0o644, prefix=".ledger.")
    return path


def _text(host: str, runs: list[LedgerEntry]) -> str:
    """A ledger file's text: its head, then one run per line (json's C encoder; indent= takes
    the pure-Python one, ~25 times slower: 10 ms and more a host for 50 recorded runs)."""
    head = json.dumps({"schema": SCHEMA, "host": host})[:-1]
    body = ",\n ".join(json.dumps(_entry_json(r)) for r in runs)
    return f'{head}, "runs": [\n {body}\n]}}\n'


# parsed files by (path, inode, size, mtime): the hosts of one run each read every other host's
# ledger, so each file is parsed once per change rather than once per host
_CACHE: dict[Path, tuple[tuple[int, int, int], str, list[LedgerEntry]]] = {}
_CACHE_LOCK = threading.Lock()


def _parsed(path: Path) -> tuple[str, list[LedgerEntry]] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise LedgerError(f"the GPU ledger {path} cannot be read ({exc.strerror or exc})") from None
    key = (st.st_ino, st.st_size, st.st_mtime_ns)
    with _CACHE_LOCK:
        hit = _CACHE.get(path)
    if hit is not None and hit[0] == key:
        return hit[1], hit[2]
    text = _read(path)
    if text is None:
        return None
    owner, entries = _parse_once(text, path)
    with _CACHE_LOCK:
        _CACHE[path] = (key, owner, entries)
    return owner, entries


# the last text parsed of each ledger file, with what parse() made of it: a host's ledger is
# read three times a run (load, the hosts' listing, record), and parse() is a pure function of
# the text (and the host it must be of), so the same text is parsed once (~1-3 ms for 50 runs
# of an 8-GPU box); one entry per file, as _CACHE
_PARSES: dict[Path, tuple[str, str, list[LedgerEntry]]] = {}


def _parse_once(text: str, path: Path, host: str | None = None) -> tuple[str, list[LedgerEntry]]:
    """parse(text, path, host), the entries shared with the callers before (none changes them)."""
    with _CACHE_LOCK:
        hit = _PARSES.get(path)
    if hit is not None and hit[0] == text and (host is None or hit[1] == host):
        return hit[1], hit[2]
    owner, entries = parse(text, path, host)
    with _CACHE_LOCK:
        _PARSES[path] = (text, owner, entries)
    return owner, entries


@dataclass(frozen=True)
class _Listing:
    """The ledger directory as read at `taken` (epoch seconds): each readable file's owner and
    runs, and a sentence per file that could not be read."""

    taken: float
    files: tuple[tuple[Path, str, list[LedgerEntry]], ...]
    problems: tuple[tuple[Path, str], ...]


# the last listing of each ledger directory: the hosts of a run share one (each host had read
# the whole directory: quadratic in the hosts of a run)
_LISTINGS: dict[Path, _Listing] = {}
_LISTING_LOCK = threading.Lock()


def _read_listing(directory: Path) -> _Listing:
    taken = time.time()  # (before the listing: every file renamed into place before it is in it)
    files: list[tuple[Path, str, list[LedgerEntry]]] = []
    problems: list[tuple[Path, str]] = []
    try:
        paths = sorted(p for p in directory.glob("*.json") if not p.name.startswith("."))
    except OSError:
        paths = []
    for path in paths:
        try:
            parsed = _parsed(path)
        except LedgerError as exc:
            problems.append((path, str(exc)))
            continue
        if parsed is not None:
            files.append((path, *parsed))
    return _Listing(taken, tuple(files), tuple(problems))


def _listing(directory: Path, before: float) -> _Listing:
    """The directory's files as read at or after `before`: the last listing when it was read
    then (the other hosts of this run read it already), else a new one. A run recorded before
    `before` was in its file by then (a file written later holds runs of `before` or later)."""
    with _LISTING_LOCK:
        last = _LISTINGS.get(directory)
        if last is None or last.taken < before:
            last = _LISTINGS[directory] = _read_listing(directory)
        return last


def last_runs_of_other_hosts(
    directory: Path, host: str, before: float
) -> tuple[dict[str, LedgerEntry], list[str]]:
    """Each other host's last run recorded before `before` (epoch seconds: when this run
    started, by this machine's clock), by host name, and a sentence per ledger file that could
    not be read (skipped, never fatal to this host). The hosts of one run read the directory
    once (`_listing`): what their own hosts record during the run is of `before` or later."""
    listing = _listing(directory, before)
    own = ledger_path(directory, host)
    found: dict[str, LedgerEntry] = {}
    for path, owner, entries in listing.files:
        if path == own or owner == host:
            continue
        # (the last run before `before`, in the file's order: found from its end, where it is)
        last = next((e for e in reversed(entries) if e.time < before), None)
        if last is not None:
            found[owner] = last
    return found, [problem for path, problem in listing.problems if path != own]


def new_entry(
    host: str,
    gpus: tuple[GpuIdentity, ...],
    acceptance: Outcome,
    failed_rules: Iterable[str] = (),
    check_mode: bool = False,
    when: float | None = None,
) -> LedgerEntry:
    """A run record stamped now (or at `when`)."""
    now = time.time() if when is None else when
    return LedgerEntry(
        host=host,
        time=now,
        date=rfc3339(now),
        gpus=gpus,
        acceptance=acceptance,
        failed_rules=tuple(failed_rules),
        check_mode=check_mode,
    )
