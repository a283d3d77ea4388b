"""The autostop install refused a power command only where PID 1 was no init at all. In a
container whose PID 1 is an init (systemd in an LXD or Proxmox container; s6-svscan, or the
`init` that `docker run --init` mounted as /dev/init, on an overlay root) `shutdown -h now` passed,
though it stops the container at most, never the machine the vendor bills for. The state probe
now reads the checks' own evidence (facts/slice_signs.py SIGNS_SH, one `sign` line each) and the
install refuses where that one reader says container, unless the vendor profile says a power-off
stops the bill (billing.after_poweroff: stops). Nothing read still refuses nothing."""

from __future__ import annotations

import pytest

from gpuonboard.steps.autostop import _parse_probe, install_problem, parse_settings

HEAD = "uid 0\nuser root\ndir /var/lib/gpuonboard/autostop\nmode cron.d\ncrond yes\n"
MI = "sign /proc/self/mountinfo\t"


def problem(signs: str, command: str = "shutdown -h now", after_poweroff: str = "") -> str | None:
    r = _parse_probe(HEAD + signs)
    args = {"shutdown_command": command, "billing_after_poweroff": after_poweroff}
    return install_problem("gpu1", parse_settings(args), r)


@pytest.mark.parametrize(
    ("signs", "said"),
    [
        # systemd in an LXD container on a zfs pool: its word and LXD's mounts
        (
            "sign /proc/1/comm\tsystemd\nsign /run/systemd/container\tlxc\n"
            f"{MI}/ zfs\n{MI}/dev/.lxd-mounts tmpfs\n",
            "systemd runs in a container (lxc)",
        ),
        # docker run --init (docker-init mounted as /dev/init: PID 1's name `init`), an overlay root
        (
            f"sign /proc/1/comm\tinit\n{MI}/ overlay\n",
            "/ is an overlay and PID 1 is 'init', which containers run too",
        ),
        (
            f"sign /proc/1/comm\ts6-svscan\n{MI}/ overlay\n",
            "/ is an overlay and PID 1 is 's6-svscan', which containers run too",
        ),
        # PID 1 unreadable (hidepid=2): LXD's mounts are the login's own to read
        (f"{MI}/ btrfs\n{MI}/dev/.incus-mounts tmpfs\n", "/dev/.incus-mounts is mounted"),
    ],
)
def test_a_power_command_in_a_container_whose_pid1_is_an_init_is_refused(signs: str, said: str) -> None:
    for command in ("shutdown -h now", "sudo -n poweroff", "systemctl poweroff"):
        got = problem(signs, command) or ""
        assert got.startswith(f"host gpu1: the login is inside a container ({said}"), got
        assert f"where {command!r} stops the container at most" in got
        assert "the vendor's call that stops this instance" in got
    # the vendor's own call is no power command; a profile that says a power-off stops the bill
    assert problem(signs, "curl -fsS -X POST https://api.example.com/v1/stop") is None
    assert problem(signs, after_poweroff="stops") is None


@pytest.mark.parametrize(
    "signs",
    [
        f"sign /proc/1/comm\tsystemd\nsign /proc/1/cgroup\t0::/init.scope\n{MI}/ ext4\n",  # a machine
        f"sign /proc/1/comm\tinit\n{MI}/ xfs\n",  # sysvinit's init on a disk
        f"sign /proc/1/comm\tsystemd\n{MI}/ overlay\n",  # a diskless machine booted by systemd
        f"{MI}/ ext4\n",  # /proc/1 hidden (hidepid): not known, no refusal on a guess
        "",  # nothing read (an older probe)
    ],
)
def test_a_whole_machine_or_one_not_known_runs_the_power_command(signs: str) -> None:
    assert problem(signs) is None


def test_pid1_is_read_from_the_same_signs() -> None:
    r = _parse_probe(HEAD + "sign /proc/1/comm\tbash\n")
    assert r.pid1 == "bash"
    assert (problem("sign /proc/1/comm\tbash\n") or "").startswith("host gpu1: PID 1 there is 'bash'")
