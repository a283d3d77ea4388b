"""The `rdma_ports` rule on an ibstat listing that is not whole: one narrowed to a device by its
copied command (lshca#79's `# ibstat  mlx5_2`) is named so, before the port record it cuts; a
port whose record the listing ends inside (Mooncake#1999's mlx5_10, cut after `Physical state`)
is called cut (an incomplete probe), not a port whose link layer is merely unknown, and decides
no order it could make up. Real captures: tests/fixtures/real/SOURCES.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from ...offline_judge import verdicts

REAL = Path(__file__).parents[3] / "fixtures" / "real"
ONE_DEVICE = "ibstat__mlx5_2-one-device-cut-at-port-guid__lshca-79.txt"
CUT = "ibstat__3ca-roce-cut-inside-mlx5_10__mooncake-1999.txt"


def _rdma(tmp_path: Path, name: str, text: str, rdma: str) -> tuple[str, str]:
    return verdicts(tmp_path, name, text, f'order:\n  rdma: "{rdma}"\n')["rdma_ports"]


def test_a_listing_narrowed_to_one_device_names_the_narrowing(tmp_path: Path) -> None:
    """The capture under its copied command line (put back): before, only "mlx5_2 port 1 has no
    link layer line" was said, as if the listing were whole but for that."""
    text = "# ibstat  mlx5_2\n" + (REAL / ONE_DEVICE).read_text()
    verdict, actual = _rdma(tmp_path, ONE_DEVICE, text, "1x100G RoCE")
    assert verdict == "unverified"
    assert "incomplete probe: `ibstat  mlx5_2` lists only the devices or ports it asked for;" in actual
    assert "mlx5_2 port 1 has no link layer line" in actual


def test_a_port_cut_inside_its_record_is_called_cut(tmp_path: Path) -> None:
    """Before: "link layer not known: mlx5_10/1", never said to be cut."""
    verdict, actual = _rdma(tmp_path, CUT, (REAL / CUT).read_text(), "2x200G RoCE")
    assert verdict == "pass"  # (the two whole ports make up the order whatever the cut left out)
    assert "cut inside its record (incomplete probe): mlx5_10/1 (down, link layer not read)" in actual
    assert "link layer not known" not in actual


@pytest.mark.parametrize("rdma", ["3x200G RoCE", "3x100G"])
def test_an_order_the_cut_port_could_decide_is_not_passed(tmp_path: Path, rdma: str) -> None:
    verdict, actual = _rdma(tmp_path, CUT, (REAL / CUT).read_text(), rdma)
    assert verdict == "unverified", actual
    assert "incomplete probe: mlx5_10 port 1 has no rate line" in actual


NCCL_1935 = "ibstatus__6ca-all-down-disabled__cut-inside-mlx5_6__nccl-1935.txt"


def test_a_cut_listing_names_the_ports_read_down_above_the_cut(tmp_path: Path) -> None:
    """Round 30 (nccl1935): NVIDIA/nccl#1935's ibstatus as stored, from mlx5_11 to mlx5_6's
    record cut inside `phys state`, every port DOWN / Disabled. Unverified (the ports not listed
    are not known), but the four whole InfiniBand ports read DOWN were not named (only the
    Ethernet mlx5_2 and the cut mlx5_6): now each is."""
    verdict, actual = _rdma(tmp_path, "ibstatus.txt", (REAL / NCCL_1935).read_text(), "8x200G InfiniBand")
    assert verdict == "unverified", actual
    assert "cut inside its record (incomplete probe): mlx5_6/1" in actual
    for device in ("mlx5_11", "mlx5_3", "mlx5_4", "mlx5_5"):
        assert f"{device}/1 DOWN (Disabled) InfiniBand" in actual, actual
