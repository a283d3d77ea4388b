"""nvidia-smi's table before R304 (drivers 270-295: `Nb.  Name`, no persistence column, `62 C`,
`17%   42MB /  255MB`, `Volatile ECC SB / DB`): its GPU row `| 0.  GeForce 8500 GT  |` (a Markdown
page's `0\\.`) read (measure35e 18). Before, its name was not read: gpu_model unverified."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts.nvidia_smi import parse_any

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
GF8500 = (
    "nvidia-smi__geforce-8500-gt__1gpu__driver290.10__old-layout-nb-name__markdown-escaped-index"
    "__archwiki-es.txt"
)
GTX550 = (
    "nvidia-smi__geforce-gtx-550-ti__1gpu__driver295.40__old-layout-nb-name__processes-not-supported"
    "__ubuntuforums.txt"
)

# (capture, driver, name, bus id, used MiB, total MiB, temperature)
OLD = [
    (GF8500, "290.10", "GeForce 8500 GT", "0000:01:00.0", 42, 255, 62),
    (GTX550, "295.40", "GeForce GTX 550 Ti", "0000:01:00.0", 577, 1023, 64),
]


@pytest.mark.parametrize(("name", "driver", "model", "bus", "used", "total", "temp"), OLD)
def test_a_real_table_before_r304_reads_its_gpu_row(
    name: str, driver: str, model: str, bus: str, used: int, total: int, temp: int
) -> None:
    report = parse_any((REAL / name).read_text())
    assert (report.source, report.driver_version, report.complete) == ("table", driver, True)
    [gpu] = report.gpus
    assert (gpu.index, gpu.name, gpu.pci_bus_id) == (0, model, bus)
    assert (gpu.memory_used_mib, gpu.memory_total_mib, gpu.temperature_c) == (used, total, temp)
    # (no persistence column; `N/A  N/A` ECC counts: no ECC; the process list: "Not Supported")
    assert gpu.persistence_mode is None and gpu.ecc_mode is None and gpu.ecc_na
    assert not gpu.processes_known


@pytest.mark.parametrize("escaped", [True, False])
def test_the_index_with_or_without_its_markdown_escape_is_read(escaped: bool) -> None:
    text = (REAL / GF8500).read_text()
    report = parse_any(text if escaped else text.replace("0\\.", "0."))
    assert [(g.index, g.name) for g in report.gpus] == [(0, "GeForce 8500 GT")]


def test_double_bit_counts_of_the_old_ecc_cell_are_read_as_the_uncorrectable_count() -> None:
    """(the same row of an ECC board, written in-test: `0  3` single / double-bit errors)"""
    text = (REAL / GTX550).read_text().replace("|       N/A        N/A |", "|         0          3 |")
    [gpu] = parse_any(text).gpus
    assert (gpu.ecc_mode, gpu.ecc_volatile_uncorrectable) == ("Enabled", 3)


@pytest.mark.parametrize(("name", "model"), [(GF8500, "GeForce 8500 GT"), (GTX550, "GTX 550 Ti")])
def test_the_model_and_count_are_judged(tmp_path: Path, name: str, model: str) -> None:
    got = verdicts(
        tmp_path, "nvidia-smi.txt", (REAL / name).read_text(), f"gpu_model: {model}\ngpu_count: 1\n"
    )
    assert got["gpu_model"][0] == got["gpu_count"][0] == got["nvidia_driver"][0] == "pass"
    wrong = verdicts(
        tmp_path, "nvidia-smi.txt", (REAL / name).read_text(), "gpu_model: RTX 3060\ngpu_count: 1\n"
    )
    assert wrong["gpu_model"][0] == "fail"
