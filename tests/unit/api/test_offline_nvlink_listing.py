"""`nvidia-smi nvlink -s`'s (and `nvlink -e`'s) GPU lines, `GPU 0: NVIDIA A100-SXM4-80GB (UUID:
GPU-...)`, are NVML's names and UUIDs as `nvidia-smi -L` prints them: where no `-L` was given they
are read as its listing (facts/gpu_merge.py `nvlink_listing`), for gpu_model, and for gpu_count
where the listing is whole; a listing cut or elided is an incomplete probe, and fewer GPUs than
ordered is never a missing GPU (a view, `nvlink -s -i 0`, looks whole).

Found by the truth sweep, round 32 (measure32a 35): nccl-tests#228's `nvlink -s` of an 8 x
A100-SXM4-80GB box, alone, gave gpu_model and gpu_count "not judged: no nvidia-smi output was
given", untrue: an nvidia-smi output was given, and its GPU lines name the model."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
NCCL228 = REAL / "nvidia-smi-nvlink-s__a100-sxm4-80gb__3gpu-tabs-elided__nccl-tests-228.txt"
WHOLE8 = REAL / "nvidia-smi-nvlink-s__a100-sxm4-80gb__8gpu.txt"
VIEW_I0 = REAL / "nvidia-smi-nvlink-status-i0__h100-80gb-hbm3__gpu0-only__nccl-note.txt"
LISTING = REAL / "nvidia-smi-L__a16__4gpu__driver470.129.04__ahv-host.txt"
NVLINKS = sorted(p.name for p in REAL.glob("nvidia-smi-nvlink-[se]*.txt"))
NOT_GIVEN = "no nvidia-smi output was given"


def test_the_nccl_tests_nvlink_s_names_the_model_and_its_cut_leaves_them_unverified(tmp_path: Path) -> None:
    """The real paste (GPUs 0-1 whole, GPU 2's first link, the poster's `......`): the model and
    count read from its GPU lines, unverified as the listing is not whole, saying why."""
    order = "gpu_model: A100 SXM4 80GB\ngpu_count: 8\ninterconnect: nvlink\n"
    got = verdicts(tmp_path, "nvlink-s.txt", NCCL228.read_text(), order)
    why = "incomplete probe: the `nvidia-smi nvlink -s` listing is not whole: lines were left out by hand"
    assert got["gpu_model"][0] == "unverified"
    assert got["gpu_model"][1].startswith(f"3 x NVIDIA A100-SXM4-80GB; {why}"), got["gpu_model"]
    assert got["gpu_count"][0] == "unverified"
    assert got["gpu_count"][1].startswith(f"3 listed; {why}"), got["gpu_count"]
    assert not any(NOT_GIVEN in actual for _, actual in got.values()), got


def test_a_whole_nvlink_s_counts_and_names_the_gpus(tmp_path: Path) -> None:
    """A whole `nvlink -s` of 8 GPUs: gpu_model and gpu_count pass; the driver, which it does not
    print, unverified saying so."""
    got = verdicts(tmp_path, "nvlink-s.txt", WHOLE8.read_text(), "gpu_model: A100 SXM4 80GB\ngpu_count: 8\n")
    assert got["gpu_model"] == ("pass", "8 x NVIDIA A100-SXM4-80GB")
    assert got["gpu_count"] == ("pass", "8")
    assert got["nvidia_driver"] == ("unverified", "driver unknown, CUDA unknown")


def test_fewer_gpus_than_ordered_in_nvlink_s_alone_is_no_missing_gpu(tmp_path: Path) -> None:
    """`nvidia-smi nvlink --status -i 0` of an 8 x H100 box, saved without its command, lists GPU
    0 alone and looks whole: an order of 8 is unverified, never "7 of the 8 ordered GPUs missing"."""
    got = verdicts(tmp_path, "nvlink-s.txt", VIEW_I0.read_text(), "gpu_model: H100 SXM\ngpu_count: 8\n")
    assert got["gpu_count"] == (
        "unverified",
        "1 listed; only `nvidia-smi nvlink -s` lists them whole, and a view of some GPUs"
        " (`nvlink -s -i 0`) saved without its command looks whole too",
    )
    assert got["gpu_model"] == ("pass", "1 x NVIDIA H100 80GB HBM3")


def test_a_listing_given_beside_it_is_the_listing(tmp_path: Path) -> None:
    """With `nvidia-smi -L` given (here another box's), `-L` lists the GPUs as before: the nvlink
    lines are read as a listing only where no `-L` was given."""
    from gpuonboard.api import offline
    from gpuonboard.connection.gather import parse_facts

    folder = tmp_path / "box"
    folder.mkdir()
    (folder / "nvidia-smi-L.txt").write_text(LISTING.read_text())
    (folder / "nvlink-s.txt").write_text(NCCL228.read_text())
    facts = parse_facts(
        offline.load_outputs([str(folder / "nvidia-smi-L.txt"), str(folder / "nvlink-s.txt")])
    )
    assert facts.gpu is not None and facts.gpu.source == "list"
    assert [g.name for g in facts.gpu.gpus] == ["NVIDIA A16"] * 4


@pytest.mark.parametrize("name", NVLINKS)
def test_every_real_nvlink_listing_names_its_gpus_and_never_fails_a_count(tmp_path: Path, name: str) -> None:
    """Every real `nvlink -s` / `-e` alone: gpu_model and gpu_count judge its GPU lines (never
    "no nvidia-smi output was given"), and an order of more GPUs than it lists is no fail."""
    got = verdicts(tmp_path, name, (REAL / name).read_text(), "gpu_count: 64\n")
    assert NOT_GIVEN not in got["gpu_count"][1], got["gpu_count"]
    assert got["gpu_count"][0] == "unverified", got["gpu_count"]


B300_TOPO = REAL / "nvidia-smi-topo-m__b300-hgx__7-of-8-gpus__legend__dell-xe9780.txt"
B300_NVLINK = REAL / "nvidia-smi-nvlink-status__b300-sxm6-ac__7-of-8-gpus-listed__dell-xe9780-report.txt"
H200_TOPO8 = REAL / "nvidia-smi-topo-m__h200__8gpu-10nic.txt"


def _judged(tmp_path: Path, files: dict[str, str], order: str) -> dict[str, tuple[str, str]]:
    """rule -> (verdict, actual) of the outputs `files` (name -> text) of one box."""
    from gpuonboard.api import offline
    from gpuonboard.connection.gather import parse_facts

    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "order.yml").write_text(order)
    facts = parse_facts(offline.load_outputs([str(tmp_path / name) for name in files]))
    spec = offline.load_order(str(tmp_path / "order.yml"))
    return {c.name: (c.verdict, c.actual) for c in offline.judge(facts, spec)}


def test_a_whole_topo_m_agreeing_with_nvlink_s_fails_a_missing_gpu(tmp_path: Path) -> None:
    """m34c 32b: a Dell HGX B300 (8 GPUs) whose whole `topo -m` (legend and all) and `nvlink
    --status` both list GPU0-GPU6 was "unverified: only nvlink -s lists them, and its view of
    some GPUs (-i 0) looks whole", untrue: `topo -m` has no `-i`, its matrix is every GPU
    nvidia-smi sees, a listing as `-L` is. With the two agreeing, 7 of 8 fails."""
    files = {"topo.txt": B300_TOPO.read_text(), "nvlink-s.txt": B300_NVLINK.read_text()}
    got = _judged(tmp_path, files, "gpu_model: B300\ngpu_count: 8\ninterconnect: nvlink\n")
    assert got["gpu_count"] == ("fail", "7"), got["gpu_count"]
    assert got["gpu_model"][0] == "pass"


def test_a_whole_topo_m_naming_fewer_than_ordered_fails_beside_a_view_of_some_gpus(tmp_path: Path) -> None:
    """The rule is the matrix's, whatever the listing beside it holds: the view of GPU 0 alone
    (`nvlink -s -i 0`, no command saved) beside a whole matrix of 7 GPUs fails 7 of 8, saying
    what each names; beside a whole matrix of 8 it stays unverified (a view, not a count)."""
    view = VIEW_I0.read_text()
    got = _judged(tmp_path, {"topo.txt": B300_TOPO.read_text(), "nvlink-s.txt": view}, "gpu_count: 8\n")
    assert got["gpu_count"] == (
        "fail",
        "1 listed; `nvidia-smi topo -m` names 7 (GPU0-GPU6), its matrix whole",
    ), got["gpu_count"]
    eight = tmp_path / "eight"
    eight.mkdir()
    got = _judged(eight, {"topo.txt": H200_TOPO8.read_text(), "nvlink-s.txt": view}, "gpu_count: 8\n")
    assert got["gpu_count"][0] == "unverified", got["gpu_count"]


def test_a_topo_m_cut_inside_its_rows_is_no_listing(tmp_path: Path) -> None:
    """The B300 matrix cut below GPU5's row (a constructed cut of the real one): its GPU6 row is
    unread, the matrix no listing of the box, and nvlink -s alone keeps the count unverified."""
    lines = B300_TOPO.read_text().splitlines(keepends=True)
    cut = "".join(lines[: lines.index(next(x for x in lines if x.startswith("GPU6")))])
    got = _judged(tmp_path, {"topo.txt": cut, "nvlink-s.txt": B300_NVLINK.read_text()}, "gpu_count: 8\n")
    assert got["gpu_count"][0] == "unverified", got["gpu_count"]
