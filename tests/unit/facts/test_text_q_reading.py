"""The `nvidia-smi -q` text parse's shortcuts (each line read once a parse, a line read by an
earlier parse taken from its table, the joined-fields
regex on the lines that can hold two fields, a tree section's casefolded labels, a GPU record's
fault screen on its values) read as the
long way read: every real and derived -q capture, and copies of them edited in-test as each
test's docstring says."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from gpuonboard.facts.nvidia_smi import text_q, text_tree
from gpuonboard.facts.nvidia_smi.faults import FAULT_WORDS, NVML_FIELD_ERRORS, _field_faults
from gpuonboard.facts.nvidia_smi.text_q import (
    _JOINED_FIELDS,
    _split_fields,
    _split_joined_fields,
    _text_faults,
    _text_gpu_blocks,
)
from gpuonboard.facts.nvidia_smi.text_tree import (
    _indent,
    _Lines,
    _read_line,
    _Section,
    _text_tree,
    _tree_child,
    _tree_leaves,
)

FIXTURES = Path(__file__).parents[2] / "fixtures"
CAPTURES = sorted(
    path
    for folder in ("real", "derived")
    for path in (FIXTURES / folder).glob("nvidia-smi-q*.txt")
    if not path.name.startswith("nvidia-smi-q-x")
)
_LINE = re.compile(r"^(\s*)(\S.*?)(?:\s*:(?:\s(.*)|$))?\s*$")


def _edited(text: str) -> list[str]:
    """The capture, and copies: every 9th line joined to the next one by four spaces (two fields
    on one line, as a paste that lost a newline), every 13th line's ` : ` broken onto a line of
    its own starting with the colon, each line cut at 40 and at 60 columns, runs of spaces
    collapsed, CRLF line ends."""
    lines = text.split("\n")
    joined = [
        f"{line}    {lines[i + 1].lstrip()}" if i % 9 == 0 and i + 1 < len(lines) else line
        for i, line in enumerate(lines)
    ]
    colon = [line.replace(" : ", "\n  : ", 1) if i % 13 == 0 else line for i, line in enumerate(lines)]
    cuts = [
        "\n".join(
            part for line in lines for part in ([line[k : k + w] for k in range(0, len(line), w)] or [""])
        )
        for w in (40, 60)
    ]
    collapsed = "\n".join(re.sub(r"\s+", " ", line).strip() for line in lines)
    return [text, "\n".join(joined), "\n".join(colon), *cuts, collapsed, text.replace("\n", "\r\n")]


def test_every_capture_is_read() -> None:
    assert len(CAPTURES) >= 25


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
def test_joined_fields_split_line_by_line_as_the_whole_text_regex_splits(path: Path) -> None:
    """The capture and its edits (_edited), a field whose colon line follows its label's line
    (`Label` / `  : value    Other   : x`, the one match that spans lines), and lines of two
    fields whose colons follow a no-break space, a tab or a bus id's colons."""
    texts = [
        *_edited(path.read_text()),
        "    Mode\n      : On      Other Mode      : Off\n",
        "    Mode\u00a0: On      Other Mode\t\t: Off\n    Bus Id : 00000000:18:00.0    Domain   : 0x0000",
    ]
    for text in texts:
        assert _split_joined_fields(text) == _JOINED_FIELDS.sub(_split_fields, text)


def _keyed(line: str) -> bool:
    """The former `_keyed`: a `key : value` line (`key :` too)."""
    match = _LINE.match(line)
    return match is not None and (match.group(3) is not None or line.rstrip().endswith(" :"))


def _header(line: str) -> bool:
    """The former `_header`: a section header, no value, no colon, not the banner."""
    text = line.strip()
    return bool(text) and not _keyed(line) and not text.startswith("=") and not re.search(r":(\s|$)", text)


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
def test_one_reading_of_a_line_is_what_each_line_test_read(path: Path) -> None:
    """Every line of the capture and its edits (_edited), split at newlines and by
    str.splitlines (the re-join and the tree each split their way)."""
    for text in _edited(path.read_text()):
        for raw in {*text.split("\n"), *text.splitlines()}:
            line = _read_line(raw)
            match = _LINE.match(raw)
            node = None
            if match is not None and raw.strip() and not raw.strip().startswith("====="):
                value = match.group(3)
                node = (
                    len(match.group(1).expandtabs()),
                    match.group(2),
                    None if value is None else value.strip(),
                )
            head = re.match(r"GPU\s+\S+\s*$", raw) is not None
            assert line == (node, not raw.strip(), _keyed(raw), _header(raw), _indent(raw), head), raw


