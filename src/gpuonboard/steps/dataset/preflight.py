"""Before the first byte: room on the host's disks for what an upload adds (the data dir's,
and --decrypt-to's own), and the ETA, from the configured link speed or a short throughput
probe over the upload's master connection; then the live progress lines while it runs."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from gpuonboard import transfer
from gpuonboard.steps.base import Plan, StepArgsError, StepContext
from gpuonboard.steps.dataset.options import DatasetOptions
from gpuonboard.steps.dataset.work import Master
from gpuonboard.transfer import shardstream
from gpuonboard.units import format_bytes

# the preflight's throughput probe runs when the upload would take this long at the configured
# speed: its 2 s are then at most 1 % of the upload (a 1 GiB upload at 100 Mbit/s is not probed)
PROBE_WORTH_S = 200.0


def room(files: Sequence[tuple[int, int]]) -> tuple[int, int]:
    """Pure: (the most an upload adds to the host's disk at any moment, what it adds in the end)
    for files that arrive one after another, each as a whole temp file beside what it replaces
    (its old version, the partial file it resumes from), which goes once it is in place;
    `files` = (bytes it arrives with, bytes it frees then), in rsync's order."""
    peak = grown = 0
    for size, frees in files:
        peak = max(peak, grown + size)
        grown += size - frees
    return max(peak, grown), grown


def old_size(have: tuple[str, int, int] | None) -> int:
    """Pure: the bytes of the regular file a file sent replaces (0: none there)."""
    return have[1] if have is not None and have[0] == "f" else 0


def no_room(ctx: StepContext, opts: DatasetOptions, free: int, need: int, what: str) -> Plan:
    """The failed plan when the data dir's disk has `free` bytes and the upload needs `need`
    (`what`: "for 3 files", with what was counted)."""
    return Plan(
        False,
        f"not enough space under {opts.dest} on {ctx.host.name}:"
        f" {format_bytes(free, binary=True)} free,"
        f" {format_bytes(need, binary=True)} needed {what}; free space first",
        failed=True,
    )


def decrypt_dir_room(
    ctx: StepContext, opts: DatasetOptions, free: int | None, wanted: int, what: str
) -> Plan | None:
    """The failed plan when --decrypt-to's own disk lacks room for `what`; else None."""
    if free is None or free >= wanted:
        return None
    return Plan(
        False,
        f"not enough space under {opts.decrypt_dir} on {ctx.host.name} for {what}:"
        f" {format_bytes(free, binary=True)} free, {format_bytes(wanted, binary=True)} needed;"
        " free space there (or pick another --decrypt-to)",
        failed=True,
    )


def probe_mode(ctx: StepContext, opts: DatasetOptions) -> bool | None:
    """`upload_probe`: True (always), False (never), None (auto); StepArgsError otherwise."""
    value = opts.setting(ctx, "upload_probe", "auto")
    text = str(value).strip().lower()
    if text in ("auto", ""):
        return None
    if value is True or text in ("true", "yes", "on", "1", "always"):
        return True
    if value is False or text in ("false", "no", "off", "0", "never"):
        return False
    raise StepArgsError(f"upload_probe must be auto, true or false, not {value!r}")


def probe_timeout(ctx: StepContext, opts: DatasetOptions) -> float:
    """`upload_probe_timeout`: seconds a probe round may take (default 15); StepArgsError otherwise."""
    value = opts.setting(ctx, "upload_probe_timeout", transfer.PROBE_ROUND_TIMEOUT)
    try:
        seconds = float(value) if not isinstance(value, bool) else -1.0
    except (TypeError, ValueError):
        seconds = -1.0
    if not 0 < seconds < float("inf"):
        raise StepArgsError(f"upload_probe_timeout must be a number of seconds above 0, not {value!r}")
    return seconds


def preflight(ctx: StepContext, opts: DatasetOptions, label: str, need: int, master: Master) -> str:
    """The ETA sentence, shown before the first byte: from a short throughput probe over the
    master connection (up to 16 MiB or 2 s into `cat > /dev/null`) when the upload would take
    at least PROBE_WORTH_S at the configured speed (the probe then costs at most 1 %), and
    `upload_probe` is not false, and no --bwlimit caps the rate; else from the configured
    speed (`upload_mbit`). The live line then shows the measured rate and ETA, and the final
    message the rate really achieved."""
    configured = opts.link_mbit(ctx)
    mode = probe_mode(ctx, opts)
    worth = mode is True or (mode is None and transfer.eta_seconds(need, configured) >= PROBE_WORTH_S)
    mbit = None
    if worth and not opts.bwlimit:
        if ctx.progress:
            ctx.progress(f"step {label}: measuring the upload speed (2 s)")
        cfg, alias, _control, ssh_opts = master
        mbit = transfer.probe_throughput(cfg, alias, timeout=probe_timeout(ctx, opts), ssh_opts=ssh_opts)
    if mbit:
        eta = f"{transfer.format_eta(need, mbit)} (measured)"
    else:
        eta = f"{transfer.format_eta(need, configured)} (configured)"
    if ctx.progress:
        ctx.progress(f"step {label}: {eta}")
    return eta


def space_line(opts: DatasetOptions, room: tuple[int, int], note: str) -> str:
    """Pure: the sentence on the host space an upload needs, stated before its first byte:
    shard mode's own (`note`: the peak with an unpack's temporary tree, what stays after), else
    plain mode's (`room`: the most it adds at any moment, what it adds in the end)."""
    if note:
        return note
    peak, grown = room
    fmt = lambda n: format_bytes(n, binary=True)  # noqa: E731
    plaintext = opts.decrypt_on_host and not opts.decrypt_dir
    what = "the files sent" + (" and their plaintext" if plaintext else "")
    return (
        f"host space: {fmt(peak)} under {opts.dest} at the peak (each file arrives as a temp file"
        f" beside what it replaces), {fmt(grown)} more in the end ({what})"
    )


def rsync_progress(
    label: str, ctx: StepContext, base: list[int] | None = None, total: int = 0
) -> Callable[[transfer.ProgressUpdate], None]:
    """Progress line; with `base` (bytes done by earlier batches) the percent is overall."""

    def show(u: transfer.ProgressUpdate) -> None:
        if not ctx.progress:
            return
        if base is None or not total:  # (the whole upload's size, from rsync's own percent)
            whole = total or (u.bytes * 100 // u.percent if u.percent else 0)
            eta = transfer.upload_eta(u.bytes, whole, u.rate)
            ctx.progress(
                f"step {label}: {u.percent}% {format_bytes(u.bytes, binary=True)}"
                f" {u.rate}{' ' + eta if eta else ''}"
            )
            return
        done = base[0] + u.bytes
        eta = transfer.upload_eta(done, total, u.rate)
        ctx.progress(
            f"step {label}: {min(100, 100 * done // total)}% {format_bytes(done, binary=True)}"
            f" of {format_bytes(total, binary=True)} {u.rate}{' ' + eta if eta else ''}"
        )

    return show


def stream_progress(
    ctx: StepContext, opts: DatasetOptions, label: str, total: int, n_shards: int
) -> tuple[Callable[[int], None], list[int]]:
    """on_bytes callback for shard streams: live percent, rate and shard count; applies
    --bwlimit. -> (the callback, its state: bytes, shard index, last report (ms), bytes of
    this shard)."""
    mbit = transfer.parse_rate_mbit(opts.bwlimit) if opts.bwlimit else None
    throttle = shardstream.Throttle(mbit * 1e6 / 8 if mbit else None)
    state = [0, 0, 0, 0]  # bytes, shard index, last report (ms), bytes of this shard
    start = time.monotonic()

    def on_bytes(n: int) -> None:
        throttle(n)
        state[0] += n
        state[3] += n
        now = time.monotonic()
        if ctx.progress and (now - start) * 1000 - state[2] > 200:
            state[2] = int((now - start) * 1000)
            rate = state[0] / max(now - start, 1e-6)
            eta = transfer.format_duration(max(total - state[0], 0) / rate) if rate > 0 else "?"
            ctx.progress(
                f"step {label}: {min(100, 100 * state[0] // max(total, 1))}%"
                f" {format_bytes(state[0], binary=True)} of {format_bytes(total, binary=True)}"
                f" {rate * 8 / 1e6:.0f} Mbit/s ETA {eta} shard {state[1] + 1}/{n_shards}"
            )

    return on_bytes, state
