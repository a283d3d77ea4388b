"""A saved `free` whose unit neither its file's name nor its content tells: a file named for
plain `free` (`free.txt`) whose Mem total is plausible RAM in KiB and in MiB is read as the
range between the two readings, never as the KiB one alone (a `free -m` of a 1 TiB box,
`Mem: 1031694`, was read as 1007.5 MiB and failed `ram` as missing DIMMs). Real captures:
tests/fixtures/real/SOURCES.md, section "Truth sweep round 25 (pasted host tools)"."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuonboard.facts import memory

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
# `free -m` of a 1024 GiB VM (1031694 MiB) and of a ~1 TiB container (1031892 MiB: its
# /proc/meminfo's MemTotal 1056657496 kB), each saved without its command line
TIB_VM = "free-m__1tib-vm-hugepages__martins3-notes.txt"
TIB_CONTAINER = "free-m__1tib-container__meminfo-1056657496kb__agent-session.txt"
# plain `free` (KiB) of a 2 GiB VM: 2017300 KiB, also 1.9 TiB in MiB
SMALL_VM = "free__ubuntu-18.04-vm.txt"


def ram(tmp_path: Path, name: str, text: str, order: str) -> tuple[str, str]:
    return verdicts(tmp_path, name, text, f"ram: {order}")["ram"]


@pytest.mark.parametrize("capture", [TIB_VM, TIB_CONTAINER])
def test_free_m_of_a_big_box_saved_as_free_txt_never_fails_as_missing_ram(
    tmp_path: Path, capture: str
) -> None:
    text = (REAL / capture).read_text()
    assert ram(tmp_path, "free-m.txt", text, "1TB")[0] == "pass"  # named: 1007.5 GiB
    verdict, actual = ram(tmp_path, "free.txt", text, "1TB")
    assert verdict == "unverified", actual
    assert "MiB (1.1 GB) as plain free (KiB), 1007." in actual and "GiB as free -m" in actual
    # a file's name, a command copied above it, or the order met in KiB too, still settle it
    assert ram(tmp_path, "free.txt", "$ free -m\n" + text, "1TB")[0] == "pass"
    assert ram(tmp_path, "free.txt", text, "512MB")[0] == "pass"  # (1007 MiB, in either unit)
    assert ram(tmp_path, "free.txt", text, "2TB")[0] == "fail"  # (short in either unit)


def test_plain_free_of_a_small_box_still_passes_and_fails_by_its_kib(tmp_path: Path) -> None:
    """The 2 GiB VM's plain `free` as free.txt: a 2 GB order passes on its KiB; a 4 GB order
    fails on it only where a flag says KiB (free-k.txt). Its Swap total, 2097148, read as MiB is
    2 TiB of swap, as a 1.9 TiB box given swap equal to its RAM shows in a real `free -m`: the
    swap settles no unit (round 38, review S F1), so the 4 GB order is unverified, naming both
    readings, as with that Swap row zeroed."""
    text = (REAL / SMALL_VM).read_text()
    assert ram(tmp_path, "free.txt", text, "2GB")[0] == "pass"
    verdict, actual = ram(tmp_path, "free.txt", text, "4GB")
    assert verdict == "unverified" and "as plain free (KiB)" in actual and "as free -m" in actual, actual
    assert ram(tmp_path, "free-k.txt", text, "4GB")[0] == "fail"
    assert ram(tmp_path, "free.txt", _no_swap(text), "4GB")[0] == "unverified"


def _no_swap(text: str) -> str:
    """A free output with its Swap row's numbers made 0 (a box without swap)."""
    return re.sub(r"(?m)^(Swap:.*)$", lambda m: re.sub(r"\d+", "0", m.group(1)), text)


@pytest.mark.parametrize(
    ("name", "prompt"),
    [
        ("free.txt", "user@vm:~$ free\n"),
        ("free.txt", "$ sudo free\n"),
        ("free.txt", "$ /usr/bin/free\n"),
        ("free-w.txt", ""),  # (-w, -t: flags that set no unit)
        ("free-t.txt", ""),
        ("free -w.txt", ""),
    ],
)
def test_free_with_no_unit_flag_copied_or_named_is_read_in_kib(
    tmp_path: Path, name: str, prompt: str
) -> None:
    """The 2 GiB VM's plain `free` (its Swap row zeroed in-test, so that only the command or the
    name tells) under a copied command that runs free with no unit flag, or named for free with
    a flag that sets none: free prints KiB, so an 8 GB order fails (it was unverified: "1.9 TiB
    as free -m: which of the two is not known ..."). A `cat free.txt` above it tells nothing."""
    text = _no_swap((REAL / SMALL_VM).read_text())
    assert ram(tmp_path, name, prompt + text, "8GB") == ("fail", "1.9 GiB (2.1 GB)")
    assert ram(tmp_path, "free.txt", "$ cat free.txt\n" + text, "8GB")[0] == "unverified"


def test_the_kib_or_mib_reading_is_a_range_of_the_memory_info() -> None:
    text = (REAL / TIB_VM).read_text()
    info = memory.parse_free(memory.free_as_kib("free.txt", text))
    assert info.unit_unsure and info.total_bytes == 1031694 * 1024
    assert info.total_bytes + info.total_spread[1] == 1031694 * 1024**2
    assert not memory.parse_free(memory.free_as_kib("free-m.txt", text)).unit_unsure


@pytest.mark.parametrize("command", ["$ free -wm", "$ free -mw", "$ sudo free -tm"])
def test_a_unit_in_a_cluster_of_free_options_is_read(tmp_path: Path, command: str) -> None:
    """The 1 TiB VM's `free -m` (Mem: 1031694) under a copied command whose unit flag shares
    its word with another (`-wm`): read as MiB, 1007.5 GiB, it passes 1 TB (a unit letter was
    read only first in its word, and a command running free without a unit read is KiB)."""
    text = command + "\n" + (REAL / TIB_VM).read_text()
    assert ram(tmp_path, "free.txt", text, "1TB") == ("pass", "1007.5 GiB (1.1 TB)")


@pytest.mark.parametrize(
    ("capture", "order"),
    [(TIB_VM, "512MB"), ("free__procps-3.2-8gib-kib__unit-not-told__wjhsh-leomei91.txt", "8GB")],
)
def test_a_free_txt_of_either_unit_says_plainly_why_both_readings_are_shown(
    tmp_path: Path, capture: str, order: str
) -> None:
    """The pass of a free.txt whose unit is not told (measure31d 21, an old procps free of 8 GiB:
    "7.7 GiB (8.3 GB) as plain free (KiB), 7.7 TiB as free -m: the file's name says no flag",
    cryptic) says plainly that the unit is not known and that the order is met either way."""
    text = (REAL / capture).read_text()
    verdict, actual = ram(tmp_path, "free.txt", text, order)
    assert verdict == "pass", actual
    assert actual.endswith(
        "as free -m: which of the two is not known (neither the file's name nor a command line saved"
        " with it gives free's flag); the order is met either way"
    ), actual
    assert "says no flag" not in actual
