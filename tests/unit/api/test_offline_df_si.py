"""A saved `df -H` / `--si` (SI powers under the same `Size` header as `df -h`) is read in powers
of 1000 when its copied command or its file name says so (round 13: a real `df -TH` share of
19 GB was read as 19 GiB, 20.4 GB, and passed a 20 GB order's size). Real capture:
tests/fixtures/real/SOURCES.md, round 12."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api.saved_forms import df_si
from gpuonboard.facts import disks

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
NAME = "df-TH__zh-cn__nfs4-19g-si__elided.txt"
PROMPT = " [root@example-com /]# df -TH\n"


def judged(tmp_path: Path, name: str, text: str, size: str) -> tuple[str, str]:
    order = f"data_disk: {{mount: /public_mount, min_size: {size}}}"
    return verdicts(tmp_path, name, text, order)["data_disk"]


@pytest.mark.parametrize(
    ("name", "prompt"),
    [
        ("df.txt", PROMPT),
        ("df-H.txt", ""),
        ("df --si.txt", ""),
        ("df-TH.txt", ""),
        ("node7__df-H.txt", ""),  # (a host's name before the tool's)
        ("df.txt", "$ df -h /mnt/data.vol1 --si\n"),  # (a path's `.vol1 ` is no file extension)
        ("df.txt", "$ df -H > df.out\n"),
    ],
)
def test_df_h_upper_is_read_in_powers_of_1000(tmp_path: Path, name: str, prompt: str) -> None:
    text = prompt + (REAL / NAME).read_text()
    verdict, actual = judged(tmp_path, name, text, "20.5GB")  # 19.5 GB needed: more than 19 GB
    assert verdict == "fail", actual
    assert actual.startswith("192.168.247.128:/public at /public_mount, 19.0 GB")
    assert judged(tmp_path, name, text, "19GB")[0] != "fail"  # 18.05 GB needed: within 18-19 GB


def test_without_a_word_of_si_it_stays_df_h() -> None:
    """The same text read as `df -h` (no command, a plain name): binary, as df -h prints."""
    mount = disks.parse_df((REAL / NAME).read_text())[0]
    assert mount.size_bytes == 19 * 2**30 and mount.size_step == 2**30
    si = disks.parse_df(disks.df_as_si((REAL / NAME).read_text()))[0]
    assert si.size_bytes == 19 * 10**9 and si.size_step == 10**9
    assert si.used_bytes == 3.5 * 10**9


def test_a_network_share_is_said_to_be_one(tmp_path: Path) -> None:
    """An NFS export at the ordered mount: lsblk never lists one, so "could not tell whether
    it is on another physical disk than / ... lsblk does not show both" asked for what cannot
    be given (round 13); it is a network share, said so. With a size ordered it is unverified:
    df shows the share's whole size, not a quota rented on it (round 17)."""
    text = PROMPT + (REAL / NAME).read_text()
    verdict, actual = judged(tmp_path, "df.txt", text, "10GB")
    assert verdict == "unverified"
    assert actual == "192.168.247.128:/public at /public_mount, 19.0 GB (a network share, nfs4)"


@pytest.mark.parametrize(
    ("command", "si"),
    [
        ("df -h && free --si", False),  # (the `--si` is free's: df printed binary powers)
        ("df -h & free --si", False),
        ("df -H && free -h", True),
        ("df 2>/dev/null -H", True),  # (a redirection's target is no flag, the words after it are)
        ('df -h "/mnt/x|y" --si', True),  # (a quoted `|` is the path's)
        ("uptime;df -H", True),
        ("echo a|df -H", True),
        ("(df -H)", True),
    ],
)
def test_the_flags_are_those_of_dfs_own_command(command: str, si: bool) -> None:
    assert df_si("df.txt", command) is si
