"""--limit as an Ansible user writes it: `&` intersects, `~` is a regular expression, `:` separates
like `,`, `all` is every host; a plain name that is no host or group (a typo in `!node02`, which
would otherwise spare nothing and let `teardown` take that box too) is a usage error."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard import inventory
from gpuonboard.errors import UsageError
from gpuonboard.inventory import Inventory

ANSIBLE_YAML = """\
all:
  children:
    gpus:
      hosts:
        node[01:03]:
    a100:
      hosts:
        node01:
        node02:
    bastions:
      hosts:
        jump1:
  hosts:
    spare:
"""


@pytest.fixture
def fleet(tmp_path: Path) -> Inventory:
    path = tmp_path / "hosts.yml"
    path.write_text(ANSIBLE_YAML)
    return inventory.load(path)


def selected(inv: Inventory, limit: str) -> list[str]:
    return [h.name for h in inv.select(limit=limit)]


@pytest.mark.parametrize(
    ("limit", "expected"),
    [
        ("gpus,&a100", ["node01", "node02"]),  # Ansible's intersection, not a union
        ("gpus:&a100:!node02", ["node01"]),  # Ansible's colon separator
        ("gpus:!a100", ["node03"]),
        ("~node0[13]", ["node01", "node03"]),  # a regular expression, matched from the start
        ("~(jump|spare)", ["spare", "jump1"]),
        ("all,!gpus", ["spare", "jump1"]),
        ("all", ["spare", "node01", "node02", "node03", "jump1"]),
        ("ungrouped", ["spare"]),
        ("!a1*", ["spare", "node03", "jump1"]),  # (`!a*` also matches the group `all`: below)
        ("node0*,!node02", ["node01", "node03"]),
        ("nothing-like-this-*,spare", ["spare"]),  # a glob may match nothing
    ],
)
def test_limit_follows_ansible(fleet: Inventory, limit: str, expected: list[str]) -> None:
    assert selected(fleet, limit) == expected


def test_a_glob_matches_the_group_all_as_in_ansible(fleet: Inventory) -> None:
    # ansible-core 2.19 matches globs against `all` and `ungrouped` too: `a*` is every host, and
    # `!a*` spares none (`ansible '!a*' --list-hosts`: "No hosts matched")
    assert selected(fleet, "a*") == ["spare", "node01", "node02", "node03", "jump1"]
    with pytest.raises(UsageError, match="matches the selection; nothing to do"):
        fleet.select(limit="!a*")


@pytest.mark.parametrize(
    ("limit", "term", "suggestion"),
    [
        ("gpus,!nod02", "!nod02", "node02"),  # would have selected node02, meant to be spared
        ("gpus,&a10", "&a10", "a100"),
        ("node01,nod03", "nod03", "node03"),
    ],
)
def test_a_misspelt_name_in_limit_is_refused(
    fleet: Inventory, limit: str, term: str, suggestion: str
) -> None:
    with pytest.raises(UsageError) as info:
        fleet.select(limit=limit)
    assert str(info.value) == (
        f"--limit pattern {term!r} names no host or group in {fleet.source}; fix the name"
        f" (run `invoke inventory` to list hosts and groups); did you mean {suggestion!r}?"
    )


def test_a_bad_regular_expression_in_limit_is_refused(fleet: Inventory) -> None:
    with pytest.raises(UsageError, match=r"^--limit pattern '~node\(' is not a valid regular expression"):
        fleet.select(limit="~node(")


def test_an_ipv6_host_name_is_not_split_at_its_colons(tmp_path: Path) -> None:
    path = tmp_path / "hosts.ini"
    path.write_text("[v6]\n2001:db8::7\n2001:db8::8\n")
    inv = inventory.load(path)
    assert selected(inv, "2001:db8::7") == ["2001:db8::7"]
    assert selected(inv, "v6,!2001:db8::8") == ["2001:db8::7"]
