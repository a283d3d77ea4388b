"""A GitHub comment's `<details><summary>CMD</summary>` section around a pasted output: the
summary's text is the copied command (or a label) above the output, read as a prompt line's
command is. Before (round 31), the summary was dropped with the tags: a `dmesg | grep` log so
pasted was read as the whole log and nvswitch_sxid passed ("no SXid in the kernel log") where the
grep cannot let an SXid line through."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
LOG = "dmesg-T__xid-119-gsp-timeout__h100-dell-xe9680.txt"
COMMAND = 'sudo dmesg -T | grep -iE "edac|nvrm|taint"'
ORDER = "gpu_count: 1\n"


def _grepped() -> str:
    """The real H100 log's lines that COMMAND's grep lets through (NVRM's and the taint's)."""
    lines = (REAL / LOG).read_text(encoding="utf-8").splitlines(keepends=True)
    return "".join(line for line in lines if re.search("edac|nvrm|taint", line, re.IGNORECASE))


def _judged(folder: Path, text: str) -> dict[str, tuple[str, str]]:
    folder.mkdir()
    return verdicts(folder, "dmesg.txt", text, ORDER)


FORMS = {
    "one-line-fenced": "<details><summary>{c}</summary>\n\n```\n{t}```\n\n</details>\n",
    "own-lines-bare": "<details>\n<summary>{c}</summary>\n\n{t}</details>\n",
    "open-fenced": "<details open>\n<summary>{c}</summary>\n\n```console\n{t}```\n</details>\n",
}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_a_details_summary_is_the_copied_command(tmp_path: Path, form: str) -> None:
    """The real H100 log's lines under `<summary>sudo dmesg -T | grep ...</summary>` are judged
    as under a `$ sudo dmesg -T | grep ...` prompt line: nvswitch_sxid is not passed."""
    log = _grepped()
    prompted = _judged(tmp_path / "prompted", f"$ {COMMAND}\n{log}")
    assert prompted["nvswitch_sxid"][0] == "unverified"
    detailed = _judged(tmp_path / "details", FORMS[form].format(c=COMMAND, t=log))
    assert detailed == prompted


def test_a_details_summary_label_leaves_the_output_as_itself(tmp_path: Path) -> None:
    """A summary that is a label (`dmesg output`), not a command: the log judged as itself."""
    log = _grepped()
    whole = _judged(tmp_path / "whole", log)
    detailed = _judged(tmp_path / "details", FORMS["one-line-fenced"].format(c="dmesg output", t=log))
    assert detailed == whole


XML = "nvidia-smi-q-x__h200__1gpu__driver580.159.04.xml"  # (fabric health's own `<summary>N/A</summary>`)


def test_an_xml_s_own_summary_element_is_kept() -> None:
    """nvidia-smi -q -x's fabric health `<summary>` (R570+) is its own element, no GitHub section's:
    kept, bare and inside a `<details>` section. Before, every `<summary>...</summary>` line was
    dropped (the fabric health summary lost)."""
    from gpuonboard.api.paste import normalise

    xml = (REAL / XML).read_text(encoding="utf-8")
    assert "\t\t\t\t<summary>N/A</summary>\n" in xml
    assert "<summary>N/A</summary>" in normalise(xml)
    detailed = normalise(f"<details><summary>nvidia-smi -q -x</summary>\n\n```\n{xml}```\n</details>\n")
    assert "<summary>N/A</summary>" in detailed
