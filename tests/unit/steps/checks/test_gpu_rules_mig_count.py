"""`gpu_count` on MIG boxes (real captures): the MIG slices each format lists (the table's `MIG
devices:` rows, the `-L` lines under a GPU, `-q`'s and `-q -x`'s MIG Device records) are named
beside the count of GPUs, never counted as GPUs, and a slice's memory is never the GPU's VRAM."""

from __future__ import annotations

from pathlib import Path

import pytest

from ...offline_judge import verdicts

REAL = Path(__file__).parents[3] / "fixtures" / "real"


def _judged(tmp_path: Path, name: str, order: str) -> dict[str, tuple[str, str]]:
    return verdicts(tmp_path, name, (REAL / name).read_text(encoding="utf-8"), order)


@pytest.mark.parametrize(
    ("name", "count", "actual"),
    [
        # 8 x A100, MIG on GPU 1-7, one 1g slice on GPU 7 (the table's MIG devices rows)
        ("nvidia-smi__a100-sxm4-40gb__8gpu__driver450.80.02__7-mig.txt", 8, "8 (MIG on 7 of 8: 1 slice)"),
        ("nvidia-smi__h200-mig__1gpu__driver590.48.01__load.txt", 1, "1 (MIG on: 5 slices)"),
        ("nvidia-smi-q__h200-mig__1gpu-5mig__driver590.48.01__load.txt", 1, "1 (MIG on: 5 slices)"),
        ("nvidia-smi-q-x__a100-sxm4-40gb-mig__1gpu__driver510.47.03.xml", 1, "1 (MIG on: 2 slices)"),
        (
            "nvidia-smi-L__a100-sxm4-80gb__1gpu-7mig-1g.10gb__driver535.216.01__datadog.txt",
            1,
            "1 (MIG on: 7 slices)",
        ),
        ("nvidia-smi-L__a100-sxm4-80gb__4gpu-1mig-4x1g.20gb__telegraf.txt", 4, "4 (MIG on 1 of 4: 4 slices)"),
        # a CSV says MIG is on and lists no slice
        ("nvidia-smi-query-gpu__h100-80gb-hbm3-mig__1gpu__driver590.48.01__idle.csv", 1, "1 (MIG on)"),
    ],
)
def test_the_slices_are_named_beside_the_gpus(tmp_path: Path, name: str, count: int, actual: str) -> None:
    """Each said only "1" (or "8"): the slices the box lists went unsaid."""
    assert _judged(tmp_path, name, f"gpu_count: {count}\n")["gpu_count"] == ("pass", actual)


def test_seven_slices_of_one_gpu_are_no_seven_gpus(tmp_path: Path) -> None:
    """7 MIG devices under one A100 (`-L`): an order for 7 GPUs fails, the slices named."""
    name = "nvidia-smi-L__a100-sxm4-80gb__1gpu-7mig-1g.10gb__driver535.216.01__datadog.txt"
    assert _judged(tmp_path, name, "gpu_count: 7\n")["gpu_count"] == ("fail", "1 (MIG on: 7 slices)")


def test_a_slice_memory_is_not_the_gpu_vram(tmp_path: Path) -> None:
    """The H200's table lists its slices' memory under `MIG devices:`: the VRAM is the GPU's."""
    got = _judged(
        tmp_path, "nvidia-smi__h200-mig__1gpu__driver590.48.01__load.txt", "gpu_count: 1\nvram: 141GB\n"
    )
    assert got["vram"][0] == "pass" and "143771 MiB" in got["vram"][1]


def test_mig_off_says_the_count_alone(tmp_path: Path) -> None:
    name = "nvidia-smi__a100-sxm4-40gb__8gpu__driver450.102.04__mig-pending-gpu7__dgx-doc.txt"
    assert _judged(tmp_path, name, "gpu_count: 8\n")["gpu_count"] == ("pass", "8")


def test_a_table_cut_inside_its_mig_devices_names_no_slice_count(tmp_path: Path) -> None:
    """The H200's table cut after its 26th line (two of its five slices' rows read): the count
    of slices read would be too low, so none is said; the GPU's count is whole."""
    name = "nvidia-smi__h200-mig__1gpu__driver590.48.01__load.txt"
    cut = "\n".join((REAL / name).read_text(encoding="utf-8").splitlines()[:26])
    got = verdicts(tmp_path, name, cut, "gpu_count: 1\n")["gpu_count"]
    assert got[0] == "pass" and got[1].startswith("1 (MIG on)")
