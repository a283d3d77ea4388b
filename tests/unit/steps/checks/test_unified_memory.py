"""A GPU with no memory of its own (the GB10 of a DGX Spark shares the system's LPDDR5X):
nvidia-smi says its memory size is not supported, in every format, and the firmware keeps a
share of the system's memory out of the kernel's sight for the GPU. That is a box as ordered,
not a missing DIMM. Real outputs: the GB10 table and free of tests/fixtures/real (SOURCES.md),
and two pastes inline below, each with its URL."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from gpuonboard.connection.gather import Facts, parse_facts
from gpuonboard.facts.nvidia_smi import parse_any
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.inventory import OrderSpec
from gpuonboard.steps.checks.host_rules import rule_ram
from gpuonboard.units import parse_ram_size

REAL = Path(__file__).parents[3] / "fixtures" / "real"
GB10_SMI = (REAL / "nvidia-smi__gb10__1gpu__driver580.95.05__memory-not-supported.txt").read_text()
GB10_FREE = (REAL / "free__gb10-dgx-spark__unified-memory.txt").read_text()
H100_SMI = (REAL / "nvidia-smi__h100-80gb-hbm3__8gpu__driver550.90.07.txt").read_text()

# https://github.com/unslothai/unsloth/pull/10703 (a DGX Spark, as NVIDIA's DGX Spark known
# issues page shows it)
GB10_CSV = """index, name, memory.total [MiB], memory.free [MiB]
0, NVIDIA GB10, [N/A], [N/A]
"""
# https://github.com/snowflakedb/ArcticTraining/pull/345 (another DGX Spark, driver 580.126.09)
GB10_TABLE_2 = """+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 580.126.09             Driver Version: 580.126.09     CUDA Version: 13.0     |
+-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|
|   0  NVIDIA GB10                    On  |   0000000F:01:00.0 Off |                  N/A |
| N/A   36C    P8              3W /  N/A  | Not Supported          |      0%      Default |
|                                         |                        |                  N/A |
+-----------------------------------------+------------------------+----------------------+
"""


def test_each_format_says_a_gb10s_memory_is_the_systems_and_a_sized_gpu_has_its_own() -> None:
    for text in (GB10_SMI, GB10_CSV, GB10_TABLE_2):
        (g,) = parse_any(text).gpus
        assert (g.name, g.memory_total_mib, g.memory_unified) == ("NVIDIA GB10", None, True), text
    assert {g.memory_unified for g in parse_any(H100_SMI).gpus} == {False}


def _facts(free: str, **smi: str) -> Facts:
    raw = {"free": ProbeOutput(free, "", 0)}
    raw.update({probe: ProbeOutput(text, "", 0) for probe, text in smi.items()})
    return parse_facts(raw)


def _scaled(text: str, share: float) -> str:
    """free's numbers cut to `share` (a smaller memory), the layout kept."""
    return re.sub(r"(?<=\s)\d+(?=\s|$)", lambda m: str(int(int(m.group()) * share)), text)


def test_a_dgx_spark_ordered_with_128gb_passes_and_a_smaller_memory_still_fails() -> None:
    order = OrderSpec(ram_bytes=parse_ram_size("128GB"))
    for smi in ({"nvidia_smi_table": GB10_SMI}, {"nvidia_smi_csv": GB10_CSV, "nvidia_smi_table": GB10_SMI}):
        check = rule_ram(order, _facts(GB10_FREE, **smi), 0.03)
        assert check.verdict == "pass" and "shared with the GPU" in check.actual, check
    # 119.7 GiB of 128 GiB with nothing saying the memory is shared: as before, a shortfall
    check = rule_ram(order, _facts(GB10_FREE), 0.03)
    assert check.verdict == "fail" and "DIMM" in check.detail, check
    # shared, but a quarter short: a smaller model, said without a DIMM to blame
    small = _facts(_scaled(GB10_FREE, 0.75), nvidia_smi_table=GB10_SMI)
    check = rule_ram(order, small, 0.03)
    assert check.verdict == "fail" and "less memory" in check.detail, check
    assert "DIMM" not in check.detail


