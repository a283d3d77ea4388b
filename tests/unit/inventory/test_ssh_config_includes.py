"""The Includes of an inventory's own SSH config, looked at before `ssh -G` may read it: a FIFO
Included hung the loader for ever (a blocking open); an Include loop or an oversize Include said
"without OpenSSH's `ssh` on PATH gpuonboard does not follow Include: install the OpenSSH client"
with ssh installed. Now each is one sentence naming the file, line and reason (exit 2), and a
plain Include is read by OpenSSH itself. Through the real command line, bounded in time."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(shutil.which("ssh") is None, reason="OpenSSH's ssh client is not installed")


def _inventory(
    tmp_path: Path, config: str, hosts: str = "  gpu1:\n    order: {gpu_count: 1}\n"
) -> subprocess.CompletedProcess[str]:
    inv = tmp_path / "inventory"
    inv.mkdir(exist_ok=True)
    (inv / "sshcfg").write_text(config)
    (inv / "hosts.yml").write_text(f"ssh_config: sshcfg\nhosts:\n{hosts}")
    cmd = [sys.executable, "-c", "from gpuonboard.cli import main; main()", "inventory", "--json"]
    env = {**os.environ, "HOME": str(tmp_path)}
    return subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=30, env=env)


def _refused(r: subprocess.CompletedProcess[str], starts: str) -> str:
    assert r.returncode == 2, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {starts}"), r.stderr
    assert "install the OpenSSH client" not in r.stderr and "Traceback" not in r.stderr
    return lines[0]


def test_an_included_fifo_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    r = _inventory(tmp_path, f"Include {fifo}\nHost gpu1\n  HostName 127.0.0.1\n")
    line = _refused(r, f"{tmp_path}/inventory/sshcfg, line 1: Include {fifo} cannot be read:")
    assert "FIFO" in line


@pytest.mark.parametrize("include", ["{inv}/sshcfg", "{inv}/*"])
def test_an_include_loop_says_so(tmp_path: Path, include: str) -> None:
    config = f"Include {include.format(inv=tmp_path / 'inventory')}\nHost gpu1\n  HostName 127.0.0.1\n"
    r = _inventory(tmp_path, config)
    _refused(r, f"{tmp_path}/inventory/sshcfg, line 1: Include loops back to this file; remove it.")


def test_an_oversize_include_says_so(tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.write_text("Host gpu1\n  HostName 127.0.0.1\n" + "#" * (2 << 20) + "\n")
    r = _inventory(tmp_path, f"# mine\nInclude {big}\n")
    assert "larger than 1 MiB" in _refused(
        r, f"{tmp_path}/inventory/sshcfg, line 2: Include {big} cannot be read:"
    )


def test_an_include_loop_two_files_deep_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "a").write_text(f"Include {tmp_path / 'b'}\n")
    (tmp_path / "b").write_text(f"Include {tmp_path / 'a'}\n")
    r = _inventory(tmp_path, f"Include {tmp_path / 'a'}\nHost gpu1\n  HostName 127.0.0.1\n")
    _refused(r, f"{tmp_path / 'b'}, line 1: Include loops back to {tmp_path / 'a'}; remove it.")


def test_a_plain_include_is_read_by_openssh(tmp_path: Path) -> None:
    (tmp_path / "more").write_text("Host gpu1\n  HostName 127.0.0.9\n  Port 2200\n")
    r = _inventory(tmp_path, f"Include {tmp_path / 'more'}\n")
    assert r.returncode == 0, r.stderr
    assert '"address": "127.0.0.9"' in r.stdout and '"port": 2200' in r.stdout


def test_an_include_beside_a_match_exec_does_not_ask_to_install_ssh(tmp_path: Path) -> None:
    (tmp_path / "more").write_text("Host gpu1\n  HostName 127.0.0.9\n")
    config = f'Match host other exec "touch {tmp_path / "ran"}"\n  User x\nInclude {tmp_path / "more"}\n'
    r = _inventory(tmp_path, config)
    assert r.returncode == 2 and not (tmp_path / "ran").exists(), r.stderr
    assert "install the OpenSSH client" not in r.stderr and "without OpenSSH" not in r.stderr, r.stderr


def _problem_includes(tmp_path: Path) -> dict[str, tuple[str, str]]:
    """Each kind of Include that keeps the config from `ssh -G`: its config and the start of its
    sentence. A Teleport `tsh config` block (Match exec "tsh resolve %h") is the common one."""
    (tmp_path / "tsh.conf").write_text('Match exec "tsh resolve %h"\n  ProxyCommand tsh proxy ssh %r@%h:%p\n')
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "big").write_text("#" * (2 << 20) + "\n")
    at = f"{tmp_path}/inventory/sshcfg, line 3:"
    head = "Host other\n  HostName 10.0.0.9\nInclude "
    return {
        "match-exec": (f"{head}{tmp_path / 'tsh.conf'}\n", f"{at} Include"),
        "fifo": (f"{head}{tmp_path / 'fifo'}\n", f"{at} Include"),
        "oversize": (f"{head}{tmp_path / 'big'}\n", f"{at} Include"),
        "loop": (f"{head}{tmp_path}/inventory/sshcfg\n", f"{at} Include loops"),
    }


@pytest.mark.parametrize("kind", ["match-exec", "fifo", "oversize", "loop"])
def test_a_problem_include_spares_hosts_that_have_an_address(tmp_path: Path, kind: str) -> None:
    """Such an Include refused the whole inventory at load, even hosts that need nothing from
    the config; now those load (and the FIFO is still never waited on)."""
    config, _ = _problem_includes(tmp_path)[kind]
    r = _inventory(tmp_path, config, "  gpu1:\n    address: 10.0.0.5\n    user: ubuntu\n")
    assert r.returncode == 0, r.stderr
    assert "10.0.0.5" in r.stdout


@pytest.mark.parametrize("kind", ["match-exec", "fifo", "oversize", "loop"])
def test_a_problem_include_refuses_a_host_that_needs_the_config(tmp_path: Path, kind: str) -> None:
    config, starts = _problem_includes(tmp_path)[kind]
    hosts = "  gpu1:\n    address: 10.0.0.5\n  gpu2:\n    user: ubuntu\n"
    line = _refused(_inventory(tmp_path, config, hosts), starts)
    assert "without OpenSSH" not in line, line
