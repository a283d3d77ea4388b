"""Every cell of one GPU, one marker at a time (truth sweep round 23): what nvidia-smi prints in
a cell it has no value for (`N/A`, `[N/A]`, `[Not Supported]`, `[Insufficient Permissions]`,
`[Requested functionality has been deprecated]`, nothing) or could not read (`ERR!`,
`[Unknown Error]`, `Unknown Error`), put into each cell of one GPU's record of real captures
(tests/fixtures/real; the 8 x A100 XML of tests/fixtures/derived). The cells are found, not
listed: every `-q` line, `-q -x` element and CSV cell of the GPU, kept where the marker takes a
value away from a field a health rule reads (step._RULE_VALUES, the rules' own fields).

- A marker is never a value: the GPU's record loses the value (None), never gets another one
  (a `[N/A]` read as 0 GiB, 0 W, 0 replays).
- A rule that reads the field does not pass on the other GPUs' values: before, one GPU's
  `Replays Since Reset : N/A` passed pcie_replays as "0 replays", its `GPU Current Temp : N/A`
  passed temperature on the other seven, its `Current Power Limit : N/A` power_limit "at
  default", as did a `Remapped Rows` count memory_repair and `Used` memory foreign_processes.
- The row names the GPU; the GPU is still counted.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuonboard.facts.nvidia_smi import GpuInfo, parse_any
from gpuonboard.steps.checks.gpu_health.step import _RULE_VALUES

from ...offline_judge import verdicts

FIXTURES = Path(__file__).parents[3] / "fixtures"
REAL = FIXTURES / "real"
H100_Q = REAL / "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt"
A100_XML = FIXTURES / "derived" / "nvidia-smi-q-x__a100-sxm4-80gb__8gpu__derived.xml"
A100_CSV = REAL / "nvidia-smi-query-gpu__a100-pcie-40gb__2gpu__driver555.42.02.csv"
# single-GPU captures whose every cell is marked (the parse alone: no marker is a value)
GH200_Q = (
    REAL / "nvidia-smi-q__gh200-480gb__1gpu__driver550.127.05__dram-unc-1__power-limit-700of900__gls.txt"
)
H200_XML = REAL / "nvidia-smi-q-x__h200__1gpu__driver580.159.04.xml"
H100_CSV_ALL = REAL / "nvidia-smi-query-gpu__h100-80gb-hbm3__1gpu__driver590.48.01__idle.csv"
V100_Q = REAL / "nvidia-smi-q__tesla-v100-sxm2-32gb__1of4gpu__driver418.67.txt"

# no value: said by nvidia-smi (not supported, not permitted, deprecated) or left empty
NO_VALUE = (
    "N/A",
    "[N/A]",
    "[Not Supported]",
    "[Insufficient Permissions]",
    "[Requested functionality has been deprecated]",
    "",
)
# a value nvidia-smi failed to read
FAILED = ("ERR!", "[Unknown Error]", "Unknown Error")
MARKERS = NO_VALUE + FAILED
# GpuInfo fields whose value IS what nvidia-smi says of N/A (the ECC / MIG mode / memory size
# printed as not supported: faults' and values' documented readings), and the power draw, which
# -q -x gives twice (average, then instant: one unread, the other read); the fabric's Status is
# an NVML return string as printed ("Unknown Error": the registration failed; fabric_manager
# judges it: faults._STATUS_FIELDS)
_NA_READINGS = {"ecc_na", "mig_na", "memory_unified", "power_draw_w", "fabric_status"}
# (power_limit_requested says which CSV column gave the limit: with `enforced.power.limit` marked,
# `power.limit`'s, the requested one; provenance, not a reading)
_IGNORED = {"cell_faults", "faults", "provenance", "power_limit_requested"}


def q_cells(text: str, gpu: int) -> Iterator[tuple[str, int, int]]:
    """(label line, start, end) of each value of GPU `gpu`'s `-q` record."""
    starts = [m.start() for m in re.finditer(r"(?m)^GPU [0-9A-Fa-f]{8}:", text)]
    start, end = starts[gpu], (starts[gpu + 1] if gpu + 1 < len(starts) else len(text))
    for m in re.finditer(r"(?m)^(\s+[^:\n]*?\S\s*: )(.*\S)[ \t]*$", text[start:end]):
        yield m.group(0).strip(), start + m.start(2), start + m.end(2)


def xml_cells(text: str, gpu: int) -> Iterator[tuple[str, int, int]]:
    """(element, start, end) of each leaf value of the `gpu`-th <gpu> element."""
    start = [m.start() for m in re.finditer(r"<gpu id=", text)][gpu]
    end = text.index("</gpu>", start)
    for m in re.finditer(r"<(\w+)>([^<\n]*\S[^<\n]*)</\1>", text[start:end]):
        yield f"<{m.group(1)}>{m.group(2)}", start + m.start(2), start + m.end(2)


