"""Two saved RDMA port listings of one box in two formats (`ibstat` and `ibstatus`, `ibv_devinfo`)
each answer what the other does not (ibstat stops at a device it cannot open, ibstatus lists it;
ibv_devinfo without -v has no rate), so a folder or a saved session holding both is judged on both,
merged (facts/infiniband.merge_listings), where it used to be refused as "a second rdma_ports
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
    assert any("two rdma_ports outputs of the box in two formats, each read and merged" in n for n in notes)


def test_two_listings_that_disagree_on_a_port_leave_it_unknown(tmp_path: Path) -> None:
    """The ibstatus with mlx5_3's state edited to `1: DOWN` (taken at another time than the
    ibstat, the port flapped between them): that port is neither counted up nor called down, so 8
    ports at 200 are not known (unverified, naming the disagreement), never a pass or a fail."""
    text = IBSTATUS.read_text()
    head = "Infiniband device 'mlx5_3' port 1 status:"
    at = text.index(head)
    block_end = text.index("\n\n", at)
    edited = text[:at] + text[at:block_end].replace("4: ACTIVE", "1: DOWN") + text[block_end:]
    (tmp_path / "ibstatus.txt").write_text(edited)
    (tmp_path / "ibstat.txt").write_text(IBSTAT.read_text())
    verdict, actual = rdma("8x200", tmp_path / "ibstat.txt", tmp_path / "ibstatus.txt")
    assert verdict == "unverified"
    assert "mlx5_3 port 1 reads ACTIVE in ibstat, DOWN in ibstatus" in actual


def test_two_listings_in_one_format_stay_refused(tmp_path: Path) -> None:
    """Two ibstatus outputs are rivals (a narrower view or a later state), not two formats."""
    (tmp_path / "a.txt").write_text(IBSTATUS.read_text())
    (tmp_path / "b.txt").write_text(IBSTATUS.read_text().replace("4: ACTIVE", "1: DOWN", 1))
    with pytest.raises(UsageError, match="a second rdma_ports output"):
        offline.load_outputs([str(tmp_path)])
