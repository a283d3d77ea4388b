"""The truth audit's eighth round, nvidia-smi (its part of tests/unit/facts/audit_captures.py).
R8-A1: R5xx's spelling of the driver's recovery verdict ("GPU Reset Status / Reset Required :
Yes", `<gpu_reset_status>`, CSV `reset_status.*`) was not read, and NVML's error strings printed
as a field's value ("System is not in ready state") were values; R8-A2: a fabric state the GPUs
report was judged only when a fabric-manager file was given, and the CSV's `fabric.*` fields not
at all; R8-A3: the pre-R331 table's "No running compute processes found" was read as a process
list not visible. Each value below was read off the capture by hand; each test fails without
its fix. The edited captures are real ones with only the values of real excerpts changed
(tests/fixtures/edited/README.md)."""

from __future__ import annotations

import pytest

from gpuonboard.facts.nvidia_smi import parse_any, parse_query_csv
from gpuonboard.steps.checks import fabric_health, gpu_health

from .audit_captures import REAL, read, saved

EDITED = REAL.parent / "edited"
A10_RESET = "nvidia-smi-q__a10__1gpu__driver535.129.03__reset-required-not-ready__edited.txt"
RTX4090_RESET = "nvidia-smi-q-x__geforce-rtx-4090__1gpu__driver535.86.05__reset-required__edited.xml"
H100_GPU3_FABRIC = "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08__gpu3-fabric-in-progress__edited.txt"
H200_FABRIC_XML = "nvidia-smi-q-x__h200__1gpu__driver580.159.04__fabric-in-progress__edited.xml"
H200_R610 = "nvidia-smi-q__h200__1gpu__driver610.43.02.txt"
H200_R610_NVLINK = "nvidia-smi-nvlink-s__h200__1gpu-18links__driver610.43.02.txt"
H200_CSV = "nvidia-smi-query-gpu__h200__1gpu__driver590.48.01__load.csv"  # fabric.state, fabric.status
K20M_319 = "nvidia-smi__tesla-k20m__2gpu__driver319.37__rst-indented.txt"
TITAN_V = "nvidia-smi-q__titan-v__1gpu__driver560.35.03.txt"  # Reset Required No, Drain N/A


def edited(name: str) -> str:
    return (EDITED / name).read_text()


def gpu_rules(text: str) -> dict[str, tuple[str, str]]:
    from gpuonboard.connection.gather import parse_facts
    from gpuonboard.facts.probe import ProbeOutput

    facts = parse_facts({"nvidia_smi": ProbeOutput(text, "", 0)})
    return {c.name: (c.verdict, c.actual) for c in gpu_health.evaluate(facts)}


def fabric_rules(text: str) -> dict[str, tuple[str, str]]:
    from gpuonboard.connection.gather import parse_facts
    from gpuonboard.facts.probe import ProbeOutput

    facts = parse_facts({"nvidia_smi": ProbeOutput(text, "", 0)})
    return {c.name: (c.verdict, c.actual) for c in fabric_health.health_checks(facts)}


# --- R8-A1: the driver's "reset required", and NVML's error strings as field values


def test_r8_a1_reset_required_yes_fails_like_recovery_action_reset() -> None:
    # -q: GPU Reset Status / Reset Required : Yes, Drain and Reset Recommended : No
    assert parse_any(edited(A10_RESET)).gpus[0].recovery_action == "Reset"
    assert gpu_rules(edited(A10_RESET))["gpu_recovery"] == ("fail", "GPU 0: Reset")
    # -q -x: <gpu_reset_status><reset_required>Yes</reset_required>
    assert gpu_rules(edited(RTX4090_RESET))["gpu_recovery"] == ("fail", "GPU 0: Reset")


def test_r8_a1_the_r5xx_reset_status_no_is_no_action_pending() -> None:
    # Reset Required : No, Drain and Reset Recommended : N/A (a Titan V on 560.35.03)
    assert gpu_rules(read(TITAN_V))["gpu_recovery"] == ("pass", "None on GPU 0")
    # R570 prints both spellings, the old one "Requested functionality has been deprecated"
    rtx3060 = read("nvidia-smi-q-x__geforce-rtx-3060__1gpu__driver570.124.04.xml")
    assert parse_any(rtx3060).gpus[0].recovery_action == "None"


