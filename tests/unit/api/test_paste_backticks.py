"""A Markdown backtick left at either end of a paste (inline code's one, or a fence's three that
lost their newline: "`<?xml ...", "```+----...", "...</nvidia_smi_log>`") is no part of the
output (api/paste.py `_unticked`): the output is read as if pasted without it.

Found by the truth sweep, round 29: KrispyCamel4u/SysMonTask#60's `nvidia-smi -q -x` of a GT 730,
pasted with a stray backtick before `<?xml`, was "nvidia-smi answered but listed no GPU (output
not recognised as any nvidia-smi format)"."""

from __future__ import annotations

import functools
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.errors import UsageError

from ..known_limits import known_limits
from ..offline_judge import verdicts
from ..shares import share

REAL = Path(__file__).parents[2] / "fixtures" / "real"
GT730 = (
    REAL
    / "nvidia-smi-q-x__geforce-gt-730__1gpu__driver460.67__stray-leading-backtick__cut__sysmontask-60.xml"
)
# (the GT 730's has a backtick of its own; the netdata -q -x is kept inside its page's `<details>`
# section, a paste already: api/test_paste_xml_lead.py)
CAPTURES = sorted(
    p.name
    for p in REAL.iterdir()
    if p.name != "SOURCES.md"
    and p.name != GT730.name
    and "details-blank-line" not in p.name
    and "fence-blank-lines" not in p.name  # (kept inside its post's fence: a paste already, round 35)
    and "gha-stamped-klog"
    not in p.name  # (framed by a CI log and a klog record: api/test_offline_csv_among.py)
    # (round 38: log lines in a Markdown note's list item and italics, a page's form already: a
    # backtick at its end hides the italics' closer; api/test_markdown_marks_r38.py judges it)
    and not p.name.startswith("notes-md__")
)
ORDER = "gpu_count: 1\ncpu_cores: 8\nram: 64GB\nmin_driver: '470.57'\ninterconnect: nvlink\n"

TICKED: dict[str, Callable[[str], str]] = {
    "backtick-before": lambda t: "`" + t,
    "backtick-after": lambda t: t.rstrip("\n") + "`\n",
    "fence-without-newlines": lambda t: "```" + t.rstrip("\n") + "```\n",
}


def test_the_gt730_xml_pasted_after_a_backtick_is_read_as_cut(tmp_path: Path) -> None:
    """The real paste as the issue stores it (its backtick kept, cut in `gpu_operation_mode`):
    the GPU is read (driver, model, count) and what the cut took is unverified as cut."""
    got = verdicts(tmp_path, "q.xml", GT730.read_text(), "gpu_model: GT 730\ngpu_count: 1\nvram: 2GB\n")
    assert got["nvidia_driver"] == ("pass", "driver 460.67, CUDA 11.2")
    assert got["gpu_count"][0] == "pass"
    assert got["vram"][0] == "unverified" and "cut off" in got["vram"][1]


def _judged(folder: Path, name: str, text: str, order: object) -> dict[str, tuple[str, str]] | None:
    """rule -> (verdict, actual) of `text` saved as `name` (None: refused with a sentence)."""
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(text, encoding="utf-8", newline="")
    try:
        facts = offline.parse_facts(offline.load_outputs([str(folder / name)]))
    except UsageError:
        return None
    return {c.name: (c.verdict, c.actual) for c in offline.judge(facts, order)}


@functools.cache
def _order() -> object:
    folder = Path(tempfile.mkdtemp())
    (folder / "order.yml").write_text(ORDER)
    return offline.load_order(str(folder / "order.yml"))


# (transform, capture) read more cautiously than as saved, never another verdict: why (known
# limits, tests/unit/known_limits.yml)
_LEFT = known_limits("paste_backticks")


@pytest.mark.parametrize("ticked", sorted(TICKED))
def test_every_real_capture_with_a_stray_backtick_is_judged_as_itself(tmp_path: Path, ticked: str) -> None:
    """Every real capture (but the GT 730's, which has its own backtick), each under one of the
    three: a backtick before its first line, one after its last, or three at each end without
    their newlines: judged as
    the capture itself, every verdict and actual the same, or refused with a sentence (an
    output known only by its file name); never another verdict."""
    moved = []
    # (each capture under one of the three, by its name: round 39, the suite's time)
    for name in share(CAPTURES, ticked, TICKED):
        if (ticked, name) in _LEFT:
            continue
        text = (REAL / name).read_text(encoding="utf-8")
        whole = _judged(tmp_path / "whole", name, text, _order())
        pasted = _judged(tmp_path / ticked, name, TICKED[ticked](text), _order())
        if whole is None or pasted is None:
            continue
        moved += [
            f"{name}: {rule} {whole.get(rule)} -> {got}"
            for rule, got in pasted.items()
            if got != whole.get(rule)
        ]
    assert not moved, "\n".join(moved[:10])


@pytest.mark.parametrize(("ticked", "name"), sorted(_LEFT))
def test_every_capture_left_is_still_a_limit(tmp_path: Path, ticked: str, name: str) -> None:
    """A capture left out (tests/unit/known_limits.yml) is still judged otherwise ticked so: where
    it is judged as itself, its entry is to be taken out."""
    text = (REAL / name).read_text(encoding="utf-8")
    whole = _judged(tmp_path / "whole", name, text, _order())
    pasted = _judged(tmp_path / ticked, name, TICKED[ticked](text), _order())
    assert whole is not None and pasted is not None, name
    assert pasted != whole, f"{ticked}, {name}: no longer a limit; take it out of known_limits.yml"