def csv_cells(text: str, gpu: int) -> Iterator[tuple[str, int, int]]:
    """(field=value, start, end) of each cell of data row `gpu` (its leading blank kept)."""
    lines = text.split("\n")
    head = [h.strip() for h in lines[0].split(",")]
    at = sum(len(line) + 1 for line in lines[: 1 + gpu])
    for i, cell in enumerate(lines[1 + gpu].split(",")):
        yield f"{head[i]}={cell.strip()}", at + len(cell) - len(cell.lstrip()), at + len(cell.rstrip())
        at += len(cell) + 1


def cells(capture: Path, text: str, gpu: int) -> Iterator[tuple[str, int, int]]:
    if capture.suffix == ".xml":
        return xml_cells(text, gpu)
    return csv_cells(text, gpu) if capture.suffix == ".csv" else q_cells(text, gpu)


def gained(before: GpuInfo, after: GpuInfo) -> dict[str, tuple[object, object]]:
    """The fields `after` holds a value of that `before` did not (or another value)."""
    out = {}
    for field in dataclasses.fields(GpuInfo):
        old, new = getattr(before, field.name), getattr(after, field.name)
        if field.name == "processes":  # (a process's own fields, one by one)
            old = [v for proc in before.processes for v in dataclasses.astuple(proc)]
            new = [v for proc in after.processes for v in dataclasses.astuple(proc)]
            if len(new) > len(old) or any(
                o != n and n is not None and n != "" for o, n in zip(old, new, strict=False)
            ):
                out[field.name] = (old, new)
            continue
        if isinstance(old, tuple) and isinstance(new, tuple) and set(new) <= set(old):
            continue  # (names lost, none gained: clock_event_reasons_read without the cell's reason)
        if field.name not in _IGNORED and old != new and not _empty(new) and new != "":
            out[field.name] = (old, new)
    return out


def _empty(value: object) -> bool:
    """No value: None, False (a flag not set) or () (0 is a value)."""
    return value is None or value is False or value == ()


def lost(before: GpuInfo, after: GpuInfo) -> set[str]:
    """The fields whose value `after` lost."""
    return {
        f.name
        for f in dataclasses.fields(GpuInfo)
        if not _empty(getattr(before, f.name)) and _empty(getattr(after, f.name))
    }


@pytest.mark.parametrize("capture", [GH200_Q, H200_XML, H100_CSV_ALL, V100_Q], ids=lambda p: p.name)
def test_no_marker_in_any_cell_is_read_as_a_value(capture: Path) -> None:
    """Each cell of the GPU's record, one marker each (in turn over MARKERS): the record loses
    that cell's value or keeps it, and gains none (N/A's own readings aside)."""
    text = capture.read_text()
    whole = parse_any(text).gpus[0]
    found = list(cells(capture, text, 0))
    assert len(found) > 30, len(found)
    bad = []
    for i, (label, start, end) in enumerate(found):
        marker = MARKERS[i % len(MARKERS)]
        gpus = parse_any(text[:start] + marker + text[end:]).gpus
        assert len(gpus) == 1, (label, marker)
        wrong = {k: v for k, v in gained(whole, gpus[0]).items() if k not in _NA_READINGS}
        if wrong:
            bad.append((label, marker, wrong))
    assert not bad, bad


# (capture, the order, the GPU marked)
MULTI = [
    (H100_Q, "gpu_model: H100 80GB HBM3\ngpu_count: 8\n", 1),
    (A100_XML, "gpu_model: A100 80GB\ngpu_count: 8\n", 2),
    (A100_CSV, "gpu_model: A100 40GB PCIe\ngpu_count: 2\n", 1),
]


def _one_gpu(capture: Path, text: str, gpu: int) -> tuple[str, int]:
    """A text of the GPU's record alone (the scan's parse: an 8-GPU -q parses 8x slower) and
    the offset of that record in `text`."""
    if capture.suffix == ".csv":
        lines = text.split("\n")
        return "\n".join([lines[0], lines[1 + gpu], ""]), 0
    mark = r"(?m)^GPU [0-9A-Fa-f]{8}:" if capture.suffix == ".txt" else r"[ \t]*<gpu id="
    starts = [m.start() for m in re.finditer(mark, text)]
    end = starts[gpu + 1] if gpu + 1 < len(starts) else len(text)
    if capture.suffix == ".xml":
        end = text.index("</gpu>", starts[gpu]) + len("</gpu>\n")
        return text[: starts[0]] + text[starts[gpu] : end] + "</nvidia_smi_log>\n", starts[gpu] - starts[0]
    return text[: starts[0]] + text[starts[gpu] : end], starts[gpu] - starts[0]


def _rule_cells(capture: Path, gpu: int) -> list[tuple[str, int, int, str, set[str]]]:
    """(label, start, end, marker, the rules reading a field the marker took) of each cell of
    GPU `gpu` whose marker takes away a value a rule reads."""
    text = capture.read_text()
    alone, shift = _one_gpu(capture, text, gpu)
    whole = parse_any(alone).gpus[0]
    out = []
    found = list(cells(capture, alone, 0))
    for i, (label, start, end) in enumerate(found):
        marker = MARKERS[i % len(MARKERS)]
        gone = lost(whole, parse_any(alone[:start] + marker + alone[end:]).gpus[0])
        rules = {rule for rule, fields in _RULE_VALUES.items() if gone & {attr for attr, _ in fields}}
        if capture.suffix == ".csv":  # (the row's place in the whole CSV)
            start, end = _csv_span(text, gpu, label)
        else:
            start, end = start + shift, end + shift
        if rules:
            out.append((label, start, end, marker, rules))
    return out


