"""What the autostop install finds in the way, from its real state probe run with /bin/sh on
this machine, as root and as an unprivileged login (`setpriv` to nobody): a watcher that runs
as a non-root user cannot run `shutdown -h now` (cron logged "shutdown command exited 1" every
minute and the box never stopped)."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuonboard.inventory import load_vendor
from gpuonboard.masking import command_shown
from gpuonboard.steps.autostop import (
    UNSAFE_DIR_FN,
    _parse_probe,
    _Remote,
    _state_probe_command,
    install_problem,
    parse_settings,
    render,
    render_script,
)
from gpuonboard.steps.autostop.install import INIT_SYSTEMS, shutdown_program, shutdown_programs
from gpuonboard.steps.base import StepArgsError

from .box import T0, Box

NOBODY = 65534


@pytest.fixture
def cron_daemon(tmp_path: Path) -> Iterator[None]:
    """A process named `cron` (a copy of sleep), ended by pid."""
    binary = tmp_path / "crond" / "cron"
    binary.parent.mkdir()
    binary.write_bytes(Path("/bin/sleep").read_bytes())
    binary.chmod(0o755)
    daemon = subprocess.Popen([str(binary), "600"])
    try:
        yield
    finally:
        daemon.kill()
        daemon.wait()


def probe(tmp_path: Path, as_nobody: bool, shutdown_command: str = "") -> _Remote:
    """The real state probe on this machine; `shutdown_command`'s program is looked up there
    (the cron.d dir exists: root's watcher goes there only where a cron daemon reads it)."""
    (tmp_path / "cron.d").mkdir(exist_ok=True)
    command = _state_probe_command(
        str(tmp_path / "autostop"),
        str(tmp_path / "cron.d"),
        "auto",
        program=shutdown_programs(shutdown_command),
    )
    argv = ["sh", "-c", command]
    if as_nobody:
        if os.geteuid() != 0 or not shutil.which("setpriv"):
            pytest.skip("needs root and setpriv to log in as an unprivileged user")
        argv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *argv]
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/nonexistent"}
    out = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=30, check=True)
    return _parse_probe(out.stdout)


def problem(r: _Remote, shutdown_command: str) -> str | None:
    return install_problem("gpu1", parse_settings({"shutdown_command": shutdown_command}), r)


def on_a_machine(r: _Remote) -> _Remote:
    """The probe's findings as on a machine booted by systemd (this machine may be a container,
    whose PID 1 is no init: see test_a_power_command_in_a_container_is_refused)."""
    return dataclasses.replace(r, pid1="systemd", signs={})


@pytest.mark.usefixtures("cron_daemon")
@pytest.mark.parametrize(
    "command", ["shutdown -h now", "/sbin/poweroff", "systemctl poweroff", "LANG=C shutdown -h +1"]
)
def test_a_non_root_login_cannot_run_a_power_command_itself(tmp_path: Path, command: str) -> None:
    r = on_a_machine(probe(tmp_path, as_nobody=True))
    assert (r.uid, r.user, r.mode, r.cron_daemon) == (str(NOBODY), "nobody", "crontab", "yes")
    quoted = "'sudo -n " + command + "'"
    assert problem(r, command) == (
        f"host gpu1: the watcher would run as nobody, not root, which cannot run the shutdown command"
        f" {command!r}: pass --shutdown-command {quoted} (needs passwordless sudo for it), or connect"
        " as root"
    )


@pytest.mark.usefixtures("cron_daemon")
@pytest.mark.parametrize(
    "command", ["sudo -n shutdown -h now", "curl -fsS -X POST https://api.example.com/v1/stop"]
)
def test_a_non_root_login_may_use_sudo_or_a_vendor_api_call(tmp_path: Path, command: str) -> None:
    assert problem(on_a_machine(probe(tmp_path, as_nobody=True)), command) is None


