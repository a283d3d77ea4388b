"""The autostop install and removal: what stands in the way of a watcher that would work (no
cron daemon, a power-off command a non-root login cannot run, a missing pgrep or ps, an unsafe
dir: install_problem), the tools' paths cron needs (with_tools), the max-hours deadline
(max_hours_anchor, max_hours_sentence), and the one remote script that installs
(sh/autostop_install.sh) or removes (sh/autostop_remove.sh) everything.
"""

from __future__ import annotations

import posixpath
import re
import shlex
import time
from dataclasses import replace

from gpuonboard import masking, sh, shell
from gpuonboard.facts.container import INIT_SYSTEMS
from gpuonboard.facts.slice_signs import container_said
from gpuonboard.steps.autostop.probe import UNSAFE_DIR_FN, _Remote
from gpuonboard.steps.autostop.render import CONF, CRON_MARKER, CRON_NAME, OWNED_FILES, SCRIPT
from gpuonboard.steps.autostop.settings import AutostopSettings, _fmt_span, _fmt_time

# Commands that power a box off, which only root may run (a non-root watcher needs sudo).
POWER_COMMANDS = frozenset({"shutdown", "poweroff", "halt", "reboot", "init", "telinit", "systemctl"})

# sh: `crontab_keep` prints the login's crontab without our marker line and the entry after it.
CRONTAB_FN = sh.load("autostop_crontab").replace("__MARKER__", shell.quote(CRON_MARKER)).rstrip("\n")
_INSTALL = (
    sh.load("autostop_install")
    .replace("__SCRIPT__", SCRIPT)
    .replace("__CONF__", CONF)
    .replace("__CRON_NAME__", CRON_NAME)
)
_REMOVE = (
    sh.load("autostop_remove")
    .replace("__SCRIPT__", SCRIPT)
    .replace("__OWNED__", " ".join(shell.quote(f) for f in OWNED_FILES))
)


def max_hours_anchor(settings: AutostopSettings, r: _Remote) -> int | None:
    """When the max-hours deadline counts from: the time --max-hours got its current value.

    A rerun with the same value keeps the recorded time (idempotent); a new value, or
    max-hours added to a running watcher, counts from now (the host's clock). A watcher
    installed before this record existed keeps its old deadline (from its install).
    None when max-hours is off.
    """
    if settings.max_seconds == 0:
        return None
    now = r.now if r.now is not None else int(time.time())
    if r.old_max == settings.max_seconds:
        if r.max_since is not None:
            return r.max_since
        if r.installed_at is not None:
            return r.installed_at
    return now


def max_hours_sentence(settings: AutostopSettings, anchor: int, now: int) -> str:
    """When the max-hours deadline falls, or that it has passed and what happens then."""
    due = anchor + settings.max_seconds
    if due > now:
        return f"max-hours deadline {_fmt_time(due)} (in {_fmt_span(due - now)})"
    return (
        f"the max-hours deadline {_fmt_time(due)} has passed: the watcher warns at its next check"
        f" and shuts the box down {_fmt_span(settings.grace)} (the grace period) after that warning"
    )


def _power_command(command: str) -> bool:
    """Whether `command` starts with a power-off tool that only root may run (after any
    VAR=value words; `sudo ...` or a vendor's API call is not one)."""
    words = _command_words(command) or []
    return bool(words) and posixpath.basename(words[0]) in POWER_COMMANDS


def os_power_off(command: str) -> bool:
    """Whether `command` powers the box off through its own OS (`shutdown -h now`, `sudo -n
    poweroff`, `systemctl poweroff`, ...), which stops the work but not every vendor's bill; a
    vendor's API call that stops or deletes the instance is not one."""
    return _power_tool(command) not in ("", "reboot")


def _power_tool(command: str) -> str:
    """The power tool (POWER_COMMANDS) the shutdown command runs, under sudo too; "" for another
    program (a vendor's API call)."""
    tool = posixpath.basename(shutdown_program(command))
    return tool if tool in POWER_COMMANDS else ""