@pytest.mark.parametrize(
    ("reset", "drain", "action"),
    [("Yes", "No", "Reset"), ("No", "Yes", "Drain and Reset"), ("Yes", "Yes", "Drain and Reset"),
     ("No", "No", "None")],
)  # fmt: skip
def test_r8_a1_the_csv_reset_status_fields_are_the_same_fact(
    reset: str, drain: str, action: str | None
) -> None:
    # R5xx --help-query-gpu: "reset_status.reset_required", "reset_status.drain_and_reset_recommended"
    # ("Either of these being 'Yes' indicates that an unrecoverable error has occurred")
    text = (
        f"index, reset_status.reset_required, reset_status.drain_and_reset_recommended\n0, {reset}, {drain}\n"
    )
    assert parse_query_csv(text, ()).gpus[0].recovery_action == action
    not_said = text.replace(f"0, {reset}, {drain}", "0, [N/A], [N/A]")  # (a vGPU: not supported)
    assert parse_query_csv(not_said, ()).gpus[0].recovery_action is None


def test_r8_a1_nvml_error_strings_are_field_faults_never_values() -> None:
    gpu = parse_any(edited(A10_RESET)).gpus[0]
    assert gpu.power_draw_w is None  # "Power Draw : Unknown Error"
    assert gpu.faults == ()  # the fan and the power draw: 2 of the row's 9 readings, as the table judges
    assert gpu.cell_faults == (
        "fan sensor reads System is not in ready state",
        "encoder use reads Unknown Error",
        "decoder use reads Unknown Error",
        "power draw reads Unknown Error",
        "Clocks/Graphics reads System is not in ready state",
        "Clocks/SM reads System is not in ready state",
        "Clocks/Memory reads System is not in ready state",
        "Clocks/Video reads System is not in ready state",
    )
    verdict, actual = gpu_rules(edited(A10_RESET))["sensor_faults"]
    assert verdict == "warn" and actual.startswith("GPU 0: fan sensor reads System is not in ready state")


@pytest.mark.parametrize("word", ["System is not in ready state", "Timeout", "Insufficient Resources"])
def test_r8_a1_nvml_errors_in_most_of_the_row_make_the_gpu_unreadable(word: str) -> None:
    """As the table's ERR! cells: most of the row's readings unreadable is an unreadable GPU."""
    text = read("nvidia-smi-q__a10__1gpu__driver535.129.03.txt")
    for line in (
        "    Fan Speed                             : 0 %",
        "    Performance State                     : P8",
        "        GPU Current Temp                  : 33 C",
        "        Power Draw                        : 43.89 W",
        "        Gpu                               : 0 %",
    ):
        assert line in text
        text = text.replace(line, line.split(" : ")[0] + " : " + word)
    gpu = parse_any(text).gpus[0]
    assert gpu.faults == (word,) and gpu.cell_faults == ()
    assert gpu_rules(text)["gpu_health"] == ("fail", f"GPU 0 (00000000:07:00.0): nvidia-smi reads {word}")


def test_r8_a1_the_fabric_status_is_a_value_though_it_is_an_nvml_string() -> None:
    """`Fabric / Status` IS an NVML return string ("Insufficient Resources" where the fabric
    manager could not place the GPU): judged by fabric_manager, not a field that failed."""
    text = read(H200_R610)
    line = "        Status                                         : Success"
    assert text.count(line) == 1
    text = text.replace(line, line.replace("Success", "Insufficient Resources"))
    gpu = parse_any(text).gpus[0]
    assert (gpu.fabric_state, gpu.fabric_status, gpu.cell_faults) == (
        "Completed",
        "Insufficient Resources",
        (),
    )
    assert fabric_rules(text)["fabric_manager"] == (
        "fail",
        "fabric manager not probed; GPU 0: status Insufficient Resources",
    )


# --- R8-A2: the GPUs' fabric state is judged wherever an output carries it


