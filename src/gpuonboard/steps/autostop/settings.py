"""The autostop step's arguments and host vars, validated: durations, max-hours, the process to
watch, the billing mode, the shutdown command (AutostopSettings, parse_settings), the vars a
host may set (check_vars), and the config file the watcher sources (AutostopSettings.conf_text).
Each error names the argument. Pure.
"""

from __future__ import annotations

import math
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpuonboard import masking, shell, termtext
from gpuonboard.steps.base import StepArgsError, truthy
from gpuonboard.units import parse_duration, rfc3339

CRON_MODES = ("auto", "cron.d", "crontab")
DURATION_ARGS = {
    "idle": "30m",
    "grace": "5m",
    "heartbeat": "0",
    "margin": "5m",
    "before_timeout": "10m",
}
MAX_DURATION = 366 * 86400  # any duration flag: at most 366d (shell arithmetic stays far from overflow)
MIN_HEARTBEAT = 300  # a heartbeat shorter than 5m is a typo (`--heartbeat 6` is 6 seconds)
MIN_MAX_HOURS, MAX_MAX_HOURS = 0.25, 8760.0
PID_MAX = 4194304  # Linux's PID_MAX_LIMIT
BILLING_UNITS = ("second", "minute", "hour")  # as a vendor profile's `billing.unit` takes them


def _seconds(value: Any, name: str) -> int:
    try:
        seconds = parse_duration(value)
    except ValueError as exc:
        raise StepArgsError(f"argument {name!r}: {exc}") from None
    if not seconds <= MAX_DURATION:  # also catches inf/nan from a number with hundreds of digits
        raise StepArgsError(f"argument {name!r} must be at most 366d, not {value!r}")
    return int(round(seconds))


def _check_path(value: str, name: str) -> str:
    if not value:
        return value
    if not posixpath.isabs(value):
        raise StepArgsError(f"argument {name!r} must be an absolute path, not {value!r}")
    # cron reads '%' as a newline in a command, and a newline would end the entry
    if any(c in value for c in "%\n\r"):
        raise StepArgsError(f"argument {name!r} must not contain '%' or a line break: {value!r}")
    return posixpath.normpath(value)


# Host vars the autostop steps take (see autostop.HOST_PATHS), and what each must be.
TEXT_VARS = ("autostop_dir", "cron_dir", "autostop_cron")


def check_vars(host_vars: Mapping[str, Any], shutdown: bool) -> None:
    """The host's autostop vars are texts (a YAML `key:` with no value is null, which the
    playbook renders as the text 'None': a shutdown command 'None' never shut anything down),
    and the shutdown command a non-blank line; the error names the var."""
    names = TEXT_VARS + (("autostop_shutdown_command",) if shutdown else ())
    for name in names:
        if name not in host_vars:
            continue
        value = host_vars[name]
        if not isinstance(value, str):
            what = _kind_of(value)
            raise StepArgsError(f"vars.{name} must be a text, not {what}; set it or remove it")
        if name == "autostop_shutdown_command" and not value.strip():
            raise StepArgsError(
                f"vars.{name} is blank; give the command that powers the box off, or remove it to use"
                " the vendor's shutdown_command"
            )
    if shutdown and "autostop_billing_anchor" in host_vars:
        anchor = host_vars["autostop_billing_anchor"]
        if _whole(anchor) is None:
            raise StepArgsError(
                f"vars.autostop_billing_anchor must be epoch seconds (a whole number), not {anchor!r}"
            )


def _kind_of(value: Any) -> str:
    """A YAML value's kind, as the user wrote it."""
    if value is None:
        return "null (a key with no value)"
    if isinstance(value, bool):
        return f"{str(value).lower()} (a yes/no)"
    if isinstance(value, int | float):
        return f"a number ({value!r})"
    if isinstance(value, Mapping):
        return "a mapping"
    return "a list" if isinstance(value, list | tuple) else repr(value)