def billing_note(settings: AutostopSettings) -> str | None:
    """Where the shutdown command is an OS power-off and the vendor profile does not say whether
    that stops the bill: said at install (some providers bill a powered-off box until it is
    deleted or deallocated), never refused; a profile that says it continues is refused
    (install_problem)."""
    if settings.after_poweroff or not os_power_off(settings.shutdown_command):
        return None
    who = (
        f"vendor profile {settings.billing_vendor!r} does not say"
        if settings.billing_vendor
        else "no vendor profile says"
    )
    return (
        f"{who} whether billing stops once {settings.shutdown_shown!r} powers the box off"
        " (billing.after_poweroff): some providers bill a powered-off box until it is deleted or"
        " deallocated; check the vendor's terms and set it, or make shutdown_command the vendor's"
        " API call that stops the instance"
    )


# PID 1 names of the init systems that power a machine off (facts/container.py INIT_SYSTEMS). In
# a container PID 1 is the image's entry command: a power command there stops nothing (systemd's:
# "System has not been booted with systemd as init system (PID 1). Can't operate."), and a
# container that exits is restarted (a RunPod pod).


def _cannot_power_off(host: str, settings: AutostopSettings, r: _Remote) -> str | None:
    """Why the shutdown command could never stop the box: its program is not on the watcher's
    PATH there, or it is a power command and PID 1 is no init, or the host is a container
    (facts/slice_signs.py container_said, as the checks read it) whose vendor profile does not
    say that a power-off stops the bill."""
    program = shutdown_program(settings.shutdown_command)
    command = settings.shutdown_shown  # (as messages show it: a token in it masked)
    vendor = (
        "pass --shutdown-command with the vendor's call that stops this instance (its API or CLI:"
        " a RunPod pod stops by `runpodctl stop pod` with the pod's id), or set the vendor"
        " profile's shutdown_command"
    )
    if r.shutdown_found is False:
        missing = r.shutdown_missing or program
        return (
            f"host {host}: the shutdown command {command!r} runs {missing}, which is not installed"
            f" there (not on the watcher's PATH, /usr/bin:/bin and the sbin dirs), so the watcher"
            f" could never shut the box down: {vendor}"
        )
    if not _power_tool(settings.shutdown_command):
        return None
    if r.pid1 and r.pid1 not in INIT_SYSTEMS:
        return (
            f"host {host}: PID 1 there is {r.pid1!r}, not an init system: the login is inside a"
            f" container (RunPod, Vast.ai, a Kubernetes pod), where {command!r} cannot power the"
            f" machine off and the rental would go on being billed: {vendor}"
        )
    # an init that runs in a container (systemd in an LXD or Proxmox container, s6-svscan or
    # `docker run --init`'s init on an overlay root) powers off the container at most
    if (container := container_said(r.signs)) and settings.after_poweroff != "stops":
        return (
            f"host {host}: the login is inside a container ({container}), where {command!r} stops"
            " the container at most, never the machine the vendor bills for, so the rental would go"
            f" on being billed (unless the vendor profile says billing.after_poweroff: stops): {vendor}"
        )
    return None


def with_tools(settings: AutostopSettings, r: _Remote) -> AutostopSettings:
    """The settings plus where the login found nvidia-smi (and docker, for --container): cron
    runs the watcher with PATH=/usr/bin:/bin, which may not hold them; and how many GPUs the
    watcher's utilisation query read a number for (gpu_count)."""
    docker = r.tools.get("docker", "") if settings.container else ""
    count = len(r.gpu_util) if r.gpu_util_rc is not None and never_idle(r) is None else 0
    return replace(
        settings,
        nvidia_smi=r.tools.get("nvidia-smi", ""),
        docker=docker,
        gpu_count=count,
        pid_start=_recorded(settings, r)[0],
        pid_boot=_recorded(settings, r)[1],
    )


