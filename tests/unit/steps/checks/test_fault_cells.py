"""A fault marker in ONE cell of one GPU (truth sweep round 20): what nvidia-smi prints where NVML
could not read one value (`ERR!`, `[Unknown Error]`, `Unknown Error`, `[N/A]` in the table, ...),
put into one GPU's cell of a real multi-GPU capture (tests/fixtures/real, the 8 x A100 XML of
tests/fixtures/derived), column widths kept. A fact that could not be read is no pass: the rule
that reads it is not passed on the other GPUs' values, and the marked GPU is never dropped."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ...offline_judge import verdicts

FIXTURES = Path(__file__).parents[3] / "fixtures"
REAL = FIXTURES / "real"
A100_TABLE = REAL / "nvidia-smi__a100-pcie-40gb__2gpu__driver555.42.02.txt"
H100_TABLE = REAL / "nvidia-smi__h100-80gb-hbm3__8gpu__driver550.90.07.txt"
H100_Q = REAL / "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt"
A100_XML = FIXTURES / "derived" / "nvidia-smi-q-x__a100-sxm4-80gb__8gpu__derived.xml"
A100_CSV = REAL / "nvidia-smi-query-gpu__a100-pcie-40gb__2gpu__driver555.42.02.csv"
# what nvidia-smi prints in a cell it could not read (faults.py: the table's ERR! and bracketed
# [N/A], NVML's error string with or without brackets)
MARKERS = ("ERR!", "[Unknown Error]", "Unknown Error", "[N/A]")
FIELD_MARKERS = ("ERR!", "[Unknown Error]", "Unknown Error")


def table_marked(text: str, gpu: int, row: int, token: str, marker: str) -> str | None:
    """The table with `token` in row `row` (0-2) of GPU `gpu`'s record set to `marker`,
    right-aligned over the blanks before it as nvidia-smi aligns its cells (the line's width
    kept); None where the marker does not fit the cell's blanks."""
    lines = text.split("\n")
    first = next(i for i, line in enumerate(lines) if re.match(rf"\|\s+{gpu}\s+\S", line))
    line = lines[first + row]
    match = re.search(rf"(?<=\s){re.escape(token)}(?=\s)", line)
    assert match is not None, (token, line)
    start = match.start()
    while match.end() - start - 1 < len(marker) and line[start - 2] == " ":
        start -= 1
    if match.end() - start <= len(marker):
        return None
    lines[first + row] = line[:start] + marker.rjust(match.end() - start) + line[match.end() :]
    assert len(lines[first + row]) == len(line)
    return "\n".join(lines)


def q_marked(text: str, gpu: int, label: str, marker: str) -> str:
    """The `-q` with the first `label` line of its `gpu`-th GPU record set to `marker`."""
    starts = [m.start() for m in re.finditer(r"(?m)^GPU [0-9A-Fa-f]{8}:", text)]
    start, end = starts[gpu], (starts[gpu + 1] if gpu + 1 < len(starts) else len(text))
    block = re.sub(rf"(?m)^(\s+{re.escape(label)}\s*: ).*$", rf"\g<1>{marker}", text[start:end], count=1)
    assert block != text[start:end]
    return text[:start] + block + text[end:]


def xml_marked(text: str, gpu: int, tag: str, marker: str) -> str:
    """The XML with the first <tag> of its `gpu`-th <gpu> element set to `marker`."""
    starts = [m.start() for m in re.finditer(r"<gpu id=", text)]
    start = starts[gpu]
    end = text.index("</gpu>", start)
    block = re.sub(rf"<{tag}>[^<]*</{tag}>", f"<{tag}>{marker}</{tag}>", text[start:end], count=1)
    assert block != text[start:end]
    return text[:start] + block + text[end:]


def csv_marked(text: str, row: int, field: str, marker: str) -> str:
    """The CSV with `field` of its data row `row` set to `marker` (its leading blank kept)."""
    lines = text.split("\n")
    head = [h.strip().split(" [")[0] for h in lines[0].split(",")]
    cells = lines[1 + row].split(",")
    cells[head.index(field)] = f" {marker}"
    lines[1 + row] = ",".join(cells)
    return "\n".join(lines)


ORDERS = {
    A100_TABLE: "gpu_model: A100 40GB PCIe\ngpu_count: 2\n",
    H100_TABLE: "gpu_model: H100 80GB HBM3\ngpu_count: 8\n",
    H100_Q: "gpu_model: H100 80GB HBM3\ngpu_count: 8\n",
    A100_XML: "gpu_model: A100 80GB\ngpu_count: 8\n",
    A100_CSV: "gpu_model: A100 40GB PCIe\ngpu_count: 2\n",
}


def _judged(tmp_path: Path, capture: Path, text: str) -> dict[str, tuple[str, str]]:
    return verdicts(tmp_path, capture.name, text, ORDERS[capture])


