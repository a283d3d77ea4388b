"""An order's `rdma` as vendors write it (inventory/rdma_order.py): ports x rate with the fabric
named (`8x400G InfiniBand`) or told by a word (NDR, RoCE v2, GbE), a NIC model word kept as not
checked; a rate with no port count (`3.2 Tbps InfiniBand`) refused naming what to write."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api.offline import load_order
from gpuonboard.errors import InventoryError
from gpuonboard.inventory.rdma_order import ETHERNET, INFINIBAND, RdmaOrder, parse_rdma_order


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("8x400G", RdmaOrder(8, 400.0)),
        ("8x400G InfiniBand", RdmaOrder(8, 400.0, INFINIBAND)),
        ("8x400Gb/s IB", RdmaOrder(8, 400.0, INFINIBAND)),
        ("8x400G (NDR, InfiniBand)", RdmaOrder(8, 400.0, INFINIBAND)),
        ("8x ConnectX-7 400Gb/s NDR", RdmaOrder(8, 400.0, INFINIBAND, "ConnectX-7")),
        ("8 x NVIDIA ConnectX-7 400G InfiniBand", RdmaOrder(8, 400.0, INFINIBAND, "NVIDIA ConnectX-7")),
        ("8x400G NDR400", RdmaOrder(8, 400.0, INFINIBAND)),
        ("4x200G (4X HDR)", RdmaOrder(4, 200.0, INFINIBAND)),
        ("2x100G RoCE v2", RdmaOrder(2, 100.0, ETHERNET)),
        ("2x100G RoCEv2", RdmaOrder(2, 100.0, ETHERNET)),
        ("1x400G Ethernet", RdmaOrder(1, 400.0, ETHERNET)),
        ("8x200GbE", RdmaOrder(8, 200.0, ETHERNET)),
        ("8x1.6T", RdmaOrder(8, 1600.0)),
        # each InfiniBand generation at its 4X rate (ibstat's `Rate: 40` of a 4X FDR10 port), and
        # at another width: 1X NDR is 100 Gb/s (mlx5 reports NDR at 1X, 2X and 4X)
        ("2x40G FDR10", RdmaOrder(2, 40.0, INFINIBAND)),
        ("2x40G (4X FDR10)", RdmaOrder(2, 40.0, INFINIBAND)),
        ("4x40G QDR", RdmaOrder(4, 40.0, INFINIBAND)),
        ("4x20G DDR", RdmaOrder(4, 20.0, INFINIBAND)),
        ("4x10G SDR", RdmaOrder(4, 10.0, INFINIBAND)),
        ("4x56G FDR", RdmaOrder(4, 56.0, INFINIBAND)),
        ("8x100G HDR100", RdmaOrder(8, 100.0, INFINIBAND)),
        ("8x200G NDR200", RdmaOrder(8, 200.0, INFINIBAND)),
        ("8x100G NDR", RdmaOrder(8, 100.0, INFINIBAND)),
        ("8x800G XDR", RdmaOrder(8, 800.0, INFINIBAND)),
    ],
)
def test_rdma_order_vendor_forms(text: str, want: RdmaOrder) -> None:
    assert parse_rdma_order(text) == want


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("3.2 Tbps InfiniBand", "one rate (3200 Gb/s) and no port count"),
        ("3.2 Tbps InfiniBand", '"8x400G InfiniBand"'),
        ("RoCE v2 100G", '"1x100G RoCE"'),
        ("8x400G NDR RoCE", "names InfiniBand ('NDR') and Ethernet ('RoCE') both"),
        ("8x200G NDR400", "the rate 200 Gb/s and the speed word's 400 Gb/s disagree"),
        ("8x50GB/s", "a rate in bytes"),
        ("8x50GB/s InfiniBand", '"8x400G" if 50 GB/s a port was meant'),  # (a fabric word after it)
        ("8x NDR", '"8x400G InfiniBand"'),
        # a count or InfiniBand's link width (`4X HDR`): not told
        ("4x HDR200", "may be the port count or the link width"),
        ("4x HDR200", '"4x200G InfiniBand"'),
        # a rate no port of the generation runs at: one sentence naming both
        ("8x400G EDR", "400 Gb/s and 'EDR' disagree, as InfiniBand EDR runs 25 Gb/s a lane"),
        ("8x400G EDR", '"8x100G EDR"'),
        ("8x400G FDR", "400 Gb/s and 'FDR' disagree, as InfiniBand FDR runs 14 Gb/s a lane"),
        ("8x100G FDR10", "100 Gb/s and 'FDR10' disagree"),
        ("8x300G NDR300", "300 Gb/s and 'NDR300' disagree"),
    ],
)
def test_rdma_order_refused_naming_what_to_write(text: str, said: str) -> None:
    with pytest.raises(ValueError, match=None) as err:
        parse_rdma_order(text)
    assert said in str(err.value)


def test_order_file_rdma_fabric_loaded(tmp_path: Path) -> None:
    f = tmp_path / "order.yml"
    f.write_text('order:\n  rdma: "8x ConnectX-7 400Gb/s NDR"\n')
    spec = load_order(str(f))
    assert (spec.rdma, spec.rdma_layer, spec.rdma_nic) == ((8, 400.0), INFINIBAND, "ConnectX-7")


def test_order_file_rdma_total_refused_with_its_line(tmp_path: Path) -> None:
    f = tmp_path / "order.yml"
    f.write_text('order:\n  gpu_count: 8\n  rdma: "3.2 Tbps InfiniBand"\n')
    with pytest.raises(InventoryError) as err:
        load_order(str(f))
    assert "line 3" in str(err.value) and "'rdma'" in str(err.value) and "8x400G InfiniBand" in str(err.value)


@pytest.mark.parametrize(
    ("interconnect", "example"),
    [
        ("RoCE v2", '"2x100G RoCE"'),
        ("100GbE", '"2x100G RoCE"'),
        ("Infiniband NDR", '"8x400G InfiniBand"'),
        ("IB", '"8x400G InfiniBand"'),
        ("NVSwitch", None),  # (no fabric named: no `rdma` hint)
    ],
)
def test_interconnect_naming_a_fabric_points_to_rdma(
    tmp_path: Path, interconnect: str, example: str | None
) -> None:
    """`interconnect` is the link between the GPUs; a fabric written there, as `rdma` reads its
    words, is pointed to `rdma` with an example of the fabric written."""
    f = tmp_path / "order.yml"
    f.write_text(f"order:\n  interconnect: {interconnect}\n")
    with pytest.raises(InventoryError) as err:
        load_order(str(f))
    said = str(err.value)
    if example is None:
        assert "`rdma`" not in said
    else:
        assert f"the RDMA fabric goes in `rdma` with its ports and rate, like {example}." in said


@pytest.mark.parametrize("memory", ["DDR5", "DDR4", "GDDR6", "LPDDR5"])
def test_rdma_order_memory_word_is_not_a_generation(memory: str) -> None:
    """A memory word (`DDR5`: a generation word and one digit) is not InfiniBand's DDR: an order
    `8x400G RoCE (DDR5 host)` is refused as words it cannot read, never as naming both fabrics;
    `fabric_named` reads the RoCE alone."""
    from gpuonboard.inventory.rdma_order import fabric_named

    with pytest.raises(ValueError) as err:
        parse_rdma_order(f"8x400G RoCE ({memory} host)")
    assert "both" not in str(err.value) and 'must be ports x rate like "8x400G"' in str(err.value)
    assert fabric_named(f"RoCE v2, {memory} memory") == ETHERNET
    assert fabric_named(f"{memory} memory") is None
    assert parse_rdma_order("8x200G HDR200").layer == INFINIBAND  # (a generation's number still read)
