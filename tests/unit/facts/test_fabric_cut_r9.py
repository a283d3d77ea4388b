"""RDMA and NVLink listings cut short (sweep 8, classes B and G): every real RDMA capture
(ibv_devinfo, ibstat, ibstatus, the sysfs listing) and every real `nvidia-smi nvlink -s`
capture, cut at each line end and inside each line, is read as an incomplete probe or as exactly
the records a whole listing of them gives. A cut never fails `rdma_ports` / `nvlink_links`
where the whole capture does not fail, and never passes where the whole does not pass, except
where the cut falls between two devices (or two GPUs) and leaves nothing of the next one: that
text is byte for byte a whole listing of fewer devices, and no parser can tell.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuonboard.api import saved_text
from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.infiniband import IbReport, parse_rdma
from gpuonboard.facts.nvlink import parse_nvlink_errors, parse_nvlink_status
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.steps.checks.fabric_health import health_checks, rule_rdma

from ..offline_judge import verdicts as judged

REAL = Path(__file__).parents[2] / "fixtures" / "real"

RDMA = sorted(
    p.name
    for pattern in ("ib-sysfs__*", "ibv_devinfo*", "ibstat__*", "ibstatus__*")
    for p in REAL.glob(pattern)
)
NVLINK_S = sorted(p.name for p in REAL.glob("nvidia-smi-nvlink-s__*"))
# a listing the tool itself limited (`ibv_devinfo -d mlx4_1 -i 2 -v`: port 2 of 2) or stopped
# (ibstat's `ibpanic:` on mlx5_8): not whole, by its own words
NOT_WHOLE = {
    "ibv_devinfo-v__connectx3-mlx4__port-down-polling.txt",
    # (ends inside mlx5_6's record: round 30, steps/checks/test_rdma_ports_cut.py)
    "ibstatus__6ca-all-down-disabled__cut-inside-mlx5_6__nccl-1935.txt",
    "ibstat__a100__cut-by-ibpanic-exit-255__gpud.txt",
    # a paste whose top was cut off (it starts inside a port record): not whole by its first line
    "ibv_devinfo__top-cut-inside-a-port__cx7-roce-mlx5_2-active__deepep-38.txt",
    # CAs left out by hand (`...`) and ibstat's own `ibpanic:`
    "ibstat__one-ca-mlx5_7-hdr200__elided-top-and-values__ibpanic-mlx5_8__gpud-752.txt",
    # excerpts that end inside a port record (before its Link layer / Rate line)
    "ibstat__mlx5_2-one-device-cut-at-port-guid__lshca-79.txt",
    "ibstat__3ca-roce-cut-inside-mlx5_10__mooncake-1999.txt",
    # an old ibv_devinfo printing no link_layer: whole, or cut after port_lmc (not known; m31d 17)
    "ibv_devinfo__soft-roce-rxe0__no-link-layer-line__old-libibverbs__copied-command__rxe-dev-46.txt",
}


def read(name: str) -> str:
    return (REAL / name).read_text()


def cuts(text: str) -> Iterator[int]:
    """Every line end (before and after its newline) and points inside each line; never nothing,
    nor the whole text (or the whole less its last newline)."""
    points: set[int] = set()
    start = 0
    for line in text.splitlines(keepends=True):
        body = len(line.rstrip("\n"))
        points |= {start + 1, start + body // 3, start + body // 2, start + body - 1}
        points |= {start + body, start + len(line)}
        start += len(line)
    yield from sorted(p for p in points if 0 < p < len(text) and text[p:].strip())


def orders(report: IbReport) -> list[tuple[int, float]]:
    """Orders around what the whole capture has: at each rate it shows (and at 1 Gb/s), one
    port, as many as are up at that rate, one more, and one more than it lists."""
    rates = {p.rate_gbps for p in report.ports if p.rate_gbps is not None} | {1.0}
    wants = set()
    for rate in rates:
        good = sum(1 for p in report.ports if p.active and p.rate_gbps is not None and p.rate_gbps >= rate)
        wants |= {(n, rate) for n in (1, good, good + 1, len(report.ports) + 1) if n >= 1}
    return sorted(wants)


def row(order: tuple[int, float], report: IbReport) -> tuple[str, str]:
    check = rule_rdma(order, report.ports, report.complete, report.cut)
    assert check is not None
    return check.verdict, check.actual


# --- B: RDMA ports ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "keep", "order", "sign"),
    [
        # B1: `hca_id: mlx5_0` and its device fields, not yet its `port:` block
        (
            "ibv_devinfo-v__connectx6-ib_plus_connectx5-roce__3hca.txt",
            945,
            "rdma: 3x100G\n",
            "mlx5_0 has no port",
        ),
        # B2: `CA 'mlx5_1'` says `Number of ports: 1`, its `Port 1:` block is cut away
        ("ibstat__h100-8x-ndr400__some-down__gpud.txt", 436, "rdma: 9x100G\n", "mlx5_1 has no port"),
        # B3: inside mlx5_2's block, before its state line
        ("ibstatus__a100-hdr200__all-active__gpud.txt", 710, "rdma: 9x40G\n", "mlx5_2 port 1 has no state"),
        # B4: the first sysfs line cut inside its link layer (`...\tInfin`)
        (
            "ib-sysfs__h100-8x-ndr400-ib_plus_bond-roce200__gpud.txt",
            54,
            "rdma: 9x200G\n",
            "cut short ('Infin')",
        ),
    ],
)
def test_b_a_cut_rdma_listing_is_unverified_not_failed(
    tmp_path: Path, name: str, keep: int, order: str, sign: str
) -> None:
    text = read(name)
    assert judged(tmp_path, name, text, order)["rdma_ports"][0] == "pass"
    verdict, actual = judged(tmp_path, name, text[:keep], order)["rdma_ports"]
    assert verdict == "unverified", actual
    assert sign in actual and "incomplete" in actual
    assert "no RDMA device found" not in actual


def test_b3_a_port_whose_state_was_cut_away_is_not_a_port_down() -> None:
    report = parse_rdma(read("ibstatus__a100-hdr200__all-active__gpud.txt")[:710])
    assert not report.complete
    assert [(p.device, p.state) for p in report.ports] == [("mlx5_0", "ACTIVE"), ("mlx5_1", "ACTIVE")]


def test_b_a_cut_between_two_ports_of_one_hca_is_incomplete() -> None:
    # ibv_devinfo without -v, cut after mlx4_1's port 1: `phys_port_cnt: 2` is not met. The whole
    # (2 of 4 ports active, no rate printed) is unverified for 2 ports; the cut must not fail.
    name = "ibv_devinfo__connectx3-mlx4__2hca-2of4-ports-down.txt"
    text = read(name)
    cut = text[: text.index("\t\tport:\t2")]
    report = parse_rdma(cut)
    assert [(p.device, p.port) for p in report.ports] == [("mlx4_1", 1)]
    assert not report.complete and report.cut == "mlx4_1 lists 1 of its 2 ports"
    assert row((2, 10.0), parse_rdma(text))[0] == "unverified"
    assert row((2, 10.0), report)[0] == "unverified"


def test_b_a_head_cut_mid_line_after_whole_records_is_incomplete() -> None:
    # the next CA's head cut inside its name: the CAs before it are not the whole box
    text = read("ibstat__h100-8x-ndr400__some-down__gpud.txt")
    cut = text[: text.index("CA 'mlx5_10'") + len("CA 'mlx5_")]
    report = parse_rdma(cut)
    assert len(report.ports) == 2 and not report.complete
    assert row((3, 100.0), report)[0] == "unverified"


def test_b_a_text_of_which_nothing_is_read_is_no_claim_of_no_device() -> None:
    # another command's real output where the RDMA listing should be (no line of it a port's):
    # nothing was read, so "no RDMA device found" is not known either
    report = parse_rdma(read("nvidia-smi-L__a100-80gb-pcie__1gpu-1mig-2g.20gb__go-dcgm.txt"))
    assert (report.ports, report.complete) == ((), False)
    assert row((1, 100.0), report)[0] == "unverified"


@pytest.mark.parametrize("name", RDMA)
def test_b_whole_rdma_captures_read_whole(name: str) -> None:
    report = parse_rdma(saved_text.strip_prompt(read(name)))
    assert report.complete == (name not in NOT_WHOLE), report.cut
    assert report.cut is None or name in NOT_WHOLE
    if not report.ports:  # the tool's own sentence that there is none: still no RDMA device
        assert row((1, 100.0), report) == ("fail", "no RDMA device found")


@pytest.mark.parametrize("name", RDMA)
def test_b_every_cut_of_a_real_rdma_listing(name: str) -> None:
    # (a capture saved under its prompt line, `# ibstat`, is read below it, as the saved text is)
    text = saved_text.strip_prompt(read(name))
    whole = parse_rdma(text)
    before = {want: row(want, whole)[0] for want in orders(whole)}
    for p in cuts(text):
        if not text[:p].strip():
            continue  # (blanks alone: an empty file, refused before any parser reads it)
        report = parse_rdma(text[:p])
        k = len(report.ports)
        if report.complete:
            # nothing of a next record is left: exactly the whole's first k ports, of whole
            # devices (the text is a whole listing of fewer devices)
            assert k > 0, (p, text[:p][-60:])
            assert report.ports == whole.ports[:k], (p, text[:p][-60:])
            assert k == len(whole.ports) or whole.ports[k].device != whole.ports[k - 1].device, p
        for want, was in before.items():
            now, actual = row(want, report)
            assert actual != "no RDMA device found", (p, text[:p][-60:])
            if now == "pass":
                assert was == "pass", (p, want, text[:p][-60:])
            if now == "fail" and was != "fail":
                assert report.complete, (p, want, text[:p][-60:])


# --- G: nvidia-smi nvlink -s ------------------------------------------------------------------------


def nvlink_row(text: str) -> str | None:
    facts = parse_facts({"nvidia_nvlink": ProbeOutput(text, "", 0)})
    row = next((c for c in health_checks(facts) if c.name == "nvlink_links"), None)
    return None if row is None else row.verdict


def test_g1_a_gpu_header_cut_mid_name_is_not_a_pass(tmp_path: Path) -> None:
    name = "nvidia-smi-nvlink-s__h800__8gpu-8links__elided.txt"
    text = read(name)
    assert judged(tmp_path, name, text, None)["nvlink_links"][0] == "unverified"
    cut = text[:316]
    assert cut.endswith("GPU 1: NVIDIA H8")
    verdict, actual = judged(tmp_path, name, cut, None)["nvlink_links"]
    assert verdict == "unverified", actual
    assert "GPU 1 (listing cut short)" in actual


def test_g_the_last_gpu_without_links_or_note_marks_the_listing_cut() -> None:
    text = read("nvidia-smi-nvlink-s__h800__8gpu-8links__elided.txt")
    status = parse_nvlink_status(text[:316])
    assert (status.complete, status.cut_gpu) == (False, 1)
    whole = parse_nvlink_status(text)
    assert (whole.complete, whole.cut_gpu) == (True, None)
    # a whole GPU line, its links not yet printed: cut short as well
    header = parse_nvlink_status(text[: text.index("GPU 1:")] + text.splitlines(keepends=True)[9])
    assert header.cut_gpu == 1


def test_g_nvlink_errors_listing_cut_in_a_gpu_header() -> None:
    text = read("nvidia-smi-nvlink-e__h100-80gb-hbm3__1gpu__driver-unknown__elided.txt")
    assert parse_nvlink_errors(text).complete
    cut = parse_nvlink_errors(text[: text.index(")") - 5])
    assert (cut.complete, cut.cut_gpu) == (False, 0)


@pytest.mark.parametrize("name", NVLINK_S)
def test_g_whole_nvlink_captures_read_whole(name: str) -> None:
    # (a real paste cut inside the next GPU's header, `GP`: round 33, api/test_offline_nvlink_cut_shapes.py)
    # (and a paste whose last line is its own elision, `...`: the GPUs after it not known, revQ Q3)
    last = read(name).rstrip().splitlines()[-1].strip()
    assert parse_nvlink_status(read(name)).complete == (
        "cut-in-gpu2-header" not in name and last.strip(".") != ""
    )


def test_g_every_cut_of_the_real_nvlink_listings() -> None:
    for name in NVLINK_S:
        text = read(name)
        whole_status = parse_nvlink_status(text)
        before = nvlink_row(text)
        for p in cuts(text):
            after = nvlink_row(text[:p])
            status = parse_nvlink_status(text[:p])
            if after == "fail":
                assert before == "fail", (name, p, text[:p][-60:])
            if after == "pass" and before != "pass":
                # only a cut right after a whole GPU block: a whole listing of fewer GPUs
                k = len(status.gpus)
                assert status.complete and status.gpus == whole_status.gpus[:k], (name, p, text[:p][-60:])
