"""gpuonboard.codecache: the dataclasses' generated methods made from code kept between runs
are the very functions `exec` of their text makes (their code compared field by field), and a
cache file is used only where it is the user's own and sound."""

from __future__ import annotations

import contextlib
import dataclasses
import marshal
import os
import re
import subprocess
import sys
from pathlib import Path
from types import CodeType
from typing import Any, ClassVar

import pytest

from gpuonboard import codecache

SRC = Path(__file__).resolve().parents[2] / "src"


def _code_fields(code: CodeType) -> tuple[Any, ...]:
    """Everything of a code object that makes the function what it is (its nested code too)."""
    consts = tuple(_code_fields(c) if isinstance(c, CodeType) else (type(c), repr(c)) for c in code.co_consts)
    return (
        code.co_name,
        code.co_qualname,
        code.co_filename,
        code.co_firstlineno,
        code.co_flags,
        code.co_argcount,
        code.co_kwonlyargcount,
        code.co_posonlyargcount,
        code.co_varnames,
        code.co_freevars,
        code.co_cellvars,
        code.co_names,
        code.co_code,
        code.co_linetable,
        code.co_exceptiontable,
        consts,
    )


def _classes() -> list[type]:
    """Dataclasses of every shape dataclasses generates methods for."""

    @dataclasses.dataclass(frozen=True)
    class Frozen:
        a: int
        b: str = "x"
        c: tuple[int, ...] = dataclasses.field(default_factory=tuple)

    @dataclasses.dataclass(order=True, unsafe_hash=True)
    class Ordered:
        x: float
        y: list[int] = dataclasses.field(default_factory=list, compare=False)
        z: ClassVar[int] = 3

    @dataclasses.dataclass(kw_only=True, slots=True)
    class KwOnly:
        name: str
        size: int = 0

        def __post_init__(self) -> None:
            self.size = max(self.size, 0)

    @dataclasses.dataclass(frozen=True)
    class Empty:
        pass

    @dataclasses.dataclass
    class InitVars:
        seed: dataclasses.InitVar[int]
        value: int = 0

        def __post_init__(self, seed: int) -> None:
            self.value = seed * 2

    return [Frozen, Ordered, KwOnly, Empty, InitVars]


_METHODS = ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__", "__lt__", "__ge__")


def _methods(classes: list[type]) -> list[tuple[str, str, tuple[Any, ...]]]:
    out = []
    for i, cls in enumerate(classes):
        for name in _METHODS:
            fn = cls.__dict__.get(name)
            if fn is not None and hasattr(fn, "__code__"):
                out.append((f"{i}.{name}", fn.__qualname__, _code_fields(fn.__code__)))
    return out


def _with_exec(monkeypatch: pytest.MonkeyPatch, cache: codecache.CodeCache | None) -> None:
    if cache is None:
        monkeypatch.delitem(vars(dataclasses), "exec", raising=False)
    else:
        monkeypatch.setitem(vars(dataclasses), "exec", cache.exec)


def test_the_methods_made_from_the_cache_are_those_exec_makes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _with_exec(monkeypatch, None)
    plain = _methods(_classes())
    cache = codecache.CodeCache(tmp_path / "c.marshal")
    _with_exec(monkeypatch, cache)
    compiled = _methods(_classes())
    assert cache.added >= 15 and compiled == plain
    cache.save()
    # a later process: every text found in the file, none compiled, the same methods
    again = codecache.CodeCache(tmp_path / "c.marshal")
    _with_exec(monkeypatch, again)
    assert _methods(_classes()) == plain
    assert again.added == 0 and len(again.used) == cache.added


def test_the_instances_behave_as_without_the_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _with_exec(monkeypatch, codecache.CodeCache(tmp_path / "c.marshal"))
    frozen, ordered, kw_only, _empty, init_vars = _classes()
    f = frozen(1)
    assert (f, repr(f), hash(f) == hash(frozen(1, "x", ()))) == (
        frozen(1, "x"),
        "_classes.<locals>.Frozen(a=1, b='x', c=())",
        True,
    )
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'a'"):
        f.a = 2  # type: ignore[misc]
    assert ordered(1.0) < ordered(2.0) and ordered(1.0, [1]) == ordered(1.0, [2])
    assert kw_only(name="n", size=-3).size == 0 and init_vars(4).value == 8


def _write_raw(path: Path, data: bytes, mode: int = 0o600, frame: bool = True) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.write_bytes(codecache.framed(data) if frame else data)
    path.chmod(mode)


