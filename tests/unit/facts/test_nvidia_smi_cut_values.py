"""A value an output's cut went through, saved with a newline after it (an editor ends a file
with one): the last line of a `-q` record cut short that names the GPU (`Product Name : NVIDIA
H2` of an H200), the last cell of a `--query-gpu` CSV short of its column's whole shape (a driver
version, a UUID, a bus id) or the start of the value its column has in a row above. Each is read
as not reported (an incomplete probe), never as another model, driver or address. Real captures,
cut in-test as each docstring says."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.gpu_ids import is_product_name
from gpuonboard.facts.nvidia_smi import GpuInfo
from gpuonboard.facts.nvidia_smi.query_csv import parse_query_csv
from gpuonboard.facts.nvidia_smi.text_q import parse_text_q
from gpuonboard.steps.base import Check

REAL = Path(__file__).parents[2] / "fixtures" / "real"
H200_Q = REAL / "nvidia-smi-q__h200__1gpu__driver590.48.01__load.txt"
# index, name, memory.total [MiB], driver_version, pci.bus_id, ecc.mode.current, clocks_event_reasons.active
H200_CSV = REAL / "nvidia-smi-query-gpu__h200__1gpu__driver580.159.04.csv"
# name, pci.bus_id, vbios_version, temperature.gpu, ... (2 rows)
A100_CSV = REAL / "nvidia-smi-query-gpu__a100-pcie-40gb__2gpu__driver555.42.02.csv"


def _columns(capture: Path, names: list[str]) -> list[str]:
    """The lines (header first) of the columns `names` of a real CSV, in nvidia-smi's layout."""
    table = [[cell.strip() for cell in row] for row in csv.reader(capture.read_text().splitlines())]
    at = [table[0].index(name) for name in names]
    return [", ".join(row[i] for i in at) for row in table]


def _judged(tmp_path: Path, name: str, text: str, order: str) -> dict[str, Check]:
    """The checks (by rule) of `text` saved as `name` in a folder, judged against `order`."""
    folder = tmp_path / "box"
    folder.mkdir()
    (folder / name).write_text(text)
    (tmp_path / "order.yml").write_text(order)
    facts = parse_facts(offline.load_outputs([str(folder)]))
    return {c.name: c for c in offline.judge(facts, offline.load_order(str(tmp_path / "order.yml")))}


def test_a_q_cut_in_its_product_name_with_a_newline_is_no_other_model(tmp_path: Path) -> None:
    """Edit: the real 1 x H200 `-q` cut after `Product Name : NVIDIA H2` (its record's first
    line, `00` and the rest cut away), a newline after it. Before: gpu_model failed, "NVIDIA H2:
    'H200' not in the name" (a cut read as another model). Now the name is not read: gpu_model
    is unverified, an incomplete probe."""
    lines = H200_Q.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("Product Name"))
    text = "".join(lines[:at]) + lines[at].replace("NVIDIA H200", "NVIDIA H2")
    assert text.endswith("NVIDIA H2\n")
    checks = _judged(tmp_path, "nvidia-smi-q.txt", text, "order:\n  gpu_model: H200\n  gpu_count: 1\n")
    assert checks["gpu_model"].verdict == "unverified", checks["gpu_model"]
    assert "NVIDIA H2" not in checks["gpu_model"].actual.replace("NVIDIA H200", "")
    assert "incomplete probe" in checks["gpu_model"].actual


def test_a_csv_cut_in_its_driver_version_with_a_newline_reads_no_driver(tmp_path: Path) -> None:
    """Edit: the real 1 x H200 CSV's `index, name, memory.total, driver_version`, its row's
    driver version `580.159.04` cut to `580.1`, a newline after it. Before: read as driver
    580.1 (the row whole). Now the cell is not read: the CSV is cut mid-row, no driver version."""
    lines = _columns(H200_CSV, ["index", "name", "memory.total [MiB]", "driver_version"])
    assert lines[1].endswith("580.159.04")
    text = "\n".join([lines[0], lines[1][: -len("59.04")]]) + "\n"
    report = parse_query_csv(text, ())
    assert report.driver_version is None and not report.complete
    assert report.gpus[0].name == "NVIDIA H200" and report.gpus[0].record_cut
    assert any("may be cut short (short of a full driver_version)" in w for w in report.warnings)


def test_a_csv_cut_in_its_last_bus_id_with_a_newline_is_no_other_address() -> None:
    """Edit: the real 2 x A100 CSV's `name, pci.bus_id`, its second row's `00000000:8A:00.0`
    cut to `00000000:8A:0`, a newline after it. Before: GPU 1 read at that short address. Now
    not read there (not reported), the CSV cut mid-row."""
    lines = _columns(A100_CSV, ["name", "pci.bus_id"])
    assert lines[2].endswith("00000000:8A:00.0")
    report = parse_query_csv("\n".join([*lines[:2], lines[2][: -len("0.0")]]) + "\n", ())
    assert [g.pci_bus_id for g in report.gpus] == ["00000000:12:00.0", None]
    assert not report.complete and report.gpus[1].record_cut


