"""Preflight of an upload and its pacing: the throughput probe through OpenSSH, rates and ETAs
as the user reads them, and the pipelining of production (encrypting, packing) with sending.

Pure parts (rates, durations, batch sizes) are unit-tested; `probe_throughput` runs ssh.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TypeVar

from gpuonboard import shell

# constant (nothing of ours is interpolated): read a byte count, swallow exactly that many
# bytes, say "got"; the client times each round from its first byte to that answer, so bytes
# still sitting in local buffers are never counted as sent
PROBE_COMMAND = (
    "echo ready && while read -r n; do case $n in ''|*[!0-9]*) exit 1 ;; esac;"
    ' head -c "$n" > /dev/null || exit 1; echo got; done'
)

_PROBE_SENT = shell.login_neutral(PROBE_COMMAND)  # (any login shell reads it alike)


PROBE_MAX_BYTES = 16 * 1024 * 1024


PROBE_MAX_SECONDS = 2.0


PROBE_FIRST_BYTES = 256 * 1024  # round 1; a link slow enough to need 1.5 s for it stops there


PROBE_ROUND_TIMEOUT = 15.0


DEFAULT_MBIT = 100.0  # vars.upload_mbit when nothing was measured


def parse_rate_mbit(value: object) -> float | None:
    """Pure: a rate -> Mbit/s. `93`, `93mbit`, `1gbit`, `500kbit`; rsync --bwlimit style `5m`/`500k`
    (bytes per second in units of 1024, as rsync reads them). None when empty or unreadable."""
    if value in (None, "", False):
        return None
    text = str(value).strip().lower().replace(" ", "")
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(kbit|mbit|gbit|k|m|g|b)?(?:/s|ps)?", text)
    if not m:
        return None
    number, unit = float(m.group(1)), m.group(2) or "mbit"
    bits = {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9}.get(unit)
    if bits is not None:
        return number * bits / 1e6
    scale = {"b": 1, "k": 1024, "m": 1024**2, "g": 1024**3}[unit]
    return number * scale * 8 / 1e6


def eta_seconds(nbytes: int, mbit: float) -> float:
    """Pure: seconds to move nbytes at mbit Mbit/s."""
    return nbytes * 8 / (mbit * 1e6) if mbit > 0 else float("inf")


def format_duration(seconds: float) -> str:
    """Pure: `45 s`, `19 min`, `2 h 05 min`."""
    if seconds == float("inf"):
        return "unknown time"
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    minutes = round(seconds / 60)
    if minutes < 90:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60:02d} min"


def format_eta(nbytes: int, mbit: float) -> str:
    """Pure: `12.4 GiB at 93 Mbit/s ≈ 19 min`."""
    from gpuonboard.units import format_bytes

    rate = f"{mbit:.0f}" if mbit >= 10 else f"{mbit:.1f}" if mbit >= 1 else f"{mbit:.2g}"
    return (
        f"{format_bytes(nbytes, binary=True)} at {rate} Mbit/s ≈ {format_duration(eta_seconds(nbytes, mbit))}"
    )


def probe_throughput(
    config_path: Path,
    alias: str,
    max_bytes: int = PROBE_MAX_BYTES,
    max_seconds: float = PROBE_MAX_SECONDS,
    timeout: float = PROBE_ROUND_TIMEOUT,
    ssh_opts: Sequence[str] = (),
) -> float | None:
    """Mbit/s of incompressible bytes pushed through OpenSSH (same config as rsync; `ssh_opts`:
    e.g. the run's master connection) into the host, which acknowledges each round once it has
    swallowed it all: round 1 sends 256 KiB; unless that took 1.5 s already (a slow link: its
    rate is the answer), round 2 sends what round 1's rate moves in `max_seconds` (1 MiB to
    `max_bytes`), and its rate is the answer. A round is given `timeout` s, after which ssh is
    killed (a stalled host never hangs the run). None when the probe could not run."""
    import select

    proc = subprocess.Popen(
        ["ssh", "-F", str(config_path), *ssh_opts, "-o", "Compression=no", alias, _PROBE_SENT],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout

    def answer(word: bytes, deadline: float) -> bool:
        line = b""
        while not line.endswith(b"\n"):
            ready, _, _ = select.select([stdout], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(stdout.fileno(), 64) if ready else b""
            if not chunk:
                return False
            line += chunk
        return line.strip() == word

    def round_seconds(nbytes: int) -> float | None:
        block = os.urandom(min(nbytes, 256 * 1024))

        def send() -> None:
            with contextlib.suppress(OSError):
                stdin.write(b"%d\n" % nbytes)
                left = nbytes
                while left > 0:
                    stdin.write(block[: min(left, len(block))])
                    left -= min(left, len(block))
                stdin.flush()

        start = time.monotonic()
        writer = threading.Thread(target=send, daemon=True)
        writer.start()
        if not answer(b"got", start + timeout):
            return None
        writer.join()
        return max(time.monotonic() - start, 1e-6)

    try:
        if not answer(b"ready", time.monotonic() + timeout):
            return None
        took = round_seconds(PROBE_FIRST_BYTES)
        if took is None:
            return None
        first = PROBE_FIRST_BYTES * 8 / took / 1e6
        if took >= 1.5:
            return first
        size = min(max_bytes, max(1 << 20, int(PROBE_FIRST_BYTES / took * max_seconds)))
        took = round_seconds(size)
        return size * 8 / took / 1e6 if took is not None else first
    except OSError:
        return None
    finally:
        if proc.poll() is None:
            proc.kill()  # also unblocks a writer stuck on a full pipe
            proc.wait()


T = TypeVar("T")


def pipelined(batches: Iterable[Callable[[], T]], send: Callable[[T], bool]) -> bool:
    """Run each batch's producer (encrypting, packing) in a background thread ONE batch ahead of
    `send` (rsync of the previous batch), so wall time approaches the slower of the two and at most
    two batches are in flight (constant memory: producers write files, not buffers). Stops at the
    first send that returns False; a producer's exception is re-raised here."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:
        it = iter(batches)
        first = next(it, None)
        if first is None:
            return True
        pending = pool.submit(first)
        for producer in it:
            ready = pending.result()
            pending = pool.submit(producer)
            if not send(ready):
                pending.cancel()
                return False
        return send(pending.result())


def batch_sizes(
    sizes: Sequence[int], first: int = 8 * 1024 * 1024, cap: int = 1024**3, max_items: int = 20000
) -> list[int]:
    """Pure: split items (in order) into batches whose byte sizes start small (the upload starts
    early) and double up to `cap` (few rsync runs); returns the item count of each batch."""
    out: list[int] = []
    limit, n, acc = first, 0, 0
    for s in sizes:
        n += 1
        acc += max(s, 0)
        if acc >= limit or n >= max_items:
            out.append(n)
            n, acc, limit = 0, 0, min(cap, limit * 2)
    if n:
        out.append(n)
    return out
