"""The OpenSSH side (rsync, shard streams, the teardown pull) through a jump host, from a
project whose path holds a space, a quote or a `%`: the hop must still read the same strict
config (our known_hosts), and a changed key of the jump host is still refused there."""

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
