"""memory_repair when nvidia-smi gives no row-remapping / page-retirement state (N/A): every real
-q / -q -x capture, judged as a careful reader does. A data-centre GPU whose state was not read
is unverified in every format; a consumer or workstation card, or a driver's newer repair flags
that older drivers lack, are not held against the GPU."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.steps.checks import gpu_health

REAL = Path(__file__).parents[3] / "fixtures" / "real"
H100_MIG = "nvidia-smi-q__h100-80gb-hbm3-mig__1gpu-4mig__driver590.48.01__load.txt"
H100_MIG_TABLE = "nvidia-smi__h100-80gb-hbm3-mig__1gpu-4mig__driver590.48.01__load.txt"


def repair(*names: str) -> tuple[str, str, str]:
    outputs = [(REAL / n).read_text() for n in names]
    raw = {"nvidia_smi": ProbeOutput(outputs[0], "", 0)}
    if len(outputs) > 1:
        raw["nvidia_smi_table"] = ProbeOutput(outputs[1], "", 0)
    [c] = [c for c in gpu_health.evaluate(parse_facts(raw)) if c.name == "memory_repair"]
    return c.verdict, c.actual, c.detail


# data-centre GPUs in MIG mode: "Remapped Rows : N/A" / <remapped_rows>N/A</remapped_rows> and
# every Retired Pages value N/A; the 590 -q still says "Channel Repair Pending : No" beside it
MIG_NA = [
    H100_MIG,
    "nvidia-smi-q__h200-mig__1gpu-5mig__driver590.48.01__load.txt",
    "nvidia-smi-q-x__a100-sxm4-40gb-mig__1gpu__driver510.47.03.xml",
    "nvidia-smi-q-x__a100-sxm4-80gb__1of4gpu__driver535.54.03.xml",
]


@pytest.mark.parametrize("name", MIG_NA)
def test_datacentre_gpu_with_remapping_na_is_unverified(name: str) -> None:
    verdict, actual, detail = repair(name)
    assert verdict == "unverified", actual
    gpu = "GPU at PCI 00000000:01:00.0" if "1of4" in name else "GPU 0"  # (one GPU of 4: by address)
    fmt = "-q -x" if name.endswith(".xml") else "-q"  # (the format read, named)
    assert actual.startswith(f"not reported for {gpu} (nvidia-smi {fmt} gave N/A or no such section;")
    assert f"MIG mode on {gpu}" in actual
    assert "ROW_REMAPPER" in detail


def test_h100_mig_table_and_q_agree() -> None:
    # the table carries no repair state, -q says N/A: the same verdict whichever answered
    assert repair(H100_MIG_TABLE)[0] == repair(H100_MIG)[0] == "unverified"
    assert repair(H100_MIG_TABLE)[1].startswith(
        "not reported for GPU 0 (the formats read gave none: N/A or no such field"
    )


# state read (page retirement on T4 / V100, row remapping on Ampere+), or a card of a class that
# is not held to it (GeForce / Quadro: Retired Pages and Remapped Rows N/A): unchanged
READ_OR_NOT_HELD = [
    ("nvidia-smi-q-x__tesla-t4__1gpu__driver515.105.01.xml", "pass"),
    # 1 of 4 GPUs listed: a pass of the GPU read is no pass of the box (incomplete probe)
    ("nvidia-smi-q__tesla-v100-sxm2-32gb__1of4gpu__driver418.67.txt", "unverified"),
    ("nvidia-smi-q-x__a10g__1gpu__driver515.105.01__aws-passthrough.xml", "pass"),
    ("nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt", "pass"),
    ("nvidia-smi-q__h200__1gpu__driver590.48.01__load.txt", "pass"),
    ("nvidia-smi-q__l40s__1gpu__driver595.80__nvenc-load.txt", "pass"),
    ("nvidia-smi-q__a10__1gpu__driver535.129.03.txt", "fail"),
    ("nvidia-smi-q-x__geforce-rtx-3060__1gpu__driver570.124.04.xml", "pass"),
    ("nvidia-smi-q-x__quadro-p2000__1gpu__driver525.125.06.xml", "pass"),
    ("nvidia-smi-q-x__quadro-p400__1gpu__driver418.43.xml", "pass"),
    ("nvidia-smi-q__geforce-rtx-4080-super__1gpu__driver595.71.05__nvenc-load.txt", "pass"),
]


@pytest.mark.parametrize(("name", "verdict"), READ_OR_NOT_HELD)
def test_state_read_or_class_not_held(name: str, verdict: str) -> None:
    assert repair(name)[0] == verdict


def test_unverified_row_of_a_cut_output_names_the_cut() -> None:
    """The real 8 x H100 -q cut inside GPU 4's record, before its Retired Pages section (a
    dropped session): memory_repair said "not reported for GPU 4 (nvidia-smi -q gave N/A or no
    such section)" with no word of the cut (missing_facts.of_those_read left unverified rows as
    they were), as did fabric_manager's "GPU fabric state not reported"; every row of the cut
    output now says it is of what was read, and why."""
    text = (REAL / "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt").read_text()
    gpu4 = [i for i in range(len(text)) if text.startswith("\nGPU 0000", i)][4]
    cut = text[: text.index("    Retired Pages", gpu4)]
    checks = {c.name: c for c in gpu_health.evaluate(parse_facts({"nvidia_smi": ProbeOutput(cut, "", 0)}))}
    gap = "(of what was read; incomplete probe: nvidia-smi says 8 attached but lists 5"
    for name in ("memory_repair", "fabric_manager", "temperature"):
        assert checks[name].verdict == "unverified", name
        assert gap in checks[name].actual, (name, checks[name].actual)
    assert checks["memory_repair"].actual.startswith("not reported for GPU 4")


def test_repair_na_names_the_xml_it_read_not_q() -> None:
    """The real A100 MIG `-q -x` (driver 510.47.03, <remapped_rows> N/A) read alone: the row
    names `-q -x`, never "nvidia-smi -q gave N/A" (it said so before)."""
    _verdict, actual, _detail = repair("nvidia-smi-q-x__a100-sxm4-40gb-mig__1gpu__driver510.47.03.xml")
    assert actual.startswith("not reported for GPU 0 (nvidia-smi -q -x gave N/A or no such section;")
