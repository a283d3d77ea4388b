"""facts/joined_entries.py: the readers of nvidia-smi's GPU-headed listings cut a line a chat
joined where the next entry begins. Every real `nvidia-smi nvlink -s` (and `-L`) whose lines a
chat joined (all into one, every two, every two from the second) reads as the capture itself.
Before (round 32), `nvlink -s` read no link of a joined line (`Link 0: 25.781 GB/s Link 1: ...`
one link line not read, the next glued to it): the V100's 4 of 6 active links read as `0 of the
2 links listed active`, a fail on links the listing shows up."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts.gpu_list import parse_gpu_list
from gpuonboard.facts.nvlink import parse_nvlink_status

REAL = Path(__file__).parents[2] / "fixtures" / "real"


def _joined(text: str, how: str) -> str:
    lines = text.split("\n")
    if how == "all":
        return text.replace("\n", " ")
    start = 0 if how == "pairs" else 1
    return "\n".join([*lines[:start], *(" ".join(lines[i : i + 2]) for i in range(start, len(lines), 2))])


@pytest.mark.parametrize("how", ["all", "pairs", "pairs-from-second"])
def test_every_real_nvlink_status_a_chat_joined_reads_as_itself(how: str) -> None:
    names = sorted(p.name for p in REAL.glob("nvidia-smi-nvlink-s*"))
    wrong = []
    for name in names:
        text = (REAL / name).read_text(encoding="utf-8")
        whole, got = parse_nvlink_status(text), parse_nvlink_status(_joined(text, how))
        if [(g.index, g.uuid, g.links, g.note) for g in got.gpus] != [
            (g.index, g.uuid, g.links, g.note) for g in whole.gpus
        ]:
            wrong.append(f"{name}: {got.warnings[:1]}")
    assert len(names) >= 10 and not wrong, "\n".join(wrong)


@pytest.mark.parametrize("how", ["all", "pairs", "pairs-from-second"])
def test_every_real_gpu_listing_a_chat_joined_reads_as_itself(how: str) -> None:
    # (not a listing under a lost GPU's message and a login's env line (round 36): the message's
    # `Unknown Error` is no entry's end, so a GPU line joined onto it is not cut back apart and is
    # refused with a sentence, as facts/test_paste_kinds.py leaves it out; its lines apart read
    # in api/test_list_past_lost_gpu_r36.py)
    names = sorted(p.name for p in REAL.glob("nvidia-smi-L__*") if "-no-device-handle__" not in p.name)
    wrong = []
    for name in names:
        text = (REAL / name).read_text(encoding="utf-8").rstrip() + "\n"
        got = parse_gpu_list(_joined(text, how).rstrip() + "\n")
        if got.gpus != parse_gpu_list(text).gpus:
            wrong.append(name)
    assert len(names) >= 10 and not wrong, "\n".join(wrong)
