"""A saved `free` printed under `--si` (`free -h --si`, `free --mega`: powers of 1000, or of 1024
by procps version) is read as the range between the two readings, never in binary powers alone
(a `112G` of `free -h --si` was read as 112 GiB on a box whose `free -m` shows 110.0 GiB, and
passed an order of 115 GiB the `free -m` fails). Real captures: tests/fixtures/real/SOURCES.md,
section "free under --si"."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts import memory

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
# one dev container on a 24 GiB-GPU training box: `free -m` (112682 MiB, 110.0 GiB) and
# `free -h --si` (`112G`: procps 3.3.17 divided MiB by 1000)
BOX_M = "free-m__devcontainer-110gib__vit-notes.txt"
BOX_SI = "free-h-si__devcontainer-110gib__procps-si-mib-per-1000__vit-notes.txt"
# one Ubuntu 16.04 desktop (procps-ng 3.3.10): `free -b` 8353525760, `free --mega` 8157 (KiB over
# 1000), `free -h --si` 8.2G
DESK_B = "free-b__desktop-7.8gib__ubuntu-16.04-forum.txt"
DESK_MEGA = "free--mega__desktop-7.8gib__procps-kib-per-1000__ubuntu-16.04-forum.txt"
DESK_SI = "free-h-si__desktop-7.8gib__ubuntu-16.04-forum.txt"


def ram(tmp_path: Path, name: str, text: str, order: str) -> tuple[str, str]:
    return verdicts(tmp_path, name, text, f"ram: {order}")["ram"]


@pytest.mark.parametrize(
    ("name", "prompt"),
    [(BOX_SI, ""), ("free.txt", "$ free -h --si\n"), ("free-h.txt", "$ free --si -h\n")],
)
def test_si_total_never_passes_what_the_exact_output_fails(tmp_path: Path, name: str, prompt: str) -> None:
    text = prompt + (REAL / BOX_SI).read_text()
    assert ram(tmp_path, BOX_M, (REAL / BOX_M).read_text(), "115GB")[0] == "fail"  # 110.0 GiB
    verdict, actual = ram(tmp_path, name, text, "115GB")  # 111.3 GiB needed
    assert verdict == "unverified", actual
    assert actual.endswith("free prints it under --si: between 104.3 GiB and 113.0 GiB")
    assert ram(tmp_path, name, text, "128GB")[0] == "fail"  # more than 113 GiB needed
    assert ram(tmp_path, name, text, "100GB")[0] == "pass"  # 96.7 GiB needed: less than 112 GB


@pytest.mark.parametrize("name", [DESK_MEGA, DESK_SI])
def test_procps_si_readings_hold_the_bytes(tmp_path: Path, name: str) -> None:
    """The `free -b` of the same desktop: 8353525760 bytes (7.78 GiB) lies in each range read, and
    an order of 8.3 GiB (7.80 GiB needed), which that `free -b` fails, is not passed."""
    exact = ram(tmp_path, DESK_B, (REAL / DESK_B).read_text(), "8.3GB")
    assert exact[0] == "fail", exact
    text = (REAL / name).read_text()
    info = memory.parse_free(memory.free_as_kib(name, text))
    low, high = info.total_bytes - info.total_spread[0], info.total_bytes + info.total_spread[1]
    assert info.si and low <= 8353525760 <= high
    assert ram(tmp_path, name, text, "8.3GB")[0] == "unverified"


@pytest.mark.parametrize(
    ("name", "command", "si"),
    [
        ("free.txt", "free -h --si", True),
        ("free --giga.txt", "", True),
        ("free-g-si.txt", "", True),
        ("free-h__si-cluster.txt", "", False),  # (a description after `__` is not a flag)
        ("free-h.txt", "free -h", False),
        ("free_sift.txt", "", False),
        ("desk__free-h-si.txt", "", True),  # (a host's name before the tool's)
        ("mega-node_free-m.txt", "", False),  # (a host's name is no flag)
        ("tera__free.txt", "free -m", False),
        ("x.txt", "free -s 0.5 -c 1 --si -h", True),  # (a command's `0.5 ` is no file extension)
        ("x.txt", "free -g | tee giga.txt", False),  # (the next command's words are not free's)
        ("x.txt", "uptime; free -h --si", True),
    ],
)
def test_si_flag_from_command_or_name(name: str, command: str, si: bool) -> None:
    assert memory.free_si(name, command) is si


def test_bytes_stay_exact_under_si() -> None:
    """`free -b --si`: bytes are bytes (procps: "in bytes, which can not be in SI")."""
    text = (REAL / DESK_B).read_text()
    info = memory.parse_free(memory.free_as_kib("free.txt", text, "free -b --si"))
    assert info.total_bytes == 8353525760 // 1024 * 1024 and info.total_spread == (0, 0)


def test_a_host_name_before_the_tool_neither_hides_nor_makes_the_flag(tmp_path: Path) -> None:
    """Only the words from `free` on are read: `desk__free-h-si.txt` is `--si` (it passed the
    8.3 GiB order its box's `free -b` fails), `mega-node_free-m.txt` is not (`mega` is the host's:
    the exact 110.0 GiB passes a 110 GB order, as the same file named `free-m.txt` does)."""
    si = ram(tmp_path, "desk__free-h-si.txt", (REAL / DESK_SI).read_text(), "8.3GB")
    assert si[0] == "unverified", si
    exact = ram(tmp_path, "mega-node_free-m.txt", (REAL / BOX_M).read_text(), "110GB")
    assert exact[0] == "pass", exact
