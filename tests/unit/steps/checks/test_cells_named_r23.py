"""A GPU whose one cell was not read is named and counted, never dropped (round 23 review):
the real 8-GPU H100 `nvidia-smi -q` with one GPU's cell set to N/A in the test."""

from pathlib import Path

from ...offline_judge import verdicts

REAL = Path(__file__).parents[3] / "fixtures" / "real"
H100_8 = REAL / "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt"
ORDER = "gpu_model: H100\ngpu_count: 8\nvram: 80GB\n"


def gpu3_cell(section: str, old: str) -> str:
    """The capture with the first line after GPU 3's `section` line (its 4th GPU record) that
    holds `old` reading N/A in its place (derived, one cell)."""
    lines = H100_8.read_text().split("\n")
    starts = [i for i, line in enumerate(lines) if line.startswith("GPU 0000")]
    at = next(i for i in range(starts[3], starts[4]) if lines[i].strip().startswith(section))
    cell = next(i for i in range(at, starts[4]) if old in lines[i])
    lines[cell] = lines[cell].replace(old, "N/A")
    return "\n".join(lines)


def test_the_capture_whole(tmp_path: Path) -> None:
    v = verdicts(tmp_path, "nvidia-smi-q.txt", H100_8.read_text(), ORDER)
    assert v["ecc_mode"] == ("pass", "Enabled on all 8 GPUs")
    assert v["vram"] == ("pass", "81559 MiB (79.6 GiB) smallest")


def test_ecc_mode_counts_a_gpu_whose_name_reads_na(tmp_path: Path) -> None:
    """GPU 3's Product Name N/A, its ECC Enabled: the pass said "all 7 GPUs" of a box of 8."""
    v = verdicts(tmp_path, "nvidia-smi-q.txt", gpu3_cell("Product Name", "NVIDIA H100 80GB HBM3"), ORDER)
    assert v["ecc_mode"] == ("pass", "Enabled on all 8 GPUs")


def test_vram_names_the_gpu_whose_memory_total_reads_na(tmp_path: Path) -> None:
    v = verdicts(tmp_path, "nvidia-smi-q.txt", gpu3_cell("FB Memory Usage", "81559 MiB"), ORDER)
    assert v["vram"] == (
        "unverified",
        "81559 MiB (79.6 GiB) smallest of the GPUs read; GPU 3 (00000000:5D:00.0): memory total not reported",
    )


def test_ecc_mode_names_a_gpu_of_another_class_not_enabled(tmp_path: Path) -> None:
    """GPU 3 read as a GeForce card (its name as the real RTX 4090 captures print it) with ECC
    off: consumer cards are not held to ECC, but the box's pass names it, never "all 7 GPUs"."""
    lines = H100_8.read_text().split("\n")
    starts = [i for i, line in enumerate(lines) if line.startswith("GPU 0000")]
    for i in range(starts[3], starts[4]):
        lines[i] = lines[i].replace("NVIDIA H100 80GB HBM3", "NVIDIA GeForce RTX 4090")
        if lines[i].strip().startswith(("Current ", "Pending ")) and lines[i].endswith("Enabled"):
            lines[i] = lines[i].replace("Enabled", "Disabled")
    v = verdicts(tmp_path, "nvidia-smi-q.txt", "\n".join(lines), ORDER)
    assert v["ecc_mode"] == ("pass", "Enabled on 7 of 8 GPUs (GPU 3 (NVIDIA GeForce RTX 4090): Disabled)")
