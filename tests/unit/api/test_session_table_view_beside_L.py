"""A whole `nvidia-smi` table of GPU 0 only (its Processes box closed: a `-i 0` view) saved
beside `nvidia-smi -L` listing 8 GPUs (measure34c 24, a real page): the count is -L's and the
table is said to be a view of GPU 0; never "an output cut short, or captures of other times"."""

from __future__ import annotations

from pathlib import Path

from ..offline_judge import verdicts

SESSIONS = Path(__file__).parents[2] / "fixtures" / "sessions"
PAGE = SESSIONS / (
    "page__nvidia-smi-table-gpu0-view-WHOLE-no-command+nvidia-smi-L-8gpus__a100-sxm4-40gb-mig-vm"
    "__kr-gpu-sharing-notes.txt"
)
ORDER = "gpu_model: A100-SXM4-40GB\ngpu_count: 8\n"


def test_a_whole_one_gpu_table_beside_a_longer_L_counts_by_L(tmp_path: Path) -> None:
    """gpu_count and gpu_model pass on -L's 8 A100-SXM4-40GB, gpu_count naming the view. Before:
    both unverified ("an output cut short, or captures of other times")."""
    got = verdicts(tmp_path, "session.txt", PAGE.read_text(), ORDER)
    verdict, actual = got["gpu_count"]
    assert verdict == "pass", actual
    assert actual.startswith("8 (MIG on 1 of 8: 4 slices)")
    assert "shows GPU 0 only, its GPU rows whole, of the 8 GPUs `nvidia-smi -L` lists" in actual
    assert got["gpu_model"] == ("pass", "8 x NVIDIA A100-SXM4-40GB")


def test_the_other_gpus_health_stays_unread(tmp_path: Path) -> None:
    """GPU 0's temperature is read; GPUs 1-7 only -L lists: unverified, naming them unread."""
    verdict, actual = verdicts(tmp_path, "session.txt", PAGE.read_text(), ORDER)["temperature"]
    assert verdict == "unverified"
    assert "GPU 7 listed but not read" in actual


def test_a_whole_table_of_several_gpus_beside_a_longer_L_stays_unverified(tmp_path: Path) -> None:
    """The page's table with a second GPU's rows (GPU 1, an edit) beside -L's 8: a table of
    several of -L's GPUs is no `-i` view (a GPU may have fallen off the bus between the two
    outputs): gpu_count stays unverified, never passed on -L's count (review of round 34)."""
    text = PAGE.read_text()
    row = (
        "|   0  NVIDIA A100-SXM4-40GB          On  |   00000000:10:1C.0 Off |                   On |\n"
        "| N/A   40C    P0             43W /  400W |     249MiB /  40960MiB |     N/A      Default |\n"
        "|                                         |                        |              Enabled |\n"
    )
    assert row in text
    second = row.replace("|   0  NVIDIA", "|   1  NVIDIA").replace("10:1C.0", "10:1D.0")
    sep = "+-----------------------------------------+------------------------+----------------------+\n"
    got = verdicts(tmp_path, "session.txt", text.replace(row, row + sep + second, 1), ORDER)
    verdict, actual = got["gpu_count"]
    assert verdict == "unverified", actual
    assert "a view of" not in actual
