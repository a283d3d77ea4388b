"""Fuzz (hypothesis) over inventory and playbook YAML (issue 26): mutations of the repository's
own inventory, vendor profiles and playbooks (values of every type, huge and non-finite numbers,
odd strings, keys added and removed, deep nesting, repeated anchors, truncation, stray bytes)
go through the loader the CLI uses. Whatever the input, the outcome is exit 0, 2 or 3 with one
plain sentence, in bounded time and memory: never an internal error (exit 70) or a traceback.

Most examples run in-process through the same api calls as `invoke inventory` and the part of
`invoke provision` before any connection (for speed); a few fixed nasty documents go through
the real CLI as a child process."""

from __future__ import annotations

import copy
import os
import resource
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuonboard import api, inventory
from gpuonboard.errors import GpuonboardError
from gpuonboard.runner import playbook

REPO = Path(__file__).resolve().parents[3]
SEED_INVENTORY = (REPO / "inventory" / "hosts.yml").read_text()
SEED_VENDORS = {p.stem: p.read_text() for p in sorted((REPO / "inventory" / "vendors").glob("*.yml"))}
SEED_PLAYBOOKS = {p.stem: p.read_text() for p in sorted((REPO / "playbooks").glob("*.yml"))}
SEED_ANSIBLE_YAML = """\
all:
  vars: {ansible_user: ops}
  hosts:
    10.0.0.7:
  children:
    gpus:
      vars: {order: {gpu_model: A100, gpu_count: 8}}
      hosts:
        gpu-[01:04]: {ansible_port: 2222}
        box: {ansible_host: 10.0.0.9, gpuonboard_data_dir: /data}
"""
SEED_INI = """\
[gpus]
gpu-[01:04] ansible_user=ubuntu
box ansible_host=10.0.0.9 ansible_port=2200
[gpus:vars]
gpuonboard_vendor=wuhan-idc
[all:children]
gpus
"""

PER_EXAMPLE_S = 2.0  # wall time of one load, whatever the input
PEAK_BYTES = 256 << 20  # Python allocations of one load (tracemalloc's peak)
ALLOWED = (0, 2, 3)

KNOWN_KEYS = sorted(
    {*inventory.HOST_KEYS, *inventory.ORDER_KEYS, *inventory.VENDOR_KEYS, *inventory.TOP_KEYS}
    | {"steps", "step", "args", "name", "all", "children", "hosts", "vars", "mount", "min_size", "rate"}
    | {"ansible_host", "ansible_port", "ansible_user", "argv", "src", "dest", "source"}
)
ODD_TEXTS = [
    "",
    " ",
    "..",
    "/",
    "/data/..",
    "../../../../tmp/x",
    ".hidden",
    "~root",
    "a/b",
    "10.0.0.1:2222",
    "::1",
    "[::1]:22",
    "fe80::1%eth0",
    "1e300GB",
    "9" * 400 + "GB",
    "8x400G",
    "8x" + "9" * 400 + "G",
    "SHA256:abc",
    "{{ host.name }}",
    "{{ undefined_thing }}",
    "{{ 1/0 }}",
    "{% raw %}{{x}}{% endraw %}",
    "{{",
    "a\nb",
    "tab\there",
    "ünïcødé 武汉",
    "\u2028",
    "-oProxyCommand=x",
    "~(a+)+$",
    "535.54",
    "none",
    "local",
    "hour",
]
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(ODD_TEXTS),
    st.text(max_size=12),
)
VALUES = st.recursive(
    SCALARS,
    lambda kids: (
        st.lists(kids, max_size=4)
        | st.dictionaries(st.sampled_from(KNOWN_KEYS) | st.text(max_size=8), kids, max_size=4)
    ),
    max_leaves=12,
)


def _laughs(levels: int) -> list[Any]:
    """One list repeated ten times per level: safe_dump writes it with anchors and aliases."""
    node: list[Any] = ["lol"] * 10
    for _ in range(levels):
        node = [node] * 10
    return node


def _nested(depth: int) -> Any:
    node: Any = "deep"
    for _ in range(depth):
        node = [node]
    return node


SPECIAL = st.sampled_from(
    [
        lambda: _laughs(3),  # 10^4 values: fine
        lambda: _laughs(6),  # 10^7 values: past the bound
        lambda: [["x" * 100_000]] * 200,  # 20 MB of text once the aliases expand
        lambda: _nested(30),
        lambda: _nested(90),  # deeper than the bound
    ]
).map(lambda make: make())


