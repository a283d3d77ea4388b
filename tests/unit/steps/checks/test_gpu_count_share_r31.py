"""gpu_count's advice where the login sees a share of a bigger machine's GPUs (round 31): a
`nvidia-smi -q` / `-q -x` inside a container given one GPU of an 8-GPU machine says `Attached
GPUs : 1`, but keeps its GPU's `Minor Number : 4` (/dev/nvidia4). The count stays a fail; the
advice no longer asks the vendor to install 7 GPUs the machine has, but to give them to the
login. The inputs are real 1-GPU captures with their minor number set to 4, as nvidia-smi
prints it in such a container (no public capture of that case was found)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuonboard.api import offline

REAL = Path(__file__).parents[3] / "fixtures" / "real"
Q = "nvidia-smi-q__a10__1gpu__driver535.129.03.txt"
QX = "nvidia-smi-q-x__a10g__1gpu__driver515.105.01__aws-passthrough.xml"
EIGHT = "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt"


def _gpu_count(tmp_path: Path, name: str, text: str, ordered: int) -> tuple[str, str]:
    (tmp_path / "order.yml").write_text(f"gpu_count: {ordered}\n")
    (tmp_path / name).write_text(text)
    facts = offline.parse_facts(offline.load_outputs([str(tmp_path / name)]))
    row = next(
        c
        for c in offline.judge(facts, offline.load_order(str(tmp_path / "order.yml")))
        if c.name == "gpu_count"
    )
    return row.verdict, row.detail


@pytest.mark.parametrize(
    ("name", "was", "now"),
    [
        (Q, "    Minor Number                          : 0", "    Minor Number                          : 4"),
        (QX, "<minor_number>0</minor_number>", "<minor_number>4</minor_number>"),
    ],
)
def test_one_gpu_of_a_bigger_machine_is_asked_for_not_installed(
    tmp_path: Path, name: str, was: str, now: str
) -> None:
    """Before: "7 of the 8 ordered GPUs missing; ask the vendor to install them or for the box
    that was ordered"."""
    text = (REAL / name).read_text()
    assert was in text
    verdict, detail = _gpu_count(tmp_path, name, text.replace(was, now), 8)
    assert verdict == "fail"
    assert detail.startswith("7 of the 8 ordered GPUs missing; this login sees 1 of the machine's GPUs")
    assert "minor number is 4: the machine has at least 5" in detail
    assert "give the rest of the ordered GPUs to this login or container, not to install them" in detail


@pytest.mark.parametrize(("name", "ordered"), [(Q, 8), (QX, 8), (EIGHT, 16)])
def test_gpus_numbered_from_0_are_asked_to_be_installed(tmp_path: Path, name: str, ordered: int) -> None:
    """A listing whose minor numbers are those of the GPUs listed (0, or 0 to 7) shows no GPU
    beyond them: the vendor is asked to install the missing ones, as before."""
    verdict, detail = _gpu_count(tmp_path, name, (REAL / name).read_text(), ordered)
    assert verdict == "fail" and "ask the vendor to install them" in detail and "this login" not in detail


def _without_minor(text: str, gone: set[int]) -> str:
    """The real 8x H100 `-q` less the GPUs whose minor numbers are `gone` (as nvidia-smi lists
    a machine one of whose GPUs failed or fell off the bus: its record and count gone, the other
    GPUs keeping their minor numbers)."""
    head, *blocks = re.split(r"(?m)^(?=GPU [0-9A-F]{8}:)", text)
    kept = [b for b in blocks if int(re.search(r"Minor Number\s+: (\d+)", b)[1]) not in gone]  # type: ignore[index]
    head = re.sub(r"(Attached GPUs\s+: )\d+", rf"\g<1>{len(kept)}", head)
    return head + "".join(kept)


@pytest.mark.parametrize(
    ("gone", "said"), [({3}, "skip 3 (/dev/nvidia3)"), ({2, 5}, "skip 2, 5 (/dev/nvidia2 ...)")]
)
def test_a_gap_in_minor_numbers_from_0_is_a_missing_gpu_not_a_share(
    tmp_path: Path, gone: set[int], said: str
) -> None:
    """revE d3: the machine's 8 GPUs with minor 3's gone (failed, off the bus) listed 7 with minor
    numbers 0-2 and 4-7: the advice asked to give "the rest" to this login, not to install them;
    a gap from 0 names the missing number and asks for a repair or a replacement."""
    text = _without_minor((REAL / EIGHT).read_text(), gone)
    verdict, detail = _gpu_count(tmp_path, "nvidia-smi-q.txt", text, 8)
    assert verdict == "fail"
    assert f"the minor numbers listed {said}" in detail, detail
    assert "repair or replace" in detail and "this login" not in detail, detail


def test_contiguous_minor_numbers_above_0_are_still_a_share(tmp_path: Path) -> None:
    """Minor numbers 4-7 of the 8 (a container given half the machine): the share wording."""
    text = _without_minor((REAL / EIGHT).read_text(), {0, 1, 2, 3})
    verdict, detail = _gpu_count(tmp_path, "nvidia-smi-q.txt", text, 8)
    assert verdict == "fail" and "this login sees 4 of the machine's GPUs" in detail, detail
    assert "skip" not in detail
