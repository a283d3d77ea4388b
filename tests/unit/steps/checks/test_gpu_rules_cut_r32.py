"""What a cut nvidia-smi output still proves (round 32, measure32e's forum captures): a driver
that printed its version and a GPU's whole record answered, whatever a later cut took
(nvidia_driver); a whole table banner above a cut is the driver's version also under a container
image's start-up banner (min_driver); nvidia-smi's own `Attached GPUs` count below the order is
short whatever the cut took (gpu_count). Real captures: tests/fixtures/real/SOURCES.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from ...offline_judge import verdicts

REAL = Path(__file__).parents[3] / "fixtures" / "real"

# (capture, the GPUs it read before the cut)
ANSWERED_BEFORE_CUT = [
    # karfly/learnable-triangulation-pytorch #80: 4 x RTX 2080 Ti, cut inside GPU 3's first row
    (
        "nvidia-smi__geforce-rtx-2080-ti__4gpu__driver418.87__cut-in-gpu3-first-row__learnable-triangulation-80.txt",
        3,
    ),
    # NVIDIA/nvidia-docker #756: -q of 8 x GTX 1080 Ti, cut in GPU 0's record after its UUID
    (
        "nvidia-smi-q__geforce-gtx-1080-ti__8gpu-attached__driver390.48__cut-in-virtualization-mode__nvidia-docker-756.txt",
        1,
    ),
    # NVIDIA/nvidia-container-toolkit #69... is no such case: no GPU row (test below)
]


@pytest.mark.parametrize(("name", "read"), ANSWERED_BEFORE_CUT)
def test_a_driver_that_answered_before_the_cut_passes(tmp_path: Path, name: str, read: int) -> None:
    """nvidia-smi printed its driver's version and whole GPU records: the driver answers; the cut
    is said beside it (it was "unverified (incomplete probe)" though a GPU row was printed)."""
    got = verdicts(tmp_path, "nvidia-smi.txt", (REAL / name).read_text(), "gpu_count: 1\n")
    verdict, actual = got["nvidia_driver"]
    assert verdict == "pass", actual
    assert f"{read} GPU{'s' if read != 1 else ''} read before the cut" in actual, actual
    assert "incomplete probe" in actual, actual  # (the cut said, never hidden)


def test_a_row_cut_after_its_name_cell_is_no_answer(tmp_path: Path) -> None:
    """clayfreeman/gpu-passthrough #4: the table ends after GPU 0's name cell, its readings (where
    a lost GPU reads ERR!) cut away: the driver's answer is not known, unverified as before."""
    name = (
        "nvidia-smi__geforce-rtx-208x__1gpu__driver435.21__vm__copied-command"
        "__cut-after-gpu0-name-cell__gpu-passthrough-4.txt"
    )
    got = verdicts(tmp_path, "nvidia-smi.txt", (REAL / name).read_text(), "gpu_count: 1\n")
    assert got["nvidia_driver"][0] == "unverified", got["nvidia_driver"]


NCT69 = REAL / "nvidia-smi__docker-run-cuda-11.4-deprecated-image-banner__table-cut-in-header__nct-69.txt"
PROMPT = (
    "[xxx ~]$ docker run --rm --runtime=nvidia --gpus '\"device=1\"'"
    " nvidia/cuda:11.4.0-runtime-ubuntu20.04 nvidia-smi\n"
)


@pytest.mark.parametrize(("minimum", "verdict"), [("525", "pass"), ("530", "fail")])
def test_a_whole_banner_under_an_image_banner_gives_the_driver(
    tmp_path: Path, minimum: str, verdict: str
) -> None:
    """nvidia-container-toolkit #69 (measure32e 09, its nvidia-container-runtime #189 copy): the
    CUDA image's start-up banner, then the table's whole banner, the paste cut in its header. The
    container shows the host's kernel driver: min_driver judges 525.85.12 (it was unverified,
    "unknown: driver 525.85.12")."""
    got = verdicts(
        tmp_path, "session.txt", PROMPT + NCT69.read_text(), f'gpu_count: 1\nmin_driver: "{minimum}"\n'
    )
    assert got["min_driver"] == (verdict, "525.85.12"), got["min_driver"]
    count = got["gpu_count"]
    assert count[0] == "unverified", count
    # (what is not known, and why, in one sentence: it read "unknown: driver 525.85.12, ...")
    assert count[1].startswith(
        "unknown: no GPU row could be read, so the GPUs (their count, model and memory) are not known:"
        " the nvidia-smi output gives driver 525.85.12, CUDA 12.0 in its banner"
    ), count


