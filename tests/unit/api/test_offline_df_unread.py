"""A saved `df` whose terminal paste holds GNU df's line for a mount it could not read (`df:
/scratch: Transport endpoint is not connected`, on its stderr; df exits 1 and prints every other
filesystem) is read as the live probe reads it: the line goes back to df's stderr. Before, the
paste was refused as a df "in another language"."""

from __future__ import annotations

from pathlib import Path

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real" / "df-hT__sda2-xfs-root_sdb1-ext4-mydata.txt"


def test_the_unread_mounts_line_is_dfs_stderr(tmp_path: Path) -> None:
    text = "df: /scratch: Transport endpoint is not connected\n" + REAL.read_text()
    verdict, actual = verdicts(tmp_path, "df-hT.txt", text, "data_disk: /data")["data_disk"]
    assert verdict == "fail" and actual.startswith("/data is not a mount point"), actual
    # the ordered mount is the one df could not read: not known, never "missing"
    verdict, actual = verdicts(tmp_path, "df-hT.txt", text, "data_disk: /scratch")["data_disk"]
    assert verdict == "unverified", actual
