"""The frames a page or a log daemon puts around a saved output, as the output: a GitHub
comment's `<details>` section (undetailed), an RFC 5424 syslog header (rfc5424_unframed), a
Kubernetes component's log record quoting it as a multi-line value (klog_unquoted). Used by the
paste normaliser (api/paste.py)."""

from __future__ import annotations

import re

from gpuonboard.api import transcript
from gpuonboard.facts.kernel_shapes import rfc5424_unframed

__all__ = ["klog_quoter", "klog_unquoted", "rfc5424_unframed", "undetailed"]

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


# a klog record (the log of a Kubernetes component or controller, `I0903 19:44:11.116529  1
# file.go:39] "message" key=value ...`) whose last value is a multi-line string: its head line ends
# `key=<`, each line of the value follows behind one tab, and a line ` >` closes it (klog since
# Kubernetes 1.24: "the < and > markers along with indentation"); a controller that logs another
# program's output (a pod's log tail: `nvidia-smi`'s table, a `--query-gpu` CSV) quotes it so
_KLOG_HEAD = re.compile(r"[IWEF]\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ [^\s:\]]+:\d+\] .*[\w.-]=<[ \t]*")
_KLOG_END = re.compile(r" >[ \t]*")


def klog_unquoted(text: str) -> str:
    """A klog record's multi-line value (_KLOG_HEAD: a head line ending `key=<`, the value's lines
    behind a tab each, then ` >`) as the lines it quotes, the record's head and closing line
    dropped; lines outside such a record kept as they are. Before, a `--query-gpu` CSV and an
    nvidia-smi table a controller logged so (behind a CI log's stamps too: llm-d-incubation/
    llm-d-fast-model-actuation#720) were read under the record's head: the table's banner was
    taken for a quote in a log, its driver version not judged."""
    if "=<" not in text:
        return text
    lines = text.split("\n")
    out: list[str] = []
    at = 0
    while at < len(lines):
        line = lines[at]
        at += 1
        if not (_KLOG_HEAD.fullmatch(line) and at < len(lines) and lines[at].startswith("\t")):
            out.append(line)
            continue
        while at < len(lines) and (lines[at].startswith("\t") or _blank_inside(lines, at)):
            out.append(lines[at][1:] if lines[at].startswith("\t") else "")
            at += 1
        at += at < len(lines) and _KLOG_END.fullmatch(lines[at]) is not None
    return "\n".join(out)


def klog_quoter(text: str) -> str:
    """The message of the first klog record in `text` whose multi-line value quotes lines
    (`"Fetched tail of log of instance"`, its head's words between `] ` and its first key), ""
    where none: what klog_unquoted reads from it is a container's log the component fetched."""
    lines = text.split("\n")
    for at, line in enumerate(lines[:-1]):
        if _KLOG_HEAD.fullmatch(line) and lines[at + 1].startswith("\t"):
            message = _KLOG_MESSAGE.search(line)
            return message.group(1) if message else line.split("] ", 1)[-1][:60]
    return ""


# a klog head's message: quoted (structured logging) or its first word
_KLOG_MESSAGE = re.compile(r"\] (\"[^\"]*\"|\S+)")


def _blank_inside(lines: list[str], at: int) -> bool:
    """Line `at` is blank and a value's line (behind its tab) follows: a blank line of the value
    whose tab a copy trimmed."""
    return not lines[at].strip() and at + 1 < len(lines) and lines[at + 1].startswith("\t")
