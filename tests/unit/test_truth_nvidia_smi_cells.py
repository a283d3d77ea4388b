"""A fault marker belongs to its cell; PCIe replays, board part number, Fabric; ECC Disabled.

Before: one `ERR!` (a fan sensor) made the whole GPU "unreadable" (faults), failing model,
count and VRAM for a GPU whose name, memory and temperature read fine.
"""

from __future__ import annotations

from pathlib import Path

from gpuonboard.facts.nvidia_smi import parse_any, parse_query_csv, parse_table, parse_text_q, parse_xml

FIXTURES = Path(__file__).parents[1] / "fixtures"
REAL = FIXTURES / "real"
A40_ERR = FIXTURES / "public" / "nvidia-smi__a40__8gpu__driver525.60.13__gpu4-err.txt"
A100_CELL_ERR = (
    FIXTURES / "edited" / "nvidia-smi__a100-sxm4-80gb__4gpu__driver555.42.02__fan-mig-power-err__edited.txt"
)
H100_Q = REAL / "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt"
H200_Q = REAL / "nvidia-smi-q__h200__1gpu__driver580.159.04.txt"
H200_X = REAL / "nvidia-smi-q-x__h200__1gpu__driver580.159.04.xml"
A100_X = REAL / "nvidia-smi-q-x__a100-sxm4-80gb__1of4gpu__driver535.54.03.xml"
RTX4090_X = REAL / "nvidia-smi-q-x__geforce-rtx-4090__1gpu__driver535.86.05.xml"
RTX4090_TABLE = REAL / "nvidia-smi__geforce-rtx-4090__8gpu__driver550.127.05.txt"


def test_one_err_cell_is_that_cells_fault_not_an_unreadable_gpu() -> None:
    gpus = parse_table(A100_CELL_ERR.read_text()).gpus
    assert [g.index for g in gpus] == [0, 1, 2, 3]
    assert not any(g.faults for g in gpus)
    fan = gpus[2]
    assert fan.cell_faults == ("fan sensor reads ERR!", "MIG mode reads ERR!")
    assert (fan.name, fan.memory_total_mib, fan.temperature_c) == ("NVIDIA A100-SXM4-80GB", 81920, 23)
    assert (fan.power_draw_w, fan.power_limit_w, fan.mig_mode) == (58.0, 500.0, None)
    power = gpus[3]
    assert power.cell_faults == ("power draw reads ERR!",)
    assert (power.power_draw_w, power.power_limit_w, power.temperature_c) == (None, 500.0, 23)
    assert gpus[0].cell_faults == () and gpus[0].mig_mode == "Disabled"


def test_a_row_of_err_is_still_an_unreadable_gpu() -> None:
    gpus = parse_table(A40_ERR.read_text()).gpus
    assert [g.index for g in gpus if g.faults] == [4]
    assert gpus[4].faults == ("ERR!",) and gpus[4].cell_faults == ()
    assert not any(g.cell_faults for g in gpus)


def test_err_in_one_q_field_is_that_fields_fault() -> None:
    text = H200_Q.read_text()
    line = "        GPU Current Temp                               : 34 C"
    assert line in text
    gpu = parse_text_q(text.replace(line, line.replace("34 C", "ERR!"))).gpus[0]
    assert gpu.faults == () and gpu.temperature_c is None
    assert gpu.cell_faults == ("temperature sensor reads ERR!",)
    assert (gpu.name, gpu.memory_total_mib) == ("NVIDIA H200", 143771)


def test_gpu_requires_reset_in_q_is_the_whole_gpu() -> None:
    text = H200_Q.read_text()
    line = "        GPU Current Temp                               : 34 C"
    gpu = parse_text_q(text.replace(line, line.replace("34 C", "[GPU requires reset]"))).gpus[0]
    assert gpu.faults == ("GPU requires reset",) and gpu.cell_faults == ()


