"""A table of GPUs in MIG mode cut in or before its `MIG devices:` table (measure38a 11, 24):
in MIG mode the table gives each slice's memory (where the GPU's own row says N/A) and its
volatile uncorrectable ECC count on the slices' rows, so those facts are in the part cut away:
vram and ecc_uncorrectable say the cut (an incomplete probe, rerun and save the whole output),
never "no format reports GPU memory ... ask the provider" or "nvidia-smi did not report ECC
error counts". Real captures: tests/fixtures/real/SOURCES.md."""

from __future__ import annotations

from pathlib import Path

from ...offline_judge import checks

REAL = Path(__file__).parents[3] / "fixtures" / "real"
H100 = (
    "nvidia-smi__h100-80gb-hbm3-mig__1gpu__driver550.90.07__memory-na__cut-in-mig-devices-header"
    "__diffusers-torchao-41.txt"
)
A100S = "nvidia-smi__a100-80g-mig__2gpu__driver510.108.03__cut-after-mig-devices-border__ollama-4814.txt"
# the same shape already kept: GPU 3 of an A100 box (`-i 3`), cut in the MIG devices header
DCGM = (
    "nvidia-smi__a100-sxm4-80gb-mig__gpu3__driver535.104.05__bus-id-cut-to-domain__copied-command"
    "__cut-in-mig-head__dcgm-152.txt"
)


Row = tuple[str, str, str]


def _judged(tmp_path: Path, name: str, order: str, text: str | None = None) -> dict[str, Row]:
    text = (REAL / name).read_text(encoding="utf-8") if text is None else text
    return {c.name: (c.verdict, c.actual, c.detail) for c in checks(tmp_path, name, text, order)}


def _says_cut(row: tuple[str, str, str]) -> None:
    verdict, actual, detail = row
    assert verdict == "unverified", actual
    assert "`MIG devices:` table (the output was cut short" in actual, actual
    assert "incomplete probe" in actual, actual
    assert "save its whole output" in detail, detail
    assert "ask the provider" not in detail and "did not report" not in actual + detail


def test_h100_cut_in_the_mig_header_says_the_cut_for_memory_and_ecc(tmp_path: Path) -> None:
    """It said "unknown: no nvidia-smi format that answered reports GPU memory" (ask the
    provider) and "nvidia-smi did not report ECC error counts"."""
    got = _judged(tmp_path, H100, "gpu_model: H100 80GB HBM3\ngpu_count: 1\nvram: 80GB\n")
    _says_cut(got["vram"])
    assert got["vram"][1].startswith("unknown: GPU 0 is in MIG mode"), got["vram"]
    _says_cut(got["ecc_uncorrectable"])
    assert "volatile uncorrectable ECC count" in got["ecc_uncorrectable"][1]
    assert got["gpu_count"][0] == "pass"


def test_a100s_cut_after_the_mig_border_keep_their_row_memory(tmp_path: Path) -> None:
    """Driver 510 prints the total on the GPU row: vram passes as before; the ECC counts,
    only on the slices' rows, are the cut's (both GPUs named)."""
    got = _judged(tmp_path, A100S, "gpu_model: A100 80GB PCIe\ngpu_count: 2\nvram: 80GB\n")
    assert got["vram"][:2] == ("pass", "81920 MiB (80.0 GiB) smallest"), got["vram"]
    _says_cut(got["ecc_uncorrectable"])
    ecc = got["ecc_uncorrectable"]
    assert ecc[1].startswith("not read: GPU 0, GPU 1 are in MIG mode"), ecc


def test_the_family_an_i_view_cut_in_the_mig_header(tmp_path: Path) -> None:
    """GPU 3 alone (`-i 3`), cut in the same header: the cut said, and the view's gap kept."""
    got = _judged(tmp_path, DCGM, "gpu_count: 1\nvram: 80GB\n")
    _says_cut(got["vram"])
    assert "GPU 3 is in MIG mode" in got["vram"][1]
    _says_cut(got["ecc_uncorrectable"])


