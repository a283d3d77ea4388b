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
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from gpuonboard.api.kind_names import kind_name
from gpuonboard.api.unread import disagreement, joined, one_session
from gpuonboard.facts.host_errors import host_errors, log_lines
from gpuonboard.facts.kernel_log import fault_key, parse_kernel_log
from gpuonboard.facts.probe import ProbeOutput

# the script's own lines (its prologue), in any version since 2009
_SIGNS = re.compile(r"^(?:Start of NVIDIA bug report log file\.|nvidia-bug-report\.sh Version: \S)", re.M)
_SEPARATOR = re.compile(r"^_{20,}[ \t]*$")
_START = re.compile(r"^Start of NVIDIA bug report log file\.")
_END = re.compile(r"^End of NVIDIA bug report log file\.[ \t]*$", re.M)
# `*** /proc/cpuinfo` (append), `*** /path does not exist` / `is not readable`; `*** ls: ...` below it
_FILE_HEAD = re.compile(r"^(?:\*\*\* )?(/[^\s*]+)(?: (does not exist|is not readable))?[ \t]*$")
_LS_LINE = re.compile(r"^\*\*\* ls: ")
# report_command's heading: the command as the script ran it, by its path (`which nvidia-smi`)
_COMMAND_HEAD = re.compile(
    r"^(?:\*\*\* )?(/\S*/)?(nvidia-smi|ibstat|numactl|lspci|dmidecode)(?: (.*?))?[ \t]*$"
)
# any heading the script prints above an output: report_command's `/usr/sbin/ibnetdiscover -C
# mlx5_7` (the command by its path), the IB section's per-device line, report_skip's line
_ANY_HEAD = re.compile(
    r"^(?:/(?:[\w.+-]+/)+[\w.+-]+(?: .*)?|Running .+ commands for device: \S+|Skipping\b.*)[ \t]*$"
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

# (path, where, kind, text, warned, copied, command) -> (kind, output): saved_probe.read_as
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
# an output's `where` (outputs) that names the dmesg section
_DMESG_WHERE = "(nvidia-bug-report.log: dmesg)"


@dataclass(frozen=True)
class Section:
    """One output the log holds: its heading's name (`nvidia-smi --query`, `/proc/cpuinfo`), the
    kinds it may be read as (none: not read), its text, whether the file ends inside it, and the
    command that printed it where the script narrowed it (its grep of a boot's journal), and which
    boot a part of that grep is of."""

    name: str
    kinds: tuple[str, ...]
    text: str
    cut: bool = False
    command: str = ""
    # the script's grep of the kernel logs: "now" (this boot's journal), "earlier", "file"
    boot: str = ""


def _scanned(lines: list[str]) -> list[Section]:
    """The script's grep of the kernel logs, one part per log: a boot's journal (`journalctl -b
    -1:`, `-b -0:`) read as that boot's kernel log narrowed by the grep (an earlier boot's faults
    are history; this boot's, `-0`, read beside the dmesg section: a ring buffer that wrapped or
    was cleared no longer holds what the journal kept); a log file (`/var/log/messages`, its boots
    not told apart once grepped) kept as text, not read: its fault lines are weighed against the
    boots' logs (outputs)."""
    found: list[Section] = []
    for line in lines:
        if head := _SCANNED.match(line):
            boot = head.group(2)
            command = f"journalctl -b {boot} | grep -e NVRM -e nvidia-" if boot is not None else ""
            when = "file" if boot is None else "now" if boot == "-0" else "earlier"
            kinds = ("kernel_log",) if boot is not None else ()
            found.append(Section(f"{head.group(1)} | grep NVRM", kinds, "", command=command, boot=when))
        elif found and line.strip():
            found[-1] = dataclasses.replace(found[-1], text=found[-1].text + line + "\n")
    return found


def is_section(where: str) -> bool:
    """Whether an output's `where` (outputs) names a section of a bug report."""
    return "(nvidia-bug-report.log: " in where


def printed_by(command: str) -> bool:
    """Whether a session's command printed a bug report: it names the script's log file
    (`head -12 nvidia-bug-report.log`, `zcat nvidia-bug-report.log.gz | less`)."""
    return "nvidia-bug-report.log" in command


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
    """One separator's lines split at each heading below a blank line: report_command's (it prints
    several commands' outputs in one section: `--query`, `--query --unit`, `nvlink ...`; ibstat,
    then each device's `Running InfiniBand commands for device: mlx5_0` and its `ibnetdiscover -C
    mlx5_0`), each command by its path with a blank line below it, and report_skip's `Skipping ...`."""
    out: list[list[str]] = [[]]
    for i, line in enumerate(lines):
        blank_above = i == 0 or not lines[i - 1].strip()
        blank_below = i + 1 >= len(lines) or not lines[i + 1].strip()
        heading = _COMMAND_HEAD.match(line) or (blank_below and _ANY_HEAD.match(line))
        if out[-1] and blank_above and heading and any(s.strip() for s in out[-1]):
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
    if (
        _ANY_HEAD.match(head) and head.startswith("/") and " " in head
    ):  # (`/usr/sbin/ibnetdiscover -C mlx5_7`)
        tool, args = head.split(" ", 1)
        return f"{tool.rsplit('/', 1)[-1]} {args.strip()}", (), "\n".join(body)
    if _START.match(head):  # (the prologue, by the script's own first words)
        return "Start of NVIDIA bug report log file.", (), "\n".join(body)
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
    if (
        len(chunks) > 1 and (above := "\n".join(chunks[0])).strip()
    ):  # (named in the note, never dropped unsaid)
        found.append(Section(f"the text above its first separator line (`{_first(above)}`)", (), above))
    for chunk in chunks[1:] if len(chunks) > 1 else chunks:
        for piece in _pieces(chunk):
            if (named := _named(piece)) is None:
                continue
            scanned = _scanned(named[2].split("\n")) if named[0] == _SCANNING.rstrip(":") else []
            if named[0].startswith("Start of NVIDIA bug report") and (uname := _UNAME.search(named[2])):
                # (before its section: a log cut in its prologue ends inside the section the script names)
                found.append(Section("uname line", ("kernel",), uname.group(1) + "\n"))
            found += scanned or [Section(*named)]
    if not whole and found:
        last = found[-1]
        cut_text = last.text.rstrip("\n") if text.endswith("\n") else last.text
        found[-1] = dataclasses.replace(last, text=cut_text, cut=True)
    return found, whole


def _first(text: str) -> str:
    """A text's first line that is not blank, shortened to be named in a note."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line[:60] + ("..." if len(line) > 60 else "")


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
        if part.name.startswith("End of NVIDIA bug report") and part.text.strip():
            unread.append(f"the text after its last line (`{_first(part.text)}`)")
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
    out = _this_boot(out)
    unplaced = _unplaced_faults(found, [probe for kind, probe, _ in out if kind == "kernel_log"])
    if unplaced:
        out = [
            (kind, dataclasses.replace(probe, partial=probe.partial or unplaced), where)
            if kind == "kernel_log" and not probe.earlier_boot
            else (kind, probe, where)
            for kind, probe, where in out
        ]
    notes.append(
        _said(path, read, unread, whole, found)
        + (f" {unplaced[0].upper()}{unplaced[1:]}." if unplaced else "")
    )
    return out


def _this_boot(out: list[tuple[str, ProbeOutput, str]]) -> list[tuple[str, ProbeOutput, str]]:
    """`out` with this boot's two kernel logs (the dmesg section, the grep of this boot's journal:
    two answers of one box at one time) as one: the dmesg section's, the journal's beside it (its
    fault lines judged too: steps/checks/fabric_health.py reads `beside`), the journal's alone where the
    dmesg section printed nothing."""
    now = [i for i, (kind, probe, _) in enumerate(out) if kind == "kernel_log" and not probe.earlier_boot]
    if len(now) < 2:
        return out
    # (the dmesg section is the base, cut short or not: the journal's was narrowed by the grep, and
    # a cut dmesg still holds the lines the grep drops, the host's hardware errors among them)
    base = next((i for i in now if out[i][2].endswith(_DMESG_WHERE)), now[0])
    others = tuple(out[i][1] for i in now if i != base)
    kind, probe, where = out[base]
    joined = (kind, dataclasses.replace(probe, beside=(*probe.beside, *others)), where)
    return [joined if i == base else item for i, item in enumerate(out) if i == base or i not in now]


def faults_in(probe: ProbeOutput) -> set[tuple[str, int, str, str]]:
    """The GPU faults a kernel log output holds (its earlier boots' and the logs beside it too),
    each however the log printed it."""
    texts = (probe.stdout, *probe.history, *(o.stdout for o in probe.beside))
    return {fault_key(e) for text in texts for e in parse_kernel_log(text).events if e.kind != "cut"}


def _unplaced_faults(found: list[Section], logs: list[ProbeOutput]) -> str:
    """Why no fault-free reading of the kernel logs holds ("" if it does): a GPU fault line of the
    script's grep of a log file (`/var/log/messages`, `/var/log/kern.log`: boots not told apart
    once grepped) that none of the boots' logs read holds: of this boot or an earlier one, not
    known, so no Xid seen is not known to be none."""
    known: set[tuple[str, int, str, str]] = set().union(*(faults_in(probe) for probe in logs))
    for part in found:
        if part.boot != "file" or not part.text.strip():
            continue
        for event in parse_kernel_log(part.text).events:
            if event.kind != "cut" and fault_key(event) not in known:
                line = next(
                    (ln for ln in part.text.splitlines() if event.message.strip() in ln), event.message
                )
                name = part.name.removesuffix(" | grep NVRM")
                return (
                    f"the nvidia-bug-report.log's grep of {name} holds a GPU fault line that neither its"
                    " dmesg section nor this boot's journal holds, of a boot it does not tell"
                    f" (`{line.strip()[:160]}`)"
                )
    return ""


def _said(path: str, read: list[str], unread: list[str], whole: bool, found: list[Section]) -> str:
    """The note on a log: the sections read, those not (a few named), and a cut."""
    shown = ", ".join(unread[:8]) + (f" and {len(unread) - 8} more" if len(unread) > 8 else "")
    said = f"{path}: an nvidia-bug-report.log, read as its {', '.join(read) or 'no section'}"
    if unread:
        said += f"; {len(unread)} section{'s' if len(unread) != 1 else ''} not read ({shown})"
    if not whole:
        last = found[-1].name if found else "first"
        last = f"`{last}`" if _START.match(last) else last  # (the prologue, as the script heads it)
        said += (
            f"; the file ends inside its {last} section without the script's last line (`End of NVIDIA"
            " bug report log file.`): cut short, so that section is incomplete and those after it"
            " were never written"
        )
    return said + "."


def _host_faults(probe: ProbeOutput) -> Counter[tuple[str, str, str, str]]:
    """The host hardware errors (and the notices of them) a kernel log output holds, with the
    logs beside it, each (source, severity, part, error) counted."""
    texts = (probe.stdout, *(o.stdout for o in probe.beside))
    return Counter(
        (e.source, e.severity, e.where, e.what) for text in texts for e in host_errors(*log_lines(text))
    )


def _holds_the_section(own: ProbeOutput, part: ProbeOutput) -> bool:
    """Whether a kernel log saved apart (`own`) may stand for a bug report's dmesg section
    (`part`): it is whole (no grep narrowed it, not cut short), reaches back as far (to boot where
    the section does), and holds every fault of the section, the GPU's and the host's (an MCE, an
    EDAC line: a `dmesg | grep NVRM` beside the section drops them)."""
    if own.partial and not part.partial:
        return False
    reach = parse_kernel_log(part.stdout).covers_boot
    if reach and not parse_kernel_log(own.stdout).covers_boot:
        return False
    return faults_in(part) <= faults_in(own) and not _host_faults(part) - _host_faults(own)


def saved_apart(
    kind: str, out: ProbeOutput, where: str, raw: Mapping[str, ProbeOutput], origin: Mapping[str, str]
) -> tuple[str, str] | None:
    """(where the output kept is from, the note) of two outputs of `kind` of one folder where one
    is a bug report's section and the other a file saved apart (`dmesg.txt` beside the log): the
    file saved apart, the box's own answer to that command, is judged and the section named as
    not read, where the section shows nothing the file does not (the same text; free or lscpu
    answers that agree; a kernel log whose every fault line the file holds). None where both or
    neither are sections, the two are read as one (two boots), or they may differ (refused)."""
    first = origin[kind]
    if is_section(first) == is_section(where) or joined(kind, raw[kind], out, one_session(first, where)):
        return None
    (section, part), (saved, own) = (
        ((where, out), (first, raw[kind])) if is_section(where) else ((first, raw[kind]), (where, out))
    )
    if part.stdout.strip() == own.stdout.strip():
        same = True
    elif kind in ("free", "lscpu"):
        same = not disagreement(kind, own, part)
    elif kind == "kernel_log":
        same = _holds_the_section(own, part)
    else:
        same = False
    if not same:
        return None
    named = kind_name(kind)
    return saved, f"{section}: not read: {saved}, saved apart, is judged as the box's {named} output."
