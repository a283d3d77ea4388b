"""Step `disk_speed`: sequential write (+fsync) and read of a checkpoint-sized file on the data
disk (sh/prove_disk.sh: fio when present, else dd), stopped with the SSH session, its file
removed on every exit; the rules (GB/s, which filesystem, the page cache) and the checkpoint
time estimate are pure functions over the script's parsed output."""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Mapping
from typing import Any

from gpuonboard import sh, shell
from gpuonboard.errors import UsageError
from gpuonboard.steps.base import Check, Plan, Step, StepArgsError, StepContext, Verdict, truthy
from gpuonboard.steps.prove.launch import _float_arg, _get, host_bound
from gpuonboard.steps.prove.rules import _summary
from gpuonboard.units import format_bytes, parse_size

MiB = 1 << 20


BYTES_PER_PARAM_WEIGHTS = 2  # bf16 weights


BYTES_PER_PARAM_FULL = 14  # bf16 weights + fp32 master copy + Adam m and v (4 + 4 + 4)


DISK_FILE = ".gpuonboard-disk"  # test file: <dir>/.gpuonboard-disk.<host>.<shell pid>.<token>.XXXXXX


RAM_FILESYSTEMS = ("tmpfs", "ramfs")


CACHED_READ_SHARE = 0.1  # more of the file than this in the page cache before the read: not a disk figure