def test_err_in_one_xml_field_is_that_fields_fault() -> None:
    text = H200_X.read_text()
    assert "<gpu_temp>34 C</gpu_temp>" in text
    gpu = parse_xml(text.replace("<gpu_temp>34 C</gpu_temp>", "<gpu_temp>ERR!</gpu_temp>")).gpus[0]
    assert gpu.faults == () and gpu.cell_faults == ("temperature sensor reads ERR!",)
    assert gpu.temperature_c is None and gpu.name == "NVIDIA H200"
    lost = parse_xml(
        text.replace("<product_name>NVIDIA H200</product_name>", "<product_name>ERR!</product_name>")
    )
    assert lost.gpus[0].faults == ("ERR!",)


def test_unknown_error_in_one_csv_field_is_that_fields_fault() -> None:
    path = REAL / "nvidia-smi-query-gpu__h100-80gb-hbm3__1gpu__driver590.48.01__idle.csv"
    header, row = path.read_text().splitlines()[:2]
    names = [h.split(" [")[0] for h in header.split(", ")]
    cells = row.split(", ")
    at = names.index("temperature.gpu")
    cells[at] = "[Unknown Error]"
    gpu = parse_query_csv(header + "\n" + ", ".join(cells) + "\n", ()).gpus[0]
    assert gpu.faults == () and gpu.temperature_c is None
    assert gpu.cell_faults == ("temperature.gpu reads [Unknown Error]",)


def test_pcie_replays_board_part_and_fabric_from_q_text() -> None:
    gpus = parse_text_q(H100_Q.read_text()).gpus
    assert (gpus[0].pcie_replays, gpus[0].pcie_replay_rollovers) == (67, 0)
    assert gpus[1].pcie_replays == 63
    assert gpus[0].board_part_number == "692-2G520-0200-000"
    assert all((g.fabric_state, g.fabric_status) == ("Completed", "Success") for g in gpus)
    h200 = parse_text_q(H200_Q.read_text()).gpus[0]
    assert (h200.pcie_replays, h200.pcie_replay_rollovers) == (1, 0)
    assert h200.board_part_number == "692-2G520-0282-000"
    assert (h200.fabric_state, h200.fabric_status) == (None, None)  # N/A in a VM


def test_pcie_replays_board_part_and_fabric_from_xml() -> None:
    h200 = parse_xml(H200_X.read_text()).gpus[0]
    assert (h200.pcie_replays, h200.pcie_replay_rollovers) == (1, 0)
    assert h200.board_part_number == "692-2G520-0282-000"
    assert (h200.fabric_state, h200.fabric_status) == (None, None)
    # -q -x and -q of the same minute agree field by field, the new fields too
    assert parse_xml(H200_X.read_text()).gpus == parse_text_q(H200_Q.read_text()).gpus
    a100 = parse_xml(A100_X.read_text()).gpus[0]
    assert (a100.board_part_number, a100.pcie_replays) == ("692-2G506-0212-002", 0)
    assert parse_xml(RTX4090_X.read_text()).gpus[0].board_part_number is None  # N/A


def test_ecc_disabled_is_not_unknown_in_any_form() -> None:
    # the table's ECC column: "Off" = ECC disabled on a capable card, "N/A" = not supported
    assert {g.ecc_mode for g in parse_table(RTX4090_TABLE.read_text()).gpus} == {"Disabled"}
    jetson = parse_any((REAL / "nvidia-smi__jetson-agx-orin__1gpu__driver540.4.0.txt").read_text())
    assert jetson.gpus[0].ecc_mode is None
    assert parse_xml(RTX4090_X.read_text()).gpus[0].ecc_mode == "Disabled"
    a10 = parse_text_q((REAL / "nvidia-smi-q__a10__1gpu__driver535.129.03.txt").read_text()).gpus[0]
    assert a10.ecc_mode in ("Enabled", "Disabled")
    text = H200_Q.read_text().replace(
        "    ECC Mode\n        Current                                        : Enabled",
        "    ECC Mode\n        Current                                        : Disabled",
    )
    assert parse_text_q(text).gpus[0].ecc_mode == "Disabled"
    csv = "name, ecc.mode.current\nNVIDIA GeForce RTX 4090, Disabled\nTesla T4, [N/A]\n"
    assert [g.ecc_mode for g in parse_query_csv(csv, ()).gpus] == ["Disabled", None]