# (capture, GPU, where in its record, the rule that reads it, the marked GPU's name in the rows)
CELLS = [
    # the table's MIG M. cell (row 2) and its temperature (row 1): the MIG mode of a MIG-capable
    # GPU whose cell read ERR! was read as nvidia-smi's N/A ("MIG not available as configured")
    (A100_TABLE, 1, ("table", 2, "Disabled"), "mig_mode"),
    (H100_TABLE, 3, ("table", 2, "Disabled"), "mig_mode"),
    (H100_TABLE, 3, ("table", 1, "23C"), "temperature"),
    (A100_TABLE, 1, ("table", 1, "37C"), "temperature"),
    (H100_TABLE, 3, ("table", 0, "On"), "persistence_mode"),
    # -q: the reset question of R5xx, the temperature, the power limits
    (H100_Q, 3, ("q", "Reset Required"), "gpu_recovery"),
    (H100_Q, 3, ("q", "Drain and Reset Recommended"), "gpu_recovery"),
    (H100_Q, 3, ("q", "GPU Current Temp"), "temperature"),
    (H100_Q, 3, ("q", "Default Power Limit"), "power_limit"),
    (H100_Q, 3, ("q", "Current Power Limit"), "power_limit"),
    # -q -x: the same fields by their tags
    (A100_XML, 2, ("xml", "reset_required"), "gpu_recovery"),
    (A100_XML, 2, ("xml", "gpu_temp"), "temperature"),
    (A100_XML, 2, ("xml", "default_power_limit"), "power_limit"),
    (A100_XML, 2, ("xml", "current_power_limit"), "power_limit"),
    # the --query-gpu CSV
    (A100_CSV, 1, ("csv", "temperature.gpu"), "temperature"),
]


def _marked(capture: Path, gpu: int, where: tuple[object, ...], marker: str) -> str | None:
    text = capture.read_text()
    kind = where[0]
    if kind == "table":
        return table_marked(text, gpu, int(str(where[1])), str(where[2]), marker)
    if kind == "q":
        return q_marked(text, gpu, str(where[1]), marker)
    if kind == "xml":
        return xml_marked(text, gpu, str(where[1]), marker)
    return csv_marked(text, gpu, str(where[1]), marker)


@pytest.mark.parametrize(("capture", "gpu", "where", "rule"), CELLS, ids=lambda v: getattr(v, "name", str(v)))
def test_a_fault_marker_in_one_gpus_cell_passes_no_rule_that_reads_it(
    tmp_path: Path, capture: Path, gpu: int, where: tuple[object, ...], rule: str
) -> None:
    """The real capture passes `rule`; with the cell of one GPU printed as a fault marker the
    rule is not passed (the other GPUs' values are no reading of it), the marked GPU keeps its
    place in the count, and sensor_faults names it."""
    whole = _judged(tmp_path, capture, capture.read_text())
    assert whole[rule][0] == "pass", whole[rule]
    kind = where[0]
    tried = 0
    for marker in MARKERS if kind == "table" else FIELD_MARKERS:
        text = _marked(capture, gpu, where, marker)
        if text is None:
            continue
        tried += 1
        got = _judged(tmp_path, capture, text)
        verdict, actual = got[rule]
        assert verdict in ("unverified", "warn", "fail"), (marker, got[rule])
        assert f"GPU {gpu}" in actual, (marker, actual)
        assert got["gpu_count"] == whole["gpu_count"], (marker, got["gpu_count"])
        assert got["sensor_faults"][0] == "warn" and f"GPU {gpu}:" in got["sensor_faults"][1], marker
    assert tried


@pytest.mark.parametrize(
    ("capture", "gpu", "where"),
    [
        (H100_Q, 3, ("q", "GPU Current Temp")),
        (A100_XML, 2, ("xml", "default_power_limit")),
        (A100_CSV, 1, ("csv", "temperature.gpu")),
    ],
    ids=lambda v: getattr(v, "name", str(v)),
)
@pytest.mark.parametrize("word", ["[GPU is lost]", "[GPU requires reset]"])
def test_a_gpu_nvml_says_is_lost_or_needs_a_reset_fails_wherever_it_is_said(
    tmp_path: Path, capture: Path, gpu: int, where: tuple[object, ...], word: str
) -> None:
    """NVML's "GPU is lost" / "GPU requires reset" in any one field of a GPU's record: that GPU is
    unreadable (gpu_health fails it), never one sensor's fault, and is still counted."""
    text = _marked(capture, gpu, where, word)
    assert text is not None
    got = _judged(tmp_path, capture, text)
    assert got["gpu_health"][0] == "fail" and f"GPU {gpu}" in got["gpu_health"][1], got["gpu_health"]
    assert got["gpu_count"][0] == "fail", got["gpu_count"]


def test_the_table_reads_a_fault_in_its_mig_cell_as_no_mode_not_as_na(tmp_path: Path) -> None:
    """A plain `N/A` in the MIG M. cell is nvidia-smi saying MIG is not available here; `ERR!`
    there is a failed read (a30 / a40 captures print it in that cell), never that N/A."""
    from gpuonboard.facts.nvidia_smi import parse_table

    text = A100_TABLE.read_text()
    said = parse_table(str(table_marked(text, 1, 2, "Disabled", "N/A"))).gpus[1]
    assert said.mig_na and said.mig_mode is None
    for marker in MARKERS:
        failed = parse_table(str(table_marked(text, 1, 2, "Disabled", marker))).gpus[1]
        assert (failed.mig_na, failed.mig_mode) == (False, None), marker
        assert failed.cell_faults == (f"MIG mode reads {marker}",)
        ecc = parse_table(str(table_marked(text, 1, 0, "0", marker))).gpus[1]
        assert (ecc.ecc_na, ecc.ecc_mode) == (False, None), marker