@dataclass(frozen=True)
class AutostopSettings:
    """Validated watcher settings (seconds as ints)."""

    idle: int
    grace: int
    heartbeat: int
    margin: int
    before_timeout: int
    max_seconds: int
    job: str
    pid: str
    container: str
    before_shutdown: str
    force: bool
    billing_aware: bool
    billing_anchor: int
    gpu_threshold: int
    ssh_sessions: bool
    shutdown_command: str
    gpu_processes: bool = False
    # why billing-aware is on or off, for `status` (see billing_mode): "auto" (from the vendor's
    # billing unit), "on" or "off" (asked for); the unit ("" where the profile names none) and
    # the vendor profile it came from
    billing_set: str = "auto"
    billing_unit: str = ""
    billing_vendor: str = ""
    # whether the vendor stops billing a box its OS powered off (profile `billing.after_poweroff`:
    # "stops", "continues"; "" where it does not say): checked at install, not written to the host
    after_poweroff: str = ""
    # where the installing login found these (cron's PATH may lack their directories); "" when not
    nvidia_smi: str = ""
    docker: str = ""
    # how many GPUs the install's utilisation query read a number for (0: not known): the
    # watcher uses the readings of an nvidia-smi that exits non-zero only when all are there
    gpu_count: int = 0
    # the --pid process as the install found it: its start time in clock ticks since boot
    # (/proc/PID/stat, field 22) and the boot (its boot_id); "" where it could not be read. A
    # pid names that process only: after a reboot, or once a later process got the pid, the
    # watched one has ended, and the box is not kept up by whatever holds the number now
    pid_start: str = ""
    pid_boot: str = ""

    @property
    def shutdown_shown(self) -> str:
        """The shutdown command as messages show it (a token in it masked: masking.command_shown)."""
        return masking.command_shown(self.shutdown_command)

    @property
    def mask_words(self) -> list[str]:
        """masking.command_secrets of both commands, longest first."""
        words = {
            *masking.command_secrets(self.before_shutdown),
            *masking.command_secrets(self.shutdown_command),
        }
        return sorted(words, key=lambda w: (-len(w), w))

    def conf_text(self) -> str:
        """The shell-sourceable config file; every value quoted."""
        values: list[tuple[str, object]] = [
            ("IDLE", self.idle),
            ("GRACE", self.grace),
            ("HEARTBEAT", self.heartbeat),
            ("MARGIN", self.margin),
            ("BEFORE_TIMEOUT", self.before_timeout),
            ("MAX_SECONDS", self.max_seconds),
            ("JOB", self.job),
            ("PID", self.pid),
            ("CONTAINER", self.container),
            ("BEFORE_SHUTDOWN", self.before_shutdown),
            # (how `status` and the log show the two commands: a token in one stays masked)
            ("BEFORE_SHOWN", masking.command_shown(self.before_shutdown) if self.before_shutdown else ""),
            ("FORCE", int(self.force)),
            ("BILLING_AWARE", int(self.billing_aware)),
            ("BILLING_ANCHOR", self.billing_anchor),
            ("BILLING_SET", self.billing_set),
            ("BILLING_UNIT", self.billing_unit),
            ("BILLING_VENDOR", self.billing_vendor),
            ("GPU_THRESHOLD", self.gpu_threshold),
            ("SSH_SESSIONS", int(self.ssh_sessions)),
            ("GPU_PROCESSES", int(self.gpu_processes)),
            ("SHUTDOWN_COMMAND", self.shutdown_command),
            ("SHUTDOWN_SHOWN", self.shutdown_shown),
            # the words of either that may be a secret, apart by \x1f (one line: the probes read
            # keys by line): `--status` scrubs what it shows of them (a command's own output)
            ("MASK_WORDS", "\x1f".join(w for w in self.mask_words if "\x1f" not in w)),
            ("NVIDIA_SMI", self.nvidia_smi),
            ("DOCKER", self.docker),
        ]
        if self.gpu_count:
            values.append(("GPU_COUNT", self.gpu_count))
        if self.pid and self.pid_start:
            values.append(("PID_START", self.pid_start))
        if self.pid and self.pid_boot:
            values.append(("PID_BOOT", self.pid_boot))
        lines = ["# gpuonboard autostop settings (written by `invoke autostop`; rerun it to change them)"]
        lines += [f"{k}={shell.quote(v)}" for k, v in values]
        return "\n".join(lines) + "\n"


