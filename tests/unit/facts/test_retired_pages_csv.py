"""A saved `nvidia-smi --query-retired-pages=gpu_uuid,retired_pages.address,retired_pages.cause
--format=csv` is judged as `-q`'s `Retired Pages` section is (facts/gpu_retired.py): its pages
counted on their GPUs by UUID or bus id, memory_repair's numbers (a double-bit page warns, 63
pages fail). Before, it was only a note (its rows pages, not GPUs) and its pages were not judged.

Real captures: the 8 x Tesla V100-SXM2-16GB `-q` and the Tesla P100 `--query-gpu` CSV
(tests/fixtures/real/SOURCES.md). The retired-pages CSV's shape is a real one, inline: an
A100 80GB PCIe on driver 580.105.08 (a public repository's GPU fault notes, 2026-03-11, found by
the search index, its file id 58977523224; the repository's name is not shown there), its
`--query-retired-pages=retired_pages.address,retired_pages.cause` printing one row per cause
with the address `[N/A]`: a GPU that remaps rows instead of retiring pages, no page retired
(others' tools read so: a row with `N/A` is no page). Edited in-test as each test says (the
`gpu_uuid` field put first, as the query with that field prints it; hex addresses as nvidia-smi
prints a retired page's, `0x000000000005a1c2`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.errors import UsageError

from ..offline_judge import judged_box

REAL = Path(__file__).parents[2] / "fixtures" / "real"
V100_Q = "nvidia-smi-q__tesla-v100-sxm2-16gb__8gpu__driver550.127.05__host-max-unknown-error.txt"
P100_CSV = "nvidia-smi-query-gpu-nounits__tesla-p100-pcie-16gb__1gpu.csv"
A100_PCIE_PAGES = "retired_pages.address, retired_pages.cause\n[N/A], Single Bit ECC\n[N/A], Double Bit ECC\n"
GPU1 = "GPU-68acf7f1-73a9-a303-c14a-9615d3bd6511"  # (the V100 -q's GPU 1)
V100 = "gpu_count: 8\ngpu_model: V100\n"


def _with_uuid(uuid: str, text: str) -> str:
    """The A100's capture as `--query-retired-pages=gpu_uuid,...` prints it: the GPU's UUID first."""
    head, *rows = text.splitlines()
    return "\n".join([f"gpu_uuid, {head}", *(f"{uuid}, {row}" for row in rows)]) + "\n"


def _pages(uuid: str, causes: list[str]) -> str:
    rows = [f"0x{0x5A1C2 + 0x1000 * i:016x}, {cause}" for i, cause in enumerate(causes)]
    return _with_uuid(uuid, "\n".join(["retired_pages.address, retired_pages.cause", *rows]) + "\n")


def _repair(tmp_path: Path, files: dict[str, str], order: str = V100) -> tuple[str, str]:
    c = judged_box(tmp_path, files, order)[1]["memory_repair"]
    return c.verdict, c.actual


def test_a_double_bit_page_warns_as_q_would(tmp_path: Path) -> None:
    """GPU 1 of the V100 box with one single-bit and one double-bit page retired (the -q beside
    it, of an earlier time, says 0): was a pass (the CSV a note); now the -q rule's warning."""
    pages = _pages(GPU1, ["Single Bit ECC", "Double Bit ECC"])
    verdict, actual = _repair(
        tmp_path, {"nvidia-smi-q.txt": (REAL / V100_Q).read_text(), "retired.csv": pages}
    )
    assert (verdict, actual) == ("warn", "GPU 1: 1 page(s) retired after double-bit errors")


def test_63_pages_fail_as_q_would(tmp_path: Path) -> None:
    """DCGM's limit, as -q's counts: 40 single-bit and 23 double-bit pages on GPU 1 fail."""
    pages = _pages(GPU1, ["Single Bit ECC"] * 40 + ["Double Bit ECC"] * 23)
    verdict, actual = _repair(
        tmp_path, {"nvidia-smi-q.txt": (REAL / V100_Q).read_text(), "retired.csv": pages}
    )
    assert verdict == "fail"
    assert "GPU 1: 63 pages retired (40 single-bit, 23 double-bit)" in actual


def test_na_rows_are_no_retired_page(tmp_path: Path) -> None:
    """The A100 capture's `[N/A]` rows, placed on GPU 1: no page, never "1 double-bit page"."""
    pages = _with_uuid(GPU1, A100_PCIE_PAGES)
    assert _repair(tmp_path, {"nvidia-smi-q.txt": (REAL / V100_Q).read_text(), "retired.csv": pages}) == (
        "pass",
        "nothing pending",
    )


def _p100_with_pending() -> str:
    """The P100 CSV with `retired_pages.pending` asked too (`No`): the repair state read, its
    counts not (the CSV did not ask for them)."""
    head, *rows = (REAL / P100_CSV).read_text().splitlines()
    return "\n".join([f"{head}, retired_pages.pending", *(f"{row}, No" for row in rows)]) + "\n"