def _paths(doc: Any, here: tuple[Any, ...] = (), seen: set[int] | None = None) -> Iterator[tuple[Any, ...]]:
    """Every place in a parsed document (mapping keys and list indexes), the root first; a
    value held in several places (a repeated list) is walked once."""
    seen = set() if seen is None else seen
    yield here
    if id(doc) in seen:
        return
    seen.add(id(doc))
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, (*here, k), seen)
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _paths(v, (*here, i), seen)


def _at(doc: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


@st.composite
def mutated_yaml(draw: st.DrawFn, seed_text: str) -> str:
    """A seed document with a few values replaced, keys added or removed, then written back as
    YAML (with anchors where a value repeats), and maybe cut short or given a stray byte."""
    doc = copy.deepcopy(yaml.safe_load(seed_text))
    for _ in range(draw(st.integers(min_value=0, max_value=4))):
        paths = list(_paths(doc))
        path = draw(st.sampled_from(paths))
        value = draw(st.one_of(VALUES, SPECIAL) if draw(st.integers(0, 9)) == 0 else VALUES)
        if not path:
            doc = value if draw(st.booleans()) else doc
            continue
        parent = _at(doc, path[:-1])
        action = draw(st.sampled_from(["replace", "replace", "delete", "add"]))
        if action == "delete":
            del parent[path[-1]]
        elif action == "add" and isinstance(parent, dict):
            parent[draw(st.sampled_from(KNOWN_KEYS))] = value
        else:
            parent[path[-1]] = value
    text = yaml.safe_dump(doc, allow_unicode=True, sort_keys=False, width=10_000)
    cut = draw(st.sampled_from(["none", "none", "none", "truncate", "byte", "long-number"]))
    if cut == "truncate":
        text = text[: draw(st.integers(0, len(text)))]
    elif cut == "byte":
        at = draw(st.integers(0, len(text)))
        text = (
            text[:at]
            + draw(st.sampled_from(["\x00", "\x7f", "[", "{", "&a ", "*a", ":", "\t", '"']))
            + text[at:]
        )
    elif cut == "long-number":
        text = text.replace("22", "2" * 5000, 1).replace(": 8", ": " + "8" * 5000, 1)
    return text


def _outcome(run: Callable[[], Any]) -> tuple[int, str]:
    """Exit code and message as the CLI's guard maps them: a GpuonboardError is its exit code
    and one sentence; anything else (exit 70 in the CLI) fails the test with its traceback."""
    try:
        run()
    except GpuonboardError as exc:
        return int(exc.exit_code), exc.message
    return 0, ""


def _bounded(run: Callable[[], Any]) -> tuple[int, str]:
    """_outcome, asserting the time and the Python memory one load took."""
    tracemalloc.start()
    started = time.monotonic()
    try:
        code, message = _outcome(run)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    took = time.monotonic() - started
    assert took < PER_EXAMPLE_S * 3, f"a load took {took:.1f} s"  # (x3: tracemalloc's own cost)
    assert peak < PEAK_BYTES, f"a load allocated {peak >> 20} MiB"
    assert code in ALLOWED, (code, message)
    if code:
        assert message and "\n" not in message and "Traceback" not in message, message
    return code, message


FUZZ = settings(
    max_examples=45,  # (the three fuzz tests together take about 12 s here)
    deadline=None,  # (bounded by _bounded, which allows for tracemalloc's own cost)
    derandomize=True,  # the same examples on every run: a failure here is a bug, never flakiness
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.function_scoped_fixture,
        HealthCheck.data_too_large,
    ],
)


def _write_inventory(
    root: Path, hosts_text: str, vendor_texts: dict[str, str], name: str = "hosts.yml"
) -> Path:
    d = root / "inv"
    (d / "vendors").mkdir(parents=True, exist_ok=True)
    for old in [*d.iterdir(), *(d / "vendors").iterdir()]:
        if old.is_file():
            old.unlink()
    (d / name).write_text(hosts_text, errors="surrogateescape")
    for vid, text in vendor_texts.items():
        (d / "vendors" / f"{vid}.yml").write_text(text)
    return d


def _list_inventory(root: Path, inv: Path) -> None:
    api.list_inventory(api.Selection(inventory=str(inv)), api.Settings(project=root))


