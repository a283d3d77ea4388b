"""YAML 1.1 reads some numbers in another base than they look (`port: 022` is 18, `gpu_count: 010`
is 8, `1:30` is 90) and renames keys that look like numbers, booleans or null (a host `01`
became `1`, `on` became `True`): the first is one sentence naming the file and line, the
second keeps the name as written."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard import inventory
from gpuonboard.errors import InventoryError
from gpuonboard.yamlload import parse_yaml

P = Path("inventory/hosts.yml")


OCTAL = (
    "a number written with a leading zero is read by YAML as octal (022 is 18), not as written;"
    ' quote it ("0644") where it is meant as written (a file mode, a time), else write it without'
    " the leading zeros."
)
BASE60 = (
    "a number written with ':' is read by YAML in base 60 (1:30 is 90), not as written;"
    ' quote it ("1:30") where it is meant as written (a file mode, a time), else write it as the'
    " number itself."
)


@pytest.mark.parametrize(
    ("text", "said"),
    [("port: 022", OCTAL), ("n: [1, 010]", OCTAL), ("t: -07", OCTAL), ("t: 1:30", BASE60)],
)
def test_a_number_read_in_another_base_is_refused(text: str, said: str) -> None:
    with pytest.raises(InventoryError) as exc:
        parse_yaml(text, P, InventoryError)
    assert str(exc.value) == f"{P}, line 1: {said}", exc.value


def test_the_value_itself_is_never_quoted(tmp_path: Path) -> None:
    """(a vars: block may hold a password that looks like 0123)"""
    with pytest.raises(InventoryError) as exc:
        parse_yaml("vars:\n  registry_password: 04711\n", P, InventoryError)
    assert "4711" not in str(exc.value) and "line 2" in str(exc.value)


def test_a_lax_load_reads_numbers_as_yaml_does() -> None:
    """(the registry credentials file: a password that is no text gets its own sentence there)"""
    assert parse_yaml("p: 0123", P, InventoryError, strict_numbers=False) == {"p": 83}


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("v: 22", 22),
        ("v: 0", 0),
        ("v: 0x1F", 31),
        ("v: 0b101", 5),
        ("v: 1_000", 1000),
        ("v: '022'", "022"),
        ("v: -7", -7),
    ],
)
def test_plain_numbers_are_read_as_before(text: str, value: object) -> None:
    assert parse_yaml(text, P, InventoryError) == {"v": value}


def test_keys_that_look_like_numbers_or_booleans_keep_their_names() -> None:
    doc = parse_yaml("hosts:\n  01: {}\n  on: {}\n  null: {}\n  1.5: {}\n", P, InventoryError)
    assert list(doc["hosts"]) == ["01", "on", "null", "1.5"]


def test_an_octal_port_in_an_inventory_stops_the_run_naming_the_line(tmp_path: Path) -> None:
    f = tmp_path / "hosts.yml"
    f.write_text("hosts:\n  gpu-1:\n    address: 10.0.0.7\n    port: 022\n")
    with pytest.raises(InventoryError, match=r"hosts\.yml, line 4: a number written with a leading zero"):
        inventory.load(f)


# libyaml's count first (yamlload._precount) must say what the parse itself says, or nothing:
# each text read with the count on and off (the bound lowered so that a test takes milliseconds)
_MANY = "".join(f"- v{i}\n" for i in range(3000))
_PRECOUNT_CASES = [
    "x: [" + "a," * 3000 + "]\n",  # past the bound
    "x: [" + ("[" * 40 + "]" * 40 + ",") * 80 + "]\n",  # nested: counting more
    "a: 1\n---\n" + _MANY,  # a second document: refused as one, not for its size
    "a: *nowhere\nb:\n" + _MANY,  # an undefined alias first
    "a: &x 1\nb: &x 2\nc:\n" + _MANY,  # a duplicate anchor first
    "a: &x [*x]\nb:\n" + _MANY,  # an alias inside its own anchor
    "a: " + "[" * 70 + "]" * 70 + "\nb:\n" + _MANY,  # too deep first
    "".join(f"k{i}: {i}\n" for i in range(900)),  # under the bound: read
]


@pytest.mark.parametrize("text", _PRECOUNT_CASES)
def test_counting_with_libyaml_first_says_what_the_parse_says(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gpuonboard import yamlload

    monkeypatch.setattr(yamlload, "MAX_PARSED_NODES", 2000)

    def outcome(precount_from: int) -> str:
        monkeypatch.setattr(yamlload, "PRECOUNT_BYTES", precount_from)
        try:
            return repr(parse_yaml(text, Path("f.yml"), InventoryError))[:200]
        except InventoryError as exc:
            return str(exc)

    assert outcome(0) == outcome(1 << 40)


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        ("hosts:\n\tgpu1: {address: 10.0.0.1}\n", 2, 1),  # a tab indenting (an editor's Tab key)
        ("order:\n  gpu_count:\t8\n", 2, 13),  # a tab after the colon
        ("steps:\n  - step: acceptance\n\t- step: container\n", 3, 1),
    ],
)
def test_a_tab_is_named_as_one_with_what_to_do(text: str, line: int, column: int) -> None:
    """A tab where PyYAML (and Ansible's loader, the same parser) reads none said "invalid YAML:
    found character '\\t' that cannot start any token; check the indentation, quotes and brackets",
    PyYAML's words and no fix; now it names the tab's line and column and says to use spaces."""
    with pytest.raises(InventoryError) as err:
        parse_yaml(text, Path("hosts.yml"), InventoryError)
    assert str(err.value) == (
        f"hosts.yml, line {line}: a tab (column {column}) where YAML allows only spaces, which indent and"
        " separate its values; replace the tabs with spaces."
    )
