"""An lsblk given alone whose device at the ordered mount proves nothing of the file system on
it: data_disk said "not judged: no df output was given", where the table was read and judged; it
names the device and why its file system's size is not known (measure31b 06: an Azure VM's
resource disk, MicrosoftDocs/azure-docs#72921)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REAL = Path(__file__).parents[3] / "fixtures" / "real"
AZURE = "lsblk__azure-vm-sdb1-80g-mnt-resource-nvme-1.8t__no-fstype__azure-docs-72921.txt"


@pytest.mark.parametrize(
    ("ordered", "why"),
    [
        (
            "80GB",
            "lsblk shows the device at /mnt/resource as large as ordered, but not the file system on it",
        ),
        (
            "1TB",
            "smaller than ordered, but the file system on it (lsblk shows no FSTYPE) may span other devices",
        ),
    ],
)
def test_an_lsblk_alone_says_what_it_shows(tmp_path: Path, ordered: str, why: str) -> None:
    (tmp_path / "lsblk.txt").write_text("> [root@TravTempDrive trav]# lsblk\n" + (REAL / AZURE).read_text())
    (tmp_path / "order.yml").write_text(f"data_disk: {{mount: /mnt/resource, min_size: {ordered}}}\n")
    cmd = [sys.executable, "-c", "from gpuonboard.cli import main; main()", "facts", "--json"]
    r = subprocess.run(
        [*cmd, str(tmp_path / "lsblk.txt"), "--order", str(tmp_path / "order.yml")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    check = next(c for c in json.loads(r.stdout)["rules"] if c["name"] == "data_disk")
    assert check["verdict"] == "unverified"
    assert check["actual"] == (
        "sdb1 at /mnt/resource, 85.8 GB to 86.0 GB, as lsblk rounds it (lsblk, no df given; its file"
        " system's size not known)"
    )
    assert why in check["detail"] and check["detail"].endswith("save `df -P -k` of the box to judge it")