def test_a_damaged_cache_file_is_not_used_and_never_raises(tmp_path: Path) -> None:
    """Every byte of a real cache file changed in turn: with its digest (a file damaged where
    the digest was also rewritten: marshal's own errors, SystemError included) and without (a
    bit flipped on disk): no entries, no exception, and the file's bytes never handed over whole
    where the digest does not match."""
    text = "def __create_fn__():\n def f(self):\n  return (1, 'a', 2.5)\n return f"
    cache = codecache.CodeCache(tmp_path / "gpuonboard-code" / "c.marshal")
    cache.code(text)
    cache.save()
    raw = (tmp_path / "gpuonboard-code" / "c.marshal").read_bytes()
    data = codecache.unframed(raw)
    assert data is not None and list(codecache.CodeCache(cache.path).known) == [text]
    path = tmp_path / "damaged" / "c.marshal"
    for i in range(len(data)):
        bad = bytearray(data)
        bad[i] ^= 0x01
        _write_raw(path, bytes(bad))
        codecache.CodeCache(path)  # (whatever marshal makes of it: it does not raise)
        _write_raw(path, raw[: len(raw) - len(data) + i] + bytes(bad[i : i + 1]) + data[i + 1 :], frame=False)
        assert codecache.CodeCache(path).known == {}
    _write_raw(path, b"x" * (codecache.MAX_BYTES + 1), frame=False)
    assert codecache.CodeCache(path).known == {}


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"not marshal at all",
        marshal.dumps([1, 2, 3]),
        marshal.dumps({"def f(): pass": "not code", 3: compile("x = 1", "<string>", "exec")}),
    ],
    ids=["empty", "garbage", "a list", "wrong entries"],
)
def test_a_file_that_is_no_cache_of_text_and_code_is_not_used(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "gpuonboard" / "c.marshal"
    _write_raw(path, data)
    assert codecache.CodeCache(path).known == {}


def test_a_file_others_may_write_is_not_used_nor_written_into(tmp_path: Path) -> None:
    text = "def __create_fn__():\n def f(self):\n  return 1\n return f"
    path = tmp_path / "gpuonboard" / "c.marshal"
    _write_raw(path, marshal.dumps({text: compile(text, "<string>", "exec")}), 0o620)
    assert codecache.CodeCache(path).known == {}
    path.chmod(0o600)
    assert list(codecache.CodeCache(path).known) == [text]
    # a folder others may write into: the cache is not written there
    open_dir = tmp_path / "open" / "c.marshal"
    open_dir.parent.mkdir()
    open_dir.parent.chmod(0o777)
    cache = codecache.CodeCache(open_dir)
    cache.code(text)
    cache.save()
    assert not open_dir.exists()


def test_a_link_in_place_of_the_file_is_not_followed(tmp_path: Path) -> None:
    text = "def __create_fn__():\n def f(self):\n  return 2\n return f"
    target = tmp_path / "elsewhere.marshal"
    _write_raw(target, marshal.dumps({text: compile(text, "<string>", "exec")}))
    link = tmp_path / "gpuonboard" / "c.marshal"
    link.parent.mkdir()
    link.symlink_to(target)
    assert codecache.CodeCache(link).known == {}


def test_the_cache_path_follows_xdg_and_can_be_turned_off(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("GPUONBOARD_CODE_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    path = codecache.cache_path()
    assert path is not None and path.parent == tmp_path / "xdg" / "gpuonboard-code"
    assert sys.implementation.cache_tag in path.name
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/dir")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert codecache.cache_path() == tmp_path / "home" / ".cache" / "gpuonboard-code" / path.name
    monkeypatch.setenv("GPUONBOARD_CODE_CACHE", str(tmp_path / "own"))
    assert codecache.cache_path() == tmp_path / "own" / path.name
    monkeypatch.setenv("GPUONBOARD_CODE_CACHE", "0")
    assert codecache.cache_path() is None


# every dataclass of the package, as importing every module makes it: its methods' code, digested
_DIGEST = r"""
import hashlib, importlib, pkgutil, sys, dataclasses
import gpuonboard.cli
import gpuonboard
for m in pkgutil.walk_packages(gpuonboard.__path__, "gpuonboard."):
    if m.name.startswith("gpuonboard.testing") or m.name.endswith("__main__"):
        continue
    try:
        importlib.import_module(m.name)
    except Exception:
        pass
sys.path.insert(0, sys.argv[1])
from test_codecache import _code_fields
h = hashlib.sha256(); n = 0
for name, mod in sorted(sys.modules.items()):
    if not name.startswith("gpuonboard"):
        continue
    for cls in [v for v in vars(mod).values() if isinstance(v, type) and dataclasses.is_dataclass(v)]:
        for meth in ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__"):
            fn = cls.__dict__.get(meth)
            if fn is not None and hasattr(fn, "__code__"):
                h.update(repr((name, cls.__qualname__, meth, _code_fields(fn.__code__))).encode()); n += 1
cache, patterns = gpuonboard.codecache._INSTALLED, gpuonboard.codecache._PATTERNS
print(n, h.hexdigest(), cache.added if cache else None, len(cache.known) if cache else None,
      patterns.added if patterns else None, len(patterns.used) if patterns else None)
"""


def _digest(env: dict[str, str]) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", _DIGEST, str(Path(__file__).parent)],
        env={**os.environ, "PYTHONPATH": str(SRC), **env},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return out


def test_every_dataclass_of_the_package_has_the_same_methods_from_the_cache(tmp_path: Path) -> None:
    xdg = {"XDG_CACHE_HOME": str(tmp_path), "GPUONBOARD_CODE_CACHE": ""}
    n, plain, *_ = _digest({"GPUONBOARD_CODE_CACHE": "0"})
    first = _digest(xdg)  # (compiles them, and writes the file at exit)
    second = _digest(xdg)  # (takes them from the file)
    assert int(n) > 150
    assert first[:2] == second[:2] == [n, plain]
    assert int(first[2]) > 300 and second[2] == "0"
    # (the patterns importing the package compiles: from the file the second time)
    assert int(first[4]) > 150 and second[4] == "0" and int(second[5]) == int(first[5])
    cached = codecache.cache_path()
    assert cached is None or cached.name  # (the user's own, not this test's)
    (cached,) = (tmp_path / "gpuonboard-code").glob("dataclass-code-*")
    assert (tmp_path / "gpuonboard-code").stat().st_mode & 0o777 == 0o700
    assert {p.stat().st_mode & 0o777 for p in (tmp_path / "gpuonboard-code").iterdir()} == {0o600}
    data = codecache.unframed(cached.read_bytes())  # (written whole: its digest matches)
    assert data is not None and len(marshal.loads(data)) == int(second[3])


# ---------------------------------------------------------------- regular expressions

_CRAFTED: list[tuple[str | bytes, int]] = [
    (r"(?P<host>[\w-]+):(?P<port>\d+)?", 0),
    (r"(?i)straße|İstanbul|ſ", 0),
    ("gpu\\s+(\\d+)", int(re.IGNORECASE | re.MULTILINE)),
    (rb"(?P<k>\w+)=(?P<v>[^\s]*)", 0),
    (rb"[\x80-\xff]+", 0),
    (rb"\w+", int(re.LOCALE)),
    ("\n  (?P<a> \\d+ )  # a number [with a bracket\n  [ ]+ (?P=a)\n", int(re.VERBOSE)),
    (r"(?x) a b # c [[\n [-]x", 0),
    (r"(?<=\bnvidia )\d{3,}(?!\.)", int(re.ASCII)),
    (r"\[[\d:/ -]{5,19}\]", 0),
    (r"[]a-]|[^]^]|[a\-z]", 0),
    (r"(a)|b(?(1)c|d)", 0),
    (r"x{2,}?|(?:y|z)*+|(?>w+)", 0),
]

# patterns the parser warns of (tests/unit: each is checked to warn, so may_warn must say so)
_WARNING: list[tuple[str | bytes, int]] = [
    ("[[a]", 0),
    ("[a--b]", 0),
    ("[a&&b]", 0),
    ("[a~~b]", 0),
    ("[a||b]", 0),
    ("[%--]", 0),
    (r"x\[y[a--b]", 0),
    ("(?x) # [ not a set\n [a--b]", 0),
    # (review revI: a `#` outside a scoped x is no comment)
    (r"(?x: a )#[[]", 0),
    (r"(?-x:#)[[a]", re.VERBOSE),
]


def _parse_warns(pattern: str | bytes, flags: int) -> bool:
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with contextlib.suppress(re.error):
            re._compiler.compile(pattern, flags)  # type: ignore[attr-defined]
    return bool(caught)


def _package_patterns() -> list[tuple[str | bytes, int]]:
    """Every module-level pattern of the package (compiled and lazy), as importing it all makes them."""
    import importlib
    import pkgutil

    import gpuonboard
    from gpuonboard.once import LazyPattern

    found: dict[tuple[Any, int], None] = {}
    for m in pkgutil.walk_packages(gpuonboard.__path__, "gpuonboard."):
        if m.name.startswith("gpuonboard.testing") or m.name.endswith("__main__"):
            continue
        try:
            mod = importlib.import_module(m.name)
        except Exception:  # (a module of an optional extra)
            continue
        for value in vars(mod).values():
            if isinstance(value, re.Pattern):
                found[(value.pattern, value.flags)] = None
            elif isinstance(value, LazyPattern):
                pattern, flags = value._source
                found[(pattern, int(flags))] = None
    return list(found)


def test_a_pattern_from_the_cache_is_the_pattern_re_compiles(tmp_path: Path) -> None:
    patterns = _CRAFTED + _package_patterns()
    assert len(patterns) > 300
    original = re._compiler.compile  # type: ignore[attr-defined]
    cache = codecache.PatternCache(tmp_path / "re.marshal", keep=lambda p, frame: True)
    for p, flags in patterns:
        assert cache.compile(p, flags) == original(p, flags)
    cache.save()
    again = codecache.PatternCache(tmp_path / "re.marshal", keep=lambda p, frame: False)
    assert len(again.known) == cache.added > 300
    for p, flags in patterns:
        ours, theirs = again.compile(p, flags), original(p, flags)
        # (equal patterns: the same text, flags and engine code)
        assert (ours, ours.groups, ours.groupindex) == (theirs, theirs.groups, theirs.groupindex)
        if may_be_read := not codecache.may_warn(p, flags):
            assert (p, flags) in again.used
        assert may_be_read or (p, flags) not in again.known
    assert again.added == 0


@pytest.mark.parametrize(("pattern", "flags"), _WARNING)
def test_a_pattern_the_parser_warns_of_is_compiled_each_time(
    monkeypatch: pytest.MonkeyPatch, pattern: str, flags: int
) -> None:
    assert _parse_warns(pattern, flags)
    assert codecache.may_warn(pattern, flags)
    cache = codecache.PatternCache(None)
    monkeypatch.setattr(re._compiler, "compile", cache.compile)  # type: ignore[attr-defined]
    assert _parse_warns(pattern, flags) and _parse_warns(pattern, flags)  # (warned twice)
    assert cache.known == {}


def test_may_warn_says_so_of_every_pattern_that_warns() -> None:
    patterns = _CRAFTED + _WARNING + _package_patterns()
    warned = [(p, f) for p, f in patterns if _parse_warns(p, f)]
    assert [pf for pf in warned if not codecache.may_warn(*pf)] == []
    # (an escaped bracket before a set, the package's log-line stamps: read from the cache)
    assert not codecache.may_warn(r"\[[\d:/ -]{5,19}\]") and not codecache.may_warn("[]a-]")


def test_an_entry_the_engine_refuses_is_compiled_anew(tmp_path: Path) -> None:
    path = tmp_path / "gpuonboard" / "re.marshal"
    _write_raw(path, marshal.dumps({("a+b", 0): (0, [1, 2, 3], 0, {}, (None,))}))
    cache = codecache.PatternCache(path)
    assert ("a+b", 0) in cache.known
    assert cache.compile("a+b", 0) == re._compiler.compile("a+b", 0)  # type: ignore[attr-defined]


def _read_from(text: str) -> Any:
    return re.compile(text + r"\d+")  # (a pattern made of what the function was given)


def _written_here() -> Any:
    return re.compile(r"written here: (\d+) GPUs?")


def test_only_a_pattern_the_code_wrote_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    cache = codecache.PatternCache(None)
    monkeypatch.setattr(re._compiler, "compile", cache.compile)  # type: ignore[attr-defined]
    re.purge()
    word = "".join(["from ", "a host's output "])  # (a host's word, an inventory's --limit ~regex)
    assert _read_from(word).match(word + "12") and _written_here().match("written here: 8 GPUs")
    assert list(cache.known) == [(r"written here: (\d+) GPUs?", 0)]
    # a module's body and a lazy pattern of one: theirs
    namespace: dict[str, Any] = {}
    exec(compile("import re\nP = re.compile('module body (x+)', re.I)", "<mod>", "exec"), namespace)  # noqa: S102
    from gpuonboard.once import lazy_re

    assert lazy_re(r"lazy (y+)").search("a lazy yy")
    assert {("module body (x+)", int(re.I)), (r"lazy (y+)", 0)} < set(cache.known)
    re.purge()
