"""`dcgmi diag -r <level> -j` (NVIDIA DCGM diagnostics): the command and a pure parser.

Two JSON shapes are known from real output (tests/fixtures/real/dcgmi-diag-j__*):

- DCGM 2.x/3.x: ``{"DCGM GPU Diagnostic": {"test_categories": [{"category", "tests": [{"name",
  "results": [{"gpu_ids", "status", "warnings"?}]}]}], "version"}}``; statuses ``PASS``/``Pass``,
  warnings plain strings (2.x) or ``{"warning": text, "error_id": ...}`` objects; DCGM 3.1 also
  leaves ``null`` entries between tests.
- DCGM 4.x: the same tree under ``"DCGM Diagnostic"``, results per entity (``entity_group``,
  ``entity_id``), a per-test ``test_summary`` ({status, warnings, info}), and the version in a
  top-level ``metadata`` object.

Anything else is reported as unreadable (``DcgmDiag.error``), never guessed at. A document
that is not whole (cut short, or broken mid-way) keeps the tests read before its break
(``DcgmDiag.partial``): a Fail or Warn DCGM had already printed is still what it found.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gpuonboard import shell

__all__ = [
    "LEVEL_SECONDS",
    "DcgmDiag",
    "DcgmTest",
    "command",
    "level_for_budget",
    "normalise_status",
    "parse",
    "slug",
]

# Typical run time per level (NVIDIA's DCGM user guide: r1 "quick" takes seconds, r2 about
# 2 minutes, r3 about 30 minutes, r4 one to two hours); used to pick a level from a time budget.
LEVEL_SECONDS = {1: 30, 2: 150, 3: 1800, 4: 7200}
ROOT_KEYS = ("DCGM GPU Diagnostic", "DCGM Diagnostic")
_STATUS = {
    "pass": "pass",
    "passed": "pass",
    "fail": "fail",
    "failed": "fail",
    "warn": "warn",
    "warning": "warn",
    "skip": "skip",
    "skipped": "skip",
    "not run": "skip",
    "notrun": "skip",
}
# a test's status: the worst of its results and its summary; a Skip beside a Pass is a test some
# GPUs did not run (it verified nothing there), never a pass of them all
_WORST = ("fail", "warn", "unknown", "skip", "pass")


@dataclass(frozen=True)
class DcgmTest:
    """One DCGM test (plugin) with its status over all GPUs and DCGM's own messages."""

    category: str
    name: str
    status: str  # pass | fail | warn | skip | unknown
    raw_status: str  # as DCGM printed it (e.g. "PASS", "Fail")
    gpus: tuple[str, ...]  # GPUs (entity ids) whose own result is `status`
    messages: tuple[str, ...]  # DCGM's warning texts, deduplicated, in order
    # every GPU (entity id; DCGM 3's "0,1,2" as printed) with a result of its own, whatever its
    # status: `gpus` is some of them
    # where the others passed (a test DCGM skipped on GPU 1 and passed on GPU 0)
    entities: tuple[str, ...] = ()


@dataclass(frozen=True)
class DcgmDiag:
    """A parsed `dcgmi diag -j` document; `error` set when it could not be read."""

    version: str | None
    driver: str | None
    tests: tuple[DcgmTest, ...]
    error: str | None = None
    # a document that is not whole (cut short, or broken mid-way): the tests as far as they were
    # read before the break (a result cut off is missing: only a Fail or Warn read is a claim)
    partial: tuple[DcgmTest, ...] = ()
    # the document ends before its closing brace (cut short), not broken mid-way
    cut: bool = False
    # how many of `partial`, its last ones, were read whole after the break (`_tests_after`)
    after_break: int = 0


def command(level: int) -> str:
    """The remote command: JSON output of the diagnostic at `level` (1-4)."""
    if level not in LEVEL_SECONDS:
        raise ValueError(f"DCGM diagnostic level must be 1-4, not {level}")
    return shell.join(["dcgmi", "diag", "-r", str(level), "-j"])


def level_for_budget(seconds: float) -> int:
    """The deepest level whose typical run time fits the budget (at least 1)."""
    fitting = [lvl for lvl, need in LEVEL_SECONDS.items() if need <= seconds]
    return max(fitting, default=1)


def normalise_status(raw: object) -> str:
    """DCGM's status spelling (PASS, Pass, Skip, SKIPPED, Warn ...) -> pass|fail|warn|skip|unknown."""
    return _STATUS.get(" ".join(str(raw).split()).lower(), "unknown")