P100 = "gpu_count: 1\ngpu_model: P100\n"
P100_UUID = "GPU-ef1b2c9b-38d8-2090-2bd1-f567a3eb42a6"


def test_an_empty_answer_counts_no_page_on_the_gpus_it_covers(tmp_path: Path) -> None:
    """The header alone (no page retired) beside the P100 whose pending state was read: was
    unverified (its page counts not reported); now the counts are 0 and memory_repair passes."""
    empty = "gpu_uuid, retired_pages.address, retired_pages.cause\n"
    assert _repair(tmp_path, {"gpu.csv": _p100_with_pending(), "retired.csv": empty}, P100) == (
        "pass",
        "nothing pending",
    )


@pytest.mark.parametrize(
    "pages",
    [
        _with_uuid(P100_UUID, A100_PCIE_PAGES),  # (no page read: `[N/A]`)
        _pages("GPU-00000000-1111-2222-3333-444444444444", ["Single Bit ECC"]),  # (another GPU's)
    ],
)
def test_no_count_is_read_from_rows_of_no_page_or_of_another_gpu(tmp_path: Path, pages: str) -> None:
    """Never a 0 from absence: `[N/A]` rows, or pages of a GPU the box's outputs do not list
    (another box's, or of a time before a GPU swap) leave the P100's counts unread."""
    verdict, actual = _repair(tmp_path, {"gpu.csv": _p100_with_pending(), "retired.csv": pages}, P100)
    assert verdict == "unverified"
    assert "retired pages (single-bit), retired pages (double-bit) not reported" in actual


@pytest.mark.parametrize(("ids", "verdict"), [("-i 1 ", "unverified"), ("", "pass")])
def test_a_view_of_some_gpus_counts_no_page_on_the_others(tmp_path: Path, ids: str, verdict: str) -> None:
    """`nvidia-smi -i 1 --query-retired-pages=...` (its prompt line kept): its empty answer says
    nothing of GPU 0, whose counts stay unread; the same command without `-i` covers it."""
    fields = "gpu_uuid,retired_pages.address,retired_pages.cause"
    empty = f"$ nvidia-smi {ids}--query-retired-pages={fields} --format=csv\n"
    empty += "gpu_uuid, retired_pages.address, retired_pages.cause\n"
    assert _repair(tmp_path, {"gpu.csv": _p100_with_pending(), "retired.txt": empty}, P100)[0] == verdict


def test_the_csv_alone_is_still_no_gpu_list(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"--query-retired-pages CSV lists retired pages, not GPUs"):
        judged_box(tmp_path, {"retired.csv": _with_uuid(GPU1, A100_PCIE_PAGES)}, V100)


def test_the_real_capture_without_gpu_uuid_stays_a_note(tmp_path: Path) -> None:
    """The A100's capture as published names no GPU: its rows cannot be placed, a note as before."""
    _, checks = judged_box(
        tmp_path, {"nvidia-smi-q.txt": (REAL / V100_Q).read_text(), "retired.csv": A100_PCIE_PAGES}, V100
    )
    assert checks["memory_repair"].verdict == "pass"


def _sampled(uuid: str, pages: list[tuple[int, str]], ticks: int) -> str:
    """`nvidia-smi --query-retired-pages=timestamp,gpu_uuid,retired_pages.address,retired_pages.cause
    --format=csv -l 1 -f FILE` as a monitoring script keeps it: every retired page again on every
    tick, under that tick's timestamp (one header, as `-f` writes it)."""
    rows = ["timestamp, gpu_uuid, retired_pages.address, retired_pages.cause"]
    for tick in range(ticks):
        stamp = f"2024/03/01 10:{tick // 60:02d}:{tick % 60:02d}.000"
        rows += [f"{stamp}, {uuid}, 0x{address:016x}, {cause}" for address, cause in pages]
    return "\n".join(rows) + "\n"


@pytest.mark.parametrize(
    ("pages", "ticks", "want"),
    [
        ([(0x5A1C2, "Single Bit ECC")], 70, ("pass", "nothing pending")),
        ([(0x5A1C2, "Single Bit ECC"), (0x5B1C2, "Double Bit ECC")], 40,
         ("warn", "GPU 1: 1 page(s) retired after double-bit errors")),
    ],
)  # fmt: skip
def test_a_page_sampled_on_every_tick_is_one_page(
    tmp_path: Path, pages: list[tuple[int, str]], ticks: int, want: tuple[str, str]
) -> None:
    """One page (or two) of GPU 1 repeated under 70 (40) timestamps: was 70 pages, a false
    fail ("70 pages retired"); now judged as the one save of each page is."""
    q = (REAL / V100_Q).read_text()
    saved = {n: {"nvidia-smi-q.txt": q, "retired.csv": _sampled(GPU1, pages, n)} for n in (ticks, 1)}
    assert _repair(tmp_path / "sampled", saved[ticks]) == _repair(tmp_path / "once", saved[1]) == want