def parse_settings(args: Mapping[str, Any]) -> AutostopSettings:
    """Validate the watcher arguments; each error names the argument."""
    secs = _durations(args)
    max_hours = _max_hours(args.get("max_hours"))
    job, pid, container = _target(args)
    threshold = _gpu_threshold(args.get("gpu_threshold"))
    raw_anchor = args.get("billing_anchor") or 0
    anchor = _whole(raw_anchor)
    if anchor is None:
        raise StepArgsError(f"argument 'billing_anchor' must be epoch seconds (digits), not {raw_anchor!r}")
    _check_grace(secs, max_hours, args)
    billing_set, billing_unit = billing_mode(args)
    billing_aware = billing_set == "on" or (billing_set == "auto" and billing_unit == "hour")
    after_poweroff = str(args.get("billing_after_poweroff") or "").strip()
    if after_poweroff not in ("", "stops", "continues"):
        raise StepArgsError(
            f"argument 'billing_after_poweroff' must be stops, continues or empty, not {after_poweroff!r}"
        )
    shutdown_command = _shutdown_command(args)
    return AutostopSettings(
        idle=secs["idle"],
        grace=secs["grace"],
        heartbeat=secs["heartbeat"],
        margin=secs["margin"],
        before_timeout=max(1, secs["before_timeout"]),
        max_seconds=int(round(max_hours * 3600)),
        job=job,
        pid=pid,
        container=container,
        before_shutdown=str(args.get("before_shutdown") or ""),
        force=truthy(args.get("force", False), "force"),
        billing_aware=billing_aware,
        billing_anchor=anchor,
        billing_set=billing_set,
        billing_unit=billing_unit,
        # (a vendor id is a file name: one line of printable text in the config and `status`)
        billing_vendor=termtext.for_terminal(str(args.get("billing_vendor") or ""), keep=""),
        after_poweroff=after_poweroff,
        gpu_threshold=threshold,
        ssh_sessions=truthy(args.get("ssh_sessions", False), "ssh_sessions"),
        shutdown_command=shutdown_command,
        gpu_processes=truthy(args.get("gpu_processes", False), "gpu_processes"),
    )


def _durations(args: Mapping[str, Any]) -> dict[str, int]:
    """The duration arguments in seconds, each within its bounds."""
    secs = {k: _seconds(args.get(k, d) or d, k) for k, d in DURATION_ARGS.items()}
    if secs["idle"] < 60:
        raise StepArgsError(
            f"argument 'idle' must be at least 1m (cron checks once a minute), not {args['idle']!r}"
        )
    if secs["margin"] >= 3600:
        raise StepArgsError(f"argument 'margin' must be less than an hour, not {args['margin']!r}")
    if secs["before_timeout"] < 1:  # (`timeout 0 CMD` means no limit at all)
        raise StepArgsError(
            "argument 'before_timeout' must be at least 1s (0 would mean no limit),"
            f" not {args['before_timeout']!r}"
        )
    if 0 < secs["heartbeat"] < MIN_HEARTBEAT:
        raise StepArgsError(
            "argument 'heartbeat' must be at least 5m (a bare number counts as seconds: write 6h"
            f" for six hours), not {args['heartbeat']!r}"
        )
    return secs


def _target(args: Mapping[str, Any]) -> tuple[str, str, str]:
    """(job, pid, container): what the watcher waits for, at most one of them."""
    pid = str(args.get("pid") or "")
    if pid and not pid.isdecimal():
        raise StepArgsError(f"argument 'pid' must be a process id (digits), not {pid!r}")
    if pid and not 2 <= int(pid) <= PID_MAX:
        raise StepArgsError(
            f"argument 'pid' must be a process id from 2 to {PID_MAX} (0 and 1 are always alive,"
            f" so the box would never count as idle), not {pid!r}"
        )
    job, container = str(args.get("job") or ""), str(args.get("container") or "")
    if sum(bool(x) for x in (job, pid, container)) > 1:
        raise StepArgsError("give only one of the arguments 'job', 'pid' and 'container'")
    return job, pid, container