def _csv_span(text: str, gpu: int, label: str) -> tuple[int, int]:
    """The span of `label`'s cell (field=value) in data row `gpu` of the whole CSV."""
    return next((s, e) for lab, s, e in csv_cells(text, gpu) if lab == label)


@pytest.mark.parametrize(("capture", "order", "gpu"), MULTI, ids=lambda v: getattr(v, "name", str(v)))
def test_a_marker_in_a_field_a_rule_reads_passes_no_rule_on_the_other_gpus(
    tmp_path: Path, capture: Path, order: str, gpu: int
) -> None:
    """Each cell of one GPU whose marker takes away a value a rule reads: that rule, which
    passes on the real capture, does not pass; its row names the GPU; the GPU is counted, and
    the GPUs not marked keep their place in the rows."""
    text = capture.read_text()
    base = verdicts(tmp_path, capture.name, text, order)
    found = _rule_cells(capture, gpu)
    assert len(found) >= (2 if capture.suffix == ".csv" else 10), found
    bad = []
    for label, start, end, marker, rules in found:
        got = verdicts(tmp_path, capture.name, text[:start] + marker + text[end:], order)
        assert got["gpu_count"] == base["gpu_count"], (label, marker)
        for rule in rules:
            if rule not in base or base[rule][0] != "pass":
                continue
            verdict, actual = got[rule]
            if verdict == "pass" or f"GPU {gpu}" not in actual:
                bad.append((label, marker, rule, got[rule]))
    assert not bad, bad


@pytest.mark.parametrize("marker", NO_VALUE + FAILED)
@pytest.mark.parametrize("tag", ["replay_counter", "replay_rollover_counter"])
def test_an_unread_replay_counter_of_a_lone_gpu_is_no_count(tmp_path: Path, marker: str, tag: str) -> None:
    """The real H200's `-q -x` (1 replay) with its replay counter or its rollover counter
    printed without a value: no other GPU speaks for it, and the rule read the unread counter as
    0 ("0 replays since reset, no rollover"). It is unverified."""
    text = H200_XML.read_text()
    order = "gpu_model: H200\ngpu_count: 1\n"
    assert verdicts(tmp_path, H200_XML.name, text, order)["pcie_replays"][0] == "pass"
    marked = re.sub(rf"<{tag}>[^<]*</{tag}>", f"<{tag}>{marker}</{tag}>", text, count=1)
    assert marked != text
    verdict, actual = verdicts(tmp_path, H200_XML.name, marked, order)["pcie_replays"]
    assert verdict == "unverified" and "0 replays" not in actual, (verdict, actual)


@pytest.mark.parametrize("marker", NO_VALUE + FAILED)
@pytest.mark.parametrize(
    ("capture", "cell"),
    [
        # the real GH200 -q: 1 uncorrectable DRAM error in its lifetime count (the row fails)
        (GH200_Q, ("Aggregate", "DRAM Uncorrectable")),
        (GH200_Q, ("Aggregate", "SRAM Uncorrectable SEC-DED")),
        (H200_XML, ("<aggregate>", "dram_uncorrectable")),
        (H200_XML, ("<aggregate>", "sram_uncorrectable_secded")),
    ],
    ids=lambda v: getattr(v, "name", "/".join(v) if isinstance(v, tuple) else str(v)),
)
def test_an_unread_part_of_an_ecc_count_is_no_zero(
    tmp_path: Path, capture: Path, cell: tuple[str, str], marker: str
) -> None:
    """The ECC totals are sums of their parts (SRAM and DRAM counts): one part printed without a
    count while the other section (volatile / aggregate) counts it was left out of the sum, so
    the GH200's `DRAM Uncorrectable : N/A` passed ecc_uncorrectable "0" where its 1 error failed
    it, and the H200's passed "0" unread. That total is unknown: the row does not pass."""
    text = capture.read_text()
    order = "gpu_model: any\n"
    section, label = cell
    at = text.index(section, text.index("ECC Errors" if capture.suffix == ".txt" else "<ecc_errors>"))
    if capture.suffix == ".txt":
        match = re.compile(rf"(?m)^\s+{re.escape(label)}\s*: (.*)$").search(text, at)
    else:
        match = re.compile(rf"<{label}>([^<]*)</{label}>").search(text, at)
    assert match is not None
    marked = text[: match.start(1)] + marker + text[match.end(1) :]
    verdict, actual = verdicts(tmp_path, capture.name, marked, order)["ecc_uncorrectable"]
    whole = verdicts(tmp_path, capture.name, text, order)["ecc_uncorrectable"][0]
    # (a part read with errors still fails the row: the GH200's 1 DRAM error beside an unread SRAM)
    assert verdict != "pass" and (whole != "fail" or "DRAM" in label or verdict == "fail"), (verdict, actual)
