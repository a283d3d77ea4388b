"""nvidia-smi parsers against every real capture (values read by eye from the files)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts.nvidia_smi import (
    QUERY_FIELDS,
    GpuReport,
    parse_any,
    parse_query_csv,
    parse_table,
    parse_text_q,
    parse_xml,
)

FIXTURES = Path(__file__).parents[1] / "fixtures"
REAL = FIXTURES / "real"
DERIVED = FIXTURES / "derived"


def read(path: Path) -> str:
    """Fixture text without newline translation."""
    return path.read_bytes().decode("utf-8")


# file, source, driver, cuda, attached_gpus, number of GPUs, name of GPU 0, memory MiB of GPU 0
CASES = [
    ("real/nvidia-smi-q-x__a100-sxm4-40gb-mig__1gpu__driver510.47.03.xml",
     "xml", "510.47.03", "11.6", 1, 1, "NVIDIA A100-SXM4-40GB", 40960),
    ("real/nvidia-smi-q-x__a100-sxm4-80gb__1of4gpu__driver535.54.03.xml",
     "xml", "535.54.03", "12.2", 4, 1, "NVIDIA A100-SXM4-80GB", 81920),
    ("real/nvidia-smi-q-x__geforce-rtx-4090__1gpu__driver535.86.05.xml",
     "xml", "535.86.05", "12.2", 1, 1, "NVIDIA GeForce RTX 4090", 24564),
    ("real/nvidia-smi-q-x__rtx-4000-sff-ada__1gpu__driver595.84__dtd-v13.xml",
     "xml", "595.84", "13.2", 1, 1, "NVIDIA RTX 4000 SFF Ada Generation", 20475),
    ("real/nvidia-smi-q-x__tesla-t4__1gpu__driver515.105.01.xml",
     "xml", "515.105.01", "11.7", 1, 1, "Tesla T4", 15360),
    ("derived/nvidia-smi-q-x__a100-sxm4-80gb__8gpu__derived.xml",
     "xml", "535.54.03", "12.2", 8, 8, "NVIDIA A100-SXM4-80GB", 81920),
    ("derived/nvidia-smi-q-x__a100-sxm4-80gb__4gpu__derived.xml",
     "xml", "535.54.03", "12.2", 4, 4, "NVIDIA A100-SXM4-80GB", 81920),
    ("real/nvidia-smi-q__a10__1gpu__driver535.129.03.txt",
     "text", "535.129.03", "12.2", 1, 1, "NVIDIA A10", 23028),
    ("real/nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt",
     "text", "535.161.08", "12.2", 8, 8, "NVIDIA H100 80GB HBM3", 81559),
    ("real/nvidia-smi__a100-sxm4-40gb__1gpu__driver550.144.03.txt",
     "table", "550.144.03", "12.4", None, 1, "NVIDIA A100-SXM4-40GB", 40960),
    ("real/nvidia-smi__a100-sxm4-80gb__4gpu__driver555.42.02.txt",
     "table", "555.42.02", "12.5", None, 4, "NVIDIA A100-SXM4-80GB", 81920),
    ("real/nvidia-smi__a10__1gpu__driver550.90.12.txt",
     "table", "550.90.12", "12.4", None, 1, "NVIDIA A10", 23028),
    ("real/nvidia-smi__geforce-rtx-3090__1gpu__driver535.161.07.txt",
     "table", "535.161.07", "12.2", None, 1, "NVIDIA GeForce RTX 3090", 24576),
    ("real/nvidia-smi__geforce-rtx-4090__8gpu__driver550.127.05.txt",
     "table", "550.127.05", "12.4", None, 8, "NVIDIA GeForce RTX 4090", 24564),
    ("real/nvidia-smi__h100-80gb-hbm3__8gpu__driver550.90.07.txt",
     "table", "550.90.07", "12.4", None, 8, "NVIDIA H100 80GB HBM3", 81559),
    ("real/nvidia-smi__h200-mig__1gpu__driver590.48.01__load.txt",
     "table", "590.48.01", "13.1", None, 1, "NVIDIA H200", 143771),
    ("real/nvidia-smi__h200__8gpu__driver570.158.01.txt",
     "table", "570.158.01", "12.8", None, 8, "NVIDIA H200", 143771),
    ("real/nvidia-smi__l40s__1gpu__driver550.127.05.txt",
     "table", "550.127.05", "12.4", None, 1, "NVIDIA L40S", 46068),
    ("real/nvidia-smi__rtx-6000-ada__4gpu__driver575.51.03.txt",
     "table", "575.51.03", "12.9", None, 4, "NVIDIA RTX 6000 Ada Gene...", 49140),
    ("real/nvidia-smi-query-gpu__h100-80gb-hbm3__1gpu__driver590.48.01__idle.csv",
     "csv", "590.48.01", None, 1, 1, "NVIDIA H100 80GB HBM3", 81559),
    ("real/nvidia-smi-query-gpu__h200__1gpu__driver590.48.01__load.csv",
     "csv", "590.48.01", None, 1, 1, "NVIDIA H200", 143771),
    # netdata's field list has no memory.total and no driver_version
    ("real/nvidia-smi-query-gpu-nounits__tesla-p100-pcie-16gb__1gpu.csv",
     "csv", None, None, None, 1, "Tesla P100-PCIE-16GB", None),
]  # fmt: skip

PARSERS = {"xml": parse_xml, "text": parse_text_q, "table": parse_table}


@pytest.mark.parametrize(("name", "source", "driver", "cuda", "attached", "count", "gpu0", "mib"), CASES)
def test_every_capture(
    name: str,
    source: str,
    driver: str | None,
    cuda: str | None,
    attached: int | None,
    count: int,
    gpu0: str,
    mib: int | None,
) -> None:
    text = read(FIXTURES / name)
    report = parse_any(text)
    assert report.source == source
    assert report.driver_version == driver
    assert report.cuda_version == cuda
    assert report.attached_gpus == attached
    assert len(report.gpus) == count
    assert report.gpus[0].name == gpu0
    assert report.gpus[0].memory_total_mib == mib
    assert [g.index for g in report.gpus] == list(range(count))
    assert all(g.name == gpu0 for g in report.gpus)
    direct = parse_query_csv(text, ()) if source == "csv" else PARSERS[source](text)
    assert direct == report


def test_every_real_nvidia_smi_output_is_covered() -> None:
    covered = {name.split("/", 1)[1] for name, *_ in CASES if name.startswith("real/")}
    outputs = {
        p.name
        for p in REAL.glob("nvidia-smi*")
        if not p.name.startswith(("nvidia-smi-topo", "nvidia-smi-nvlink"))
    }
    assert outputs == covered


def test_partial_capture_warns_about_count() -> None:
    report = parse_xml(read(REAL / "nvidia-smi-q-x__a100-sxm4-80gb__1of4gpu__driver535.54.03.xml"))
    assert report.attached_gpus == 4
    assert len(report.gpus) == 1
    assert any("attached_gpus says 4" in w for w in report.warnings)


def test_xml_a100_80gb_details() -> None:
    gpu = parse_xml(read(REAL / "nvidia-smi-q-x__a100-sxm4-80gb__1of4gpu__driver535.54.03.xml")).gpus[0]
    assert gpu.uuid == "GPU-513536b6-7d19-9063-b049-1e69664bb298"
    assert gpu.serial == "1650522003820"
    assert gpu.pci_bus_id == "00000000:01:00.0"
    # the GPU-level fb_memory_usage, not a MIG instance's 19968 MiB
    assert (gpu.memory_total_mib, gpu.memory_used_mib) == (81920, 50)
    assert gpu.ecc_mode == "Enabled"
    assert gpu.persistence_mode == "Disabled"
    assert gpu.mig_mode == "Enabled"
    assert (gpu.pcie_gen_current, gpu.pcie_gen_max) == (4, 4)
    assert (gpu.pcie_width_current, gpu.pcie_width_max) == (16, 16)
    assert gpu.temperature_c == 27


def test_xml_na_values_become_none() -> None:
    gpu = parse_xml(read(REAL / "nvidia-smi-q-x__geforce-rtx-4090__1gpu__driver535.86.05.xml")).gpus[0]
    assert gpu.serial is None  # <serial>N/A</serial>
    assert gpu.mig_mode is None  # <current_mig>N/A</current_mig>
    assert gpu.ecc_mode == "Disabled"
    assert (gpu.pcie_gen_current, gpu.pcie_gen_max) == (1, 3)
    assert gpu.temperature_c == 40


def test_xml_v11_t4_link_width() -> None:
    gpu = parse_xml(read(REAL / "nvidia-smi-q-x__tesla-t4__1gpu__driver515.105.01.xml")).gpus[0]
    assert (gpu.pcie_width_current, gpu.pcie_width_max) == (8, 16)
    assert gpu.pci_bus_id == "00000000:00:1E.0"


def test_xml_v13_redacted_serial_kept_as_text() -> None:
    gpu = parse_xml(read(REAL / "nvidia-smi-q-x__rtx-4000-sff-ada__1gpu__driver595.84__dtd-v13.xml")).gpus[0]
    assert gpu.serial == "REDACTED"
    assert gpu.memory_used_mib == 3534


def test_derived_8gpu_identifiers_distinct() -> None:
    report = parse_xml(read(DERIVED / "nvidia-smi-q-x__a100-sxm4-80gb__8gpu__derived.xml"))
    assert report.warnings == ()
    assert len({g.uuid for g in report.gpus}) == 8
    assert len({g.serial for g in report.gpus}) == 8
    assert [g.pci_bus_id for g in report.gpus][:2] == ["00000000:01:00.0", "00000000:0F:00.0"]


def test_text_q_h100_details() -> None:
    report = parse_text_q(read(REAL / "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt"))
    assert report.warnings == ()
    first, last = report.gpus[0], report.gpus[-1]
    assert first.pci_bus_id == "00000000:19:00.0"
    assert last.pci_bus_id == "00000000:DB:00.0"
    assert first.serial == "1650124031592"
    assert first.uuid == "GPU-ee7954ec-da95-fd7a-ddfd-c6b32cc2f8aa"
    assert first.mig_mode == "Disabled"
    assert first.ecc_mode == "Enabled"
    assert (first.pcie_gen_current, first.pcie_width_max) == (5, 16)
    assert first.temperature_c == 29


def test_text_q_a10_details() -> None:
    gpu = parse_text_q(read(REAL / "nvidia-smi-q__a10__1gpu__driver535.129.03.txt")).gpus[0]
    assert gpu.pci_bus_id == "00000000:07:00.0"
    assert (gpu.memory_total_mib, gpu.memory_used_mib) == (23028, 4)
    assert gpu.persistence_mode == "Enabled"
    assert gpu.mig_mode is None
    assert gpu.temperature_c == 33


def test_table_columns() -> None:
    report = parse_table(read(REAL / "nvidia-smi__h200__8gpu__driver570.158.01.txt"))
    assert [g.pci_bus_id for g in report.gpus][-1] == "00000000:C2:00.0"
    assert {g.persistence_mode for g in report.gpus} == {"Disabled"}
    assert {g.mig_mode for g in report.gpus} == {"Disabled"}
    assert report.gpus[0].temperature_c == 31
    mig = parse_table(read(REAL / "nvidia-smi__h200-mig__1gpu__driver590.48.01__load.txt"))
    # the MIG devices table and process rows are not GPUs
    assert len(mig.gpus) == 1
    assert mig.gpus[0].mig_mode == "Enabled"
    assert mig.gpus[0].memory_used_mib == 16959
    rtx = parse_table(read(REAL / "nvidia-smi__geforce-rtx-3090__1gpu__driver535.161.07.txt"))
    assert rtx.gpus[0].ecc_mode is None  # "N/A"
    ada = parse_table(read(REAL / "nvidia-smi__rtx-6000-ada__4gpu__driver575.51.03.txt"))
    assert {g.ecc_mode for g in ada.gpus} == {"Disabled"}  # "Off"


def test_csv_units_and_na() -> None:
    report = parse_query_csv(read(REAL / "nvidia-smi-query-gpu__h200__1gpu__driver590.48.01__load.csv"), ())
    gpu = report.gpus[0]
    assert gpu.pci_bus_id == "00000000:83:00.0"
    assert (gpu.memory_total_mib, gpu.memory_used_mib) == (143771, 32362)
    assert gpu.temperature_c == 52
    assert gpu.mig_mode == "Disabled"
    assert (gpu.pcie_gen_max, gpu.pcie_width_max) == (5, 16)
    p100 = parse_query_csv(
        read(REAL / "nvidia-smi-query-gpu-nounits__tesla-p100-pcie-16gb__1gpu.csv"), ()
    ).gpus[0]
    assert p100.memory_used_mib == 0
    assert p100.temperature_c == 37
    assert p100.uuid == "GPU-ef1b2c9b-38d8-2090-2bd1-f567a3eb42a6"


@pytest.mark.parametrize("units", [True, False])
@pytest.mark.parametrize("header", [True, False])
def test_csv_header_and_units_forms(header: bool, units: bool) -> None:
    fields = ("index", "name", "memory.total", "driver_version", "temperature.gpu")
    head = "index, name, memory.total [MiB], driver_version, temperature.gpu\n"
    memory = "81920 MiB" if units else "81920"
    rows = "".join(f"{i}, NVIDIA A100-SXM4-80GB, {memory}, 535.54.03, 3{i}\n" for i in range(2))
    report = parse_query_csv((head if header else "") + rows, fields)
    assert report.warnings == ()
    assert [g.memory_total_mib for g in report.gpus] == [81920, 81920]
    assert [g.temperature_c for g in report.gpus] == [30, 31]
    assert report.driver_version == "535.54.03"


def test_query_fields_cover_gpuinfo() -> None:
    for field in ("index", "name", "uuid", "memory.total", "driver_version", "pci.bus_id"):
        assert field in QUERY_FIELDS


GARBAGE = [
    "",
    "   \n",
    "hello world\nthis is not nvidia-smi\n",
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n",
    "bash: nvidia-smi: command not found\n",
    '<?xml version="1.0" ?>\n<nvidia_smi_log>\n<driver_version>535',
    "\x00\x01\x02binary",
]


@pytest.mark.parametrize("text", GARBAGE)
def test_garbage_warns_without_crash(text: str) -> None:
    report = parse_any(text)
    assert isinstance(report, GpuReport)
    assert report.gpus == ()
    assert report.warnings
    for parser in (parse_xml, parse_table, parse_text_q):
        result = parser(text)
        assert result.gpus == () and result.warnings
    csv_report = parse_query_csv(text, QUERY_FIELDS)
    assert csv_report.gpus == () and csv_report.warnings


def test_truncated_xml() -> None:
    text = read(REAL / "nvidia-smi-q-x__tesla-t4__1gpu__driver515.105.01.xml")
    report = parse_xml(text[: len(text) // 2])
    assert report.gpus == ()
    assert "not parseable" in report.warnings[0]


def test_entity_declarations_refused() -> None:
    bomb = '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><nvidia_smi_log>&a;</nvidia_smi_log>'
    report = parse_xml(bomb)
    assert report.gpus == () and report.warnings


def test_table_with_failed_driver_line() -> None:
    report = parse_table("Driver Version: 535.1\n| nothing here |\n")
    assert report.driver_version == "535.1"
    assert report.gpus == ()
    assert report.warnings
