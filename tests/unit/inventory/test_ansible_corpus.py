"""Real inventories from public repositories (tests/fixtures/ansible/, SOURCES.md) read as
`ansible-inventory --list` reads them: the same hosts, each with the same address, port, user,
key, jump, connection, groups and other vars; or a clear refusal naming what is not supported.
The comparison runs ansible-inventory itself (skipped where ansible-core is not installed)."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

from gpuonboard import inventory
from gpuonboard.errors import InventoryError
from gpuonboard.inventory.ansible_compare import disagreement
from gpuonboard.inventory.ansible_ini import ini_value

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "ansible"
PATHS = sorted(f for d in CORPUS.iterdir() if d.is_dir() for f in d.iterdir() if f.is_file())
EXE = shutil.which("ansible-inventory") or str(Path(sys.executable).parent / "ansible-inventory")

# refused on purpose, each with the reason the message names (Ansible reads them, wrongly or
# with a value it renders only when it connects)
REFUSED = {
    "ansible-delegate-to": "ansible_host is a Jinja2 template",
    "cns-master-workers": "OpenSSH cannot resolve host '<MASTER_IP>'",  # a template's placeholders
    "kubespray-inventory-yml": "'hosts' must be a mapping",  # Ansible takes "node1 node2 node3" as one host
}
# read, their hosts reached by a connection that is not SSH (docker exec, a network device's
# plugin): listed, and refused only when a selection that connects includes them
NOT_SSH = {
    "community-docker-connection": "is reached by Ansible's 'community.docker.docker' connection",
    "ansible-network-connection": "is reached by Ansible's 'network_noop' connection",
}


@pytest.fixture(scope="module")
def empty_ssh_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ssh") / "config"
    path.write_text("")
    return path


def test_the_corpus_is_large_enough() -> None:
    assert len(PATHS) >= 15
    sources = (CORPUS / "SOURCES.md").read_text()
    for path in PATHS:
        assert f"`{path.parent.name}/{path.name}`" in sources


@pytest.mark.parametrize("path", PATHS, ids=[p.parent.name for p in PATHS])
def test_corpus_inventory_reads_or_is_refused_clearly(path: Path, empty_ssh_config: Path) -> None:
    reason = REFUSED.get(path.parent.name)
    if path.parent.name in NOT_SSH:
        inv = inventory.load(path, ssh_config=empty_ssh_config)
        with pytest.raises(InventoryError, match=re.escape(NOT_SSH[path.parent.name])):
            inv.check_connections(inv.hosts.values())
    elif reason is None:
        try:
            inventory.load(path, ssh_config=empty_ssh_config)
        except InventoryError as exc:  # (only an inventory with no host at all)
            assert "defines no hosts" in str(exc)
    else:
        with pytest.raises(InventoryError, match=re.escape(reason)):
            inventory.load(path, ssh_config=empty_ssh_config)


@pytest.mark.skipif(not Path(EXE).exists(), reason="ansible-core is not installed")
def test_corpus_agrees_with_ansible_inventory(empty_ssh_config: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(4) as pool:
        found = dict(
            zip(PATHS, pool.map(lambda p: disagreement(p, empty_ssh_config, EXE), PATHS), strict=True)
        )
    differ = {p.parent.name: why for p, why in found.items() if why is not None}
    agree = len(PATHS) - len(differ)
    print(f"{agree}/{len(PATHS)} inventories agree ({len(REFUSED)} refused on purpose)")
    assert set(differ) == set(REFUSED), differ
    for name, why in differ.items():
        assert why.startswith("refused (") and REFUSED[name] in why


@pytest.mark.parametrize(
    ("text", "value"),
    [  # Ansible's own typing test (test/integration/targets/inventory_ini/test_types.yml)
        ("True", True),
        ("1", 1),
        ("1.2", 1.2),
        ("1j", "1j"),
        ("'single'", "single"),
        ('"double"', "double"),
        ("b'single'", "single"),
        ("...", "..."),
        ('{"a": "b"}', {"a": "b"}),
        ("[1, 2]", [1, 2]),
        ("(1, 2)", [1, 2]),
        ("{1, 2}", [1, 2]),
        ("set()", []),
        ("None", None),
        ("invalid", "invalid"),
        ("[..., 1j, set(), {1, 2}, b'x']", ["...", "1j", [], [1, 2], "x"]),
        ("host-01.internal", "host-01.internal"),
        ("true", "true"),  # (text: only Python's True is a boolean)
        ("0755", "0755"),
        ("[" * 200_000, "[" * 200_000),  # (too long to evaluate: kept as text)
    ],
)
def test_ini_values_are_typed_as_ansible_types_them(text: str, value: object) -> None:
    assert ini_value(text) == value


@pytest.mark.skipif(not Path(EXE).exists(), reason="ansible-core is not installed")
def test_ansible_inventory_as_the_source_gives_the_same_hosts(
    empty_ssh_config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", f"{Path(EXE).parent}:{__import__('os').environ['PATH']}")
    path = CORPUS / "deepops-uncommented" / "inventory"
    own = inventory.load(path, ssh_config=empty_ssh_config)
    listed = inventory.load(f"ansible-inventory:{path}", ssh_config=empty_ssh_config)
    assert listed.hosts == own.hosts
    assert listed.hosts["gpu01"].jump == ("ubuntu@10.0.0.1",)


def test_ansible_inventory_source_that_ansible_cannot_parse_is_an_error(tmp_path: Path) -> None:
    if not Path(EXE).exists():
        pytest.skip("ansible-core is not installed")
    from gpuonboard.inventory.ansible_list import ansible_inventory_json

    bad = tmp_path / "bad.yml"
    bad.write_text("all: [1, 2\n")
    with pytest.raises(InventoryError, match="ansible-inventory --list failed"):
        ansible_inventory_json(str(bad), exe=EXE)
