"""YAML 1.1 reads some numbers in another base than they look (`port: 022` is 18, `gpu_count: 010`
is 8, `1:30` is 90) and renames keys that look like numbers, booleans or null (a host `01`
became `1`, `on` became `True`): the first is one sentence naming the file and line, the
second keeps the name as written."""

from __future__ import annotations

import sys
from pathlib import Path
from types import FrameType

import pytest
import yaml

from gpuonboard import inventory
from gpuonboard.errors import InventoryError
from gpuonboard.yamlload import LineDict, parse_yaml

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


def _read(text: str) -> object:
    """What parse_yaml says of `text`: its values with their types and every mapping's lines, or
    its one sentence."""

    def canon(value: object) -> object:
        if isinstance(value, LineDict):
            lines = (value.line, sorted(value.key_lines.items()))
            return ("LineDict", lines, [(k, canon(v)) for k, v in value.items()])
        if isinstance(value, list):
            return [canon(v) for v in value]
        return (type(value).__name__, repr(value))

    try:
        return canon(parse_yaml(text, Path("f.yml"), InventoryError))
    except InventoryError as exc:
        return str(exc)


REPO = Path(__file__).resolve().parents[2]
_REPO_YAML = sorted(
    p
    for d in ("inventory", "playbooks", "tests/fixtures", "docs", "examples")
    for p in (REPO / d).rglob("*.y*ml")
)
# where libyaml's parser and PyYAML's read a text otherwise (each then read by PyYAML alone), and
# the shapes around them: tabs, `?` in a flow value, `|#`, an empty tag, a byte-order mark inside,
# CR line ends, escapes, directives; duplicate keys, anchors, aliases and their bounds, numbers
_EDGES = [
    "a:\t1\n",
    "a: [1,\t2]\n",
    "a: x\ty\n",
    "a: 1\t#c\n",
    "billing: {unit: ho?ur, rate: 58.0}\n",
    "hosts: [g?pu-1, gpu-3]\n",
    "|#\n",
    ">#\n",
    "a: !\n",
    "- !\n- - x\n",
    "a: 1\n\ufeff",
    "a: 1\r\nb: 2\r\n",
    'a: "\\x41\\u00e9"\n',
    'a: "esc\\\n  aped"\n',
    "%YAML 1.1\n---\na: 1\n",
    "%YAML 2.0\n---\na: 1\n",
    "a: x\u0085y\n",
    "a: 1\na: 2\n",
    "{a: 1, a: 2}\n",
    "a: &x [1, 2]\nb: *x\n",
    "a: &x [*x]\n",
    "b: *nope\n",
    "a: &x\n  b: 1\nc:\n  <<: *x\n  b: 2\n",
    "a: &a.b 1\nb: *a.b\n",
    "l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"  # "billion laughs"
    + "".join(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]\n" for i in range(1, 9)),
    "a: &a [" + ", ".join(["x" * 1000] * 100) + "]\nb: [" + ", ".join(["*a"] * 90) + "]\n",  # 9 MB expanded
    "a:" + " [" * 70 + "]" * 70 + "\n",
    "a: " + "1" * 150 + "\n",
    "a: 022\nb: 1:30\nc: 0x1F\nd: 1_000\ne: .inf\nf: 1e3\n",
    "a: 2001-02-30\n",
    "on: yes\noff: no\nnull: ~\n01: x\n",
    "---\na: 1\n---\nb: 2\n",
    "",
    "# only a comment\n",
    "[1, 2\n",
    "a: b: c\n",
    "a:\n  - b\n c\n",
    "? [a]\n: b\n",
    "[a, b]: c\n",
    "'a\n  b': 1\n",
    "a: 'multi\n\n  line'\n",
    "a: \U0001f600\n",
    "a: \x07\n",
    "a: @x\n",
]


@pytest.mark.parametrize(
    "text", _EDGES + [p.read_text() for p in _REPO_YAML], ids=range(len(_EDGES) + len(_REPO_YAML))
)
def test_a_text_reads_the_same_with_libyaml_as_with_pyyaml_alone(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """libyaml's parser (C) gives the events where it is installed, PyYAML's own otherwise: the
    values, their types, their lines and every sentence are the same either way (the repository's
    YAML files, the shapes where the two parsers differ, the bounds' and the errors' cases)."""
    with_libyaml = _read(text)
    monkeypatch.setattr(yaml, "__with_libyaml__", False)
    assert _read(text) == with_libyaml


@pytest.mark.skipif(not yaml.__with_libyaml__, reason="libyaml is not installed")
def test_an_inventory_is_read_without_pyyamls_own_scanner() -> None:
    """A 50-host inventory as a check's (a mapping of hosts, each with its address, port, key file
    and host key) was tokenized by PyYAML's scanner in Python (8.6 of the load's 11.4 ms of CPU);
    libyaml's parser reads it now, and PyYAML's scanner scans nothing."""
    hosts = {
        f"gpu-{i:02d}": {
            "address": f"10.9.0.{i}",
            "port": 22,
            "key_file": "/k/id",
            "host_key": "SHA256:x+y/z",
        }
        for i in range(1, 51)
    }
    text = yaml.safe_dump({"defaults": {"user": "root", "order": {"gpu_count": 8}}, "hosts": hosts})
    scanner = Path(yaml.scanner.__file__)
    calls: set[str] = set()

    def count(frame: FrameType, event: str, _arg: object) -> None:
        if event == "call" and frame.f_code.co_filename == str(scanner):
            calls.add(frame.f_code.co_name)

    sys.setprofile(count)
    try:
        data = parse_yaml(text, Path("hosts.yml"), InventoryError)
    finally:
        sys.setprofile(None)
    assert data["hosts"]["gpu-50"]["port"] == 22
    assert calls <= {"__init__", "fetch_stream_start"}, calls  # (its setup: no token scanned)
