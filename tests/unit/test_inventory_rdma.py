"""The order's `rdma` field: "8x400G" -> (8, 400.0), a bad value is one sentence naming the field."""

from pathlib import Path

import pytest

from gpuonboard.api.offline import load_order
from gpuonboard.errors import InventoryError
from gpuonboard.inventory import parse_rdma


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("8x400G", (8, 400.0)),
        ("8 x 400Gbps", (8, 400.0)),
        ("2x200Gb/s", (2, 200.0)),
        ("1X100g", (1, 100.0)),
        ("4*25Gbit", (4, 25.0)),
    ],
)
def test_parse_rdma(text: str, want: tuple[int, float]) -> None:
    assert parse_rdma(text) == want


@pytest.mark.parametrize("bad", ["8x400", "400G", "eightx400G", "0x400G", "8x0G", 8, None])
def test_parse_rdma_refuses(bad: object) -> None:
    with pytest.raises(ValueError):
        parse_rdma(bad)


def test_order_file_rdma_loaded(tmp_path: Path) -> None:
    f = tmp_path / "order.yml"
    f.write_text('order:\n  gpu_model: H100 80GB SXM\n  rdma: "8x400G"\n')
    assert load_order(str(f)).rdma == (8, 400.0)


def test_order_file_bad_rdma_names_file_line_and_field(tmp_path: Path) -> None:
    f = tmp_path / "order.yml"
    f.write_text("order:\n  gpu_count: 8\n  rdma: 8x400\n")
    with pytest.raises(InventoryError) as err:
        load_order(str(f))
    msg = str(err.value)
    assert str(f) in msg and "'rdma'" in msg and '"8x400G"' in msg and "line 3" in msg
    assert msg.count(".") >= 1 and "\n" not in msg
