"""A user's ssh_config with Match blocks (issue 26): paramiko ran `Match exec` commands on this
machine, took `Match localnetwork`/`tagged`/a typo as matching every host, and failed with
KeyError on any Match block (the CLI said "internal error", exit 70). gpuonboard.inventory.sshconfig
reads the file with paramiko's parser, runs nothing, evaluates what it can as OpenSSH does,
and refuses, naming the file and line, a block it cannot decide for the host looked up."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import paramiko
import pytest

from gpuonboard.errors import ExitCode, InventoryError
from gpuonboard.inventory.sshconfig import UserSSHConfig


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "ssh_config"
    path.write_text(text)
    return path


def test_match_exec_runs_nothing_and_is_refused_naming_file_line_and_host(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    path = _config(
        tmp_path,
        f'Host box1\n  HostName 10.0.0.1\n\nMatch host 10.0.0.1 exec "touch {marker}"\n  User evil\n',
    )
    cfg = UserSSHConfig.read(path)
    with pytest.raises(InventoryError) as err:
        cfg.lookup("box1")
    assert not marker.exists()
    assert err.value.exit_code == ExitCode.USAGE
    assert str(err.value) == (
        f"{path}, line 4: `Match exec` would decide the settings of host 'box1', and it is not supported"
        " (gpuonboard never runs commands from an SSH config); give 'box1' its address (and user,"
        " key_file, jump) in the inventory, or match it with `Host` or `Match host` there."
    )


def test_a_match_exec_block_ruled_out_by_its_other_criteria_does_not_apply(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    path = _config(
        tmp_path,
        f'Host box1\n  HostName 10.0.0.1\nMatch exec "touch {marker}" host other\n  Port 2200\n'
        "Match host 10.0.0.1 user nobody-here\n  Port 2201\n",
    )
    cfg = UserSSHConfig.read(path)
    assert cfg.lookup("box1") == {"hostname": "10.0.0.1"}
    assert not marker.exists()
    assert cfg.get_hostnames() == {"box1", "*"}  # (paramiko's own: KeyError 'host')


def test_other_match_criteria_are_evaluated_as_openssh_does(tmp_path: Path) -> None:
    path = _config(
        tmp_path,
        "Host box1\n  HostName 10.0.0.1\nMatch tagged gpu\n  User tagged\nMatch final\n  Port 2200\n"
        "Match canonical\n  Port 2201\nMatch originalhost box1\n  IdentityFile ~/.ssh/box\n"
        "Host tagged1\n  Tag gpu\nMatch all\n  Compression yes\n",
    )
    cfg = UserSSHConfig.read(path)
    box = cfg.lookup("box1")
    assert "user" not in box  # no Tag: `Match tagged gpu` does not apply (paramiko: it did)
    assert box["port"] == "2200"  # `final` applies in the final pass; `canonical` not at all
    assert box["identityfile"] == [str(Path("~/.ssh/box").expanduser())]
    assert box["compression"] == "yes"
    assert cfg.lookup("tagged1")["user"] == "tagged"


@pytest.mark.parametrize(
    ("criterion", "why"),
    [
        ("localnetwork 10.0.0.0/8", "gpuonboard does not read this machine's network interfaces for it"),
        ("bogus x", "OpenSSH does not know it either, or gpuonboard does not yet"),
    ],
)
def test_a_criterion_that_cannot_be_decided_is_refused(tmp_path: Path, criterion: str, why: str) -> None:
    path = _config(tmp_path, f"Host box1\n  HostName 10.0.0.1\nMatch {criterion}\n  Port 2200\n")
    with pytest.raises(InventoryError, match=rf"line 3: `Match {criterion.split()[0]}` .* \({why}\)"):
        UserSSHConfig.read(path).lookup("box1")


def test_a_huge_or_special_file_is_refused_before_reading(tmp_path: Path) -> None:
    big = _config(tmp_path, "# " + "x" * (2 << 20) + "\n")
    with pytest.raises(paramiko.ConfigParseError, match="more than an SSH config's limit of 1,048,576"):
        UserSSHConfig.read(big)
    with pytest.raises(paramiko.ConfigParseError, match="not a regular file"):
        UserSSHConfig.read(tmp_path)
    bad = _config(tmp_path, "Host a\n  HostName x\nMatch exec\n")
    with pytest.raises(paramiko.ConfigParseError, match="line 3: Missing parameter to Match 'exec'"):
        UserSSHConfig.read(bad)


def test_a_match_exec_in_the_inventorys_ssh_config_is_exit_2_through_the_cli(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    inv = tmp_path / "inventory"
    inv.mkdir()
    (inv / "ssh_config").write_text(
        f'Host box1\n  HostName 10.0.0.1\nMatch exec "touch {marker}"\n  User x\n'
    )
    (inv / "hosts.yml").write_text("ssh_config: ssh_config\nhosts:\n  box1: {}\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    r = subprocess.run(
        [sys.executable, "-c", "from gpuonboard.cli import main; main()", "inventory"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
    )
    assert not marker.exists()
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith(f"error: {inv / 'ssh_config'}, line 3: `Match exec` would decide"), r.stderr


def test_an_ssh_config_of_thousands_of_blocks_is_refused_at_once(tmp_path: Path) -> None:
    """1,000 hosts looked up in 8,000 wildcard Host blocks ran for minutes: past 2,000 blocks
    the config is refused naming the line (plain `Host name` blocks are looked up by index)."""
    text = "".join(f"Host x{i}a* x{i}b* x{i}c*\n  User u\n" for i in range(2_100))
    start = time.monotonic()
    expected = r"line 4001: more than 2,000 Match blocks and Host blocks with wildcards"
    with pytest.raises(paramiko.ConfigParseError, match=expected):
        UserSSHConfig.from_text_at(text, tmp_path / "cfg")
    assert time.monotonic() - start < 5


def test_an_inventory_ssh_config_with_an_include_runs_nothing_either(tmp_path: Path) -> None:
    """An inventory's own ssh_config reaches `ssh -G` only when it can run nothing there: an
    Include (which could bring a `Match exec`) is read by the own reader, which refuses it."""
    import subprocess
    import sys

    marker = tmp_path / "ran"
    inv = tmp_path / "inventory"
    inv.mkdir()
    (inv / "more").write_text(f'Match exec "touch {marker}"\n  User x\n')
    (inv / "ssh_config").write_text(f"Include {inv / 'more'}\nHost box1\n  HostName 10.0.0.1\n")
    (inv / "hosts.yml").write_text("ssh_config: ssh_config\nhosts:\n  box1: {}\n")
    r = subprocess.run(
        [sys.executable, "-c", "from gpuonboard.cli import main; main()", "inventory"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        timeout=60,
    )
    assert r.returncode == 2, r.stderr
    assert "Include" in r.stderr and str(inv / "ssh_config") in r.stderr
    assert not marker.exists()