_SPACES = re.compile(r"[\t\n\r\v\f]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """DCGM's text as a sentence may quote it: the raw control characters JSON forbids but the
    lenient read keeps (strict=False) made visible, a line break or tab a space, any other (an
    ANSI escape's ESC) written as `\\x1b`, so none reaches a terminal or a report raw."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m[0]):02x}", _SPACES.sub(" ", text))


def _texts(items: object) -> list[str]:
    """Warning texts from a `warnings` list (strings, 2.x; {"warning": text} objects), or one
    plain string (DCGM 3.1/3.2 print a GPU's one warning so: NVIDIA/DCGM dcgmi/Diag.cpp)."""
    out: list[str] = []
    for item in [items] if isinstance(items, str) else items if isinstance(items, list) else []:
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, Mapping) and isinstance(item.get("warning"), str):
            out.append(item["warning"])
    return out


def _entity(result: Mapping[str, Any]) -> str | None:
    """The GPU (entity id, DCGM 3's "0,1,2" as printed) of a GPU's result; None for a result
    that names none (DCGM 3.1-3.3's Deployment results: 3.3 adds gpu_id only to an error) or
    another entity's (DCGM 4's `entity_group` CPU: the cpu_eud test's)."""
    if str(result.get("entity_group", "GPU")).upper() != "GPU":
        return None
    for key in ("entity_id", "gpu_ids", "gpu_id"):
        if key in result:
            return printable(str(result[key]))
    return None


def _dedupe(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(printable(x).strip() for x in items if x.strip()))


def _test(category: str, test: Mapping[str, Any]) -> DcgmTest:
    results = [r for r in test.get("results") or [] if isinstance(r, Mapping)]
    summary = test.get("test_summary") if isinstance(test.get("test_summary"), Mapping) else None
    per_result = [
        (normalise_status(r.get("status")), printable(str(r.get("status"))), _entity(r)) for r in results
    ]
    # DCGM 4's test_summary and each GPU's own result: the worst of them all, never the summary
    # alone (a summary "Pass" over a GPU's "Skip" or "Fail" is no pass of that GPU)
    said: list[tuple[str, str, str | None]] = list(per_result)
    if summary is not None and "status" in summary:
        said.append((normalise_status(summary["status"]), printable(str(summary["status"])), None))
    if said:
        status = min((s for s, _, _ in said), key=_WORST.index)
        raw = next(r for s, r, _ in said if s == status)
    else:
        status, raw = "unknown", "no result"
    messages = _texts(summary.get("warnings")) if summary is not None else []
    for r in results:
        messages += _texts(r.get("warnings"))
    # (a result with no GPU named, or a CPU's or a switch's, names no GPU: `_entity`)
    gpus = tuple(e for s, _, e in per_result if s == status and e is not None)
    entities = tuple(dict.fromkeys(e for _, _, e in per_result if e is not None))
    name = printable(str(test.get("name") or "?"))
    return DcgmTest(printable(category), name, status, raw, gpus, _dedupe(messages), entities)


def parse(text: str) -> DcgmDiag:
    """`dcgmi diag -j` output -> DcgmDiag. Text before the first `{` (a warning line) and after
    the document is ignored; an unknown shape or DCGM's own runtime error sets `error`."""
    start = text.find("{")
    if start < 0:
        last = (text.strip().splitlines() or ["no output"])[-1]
        return DcgmDiag(None, None, (), f"no JSON in the output ({printable(last[:200])})")
    try:
        # strict=False: a raw control character (a tab, a newline) inside a warning string is
        # still DCGM's text, never a reason to drop the whole document
        data, _ = json.JSONDecoder(strict=False).raw_decode(text, start)
    except json.JSONDecodeError as exc:
        return _not_whole(text, start, exc)
    return _read(data)


def _scan(text: str, start: int, stop: int) -> tuple[list[tuple[int, str]], str, bool]:
    """Where `text[start:stop]` could end as JSON: (end, the closers it then needs) for each
    point after an opened or closed container, a value string, or before a comma; the closers
    still open at `stop`, and whether `stop` falls inside a string."""
    stack: list[str] = []
    keys: list[bool] = []  # per open object: the next string is a key
    points: list[tuple[int, str]] = []
    in_str = escaped = False
    closers = {"{": "}", "[": "]"}
    for i in range(start, stop):
        ch = text[i]
        if in_str:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_str = False
                if not (stack and stack[-1] == "{" and keys[-1]):  # a value, not a key
                    points.append((i + 1, "".join(closers[c] for c in reversed(stack))))
                elif stack:
                    keys[-1] = False
        elif ch == '"':
            in_str = True
        elif ch in "{[":
            stack.append(ch)
            keys.append(ch == "{")
            points.append((i + 1, "".join(closers[c] for c in reversed(stack))))
        elif ch in "}]" and stack:
            stack.pop()
            keys.pop()
            points.append((i + 1, "".join(closers[c] for c in reversed(stack))))
        elif ch == "," and stack:
            points.append((i, "".join(closers[c] for c in reversed(stack))))
            keys[-1] = stack[-1] == "{"
    return points, "".join(closers[c] for c in reversed(stack)), in_str


def _still_open(text: str, start: int) -> bool:
    """Whether the document from `start` ends with a container or a string still open."""
    _, still_open, in_str = _scan(text, start, len(text))
    return bool(still_open) or in_str


def _not_whole(text: str, start: int, exc: json.JSONDecodeError) -> DcgmDiag:
    """A document that does not parse: cut short (it never closes its outer brace) or broken
    mid-way (it does), with the tests read before the break (the text up to the last point
    where it could end, closed: `partial`)."""
    # cut: the outer brace stays open both in the whole text (a document on one line, broken
    # mid-way, closes on the break's own line) and with the break's line left out (a foreign
    # line's own braces, `WARNING: {x`, are not the document's)
    eol = text.find("\n", exc.pos)
    rest = text[: exc.pos] + (text[eol:] if eol >= 0 else "")
    cut = all(_still_open(view, start) for view in (text, rest))
    how = "cut short" if cut else "broken mid-way, though it ends with its closing brace"
    # (json's "Unterminated string starting at" names where its string began)
    error = f"not JSON ({how}: {exc.msg.removesuffix(' at')} at character {exc.pos} of {len(text)})"
    points, _, _ = _scan(text, start, exc.pos)
    partial: tuple[DcgmTest, ...] = ()
    for end, close in reversed(points):
        try:
            data = json.loads(text[start:end] + close, strict=False)
        except json.JSONDecodeError:
            continue
        partial = _read(data).tests if isinstance(data, dict) else ()
        break
    after = _tests_after(text, exc.pos)
    return DcgmDiag(None, None, (), error, partial + after, cut, len(after))


def _tests_after(text: str, pos: int) -> tuple[DcgmTest, ...]:
    """The tests DCGM printed whole after a break at `pos` (a foreign line, a garbled stretch):
    each test object, or category object with its tests, that decodes on its own, its category
    the last one named before it."""
    decoder = json.JSONDecoder(strict=False)
    found: list[DcgmTest] = []

    def category_before(i: int) -> str:
        named = re.findall(r'"category"\s*:\s*"([^"]*)"', text[pos:i]) or re.findall(
            r'"category"\s*:\s*"([^"]*)"', text[:pos]
        )
        return named[-1] if named else "?"

    i = text.find("{", pos)
    while i >= 0:
        try:
            obj, end = decoder.raw_decode(text, i)
        except json.JSONDecodeError:
            obj, end = None, i + 1
        if isinstance(obj, Mapping) and isinstance(obj.get("tests"), list):
            category = str(obj.get("category") or category_before(i))
            found += [_test(category, t) for t in obj["tests"] if isinstance(t, Mapping)]
        elif isinstance(obj, Mapping) and "name" in obj and ("results" in obj or "test_summary" in obj):
            found.append(_test(category_before(i), obj))
        else:
            end = i + 1
        i = text.find("{", end)
    return tuple(found)


def _read(data: Any) -> DcgmDiag:
    """A decoded document -> DcgmDiag (an unknown shape or DCGM's runtime error: `error`)."""
    key = next((k for k in ROOT_KEYS if isinstance(data.get(k), dict)), None)
    if key is None:
        found = printable(", ".join(sorted(map(str, data))[:5])) or "nothing"
        return DcgmDiag(None, None, (), f"unknown JSON shape (no {' or '.join(ROOT_KEYS)!r}; found {found})")
    root: dict[str, Any] = data[key]
    meta: dict[str, Any] = data["metadata"] if isinstance(data.get("metadata"), dict) else {}
    version = root.get("version") or meta.get("version")
    driver = meta.get("Driver Version Detected") or root.get("Driver Version Detected")
    tests: list[DcgmTest] = []
    for cat in root.get("test_categories") or []:
        if not isinstance(cat, Mapping):
            continue
        for test in cat.get("tests") or []:
            if isinstance(test, Mapping):  # DCGM 3.1 prints `null` between tests
                tests.append(_test(str(cat.get("category") or "?"), test))
    error = root.get("runtime_error") or data.get("runtime_error")
    if not error and not tests:
        error = "the document holds no test results"
    return DcgmDiag(
        printable(str(version)) if version else None,
        printable(str(driver)) if driver else None,
        tuple(tests),
        printable(str(error)) if error else None,
    )


def slug(name: str) -> str:
    """A rule-name fragment for a test name: 'Page Retirement/Row Remap' -> 'page_retirement_row_remap'."""
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_") or "test"