def test_r8_a2_the_r610_h200_capture_with_its_fabric_state() -> None:
    facts = saved(H200_R610, H200_R610_NVLINK)
    report = facts.gpu
    assert report is not None and (report.driver_version, report.cuda_version) == ("610.43.02", "13.3")
    (gpu,) = report.gpus
    assert (gpu.name, gpu.pci_bus_id, gpu.memory_total_mib, gpu.memory_used_mib) == (
        "NVIDIA H200",
        "00000000:83:00.0",
        143771,
        0,
    )
    assert (gpu.power_draw_w, gpu.power_limit_w, gpu.default_power_limit_w, gpu.max_power_limit_w) == (
        83.32,
        700.0,
        700.0,
        700.0,
    )
    assert (gpu.temperature_c, gpu.pcie_replays, gpu.recovery_action) == (38, 4, "None")
    assert (gpu.fabric_state, gpu.fabric_status) == ("Completed", "Success")
    checks = {c.name: (c.verdict, c.actual) for c in fabric_health.health_checks(facts)}
    assert checks["nvlink_links"] == ("pass", "all links active on 1 GPU(s) at 26.562 GB/s")
    # (no service file given: the row says it was not probed, measure34a 15/17/18/21)
    assert checks["fabric_manager"] == (
        "pass",
        "fabric manager not probed; fabric state Completed / Success on 1 GPU(s)",
    )


def test_r8_a2_a_gpu_not_registered_with_the_fabric_fails_without_a_service_file() -> None:
    # GPU 3 of an 8 x H100 HGX: State In Progress, Status N/A; no `systemctl` file given
    assert fabric_rules(edited(H100_GPU3_FABRIC))["fabric_manager"] == (
        "fail",
        "fabric manager not probed; GPU 3: In Progress",
    )
    assert fabric_rules(edited(H200_FABRIC_XML))["fabric_manager"] == (
        "fail",
        "fabric manager not probed; GPU 0: In Progress",
    )
    # where the service's state was given (a live run), the row is what it was: the service named
    from gpuonboard.facts.fabric_manager import parse_fabric_manager

    gpus = parse_any(edited(H100_GPU3_FABRIC)).gpus
    states = [(g.fabric_state, g.fabric_status) for g in gpus]
    check = fabric_health.rule_fabric_manager(
        [g.name for g in gpus], states, parse_fabric_manager("active\n")
    )
    assert check is not None and (check.verdict, check.actual) == (
        "fail",
        "fabric manager active; GPU 3: In Progress",
    )
    # and a box whose GPUs report no fabric state, with no service file, has no row, as before
    assert "fabric_manager" not in fabric_rules(read("nvidia-smi__h100-80gb-hbm3__8gpu__driver550.90.07.txt"))


def test_r8_a2_the_csv_fabric_fields_are_read() -> None:
    gpu = parse_any(read(H200_CSV)).gpus[0]
    assert (gpu.fabric_state, gpu.fabric_status) == ("Completed", "Success")
    assert fabric_rules(read(H200_CSV))["fabric_manager"] == (
        "pass",
        "fabric manager not probed; fabric state Completed / Success on 1 GPU(s)",
    )


# --- R8-A3: every generation's "no process" sentence


def test_r8_a3_no_running_compute_processes_found_is_an_empty_process_list() -> None:
    report = parse_any(read(K20M_319))
    assert (report.driver_version, report.cuda_version, report.warnings) == ("319.37", None, ())
    rows = [
        (g.index, g.name, g.pci_bus_id, g.memory_used_mib, g.memory_total_mib, g.utilization_gpu_pct)
        for g in report.gpus
    ]
    assert rows == [
        (0, "Tesla K20m", "0000:03:00.0", 11, 4799, 0),
        (1, "Tesla K20m", "0000:84:00.0", 11, 4799, 77),
    ]
    assert [(g.processes, g.processes_known) for g in report.gpus] == [((), True), ((), True)]
    # 77 % busy with no process listed and 11 MiB used: utilisation alone, no job's memory (a
    # Kepler's idle reading): unverified, named (round 32), on a list that was read
    verdict, actual = gpu_rules(read(K20M_319))["foreign_processes"]
    assert verdict == "unverified" and actual.startswith("GPU 1 at 77 % utilisation"), actual
