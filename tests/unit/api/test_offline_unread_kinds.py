"""`invoke facts` on real outputs it used to misjudge: a `df -i` (no sizes) is refused with one
sentence, a tool's own "no RDMA device" is read as that, and translated `free` / `df` (zh_CN) are
judged like English ones."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.connection.gather import parse_facts
from gpuonboard.errors import UsageError
from gpuonboard.inventory import DataDiskSpec, OrderSpec

REAL = Path(__file__).parents[2] / "fixtures" / "real"


def judged(order: OrderSpec, *names: str) -> dict[str, tuple[str, str]]:
    facts = parse_facts(offline.load_outputs([",".join(str(REAL / n) for n in names)]))
    return {c.name: (c.verdict, c.actual) for c in offline.judge(facts, order)}


def test_df_i_is_refused_naming_the_file_and_what_to_save() -> None:
    path = REAL / "df-i__sda2-xfs-root_sdb1-ext4-mydata.txt"
    with pytest.raises(UsageError) as err:
        offline.load_outputs([str(path)])
    assert str(err.value) == (
        f"{path}: this df output has no size column (`df -i` counts inodes), so no disk size can"
        " be read from it; save `df -P -k` (or `df -h`) of the box instead."
    )
    assert err.value.exit_code == 2
    # the `df -hT` of the same box is judged
    order = OrderSpec(data_disk=DataDiskSpec("/mydata/data", 9 * 10**9))
    assert judged(order, "df-hT__sda2-xfs-root_sdb1-ext4-mydata.txt")["data_disk"][0] == "pass"


@pytest.mark.parametrize(
    "name", ["ibv_devinfo__no-ib-devices.txt", "ibstat__no-ib-device__ibpanic-mthca0.txt"]
)
def test_no_rdma_device_fails_an_rdma_order(name: str) -> None:
    assert offline.detect_kind((REAL / name).read_text()) == "rdma_ports"
    assert judged(OrderSpec(rdma=(1, 100.0)), name)["rdma_ports"] == ("fail", "no RDMA device found")


def test_zh_cn_free_and_df_are_judged() -> None:
    order = OrderSpec(ram_bytes=2**30, data_disk=DataDiskSpec("/data", 500 * 10**9))
    rules = judged(order, "free-h__zh-cn__3.8gi.txt", "df-h__zh-cn__vda1-80g-root_vdb1-500g-data.txt")
    assert rules["ram"] == ("pass", "3.8 GiB (4.1 GB)")
    assert rules["data_disk"][0] == "pass" and rules["data_disk"][1].startswith("/dev/vdb1 at /data")
    g = judged(OrderSpec(ram_bytes=5 * 2**30), "free-g__zh-cn__3gib.txt")["ram"]
    assert g == ("fail", "3.0 GiB (3.2 GB)")  # 3 GiB is read (free -g, by its name), not 3 KiB


def test_the_cli_exits_1_on_a_box_without_the_ordered_rdma(tmp_path: Path) -> None:
    order = tmp_path / "order.yml"
    order.write_text('order: {rdma: "1x100G"}\n')
    cmd = [sys.executable, "-c", "from gpuonboard.cli import main; main()", "facts", "--json"]
    r = subprocess.run(
        [*cmd, "--order", str(order), str(REAL / "ibv_devinfo__no-ib-devices.txt")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 1, r.stderr
    rules = {c["name"]: c for c in json.loads(r.stdout)["rules"]}
    assert rules["rdma_ports"]["verdict"] == "fail"
