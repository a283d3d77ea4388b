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


ALP = (
    Path(__file__).parents[2]
    / "fixtures"
    / "real"
    / "df-alP__rhel6-satellite__bin-df-no-such-file-lines__insights-core.txt"
)


def test_dfs_own_lines_named_by_its_path_are_its_stderr(tmp_path: Path) -> None:
    """insights-core's DF_ALP, a `df -alP` whose paste starts with df's own lines as it names
    itself when run by path (`/bin/df: '/vobs/GEMS': No such file or directory`), verbatim. It
    was refused as a df run "in a language other than English"; those lines are df's stderr, the
    table is read, and /data fails as it does with them removed."""
    text = ALP.read_text()
    without = "".join(line for line in text.splitlines(keepends=True) if "/bin/df:" not in line)
    for name, saved in (("with", text), ("without", without)):
        (tmp_path / name).mkdir()
        verdict, actual = verdicts(tmp_path / name, "df-alP.txt", saved, "data_disk: /data")["data_disk"]
        assert verdict == "fail" and actual.startswith("/data is not a mount point"), actual
    # a mount df named as not read is not known, never "missing"
    (tmp_path / "vobs").mkdir()
    verdict, actual = verdicts(tmp_path / "vobs", "df-alP.txt", text, "data_disk: /vobs/GEMS")["data_disk"]
    assert verdict == "unverified", actual