def test_a_csv_cut_in_its_last_name_with_a_newline_is_no_other_model() -> None:
    """Edit: the real 2 x A100 CSV's `pci.bus_id, name`, its second row's `NVIDIA A100-PCIE-40GB`
    cut to `NVIDIA A100-PC`, a newline after it: the start of the name the row above has. Before:
    GPU 1 read as a card named "NVIDIA A100-PC". Now its name is not read, the CSV cut mid-row;
    a whole CSV of two names is read as before."""
    lines = _columns(A100_CSV, ["pci.bus_id", "name"])
    report = parse_query_csv("\n".join([*lines[:2], lines[2][: -len("IE-40GB")]]) + "\n", ())
    assert [g.name for g in report.gpus] == ["NVIDIA A100-PCIE-40GB", ""]
    assert not report.complete
    whole = parse_query_csv("\n".join(lines) + "\n", ())
    assert whole.complete and [g.name for g in whole.gpus] == ["NVIDIA A100-PCIE-40GB"] * 2


@pytest.mark.parametrize(
    ("above", "last"),
    [
        ("NVIDIA L40S", "NVIDIA L40"),
        ("NVIDIA A100-PCIE-40GB", "NVIDIA A10"),
        ("NVIDIA GeForce RTX 4090 D", "NVIDIA GeForce RTX 4090"),
    ],
)
def test_a_csvs_last_name_that_is_a_whole_product_name_is_read_on_a_mixed_box(
    tmp_path: Path, above: str, last: str
) -> None:
    """Edit: the real 2 x A100 CSV's `pci.bus_id, name`, its first row's name set to `above`, its
    second's to `last`, the start of `above` and a whole name NVIDIA's driver prints (a mixed
    box), a newline after it, and a third row: the second's again. A name given whole in a row
    above is no cut: both GPU kinds are read as named and an order of 3 x `above` fails on the
    other card. The last row alone (no device id, not given above) is what a cut of `above`
    leaves: not read, never another model (review HHH: `NVIDIA A10` under 7 x
    `NVIDIA A100-SXM4-80GB` failed gpu_model as an A10)."""
    lines = _columns(A100_CSV, ["pci.bus_id", "name"])
    text = "\n".join([lines[0], lines[1].replace("NVIDIA A100-PCIE-40GB", above)])
    second = lines[2].replace("NVIDIA A100-PCIE-40GB", last)
    alone = parse_query_csv(text + "\n" + second + "\n", ())
    assert not alone.complete and [g.name for g in alone.gpus] == [above, ""]
    third = second.replace(second.split(",")[0], second.split(",")[0][:-4] + "FF:00.0", 1)
    text += "\n" + second + "\n" + third + "\n"
    report = parse_query_csv(text, ())
    assert report.complete and [g.name for g in report.gpus] == [above, last, last]
    model = above.removeprefix("NVIDIA ").removeprefix("GeForce ")
    checks = _judged(tmp_path, "gpus.csv", text, f"order:\n  gpu_model: {model}\n  gpu_count: 3\n")
    assert checks["gpu_model"].verdict == "fail", checks["gpu_model"]


L40S_CSV = REAL / "nvidia-smi-query-gpu__l40s__1gpu__driver595.80__nvenc-load.csv"


@pytest.mark.parametrize(("device", "read"), [("0x26B910DE", False), ("0x26B510DE", True)])
def test_a_csvs_last_product_name_is_cut_where_its_device_id_names_another(device: str, read: bool) -> None:
    """Edit: the real 1 x L40S CSV's `pci.bus_id, pci.device_id, name`, its row twice, the
    second's bus id `...:FF:00.0`, its name cut to `NVIDIA L40` (a whole product name), a newline
    after it, its device id `device`. Under the L40S's own id (26B9) the name is cut short (not
    read, the CSV incomplete); under an L40's (26B5) it is an L40's whole name."""
    lines = _columns(L40S_CSV, ["pci.bus_id", "pci.device_id", "name"])
    assert lines[1].endswith(":00.0, 0x26B910DE, NVIDIA L40S")
    second = f"{lines[1].split(':')[0]}:FF:00.0, {device}, NVIDIA L40"
    text = "\n".join([lines[0], lines[1], second]) + "\n"
    report = parse_query_csv(text, ())
    assert report.complete is read
    assert [g.name for g in report.gpus] == ["NVIDIA L40S", "NVIDIA L40" if read else ""]


WHOLE_Q = sorted(p for p in REAL.glob("nvidia-smi-q__*.txt") if "cut" not in p.name)


