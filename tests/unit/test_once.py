"""gpuonboard.once.loaded_once, and the per-run values every host's thread asks for: made once
however many hosts' threads ask at the same moment (a check's hosts start together)."""

from __future__ import annotations

import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from gpuonboard import model_names, resources, sh
from gpuonboard.connection import auth, login, probe_commands
from gpuonboard.facts import cpu, disks, gpu_ids, kernel_cut, kernel_nvrm, memory, translated
from gpuonboard.once import loaded_once

THREADS = 8


@pytest.fixture
def switch_often() -> Iterator[None]:
    """The interpreter hands the GIL to another thread every microsecond, as a host's thread is
    interrupted by the 99 others (hosts and paramiko's transports) of a 50-host check."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def _together(call: Callable[[], Any]) -> list[Any]:
    """What `call` returns in each of THREADS threads started at the same moment."""
    gate = threading.Barrier(THREADS)
    got: list[Any] = [None] * THREADS

    def run(i: int) -> None:
        gate.wait()
        got[i] = call()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return got


def test_threads_that_ask_together_wait_for_the_one_value() -> None:
    calls: list[int] = []

    @loaded_once
    def slow(n: int) -> list[int]:
        calls.append(n)
        time.sleep(0.05)  # (every thread arrives while the first one makes it)
        return [n]

    got = _together(lambda: slow(3))
    assert calls == [3]
    assert all(g is got[0] for g in got)
    assert slow(4) == [4] and calls == [3, 4]  # (another argument: its own value)


def test_an_error_is_not_kept_and_the_next_call_tries_again() -> None:
    tries: list[str] = []

    @loaded_once
    def flaky(name: str) -> str:
        tries.append(name)
        if len(tries) == 1:
            raise ValueError("first time")
        return name.upper()

    with pytest.raises(ValueError):
        flaky("a")
    assert flaky("a") == "A" and flaky("a") == "A"
    assert tries == ["a", "a"]


def test_keyword_arguments_in_any_order_are_one_key_and_cache_clear_empties_it() -> None:
    calls: list[tuple[int, int]] = []

    @loaded_once
    def pair(a: int = 0, b: int = 0) -> tuple[int, int]:
        calls.append((a, b))
        return (a, b)

    assert pair(a=1, b=2) == pair(b=2, a=1) == (1, 2)
    assert calls == [(1, 2)]
    pair.cache_clear()  # type: ignore[attr-defined]
    assert pair(a=1, b=2) == (1, 2) and len(calls) == 2


def test_a_bounded_cache_drops_its_oldest_value() -> None:
    calls: list[int] = []

    @loaded_once(maxsize=2)
    def square(n: int) -> int:
        calls.append(n)
        return n * n

    assert [square(1), square(2), square(1), square(3)] == [1, 4, 1, 9]
    assert calls == [1, 2, 3]
    assert square(2) == 4 and square(1) == 1  # (1 was dropped when 3 came; 2 is still kept)
    assert calls == [1, 2, 3, 1]


def _key_file(tmp_path: Path) -> str:
    key = ed25519.Ed25519PrivateKey.generate()
    path = tmp_path / "id_ed25519"
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
        )
    )
    return str(path)


# each value a host's thread asks for once per run (reference tables, patterns, the probes'
# list, Fabric's classes, the shell scripts): the function and the arguments a check calls it with
PER_RUN: list[tuple[Callable[..., Any], tuple[Any, ...]]] = [
    (probe_commands.core_probes, ()),
    (login.fabric_classes, ()),
    (sh.load, ("session_bound",)),
    (gpu_ids._table, ()),
    (cpu.lscpu_labels, ()),
    (cpu._bare_labels, ()),
    (cpu._bare_labels_by_first, ()),
    (kernel_nvrm.load_nvrm_faults, ()),
    (kernel_cut._says_nothing_pattern, ()),
    (memory._free_words, ()),
    (memory._row_labels, ()),
    (disks._df_words, ()),
    (disks._header_joined, ()),
    (translated.labels, ("free_labels",)),
    (model_names.family_words, ()),
    (resources._parsed, (str(resources.DATA_DIR / "gpu_pci_ids.yml"), 0, 0)),
]


@pytest.mark.parametrize(("fn", "args"), PER_RUN, ids=lambda v: getattr(v, "__qualname__", ""))
@pytest.mark.usefixtures("switch_often")
def test_a_per_run_value_is_made_once_when_every_host_asks_at_once(
    fn: Callable[..., Any], args: tuple[Any, ...]
) -> None:
    """Each thread gets the same object: with functools.cache, the threads that came before the
    first value was kept each made their own (at 50 hosts the client key was parsed 50 times,
    core_probes made up to 20 times, the lscpu labels up to 10)."""
    for _ in range(3):
        fn.cache_clear()  # type: ignore[attr-defined]
        re.purge()  # (a pattern compiled again by re.compile would be re's kept object)
        got = _together(lambda: fn(*args))
        assert all(g is got[0] for g in got)


@pytest.mark.usefixtures("switch_often")
def test_the_key_file_is_parsed_once_when_every_host_logs_in_at_once(tmp_path: Path) -> None:
    path = _key_file(tmp_path)
    mtime = Path(path).stat().st_mtime_ns
    for _ in range(3):
        auth._load_key.cache_clear()
        got = _together(lambda: auth._load_key(path, mtime))
        assert got[0][0] is not None and got[0][1] is None
        assert all(g[0] is got[0][0] for g in got)


def test_a_lazy_pattern_compiles_at_its_first_use_and_reads_as_re_compile_s() -> None:
    """Not compiled when made (nothing kept on it); its first use keeps the compiled pattern's
    methods on it (the same bound methods afterwards); every method and attribute answers as
    re.compile's pattern's."""
    from gpuonboard.once import LazyPattern, lazy_re

    source = r"(?P<word>GPU)\s+(\d+)"
    lazy, eager = lazy_re(source, re.I), re.compile(source, re.I)
    assert isinstance(lazy, LazyPattern) and "search" not in vars(lazy)
    text = "gpu 0, GPU 1 and Gpu  22"
    assert lazy.search(text).group(0) == eager.search(text).group(0)
    assert vars(lazy)["search"] == eager.search and lazy.search is vars(lazy)["search"]
    assert lazy.match(text).span() == eager.match(text).span()
    assert lazy.fullmatch("GPU 3").groups() == eager.fullmatch("GPU 3").groups()
    assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in eager.finditer(text)]
    assert lazy.findall(text) == eager.findall(text) and lazy.split(text) == eager.split(text)
    assert lazy.sub("x", text) == eager.sub("x", text) and lazy.subn("x", text, 1) == eager.subn("x", text, 1)
    assert (lazy.pattern, lazy.flags, lazy.groups, lazy.groupindex) == (
        eager.pattern,
        eager.flags,
        eager.groups,
        eager.groupindex,
    )


def test_every_lazy_pattern_of_the_package_compiles() -> None:
    """Each module-level lazy_re of gpuonboard (found by importing every module): a pattern that
    does not compile would fail only at its first use, which most runs never reach."""
    import importlib
    import pkgutil

    import gpuonboard
    from gpuonboard.once import LazyPattern

    found = []
    for module in pkgutil.walk_packages(gpuonboard.__path__, "gpuonboard."):
        if ".testing" in module.name or module.name.endswith("__main__"):
            continue
        mod = importlib.import_module(module.name)
        found += [value for value in vars(mod).values() if isinstance(value, LazyPattern)]
    assert len({id(p) for p in found}) >= 15
    for pattern in found:
        assert isinstance(pattern.compiled, re.Pattern)


def test_a_lazy_pattern_pickles_and_copies_as_its_source() -> None:
    """pickle and copy make a LazyPattern of the same source, used or not. Before, unpickling
    one recursed without end (its `__getattr__` read `_source` before it was set)."""
    import copy
    import pickle

    from gpuonboard.once import LazyPattern, lazy_re

    for used in (False, True):
        lazy = lazy_re(r"GPU (\d+)", re.I)
        if used:
            assert lazy.search("gpu 3") is not None
        for other in (pickle.loads(pickle.dumps(lazy)), copy.copy(lazy), copy.deepcopy(lazy)):
            assert isinstance(other, LazyPattern)
            assert (other.pattern, other.flags) == (lazy.pattern, lazy.flags)
            assert other.search("x GPU 7").group(1) == "7"


def test_no_lazy_pattern_is_handed_to_a_re_function() -> None:
    """A LazyPattern is no re.Pattern: `re.sub(LAZY, ...)`, `re.compile(LAZY)` or
    `isinstance(LAZY, re.Pattern)` would fail or answer no. Every module-level lazy_re name of the
    package is used only through its own methods (`LAZY.sub(...)`): no `re.<function>(NAME` and
    no `re.Pattern` test of it in src."""
    src = Path(__file__).parents[2] / "src" / "gpuonboard"
    texts = {p: p.read_text(encoding="utf-8") for p in src.rglob("*.py")}
    names = {
        m.group(1) for t in texts.values() for m in re.finditer(r"^(\w+) = (?:once\.)?lazy_re\(", t, re.M)
    }
    assert len(names) >= 15
    named = "|".join(sorted(names))
    handed = re.compile(rf"\bre\.\w+\(\s*(?:{named})\b|isinstance\(\s*(?:{named})\s*,")
    found = [f"{p.relative_to(src)}: {m.group(0)}" for p, t in texts.items() for m in handed.finditer(t)]
    assert not found


def _lazy_names_read(src: Path) -> tuple[int, list[str]]:
    """(the module-level lazy_re patterns of the package, each place one of them is read other
    than through a re.Pattern's method or attribute): in its module and where it is imported."""
    import ast

    allowed = {"search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split"}
    allowed |= {"pattern", "flags", "groups", "groupindex", "compiled"}
    trees = {p: ast.parse(p.read_text(encoding="utf-8")) for p in src.rglob("*.py")}
    dotted = {
        p: ".".join(p.relative_to(src.parent).with_suffix("").parts).removesuffix(".__init__") for p in trees
    }
    lazy = set()
    for p, tree in trees.items():
        for s in tree.body:
            value, targets = (s.value, s.targets) if isinstance(s, ast.Assign) else (None, [])
            if isinstance(s, ast.AnnAssign):
                value, targets = s.value, [s.target]
            func = value.func if isinstance(value, ast.Call) else None
            name = getattr(func, "id", getattr(func, "attr", None))
            if len(targets) == 1 and isinstance(targets[0], ast.Name) and name == "lazy_re":
                lazy.add((dotted[p], targets[0].id))
    found = []
    for p, tree in trees.items():
        local = {name: name for mod, name in lazy if mod == dotted[p]}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                local |= {a.asname or a.name: a.name for a in node.names if (node.module, a.name) in lazy}
        reads = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr in allowed}
        for node in ast.walk(tree):
            read = isinstance(node, ast.Name) and node.id in local and isinstance(node.ctx, ast.Load)
            if read and id(node) not in reads:
                found.append(f"{p.relative_to(src)}:{node.lineno}: {node.id}")
    return len(lazy), found


