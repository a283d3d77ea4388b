"""ram of a `free -h` / `-g` / `-m` total: procps prints a size with one decimal where that fits
in four characters, rounded, else the whole units cut off (`(long)` of the quotient), so a real
H200 VM's 125.8 GiB printed `125Gi`. A need within that rounding is unverified, never a pass or a
fail (our own captures of one second, free -h beside free -k: tests/fixtures/real/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts import memory

from ...offline_judge import details, verdicts

REAL = Path(__file__).parents[3] / "fixtures" / "real"
HUMAN = "free-h__h200-vm__procps-4.0.2.txt"
EXACT = "free-k__h200-vm__procps-4.0.2.txt"


def judged(tmp_path: Path, name: str, ram: str) -> tuple[str, str]:
    return verdicts(tmp_path, name, (REAL / name).read_text(), f"ram: {ram}")["ram"]


def test_the_cut_total_holds_the_exact_one() -> None:
    """free -h's `125Gi` and free -k's 131961976 KiB (125.85 GiB) of the same box."""
    exact = memory.parse_free((REAL / EXACT).read_text())
    human = memory.parse_free((REAL / HUMAN).read_text())
    assert exact.total_spread == (0, 0) and exact.total_bytes == 131961976 * 1024
    assert human.total_bytes == 125 * 2**30 and human.total_spread == (0, 2**30)
    less, more = human.total_spread
    assert human.total_bytes - less <= exact.total_bytes < human.total_bytes + more


@pytest.mark.parametrize(
    ("ram", "by_kib", "by_human"),
    [
        ("129GB", "pass", "pass"),  # 124.9 GiB allowed: 125Gi is at least that
        ("130GB", "fail", "unverified"),  # 125.85 GiB allowed: within 125-126 GiB (before: fail)
        ("129.9GB", "pass", "unverified"),  # 125.75 GiB allowed (before: fail, wrongly)
        ("131GB", "fail", "fail"),  # 126.8 GiB allowed: more than 126 GiB
    ],
)
def test_free_h_is_judged_as_the_exact_total_or_unverified(
    tmp_path: Path, ram: str, by_kib: str, by_human: str
) -> None:
    assert judged(tmp_path, EXACT, ram)[0] == by_kib
    assert judged(tmp_path, HUMAN, ram)[0] == by_human


def test_the_unverified_sentence_names_the_range(tmp_path: Path) -> None:
    verdict, actual = judged(tmp_path, HUMAN, "130GB")
    assert actual == "125.0 GiB (134.2 GB); free prints it rounded: between 125.0 GiB and 126.0 GiB"


def test_free_g_whole_gib_and_free_h_one_decimal() -> None:
    g = memory.parse_free(
        memory.free_as_kib("free-g__zh-cn__3gib.txt", (REAL / "free-g__zh-cn__3gib.txt").read_text())
    )
    assert g.total_bytes == 3 * 2**30 and g.total_spread == (0, 2**30)
    h = memory.parse_free((REAL / "free-h__zh-cn__3.8gi.txt").read_text())
    assert h.total_spread == (2**30 // 20, 2**30 // 20)  # 3.8Gi: 3.75-3.85 GiB
    assert memory.parse_free("      total used free\nMem: 1000 10 990\n").total_spread == (0, 0)


def test_the_shortfall_counts_from_the_most_the_total_may_be(tmp_path: Path) -> None:
    """131 GB on `125Gi`: at least 5.0 GiB less than ordered (131 - 126), not 6.0."""
    verdict, _ = judged(tmp_path, HUMAN, "131GB")
    assert verdict == "fail"
    text = (REAL / HUMAN).read_text()
    assert details(tmp_path, HUMAN, text, "ram: 131GB")["ram"].startswith(
        "at least 5.0 GiB less than ordered"
    )


def test_an_order_and_a_total_that_print_alike_get_more_decimals(tmp_path: Path) -> None:
    """`ram: 1.14TB` beside a 1.06 TiB box printed both as `1.1 TiB` beside a FAIL."""
    text = "       total  used  free  shared  buff/cache  available\nMem: 1138166333 1 1 1 1 1\n"
    checks = verdicts(tmp_path, "free-k.txt", text, "ram: 1.14TB")
    assert checks["ram"] == ("fail", "1.06 TiB (1.2 TB)")


def test_a_one_decimal_range_is_printed_so_it_reads(tmp_path: Path) -> None:
    """`3.8Gi` (a real zh_CN free -h) is 3.75-3.85 GiB: printed with one decimal the range read
    "between 3.8 GiB and 3.8 GiB" (round 13, on a `2.0Ti`)."""
    name = "free-h__zh-cn__3.8gi.txt"
    text = (REAL / name).read_text()
    verdict, actual = verdicts(tmp_path, name, text, "ram: 4.2GB")["ram"]
    assert verdict == "unverified"
    assert actual.endswith("free prints it rounded: between 3.75 GiB and 3.85 GiB")
    assert "the 3.82 GiB the order needs" in details(tmp_path, name, text, "ram: 4.2GB")["ram"]