def _same_pid(settings: AutostopSettings, r: _Remote) -> bool:
    """Whether the installed config already watches the --pid given (a rerun that renews)."""
    return bool(settings.pid) and r.old_pid == settings.pid


def _recorded(settings: AutostopSettings, r: _Remote) -> tuple[str, str]:
    """The (start time, boot) the config records for --pid: on a rerun with the same pid, the
    ones the first install recorded (never those of a later process that got the number); else
    the process's as the probe found it."""
    if not settings.pid:
        return "", ""
    if _same_pid(settings, r) and (r.old_pid_start or r.old_pid_boot):
        return r.old_pid_start, r.old_pid_boot
    return r.pid_start, r.boot_id


def pid_ended_note(settings: AutostopSettings, r: _Remote) -> str | None:
    """On a rerun with the --pid the installed config already watches, that the process it
    recorded has ended (no process runs under the number, the box has rebooted since, or the
    number now names a process started at another time): the rerun renews the lease and the
    other settings, and the watcher counts the job ended. None while it runs, or can't be told."""
    if not _same_pid(settings, r):
        return None
    if r.pid_alive is False:
        why = f"no process {settings.pid} runs there"
    elif r.old_pid_boot and r.boot_id and r.old_pid_boot != r.boot_id:
        why = "the box has rebooted since it was recorded"
    elif r.old_pid_start and r.pid_start and r.old_pid_start != r.pid_start:
        why = f"{settings.pid} now names another process, started at another time"
    else:
        return None
    return (
        f"--pid {settings.pid}: the watched process {settings.pid} has ended ({why}), so it no"
        " longer keeps the box up: the box shuts down once idle (give the pid of the running job"
        " to watch it instead)"
    )


def never_idle(r: _Remote) -> str | None:
    """Why the watcher's utilisation query, as the probe ran it once, would keep the box busy at
    every check (a reading that is not a number, such as [N/A] on a MIG-enabled GPU; a failing
    query; no reading); None when it read a number for every GPU, or there is no nvidia-smi."""
    if r.gpu_util_rc is None:
        return None
    if r.gpu_util_rc in (124, 137):
        return "nvidia-smi --query-gpu=utilization.gpu did not answer there within 20s"
    odd = next((line for line in r.gpu_util if not _reading(line)), None)
    if r.gpu_util_rc != 0 and (odd is not None or not r.gpu_util):
        # (a failing nvidia-smi's message, "NVIDIA-SMI has failed because it couldn't communicate
        # with the NVIDIA driver", is no reading: the failure is said, not taken for MIG)
        said = f": {odd.strip()[:160]}" if odd else ""
        return f"nvidia-smi --query-gpu=utilization.gpu failed there (exit {r.gpu_util_rc}{said})"
    if odd is not None:
        return f"GPU utilisation reads {odd!r} there (MIG mode, some vGPUs)"
    if not r.gpu_util:
        return f"nvidia-smi --query-gpu=utilization.gpu reads no GPU there (exit {r.gpu_util_rc})"
    return None


def cron_d_note(r: _Remote) -> str | None:
    """Why root's watcher goes into root's crontab, not the cron.d dir (None where it does not)."""
    if r.uid == "0" and r.mode == "crontab" and r.cron_d_unread:
        return f"the cron.d dir is not used ({r.cron_d_unread}): the watcher goes into root's crontab"
    return None


def no_gpu_note(settings: AutostopSettings, r: _Remote) -> str | None:
    """Where the login finds no nvidia-smi (a driver not installed yet or being replaced, an SSH
    login into a CUDA image whose PATH the image's ENV set for its own processes only): the
    watcher cannot see GPU activity, and a run on the GPUs keeps the box up only through the
    other signals. Said at install, never refused (a box without GPUs has nothing to watch)."""
    if "nvidia-smi" in r.tools:
        return None
    said = "no nvidia-smi on the login's PATH there, so the watcher cannot see GPU activity"
    given = (("job", settings.job), ("pid", settings.pid), ("container", settings.container))
    by = next((f"--{n} {v!r}" for n, v in given if v), None)
    if by:
        return f"{said}: only {by} keeps the box up"
    return f"{said}: a run on the GPUs does not keep the box up (give --job, --pid or --container)"