@pytest.mark.usefixtures("cron_daemon")
def test_root_runs_the_default_shutdown_command(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root")
    if not shutil.which("shutdown", path=WATCHER_PATH):
        pytest.skip("this machine has no shutdown command")
    r = on_a_machine(probe(tmp_path, as_nobody=False, shutdown_command="shutdown -h now"))
    assert (r.uid, r.mode, r.cron_daemon) == ("0", "cron.d", "yes")
    assert problem(r, "shutdown -h now") is None


# cron's PATH and the dirs the watcher adds (templates/remote/autostop/settings.sh.j2)
WATCHER_PATH = "/usr/bin:/bin:" + render.WATCHER_PATH


def test_the_install_looks_the_program_up_on_the_path_the_watcher_runs_it_from() -> None:
    """One list of dirs: the watcher's PATH line and the install's lookup (a NixOS box's
    `shutdown` is in /run/current-system/sw/bin, in no sbin dir: found by both)."""
    assert "/run/current-system/sw/bin" in WATCHER_PATH.split(":")
    script = render_script(REPO, "gpu1", "/var/lib/gpuonboard/autostop")
    assert f'\nPATH="${{PATH:-/usr/bin:/bin}}:{render.WATCHER_PATH}"\n' in script
    probe_text = _state_probe_command("", "/etc/cron.d", "auto", program="shutdown")
    assert f"(PATH={WATCHER_PATH}\n" in probe_text


@pytest.mark.usefixtures("cron_daemon")
@pytest.mark.parametrize("command", ["shutdown -h now", "sudo -n poweroff", "LANG=C systemctl poweroff"])
def test_a_power_command_in_a_container_is_refused(tmp_path: Path, command: str) -> None:
    """A container rental (RunPod, Vast.ai, a Kubernetes pod) runs the image's entry command as
    PID 1, no init: `shutdown -h now` there powers nothing off (systemd's "System has not been
    booted with systemd as init system (PID 1). Can't operate."; phusion/baseimage-docker#172),
    and a pod whose container exits is restarted (runpod/runpodctl#149), so the box was billed on
    under a watcher installed without a word. This machine is such a container when its PID 1 is
    no init (`systemctl is-system-running` here: offline): the real probe reads its name."""
    pid1 = Path("/proc/1/comm").read_text().strip()
    if not all(shutil.which(p, path=WATCHER_PATH) for p in shutdown_programs(command).split()):
        pytest.skip(f"this machine lacks a program {command!r} runs (refused as not installed first)")
    r = probe(tmp_path, as_nobody=False, shutdown_command=command)
    assert r.pid1 == pid1
    if pid1 in INIT_SYSTEMS:
        pytest.skip(f"this machine's PID 1 is an init ({pid1})")
    said = problem(r, command)
    assert said is not None and said.startswith(
        f"host gpu1: PID 1 there is {pid1!r}, not an init system: the login is inside a container"
        f" (RunPod, Vast.ai, a Kubernetes pod), where {command!r} cannot power the machine off"
    ), said
    assert "the vendor's call that stops this instance" in said
    assert problem(r, "touch /nonexistent/stopped") is None  # (not a power command: the vendor's)


@pytest.mark.parametrize("pid1", ["bash", "sh", "tini", "dumb-init", "docker-init", "sleep", "python3"])
def test_a_container_entry_command_as_pid_1_refuses_every_power_command(pid1: str) -> None:
    r = _Remote(uid="0", user="root", dir="/var/lib/gpuonboard/autostop", mode="cron.d", pid1=pid1)
    for command in ("shutdown -h now", "/sbin/poweroff", "sudo -u root -n halt -p", "init 0"):
        assert (problem(r, command) or "").startswith(f"host gpu1: PID 1 there is {pid1!r}"), command
    assert problem(r, "curl -fsS -X POST https://api.example.com/v1/stop") is None


@pytest.mark.parametrize("pid1", ["systemd", "init", "runit", ""])
def test_an_init_as_pid_1_or_one_not_read_runs_the_power_command(pid1: str) -> None:
    """systemd, sysvinit/busybox/upstart's `init`, runit; "" where /proc/1 could not be read
    (hidepid): no refusal on a guess."""
    r = _Remote(uid="0", user="root", dir="/var/lib/gpuonboard/autostop", mode="cron.d", pid1=pid1)
    assert problem(r, "shutdown -h now") is None


@pytest.mark.usefixtures("cron_daemon")
def test_a_shutdown_command_whose_program_is_not_there_is_refused(tmp_path: Path) -> None:
    """A vendor's stop command whose CLI the box lacks (`runpodctl` not installed, or only on the
    login's PATH, not cron's) would fail at every tick: refused at install, naming it."""
    command = "runpodctl stop pod abc123"
    if shutil.which("runpodctl", path=WATCHER_PATH):
        pytest.skip("this machine has runpodctl")
    r = on_a_machine(probe(tmp_path, as_nobody=False, shutdown_command=command))
    assert r.shutdown_found is False
    assert problem(r, command) == (
        # (the command as shown: a word that may be a secret, the pod id here, masked)
        f"host gpu1: the shutdown command {command_shown(command)!r} runs runpodctl, which is not"
        " installed there (not on the watcher's PATH, /usr/bin:/bin and the sbin dirs), so the watcher"
        " could never"
        " shut the box down: pass --shutdown-command with the vendor's call that stops this instance"
        " (its API or CLI: a RunPod pod stops by `runpodctl stop pod` with the pod's id), or set the"
        " vendor profile's shutdown_command"
    )
    found = on_a_machine(probe(tmp_path, as_nobody=False, shutdown_command="touch /nonexistent/x"))
    assert found.shutdown_found is True and problem(found, "touch /nonexistent/x") is None
    # (a word the shell expands is not looked up as it stands: not asked, no refusal)
    expands = on_a_machine(probe(tmp_path, as_nobody=False, shutdown_command="$HOME/bin/stop-box"))
    assert expands.shutdown_found is None and problem(expands, "$HOME/bin/stop-box") is None


@pytest.mark.usefixtures("cron_daemon")
def test_a_sudo_the_watcher_would_not_find_is_refused_naming_it(tmp_path: Path) -> None:
    """The watcher runs `sudo ...` from its own PATH: a sudo it would not find (NixOS keeps it in
    /run/wrappers/bin, now on that PATH; here one at a path that does not exist) never runs the
    shutdown, though the program after it is found."""
    command = "/nonexistent/bin/sudo -n shutdown -h now"
    r = on_a_machine(probe(tmp_path, as_nobody=False, shutdown_command=command))
    assert (r.shutdown_found, r.shutdown_missing) == (False, "/nonexistent/bin/sudo")
    said = problem(r, command) or ""
    assert said.startswith(f"host gpu1: the shutdown command {command!r} runs /nonexistent/bin/sudo,"), said


@pytest.mark.parametrize(
    ("command", "program", "programs"),
    [
        ("shutdown -h now", "shutdown", "shutdown"),
        ("LANG=C /sbin/poweroff", "/sbin/poweroff", "/sbin/poweroff"),
        ("sudo -n shutdown -h now", "shutdown", "sudo shutdown"),
        ("/usr/bin/sudo -u root -n -- systemctl poweroff", "systemctl", "/usr/bin/sudo systemctl"),
        ("sudo", "", ""),
        ("$HOME/bin/stop", "", ""),
        ("echo 'unclosed", "", ""),
    ],
)
def test_the_program_a_shutdown_command_runs(command: str, program: str, programs: str) -> None:
    """The program it runs (under sudo: the one sudo runs), and every one the watcher must find."""
    assert (shutdown_program(command), shutdown_programs(command)) == (program, programs)


# Billing-aware autostop only when the vendor profile names its billing unit (issue 26).
#
# The vendor loader says whether `billing.unit` was given (an absent one is assumed hourly for
# cost figures, never for autostop); the watcher's settings turn billing-aware on only for a
# named hourly unit or `--billing-aware`, and its `status` (the real script, run with /bin/sh
# and a controlled clock) says which mode is in force and why.


@pytest.mark.parametrize(
    ("text", "given"),
    [
        ("name: X\n", False),
        ("name: X\nbilling: {rate: 5, currency: CNY}\n", False),
        ("name: X\nbilling: {unit: hour}\n", True),
        ("name: X\nbilling: {unit: second, rate: 9.8}\n", True),
    ],
)
def test_the_vendor_loader_says_whether_the_billing_unit_was_given(
    tmp_path: Path, text: str, given: bool
) -> None:
    path = tmp_path / "v.yml"
    path.write_text(text)
    billing = load_vendor(path).billing
    assert billing.unit_given is given
    assert billing.unit in ("hour", "second")  # cost figures still round by an hour when unnamed


@pytest.mark.parametrize(
    ("args", "aware", "mode"),
    [
        ({"billing_unit": ""}, False, "auto"),
        ({}, False, "auto"),
        ({"billing_unit": "hour"}, True, "auto"),
        ({"billing_unit": "minute"}, False, "auto"),
        ({"billing_unit": "", "billing_aware": "true"}, True, "on"),
        ({"billing_unit": "hour", "billing_aware": False}, False, "off"),
    ],
)
def test_billing_aware_only_for_a_named_hourly_unit_or_when_asked(
    args: dict[str, object], aware: bool, mode: str
) -> None:
    settings = parse_settings(args)
    assert settings.billing_aware is aware
    assert f"BILLING_SET={mode}\n" in settings.conf_text()


def test_a_billing_unit_that_is_not_one_is_named() -> None:
    with pytest.raises(StepArgsError, match="argument 'billing_unit' must be one of second, minute, hour"):
        parse_settings({"billing_unit": "fortnight"})


def test_status_names_the_mode_and_why(tmp_path: Path) -> None:
    cases = {
        "a": (
            {"billing_unit": "", "billing_vendor": "nobill"},
            "mode: idle (billing unit unknown: add `billing: {unit: hour}` (or minute, second) to vendor"
            " profile nobill, or pass --billing-aware, for billing-aware shutdown): acts after idle + grace",
        ),
        "b": (
            {"billing_unit": ""},
            "mode: idle (billing unit unknown: add `billing: {unit: hour}` (or minute, second) to a vendor"
            " profile for this host, or pass --billing-aware, for billing-aware shutdown): acts after"
            " idle + grace",
        ),
        "c": (
            {"billing_unit": "hour", "billing_vendor": "wuhan-idc"},
            "mode: billing-aware (hourly billing, per vendor profile wuhan-idc): acts in the last 5m00s of"
            " a started hour, hours counted from 2027-01-15T08:00:00Z",
        ),
        "d": (
            {"billing_unit": "hour", "billing_vendor": "v\x1b]0;x\x07"},
            "mode: billing-aware (hourly billing, per vendor profile v\\x1b]0;x\\x07): acts in the last"
            " 5m00s of a started hour, hours counted from 2027-01-15T08:00:00Z",
        ),
    }
    for name, (args, line) in cases.items():
        (tmp_path / name).mkdir()
        box = Box(tmp_path / name, idle="30m", **args)
        status = box.run(T0 + 60, "status").stdout
        assert [ln for ln in status.splitlines() if ln.startswith("mode: ")] == [line]


def test_status_of_a_config_from_an_older_gpuonboard_gives_the_mode(tmp_path: Path) -> None:
    box = Box(tmp_path, idle="30m", billing_aware="true")
    conf = box.dir / "autostop.conf"
    conf.write_text("".join(ln for ln in conf.read_text().splitlines(True) if not ln.startswith("BILLING_S")))
    status = box.run(T0 + 60, "status").stdout
    assert "mode: billing-aware: acts in the last 5m00s of a started hour" in status


# The directory root's cron runs the watcher from, and every directory above it, must be
# this login's (or root's) alone: a symlink, another user's dir, or one others can write (above
# it, unless sticky like /tmp) would let another user choose what root runs every minute. The
# check is the shell function the probe and the install both run, here with this machine's sh.


def _unsafe(d: Path) -> str | None:
    r = subprocess.run(
        ["sh", "-c", f'{UNSAFE_DIR_FN}; unsafe "$1"', "sh", str(d)], capture_output=True, text=True
    )
    assert r.returncode in (0, 1), r.stderr
    return r.stdout.rstrip("\n") if r.returncode == 0 else None


def test_only_dirs_no_other_user_can_change_pass(tmp_path: Path) -> None:
    base = tmp_path / "base"
    base.mkdir(mode=0o755)
    base.chmod(0o755)
    ok = base / "autostop"
    ok.mkdir(mode=0o700)
    assert _unsafe(ok) is None
    assert _unsafe(base / "not-yet" / "autostop") is None  # (mkdir -p makes it 0700)

    # the dir itself writable by others, even with the sticky bit
    open_dir = base / "open"
    open_dir.mkdir()
    open_dir.chmod(0o1777)
    assert _unsafe(open_dir) == f"{open_dir}\tis writable by other users (mode 1777)"
    # below a sticky dir (as /tmp): fine, the dir itself being only ours
    mine = open_dir / "mine"
    mine.mkdir(mode=0o700)
    assert _unsafe(mine) is None
    assert _unsafe(open_dir / "new") is None  # (made by mkdir -p; one planted first is another user's)

    # below a dir others can write without the sticky bit: they could rename ours away
    shared = base / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    (shared / "autostop").mkdir(mode=0o700)
    assert _unsafe(shared / "autostop") == f"{shared}\tis writable by other users (mode 777)"

    # a symbolic link, to a safe dir or not
    link = base / "link"
    link.symlink_to(ok)
    assert _unsafe(link) == f"{link}\tis a symbolic link"


def test_another_users_dir_is_refused(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    if os.getuid() != 0:
        pytest.skip("needs root to give the dir to another user")
    os.chown(theirs, 65534, 65534)
    assert _unsafe(theirs) == f"{theirs}\tis owned by another user (uid 65534)"


# --ssh-sessions: the watcher's reading of `ps -eo user=,args=` (real sshd process titles of
# OpenSSH 9.2 and 9.8+, run through the rendered watcher's own awk with this machine's sh), and the
# install's refusal where ps is missing (the box would then count busy for ever).

REPO = Path(__file__).resolve().parents[4]

# what `ps -eo user=,args=` shows on a box with sshd's listener, a login in progress, a shell
# with a terminal, a VS Code Remote session (no terminal) and a session under OpenSSH 9.8+
PS = """\
root     sshd: /usr/sbin/sshd -D [listener] 0 of 10-100 startups
root     sshd: alice [priv]
alice    sshd: alice@pts/0
alice    -bash
root     sshd: bob [priv]
bob      sshd: bob@notty
bob      sshd-session: bob@notty
carol    sshd-session: carol@pts/3
root     sshd: root [net]
dave     vim sshd: eve@notty
"""


def _users(ps: str) -> str:
    text = render_script(REPO, "box", "/tmp/autostop")
    fn = re.search(r"^ssh_session_users\(\) \{.*?^\}\n", text, re.S | re.M)
    assert fn is not None
    out = subprocess.run(
        ["sh", "-c", fn.group(0) + "ssh_session_users"], input=ps, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_the_users_of_open_sessions_are_read_from_sshds_process_titles() -> None:
    assert _users(PS) == "alice bob carol"
    assert _users("root     sshd: /usr/sbin/sshd -D [listener] 0 of 10-100 startups\n") == ""


def test_ssh_sessions_without_ps_is_refused_at_install() -> None:
    r = _parse_probe("uid 0\nps no\n")
    assert r.ps is False
    r = _Remote(uid="0", user="root", dir="/var/lib/gpuonboard/autostop", mode="cron.d", ps=False)
    assert install_problem("gpu1", parse_settings({"ssh_sessions": "true"}), r) == (
        "host gpu1: --ssh-sessions needs ps, which this host lacks, so the watcher could never see an"
        " SSH session without a terminal (VS Code Remote, ssh -N tunnels) and would count the box busy"
        " for ever: install procps (apt-get install procps), or leave --ssh-sessions out"
    )
    assert install_problem("gpu1", parse_settings({}), r) is None
    r.ps = True
    assert install_problem("gpu1", parse_settings({"ssh_sessions": "true"}), r) is None


# The host vars `invoke autostop` takes are checked before any connection, naming the var: a
# YAML `autostop_shutdown_command:` with no value rendered as the text 'None', installed as the
# shutdown command, which never shut the box down (and a mapping became its Python repr).

GPUONBOARD = Path(sys.executable).parent / "gpuonboard"


def autostop(tmp_path: Path, var_line: str, *flags: str) -> subprocess.CompletedProcess[str]:
    hosts = tmp_path / "hosts.yml"
    hosts.write_text(
        "hosts:\n  gpu1:\n    address: 127.0.0.1\n    port: 1\n    vars:\n"
        f"      autostop_dir: {tmp_path / 'autostop'}\n      {var_line}\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "GPUONBOARD_DEBUG"}
    env["GPUONBOARD_SSH_CONFIG"] = "/dev/null"
    return subprocess.run(
        [str(GPUONBOARD), "autostop", "--host", "gpu1", "--inventory", str(hosts), *flags],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


PREFIX = "error: autostop: step 'autostop' for host 'gpu1': "


@pytest.mark.parametrize(
    ("var_line", "sentence"),
    [
        (
            "autostop_shutdown_command:",
            "vars.autostop_shutdown_command must be a text, not null (a key with no value); set it or"
            " remove it.",
        ),
        (
            "autostop_shutdown_command: {api: stop}",
            "vars.autostop_shutdown_command must be a text, not a mapping; set it or remove it.",
        ),
        (
            "autostop_shutdown_command: [poweroff]",
            "vars.autostop_shutdown_command must be a text, not a list; set it or remove it.",
        ),
    ],
)
def test_a_bad_autostop_var_is_one_sentence_and_exit_2(tmp_path: Path, var_line: str, sentence: str) -> None:
    r = autostop(tmp_path, var_line, "--check")
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr == PREFIX + sentence + "\n"
    assert not (tmp_path / "autostop").exists()


def test_a_blank_shutdown_command_var_is_refused(tmp_path: Path) -> None:
    # `sh -c ' '` succeeds: the watcher logged a shutdown every minute and the box kept running
    r = autostop(tmp_path, "autostop_shutdown_command: ' '", "--check")
    assert r.returncode == 2, r.stdout + r.stderr
    assert (
        r.stderr
        == "error: autostop: step 'autostop': argument 'shutdown_command' must be a command, not blank.\n"
    )


def test_a_blank_shutdown_command_flag_is_a_usage_error(tmp_path: Path) -> None:
    r = autostop(tmp_path, "autostop_cron: auto", "--shutdown-command", " ")
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr == (
        "error: --shutdown-command was given an empty value (an unset shell variable?); give it a"
        " value, or leave it out.\n"
    )
