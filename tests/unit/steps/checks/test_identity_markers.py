"""A fault marker where a GPU's identity should be (truth sweep round 20, names): the name cell
of the default table and the name / UUID of `nvidia-smi -L`, in real multi-GPU captures
(tests/fixtures/real), column widths kept. The --query-gpu CSV, -q and -q -x already judged
them (faults._field_faults); the table and -L read the marker as a model ("1 x [GPU is lost]")
and recorded no fault. Now, as in the other formats: "[GPU is lost]" / "[GPU requires reset]"
anywhere in a GPU's record fails that GPU; a fault marker (ERR!, an NVML error string) as its
name makes it unreadable; a name nvidia-smi could not give ("N/A", "[Not Supported]") is no
model (the GPU counted, its model unverified)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ...offline_judge import verdicts
from .test_fault_cells import table_marked

REAL = Path(__file__).parents[3] / "fixtures" / "real"
H100_TABLE = REAL / "nvidia-smi__h100-80gb-hbm3__8gpu__driver550.90.07.txt"
A100_TABLE = REAL / "nvidia-smi__a100-pcie-40gb__2gpu__driver555.42.02.txt"
A16_LIST = REAL / "nvidia-smi-L__a16__4gpu__driver470.129.04__ahv-host.txt"
A100_MIG_LIST = REAL / "nvidia-smi-L__a100-sxm4-80gb__4gpu-1mig-4x1g.20gb__telegraf.txt"
ORDERS = {
    H100_TABLE: ("gpu_model: H100 80GB HBM3\ngpu_count: 8\n", 3),
    A100_TABLE: ("gpu_model: A100 40GB PCIe\ngpu_count: 2\n", 1),
    A16_LIST: ("gpu_model: A16\ngpu_count: 4\n", 2),
    A100_MIG_LIST: ("gpu_model: A100 80GB\ngpu_count: 4\n", 2),
}
# NVML's words for a GPU that cannot be used until it is reset or the box rebooted
GPU_WORDS = ("[GPU is lost]", "[GPU requires reset]")
# a GPU's name that nvidia-smi failed to read: the GPU unreadable (as the table's real ERR! rows)
UNREADABLE = ("ERR!", "[Unknown Error]", "Unknown Error")
# a name nvidia-smi printed as not given: no model, no fault
NO_NAME = ("N/A", "[Not Supported]", "Not Supported")


def _judged(tmp_path: Path, capture: Path, text: str) -> dict[str, tuple[str, str]]:
    return verdicts(tmp_path, capture.name, text, ORDERS[capture][0])


def table_named(text: str, gpu: int, marker: str) -> str:
    """The table with GPU `gpu`'s name cell printed as `marker`, left-aligned in the name's
    place as nvidia-smi aligns names (the line's width kept)."""
    lines = text.split("\n")
    at = next(i for i, line in enumerate(lines) if line.startswith(f"|   {gpu}  "))
    line = lines[at]
    start = len(f"|   {gpu}  ")
    end = line.index("  ", start)
    width = max(end - start, len(marker))
    lines[at] = line[:start] + marker.ljust(width) + line[start + width :]
    assert len(lines[at]) == len(line) and lines[at][start + width] == " "
    return "\n".join(lines)


def listing_marked(text: str, gpu: int, part: str, marker: str) -> str:
    """The `-L` listing with GPU `gpu`'s name or UUID printed as `marker`."""
    lines = text.split("\n")
    at = next(i for i, line in enumerate(lines) if line.startswith(f"GPU {gpu}: "))
    head, _, uuid = lines[at].partition(" (UUID: ")
    if part == "name":
        lines[at] = f"GPU {gpu}: {marker} (UUID: {uuid}"
    else:
        lines[at] = f"{head} (UUID: {marker})"
    return "\n".join(lines)


def _marked(capture: Path, part: str, marker: str) -> str:
    text = capture.read_text()
    gpu = ORDERS[capture][1]
    if capture.name.startswith("nvidia-smi-L"):
        return listing_marked(text, gpu, part, marker)
    return table_named(text, gpu, marker)


IDENTITY = [(H100_TABLE, "name"), (A100_TABLE, "name"), (A16_LIST, "name"), (A100_MIG_LIST, "name")]
LIST_UUID = [(A16_LIST, "uuid"), (A100_MIG_LIST, "uuid")]


def _no_model_claim(got: dict[str, tuple[str, str]], marker: str) -> None:
    """gpu_model names no model of the marker's words ("1 x [GPU is lost]", "1 x N/A")."""
    assert f"x {marker}" not in got["gpu_model"][1], got["gpu_model"]


@pytest.mark.parametrize(("capture", "part"), IDENTITY + LIST_UUID, ids=lambda v: getattr(v, "name", v))
@pytest.mark.parametrize("word", GPU_WORDS)
def test_a_gpu_nvml_calls_lost_in_its_name_or_uuid_fails(
    tmp_path: Path, capture: Path, part: str, word: str
) -> None:
    """ "[GPU is lost]" / "[GPU requires reset]" as a GPU's name (table, -L) or UUID (-L): that
    GPU fails gpu_health, still counted; the words are no model. Before: "1 x [GPU is lost]"
    and no fault (the -L UUID's failed nothing at all)."""
    gpu = ORDERS[capture][1]
    whole = _judged(tmp_path, capture, capture.read_text())
    assert whole["gpu_model"][0] == "pass" and "gpu_health" not in whole, whole
    got = _judged(tmp_path, capture, _marked(capture, part, word))
    assert got["gpu_health"][0] == "fail" and f"GPU {gpu}" in got["gpu_health"][1], got.get("gpu_health")
    assert word.strip("[]") in got["gpu_health"][1]
    assert got["gpu_model"][0] == "fail" and f"GPU {gpu} unreadable" in got["gpu_model"][1], got["gpu_model"]
    count, mig, slices = whole["gpu_count"][1].partition(" (MIG")  # (the slices are said last)
    assert got["gpu_count"] == ("fail", f"{count} (1 unreadable){mig}{slices}"), got["gpu_count"]
    _no_model_claim(got, word)


@pytest.mark.parametrize(("capture", "part"), IDENTITY, ids=lambda v: getattr(v, "name", v))
@pytest.mark.parametrize("marker", UNREADABLE)
def test_a_fault_marker_as_a_gpus_name_makes_it_unreadable(
    tmp_path: Path, capture: Path, part: str, marker: str
) -> None:
    """ERR! / an NVML error string as the name: the GPU is unreadable, as the table's real ERR!
    rows (8 x A40, 8 x A30) and the other formats judge it; never "1 x ERR!" (-L's was)."""
    gpu = ORDERS[capture][1]
    got = _judged(tmp_path, capture, _marked(capture, part, marker))
    assert got["gpu_health"][0] == "fail" and f"GPU {gpu}" in got["gpu_health"][1], got.get("gpu_health")
    assert got["gpu_model"][0] == "fail" and f"GPU {gpu} unreadable" in got["gpu_model"][1], got["gpu_model"]
    _no_model_claim(got, marker)


@pytest.mark.parametrize(("capture", "part"), IDENTITY, ids=lambda v: getattr(v, "name", v))
@pytest.mark.parametrize("marker", NO_NAME)
def test_a_name_nvidia_smi_did_not_give_is_no_model(
    tmp_path: Path, capture: Path, part: str, marker: str
) -> None:
    """ "N/A" / "[Not Supported]" as a GPU's name: the GPU is counted, its model not read
    (gpu_model unverified, never a failure naming "1 x N/A" as another model)."""
    whole = _judged(tmp_path, capture, capture.read_text())
    got = _judged(tmp_path, capture, _marked(capture, part, marker))
    assert got["gpu_model"][0] == "unverified", got["gpu_model"]
    assert "the name of 1 GPU(s) was not read" in got["gpu_model"][1]
    assert got["gpu_count"] == whole["gpu_count"]
    _no_model_claim(got, marker)


# (row of GPU 3's record, the token): its Bus-Id, its ECC count, its power draw, its MIG mode
H100_CELLS = [(0, "00000000:5D:00.0"), (0, "0"), (1, "72W"), (2, "Disabled")]


@pytest.mark.parametrize(("row", "token"), H100_CELLS)
def test_a_gpu_nvml_calls_lost_in_any_table_cell_fails(tmp_path: Path, row: int, token: str) -> None:
    """ "[GPU is lost]" in any one cell of a GPU's table rows (as the other formats judge it in
    any field): the GPU fails, never one cell's fault or a value read as N/A."""
    text = table_marked(H100_TABLE.read_text(), 3, row, token, "[GPU is lost]")
    assert text is not None
    got = _judged(tmp_path, H100_TABLE, text)
    assert got["gpu_health"] == ("fail", "GPU 3 (00000000:5D:00.0): nvidia-smi reads GPU is lost") or (
        row == 0 and got["gpu_health"] == ("fail", "GPU 3: nvidia-smi reads GPU is lost")
    ), got.get("gpu_health")
    assert got["gpu_count"] == ("fail", "8 (1 unreadable)"), got["gpu_count"]


def test_the_listing_reads_the_gpu_and_its_uuid_apart() -> None:
    """-L's reading: a UUID nvidia-smi could not read is no UUID (never matched to a process
    or another format's GPU) and that field's fault; the name stays the model."""
    from gpuonboard.facts.gpu_list import parse_gpu_list
    from gpuonboard.facts.gpu_merge import _listed_gpu

    text = listing_marked(A16_LIST.read_text(), 2, "uuid", "ERR!")
    gpu = _listed_gpu(parse_gpu_list(text).gpus[2])
    assert (gpu.name, gpu.uuid, gpu.faults, gpu.cell_faults) == ("NVIDIA A16", None, (), ("uuid reads ERR!",))
    named = _listed_gpu(parse_gpu_list(listing_marked(A16_LIST.read_text(), 2, "name", "N/A")).gpus[2])
    assert (named.name, named.uuid, named.faults) == ("", "GPU-6d96ca7e-db97-dd7b-d18b-821c40747583", ())


A30_ERR = REAL / "nvidia-smi__a30__8gpu__driver525.85.12__gpu3-err__no-processes.txt"


def test_an_unreadable_gpu_is_no_gpu_without_mig(tmp_path: Path) -> None:
    """The real 8 x A30 table (MIG-capable) whose GPU 3 reads ERR! in every cell, its name too:
    mig_mode said "GPU 3: no MIG on this model" of an A30 it could not read. Now the GPU is
    named unreadable, its mode and model never claimed."""
    got = verdicts(tmp_path, A30_ERR.name, A30_ERR.read_text(), "gpu_model: A30\ngpu_count: 8\n")
    assert "no MIG on this model" not in got["mig_mode"][1], got["mig_mode"]
    assert "GPU 3 unreadable" in got["mig_mode"][1], got["mig_mode"]
    text = table_marked(H100_TABLE.read_text(), 3, 2, "Disabled", "[GPU is lost]")
    assert text is not None
    lost = _judged(tmp_path, H100_TABLE, text)
    assert lost["mig_mode"] == ("pass", "Disabled; GPU 3 unreadable"), lost["mig_mode"]
