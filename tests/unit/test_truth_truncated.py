"""A cut-off nvidia-smi output is an incomplete probe (GpuReport.complete False), never missing
hardware. The cut captures are real fixtures sliced here at several places."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts.nvidia_smi import parse_any, parse_query_csv, parse_table, parse_text_q, parse_xml

REAL = Path(__file__).parents[1] / "fixtures" / "real"
H100_Q = REAL / "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt"
H200_Q = REAL / "nvidia-smi-q__h200__1gpu__driver580.159.04.txt"
H100_TABLE = REAL / "nvidia-smi__h100-80gb-hbm3__8gpu__driver550.90.07.txt"
A100_X_1OF4 = REAL / "nvidia-smi-q-x__a100-sxm4-80gb__1of4gpu__driver535.54.03.xml"
H200_X = REAL / "nvidia-smi-q-x__h200__1gpu__driver580.159.04.xml"
H100_CSV = REAL / "nvidia-smi-query-gpu__h100-80gb-hbm3__1gpu__driver590.48.01__idle.csv"


@pytest.mark.parametrize("fraction", [0.2, 0.5, 0.75, 0.99])
def test_cut_xml_is_incomplete(fraction: float) -> None:
    text = H200_X.read_text()
    report = parse_xml(text[: int(len(text) * fraction)])
    assert report.complete is False and report.gpus == ()  # the cut <gpu> is not read
    assert report.attached_gpus == 1 and report.driver_version == "580.159.04"
    assert any("incomplete probe, rerun" in w for w in report.warnings)


def test_complete_partial_listing_stays_complete() -> None:
    report = parse_xml(A100_X_1OF4.read_text())  # 1 of 4 GPUs, but a whole document
    assert report.complete is True and report.attached_gpus == 4 and len(report.gpus) == 1


@pytest.mark.parametrize("marker", ["    Product Name", "    PCI\n", "    Temperature\n", "    Fabric\n"])
def test_q_cut_inside_the_last_record(marker: str) -> None:
    text = H100_Q.read_text()
    at = text.index("GPU 00000000:3B:00.0")  # the second record
    cut = text[: text.index(marker, at) + len(marker) + 3]
    report = parse_text_q(cut)
    assert report.complete is False and report.attached_gpus == 8
    assert "the nvidia-smi -q output ends mid-record: incomplete probe, rerun" in report.warnings
    assert report.gpus[0].name == "NVIDIA H100 80GB HBM3"


def test_q_cut_mid_name_does_not_claim_a_wrong_model() -> None:
    text = H200_Q.read_text()
    cut = text[: text.index("NVIDIA H200") + len("NVIDIA H")]
    report = parse_text_q(cut)
    assert report.complete is False
    assert report.gpus[0].name == ""  # the cut value "NVIDIA H" is not read as a model


def test_whole_q_captures_are_complete() -> None:
    assert parse_text_q(H100_Q.read_text()).complete and parse_text_q(H200_Q.read_text()).complete


@pytest.mark.parametrize("fraction", [0.3, 0.5, 0.7, 0.9, 0.97])
def test_cut_table_is_incomplete(fraction: float) -> None:
    text = H100_TABLE.read_text()
    report = parse_table(text[: int(len(text) * fraction)])
    assert report.complete is False
    assert any("incomplete probe, rerun" in w for w in report.warnings)
    assert parse_table(text).complete is True


def test_table_cut_at_a_row_border_is_incomplete() -> None:
    text = H100_TABLE.read_text()
    lines = text.splitlines(keepends=True)
    border = [i for i, line in enumerate(lines) if line.startswith("+----")][4]
    report = parse_any("".join(lines[: border + 1]))
    assert report.source == "table" and report.complete is False


def test_csv_last_line_cut_is_incomplete() -> None:
    header, row = H100_CSV.read_text().splitlines()[:2]
    cut = header + "\n" + row[: len(row) // 2]
    report = parse_query_csv(cut, ())
    assert report.complete is False and report.gpus == ()
    assert parse_query_csv(H100_CSV.read_text(), ()).complete is True
