"""A `df` whose English header line a paste broke (cvat-ai/cvat#9608: `Files` on a line of its
own, then `> ystem      Size  Used Avail Use% Mounted on` under a mail quote) is refused in one
sentence that says so, not as a df "run in a language other than English" (round 31, fresh16)."""

from __future__ import annotations

from pathlib import Path

from .test_offline_refusals_r13 import refused

REAL = Path(__file__).parents[2] / "fixtures" / "real"
CVAT = "df-h__vda3-99g-root__mail-quoted__copied-command__header-split-files-ystem__cvat-9608.txt"


def test_a_header_the_paste_broke_is_named_as_such(tmp_path: Path) -> None:
    path = tmp_path / "df.txt"
    path.write_text((REAL / CVAT).read_text())
    said = refused(path)
    assert said == (
        f"error: {path}: rows like df's (a mount point, a use %) under a header line the paste broke"
        " (`ystem Size Used Avail Use% Mounted on`: df's English header, its `Filesystem` split across"
        " lines or lost): save the whole `df` output again (`LC_ALL=C df -P -k > df.txt` on the box)."
    ), said
    assert "language" not in said


def test_a_header_in_another_language_keeps_its_sentence(tmp_path: Path) -> None:
    path = tmp_path / "df.txt"
    path.write_text((REAL / "df-h__it-it__raspberry-pi-sd-card__markdown-line-breaks.txt").read_text())
    assert "language other than English" in refused(path)