def test_cut_before_the_mig_table_began_is_the_same_cut(tmp_path: Path) -> None:
    """The H100's table cut right after its GPU table closed (the poster stopping there): the
    `MIG devices:` table that follows is as much cut."""
    text = (REAL / H100).read_text(encoding="utf-8")
    text = text[: text.index("| MIG devices:")].rstrip() + "\n"
    got = _judged(tmp_path, "gpu-table-only.txt", "gpu_count: 1\nvram: 80GB\n", text)
    _says_cut(got["vram"])
    _says_cut(got["ecc_uncorrectable"])


def test_a_whole_mig_table_gives_the_slices_not_the_cut(tmp_path: Path) -> None:
    """The H100's table with its slice row and the Processes table after it: read, no cut said."""
    text = (REAL / H100).read_text(encoding="utf-8").rstrip("\n")
    text += (
        "                   | Memory-Usage                     |        Vol|      Shared           |\n"
        "|      ID  ID  Dev |                     BAR1-Usage   | SM     Unc| CE ENC DEC OFA JPG    |\n"
        "|                  |                                  |        ECC|                       |\n"
        "|==================+==================================+===========+=======================|\n"
        "|  0    0   0   0  |              88MiB / 81559MiB    | 132      0 |  7   0    7    1    7 |\n"
        "|                  |                 1MiB / 131072MiB |           |                       |\n"
        "+------------------+----------------------------------+-----------+-----------------------+\n"
        "\n"
        "+-----------------------------------------------------------------------------------------+\n"
        "| Processes:                                                                              |\n"
        "|  GPU   GI   CI        PID   Type   Process name                              GPU Memory |\n"
        "|        ID   ID                                                               Usage      |\n"
        "|=========================================================================================|\n"
        "|  No running processes found                                                             |\n"
        "+-----------------------------------------------------------------------------------------+\n"
    )
    got = _judged(tmp_path, "whole.txt", "gpu_count: 1\nvram: 80GB\n", text)
    assert got["vram"][0] == "pass", got["vram"]
    assert "cut short" not in got["ecc_uncorrectable"][1], got["ecc_uncorrectable"]


NO_MIG = [
    "| MIG devices:                                                                            |",
    "+------------------+----------------------------------+-----------+-----------------------+",
    "| GPU  GI  CI  MIG |                     Memory-Usage |        Vol|      Shared           |",
    "|      ID  ID  Dev |                       BAR1-Usage | SM     Unc| CE ENC DEC OFA JPG    |",
    "|                  |                                  |        ECC|                       |",
    "|==================+==================================+===========+=======================|",
    "|  No MIG devices found                                                                   |",
    "+-----------------------------------------------------------------------------------------+",
]


def test_a_closed_mig_table_with_no_mig_device_is_no_cut(tmp_path: Path) -> None:
    """Review N F2: the H100 capture's `MIG devices:` table whole and closed on `No MIG devices
    found`, the text ending before the Processes table: no slice row exists to be cut, so neither
    rule says the slices' rows are in a part cut away (both stay unverified)."""
    text = (REAL / H100).read_text(encoding="utf-8")
    text = text[: text.index("| MIG devices:")] + "\n".join(NO_MIG) + "\n"
    got = _judged(tmp_path, "no-mig-device.txt", "gpu_count: 1\nvram: 80GB\n", text)
    for rule in ("vram", "ecc_uncorrectable"):
        verdict, actual, _ = got[rule]
        assert verdict == "unverified", actual
        assert "cut short in or before" not in actual and "part cut away" not in actual, actual
    # (cut inside that table before its closing border: the table's end is unread, as before)
    got = _judged(
        tmp_path, "no-mig-device-cut.txt", "gpu_count: 1\nvram: 80GB\n", text[: text.rindex("\n+") + 1]
    )
    _says_cut(got["vram"])