def test_a_line_read_by_an_earlier_parse_reads_as_it_read_the_first_time(monkeypatch: Any) -> None:
    """Every capture and its edits (_edited), read with the table of lines emptied before each
    text, then all of them again with the table holding every line read before (and in the
    other order), then again with a table of 50 lines (emptied every 50 new lines, mid-parse):
    the same reports (their repr); each line the table holds reads as _read_line reads it."""
    texts = [t for path in CAPTURES for t in _edited(path.read_text())]
    first = []
    for t in texts:
        text_tree._READ_LINES.clear()
        first.append(repr(text_q.parse_text_q(t)))
    text_tree._READ_LINES.clear()
    for t in texts:
        text_q.parse_text_q(t)
    assert len(text_tree._READ_LINES) > 500
    assert [repr(text_q.parse_text_q(t)) for t in texts] == first
    assert [repr(text_q.parse_text_q(t)) for t in reversed(texts)] == first[::-1]
    assert all(line == _read_line(raw) for raw, line in text_tree._READ_LINES.items())
    monkeypatch.setattr(text_tree, "_READ_LINES_MAX", 50)
    assert [repr(text_q.parse_text_q(t)) for t in texts] == first
    assert len(text_tree._READ_LINES) <= 50


def _scanned(node: dict[str, Any], key: str) -> Any:
    """The former `_tree_child`: the exact label, else the first label equal casefolded."""
    if key in node:
        return node[key]
    return next((value for label, value in node.items() if label.casefold() == key.casefold()), None)


def _sections(tree: dict[str, Any]) -> list[dict[str, Any]]:
    return [tree, *(s for value in tree.values() if isinstance(value, dict) for s in _sections(value))]


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
def test_a_section_finds_a_label_as_the_scan_of_its_labels_finds_it(path: Path) -> None:
    """Every label of every section of the capture's tree, as printed, upper-cased, lower-cased
    and swapped in case, and one absent, looked up in the tree of the capture and of a copy where
    every 3rd line is doubled above itself with its label's case swapped and a value of 9 (two
    labels alike but for case: the first printed wins)."""
    text = path.read_text()
    doubled = [
        part
        for i, line in enumerate(text.splitlines())
        for part in (
            [line.partition(" : ")[0].swapcase() + (" : 9" if " : " in line else ""), line]
            if i % 3 == 0 and line.strip()
            else [line]
        )
    ]
    for lines in (text.splitlines(), doubled):
        tree = _text_tree(lines, _Lines())
        for section in _sections(tree):
            assert isinstance(section, _Section)
            for label in [*section, "No Such Label"]:
                for key in (label, label.upper(), label.lower(), label.swapcase()):
                    assert _tree_child(section, key) is _scanned(section, key), key


# what a cell of a -q record may read in place of its value: nvidia-smi's markers, every NVML
# error string and GPU-level fault word, as printed, bracketed, upper-cased, and beside an "_"
_CELLS = (
    "N/A",
    "ERR!",
    "[N/A]",
    "[Not Supported]",
    *(form for word in (*FAULT_WORDS, *NVML_FIELD_ERRORS) for form in (word, f"[{word}]", word.upper())),
    "access_timeout_recovery",
    "Timeout_",
    "Unknown Error \u017f",
)


def _faulted(text: str) -> list[str]:
    """Copies of the capture where one value in every 7th `key : value` line (starting at the
    k-th, k = 0..6) reads each of _CELLS in turn; and one whose Fabric State reads In Progress
    with its Status ERR! (a status beside a state that says it was not read)."""
    lines = text.splitlines()
    keyed = [i for i, line in enumerate(lines) if " : " in line]
    copies = []
    for k in range(7):
        edited = list(lines)
        for n, i in enumerate(keyed[k::7]):
            label = edited[i].partition(" : ")[0]
            edited[i] = f"{label} : {_CELLS[(n + k) % len(_CELLS)]}"
        copies.append("\n".join(edited))
    fabric = re.sub(r"(\n\s+State\s+: )\S[^\n]*", r"\1In Progress", text)
    copies.append(re.sub(r"(\n\s+Status\s+: )\S[^\n]*", r"\1ERR!", fabric))
    return copies


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
def test_a_record_s_fault_screen_finds_what_its_leaves_find(path: Path) -> None:
    """Each GPU record's faults and cell faults (`_text_faults`) are `_field_faults` of its
    leaves, in the capture, its edits (_edited) and the copies with fault markers in its cells
    (_faulted)."""
    text = path.read_text()
    for edited in [*_edited(text), *_faulted(text)]:
        lines = edited.splitlines()
        read = _Lines()
        for _key, body in _text_gpu_blocks(lines, read):
            section = _text_tree(body, read)
            assert _text_faults(section) == _field_faults(_tree_leaves(section), "Product Name")


