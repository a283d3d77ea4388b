"""RAM orders in binary sizes everywhere they are read and shown: `ram: 0.5TB` is 512 GiB (it
loaded as 5 * 10^11 bytes, which the rule, the report's order row and `invoke inventory`
then read as 500 GiB), `1.5TB` 1536 GiB, `512GB` 512 GiB."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gpuonboard import inventory
from gpuonboard.api.offline import load_order
from gpuonboard.connection.gather import parse_facts
from gpuonboard.errors import InventoryError
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.inventory import parse_rdma
from gpuonboard.report import render
from gpuonboard.steps.checks.acceptance import evaluate
from gpuonboard.units import parse_ram_size

FIX = Path(__file__).parents[2] / "fixtures"
GiB = 1 << 30


def _inventory(tmp_path: Path) -> Path:
    inv = tmp_path / "inv"
    inv.mkdir()
    (inv / "hosts.yml").write_text(
        textwrap.dedent(
            """\
            hosts:
              half: {address: 10.0.0.1, order: {ram: 0.5TB}}
              one-and-half: {address: 10.0.0.2, order: {ram: 1.5TB}}
              gb: {address: 10.0.0.3, order: {ram: 512GB}}
              tb: {address: 10.0.0.4, order: {ram: 1TB}}
              exact: {address: 10.0.0.5, order: {ram: 1000GiB}}
            """
        )
    )
    return inv


def _free(total_kib: int) -> ProbeOutput:
    """The real 1 x H200 VM's `free -k` with its Mem total set."""
    real = (FIX / "derived/free-k__h200-vm__derived.txt").read_text()
    return ProbeOutput(real.replace("131981020", str(total_kib), 1), "", 0)


def test_ram_orders_load_in_binary_sizes_whatever_the_fraction(tmp_path: Path) -> None:
    hosts = inventory.load(_inventory(tmp_path)).hosts
    got = {name: h.order.ram_bytes for name, h in hosts.items()}
    assert got == {
        "half": 512 * GiB,
        "one-and-half": 1536 * GiB,
        "gb": 512 * GiB,
        "tb": 1024 * GiB,
        "exact": 1000 * GiB,
    }
    assert parse_ram_size("0.5TB") == parse_ram_size("512GB") == parse_ram_size("0.5TiB")


def test_a_half_tb_order_is_judged_as_512_gib(tmp_path: Path) -> None:
    """490 GiB shown is too little for 512 GiB (floor 496.4 GiB), though enough for 500 GiB."""
    order = inventory.load(_inventory(tmp_path)).hosts["half"].order
    check = evaluate(order, parse_facts({"free": _free(490 * 2**20)}))[-1]
    assert (check.name, check.expected, check.verdict) == ("ram", ">= 512.0 GiB", "fail")
    assert evaluate(order, parse_facts({"free": _free(500 * 2**20)}))[-1].verdict == "pass"


