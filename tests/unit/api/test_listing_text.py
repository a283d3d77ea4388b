"""What `invoke inventory` shows a newcomer for the order and the target they wrote: the order
as the rules judge it (a count written into the model, VRAM in the binary units it is read in)
and an IPv6 address with its port told apart."""

from __future__ import annotations

from pathlib import Path

from gpuonboard import inventory
from gpuonboard.api.listing import order_text, target_text


def _host(tmp_path: Path, text: str, name: str = "g1") -> inventory.Host:
    (tmp_path / "hosts.yml").write_text(text)
    return inventory.load(tmp_path / "hosts.yml").hosts[name]


def test_a_count_written_into_the_model_is_shown_as_the_count(tmp_path: Path) -> None:
    # (was `? x 8x A100 80GB`: the rules read 8 GPUs from it, see model_match.split_count)
    h = _host(tmp_path, "hosts:\n  g1: {address: 10.0.0.1, order: {gpu_model: 8x A100 80GB}}\n")
    assert order_text(h.order) == "8 x A100 80GB"
    h = _host(tmp_path, "hosts:\n  g1: {address: 10.0.0.1, order: {gpu_model: A100, gpu_count: 4}}\n")
    assert order_text(h.order) == "4 x A100"


def test_vram_is_shown_in_the_units_it_is_read_in(tmp_path: Path) -> None:
    # `vram: 80 GB` is read as 80 GiB, like ram (was shown as `85.9 GB VRAM`)
    order = "{gpu_model: A100, vram: 80 GB, ram: 512G}"
    h = _host(tmp_path, f"hosts:\n  g1: {{address: 10.0.0.1, order: {order}}}\n")
    assert order_text(h.order) == "? x A100, 80.0 GiB VRAM, 512.0 GiB RAM"


def test_an_ipv6_target_keeps_its_port_apart(tmp_path: Path) -> None:
    (tmp_path / "hosts.ini").write_text("[gpus]\n[2001:db8::7]:2200\n10.0.0.7:2222\n")
    hosts = inventory.load(tmp_path / "hosts.ini").hosts
    assert target_text(hosts["2001:db8::7"]) == "root@[2001:db8::7]:2200"  # (was root@2001:db8::7:2200)
    assert target_text(hosts["10.0.0.7"]) == "root@10.0.0.7:2222"