@FUZZ
@given(data=st.data())
def test_fuzz_native_inventory_and_vendor_profiles(
    data: st.DataObject, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hosts = data.draw(mutated_yaml(SEED_INVENTORY), label="hosts.yml")
    vendor = data.draw(st.sampled_from(sorted(SEED_VENDORS)), label="vendor mutated")
    vendors = {**SEED_VENDORS, vendor: data.draw(mutated_yaml(SEED_VENDORS[vendor]), label=vendor)}
    inv = _write_inventory(tmp_path, hosts, vendors)
    _bounded(lambda: _list_inventory(tmp_path, inv))
    capsys.readouterr()


@settings(FUZZ, max_examples=80)
@given(data=st.data())
def test_fuzz_ansible_inventories(
    data: st.DataObject, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if data.draw(st.booleans(), label="ini"):
        text = SEED_INI
        for _ in range(data.draw(st.integers(1, 3))):
            at = data.draw(st.integers(0, len(text)))
            piece = data.draw(
                st.sampled_from(
                    ["[0:99999999]", "[a:z]", "[1:3][1:3]", "=", " x=1", "\n[g:children]\ngpus\n", ":", "../"]
                )
                | st.text(max_size=6)
            )
            text = text[:at] + piece + text[at:]
        inv = _write_inventory(tmp_path, text, {}, "hosts.ini")
    else:
        inv = _write_inventory(tmp_path, data.draw(mutated_yaml(SEED_ANSIBLE_YAML)), {})
    limit = data.draw(st.sampled_from([None, "gpus", "~gpu-0[12]", "!box", "all:&gpus"]), label="limit")
    _bounded(
        lambda: api.list_inventory(
            api.Selection(inventory=str(inv), limit=limit), api.Settings(project=tmp_path)
        )
    )
    capsys.readouterr()


def _load_playbook_for_hosts(root: Path, path: Path) -> None:
    """What `invoke provision --playbook PATH` does before it connects: the inventory's hosts,
    the playbook, each step's arguments rendered per host, the templates it names."""
    inv = _write_inventory(root, SEED_INVENTORY, SEED_VENDORS)
    _, hosts = api.load_hosts(api.Selection(inventory=str(inv)), api.Settings(project=root))
    book = playbook.load(path)
    for spec in book.steps:
        for host in hosts:
            playbook.instantiate(book, spec, host)
    playbook.check_templates(book, REPO, book.labels())


@FUZZ
@given(data=st.data())
def test_fuzz_playbooks(data: st.DataObject, tmp_path: Path) -> None:
    seed = data.draw(st.sampled_from(sorted(SEED_PLAYBOOKS)), label="seed")
    path = tmp_path / "p.yml"
    path.write_text(data.draw(mutated_yaml(SEED_PLAYBOOKS[seed]), label="playbook"), errors="surrogateescape")
    _bounded(lambda: _load_playbook_for_hosts(tmp_path, path))


# ---------------------------------------------------------------- a few through the real CLI

NASTY_INVENTORIES = {
    "laughs.yml": "hosts:\n  h1: {address: 10.0.0.1, vars: {x: "
    + yaml.safe_dump(_laughs(7), default_flow_style=True, width=10**6).strip()
    + "}}\n",
    "deep.yml": "hosts:\n  h1: {address: 10.0.0.1, vars: {x: " + "[" * 20_000 + "]" * 20_000 + "}}\n",
    "huge-number.yml": "hosts:\n  h1: {address: 10.0.0.1, port: " + "9" * 6000 + "}\n",
    "bad-date.yml": "hosts:\n  h1: {address: 10.0.0.1, vars: {when: 2001-02-30}}\n",
    "tagged.yml": "hosts:\n  h1: {address: 10.0.0.1, port: !!int abc}\n",
    "self.yml": "hosts:\n  h1: {address: 10.0.0.1, vars: {x: &a [1, *a]}}\n",
    "range.ini": "[g]\nbox-[0:9][0:9][0:9][0:9][0:9][0:9][0:9][0:9]\n",
    "fine.yml": SEED_INVENTORY.replace("vendor: wuhan-idc", "vendor: none-such").split("groups:")[0]
    + "hosts:\n  h1: {address: 10.0.0.1}\n",
}


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


@pytest.mark.parametrize("name", sorted(NASTY_INVENTORIES))
def test_nasty_inventories_through_the_real_cli(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text(NASTY_INVENTORIES[name])
    code = "import sys; from gpuonboard.cli import main; sys.argv[0] = 'gpuonboard'; main()"
    env = {**os.environ, "GPUONBOARD_SSH_CONFIG": "/dev/null"}
    started = time.monotonic()
    r = subprocess.run(
        [sys.executable, "-c", code, "inventory", "--inventory", str(path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        preexec_fn=_limit_memory,
    )
    assert time.monotonic() - started < 20
    assert r.returncode in ALLOWED and "Traceback" not in r.stderr + r.stdout, r.stderr[-3000:]
    if r.returncode:
        lines = r.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"error: {path}"), r.stderr[-3000:]
    else:
        assert name == "fine.yml"