def test_report_order_row_and_invoke_inventory_show_the_binary_size(tmp_path: Path) -> None:
    inv_dir = _inventory(tmp_path)
    order = dataclasses.asdict(inventory.load(inv_dir).hosts["half"].order)
    row = next(r for r in render.order_rows({"order": order, "facts": {}, "rules": []}) if r["key"] == "ram")
    assert "512.0 GiB" in str(row) and "500" not in str(row), row
    listing = subprocess.run(
        [
            sys.executable,
            "-c",
            "from gpuonboard.cli import main; main()",
            "inventory",
            "--inventory",
            str(inv_dir),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={"COLUMNS": "300", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert listing.returncode == 0, listing.stderr
    lines = {line.split()[1]: line for line in listing.stdout.splitlines() if line.split()[1:2]}
    assert "512.0 GiB RAM" in lines["half"] and "1.5 TiB RAM" in lines["one-and-half"], listing.stdout


def test_offline_order_file_reads_ram_in_binary(tmp_path: Path) -> None:
    order = tmp_path / "order.yml"
    order.write_text("order:\n  ram: 0.5TB\n")
    free = tmp_path / "free-k.txt"
    free.write_text(_free(490 * 2**20).stdout)
    r = subprocess.run(
        [sys.executable, "-c", "from gpuonboard.cli import main; main()", "facts", str(free)]
        + ["--order", str(order), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    rules = {x["name"]: x for x in json.loads(r.stdout)["rules"]}
    assert rules["ram"]["expected"] == ">= 512.0 GiB" and rules["ram"]["verdict"] == "fail", r.stdout
    assert r.returncode == 1


# The order's `rdma` field: "8x400G" -> (8, 400.0), a bad value is one sentence naming the field.


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


@pytest.mark.parametrize(
    "model",
    ["NVIDIA", "HGX", "NVLink", "HBM3", "80GB", "SXM", "Hopper 80GB", "8x Hopper 80GB", "Ada Lovelace"],
)
def test_an_ordered_model_of_no_model_word_is_refused_naming_the_field(tmp_path: Path, model: str) -> None:
    """`gpu_model: Hopper 80GB` (an architecture and a size), `NVIDIA`, `HGX`, `SXM`: loaded, it
    failed every box as "no GPU model in the order", or (`80GB`, `SXM`) passed any GPU of that
    size or form; now one sentence naming the file, the field and the words."""
    f = tmp_path / "order.yml"
    f.write_text(f"order:\n  gpu_count: 8\n  gpu_model: {model}\n")
    with pytest.raises(InventoryError) as err:
        load_order(str(f))
    msg = str(err.value)
    assert str(f) in msg and "'gpu_model'" in msg and "names no GPU model" in msg and "\n" not in msg


@pytest.mark.parametrize(
    "model", ["H100 80GB SXM", "TITAN V", "GB200 Grace Blackwell", "RTX PRO 6000 S", "A100-4C"]
)
def test_an_ordered_model_naming_a_model_loads(tmp_path: Path, model: str) -> None:
    f = tmp_path / "order.yml"
    f.write_text(f"order:\n  gpu_model: {model}\n")
    assert load_order(str(f)).gpu_model == model


@pytest.mark.parametrize("written", ["NVLink", "NVLINK", "PCIe", " nvlink "])
def test_an_interconnect_written_in_any_case_is_read(tmp_path: Path, written: str) -> None:
    """`interconnect: NVLink`, as people write it, was refused ("must be one of nvlink, pcie")."""
    f = tmp_path / "order.yml"
    f.write_text(f"order:\n  gpu_count: 8\n  interconnect: '{written}'\n")
    assert load_order(str(f)).interconnect == written.strip().lower()


def test_order_file_bad_rdma_names_file_line_and_field(tmp_path: Path) -> None:
    f = tmp_path / "order.yml"
    f.write_text("order:\n  gpu_count: 8\n  rdma: 8x400\n")
    with pytest.raises(InventoryError) as err:
        load_order(str(f))
    msg = str(err.value)
    assert str(f) in msg and "'rdma'" in msg and '"8x400G"' in msg and "line 3" in msg
    assert msg.count(".") >= 1 and "\n" not in msg


@pytest.mark.parametrize("model", ["A100 0GB", "A100 0 GiB SXM", "H100 00G"])
def test_an_ordered_gpu_of_0_gb_is_refused_naming_the_field(tmp_path: Path, model: str) -> None:
    """`gpu_model: A100 0GB` (a typo) was an internal error when the VRAM was judged (a division
    by the ordered size): one sentence naming the file, the field and the size."""
    f = tmp_path / "order.yml"
    f.write_text(f"order:\n  gpu_count: 8\n  gpu_model: {model}\n")
    with pytest.raises(InventoryError) as err:
        load_order(str(f))
    msg = str(err.value)
    assert str(f) in msg and "'gpu_model'" in msg and "of GPU memory" in msg and "\n" not in msg


@pytest.mark.parametrize("model", ["A100 80GB", "H100 NVL 94GB", "A10G", "RTX 3090 24GB", "L40S 48G"])
def test_real_gpu_memory_sizes_are_taken(tmp_path: Path, model: str) -> None:
    f = tmp_path / "order.yml"
    f.write_text(f"order:\n  gpu_model: {model}\n")
    assert load_order(str(f)).gpu_model == model


def test_order_file_instance_type_refused_naming_what_to_write(tmp_path: Path) -> None:
    """`gpu_model: p5.48xlarge` (an AWS instance type) loaded, and its words, in no name a driver
    prints, failed the real 8 x H100 80GB HBM3 box it names: now refused at load."""
    f = tmp_path / "order.yml"
    f.write_text("order:\n  gpu_model: p5.48xlarge\n")
    with pytest.raises(InventoryError) as err:
        load_order(str(f))
    msg = str(err.value)
    assert "line 2" in msg and "'gpu_model'" in msg and "AWS EC2 instance type" in msg and "gpu_count" in msg
