"""Two runs at once for the same host with different settings (another `--known-hosts`) each
keep their own generated OpenSSH config: one file per host let the second run's write change
the known_hosts the first run's rsync checked the host key against."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuonboard.connection import openssh
from gpuonboard.inventory import Host, Inventory
from gpuonboard.testing import TestHost, TestHostPool


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestHostPool, TestHost]]:
    with TestHostPool(tmp_path_factory.mktemp("oqa-cfg"), subnet=250 - os.getpid() % 9) as pool:
        yield pool, pool.add("cfg")


def _ssh_rc(config: Path, alias: str) -> tuple[int, str]:
    r = subprocess.run(
        ["ssh", "-F", str(config), alias, "true"], capture_output=True, text=True, timeout=30, check=False
    )
    return r.returncode, r.stderr


def test_two_runs_with_different_known_hosts_do_not_share_a_config(
    box: tuple[TestHostPool, TestHost], tmp_path: Path
) -> None:
    pool, h = box
    host = Host(name="gpu1", address=h.address, port=h.port, user="root", key_file=str(pool.client_key))
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    mine.write_text(h.known_hosts_line() + "\n")  # this run's pins: the host's real key
    other = tmp_path / "other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True, timeout=15)
    theirs.write_text(
        f"{h.known_hosts_line().split()[0]} {' '.join(Path(f'{other}.pub').read_text().split()[:2])}\n"
    )
    text, alias = openssh.config_text(host, None, mine)
    config = openssh.write_config(tmp_path, host, text)
    assert _ssh_rc(config, alias)[0] == 0
    # meanwhile another run (same project, same host, its own --known-hosts) writes its config
    their_text, _ = openssh.config_text(host, None, theirs)
    their_config = openssh.write_config(tmp_path, host, their_text)
    rc, err = _ssh_rc(config, alias)  # this run's next rsync: still its own pins
    assert rc == 0, err
    assert their_config != config
    assert config.read_text() == text and their_config.read_text() == their_text
    rc, err = _ssh_rc(their_config, alias)  # and theirs still refuses the key it does not pin
    assert rc != 0 and "Host key verification failed" in err
    # the same settings again: the same file (rewritten, mode 0600), not one more
    assert openssh.write_config(tmp_path, host, text) == config
    assert oct(config.stat().st_mode & 0o777) == "0o600"
    assert sorted(p.name for p in config.parent.iterdir()) == sorted([config.name, their_config.name])


def test_another_host_with_the_same_settings_text_gets_its_own_file(tmp_path: Path) -> None:
    """The name covers the host too: two inventory names for one address (same text)."""
    a = Host(name="a", address="10.0.0.1", user="root")
    b = Host(name="b", address="10.0.0.1", user="root")
    text, _ = openssh.config_text(a, None, tmp_path / "kh")
    assert openssh.config_text(b, None, tmp_path / "kh")[0] == text
    assert openssh.write_config(tmp_path, a, text) != openssh.write_config(tmp_path, b, text)


def test_a_project_path_that_is_not_utf8_gets_its_config(
    box: tuple[TestHostPool, TestHost], tmp_path: Path
) -> None:
    """A project dir named in Latin-1 (`caf\\xe9`): the config holds the path's own bytes (it
    stopped the upload with "cannot write the OpenSSH config" and the pull with a traceback)."""
    pool, h = box
    project = Path(os.fsdecode(os.fsencode(tmp_path) + b"/caf\xe9"))
    (project / ".gpuonboard").mkdir(parents=True)
    known = project / ".gpuonboard" / "known_hosts"
    known.write_text(h.known_hosts_line() + "\n")
    host = Host(name="gpu1", address=h.address, port=h.port, user="root", key_file=str(pool.client_key))
    text, alias = openssh.config_text(host, None, known)
    config = openssh.write_config(project, host, text)
    assert os.fsencode(known) in config.read_bytes()
    rc, err = _ssh_rc(config, alias)
    assert rc == 0, err


# The OpenSSH side (rsync, shard streams, the teardown pull) through a jump host, from a
# project whose path holds a space, a quote or a `%`: the hop must still read the same strict
# config (our known_hosts), and a changed key of the jump host is still refused there.


@pytest.fixture(scope="module")
def chain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestHostPool, TestHost, TestHost]]:
    base = tmp_path_factory.mktemp("sshqa-jump")
    with TestHostPool(base, subnet=220 - os.getpid() % 10) as pool:
        yield pool, pool.add("bastion"), pool.add("inner")


def _ssh(config: Path, alias: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["ssh", "-F", str(config), alias, "echo", "via-jump"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


@pytest.mark.parametrize("dirname", ["My Projects", "it's", "100%done"])
def test_a_jump_chain_works_from_a_project_path_with_odd_characters(
    chain: tuple[TestHostPool, TestHost, TestHost], tmp_path: Path, dirname: str
) -> None:
    pool, bastion, inner = chain
    project = tmp_path / dirname
    project.mkdir()
    known = project / ".gpuonboard" / "known_hosts"
    known.parent.mkdir()
    known.write_text(f"{bastion.known_hosts_line()}\n{inner.known_hosts_line()}\n")
    key = str(pool.client_key)
    hops = {
        "bastion": Host(
            name="bastion", address=bastion.address, port=bastion.port, user="root", key_file=key
        ),
    }
    target = Host(
        name="inner", address=inner.address, port=inner.port, user="root", key_file=key, jump=("bastion",)
    )
    inventory = Inventory(source=project, hosts={**hops, "inner": target}, groups={}, vendors={})
    text, alias = openssh.config_text(target, inventory, known)
    config = openssh.write_config(project, target, text)
    r = _ssh(config, alias)
    assert (r.returncode, r.stdout) == (0, "via-jump\n"), r.stderr
    # the hop still checks its key against our known_hosts only (strictly)
    known.write_text(f"{inner.known_hosts_line()}\n")
    r = _ssh(config, alias)
    assert r.returncode != 0 and "Host key verification failed" in r.stderr