def disk_file_blocks(size_mib: int) -> int:
    """The disk test file's size in 4 MiB blocks (at least one) for a requested size in MiB."""
    return max(1, size_mib // 4)


def disk_script(directory: str, size_mib: int, use_fio: bool = True, token: str = "run") -> str:
    """Remote shell text: sequential write (+fsync) then read of one file in `directory`,
    fio when present else dd; prints `TOOL`, `FS type source mountpoint`, `SIZE bytes`, `DIRECT`, `WRITE bytes
    ns`, `READ bytes ns` (dd) or fio's JSON between `##FIO-WRITE`/`##FIO-READ` markers, and the
    file's bytes in the page cache after the write / before the read (`CACHED_AFTER_WRITE`,
    `CACHED_BEFORE_READ`, when `fincore` exists; the cache is dropped for the file in between).
    Removes its file on every exit it can trap, and first removes the files that earlier runs on
    this host left (their shell is gone: SIGKILL, a reboot), printing `SWEPT bytes` for each.
    `token` (letters/digits) is in the file name, so the caller can remove it by pattern."""
    count = disk_file_blocks(size_mib)
    fio = "true" if use_fio else "false"
    # the values prove_disk.sh reads, as shell words before it (the first line of the script)
    values = f"D={shell.quote(directory)}; N={count}; T={shell.quote(token)}; FIO={fio}"
    return f"{values}; BASE={shell.quote(DISK_FILE)}\n" + sh.load("prove_disk")


def _fio_job(text: str, kind: str) -> dict[str, Any] | None:
    """fio's JSON (stderr lines may come before or after it) -> the job's `read`/`write` part."""
    start = text.find("{")
    if start < 0:
        return None
    try:
        data, _ = json.JSONDecoder().raw_decode(text[start:])
        job = data["jobs"][0][kind]
    except (ValueError, KeyError, IndexError, TypeError):
        return None
    return job if isinstance(job, dict) else None


def parse_disk(stdout: str) -> dict[str, Any]:
    """`disk_script` output -> {tool, direct, write_gbps, read_gbps, bytes (the file's size), fs,
    swept, dropped, cached_after_write, cached_before_read} (GB/s = 1e9 B/s)."""
    out: dict[str, Any] = {"tool": None, "direct": None, "write_gbps": None, "read_gbps": None}
    for line in stdout.splitlines():
        word, _, rest = line.partition(" ")
        if word == "ERR":
            out["error"] = rest
        elif word == "TOOL":
            out["tool"] = rest.strip()
        elif word == "DIRECT":
            out["direct"] = rest.strip() == "1"
        elif word == "DROPPED":
            out["dropped"] = rest.strip() == "1"
        elif word == "FS":
            fstype, _, where = rest.partition(" ")
            source, _, mount = where.partition(" ")
            out["fs"] = {"type": fstype, "source": source, "mount": mount}
        elif word in ("SWEPT", "SIZE", "CACHED_AFTER_WRITE", "CACHED_BEFORE_READ") and (
            rest.strip().isdecimal()
        ):
            if word == "SWEPT":
                out.setdefault("swept", []).append(int(rest))
            elif word == "SIZE":
                out["bytes"] = int(rest)
            else:
                out[word.lower()] = int(rest)
        elif word in ("WRITE", "READ"):
            parts = rest.split()
            if len(parts) != 2 or not all(p.isdecimal() for p in parts):
                continue
            nbytes, ns = int(parts[0]), int(parts[1])
            out["bytes"] = nbytes
            out[f"{word.lower()}_gbps"] = nbytes / (ns / 1e9) / 1e9 if ns > 0 else None
    if out["tool"] == "fio":
        for kind in ("write", "read"):
            m = re.search(rf"##FIO-{kind.upper()}\n(.*?)\n##FIO-", stdout, re.S)
            job = _fio_job(m.group(1), kind) if m else None
            if job is None:
                continue
            if job.get("bw_bytes") is not None:
                bw = float(job["bw_bytes"])
            elif job.get("bw") is not None:  # fio 2.x: KiB/s only
                bw = float(job["bw"]) * 1024
            else:
                continue
            out[f"{kind}_gbps"] = bw / 1e9 if bw > 0 else None
            if "bytes" not in out and job.get("bw_bytes") is not None:  # (fio 2.x: io_bytes in KiB)
                out["bytes"] = int(job.get("io_bytes") or 0)
    return out


def disk_failure(directory: str, why: str, size: int) -> str:
    """The step's sentence for a disk test that stopped with `why` (the script's ERR text)."""
    what = f"disk test in {directory} failed"
    file = f"the {format_bytes(size)} test file"
    if "No space left on device" in why:
        return (
            f"{what}: the disk filled up while {file} was written ({why}); the test file was removed."
            " Something else is writing there, or not all the free space df reports is usable:"
            " free space there or set vars.disk_test_size smaller"
        )
    if "quota exceeded" in why.lower():
        return (
            f"{what}: a disk quota stopped {file} although df shows enough free space ({why});"
            " the test file was removed. Raise the quota or set vars.disk_test_size smaller"
        )
    return f"{what}: {why}"


def _fmt_s(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min"


def _share(cached: Any, total: Any) -> float | None:
    """The part of the test file that was in the page cache (None when not measured)."""
    if not isinstance(cached, int) or not total:
        return None
    return min(1.0, cached / float(total))


def disk_fs_check(d: Mapping[str, Any], directory: str, data_disk: str | None) -> Check | None:
    """Which filesystem the figures are of: memory (tmpfs) fails, the system disk when the order
    has a data disk warns; None when the script did not say (an older recording)."""
    fs = d.get("fs")
    if not isinstance(fs, Mapping):
        return None
    fstype, source, mount = str(fs.get("type")), str(fs.get("source")), str(fs.get("mount"))
    actual = f"{directory} is on {source} ({fstype}) mounted at {mount}"
    if fstype in RAM_FILESYSTEMS:
        return Check(
            "disk_device",
            "a disk",
            f"{actual}: memory, not a disk",
            "fail",
            "these figures are RAM speed, and what is written there is gone after a reboot: point"
            " vars.disk_test_dir at a directory on the data disk (or ask the vendor why the data"
            " disk is a tmpfs)",
        )
    if data_disk and data_disk != "/" and mount == "/":
        return Check(
            "disk_device",
            f"the data disk at {data_disk}",
            f"{actual}: the system disk",
            "warn",
            f"these figures are the system disk's: the order's data disk is not mounted at {data_disk}"
            " (see the data_disk rule), or vars.disk_test_dir points at the system disk",
        )
    return Check("disk_device", "(information)", actual, "pass")


def disk_checks(
    d: Mapping[str, Any],
    params: int | None,
    min_gbps: float,
    directory: str = "",
    data_disk: str | None = None,
) -> list[Check]:
    """Rules over a parsed disk measurement (pure)."""
    checks: list[Check] = []
    size = d.get("bytes")
    after_write = _share(d.get("cached_after_write"), size)
    before_read = _share(d.get("cached_before_read"), size)
    direct = bool(d.get("direct"))
    ignored = direct and after_write is not None and after_write > 0.5
    if ignored:
        mode = "O_DIRECT ignored by this filesystem: buffered, fsync'd"
    else:
        mode = "direct I/O" if direct else "buffered (no O_DIRECT here)"
    tool = f"{d.get('tool')}, {mode}"
    fs_check = disk_fs_check(d, directory, data_disk)
    if fs_check is not None:
        checks.append(fs_check)
    for kind in ("write", "read"):
        gbps = d.get(f"{kind}_gbps")
        if gbps is None:
            checks.append(Check(f"disk_{kind}", f">= {min_gbps} GB/s", "not measured", "warn"))
            continue
        actual = f"{gbps:.2f} GB/s sequential ({format_bytes(size)}, {tool})"
        note = ""
        verdict: Verdict = "pass" if gbps >= min_gbps else "warn"
        if verdict == "warn":
            note = (
                f"slow {kind}s make every checkpoint (and a resume) expensive; a local NVMe data disk"
                " writes 1-3 GB/s"
            )
        if kind == "read" and before_read is not None and before_read > CACHED_READ_SHARE:
            actual += f"; {before_read:.0%} of the file was in the page cache when the read began"
            verdict, note = (
                "warn",
                "not a disk figure: the read came from memory (the page cache could not be dropped"
                " for the test file here); judge the disk by disk_write",
            )
        elif kind == "read" and before_read is None and not (direct and not ignored) and not d.get("dropped"):
            verdict, note = (
                "warn",
                "read may come from the page cache (no direct I/O, and the file's cache could not"
                " be dropped): treat as an upper bound, not a disk figure",
            )
        checks.append(Check(f"disk_{kind}", f">= {min_gbps} GB/s", actual, verdict, note))
    wr = d.get("write_gbps")
    if params and wr:
        w = params * BYTES_PER_PARAM_WEIGHTS
        full = params * BYTES_PER_PARAM_FULL
        checks.append(
            Check(
                "checkpoint_time",
                "(information)",
                f"{params / 1e9:g}B params: weights {format_bytes(w, binary=False)} in"
                f" {_fmt_s(w / (wr * 1e9))}; with Adam state {format_bytes(full, binary=False)} in"
                f" {_fmt_s(full / (wr * 1e9))}",
                "pass",
            )
        )
    return checks


def disk_command(directory: str, script: str, token: str, timeout: float) -> str:
    """The one remote command: the script under the host's `timeout` (a little less than the
    step's wait), stopped with the SSH session that started it (`shell.until_session_ends`); a
    script killed before its own trap ran has its test file removed by name then."""
    inner = shell.join(["timeout", str(max(1, int(host_bound(timeout)))), "sh", "-c", script])
    leftover = f"rm -f -- {shell.quote(directory.rstrip('/') or '/')}/{DISK_FILE}.*.{token}.*"
    return shell.sh_c("trap '' PIPE\n" + shell.until_session_ends(inner, stop_kill=leftover))


class DiskSpeedStep(Step):
    """Sequential write (+fsync) and read of a checkpoint-sized file on the data disk."""

    name = "disk_speed"
    read_only = True
    ARGS = {
        "dir": "directory to test (default: vars.disk_test_dir, else the order's data_disk mount)",
        "size": "file size (default: vars.disk_test_size, else 4GiB)",
        "model_params": "model size for the checkpoint estimate, e.g. 7B (default: vars.model_params)",
        "min_gbps": "warn below this many GB/s (default 0.5)",
        "fio": "use fio when present (default true)",
        "timeout": "seconds before giving up (default 900)",
    }

    def plan(self, ctx: StepContext) -> Plan:
        """Write, fsync, read, remove; judge GB/s and the checkpoint time."""
        from gpuonboard.steps.prove.planner import parse_params

        v = ctx.host.vars
        order_disk = ctx.host.order.data_disk
        directory = _get(self.args, v, "dir", "disk_test_dir", order_disk.mount if order_disk else "")
        if not directory:
            return Plan(False, "no directory to test: set vars.disk_test_dir or order data_disk", failed=True)
        try:
            size = parse_size(_get(self.args, v, "size", "disk_test_size", "4GiB"))
            min_gbps = _float_arg(self, v, "min_gbps", "disk_min_gbps", 0.5)
            timeout = _float_arg(self, v, "timeout", "disk_timeout", 900)
            raw_params = _get(self.args, v, "model_params", "model_params", "")
            params = parse_params(str(raw_params)) if raw_params else None
            use_fio = truthy(_get(self.args, v, "fio", "disk_use_fio", True), "fio")
        except (StepArgsError, UsageError, ValueError) as exc:
            return Plan(False, f"bad disk_speed setting: {exc}", failed=True)
        if ctx.check:
            return Plan(False, f"check mode: the disk test of {directory} was not run")
        size_mib = max(4, size // MiB)
        token = secrets.token_hex(6)
        script = disk_script(str(directory), size_mib, use_fio, token)
        r = ctx.runner.run(disk_command(str(directory), script, token, timeout), timeout=timeout)
        d = parse_disk(r.stdout)
        if r.exit_code == 124 and not d.get("error"):
            return Plan(
                False,
                f"disk test in {directory} did not finish within {max(1, int(host_bound(timeout)))} s and"
                f" was stopped on the host (its test file removed): a very slow or hung disk; raise"
                f" vars.disk_timeout (now {timeout:.0f} s) or set vars.disk_test_size smaller",
                failed=True,
            )
        if d.get("error") or not r.ok:
            why = d.get("error") or (r.stderr.strip().splitlines() or [f"exit {r.exit_code}"])[-1]
            size_made = disk_file_blocks(size_mib) * 4 * MiB
            return Plan(False, disk_failure(str(directory), why, size_made), failed=True)
        checks = disk_checks(d, params, min_gbps, str(directory), order_disk.mount if order_disk else None)
        msg, failed = _summary(f"disk {directory}", checks)
        swept = d.get("swept") or []
        if swept:
            msg += (
                f"; removed {len(swept)} test file(s) ({format_bytes(sum(swept))}) that an earlier"
                f" interrupted disk test left in {directory}"
            )
        return Plan(False, msg, checks=checks, failed=failed, diff={"result": {**d, "dir": directory}})