def hidden_processes_note(settings: AutostopSettings, r: _Remote) -> str | None:
    """Where /proc is mounted with hidepid (1 or noaccess: other users' command lines unreadable;
    2 or invisible, 4 or ptraceable: their processes not listed) and the login is not root, the
    watcher's `pgrep -f` and `ps` see only the login's own processes: a --job run by another
    user (through sudo, in a container as root) and another user's SSH session go unseen, and the
    box is shut down under them. Said at install, never refused (the job may be the login's)."""
    opts = dict(o.partition("=")[::2] for o in r.proc_options.split(","))
    hide = opts.get("hidepid", "0")
    if r.uid == "0" or hide in ("", "0", "off") or not (settings.job or settings.ssh_sessions):
        return None
    what = " and ".join(
        w
        for w, on in (
            (f"--job {settings.job!r} keeps the box up only while this login runs it", settings.job),
            ("--ssh-sessions counts only this login's SSH sessions (and `who`)", settings.ssh_sessions),
        )
        if on
    )
    return (
        f"/proc is mounted hidepid={hide} there, so the watcher, running as {r.user or 'uid ' + r.uid}"
        f" (not root), sees only its own processes: {what}; a job run by another user (through sudo,"
        " in a container as root) goes unseen and the box is shut down under it: connect as root,"
        " or give --pid or --container"
    )


def sudo_note(settings: AutostopSettings, r: _Remote) -> str | None:
    """What sudo said of the shutdown command where it did not say yes: `sudo -n -l CMD` tells
    whether the login may *list* the command without a password (sudoers' listpw), not run it,
    so a working NOPASSWD rule may read no and a password rule yes: said, never refused."""
    if r.sudo_rc in (None, 0, 127):
        return None
    said = f"sudo said: {r.sudo_said}" if r.sudo_said else f"exit {r.sudo_rc}"
    check = sudo_check(settings.shutdown_command)
    if check is not None and check[-1] == "true" and "-l" not in check:  # (the command was not named)
        return (
            f"sudo asks for a password there ({said}; the command itself was not named to sudo, as"
            f" {settings.shutdown_shown!r} is not a plain word list or holds a word that may be a"
            " secret): if it needs one, the watcher cannot shut the box down and `--status` says"
            " OVERDUE; allow it with a NOPASSWD rule in sudoers"
        )
    return (
        f"sudo did not confirm that {settings.shutdown_shown!r} runs without a password there"
        f" ({said}): if it needs one, the watcher cannot shut the box down and `--status` says"
        " OVERDUE; allow it with a NOPASSWD rule in sudoers"
    )


def _reading(line: str) -> bool:
    return line.replace("%", "").strip().isdecimal()


# sudo's options that take a value, as separate words (-u USER) or joined (-uUSER)
_SUDO_VALUE_OPTIONS = frozenset("uUgpCDhrRtT")


