"""The autostop step's read-only probe of a host, in the ONE batched fact probe: the shell
(sh/autostop_state.sh after the values it reads and the functions it calls) and its parser
(_parse_probe -> _Remote: who logs in, the dir, the cron mode, what is installed, the tools).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from gpuonboard import sh, shell
from gpuonboard.facts import slice_signs
from gpuonboard.steps.autostop.render import (
    CONF,
    CRON_MARKER,
    CRON_NAME,
    DEFAULT_ROOT_DIR,
    DEFAULT_USER_DIR,
    OWNED_FILES,
    SCRIPT,
    WATCHER_PATH,
)

NO_CRON_DAEMON = "cron daemon: NOT RUNNING (no cron or crond process): the watcher never runs; start cron"
# sh: `cron_d_unread` prints why no cron daemon reads the cron.d dir $c ("" when one does);
# `crond_state` prints "crond yes" when a cron daemon runs (its process: Debian's cron,
# cronie's/busybox's crond, fcron; or, where /proc hides other users' processes from a non-root
# login, systemd's word for it), "crond no" when pgrep finds none, nothing when it cannot tell.
CRON_DAEMON_FN = sh.load("autostop_cron_daemon").rstrip("\n")


def _probe_name(kind: str, key: str) -> str:
    return f"{kind}:{hashlib.sha1(key.encode('utf-8', 'surrogateescape')).hexdigest()[:10]}"


def _resolve_dir(dir_arg: str) -> str:
    """sh snippet that sets $d: the configured dir, or the default for root / other users."""
    if dir_arg:
        return f"d={shell.quote(dir_arg)}"
    return f'if [ "$(id -u)" = 0 ]; then d={DEFAULT_ROOT_DIR}; else d="{DEFAULT_USER_DIR}"; fi'


def _cron_mode_sh(mode: str, cron_dir: str) -> str:
    """sh snippet that sets $c (the cron.d dir), $mw (why no cron daemon reads it, "" when one
    does: `cron_d_unread`, in CRON_DAEMON_FN, put before it) and $m: cron.d or crontab; `auto`
    takes cron.d as root where a daemon reads it, else the login's crontab (before, the install
    made a missing cron.d dir, said OK, and cron never ran the watcher)."""
    head = f"c={shell.quote(cron_dir)}\nmw=$(cron_d_unread)\n"
    if mode == "auto":
        return head + 'if [ "$(id -u)" = 0 ] && [ -z "$mw" ]; then m=cron.d; else m=crontab; fi'
    return head + f"m={mode}"


@dataclass
class _Remote:
    """What the probe found on the host."""

    uid: str = ""
    user: str = ""
    dir: str = ""
    unsafe: tuple[str, str] | None = None  # (path, why): the dir or one above it others could use
    cron_daemon: str = ""  # "yes", "no", or "" (could not tell: no pgrep)
    mode: str = ""
    cron_d_unread: str = ""  # why no cron daemon reads the cron.d dir ("" when one does)
    files: dict[str, tuple[str, str]] | None = None  # name -> (mode, sha256)
    present: tuple[str, ...] = ()
    cron_file: tuple[str, str] | None = None
    crontab: tuple[str, ...] = ()
    crontab_bin: bool = False
    now: int | None = None  # the host's clock when probed
    old_max: int | None = None  # MAX_SECONDS in the installed config
    max_since: int | None = None  # when the installed --max-hours was set
    installed_at: int | None = None
    tools: dict[str, str] = field(default_factory=dict)  # nvidia-smi/docker -> the login's path
    pgrep: bool = True  # the probe found pgrep (False: none, so a --job could never be seen)
    ps: bool = True  # the probe found ps (False: none, so --ssh-sessions could never see a session)
    gpu_util_rc: int | None = None  # the watcher's utilisation query's exit (None: no nvidia-smi)
    gpu_util: tuple[str, ...] = ()  # its lines, one per GPU
    sudo_rc: int | None = None  # `sudo -n -l CMD` for a shutdown command run through sudo
    sudo_said: str = ""  # its last line
    # PID 1's name (/proc/1/comm): an init (systemd, init ...) or, in a container, the image's
    # entry command (bash, tini, sleep ...); "" where it cannot be read
    pid1: str = ""
    # what says whether the host is a container (facts/slice_signs.py read_signs: the checks' one
    # reader of the same evidence)
    signs: dict[str, str] = field(default_factory=dict)
    # the shutdown command's program is found on the watcher's PATH (None: not asked)
    shutdown_found: bool | None = None
    shutdown_missing: str = ""  # the program not found on the watcher's PATH (sudo, shutdown ...)
    # the --pid process (asked only with --pid): alive (None: not asked), its start time since
    # boot (/proc/PID/stat field 22; "" where unreadable) and the host's boot id
    pid_alive: bool | None = None
    pid_start: str = ""
    boot_id: str = ""
    # what the installed config records of its --pid (asked only with --pid): PID, PID_START and
    # PID_BOOT ("" where it records none)
    old_pid: str = ""
    old_pid_start: str = ""
    old_pid_boot: str = ""
    # the mount options of /proc (`rw,nosuid,...,hidepid=2`; "" where /proc/mounts has none)
    proc_options: str = ""


def _int_or_none(text: str) -> int | None:
    text = text.strip()
    return int(text) if text.isdecimal() and len(text) <= 12 else None


_OLD_PID = {"oldPID": "old_pid", "oldPID_START": "old_pid_start", "oldPID_BOOT": "old_pid_boot"}


# the probe's lines that give one field as they stand, and those that give a number
_AS_SAID = {
    "uid": "uid",
    "user": "user",
    "crond": "cron_daemon",
    "dir": "dir",
    "mode": "mode",
    "crondunread": "cron_d_unread",
    "procopts": "proc_options",
}
_NUMBERS = {"now": "now", "maxsince": "max_since", "installedat": "installed_at"}


def _parse_probe(text: str) -> _Remote:
    r = _Remote(files={})
    lists: dict[str, list[str]] = {"present": [], "crontab": [], "gpuutil": [], "sign": []}
    for line in text.splitlines():
        kind, _, rest = line.partition(" ")
        if kind in _AS_SAID:
            setattr(r, _AS_SAID[kind], rest)
        elif kind in _NUMBERS:
            setattr(r, _NUMBERS[kind], _int_or_none(rest))
        elif kind in lists:
            lists[kind].append(rest.strip() if kind == "gpuutil" else rest)
        elif kind == "dirunsafe":
            path, _, why = rest.partition("\t")
            r.unsafe = (path, why)
        elif kind == "file":
            name, mode, sha = (rest.split() + ["", "", ""])[:3]
            assert r.files is not None
            r.files[name] = (mode, sha)
        elif kind == "cronfile":
            mode, sha = (rest.split() + ["", ""])[:2]
            r.cron_file = (mode, sha)
        elif kind == "crontab_bin":
            r.crontab_bin = rest == "yes"
        elif kind == "oldmax":
            r.old_max = _int_or_none(rest.strip("'\""))
        elif kind == "tool":
            name, _, path = rest.partition(" ")
            if name in WATCHED_TOOLS and _tool_path(path):
                r.tools[name] = path
        elif kind in ("pgrep", "ps"):
            setattr(r, kind, rest != "no")
        elif kind in ("gpuutilrc", "sudorc"):
            code = _int_or_none(rest)
            setattr(r, "gpu_util_rc" if kind == "gpuutilrc" else "sudo_rc", -1 if code is None else code)
        elif kind == "sudosaid":
            r.sudo_said = rest.strip()
        elif kind == "pidalive":
            r.pid_alive = rest.strip() == "yes"
        elif kind == "pidstart":
            r.pid_start = rest.strip() if rest.strip().isdecimal() else ""
        elif kind == "bootid":
            r.boot_id = rest.strip() if rest.strip().isprintable() and " " not in rest.strip() else ""
        elif kind in _OLD_PID:
            value = rest.strip().strip("'\"")
            setattr(r, _OLD_PID[kind], value if value.replace("-", "").isalnum() else "")
        elif kind == "shutprog":  # "yes", or "no PROGRAM": the first of them not found
            said, _, missing = rest.strip().partition(" ")
            r.shutdown_found = said == "yes"
            r.shutdown_missing = missing
    r.present, r.crontab, r.gpu_util = (tuple(lists[k]) for k in ("present", "crontab", "gpuutil"))
    r.signs = slice_signs.read_signs("\n".join(lists["sign"]))
    r.pid1 = r.signs.get(slice_signs.COMM, "")
    return r


# sh: `unsafe DIR` prints `PATH<TAB>WHY` for the first of DIR and the directories above it that
# another user could use to change what root's cron runs from DIR (a symbolic link, another
# user's, or writable by group/other; above DIR a sticky dir such as /tmp is fine), and
# returns 1 when there is none (as OpenSSH's StrictModes judges a key file's dirs). DIR itself
# may not exist yet (mkdir -p makes it 0700). (No final line break: `UNSAFE_DIR_FN; unsafe x`.)
UNSAFE_DIR_FN = sh.load("autostop_unsafe_dir").rstrip("\n")


# Commands the watcher runs that may live outside cron's PATH (/usr/bin:/bin): the install
# records where the login finds them, and the watcher runs them from there (see conf_text).
WATCHED_TOOLS = ("nvidia-smi", "docker")


def _tool_path(path: str) -> bool:
    """An absolute path of a command, as `command -v` prints it (not an alias or a function)."""
    return path.startswith("/") and not path.endswith("/") and path.isprintable()


_STATE = (
    sh.load("autostop_state")
    .replace("__SCRIPT__", SCRIPT)
    .replace("__CONF__", CONF)
    .replace("__CRON_NAME__", CRON_NAME)
    .replace("__OWNED__", " ".join(shell.quote(f) for f in OWNED_FILES))
    .replace("__MARKER__", shell.quote(CRON_MARKER))
    .replace("__TOOLS__", " ".join(WATCHED_TOOLS))
    .replace("__WATCHER_PATH__", WATCHER_PATH)
    .replace("__SIGNS__", slice_signs.SIGNS_SH.rstrip("; "))
)


def state_probe_command(
    dir_arg: str,
    cron_dir: str,
    cron_mode: str,
    sudo_check: list[str] | None = None,
    program: str = "",
    pid: str = "",
) -> str:
    """The probe: the values autostop_state.sh reads (d, m, c, sc, sp), the functions it calls,
    then it. `sudo_check`: the words of the command that asks sudo, without running anything,
    whether the shutdown command may run without a password (None: it does not go through sudo).
    `program`: the shutdown command's programs (install.shutdown_programs: `sudo shutdown`), each
    looked up on the watcher's PATH, the first missing one named ("": not asked). `pid`: the
    --pid to watch (pp): alive, its start time and the boot ("": not asked)."""
    values = (
        f"{_resolve_dir(dir_arg)}\n{_cron_mode_sh(cron_mode, cron_dir)}\n"
        f"sp={shell.quote(program)}; pp={shell.quote(pid)}"
    )
    check = "sc=''"
    if sudo_check:
        check = f"sc=1\nsudo_check() {{ {shell.join(sudo_check)}; }}"
    return f"{CRON_DAEMON_FN}\n{values}\n{check}\n{UNSAFE_DIR_FN}\n{_STATE}"


_state_probe_command = state_probe_command  # (its name before the split: tests call it)
