"""Two saved RDMA port listings of one box in two formats (`ibstat` and `ibstatus`, `ibv_devinfo`)
each answer what the other does not (ibstat stops at a device it cannot open, ibstatus lists it;
ibv_devinfo without -v has no rate), so a folder or a saved session holding both is judged on both,
merged (facts/rdma_merge.merge_listings), where it used to be refused as "a second rdma_ports
output" (exit 2). The pair: gpud's A100 test data of one Azure VM, taken at one commit (each
port's GUID in ibstat is the one in ibstatus's default gid): `ibstat` stops on `ibpanic: ... stat
of IB device 'mlx5_8' failed` after mlx5_0..mlx5_7 (Active, 200, InfiniBand); `ibstatus` lists
those and mlx5_8 (ACTIVE, 40 Gb/sec, Ethernet)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.connection.gather import parse_facts
from gpuonboard.errors import UsageError
from gpuonboard.inventory import OrderSpec

REAL = Path(__file__).parents[2] / "fixtures" / "real"
IBSTAT = REAL / "ibstat__a100__cut-by-ibpanic-exit-255__gpud.txt"
IBSTATUS = REAL / "ibstatus__a100-hdr200__all-active__gpud.txt"


def rdma(order: str, *paths: Path) -> tuple[str, str]:
    """The rdma_ports verdict and actual of the saved files judged together against `order`."""
    count, rate = order.split("x")
    facts = parse_facts(offline.load_outputs([",".join(map(str, paths))]))
    check = next(
        c for c in offline.judge(facts, OrderSpec(rdma=(int(count), float(rate)))) if c.name == "rdma_ports"
    )
    return check.verdict, check.actual


def test_an_ibstat_cut_by_ibpanic_and_the_ibstatus_of_the_box_are_judged_together() -> None:
    """Before: exit 2 ("a second rdma_ports output"). The ibstat alone cannot say whether a 9th
    port is up (unverified); with the ibstatus beside it the listing is whole: mlx5_8 is up at
    40 Gb/s Ethernet, so 9 ports at 200 fail and 8 pass."""
    assert rdma("9x200", IBSTAT)[0] == "unverified"
    verdict, actual = rdma("9x200", IBSTAT, IBSTATUS)
    assert verdict == "fail"
    assert actual.startswith("8 of 9 port(s) ACTIVE at >= 200 Gb/s; up below 200 Gb/s, not counted: mlx5_8/1")
    assert rdma("8x200", IBSTATUS, IBSTAT) == ("pass", "8 of 9 port(s) ACTIVE at >= 200 Gb/s")


def test_the_two_formats_in_one_saved_session_are_judged_together(tmp_path: Path) -> None:
    """The same pair under two prompts of one saved terminal session (the files as they are, each
    under its command line): before, exit 2 ("two rdma_ports outputs"); now merged as above."""
    session = tmp_path / "session.txt"
    session.write_text(
        f"root@gpu01:~# ibstat\n{IBSTAT.read_text()}"
        f"root@gpu01:~# ibstatus\n{IBSTATUS.read_text()}root@gpu01:~# \n"
    )
    notes: list[str] = []
    facts = parse_facts(offline.load_outputs([str(session)], notes))
    check = next(c for c in offline.judge(facts, OrderSpec(rdma=(9, 200.0))) if c.name == "rdma_ports")
    assert check.verdict == "fail" and check.actual.startswith("8 of 9 port(s) ACTIVE")
    said = "two RDMA port listing outputs of the box in two formats, each read and merged"
    assert any(said in n for n in notes)


def test_two_listings_that_disagree_on_a_port_leave_it_unknown(tmp_path: Path) -> None:
    """The ibstatus with mlx5_3's state edited to `1: DOWN` (taken at another time than the
    ibstat, the port flapped between them): that port is neither counted up nor called down, so 8
    ports at 200 are not known (unverified, naming the disagreement), never a pass or a fail; 9
    ports fail, too few even counting mlx5_3 up."""
    text = IBSTATUS.read_text()
    head = "Infiniband device 'mlx5_3' port 1 status:"
    at = text.index(head)
    block_end = text.index("\n\n", at)
    edited = text[:at] + text[at:block_end].replace("4: ACTIVE", "1: DOWN") + text[block_end:]
    (tmp_path / "ibstatus.txt").write_text(edited)
    (tmp_path / "ibstat.txt").write_text(IBSTAT.read_text())
    verdict, actual = rdma("8x200", tmp_path / "ibstat.txt", tmp_path / "ibstatus.txt")
    assert verdict == "unverified"
    assert "(the listings disagree: mlx5_3 port 1 reads ACTIVE in ibstat, DOWN in ibstatus;" in actual
    assert "incomplete probe" not in actual  # (round 25: a disagreement, not a listing cut short)
    # 9 ordered: 7 good + mlx5_3 disputed = 8 even counting it up (before: unverified)
    verdict, actual = rdma("9x200", tmp_path / "ibstat.txt", tmp_path / "ibstatus.txt")
    assert verdict == "fail", actual
    assert "the listings disagree: mlx5_3 port 1 reads ACTIVE in ibstat, DOWN in ibstatus" in actual


def test_two_listings_in_one_format_stay_refused(tmp_path: Path) -> None:
    """Two ibstatus outputs are rivals (a narrower view or a later state), not two formats."""
    (tmp_path / "a.txt").write_text(IBSTATUS.read_text())
    (tmp_path / "b.txt").write_text(IBSTATUS.read_text().replace("4: ACTIVE", "1: DOWN", 1))
    with pytest.raises(UsageError, match="a second RDMA port listing output"):
        offline.load_outputs([str(tmp_path)])


H100 = REAL / "ibstat__h100-8x-ndr400__some-down__gpud.txt"
NO_DEVICE = REAL / "ibv_devinfo__no-ib-devices.txt"


def _cas(text: str, *names: str) -> str:
    """The `CA 'NAME'` blocks of an ibstat output, each whole, in the order given."""
    blocks = text.split("CA '")
    return "".join("CA '" + b for b in blocks[1:] if b.split("'")[0] in names)


def test_a_listing_of_no_device_beside_a_cut_one_is_not_whole() -> None:
    """The real ibv_devinfo `No IB devices found` beside the A100 ibstat cut by `ibpanic` after
    mlx5_7 (both files as they are). Before: fail "8 of 8 port(s) ACTIVE at >= 200 Gb/s" for 10
    ports (the whole listing of no port made the cut one count as whole). The ibstat is cut (the
    ports after mlx5_7 not known) and a verbs listing is no count of a sysfs one's ports (one box
    without ib_uverbs gives both; round 25: no "two boxes"): unverified, as the cut ibstat alone."""
    verdict, actual = rdma("10x200", NO_DEVICE, IBSTAT)
    assert verdict == "unverified"
    assert "the listing stopped early" in actual
    assert "two boxes' outputs" not in actual


def test_two_boxes_listings_in_two_formats_never_add_up_to_a_pass(tmp_path: Path) -> None:
    """One file: the CA 'mlx5_10' and 'mlx5_11' blocks of the H100 box's ibstat (400 Gb/s
    active); the other: the mlx5_0..mlx5_5 blocks of the A100 box's ibstatus (200 Gb/s active).
    Each alone fails 8x200 (2 of 8, 6 of 8); before, merged, they passed "8 of 8". Two whole
    listings of other ports are two boxes: unverified."""
    (tmp_path / "ibstat.txt").write_text(_cas(H100.read_text(), "mlx5_10", "mlx5_11"))
    status = IBSTATUS.read_text().split("\n\n")
    (tmp_path / "ibstatus.txt").write_text("\n\n".join(status[:6]) + "\n")
    assert rdma("8x200", tmp_path / "ibstat.txt")[0] == "fail"
    assert rdma("8x200", tmp_path / "ibstatus.txt")[0] == "fail"
    verdict, actual = rdma("8x200", tmp_path / "ibstat.txt", tmp_path / "ibstatus.txt")
    assert verdict == "unverified"
    assert "the whole ibstatus does not list mlx5_10/1, mlx5_11/1" in actual


def test_two_boxes_with_one_device_set_are_told_by_their_port_guids() -> None:
    """The H100 box's whole ibstat and the A100 box's whole ibstatus (both files as they are):
    before, unverified as one box's port that flapped ("mlx5_0 port 1 reads 400 Gb/s in ibstat,
    200 Gb/s in ibstatus"); now the port GUIDs (ibstat's `Port GUID`, ibstatus's `default gid`)
    say two boxes, named as such."""
    verdict, actual = rdma("8x200", H100, IBSTATUS)
    assert verdict == "unverified"
    assert "mlx5_0/1's port GUID reads 0x946dae0300cde72c in ibstat, 0x00155dfffd3411eb in ibstatus" in actual
    assert "reads 400 Gb/s" not in actual


def test_a_field_cut_short_gives_way_to_the_whole_listing(tmp_path: Path) -> None:
    """The A100 ibstat cut inside mlx5_7's `Rate: 200`, as `Rate: 2` (all after it removed),
    beside the box's whole ibstatus. Before: unverified, "mlx5_7 port 1 reads 2 Gb/s in ibstat,
    200 Gb/s in ibstatus"; the cut record's rate gives way: the ibstatus alone passes 8x200."""
    text = IBSTAT.read_text()
    at = text.index("Rate: 200", text.index("CA 'mlx5_7'"))
    (tmp_path / "ibstat.txt").write_text(text[: at + len("Rate: 2")])
    (tmp_path / "ibstatus.txt").write_text(IBSTATUS.read_text())
    both = rdma("8x200", tmp_path / "ibstat.txt", tmp_path / "ibstatus.txt")
    assert both == ("pass", "8 of 9 port(s) ACTIVE at >= 200 Gb/s")


def test_a_verbs_listing_of_no_device_beside_a_sysfs_one_is_verbs_that_cannot_open_the_ports() -> None:
    """The real ibv_devinfo `No IB devices found` beside the A100 box's whole ibstatus (both files
    as they are). One box gives this where ib_uverbs is not loaded or /dev/infiniband is not
    passed to the container: ibstatus reads sysfs, ibv_devinfo opens the verbs devices. Before:
    unverified "the RDMA port listings disagree ... (two boxes' outputs ...)"; base: pass. Now:
    the ports are there but verbs (NCCL) cannot open them: warn, never a pass, no "two boxes"."""
    verdict, actual = rdma("8x200", IBSTATUS, NO_DEVICE)
    assert verdict == "warn"
    assert "ibv_devinfo (verbs) does not list mlx5_0/1" in actual
    assert "two boxes" not in actual