@pytest.mark.parametrize("path", WHOLE_Q, ids=lambda p: p.name)
def test_a_q_cut_inside_a_naming_line_reads_no_other_name(path: Path) -> None:
    """Edit: each real whole `-q`, cut inside the value of the first GPU record's `Product Name`
    and `GPU UUID` lines at each character, a newline after it: the record's name and UUID are
    the whole's or not read, never a shorter one."""
    lines = path.read_text().splitlines(keepends=True)
    whole = parse_text_q("".join(lines))
    for label, field in (("Product Name", "name"), ("GPU UUID", "uuid")):
        at = next((i for i, line in enumerate(lines) if line.strip().startswith(label)), None)
        if at is None or not whole.gpus:
            continue
        start = lines[at].index(":") + 2
        for end in range(start + 1, len(lines[at].rstrip())):
            report = parse_text_q("".join(lines[:at]) + lines[at][:end] + "\n")
            got = [getattr(g, field) for g in report.gpus]
            assert all(v in (None, "", getattr(whole.gpus[0], field)) for v in got), (label, end, got)


# the CSV columns whose value is cut at each character in the sweep below: those of a fixed shape,
# and the name where a row above holds the same one
_SWEPT = ("uuid", "pci.bus_id", "driver_version", "name")


@pytest.mark.parametrize("path", sorted(REAL.glob("nvidia-smi-query-gpu*.csv")), ids=lambda p: p.name)
def test_a_csv_cut_inside_its_last_cell_reads_no_other_identity(path: Path) -> None:
    """Edit: each real `--query-gpu` CSV with a header, each column of `_SWEPT` it has moved last
    (the rows otherwise as printed), its last row cut inside that cell at each character, a
    newline after it: that row's value is the whole's or not read (the name only where a row
    above names the same card: a lone name cut to `NVIDIA H2` shows no sign of it), or (round 29:
    a mixed box's last name, `NVIDIA L40` under `NVIDIA L40S`, is read) a whole product name."""
    table = [[c.strip() for c in row] for row in csv.reader(path.read_text().splitlines()) if row]
    if not table or "." not in ",".join(table[0]) or any(len(r) != len(table[0]) for r in table):
        return
    head = [h.split(" [")[0] for h in table[0]]
    for column in (c for c in _SWEPT if c in head):
        at = head.index(column)
        rows = [[*(v for i, v in enumerate(r) if i != at), r[at]] for r in table]
        cell = rows[-1][-1]
        if column == "name" and (len(rows) < 3 or rows[-2][-1] != cell) or cell.startswith("["):
            continue
        lines = [", ".join(r) for r in rows]
        whole = parse_query_csv("\n".join(lines) + "\n", ())
        want = {_identity(g, column) for g in whole.gpus}
        for end in range(1, len(cell)):
            text = "\n".join([*lines[:-1], lines[-1][: len(lines[-1]) - len(cell) + end]]) + "\n"
            got = {_identity(g, column) for g in parse_query_csv(text, ()).gpus}
            # (a cut at a whole product name, `NVIDIA A10` of an A100-PCIE-40GB, reads as that
            # product, as the last row of a mixed box does: no sign tells the two apart)
            other = {v for v in got - want if not (column == "name" and v and is_product_name(v))}
            assert other <= {None, ""}, (column, end, got - want)


def _identity(g: GpuInfo, column: str) -> str | None:
    """The GpuInfo value of a `_SWEPT` column (the driver version is the report's, not a GPU's)."""
    return {"uuid": g.uuid, "pci.bus_id": g.pci_bus_id, "name": g.name}.get(column, "")


# every driver version a real capture prints: the table's `Driver Version: `, -q's `Driver
# Version :` / `KMD Version :`, -q -x's <driver_version>, a CSV's driver_version cell
_VERSION_SAID = re.compile(
    r"(?:Driver Version|KMD Version)\s*:\s*(\d[\d.]*\d)|<driver_version>(\d[\d.]*\d)<", re.IGNORECASE
)
REAL_VERSIONS = sorted(
    {
        m.group(1) or m.group(2)
        for p in REAL.glob("nvidia-smi*")
        for m in _VERSION_SAID.finditer(p.read_text(encoding="utf-8", errors="replace"))
    }
)


def test_every_real_driver_version_last_in_a_csv_is_read_whole() -> None:
    """Edit: a CSV of `name, driver_version` (the H200 CSV's name) whose one row holds each driver
    version a real capture prints (3 parts, 2 parts, old 3xx.xx, Jetson's 540.4.0), a newline
    after it. Before (round 29) Jetson's 540.4.0 was short of the driver version's shape: not
    read, the CSV cut mid-row, nvidia_driver unverified. Now each is read whole."""
    assert {"540.4.0", "536.40", "319.37", "550.54.14"} <= set(REAL_VERSIONS)
    for version in REAL_VERSIONS:
        report = parse_query_csv(f"name, driver_version\nNVIDIA H200, {version}\n", ())
        assert report.complete and report.driver_version == version, version