def test_every_lazy_pattern_is_read_only_through_its_methods() -> None:
    """A LazyPattern handed on as a value (an argument, a tuple's item, a default) may reach an
    `re` function or an isinstance test elsewhere, where it is no re.Pattern. Each module-level
    lazy_re of the package (its module's and every module that imports it) is read only as
    `NAME.search(...)`, `NAME.pattern`...: what makes a pattern safe to make lazy."""
    count, found = _lazy_names_read(Path(__file__).parents[2] / "src" / "gpuonboard")
    assert count >= 200
    assert not found


def test_importing_the_package_compiles_few_patterns() -> None:
    """Importing every module of gpuonboard (what the CLI and the facts' parsers compile at
    import, paid by every start) compiles at most 620 patterns: the ~210 module-level patterns
    that an 8xA100 or 8xH100 check never reads are lazy_re (698 were compiled before). A new
    module-level pattern that most runs never read: make it lazy_re too."""
    import subprocess

    code = (
        "import importlib, pkgutil, re\n"
        "n = [0]\n"
        "make = re._compiler.compile\n"
        "def counted(p, flags=0):\n"
        "    n[0] += 1\n"
        "    return make(p, flags)\n"
        "re._compiler.compile = counted\n"
        "import gpuonboard\n"
        "for m in pkgutil.walk_packages(gpuonboard.__path__, 'gpuonboard.'):\n"
        "    if '.testing' not in m.name and not m.name.endswith('__main__'):\n"
        "        importlib.import_module(m.name)\n"
        "print(n[0])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(done.stdout.split()[-1]) <= 620  # (round 35's readers: ~600)
