"""A Fermi-era GDDR5 board with ECC on gives an eighth of its memory to the check bits: the real
`nvidia-smi -i 0 -q` of a Tesla M2090 (driver 270.41.19) reads `Total : 5375 Mb` of its 6 GB.
Against a 6 GB order vram is unverified, saying ECC is on, never a "smaller card" fail (review N
F3 of round 38); with ECC off, or short by more than ECC takes, it still fails."""

from __future__ import annotations

from pathlib import Path

from ...offline_judge import verdicts

REAL = Path(__file__).resolve().parents[3] / "fixtures" / "real"
M2090 = (
    "nvidia-smi-q__tesla-m2090__i0-1of2gpu__driver270.41.19__copied-command"
    "__gpu-0-2-0-head-no-processes__microway-blog.txt"
)


def _text() -> str:
    return (REAL / M2090).read_text()


def test_ecc_on_fermi_board_short_by_its_ecc_share_is_unverified(tmp_path: Path) -> None:
    verdict, actual = verdicts(tmp_path, "smi.txt", _text(), "vram: 6GB\n")["vram"]
    assert verdict == "unverified"
    assert "ECC is on (driver 270.41.19)" in actual


def test_ecc_off_the_same_total_fails(tmp_path: Path) -> None:
    text = _text()
    ecc = text.index("Ecc Mode")
    off = text[:ecc] + text[ecc:].replace("Enabled", "Disabled", 2)
    assert off != text
    assert verdicts(tmp_path, "smi.txt", off, "vram: 6GB\n")["vram"][0] == "fail"


def test_short_by_more_than_ecc_takes_fails(tmp_path: Path) -> None:
    assert verdicts(tmp_path, "smi.txt", _text(), "vram: 8GB\n")["vram"][0] == "fail"


def test_a_modern_driver_never_counts_an_ecc_share(tmp_path: Path) -> None:
    text = _text().replace("270.41.19", "470.82.01")
    assert verdicts(tmp_path, "smi.txt", text, "vram: 6GB\n")["vram"][0] == "fail"
