"""Shared setup of the unit tests.

Unit tests share this machine with the integration tests of another xdist worker: each
holds the machine's turn shared, so that an integration test marked `alone` (one that reads
every process's name, where a unit test's fake `cron` would show) runs while none does.

No unit test reads the developer's ~/.ssh/config or ansible.cfg: results must not depend on the
machine."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuonboard.testing.turns import machine_turn


@pytest.fixture(autouse=True)
def _machine_turn(request: pytest.FixtureRequest) -> Iterator[None]:
    with machine_turn(alone=request.node.get_closest_marker("alone") is not None):
        yield


@pytest.fixture(autouse=True)
def no_user_ssh_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Never read the developer's ~/.ssh/config: results must not depend on the machine."""
    monkeypatch.setenv("GPUONBOARD_SSH_CONFIG", "/dev/null")


@pytest.fixture(scope="session")
def _empty_ansible_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    empty = tmp_path_factory.mktemp("ansible-config") / "ansible.cfg"
    empty.write_text("")
    return empty


@pytest.fixture(autouse=True)
def no_user_ansible_config(monkeypatch: pytest.MonkeyPatch, _empty_ansible_config: Path) -> None:
    """Never read the developer's ansible.cfg (~/.ansible.cfg, /etc/ansible/ansible.cfg) nor
    ANSIBLE_* connection settings: an Ansible inventory's hosts take them (ansible_cfg)."""
    from gpuonboard.inventory.ansible_cfg import OPTIONS

    monkeypatch.setenv("ANSIBLE_CONFIG", str(_empty_ansible_config))
    for _, _, names in OPTIONS:
        for name in names:
            monkeypatch.delenv(name, raising=False)