def _command_words(command: str) -> list[str] | None:
    """A shutdown command's words after any VAR=value words; None where it does not split."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):
        words.pop(0)
    return words


def _sudo_parts(words: list[str]) -> tuple[list[str], list[str]]:
    """(sudo's -u/-g options with their values, the command sudo runs) of `sudo [OPTIONS] CMD`."""
    keep: list[str] = []
    i = 1
    while i < len(words) and words[i].startswith("-") and words[i] != "--":
        w = words[i]
        takes = len(w) == 2 and w[1] in _SUDO_VALUE_OPTIONS
        if w[:2] in ("-u", "-g") or w.startswith(("--user", "--group")):
            keep += words[i : i + (2 if takes or w in ("--user", "--group") else 1)]
        i += 2 if takes or w in ("--user", "--group") else 1
    return keep, words[i + 1 :] if i < len(words) and words[i] == "--" else words[i:]


def sudo_check(command: str) -> list[str] | None:
    """For a shutdown command run through sudo (after any VAR=value words), the command that asks
    sudo, never running it, whether this login may run it without a password: `sudo -n -l
    [-u USER] [-g GROUP] CMD ARGS` (`sudo -n [-u USER] [-g GROUP] true` where the command is not a
    plain word list or has a word that may be a secret);
    None for a command that does not start with sudo."""
    words = _command_words(command)
    if not words or posixpath.basename(words[0]) != "sudo":
        return None
    keep, rest = _sudo_parts(words)
    if not rest or any(not re.fullmatch(r"[^;&|<>()`$]+", w) for w in rest):
        return [words[0], "-n", *keep, "true"]
    # the check goes on the probe's command line (`ps` shows it to every user of the host): a
    # command with a word that may be a secret (`--token T`: masking.command_shown masks it) is
    # not named there, sudo is asked only whether it runs anything without a password
    if masking.MASK in masking.command_shown(shell.join(rest)):
        return [words[0], "-n", *keep, "true"]
    return [words[0], "-n", "-l", *keep, *rest]


_PLAIN_WORD = re.compile(r"[\w./+@:-]+")  # (a word the shell would expand, `$HOME/bin/stop`, is not)


def shutdown_program(command: str) -> str:
    """The program a shutdown command runs (after any VAR=value words; under `sudo`, the command
    sudo runs): `shutdown` of `sudo -n shutdown -h now`; "" where it cannot be told."""
    words = _command_words(command) or []
    if words and posixpath.basename(words[0]) == "sudo":
        words = _sudo_parts(words)[1]
    return words[0] if words and _PLAIN_WORD.fullmatch(words[0]) else ""


def shutdown_programs(command: str) -> str:
    """The programs the watcher must find to run a shutdown command, space-separated, for the
    install's probe to look up: `sudo shutdown` of `sudo -n shutdown -h now` (NixOS keeps sudo
    in /run/wrappers/bin), `shutdown` of `shutdown -h now`; "" where the program cannot be told."""
    program = shutdown_program(command)
    words = _command_words(command) or []
    if program and words and posixpath.basename(words[0]) == "sudo" and _PLAIN_WORD.fullmatch(words[0]):
        return f"{words[0]} {program}"
    return program


def install_problem(host: str, settings: AutostopSettings, r: _Remote) -> str | None:
    """Why a watcher installed as the probe found the host would never shut it down, or would
    let others run commands as this login; None when there is nothing in the way."""
    who = r.user or f"uid {r.uid}"
    if r.cron_daemon == "no":
        return (
            f"host {host}: no cron daemon runs there (no cron or crond process), so the watcher would"
            " never run and the box would never be shut down: start cron (systemctl enable --now cron,"
            " or service cron start where there is no systemd), then rerun"
        )
    if r.mode == "cron.d" and r.cron_d_unread:
        return (
            f"host {host}: autostop_cron is cron.d but {r.cron_d_unread}, so cron would never run the"
            " watcher and the box would never be shut down: set vars.autostop_cron to auto or crontab"
            " (the login's crontab), or cron_dir to the directory the cron daemon reads"
        )
    if settings.after_poweroff == "continues" and os_power_off(settings.shutdown_command):
        return (
            f"host {host}: vendor {settings.billing_vendor!r} keeps billing a box that is powered off"
            " (its profile says billing.after_poweroff: continues), so the shutdown command"
            f" {settings.shutdown_shown!r} would stop the work but not the bill: set the vendor"
            " profile's shutdown_command (or pass --shutdown-command) to the vendor's API call that"
            " stops billing (deletes or deallocates the instance)"
        )
    if (cannot := _cannot_power_off(host, settings, r)) is not None:
        return cannot
    if r.uid != "0" and _power_command(settings.shutdown_command):
        return (
            f"host {host}: the watcher would run as {who}, not root, which cannot run the shutdown"
            f" command {settings.shutdown_shown!r}: pass --shutdown-command"
            f" {shell.quote(masking.command_shown('sudo -n ' + settings.shutdown_command))}"
            " (needs passwordless sudo for it),"
            " or connect as root"
        )
    if r.sudo_rc == 127:  # (a password rule or sudoers' listpw: said in the plan, sudo_note)
        return (
            f"host {host}: the shutdown command {settings.shutdown_shown!r} runs sudo, which is not"
            f" installed there, so the watcher could never shut the box down: install sudo with a"
            " NOPASSWD rule for it, or connect as root and pass --shutdown-command 'shutdown -h now'"
        )
    why = never_idle(r)
    if why and not (settings.max_seconds or settings.heartbeat):
        return (
            f"host {host}: {why}, so the watcher would never find the box idle and never shut it down:"
            " pass --max-hours H or --heartbeat D (they act whatever the activity)"
        )
    if settings.pid and r.pid_alive is False and not _same_pid(settings, r):
        return (
            f"host {host}: --pid {settings.pid}: no process {settings.pid} runs there, so the watcher"
            " would not see the job, and a run in a phase that leaves the GPUs idle (data loading,"
            " a checkpoint) would be powered off: give the pid of the running job (pgrep -f"
            " train.py finds it), or watch it by --job or --container instead"
        )
    if settings.job and not r.pgrep:
        return (
            f"host {host}: --job {settings.job!r} needs pgrep, which this host lacks, so the watcher"
            " could never see the job running: install procps (apt-get install procps), or watch"
            " the job by --pid or --container instead"
        )
    if settings.ssh_sessions and not r.ps:
        return (
            f"host {host}: --ssh-sessions needs ps, which this host lacks, so the watcher could never"
            " see an SSH session without a terminal (VS Code Remote, ssh -N tunnels) and would count"
            " the box busy for ever: install procps (apt-get install procps), or leave --ssh-sessions out"
        )
    if r.unsafe is not None:
        path, why = r.unsafe
        subject = f"the autostop directory {r.dir}"
        if posixpath.normpath(path) != posixpath.normpath(r.dir):
            subject += f" lies under {path}, which"
        return (
            f"host {host}: {subject} {why}, and cron runs the watcher from it as {who} every minute,"
            f" so another user could run commands as {who}: set vars.autostop_dir to a directory only"
            " this login can write (and the directories above it), or remove it to use the default"
        )
    return None


def _values(values: dict[str, str]) -> str:
    """Shell assignments, one a line, each value one quoted word."""
    return "".join(f"{k}={shell.quote(v)}\n" for k, v in values.items())


def install_script(
    directory: str,
    script: str,
    conf: str,
    anchor: int | None,
    lease: bool,
    mode: str,
    cron_dir: str,
    cron_text: str,
) -> str:
    """The install, for `sh -s`'s stdin: the values autostop_install.sh reads (the files' texts
    among them), the functions it calls, then it. `anchor`: max_since (None: max-hours off);
    `lease`: renew the heartbeat lease; `mode` cron.d (`cron_text` the cron.d file) or crontab
    (`cron_text` the crontab lines)."""
    values = {
        "d": directory,
        "since": "" if anchor is None else f"{anchor}\n",
        "script": script,
        "conf": conf,
        "lease": "1" if lease else "",
        "m": mode,
        "c": cron_dir,
        "cron": cron_text,
    }
    return f"{_values(values)}{UNSAFE_DIR_FN}\n{CRONTAB_FN}\n{_INSTALL}"


def remove_script(directory: str, cron_file: str, crontab: bool) -> str:
    """The removal: the values autostop_remove.sh reads (`cron_file`: the cron.d file to remove,
    "" for none; `crontab`: drop the crontab entry), the function it calls, then it."""
    values = {"d": directory, "cronfile": cron_file, "crontab": "1" if crontab else ""}
    return f"{_values(values)}{CRONTAB_FN}\n{_REMOVE}"