# (capture, nvidia-smi's attached count): -q pastes from `Attached GPUs` to GPU 0's PCI section
ATTACHED = [
    (
        "nvidia-smi-q__tesla-k80__4gpu-attached__no-header__from-attached-gpus__cut-in-gpu0-pci__nvidia-docker-617.txt",
        4,
    ),
    (
        "nvidia-smi-q__tesla-v100-sxm2-16gb__8gpu-attached__no-header__from-attached-gpus__cut-in-gpu0-pci__nvidia-docker-868.txt",
        8,
    ),
]


@pytest.mark.parametrize(("name", "attached"), ATTACHED)
def test_attached_gpus_below_the_order_fails_the_count(tmp_path: Path, name: str, attached: int) -> None:
    """`Attached GPUs : 4` is nvidia-smi's own, exact count: below an order of 8 the box is short
    whatever the cut took (it was unverified, "1 listed", the attached count not shown)."""
    text = (REAL / name).read_text()
    got = verdicts(tmp_path, "nvidia-smi-q.txt", text, f"gpu_count: {attached * 2}\n")
    verdict, actual = got["gpu_count"]
    assert verdict == "fail", actual
    assert actual.startswith(f"{attached} attached (nvidia-smi's count), 1 read"), actual
    # as many attached as ordered: not known to be short, nor whole (a GPU nvidia-smi counts may
    # fail its handle in the part cut away): unverified as before
    same = verdicts(tmp_path, "nvidia-smi-q.txt", text, f"gpu_count: {attached}\n")
    assert same["gpu_count"][0] == "unverified", same["gpu_count"]


@pytest.mark.parametrize(("ordered", "verdict"), [(4, "pass"), (5, "unverified")])
def test_a_row_cut_after_its_bus_cell_counts_its_gpu(tmp_path: Path, ordered: int, verdict: str) -> None:
    """The learnable-triangulation #80 table ends on `|   3  GeForce RTX 208...  Off  |
    00000000:4E:00.0  On |`, its ECC cell cut away: GPU 3 exists, so at least 4 GPUs (it read
    "3 listed", unverified on an order of 4). More than 4 ordered: not known, unverified."""
    text = (REAL / ANSWERED_BEFORE_CUT[0][0]).read_text()
    got = verdicts(tmp_path, "nvidia-smi.txt", text, f"gpu_count: {ordered}\n")
    assert got["gpu_count"][0] == verdict, got["gpu_count"]
    assert got["gpu_count"][1].startswith("4 listed; incomplete probe"), got["gpu_count"]


COSMOS47 = (
    "nvidia-smi__geforce-rtx-3050__1gpu__driver550.120__copied-command__gpu-table-closed"
    "__cut-in-processes-top-border__cosmos-47.txt"
)


def test_a_table_closed_before_the_cut_is_a_whole_gpu_list(tmp_path: Path) -> None:
    """NVIDIA/cosmos #47: GPU 0's rows, the GPU table's closing border, nvidia-smi's line of
    spaces between its tables, the Processes table's top border cut. Every GPU row is above that
    line: the count and the per-GPU rules are judged (all were unverified, "1 listed")."""
    text = (REAL / COSMOS47).read_text()
    order = "gpu_model: RTX 3050\ngpu_count: {}\nvram: 8GB\n"
    got = verdicts(tmp_path, "nvidia-smi.txt", text, order.format(8))
    assert got["gpu_count"] == ("fail", "1"), got["gpu_count"]
    got = verdicts(tmp_path, "nvidia-smi.txt", text, order.format(1))
    for rule in ("nvidia_driver", "gpu_model", "gpu_count", "vram", "temperature", "mig_mode"):
        assert got[rule][0] == "pass", (rule, got[rule])


def test_a_bare_empty_line_after_the_border_is_no_closed_table(tmp_path: Path) -> None:
    """The same table ending on an empty line after GPU 0's border (snowflakedb/ArcticTraining
    #345's post has that shape): a paste or a code fence adds such a line after any line, and a
    poster who copied GPU 0's rows of a larger table leaves the same text: still cut; with the
    Processes table's border begun after it, closed."""
    text = (REAL / COSMOS47).read_text()
    lines = text.splitlines()
    head = "\n".join(lines[: max(n for n, line in enumerate(lines) if "RTX 3050" in line) + 3])
    border = "+-----------------------------------------+------------------------+----------------------+"
    bare = verdicts(tmp_path, "nvidia-smi.txt", f"{head}\n{border}\n\n", "gpu_count: 2\n")
    assert bare["gpu_count"][0] == "unverified", bare["gpu_count"]
    begun = verdicts(tmp_path, "nvidia-smi.txt", f"{head}\n{border}\n\n+-------------\n", "gpu_count: 2\n")
    assert begun["gpu_count"] == ("fail", "1"), begun["gpu_count"]
