"""The frames a page or a log daemon puts around a saved output, as the output: a GitHub
comment's `<details>` section (undetailed), an RFC 5424 syslog header (rfc5424_unframed).
Used by the paste normaliser (api/paste.py)."""

from __future__ import annotations

import re

from gpuonboard.api import transcript
from gpuonboard.facts.kernel_shapes import rfc5424_unframed

__all__ = ["rfc5424_unframed", "undetailed"]

# a GitHub comment's collapsible section around a paste: `<details>` (`<details open>`), its
# `<summary>...</summary>` (on that line or the next filled one: group 1 its text), `</details>`;
# no tool read here prints a `details` tag (nvidia-smi -q -x's fabric health has a `<summary>`
# element of its own: a summary line counts only as a `<details>` line's)
_DETAILS = re.compile(
    r"^[ \t]*<details(?:[ \t][^<>\n]*)?>[ \t]*(?:<summary>([^\n]*?)</summary>[ \t]*)?$", re.IGNORECASE
)
_SUMMARY = re.compile(r"^[ \t]*<summary>([^\n]*?)</summary>[ \t]*$", re.IGNORECASE)
_DETAILS_END = re.compile(r"^[ \t]*</details>[ \t]*$", re.IGNORECASE)


def undetailed(text: str) -> str:
    """A paste inside a GitHub comment's `<details>` section as the output without its
    `<details>` and `</details>` lines, the summary's text (`<summary>sudo dmesg -T | grep -i
    nvrm</summary>`, `Output of lscpu`: one naming a command read here) a line of its own above
    it, read as any command or label line above an output is (a summary of words alone,
    `Click to expand`, dropped). Before, the tags were read as the output's lines (a 3-line SXid
    log so wrapped was no short log read after boot: gpu_xid passed where the log alone is
    unverified; a table's was refused); then (round 31) the summary was dropped with them, so a
    grep'd log read as the whole log (nvswitch_sxid passed), and so was every `<summary>` line
    (an nvidia-smi -q -x's fabric health summary)."""
    if "<details" not in text.lower():
        return text
    out: list[str] = []
    opened = False  # (a `<details>` line above, its summary not yet seen)
    for line in text.split("\n"):
        summary = None
        if (m := _DETAILS.match(line)) is not None:
            opened, summary = m.group(1) is None, m.group(1)
        elif opened and (m := _SUMMARY.match(line)) is not None:
            opened, summary = False, m.group(1)
        elif _DETAILS_END.match(line):
            opened = False
            continue
        else:
            opened = opened and not line.strip()
            out.append(line)
            continue
        if summary and transcript.names_tool(summary):
            out.append(summary.strip())  # (`Click to expand`, `output`: dropped)
    return "\n".join(out)
