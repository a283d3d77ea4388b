"""Saved `df` outputs with a block-size unit (`df -BG`, `df -B GB`, `df -B KiB`: GNU df prints
the unit after every cell) are read, not taken as an unknown size that fails the data disk;
a size df leaves out (`-`) is said in one sentence, with the output to save instead."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpuonboard.facts import disks

# Layout and cells of GNU coreutils 9 `df` on a real VM (the /dev/vda line), the data-disk line
# (a 14 TiB NVMe partition) written in the same units.
DF_OUTPUTS = {
    "-BG": (
        "Filesystem     1G-blocks  Used Available Use% Mounted on\n"
        "/dev/vda            252G   43G       60G  42% /\n"
        "/dev/nvme2n1p1    14306G    1G    14305G   1% /data\n",
        14306 << 30,
    ),
    "-B GB": (
        "Filesystem     1GB-blocks  Used Available Use% Mounted on\n"
        "/dev/vda            271GB  46GB      64GB  42% /\n"
        "/dev/nvme2n1p1    15362GB   1GB   15361GB   1% /data\n",
        15362 * 10**9,
    ),
    "-B KiB": (
        "Filesystem      1KiB-blocks        Used   Available Use% Mounted on\n"
        "/dev/vda       264212084KiB 44409916KiB 61980996KiB  42% /\n"
        "/dev/nvme2n1p1 15001927168KiB 28KiB 15001927140KiB 1% /data\n",
        15001927168 << 10,
    ),
}


@pytest.mark.parametrize("flag", sorted(DF_OUTPUTS))
def test_df_with_a_block_unit_is_read(flag: str) -> None:
    text, size = DF_OUTPUTS[flag]
    data = disks.mount_for(disks.parse_df(text), "/data")
    assert data is not None and data.size_bytes == size and data.avail_bytes is not None


def _facts(tmp_path: Path, df_text: str, min_size: str) -> dict[str, dict[str, str]]:
    (tmp_path / "df.txt").write_text(df_text)
    order = tmp_path / "order.yml"
    order.write_text(f"order:\n  data_disk: {{mount: /data, min_size: {min_size}}}\n")
    r = subprocess.run(
        [sys.executable, "-c", "from gpuonboard.cli import main; main()", "facts", str(tmp_path / "df.txt")]
        + ["--order", str(order), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert r.returncode in (0, 1), r.stderr
    return {x["name"]: x for x in json.loads(r.stdout)["rules"]}


def test_offline_data_disk_size_from_df_bg_is_judged(tmp_path: Path) -> None:
    """15.4 TB meets a 15TB order (it was `unknown` and failed); 17TB is too much for it."""
    rule = _facts(tmp_path, DF_OUTPUTS["-BG"][0], "15TB")["data_disk"]
    assert rule["actual"] == "/dev/nvme2n1p1 at /data, 15.4 TB" and rule["verdict"] != "fail", rule
    rule = _facts(tmp_path, DF_OUTPUTS["-BG"][0], "17TB")["data_disk"]
    assert rule["verdict"] == "fail", rule


def test_a_size_df_does_not_give_is_said_with_what_to_save(tmp_path: Path) -> None:
    text = (
        "Filesystem     1K-blocks     Used Available Use% Mounted on\n"
        "/dev/vda       264212084 44409916  61980996  42% /\n"
        "/dev/nvme2n1p1         -        -         -    - /data\n"
    )
    rule = _facts(tmp_path, text, "7TB")["data_disk"]
    assert rule["verdict"] == "warn", rule
    assert rule["detail"] == (
        "the size of /data could not be read from the df output; save `df -P -B1` or `df -P -k` to judge it"
    )