def test_the_fault_screen_is_tried_on_records_with_and_without_faults() -> None:
    """The copies with markers (_faulted) hold records with faults and cell faults, and the
    captures records with none: both ways of the screen are tried."""
    seen: set[bool] = set()
    for path in CAPTURES:
        for edited in [path.read_text(), *_faulted(path.read_text())]:
            read = _Lines()
            for _key, body in _text_gpu_blocks(edited.splitlines(), read):
                faults, cells = _text_faults(_text_tree(body, read))
                seen.add(bool(faults or cells))
    assert seen == {True, False}


def test_a_memory_value_cut_before_its_unit_is_not_read() -> None:
    """Edits: the real H200 `-q` (590.48.01, under load) cut inside its `FB Memory Usage`
    `Total : 143771 MiB` to `Total : 14` plus a newline, and cut inside its first process's
    `Used GPU Memory : 2566 MiB` to `: 25` plus a newline. Before: 14 MiB read as the GPU's
    memory (vram failed: the GPU "has" 14 MiB) and 25 MiB as the process's. Now a `-q` memory
    value without its unit (nvidia-smi always prints `MiB`) is a value cut, not read: None; the
    whole capture still reads 143771 MiB."""
    path = FIXTURES / "real" / "nvidia-smi-q__h200__1gpu__driver590.48.01__load.txt"
    text = path.read_text()
    total = re.search(r"^        Total\s+: 143771 MiB$", text, re.M)
    assert total is not None
    cut = text[: total.end() - len("3771 MiB")] + "\n"
    assert cut.endswith(": 14\n")
    gpu = text_q.parse_text_q(cut).gpus[0]
    assert (gpu.memory_total_mib, gpu.record_cut) == (None, True)
    used = text.index("Used GPU Memory               : 2566 MiB")
    cut = text[: used + len("Used GPU Memory               : 25")] + "\n"
    gpu = text_q.parse_text_q(cut).gpus[0]
    assert gpu.memory_total_mib == 143771
    assert all(p.used_memory_mib != 25 for p in gpu.processes), gpu.processes
    assert text_q.parse_text_q(text).gpus[0].memory_total_mib == 143771


def _shape(tree: dict[str, Any]) -> list[tuple[str, Any]]:
    """A tree as nested (label, value) pairs in its order (dicts equal in another order differ)."""
    return [(label, _shape(value) if isinstance(value, dict) else value) for label, value in tree.items()]


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
def test_the_whole_text_tree_made_of_the_records_trees_is_the_walk_of_the_whole_text(path: Path) -> None:
    """The capture and its edits (_edited: runs of spaces collapsed, a record's lines flush with
    its head), and copies with a line flush left inside the second record, a head written
    `GPU 0: ` (a value, not a section), the first record's head printed twice, and the text cut
    in two: _whole_tree reads as _text_tree of the whole text reads, labels, values and order."""
    text = path.read_text()
    lines = text.splitlines()
    heads = [i for i, line in enumerate(lines) if line.startswith("GPU ")]
    edits = [*_edited(text), text[: len(text) // 2]]
    if len(heads) >= 2:
        edits.append("\n".join([*lines[: heads[1] + 2], "Flush Label : 1", *lines[heads[1] + 2 :]]))
        edits.append("\n".join([*lines[: heads[1]], "GPU 0: ", *lines[heads[1] + 1 :]]))
        edits.append("\n".join([*lines[: heads[1]], lines[heads[0]], *lines[heads[1] + 1 :]]))
    for edit in edits:
        read = _Lines()
        every = edit.splitlines()
        trees = [_text_tree(block, read) for _, block in _text_gpu_blocks(every, read)]
        assert _shape(text_q._whole_tree(every, trees, read)) == _shape(_text_tree(every, _Lines()))
