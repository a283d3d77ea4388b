"""A saved `nvidia-bug-report.log`: the file NVIDIA's `nvidia-bug-report.sh` writes (vendors and
NVIDIA support ask for it; users attach it to issues), read as the outputs of one box it holds.

The script writes sections, each below a line of underscores (`____________________________________________`),
headed by what it holds (nvidia-bug-report.sh of drivers 390 to 580; the 2009-2011 ones too):

    *** /proc/cpuinfo                       (append: a file, then `*** ls: -r--r--r-- ...` of it)
    *** /var/log/nvidia-installer.log does not exist
    /proc/meminfo                           (before 2012: the file's path alone)
    dmesg:                                  (the kernel log, `dmesg` as it printed it)
    /usr/bin/nvidia-smi --query             (report_command: the command, a blank line, its output;
    /usr/bin/nvidia-smi nvlink --status      several of them in one section, no line between them)
    Skipping nvidia-smi output (nvidia-smi not found)

Each section this tool reads goes to the reader of that output (the same readers a saved file
goes through), named `FILE (nvidia-bug-report.log: nvidia-smi --query)`; the others (lspci,
dmidecode, Xorg logs, nvidia-debugdump, ...) are named in a note as not read. The script ends its
file with `End of NVIDIA bug report log file.`: a file without that line was cut short (a hung
script stopped, a copy cut), and the section it ends inside is an incomplete probe
(`ProbeOutput.partial`); the sections after it were never written, so their rules are not judged.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass

from gpuonboard.facts.probe import ProbeOutput

# the script's own lines (its prologue), in any version since 2009
_SIGNS = re.compile(r"^(?:Start of NVIDIA bug report log file\.|nvidia-bug-report\.sh Version: \S)", re.M)
_SEPARATOR = re.compile(r"^_{20,}[ \t]*$")
_END = re.compile(r"^End of NVIDIA bug report log file\.[ \t]*$", re.M)
# `*** /proc/cpuinfo` (append), `*** /path does not exist` / `is not readable`; `*** ls: ...` below it
_FILE_HEAD = re.compile(r"^(?:\*\*\* )?(/[^\s*]+)(?: (does not exist|is not readable))?[ \t]*$")
_LS_LINE = re.compile(r"^\*\*\* ls: ")
# report_command's heading: the command as the script ran it, by its path (`which nvidia-smi`)
_COMMAND_HEAD = re.compile(
    r"^(?:\*\*\* )?(/\S*/)?(nvidia-smi|ibstat|numactl|lspci|dmidecode)(?: (.*?))?[ \t]*$"
)
_SKIPPED = re.compile(r"^(?:Skipping (?:nvidia-smi|nvidia-smi, vulkaninfo).*|Skipping: nvidia-smi output)")

# what each section is read as: (its heading's name in sentences, the kinds its output may be)
_FILES = {
    "/proc/cpuinfo": ("lscpu",),
    "/proc/meminfo": ("free",),
    "/etc/os-release": ("os_release",),
    "/usr/lib/os-release": ("os_release",),
}
_NVIDIA_SMI = {
    "--query": ("nvidia_smi",),
    "-q": ("nvidia_smi",),
    "-q -x": ("nvidia_smi",),
    "--query --xml-format": ("nvidia_smi",),
    "nvlink --status": ("nvidia_nvlink",),
    "nvlink -s": ("nvidia_nvlink",),
    "nvlink --errorcounters": ("nvidia_nvlink_errors",),
    "nvlink -e": ("nvidia_nvlink_errors",),
}
_OTHERS = {"ibstat": ("rdma_ports",), "numactl -H": ("numactl",)}

# (path, where, kind, text, warned, copied, command) -> (kind, output): offline._read_as
ReadAs = Callable[[str, str, str, str, str, str, str], tuple[str, ProbeOutput]]
# text -> kind: saved_kinds.detect_kind
Detect = Callable[[str], "str | None"]


# the section of the script's grep of the kernel logs for NVRM lines, and its parts' headings:
# `  /var/log/messages:` (a file of several boots, its boot lines grepped away: not read) and
# `  journalctl -b -1:` (`journalctl -b $boot | grep -e NVRM -e nvidia- ...`)
# the prologue's `uname: Linux gpu01 6.8.0-57-generic #59-Ubuntu ...` (`uname -a`): the release
_UNAME = re.compile(r"^uname: \S+ \S+ (\d\S*)", re.M)
_SCANNING = "Scanning kernel log files for NVIDIA kernel messages:"
_SCANNED = re.compile(r"^\s+(journalctl -b (-\d+)|/\S+):\s*$")


@dataclass(frozen=True)
class Section:
    """One output the log holds: its heading's name (`nvidia-smi --query`, `/proc/cpuinfo`), the
    kinds it may be read as (none: not read), its text, whether the file ends inside it, and the
    command that printed it where the script narrowed it (its grep of an earlier boot's journal)."""

    name: str
    kinds: tuple[str, ...]
    text: str
    cut: bool = False
    command: str = ""


def _scanned(lines: list[str]) -> list[Section]:
    """The script's grep of the kernel logs, one part per log: an earlier boot's journal
    (`journalctl -b -1:`) read as that boot's kernel log narrowed by the grep (its faults are
    history); this boot's (`-b -0`, the dmesg section's boot) and the log files (boots not told
    apart once grepped) named, not read."""
    found: list[Section] = []
    for line in lines:
        if head := _SCANNED.match(line):
            boot = head.group(2)
            earlier = boot is not None and boot != "-0"
            command = f"journalctl -b {boot} | grep -e NVRM -e nvidia-" if earlier else ""
            found.append(
                Section(
                    f"{head.group(1)} | grep NVRM", ("kernel_log",) if earlier else (), "", command=command
                )
            )
        elif found and line.strip():
            found[-1] = dataclasses.replace(found[-1], text=found[-1].text + line + "\n")
    return found


def looks_like_bug_report(text: str) -> bool:
    """The script's prologue, or two of its file sections (`*** /proc/...`) below its separators
    (a part of the log pasted without its first lines)."""
    if _SIGNS.search(text[:20000]):
        return True
    lines = text.split("\n")
    heads = sum(
        1
        for i, line in enumerate(lines[:-2])
        if _SEPARATOR.match(line) and not lines[i + 1].strip() and lines[i + 2].startswith("*** /")
    )
    return heads >= 2


def _pieces(lines: list[str]) -> list[list[str]]:
    """One separator's lines split at each command heading below a blank line (report_command
    prints several commands' outputs in one section: `--query`, `--query --unit`, `nvlink ...`)."""
    out: list[list[str]] = [[]]
    for i, line in enumerate(lines):
        blank_above = i == 0 or not lines[i - 1].strip()
        if out[-1] and blank_above and _COMMAND_HEAD.match(line) and any(s.strip() for s in out[-1]):
            out.append([])
        out[-1].append(line)
    return out


def _named(lines: list[str]) -> tuple[str, tuple[str, ...], str] | None:
    """A piece's heading's name, the kinds it is read as, and its output's text (None: no text)."""
    while lines and not lines[0].strip():
        lines = lines[1:]
    if not lines:
        return None
    head, body = lines[0].strip(), lines[1:]
    if head == "dmesg:":
        return "dmesg", ("kernel_log",), "\n".join(body).strip("\n") + "\n"
    if command := _COMMAND_HEAD.match(head):
        tool, args = command.group(2), " ".join((command.group(3) or "").split())
        name = f"{tool} {args}".strip()
        kinds = _NVIDIA_SMI.get(args, ()) if tool == "nvidia-smi" else _OTHERS.get(name, ())
        return name, kinds, "\n".join(body).strip("\n") + "\n"
    if file := _FILE_HEAD.match(head):
        if file.group(2):
            return f"{file.group(1)} ({file.group(2)})", (), ""
        body = body[1:] if body and _LS_LINE.match(body[0]) else body
        return file.group(1), _FILES.get(file.group(1), ()), "\n".join(body).strip("\n") + "\n"
    return head.rstrip(":"), (), "\n".join(body)


def sections(text: str) -> tuple[list[Section], bool]:
    """The log's sections in order, and whether the file is whole (its `End of ...` line there)."""
    whole = bool(_END.search(text))
    chunks: list[list[str]] = [[]]
    for line in text.split("\n"):
        if _SEPARATOR.match(line):
            chunks.append([])
        else:
            chunks[-1].append(line)
    found: list[Section] = []
    for chunk in chunks[1:] if len(chunks) > 1 else chunks:
        for piece in _pieces(chunk):
            if (named := _named(piece)) is None:
                continue
            scanned = _scanned(named[2].split("\n")) if named[0] == _SCANNING.rstrip(":") else []
            found += scanned or [Section(*named)]
            if named[0].startswith("Start of NVIDIA bug report") and (uname := _UNAME.search(named[2])):
                found.append(Section("uname line", ("kernel",), uname.group(1) + "\n"))
    if not whole and found:
        last = found[-1]
        cut_text = last.text.rstrip("\n") if text.endswith("\n") else last.text
        found[-1] = dataclasses.replace(last, text=cut_text, cut=True)
    return found, whole


def _cut_reason(what: str) -> str:
    return (
        f"the nvidia-bug-report.log ends inside its {what} section, without the script's last line"
        " (`End of NVIDIA bug report log file.`): cut short, an incomplete output"
    )


def outputs(
    path: str, text: str, read_as: ReadAs, detect: Detect, notes: list[str]
) -> list[tuple[str, ProbeOutput, str]]:
    """The outputs the log holds, each read as the live probe's: (kind, output, where), one note
    of what was read, what not, and whether the log is cut short."""
    found, whole = sections(text)
    out: list[tuple[str, ProbeOutput, str]] = []
    read: list[str] = []
    unread: list[str] = []
    seen: set[str] = set()
    for part in found:
        if part.name.startswith(("Start of NVIDIA bug report", "End of NVIDIA bug report")):
            continue  # (the script's own first and last lines)
        kind = detect(part.text) if part.kinds and part.text.strip() else None
        if part.kinds == ("kernel",):  # (a release, no output of a command of its own)
            out.append(
                ("kernel", ProbeOutput(part.text, "", 0), f"{path} (nvidia-bug-report.log: uname line)")
            )
            read.append(part.name)
            continue
        if kind is None or kind not in part.kinds or (kind in seen and not part.command):
            name = f"{part.name} (printed nothing)" if part.kinds and not part.text.strip() else part.name
            if name not in unread and part.name not in read:
                unread.append(name)
            continue
        where = f"{path} (nvidia-bug-report.log: {part.name})"
        kind, probe = read_as(path, where, kind, part.text, "", part.command, part.command)
        if part.cut:
            probe = dataclasses.replace(probe, partial=probe.partial or _cut_reason(part.name))
        seen |= set() if part.command else {kind}  # (an earlier boot's log goes beside this boot's)
        out.append((kind, probe, where))
        read.append(part.name)
    notes.append(_said(path, read, unread, whole, found))
    return out


def _said(path: str, read: list[str], unread: list[str], whole: bool, found: list[Section]) -> str:
    """The note on a log: the sections read, those not (a few named), and a cut."""
    shown = ", ".join(unread[:8]) + (f" and {len(unread) - 8} more" if len(unread) > 8 else "")
    said = f"{path}: an nvidia-bug-report.log, read as its {', '.join(read) or 'no section'}"
    if unread:
        said += f"; {len(unread)} section{'s' if len(unread) != 1 else ''} not read ({shown})"
    if not whole:
        last = found[-1].name if found else "first"
        said += (
            f"; the file ends inside its {last} section without the script's last line (`End of NVIDIA"
            " bug report log file.`): cut short, so that section is incomplete and those after it"
            " were never written"
        )
    return said + "."