def test_only_a_said_unsupported_size_counts_not_a_fault_a_size_or_a_cgroup_limit() -> None:
    order = OrderSpec(ram_bytes=parse_ram_size("128GB"))
    # a memory cell nvidia-smi could not read (ERR!) says nothing of the memory: no allowance
    faulty = GB10_SMI.replace("Not Supported", "ERR!         ", 1)
    (g,) = parse_any(faulty).gpus
    assert g.memory_unified is None and g.cell_faults, g
    check = rule_ram(order, _facts(GB10_FREE, nvidia_smi_table=faulty), 0.03)
    assert check.verdict == "fail" and "DIMM" in check.detail, check
    # a size another format gave for the same GPU outweighs a cell that said none
    facts = _facts(GB10_FREE, nvidia_smi_table=GB10_SMI)
    assert facts.gpu is not None
    sized = dataclasses.replace(facts.gpu.gpus[0], memory_total_mib=131072)
    facts = dataclasses.replace(facts, gpu=dataclasses.replace(facts.gpu, gpus=(sized,)))
    assert rule_ram(order, facts, 0.03).verdict == "fail"
    # a cgroup limit is judged with the same allowance
    shared = _facts(GB10_FREE, nvidia_smi_table=GB10_SMI)
    assert shared.memory is not None and shared.memory.total_bytes is not None
    near = dataclasses.replace(shared, memory_limit_bytes=shared.memory.total_bytes - (1 << 30))
    assert rule_ram(order, near, 0.03).verdict == "pass"
    far = dataclasses.replace(shared, memory_limit_bytes=64 << 30)
    check = rule_ram(order, far, 0.03)
    assert check.verdict == "fail" and "cgroup memory limit" in check.detail, check


A100_CSV = (REAL / "nvidia-smi-query-gpu__a100-pcie-40gb__2gpu__driver555.42.02.csv").read_text()
H100_CSV = (REAL / "nvidia-smi-query-gpu__h100-80gb-hbm3__1gpu__driver590.48.01__idle.csv").read_text()


def _memory_total_na(csv: str, row: int, marker: str) -> str:
    """The CSV with data row `row`'s memory.total printed as `marker` (its leading blank kept)."""
    lines = csv.split("\n")
    column = [h.strip() for h in lines[0].split(",")].index("memory.total [MiB]")
    cells = lines[1 + row].split(",")
    cells[column] = f" {marker}"
    lines[1 + row] = ",".join(cells)
    return "\n".join(lines)


def test_a_data_centre_gpus_unread_memory_size_is_no_memory_shared_with_the_system() -> None:
    """One GPU's memory.total printed `[N/A]` / `[Not Supported]` (truth sweep round 23): the real
    2 x A100 PCIe CSV's GPU 1, the real H100's only GPU. Their memory is their own HBM; the RAM
    row said "shared with the GPU (nvidia-smi: its memory size is not supported)" and allowed
    the GB10's 10 % reserve, passing 119.7 GiB of 128 GB ordered. Now it is judged as without
    a GPU (a shortfall, the DIMM advice), and the GB10 keeps its allowance."""
    order = OrderSpec(ram_bytes=parse_ram_size("128GB"))
    for marker in ("[N/A]", "[Not Supported]", "N/A"):
        for csv, row in ((A100_CSV, 1), (H100_CSV, 0)):
            check = rule_ram(
                order, _facts(GB10_FREE, nvidia_smi_csv=_memory_total_na(csv, row, marker)), 0.03
            )
            assert check.verdict == "fail" and "shared with the GPU" not in check.actual, (marker, check)
    check = rule_ram(order, _facts(GB10_FREE, nvidia_smi_csv=GB10_CSV), 0.03)
    assert check.verdict == "pass" and "shared with the GPU" in check.actual, check
