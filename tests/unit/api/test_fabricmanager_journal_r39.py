"""A saved journal of the NVIDIA fabric manager (`nv-fabricmanager[PID]:`,
`nvidia-fabricmanager-start.sh[PID]:`, systemd's lines about `nvidia-fabricmanager.service`) is
refused naming the fabric manager, quoting its own cause line whole before systemd's generic
`status=1/FAILURE`, saying what `NV_WARN_NOTHING_TO_DO` means and what `fabric_manager` reads
(measure39c 10, 11: it quoted systemd's line, or cut the quote inside `[NV_`). A quote in such a
sentence is cut at a word's end.

Real captures: tests/fixtures/real/SOURCES.md (NVIDIA/gpu-operator #610, data-infra/cube-studio #29)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.api.journal_refusal import journal_without_kernel
from gpuonboard.errors import UsageError

REAL = Path(__file__).parents[2] / "fixtures" / "real"
GPU_OPERATOR = REAL / (
    "journalctl-u-nvidia-fabricmanager__nothing-to-do-no-nvswitch__zh-locale-month__a40x2__gpu-operator-610.txt"
)
CUBE = REAL / (
    "journalctl-u-nvidia-fabricmanager__start-sh-pre-nvl5-nothing-to-do__content-begin-end-markers"
    "__rtx4090x2__cube-studio-29.txt"
)
PERSISTENCED = REAL / (
    "journalctl-u-nvidia-persistenced__failed-to-query-devices-first-char-cut__rocky-615-hami-notes.txt"
)
CAUSE = (
    "request to query NVSwitch device information from NVSwitch driver failed with error:WARNING"
    " Nothing to do [NV_WARN_NOTHING_TO_DO]"
)


def _refusal(tmp_path: Path, text: str) -> str:
    saved = tmp_path / "journal.txt"
    saved.write_text(text)
    with pytest.raises(UsageError) as refused:
        offline.load_outputs([str(saved)])
    return str(refused.value)


@pytest.mark.parametrize("path", [GPU_OPERATOR, CUBE])
def test_a_fabric_manager_journal_is_named_with_its_own_cause(tmp_path: Path, path: Path) -> None:
    said = _refusal(tmp_path, path.read_text())
    assert "an nvidia-fabricmanager journal" in said, said
    assert "not a recognised command output" not in said, said
    # (its own cause, whole, quoted first: never systemd's summary before it, never `[NV_` cut)
    assert f"it shows `{CAUSE}`" in said, said
    assert "found no NVSwitch" in said and "expected on a box without NVSwitches" in said, said
    assert "a fault on an NVSwitch box" in said, said
    assert "`systemctl is-active nvidia-fabricmanager` saved in a file named *fabric*" in said, said
    assert "`nvidia-smi -q`" in said, said


def test_the_same_journal_in_iso_form_and_re_spaced_is_read_alike(tmp_path: Path) -> None:
    # (`journalctl -o short-iso`, the message's blanks doubled: the same lines, another print)
    text = re.sub(r"^11月 15 14:15:47", "2022-11-15T14:15:47+0800", GPU_OPERATOR.read_text(), flags=re.M)
    text = text.replace("Nothing to do", "Nothing  to  do")
    said = _refusal(tmp_path, text)
    assert "an nvidia-fabricmanager journal" in said, said
    assert "[NV_WARN_NOTHING_TO_DO]`" in said, said


def test_a_long_cause_is_cut_at_a_words_end() -> None:
    text = GPU_OPERATOR.read_text().replace("request to query", "request " + "to query " * 20)
    said = journal_without_kernel(text) or ""
    quoted = said.split("it shows `")[1].split("`")[0]
    assert quoted.startswith("request to query to query") and quoted.endswith(" ..."), said
    assert len(quoted) <= 204 and "[NV_" not in quoted, said
    assert "found no NVSwitch" in said, said


def test_another_units_journal_keeps_its_sentence(tmp_path: Path) -> None:
    said = _refusal(tmp_path, PERSISTENCED.read_text())
    assert "a journal of other programs' lines only" in said and "fabricmanager" not in said, said