@pytest.mark.parametrize("capture", [A100_TABLE, H100_TABLE], ids=lambda p: p.name)
@pytest.mark.parametrize("marker", ["ERR!", "[N/A]", "[Unknown Error]", "Unknown Error"])
def test_a_marker_in_a_tables_bus_id_or_persistence_cell_drops_no_gpu(
    tmp_path: Path, capture: Path, marker: str
) -> None:
    """A GPU row whose Bus-Id or Persistence-M cell holds a fault marker is still that GPU's row:
    it was skipped, and the 2 x A100 table failed gpu_count with "1" (a GPU claimed missing)."""
    text = capture.read_text()
    whole = _judged(tmp_path, capture, text)
    last = 1 if capture == A100_TABLE else 7
    bus = re.search(rf"(?m)^\|\s+{last}\s+.*?\|\s+(\S+)", text)
    assert bus is not None
    for row_token in (bus.group(1), "On" if capture == H100_TABLE else "Off"):
        marked = table_marked(text, last, 0, row_token, marker)
        if marked is None:
            continue
        got = _judged(tmp_path, capture, marked)
        assert got["gpu_count"] == whole["gpu_count"], (row_token, marker, got["gpu_count"])
        assert f"GPU {last}:" in got["sensor_faults"][1], (row_token, marker)


def _bar1_used_marked(text: str, gpu: int, marker: str) -> str:
    """The `-q` with the `Used` line of GPU `gpu`'s BAR1 Memory Usage block set to `marker`."""
    starts = [m.start() for m in re.finditer(r"(?m)^GPU [0-9A-Fa-f]{8}:", text)]
    bar1 = text.index("BAR1 Memory Usage", starts[gpu])
    block = re.sub(r"(?m)^(\s+Used\s*: ).*$", rf"\g<1>{marker}", text[bar1:], count=1)
    return text[:bar1] + block


@pytest.mark.parametrize("marker", FIELD_MARKERS)
def test_a_fault_in_a_field_no_rule_reads_leaves_the_rules_passing(tmp_path: Path, marker: str) -> None:
    """BAR1 memory (foreign_processes reads the framebuffer's) and the minimum power limit
    (power_limit reads the default and current ones) are fields no rule reads: a marker there is
    said by sensor_faults alone, as -q -x's `bar1_memory_usage/used` always was; before, -q's
    `BAR1 Memory Usage/Used` and `Min Power Limit` took those two rules to unverified."""
    whole = _judged(tmp_path, H100_Q, H100_Q.read_text())
    text = q_marked(_bar1_used_marked(H100_Q.read_text(), 3, marker), 3, "Min Power Limit", marker)
    text = q_marked(text, 3, "Average FPS", marker)  # (the encoder's frame rate: no rule reads it)
    got = _judged(tmp_path, H100_Q, text)
    for rule in ("foreign_processes", "power_limit"):
        assert whole[rule][0] == "pass" and got[rule] == whole[rule], (rule, got[rule])


@pytest.mark.parametrize(
    ("label", "rule"),
    [
        ("Encoder", "foreign_processes"),  # (gpu_health/usage.py reads the engines' use)
        ("Decoder", "foreign_processes"),
        ("OFA", "foreign_processes"),
        ("Requested Power Limit", "power_limit"),  # (its advice reads the requested limit)
    ],
)
def test_a_fault_in_a_field_a_rule_reads_is_no_pass(tmp_path: Path, label: str, rule: str) -> None:
    """Each field a rule reads, in -q's words: a marker there leaves the rule no pass and
    sensor_faults names it (it never says "no check uses it" of them)."""
    got = _judged(tmp_path, H100_Q, q_marked(H100_Q.read_text(), 3, label, "ERR!"))
    assert got[rule][0] != "pass", got[rule]
    assert got["sensor_faults"][0] == "warn" and "GPU 3:" in got["sensor_faults"][1], got["sensor_faults"]


def test_an_unread_slowdown_temperature_is_no_temperature_pass(tmp_path: Path) -> None:
    """The temperature rule judges the current temperature against the GPU's slowdown limit
    (R535's A10 `-q`: `GPU Slowdown Temp : 87 C`): that limit printed `ERR!` is no pass."""
    capture = REAL / "nvidia-smi-q__a10__1gpu__driver535.129.03.txt"
    whole = verdicts(tmp_path, capture.name, capture.read_text(), "gpu_model: any\n")
    text = q_marked(capture.read_text(), 0, "GPU Slowdown Temp", "ERR!")
    got = verdicts(tmp_path, capture.name, text, "gpu_model: any\n")
    assert whole["temperature"][0] == "pass" and got["temperature"][0] != "pass", got["temperature"]
