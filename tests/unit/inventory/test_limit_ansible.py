"""--limit selects what `ansible -i INV PATTERN --list-hosts` selects, run for real (ansible-core,
a test-only dependency) over real inventories of tests/fixtures/ansible: subscripts
(`g[0]`, `g[1:3]`, `g[-1]`, `g[1:]`) over the hosts in Ansible's order, `:`, `:&`, `:!`, `,`,
`~regex` and `@FILE`; and the patterns Ansible reads but gpuonboard refuses, each with one
sentence naming the pattern and the Ansible feature."""

from __future__ import annotations

import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from gpuonboard import inventory
from gpuonboard.errors import UsageError
from gpuonboard.inventory import Inventory

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "ansible"
COMPLEX = FIXTURES / "ansible-complex-ini" / "complex.ini"  # nested children, a parent's own host
KOLLA = FIXTURES / "kolla-multinode" / "multinode"  # 177 groups, children two levels deep
K3S = FIXTURES / "k3s-sample" / "inventory-sample.yml"  # top-level YAML groups, IP names

LIMIT_FILE = "test_group1[0]\n\n!test1\nihavenogroup\n"  # (a .retry-style file: one a line)

# (inventory, pattern): `@FILE` is given as `ansible all --limit @FILE` (only --limit reads it)
PATTERNS = [
    (COMPLEX, "parent_3[0]"),
    (COMPLEX, "parent_3[1:3]"),
    (COMPLEX, "parent_3[-1]"),
    (COMPLEX, "parent_3[2:]"),
    (COMPLEX, "test_group1[1],ihavenogroup"),
    (COMPLEX, "test_group1:&test_group2"),
    (COMPLEX, "parent_1:!test2"),
    (COMPLEX, "test_group2:test_group3:!test3"),
    (COMPLEX, "test_group*,!test_group3"),
    (COMPLEX, "~test[1-3]"),
    (COMPLEX, "ungrouped"),
    (COMPLEX, "@FILE"),
    (KOLLA, "control[1:]"),
    (KOLLA, "network[-1]"),
    (KOLLA, "control[0:1],network[1]"),
    (KOLLA, "baremetal:&compute"),
    (KOLLA, "~^(control|network)0[12]$"),
    (KOLLA, "storage,monitoring,!monitoring01"),
    (K3S, "agent[0]"),
    (K3S, "k3s_cluster[1:]"),
    (K3S, "192.16.35.1*"),
    (K3S, "server:agent"),
    (K3S, "k3s_cluster:!192.16.35.12"),
    (K3S, "all[-1]"),
]

# Ansible reads these; gpuonboard refuses them with one sentence that names what it does not do
REFUSED = [
    (KOLLA, "all[0:2]", "Ansible's order of the hosts of 'all' is not fixed"),  # (varies per run)
    (COMPLEX, "test_group*[0]", "a subscript over 3 groups"),
    (COMPLEX, "test_group1[9]", "selects no host: 'test_group1' matches 3 hosts"),
    (COMPLEX, "test_group1[0-1]", "Ansible has removed the [x-y] subscript"),
    (COMPLEX, "localhost", "names Ansible's implicit localhost"),
    (COMPLEX, "test-[12]", "Ansible reads '[12]' as a subscript"),
]


def ansible_bin() -> str | None:
    beside = Path(sys.executable).parent / "ansible"
    return str(beside) if beside.exists() else shutil.which("ansible")


def ansible_hosts(inv: Path, pattern: str, limit_file: Path) -> set[str]:
    """The hosts `ansible -i INV PATTERN --list-hosts` lists."""
    args = ["all", "--limit", f"@{limit_file}"] if pattern == "@FILE" else [pattern]
    out = subprocess.run(
        [str(ansible_bin()), "-i", str(inv), *args, "--list-hosts"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=limit_file.parent,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("hosts ("))
    return {line.strip() for line in lines[start + 1 :] if line.strip()}


def our_hosts(inv: Inventory, pattern: str, limit_file: Path) -> set[str]:
    limit = f"@{limit_file}" if pattern == "@FILE" else pattern
    try:
        return {h.name for h in inv.select(limit=limit)}
    except UsageError as exc:
        if "nothing to do" in str(exc):  # (Ansible: "No hosts matched")
            return set()
        raise


@pytest.mark.skipif(ansible_bin() is None, reason="ansible-core is not installed (a test-only dependency)")
def test_limit_agrees_with_ansible_list_hosts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    limit_file = tmp_path / "limit.txt"
    limit_file.write_text(LIMIT_FILE)
    with ThreadPoolExecutor(2) as pool:
        theirs = list(pool.map(lambda case: ansible_hosts(case[0], case[1], limit_file), PATTERNS))
    loaded = {path: inventory.load(path) for path in {p for p, _ in PATTERNS}}
    ours = [our_hosts(loaded[path], pattern, limit_file) for path, pattern in PATTERNS]
    differ = [
        f"{path.parent.name} {pattern!r}: ansible {sorted(a)}, ours {sorted(o)}"
        for (path, pattern), a, o in zip(PATTERNS, theirs, ours, strict=True)
        if a != o
    ]
    with capsys.disabled():
        print(
            f"\n--limit: {len(PATTERNS) - len(differ)}/{len(PATTERNS)} patterns agree"
            " with ansible --list-hosts"
        )
    assert not differ, "\n".join(differ)
    assert all(theirs), "every pattern selects some host (an empty answer compares nothing)"


@pytest.mark.parametrize(("path", "pattern", "sentence"), REFUSED)
def test_what_is_not_followed_is_refused_in_one_sentence(path: Path, pattern: str, sentence: str) -> None:
    inv = inventory.load(path)
    with pytest.raises(UsageError) as info:
        inv.select(limit=pattern)
    text = str(info.value)
    assert sentence in text
    assert repr(pattern) in text
    assert "\n" not in text and text.endswith((".", "?"))


def test_a_limit_file_is_read_one_pattern_a_line(tmp_path: Path) -> None:
    path = tmp_path / "limit.txt"
    path.write_text(LIMIT_FILE)
    inv = inventory.load(COMPLEX)
    assert [h.name for h in inv.select(limit=f"@{path}")] == ["ihavenogroup"]
    with pytest.raises(UsageError, match=r"^--limit '@.*missing\.txt': .* does not exist; Ansible's @FILE"):
        inv.select(limit=f"@{tmp_path / 'missing.txt'}")