def _gpu_threshold(raw: Any) -> int:
    """The GPU busy threshold, a whole percentage from 0 to 99 (5 when not given)."""
    threshold = _whole(raw if raw not in (None, "") else 5)
    # (a GPU counts as busy ABOVE the threshold: at 100 none ever would, and a box whose only
    # sign of work is a GPU at 100 % was shut down as idle mid-training)
    if threshold is None or not 0 <= threshold <= 99:
        never = (
            " (a GPU counts as busy above it: above 100 none ever would, so a box training at 100 %"
            " would be shut down as idle)"
            if threshold == 100
            else ""
        )
        raise StepArgsError(
            f"argument 'gpu_threshold' must be a whole percentage from 0 to 99{never}, not {raw!r}"
        )
    return threshold


def _shutdown_command(args: Mapping[str, Any]) -> str:
    """The power-off command: one line, not blank."""
    shutdown_command = str(args.get("shutdown_command") or "shutdown -h now")
    if "\n" in shutdown_command or "\r" in shutdown_command:
        raise StepArgsError("argument 'shutdown_command' must be one line")
    if not shutdown_command.strip():
        # `sh -c "  "` succeeds: the watcher would log a shutdown and the box would keep running
        raise StepArgsError("argument 'shutdown_command' must be a command, not blank")
    return shutdown_command


def billing_mode(args: Mapping[str, Any]) -> tuple[str, str]:
    """("auto" | "on" | "off", the billing unit or ""): billing-aware is asked for (on/off), or
    follows the vendor's billing unit (auto). The unit is "" where the vendor profile names none:
    an unknown unit is never taken for hourly billing (which would keep an idle box up to the end
    of an hour that may not be paid at all)."""
    unit = str(args.get("billing_unit") or "").strip()
    if unit not in ("", *BILLING_UNITS):
        raise StepArgsError(
            f"argument 'billing_unit' must be one of {', '.join(BILLING_UNITS)}, not {unit!r}"
        )
    billing = str(args.get("billing_aware", "auto")).strip().lower()
    if billing == "auto":
        return "auto", unit
    return ("on" if truthy(billing, "billing_aware") else "off"), unit


def _whole(value: Any) -> int | None:
    """A whole number written in ASCII digits (int() also takes '1_0', ' 7 ' and other scripts' digits)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    text = str(value).strip()
    return int(text) if re.fullmatch(r"[0-9]+", text) else None


def _check_grace(secs: Mapping[str, int], max_hours: float, args: Mapping[str, Any]) -> None:
    """A hard trigger warns `grace` before its deadline and acts at it: a grace as long as the
    deadline itself would put the shutdown later than the install message says (and a grace of
    366d would disable max-hours)."""
    grace = secs["grace"]
    limits = (("max_hours", int(round(max_hours * 3600))), ("heartbeat", secs["heartbeat"]))
    for name, limit in limits:
        if limit > 0 and grace >= limit:
            raise StepArgsError(
                f"argument 'grace' must be shorter than argument {name!r} ({_fmt_span(limit)}), not"
                f" {args.get('grace') or DURATION_ARGS['grace']!r}: the warning goes out one grace period"
                " before that deadline"
            )


_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[+-]?(nan|inf|infinity)", re.I)


def _max_hours(value: Any) -> float:
    """`max_hours` as a float: 0 (off) or a finite number of hours in the allowed range."""
    text = str(value if value is not None else "").strip()
    try:
        if text and not _NUMBER.fullmatch(text):  # float() also takes '1_0' (10) and other digits
            raise ValueError(text)
        hours = float(text or 0)
    except (TypeError, ValueError):
        raise StepArgsError(f"argument 'max_hours' must be a number of hours, not {value!r}") from None
    if hours == 0:
        return 0.0
    if not (math.isfinite(hours) and MIN_MAX_HOURS <= hours <= MAX_MAX_HOURS):
        raise StepArgsError(
            f"argument 'max_hours' must be a number of hours from {MIN_MAX_HOURS:g} to {MAX_MAX_HOURS:g}"
            f" (or 0 for no deadline), not {text!r}"
        )
    return hours


def _fmt_time(epoch: int) -> str:
    return rfc3339(epoch)


def _fmt_span(seconds: int) -> str:
    """1h02m03s, like the watcher's fmt_span."""
    s = max(0, seconds)
    h, m, r = s // 3600, s % 3600 // 60, s % 60
    if h:
        return f"{h}h{m:02d}m{r:02d}s"
    return f"{m}m{r:02d}s" if m else f"{r}s"
