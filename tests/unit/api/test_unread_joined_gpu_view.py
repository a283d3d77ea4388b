"""The box's own nvidia-smi output and a container's view of its GPUs of the same format saved
together (`docker logs CTR`, `kubectl logs POD`, `kubectl exec POD -- nvidia-smi`: api/unread.py
`joined_gpu_view`): the container reads the same GPUs through the same driver, so a GPU's fault
in either output is the box's (facts/gpu_views.py), only the view's GPU set is a view.

Real capture: open-gpu-kernel-modules#446's 8 x A40 table whose GPU 4 (83:00.0) reads `ERR!`
(tests/fixtures/real/SOURCES.md), edited in memory as each test says."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.errors import UsageError

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
A40_ERR = (REAL / "nvidia-smi__a40__8gpu__driver525.60.13__gpu4-err.txt").read_text()
ORDER = "gpu_count: 8\n"
# GPU 4's three `ERR!` lines of the capture, and GPU 5's lines with GPU 4's index and address
ERR_ROW = (
    "|   4  ERR!                On   | 00000000:83:00.0 Off |                 ERR! |\n"
    "|ERR!  ERR! ERR!    ERR! / ERR! |      0MiB / 46068MiB |    ERR!      Default |\n"
    "|                               |                      |                 ERR! |\n"
)
HEALED_ROW = (
    "|   4  NVIDIA A40          On   | 00000000:83:00.0 Off |                    0 |\n"
    "|  0%   23C    P8    14W / 300W |      3MiB / 46068MiB |      0%      Default |\n"
    "|                               |                      |                  N/A |\n"
)
# the capture with GPU 4 healed (HEALED_ROW for ERR_ROW): a box whose own table reads every GPU
A40_OK = A40_ERR.replace(ERR_ROW, HEALED_ROW)
VIEWS = ["docker logs gpu-burn", "kubectl logs gpu-pod", "kubectl exec gpu-pod -- nvidia-smi"]


def session(*outputs: tuple[str, str]) -> str:
    """A saved session: each (command, its output) under a `$ command` prompt line."""
    return "".join(f"$ {command}\n{text.rstrip()}\n" for command, text in outputs)


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("view_first", [False, True])
def test_a_gpu_unreadable_in_a_containers_view_fails_the_box(
    tmp_path: Path, view: str, view_first: bool
) -> None:
    """The healed table (the box's `nvidia-smi`) and the real `ERR!` table as a container
    printed it, either order: the box was GO, the view only noted; gpu_health now fails GPU 4,
    naming the container's command it was read in."""
    both = [("nvidia-smi", A40_OK), (view, A40_ERR)]
    text = session(*(reversed(both) if view_first else both))
    got = _judged(tmp_path, text)
    verdict, actual = got["gpu_health"]
    assert verdict == "fail", got["gpu_health"]
    assert "GPU 4 (00000000:83:00.0)" in actual and "ERR!" in actual and f"`{view}`" in actual


@pytest.mark.parametrize("view", VIEWS)
def test_an_uncorrectable_ecc_count_in_a_containers_view_fails_the_box(tmp_path: Path, view: str) -> None:
    """The healed table, then a container's view of it whose GPU 2 (43:00.0) counts 3 volatile
    uncorrectable ECC errors (its `0` cell made `3`): ecc_uncorrectable was unverified (the box's
    0 since boot judged alone), now it fails GPU 2."""
    view_text = A40_OK.replace(
        "|   2  NVIDIA A40          On   | 00000000:43:00.0 Off |                    0 |",
        "|   2  NVIDIA A40          On   | 00000000:43:00.0 Off |                    3 |",
    )
    got = _judged(tmp_path, session(("nvidia-smi", A40_OK), (view, view_text)))
    assert got["ecc_uncorrectable"][0] == "fail" and "GPU 2" in got["ecc_uncorrectable"][1], got


@pytest.mark.parametrize("faulty", ["box", "view"])
@pytest.mark.parametrize("view_first", [False, True])
def test_a_fault_in_either_output_is_never_lost(tmp_path: Path, faulty: str, view_first: bool) -> None:
    """Invariant: whichever of the two outputs shows GPU 4's `ERR!` (the box's own or the
    container's), in either order, gpu_health fails GPU 4; and with no fault in either, no GPU
    fault is claimed."""
    box, view = (A40_ERR, A40_OK) if faulty == "box" else (A40_OK, A40_ERR)
    both = [("nvidia-smi", box), ("docker logs gpu-burn", view)]
    got = _judged(tmp_path, session(*(reversed(both) if view_first else both)))
    assert got["gpu_health"][0] == "fail" and "GPU 4" in got["gpu_health"][1], got["gpu_health"]
    clean = _judged(tmp_path, session(("nvidia-smi", A40_OK), ("docker logs gpu-burn", A40_OK)))
    assert clean.get("gpu_health", ("none", ""))[0] != "fail", clean


def test_a_view_gpu_beyond_the_box_tables_cut_is_refused(tmp_path: Path) -> None:
    """The healed table cut short after GPU 3's rows (a capture cut off) beside the whole `ERR!`
    table as `docker logs gpu-burn` printed it: GPU 4's `ERR!` names no GPU the box's output
    read, so it could not be placed. It was joined (the box's cut table judged, GPU 4's fault
    lost); it is refused again, as two outputs that cannot both be judged."""
    cut = A40_OK[: A40_OK.index(HEALED_ROW)]
    with pytest.raises(UsageError, match="cannot both be judged"):
        _judged(tmp_path, session(("nvidia-smi", cut), ("docker logs gpu-burn", A40_ERR)))


def _judged(tmp_path: Path, text: str) -> dict[str, tuple[str, str]]:
    """rule -> (verdict, actual) of a saved session `text`, judged against ORDER."""
    return verdicts(tmp_path, "session.txt", text, ORDER)
