"""Saved outputs whose form says less than the command that made them, read by that command's
copied line (offline): a `--query-gpu` CSV saved with `noheader` (its columns named by the
command's field list), a `df` piped into `grep` (which drops df's header), a `df -H` (SI powers
under the same `Size` header as `df -h`); and the shapes that tell a refusal what was given (df
rows under a header in another language, `nvidia-smi -q` GPU blocks without their header)."""

from __future__ import annotations

import csv
import io
import re

from gpuonboard.api import transcript
from gpuonboard.api.command_line import container_log, run
from gpuonboard.api.csv_among import LABELLED_CELL, csv_block
from gpuonboard.api.df_refusal import df_refusal, df_rows
from gpuonboard.api.fabric_log import fabric_manager_log
from gpuonboard.api.journal_refusal import journal_without_kernel
from gpuonboard.api.kind_names import expected_outputs
from gpuonboard.api.named_outputs import named_output
from gpuonboard.api.other_forms import named_form
from gpuonboard.api.saved_fragments import format_fragment, fragment_sentence
from gpuonboard.api.smi_refusals import (
    OTHER_OPERATION,
    STATE_ERROR,
    empty_or_refused,
    reset_refusal,
    wrapped_refusal,
)
from gpuonboard.api.table_part import TABLE_PROBE, table_part_view
from gpuonboard.api.tool_missing import missing_output, not_this_box, tool_missing
from gpuonboard.api.unjudged import UnjudgedOutput, lone_values, query_gpu_fields
from gpuonboard.api.viewer_lines import viewer_lines
from gpuonboard.errors import UsageError
from gpuonboard.facts.csvtext import csv_rows
from gpuonboard.facts.driver_module import MODULE_PROBE, looks_like_module_file
from gpuonboard.facts.extra_probes import KERNEL_LOG_REFUSED
from gpuonboard.facts.gpu_information import GPU_INFO_PROBE, looks_like_gpu_information
from gpuonboard.facts.gpu_views import IN_RUNNING_CONTAINER, IN_STARTED_CONTAINER
from gpuonboard.facts.kernel_refusal import refusal as kernel_log_refusal
from gpuonboard.facts.named import tool_words
from gpuonboard.facts.nvidia_smi.mig_lists import mig_list_refusal
from gpuonboard.facts.nvidia_smi.monitor import monitor_refusal
from gpuonboard.facts.nvidia_smi.query_csv import QUERY_FIELDS
from gpuonboard.facts.nvidia_smi.table import parse_table
from gpuonboard.facts.probe import ProbeOutput, first_line

__all__ = [
    "wrapped_refusal",
    "OTHER_OPERATION",
    "STATE_ERROR",
    "csv_width",
    "df_rows",
    "df_si",
    "nproc_refusal",
    "missing_output",
    "not_this_box",
    "other_form",
    "nvidia_smi_part",
    "q_blocks_alone",
    "uncounted_cpuinfo",
    "tool_missing",
    "with_df_header",
    "with_query_header",
]


def other_form(text: str) -> str | None:
    """The sentence for a saved output of a command this tool reads in another form (`lscpu -e`,
    some lines of an lscpu), or a part of nvidia-smi's table without its banner and header
    (naming the GPUs it shows unreadable), naming what to save; None otherwise."""
    if named := named_form(text):
        return named
    rows = parse_table(text).gpus if "NVIDIA-SMI" not in text else ()
    if rows and (banner := _OTHER_BANNER.search(text)) is not None:
        # (a simulator's or a wrapper's table under its own banner, `| VGPU-SMI 0.1.0  Driver
        # Version: 560.35.03`: measure35e 28 was said to be nvidia-smi's rows without a banner)
        return (
            f"a table under the banner `{banner.group(1)}`, another program's (a simulator's or a"
            " wrapper's), not nvidia-smi's `NVIDIA-SMI`: its rows are no GPUs nvidia-smi listed, so"
            " nothing of the box is read from it: save the box's own `nvidia-smi` output."
        )
    if rows:
        bad = [f"GPU {g.index} reading {' / '.join(g.faults)}" for g in rows if g.faults]
        shown = f"; it shows {', '.join(bad)}, a GPU nvidia-smi cannot read" if bad else ""
        # (a sensor's fault in one cell, `ERR!` as a fan speed or power draw: named, never dropped)
        cells = [f"GPU {g.index}'s {c}" for g in rows for c in g.cell_faults]
        shown += f"; it shows a fault: {', '.join(cells)}" if cells else ""
        # (its column header, `| GPU  Name ... Persistence-M |`, may be there: only the banner missing)
        headed = _TABLE_HEADER.search(text)
        held = "GPU rows and their column header, without its `NVIDIA-SMI` banner" if headed else ""
        return (
            f"part of nvidia-smi's table ({held or 'GPU rows without its banner and header'}{shown}), so the"
            " driver and the number of GPUs are not known: save the whole `nvidia-smi` output."
        )
    return None


# a banner line of nvidia-smi's table's shape naming another program (`| VGPU-SMI 0.1.0   Driver
# Version: 560.35.03 ...`): its name and version
_OTHER_BANNER = re.compile(
    r"^[ \t]*\|[ \t]*((?!NVIDIA-SMI\b)[A-Za-z][\w.-]*-SMI[ \t]+\S+)[^\n]*\bVersion:", re.M
)


# nvidia-smi table's column header line (`| GPU  Name        Persistence-M| Bus-Id ...`)
_TABLE_HEADER = re.compile(r"^\|?\s*GPU\s+Name\b", re.M)


# an `nvidia-smi -q` GPU block's first lines (`GPU 00000000:10:1C.0`, then an indented `Key :`)
_Q_GPU_BLOCK = re.compile(r"^GPU [0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d\s*\n\s+\S.*:", re.M)


def q_blocks_alone(text: str) -> bool:
    """Whether a text holds `nvidia-smi -q` GPU blocks (with no header: the caller's case)."""
    return _Q_GPU_BLOCK.search(text[:4000]) is not None


# a tool's `-V` / `--version` line: procps' and util-linux's `free from procps-ng 3.3.16`, `lscpu
# from util-linux 2.37.2`, coreutils' `df (GNU coreutils) 8.32`
# (util-linux-ng's, 2.13 to 2.17: `lsblk from util-linux-ng 2.17.2`)
VERSION_LINE = re.compile(r"(\S+) (?:from (?:procps(?:-ng)?|util-linux(?:-ng)?) \S+|\(GNU coreutils\) \S+)")
# /proc/cpuinfo of the CPUs whose form looks_like_cpuinfo (facts/cpu.py) does not read: IBM Z's
# (`vendor_id : IBM/S390`, then `processor N: version = ...` lines), 32-bit ARM's (`Processor :
# ARMv7 Processor rev 1 (v7l)` first, or a block of `CPU architecture: 7`)
_UNCOUNTED_CPUINFO = (
    (re.compile(r"^vendor_id\s*:\s*IBM/S390\b", re.M), "an IBM Z (s390x) CPU"),
    (re.compile(r"^Processor\s*:\s*ARMv[4-7]|^CPU architecture:\s*[4-7]\b", re.M), "a 32-bit ARM CPU"),
)


def uncounted_cpuinfo(text: str) -> str | None:
    """The CPU of a /proc/cpuinfo this tool does not read ("an IBM Z (s390x) CPU"), None for
    any other text."""
    head = text[:8000]
    return next((what for pattern, what in _UNCOUNTED_CPUINFO if pattern.search(head)), None)


# the keys of an `nvidia-smi -q` GPU block no other output prints (a paste may have dedented them;
# a Processes record's too: a WSL2 block's list of C+G records is often what is left of a paste)
_Q_KEY = re.compile(
    r"^[ \t]*(GPU UUID|VBIOS Version|Minor Number|MultiGPU Board|Board ID|GPU Part Number|Inforom Version"
    r"|GPU Operation Mode|GPU Virtualization Mode|Bus Id|Sub System Id|GPU Link Info|Persistence Mode"
    r"|Product Name|Product Architecture|FB Memory Usage|BAR1 Memory Usage|Compute Mode|Retired Pages"
    r"|Remapped Rows|Clocks Event Reasons|Clocks Throttle Reasons"
    r"|vGPU Software Licensed Product|License Status|Encoder Stats|FBC Stats|Ecc Mode|ECC Errors"
    r"|Pending Page Blacklist|GPU Current Temp|GPU Shutdown Temp|Replays Since Reset|Power Readings"
    r"|Applications Clocks|Max Clocks|Performance State|GPU instance ID|Compute instance ID"
    r"|Used GPU Memory)\b",
    re.M,
)
# nvidia-smi table's Processes section: its title or column header lines
_PROCESSES_HEAD = re.compile(r"^\|\s*Processes:|^\|?\s*GPU\s+(?:GI\s+CI\s+)?PID\s+Type\s+Process name", re.M)
# nvidia-smi table's MIG devices section: its title or its column header line
_MIG_HEAD = re.compile(r"^\|\s*MIG devices:|^\|\s*GPU\s+GI\s+CI\s+MIG\s+\|", re.M)


# a section of an `nvidia-smi -q` GPU block: its head alone on a line, then a deeper `Key : value`
_Q_SECTION = re.compile(
    r"^([ \t]*)(Retired Pages|Remapped Rows|Row Remapper Histogram|ECC Errors|Ecc Mode|FB Memory Usage"
    r"|BAR1 Memory Usage|Clocks Event Reasons|Clocks Throttle Reasons|GPU Link Info|Power Readings"
    r"|Encoder Stats|FBC Stats|Applications Clocks|Max Clocks)[ \t]*\n\1[ \t]+\S[^\n:]*:",
    re.M,
)
# what such a section's lines say of a fault: a pending remap or retirement, an uncorrectable
# count above 0, a remapping failure, a slowdown the clock event (throttle) reasons show active
# (facts/gpu_views.py SLOWDOWNS: the throttling rule's fails; never Idle, a power cap or a setting)
_Q_FAULT_LINE = re.compile(
    r"^[ \t]*((?:Pending(?: Page Blacklist| Page Retirement)?|Remapping Failure Occurred)[ \t]*:[ \t]*Yes"
    r"|(?:Uncorrectable(?: Error)?|Double Bit ECC)[ \t]*:[ \t]*[1-9]\d*"
    r"|(?:HW|SW) (?:Thermal |Power Brake )?Slowdown[ \t]*:[ \t]*Active)[ \t]*$",
    re.M,
)


def _q_part_shows(text: str) -> str:
    """`; it shows ...` naming the fault lines of a -q part (`Pending : Yes`), or ``."""
    shown = [" ".join(m.group(1).replace(":", " ").split()) for m in _Q_FAULT_LINE.finditer(text[:8000])]
    return f"; it shows {', '.join(shown)}, a fault of the GPU it was copied from" if shown else ""


# the lines of `nvidia-smi -q` that tell the driver, the GPU count and which GPU a block is
_Q_DRIVER = re.compile(r"^[ \t]*Driver Version[ \t]*:[ \t]*\S", re.M)
_Q_ATTACHED = re.compile(r"^[ \t]*Attached GPUs[ \t]*:[ \t]*\d", re.M)
_Q_GPU_HEAD = re.compile(r"^[ \t]*GPU [0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7][ \t]*$", re.M)


def _q_part_lacks(text: str) -> tuple[str, str]:
    """(what part of `nvidia-smi -q` a part of it is without, what is not known so), naming only
    what it lacks: a `-q -i 0 | grep` keeping `Driver Version` lacks the count and the block's
    head; a `-q -d ROW_REMAPPER` cut below `GPU 00000000:55:00.0` lacks the header alone (before,
    both were said to lack all three, untrue: m35c 26, m35d 02)."""
    head = text[:8000]
    header = [
        name
        for name, line in (("Driver Version", _Q_DRIVER), ("Attached GPUs", _Q_ATTACHED))
        if not line.search(head)
    ]
    lacks, unknown = [], []
    if len(header) == 2:
        lacks.append("the header above them (Driver Version, Attached GPUs)")
    elif header:
        lacks.append(f"the header's `{header[0]}` line")
    unknown += ["the driver"] if "Driver Version" in header else []
    unknown += ["the number of GPUs"] if "Attached GPUs" in header else []
    if not _Q_GPU_HEAD.search(head):
        lacks.append("the block's `GPU <PCI address>` line")
        unknown.append("which GPU they belong to")
    said = ", ".join(unknown[:-1]) + (" and " if len(unknown) > 1 else "") + unknown[-1]
    return " and ".join(lacks), said


# any `-q` section's head: a line with no colon, then a deeper `Key : value` line
_Q_ANY_SECTION = re.compile(r"^([ \t]*)(\S[^\n:]*?)[ \t]*\n\1[ \t]+\S[^\n:]*:", re.M)


def _only_sections(text: str, heads: list[str]) -> bool:
    """Whether `text` is the sections `heads` alone: it starts with the first, and holds no other
    section (nvidia-docker#1648's Applications Clocks and Max Clocks among Power Limit lines,
    Clocks, Clock Policy, Voltage and Processes, m31c 11: "lines ... from inside a GPU's block")."""
    every = {m.group(2) for m in _Q_ANY_SECTION.finditer(text[:8000])}
    return text.strip().startswith(heads[0]) and every <= set(heads)


def nvidia_smi_part(text: str) -> str | None:
    """The sentence for a part of an nvidia-smi output that names no GPU set: `-q` lines from
    inside a GPU block (no header, no block head: k8s-vgpu-scheduler#25, nvidia-docker#1070's
    from BAR1 to Temperature; a section alone, gpud#80's `Remapped Rows` with `Pending : Yes`,
    whose fault the sentence names), the table's Processes section alone (DeepSpeed-MII#198), its
    MIG devices section alone (nvitop#8); None otherwise."""
    heads = list(dict.fromkeys(m.group(2) for m in _Q_SECTION.finditer(text[:8000])))
    keys = len(set(_Q_KEY.findall(text[:8000])))
    if keys >= 3 or heads:
        what = (
            f"the {' and '.join(heads)} section{'s' if len(heads) > 1 else ''} of an `nvidia-smi -q`"
            " GPU block alone"
            if heads and keys < 3 and _only_sections(text, heads)
            else "lines of `nvidia-smi -q` from inside a GPU's block"
        )
        if (block := _Q_GPU_HEAD.search(text[:8000])) and what.startswith("lines"):
            what = f"lines of `nvidia-smi -q` from the block of {block.group().strip()}"
        lacks, unknown = _q_part_lacks(text)
        return fragment_sentence(what, lacks, unknown, "nvidia-smi -q", _q_part_shows(text))
    processes, mig = _PROCESSES_HEAD.search(text[:4000]), _MIG_HEAD.search(text[:4000])
    if (processes or mig) and "NVIDIA-SMI" not in text and not parse_table(text).gpus:
        sections = (
            "MIG devices and Processes sections"
            if processes and mig
            else ("Processes section" if processes else "MIG devices section")
        )
        return (
            f"the {sections} of nvidia-smi's table alone, without its banner and GPU rows,"
            " so no GPU, driver or GPU count can be read from it: save the whole `nvidia-smi`"
            " output."
        )
    return None


# `df -H` / `--si` (SI powers; `-h` is binary): in the copied command, or the file's name
_DF_SI_FLAG = re.compile(r"(?:^|\s)(?:-[a-zA-Z]*H[a-zA-Z]*|--si)(?=\s|$)")
_DF_SI_NAME = re.compile(r"^df[-_ ]*(?:-?[a-zA-Z]*H|-*si)(?![a-z])")


def df_si(name: str, command: str) -> bool:
    """Whether a saved df output is `df -H` / `df --si`, by its copied command or else its file
    name (the words from `df` on: facts.named.tool_words)."""
    if command:
        return bool(_DF_SI_FLAG.search(tool_words("", "df", command)))
    return any(_DF_SI_NAME.match(words) for words in tool_words(name, "df").splitlines())


# `nproc --all` (`-a` is no nproc flag): in the copied command, or in the file's name from its
# `nproc` on, after nproc's own flags only (`nproc-all.txt`, `nproc --all.txt`, `nproc
# --ignore=2 --all.txt`; not `nproc_gpu-all.txt`, a description's word)
_NPROC_ALL = re.compile(r"(?:^|[\s_-])-{0,2}all(?=$|[\s_.=-])", re.IGNORECASE | re.MULTILINE)
_NPROC_ALL_NAME = re.compile(
    r"^nproc(?:[\s_]*-{1,2}ignore(?:[=\s_-]?\d+)?)*[\s_-]*-{0,2}all(?=$|[\s_.=-])",
    re.IGNORECASE | re.MULTILINE,
)
# the shell's builtins that run the command after them as it is (`command nproc`)
_BUILTINS = frozenset({"command", "exec", "builtin"})
# the variables GNU nproc prints in place of its count (OMP_NUM_THREADS, OMP_THREAD_LIMIT)
_OMP = re.compile(r"(?<![\w])OMP_(?:NUM_THREADS|THREAD_LIMIT)=")


def nproc_refusal(name: str, command: str) -> str | None:
    """Why a saved bare number in a file named nproc* is not read as `nproc`, the CPUs this login
    may use, or None: `nproc --all` (by the copied command or the file's name) counts every CPU
    of the kernel, whatever CPU set or affinity confines the login (a Slurm job's `nproc` 8,
    `nproc --all` 96); any other copied command prints another count: `grep -c ^processor
    /proc/cpuinfo` the online CPUs, `taskset -c 0-3 nproc` and `nproc --ignore=N` fewer than
    the login may use, `OMP_NUM_THREADS=16 nproc` the variable; nproc run in a container (`docker
    run`, `docker exec`, `kubectl exec`, `lxc exec`) counts that container's CPU set."""
    ran = run(command, ("nproc",)) if command else None
    if _NPROC_ALL_NAME.search(tool_words(name, "nproc")) or (ran and _NPROC_ALL.search(" ".join(ran.head))):
        return (
            "`nproc --all` counts every CPU of the kernel, not those this login may use (its CPU set"
            " or affinity), which is what nproc is read for: save plain `nproc` of the box."
        )
    if ran is not None and ran.container:
        # (`docker run`'s new container, or one `docker exec`, `kubectl exec`, `lxc exec` entered:
        # its CPU set, not the login's affinity)
        where = IN_STARTED_CONTAINER if ran.started else IN_RUNNING_CONTAINER
        return (
            f"its copied command `{ran.said}` counts the CPUs of {where}, not those"
            " this login may use that nproc is read for: save plain `nproc` of the box."
        )
    if ran is None or (_plain_nproc(ran.head) and not _OMP.search(command)) or _shows_a_file(ran.stages):
        return None
    return (
        f"its copied command `{ran.said}` is not plain `nproc`, so its number is not the count of"
        " CPUs this login may use that nproc is read for: save plain `nproc` of the box."
    )


def _shows_a_file(stages: list[list[str]]) -> bool:
    """Whether a command only shows a saved file as it is (`cat saved.txt`, `less nproc.txt`, no
    nproc run): it says nothing of what printed the number, which is read by the file's name."""
    words = [word for stage in stages for word in stage]
    return (
        len(stages) == 1
        and bool(words)
        and words[0] in ("cat", "less", "more", "type")
        and not any(word.rsplit("/", 1)[-1] == "nproc" for word in words)
    )


def _plain_nproc(words: list[str]) -> bool:
    """Whether a command's words run nproc with no argument: `nproc`, `/usr/bin/nproc`, `command
    nproc` (the shell's builtins that run it as it is)."""
    while words and words[0] in _BUILTINS:
        words = words[1:]
    return len(words) == 1 and words[0].rsplit("/", 1)[-1] == "nproc"


def csv_width(text: str) -> int:
    """The number of columns when every line of `text` is a CSV row of one same count (two or
    more), else 0."""
    rows = [row for row in csv_rows(text.strip().splitlines()) or [] if row]
    widths = {len(row) for row in rows}
    return widths.pop() if len(widths) == 1 and rows and len(rows[0]) > 1 else 0


def with_query_header(command: str, text: str) -> str:
    """A `--format=csv,noheader` output under its copied command line: the output with the
    header row the command's field list gives it (nvidia-smi heads each column with its field
    name), "" when the command names no fields or the rows have another count of cells."""
    fields = query_gpu_fields(command)
    if fields is None or "noheader" not in command:
        return ""  # (`--format=csv` prints its header: a first row of values is no header's)
    if len(fields) == 1 and fields[0] in QUERY_FIELDS:
        # (one field a rule reads, one cell a line: `--query-gpu "name" --format="noheader,csv"`
        # printed `NVIDIA H100 80GB HBM3`, m36b 21)
        rows = [line for line in text.strip().splitlines() if line.strip()]
        return f"{fields[0]}\n{text}" if rows and not any("," in row for row in rows) else ""
    if csv_width(text) != len(fields):
        return ""
    return ", ".join(fields) + "\n" + text


def with_df_header(command: str, text: str) -> str:
    """Rows of a `df` piped through a filter that dropped its header (`df -hT | grep /ssd1`),
    under the header df prints for the command's flags (`Size` for -h/-H, `1K-blocks`
    otherwise; `Type` for -T); "" when the command is no such df or the rows are not df's."""
    head, _, rest = command.partition("|")
    words = head.split()
    if (
        not rest
        or "df" not in [w.rsplit("/", 1)[-1] for w in words]
        or any(w.startswith(("-B", "--block-size", "--output", "-i", "--inodes")) for w in words)
    ):
        return ""
    short = "".join(w[1:] for w in words if re.fullmatch(r"-[a-zA-Z]+", w))
    typed = "T" in short or "--print-type" in words
    size = (
        "Size Used Avail" if "h" in short or "H" in short or "--si" in words else "1K-blocks Used Available"
    )
    header = f"Filesystem{' Type' if typed else ''} {size} Use% Mounted on"
    width = 6 + typed  # (a mount point with spaces has more words, never fewer)
    rows = [line.split() for line in text.strip().splitlines() if line.strip()]
    if not rows or any(len(r) < width or not any(t.endswith("%") for t in r) for r in rows):
        return ""
    return f"{header}\n{text}"


# `nvidia-smi --query-compute-apps=...` fields (nvidia-smi --help-query-compute-apps)
_APPS_FIELDS = frozenset(
    {"timestamp", "gpu_name", "gpu_bus_id", "gpu_serial", "gpu_uuid", "pid", "process_name", "name",
     "used_gpu_memory", "used_memory"}
)  # fmt: skip


def compute_apps(text: str) -> tuple[str, str] | None:
    """A saved `--query-compute-apps` CSV (with its header) as the live probe reads it,
    `gpu_uuid,pid,process_name,used_memory` rows without header or units: (those rows, ""), or
    ("", why) when its processes cannot be placed on a GPU (no `gpu_uuid`); None when the text is
    no such CSV."""
    lines = [line for line in text.splitlines() if line.strip()]
    head = [cell.strip().split(" [")[0] for cell in lines[0].split(",")] if lines else []
    if "pid" not in head or not all(h in _APPS_FIELDS for h in head):
        return None
    if "gpu_uuid" not in head:
        return "", (
            "a `--query-compute-apps` CSV without `gpu_uuid`, so its processes cannot be placed on a"
            " GPU: save it with `nvidia-smi --query-compute-apps=gpu_uuid,pid,process_name,used_memory"
            " --format=csv`."
        )
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for row in csv_rows(lines[1:]) or []:
        cells = dict(zip(head, (cell.strip() for cell in row), strict=False))
        used = (cells.get("used_gpu_memory") or cells.get("used_memory") or "").split(" ")[0]
        name = cells.get("process_name") or cells.get("name") or ""
        writer.writerow([cells.get("gpu_uuid", ""), cells.get("pid", ""), name, used])
    return out.getvalue(), ""


def kind_by_name(name: str, text: str) -> str | None:
    """The kind of an output known by its file's name only: a bare number in nproc*, one word of
    `systemctl is-active nvidia-fabricmanager` in *fabric*."""
    if name.lower().startswith("nproc") and re.fullmatch(r"\s*\d+\s*", text):
        return "nproc"
    if "fabric" in name.lower() and text.strip().split("\n")[0].strip() in (
        "active",
        "inactive",
        "failed",
        "activating",
        "deactivating",
        "unknown",
    ):
        return "fabric_manager"
    return None


# the kernel's affinity list line of a process's status file, which nproc counts (the live
# probe's nproc answer where nproc is not installed), with its newline where one follows
_AFFINITY = re.compile(r"^Cpus_allowed_list:[ \t]*[0-9,-]*[ \t]*(?:\n|$)", re.MULTILINE)
# a copied command that reads another process's status (`cat /proc/1/status`): its affinity
_OTHER_STATUS = re.compile(r"/proc/(?!self/|thread-self/|\$\$/)[^/\s]+/status")


def affinity_output(where: str, text: str, copied: str) -> ProbeOutput | None:
    """The CPUs this login may use, as nproc counts them, of a saved affinity list: the live
    probe's own nproc answer (`Cpus_allowed_list:\t0-3,8-11`, raw/<host>/nproc.txt where nproc
    was not installed), a `grep Cpus_allowed_list /proc/self/status`, or a whole `cat
    /proc/self/status` (its first line `Name:`); None for other text. Another process's status
    (`cat /proc/1/status`) is refused: its affinity is not the login's."""
    match = _AFFINITY.search(text)
    said = [line for line in text.splitlines() if line.strip()]
    if match is None or not (len(said) == 1 or said[0].startswith("Name:")):
        return None
    if _OTHER_STATUS.search(copied):
        raise UsageError(
            f"{where}: an affinity list (Cpus_allowed_list) of another process's status file, not"
            " the CPUs this login may use: save `nproc` of the box (or `grep Cpus_allowed_list"
            " /proc/self/status`)."
        )
    return ProbeOutput(match.group(0), "", 0)


def _shape_refusal(where: str, text: str) -> str | None:
    """The sentence refusing a saved output whose shape is a known part of one (GPU blocks
    without their header, a version line, a part of nvidia-smi, lone values, an uncounted
    cpuinfo, viewer gutter lines, df rows without a readable header), or None."""
    if q_blocks_alone(text):
        return (
            f"{where}: `nvidia-smi -q` GPU blocks without the header above them (Driver Version,"
            " Attached GPUs), so the driver and the number of GPUs are not known: save the whole"
            " `nvidia-smi -q` output."
        )
    said = [line.strip() for line in text.splitlines() if line.strip()]
    if len(said) == 1 and (version := VERSION_LINE.fullmatch(said[0])):
        return (
            f"{where}: {version.group(1)}'s version line (`{said[0]}`), which says nothing of the box:"
            f" save `{version.group(1)}`'s own output."
        )
    if (
        part := nvidia_smi_part(text)
        or monitor_refusal(text)
        or mig_list_refusal(text)
        or format_fragment(text)
    ) is not None:
        return f"{where}: {part}"
    if (lone := lone_values(text)) is not None:
        return f"{where}: {lone}"
    if (cpu := uncounted_cpuinfo(text)) is not None:
        return (
            f"{where}: a /proc/cpuinfo of {cpu}, a form this tool does not read (it counts the CPUs"
            " of x86, arm64, POWER and RISC-V), so no core count is read from it: save `lscpu` of the box."
        )
    if (gutter := viewer_lines(text)) is not None and len(said) > 2:
        return (
            f"{where}: lines that no command read here prints ({gutter}: a CI log viewer's gutter copied"
            " with the output?) between the output's own, not in the order a viewer copies them, so"
            " they cannot be told apart safely: save the command's own output (`> FILE` on the box,"
            " or the step's raw log)."
        )
    return df_refusal(where, text)


# lscpu's first fields run together on one line (a page that lost the line breaks):
# `Architecture: x86_64 CPU op-mode(s): 32-bit, 64-bit Address sizes: ... Byte Order: ...`
_LSCPU_LABELS = r"(?:CPU op-mode\(s\)|Byte Order|Address sizes|CPU\(s\)|Vendor ID|Model name|Socket\(s\)):"
_LSCPU_RUN_TOGETHER = re.compile(rf"Architecture:[ \t]*\S+[ \t]+{_LSCPU_LABELS}.*?[ \t]{_LSCPU_LABELS}")


# procps top's summary of memory (`Mem:  264488144k total, 251337344k used, ...`, procps-ng's
# `KiB Mem :  16305960 total,  1234 free, ...`, `MiB Swap:  2048.0 total, ...`)
_TOP_SUMMARY = re.compile(r"(?m)^[^\S\n]*(?:[KMGT]iB )?(?:Mem|Swap)\s*:\s*[\d.]+k?\s+total,")

# a /proc/meminfo line (`HugePages_Total:   53342`, `Hugepagesize:    2048 kB`), as a page may
# bold it (`**HugePages_Free:    11904**`) or a user annotate it (`4194304 kB  //total huge pages`)
_MEMINFO_LINE = re.compile(
    r"^\**(MemFree|MemAvailable|Buffers|Cached|SwapCached|SwapTotal|SwapFree|Active|Inactive|Dirty"
    r"|Shmem|Slab|SReclaimable|SUnreclaim|Committed_AS|CommitLimit|AnonPages|Mapped|PageTables"
    r"|VmallocTotal|AnonHugePages|ShmemHugePages|FileHugePages|HugePages_\w+|Hugepagesize|Hugetlb"
    r"|DirectMap\w+):[ \t]+\d+(?:[ \t]+kB)?\**(?:[ \t]+//.*)?[ \t]*$"
)


def _meminfo_without_total(text: str) -> list[str]:
    """The /proc/meminfo fields of a text of two or more such lines and no `MemTotal` (numactl#152's
    hugepage lines under `cat /proc/meminfo` and a `...`, netdata#3461's `grep -i Hugep`: m32b 23,
    24); [] for any other text."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    fields = [m.group(1) for line in lines if (m := _MEMINFO_LINE.match(line))]
    if len(fields) < 2 or re.search(r"^\W*MemTotal:", text, re.M):
        return []
    return fields


# a row of `kubectl describe node`'s Conditions table: TYPE, STATUS, the last heartbeat and the
# last transition (RFC 1123 times), then REASON / MESSAGE (`XidCriticalError  True  Mon, 23 Jun
# 2025 18:45:43 +0000  Mon, 23 Jun 2025 18:44:57 +0000  {"31":true}  ...`; m32d: refused as a CSV)
_NODE_CONDITION = re.compile(
    r"^[ \t]*[A-Z]\w+[ \t]+(?:True|False|Unknown)[ \t]+"
    r"(?:\w{3}, \d{1,2} \w{3} \d{4} [\d:]{8} [+-]\d{4}[ \t]+){2}.*$",
    re.M,
)


# gpustat's GPU line: `[0] NVIDIA GeForce RTX 4090 | 45°C,  0 % |  1234 / 24564 MB | user(1200M)`,
# `[0] ((Unknown Error)) | ?℃, ?% | ?/?MB | (Not Supported)` where NVML could not read the GPU
_GPUSTAT_LINE = re.compile(
    r"\[(\d+)\]\s+(?P<name>[^|]+?)\s*\|\s*[?\d]+\s*(?:'C|°C|℃|C)\s*,\s*[?\d]+\s*%\s*\|.*"
)


def _gpustat_sentence(text: str) -> str:
    """Why a gpustat output is not read (its GPU lines, `[0] ... | 45°C, 0 % | ...`), naming
    the GPUs it could not read (`((Unknown Error))`); "" for any other text (m36d 21: it was
    said to be "a CSV without its header row")."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    first = next((at for at, line in enumerate(lines) if _GPUSTAT_LINE.fullmatch(line)), None)
    # (above its GPU lines, its host, time and driver line, and the copied `$ gpustat -i`)
    if first is None or first > 2:
        return ""
    gpus = [found for line in lines[first:] if (found := _GPUSTAT_LINE.fullmatch(line))]
    if len(gpus) < len(lines) - first:
        return ""
    failed = [g for g in gpus if "error" in g.group("name").lower()]
    said = (
        f"; it could not read GPU {', '.join(g.group(1) for g in failed)}"
        f" (`{failed[0].group('name')}`, NVML's error: a fault of the GPU or its driver, which"
        " nvidia-smi of the box shows too)"
        if failed
        else ""
    )
    return (
        f"gpustat's output (`{gpus[0].group()[:60]}`), not nvidia-smi's, which this tool does not"
        f" read{said}: save `nvidia-smi -q` (or its table) of the box."
    )


def _unread_sentence(where: str, text: str) -> str:
    """The sentence refusing a saved output of another form, a headerless CSV, or none this
    tool reads (naming the kinds it does read)."""
    if other := other_form(text):
        return f"{where}: {other}"
    if _LSCPU_RUN_TOGETHER.search(text):
        return (
            f"{where}: an lscpu output whose line breaks were lost (its fields run together on one"
            " line: `Architecture: x86_64 CPU op-mode(s): ...`), so no field can be told from the"
            " next: save `lscpu` again as it prints it, one field a line."
        )
    if _TOP_SUMMARY.search(text):
        return (
            f"{where}: top's memory summary lines (`Mem: ... total, ... used, ... free`, `Swap:"
            " ...`), not `free` output: save `free -k` of the box (or `cat /proc/meminfo`)."
        )
    if fields := _meminfo_without_total(text):
        return (
            f"{where}: {transcript.UNRECOGNISED} (/proc/meminfo lines without its MemTotal line:"
            f" {', '.join(fields[:4])}{' ...' if len(fields) > 4 else ''}, a grep or a paste that kept"
            " only some of them), so no RAM total can be read: save `cat /proc/meminfo` whole, or"
            " `free -k`, of the box."
        )
    if fabric := fabric_manager_log(text):
        return f"{where}: {fabric}"
    if journal := journal_without_kernel(text):  # (no kernel line: api/journal_refusal.py)
        return f"{where}: {journal}"
    if node := _NODE_CONDITION.search(text):
        return (
            f"{where}: a Kubernetes node's condition rows (`kubectl describe node`'s Conditions:"
            f" `{' '.join(node.group(0).split())[:100]}`), a node agent's word on the node, not an output"
            " this tool reads: save the node's kernel log (`sudo dmesg -T`, or `journalctl -k -b`),"
            " which holds the driver's Xid lines, and nvidia-smi of the box."
        )
    if gpustat := _gpustat_sentence(text):
        return f"{where}: {gpustat}"
    if csv_width(text) and not LABELLED_CELL.search(text):
        return (
            f"{where}: a CSV without its header row, and no copied `nvidia-smi --query-gpu=...` line"
            " above it names its fields: save it with its header (`--format=csv`, without"
            " `noheader`), or with the command line above it."
        )
    if block := csv_block(text):
        rows, width = block
        return (
            f"{where}: a CSV without its header row ({rows} rows of {width} fields among another"
            " program's lines), and no copied `nvidia-smi"
            " --query-gpu=...` line above it names its fields: save nvidia-smi's output alone with"
            " its header (`--format=csv`, without `noheader`), or with the command line above it."
        )
    return f"{where}: {transcript.UNRECOGNISED} (expected {expected_outputs()})."


# an Xid a container's log names (the device plugin's `XidCriticalError: Xid=48 on Device=GPU-...`,
# DCGM's or a log's copy of the kernel's `NVRM: Xid (PCI:0000:55:00): 48`)
_LOGGED_XID = re.compile(r"Xid[=: ]\s*(\d{1,3})\b.*|Xid \(PCI:[^)]*\):\s*(\d{1,3})\b.*")


def without_kind(where: str, text: str, copied: str, warned: str = "") -> tuple[str, ProbeOutput]:
    """A saved output of no kind this tool reads: a missing tool's or a refused kernel log's
    message read as such, an affinity list as nproc (affinity_output), else a UsageError saying
    what it looks like and what to save."""
    if (affinity := affinity_output(where, text, copied)) is not None:
        return "nproc", affinity
    if (part := table_part_view(text)) is not None:  # (rows showing a fault: api/table_part.py)
        return TABLE_PROBE, part
    if looks_like_module_file(text):  # (/proc/driver/nvidia/version: facts/driver_module.py)
        return MODULE_PROBE, ProbeOutput(text, "", 0)
    if looks_like_gpu_information(text):  # (/proc/driver/nvidia/gpus/*/information: the driver loaded)
        return GPU_INFO_PROBE, ProbeOutput(text, "", 0)
    if (shape := _shape_refusal(where, text)) is not None:
        raise UsageError(shape)
    if (missing := missing_output(where, text, copied)) is not None:
        return missing
    if (reset := reset_refusal(where, text)) is not None:  # (read, nothing judged: a note beside others)
        raise UnjudgedOutput(reset)
    if gpustat := _gpustat_sentence(text):  # (named alone; beside others a note: revR L3)
        raise UnjudgedOutput(f"{where}: {gpustat}")
    if (refusal := empty_or_refused(where, text, copied, warned)) is not None:
        raise UsageError(refusal)
    if (refused := kernel_log_refusal(text)) is not None:
        # (dmesg's or journalctl's refusal alone: read as the live probe that could read no log)
        return "kernel_log", ProbeOutput("", refused, KERNEL_LOG_REFUSED)
    if copied and container_log(run(copied).head):  # (a pod's log: its own commands' lines)
        # (its first line that is no poster's `# comment`; an Xid the log names, said: m35d 10)
        lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
        first = lines[0] if lines else first_line(text).strip()
        xid = next((m for ln in lines if (m := _LOGGED_XID.search(ln))), None)
        named = (
            f"; it names Xid {xid.group(1) or xid.group(2)} (`{xid.group()[:70]}`), a fault that"
            " container saw on its node's GPU, which the box's own kernel log shows"
            if xid
            else ", and nothing of the box"
        )
        raise UsageError(
            f"{where}: {transcript.UNRECOGNISED} (`{copied}` printed a container's log, what that"
            f" container's own commands printed: `{first[:60]}{'...' if len(first) > 60 else ''}`,"
            f" not one output this tool reads{named}): save the box's own"
            " outputs (`nvidia-smi`, `nvidia-smi -L`, `sudo dmesg -T`) run on the box, not in a container."
        )
    if other_form(text) is None and (named := named_output(text)):
        # (dcgmi's, `accelerate env`'s, top's graph mode: named alone; beside others a note)
        raise UnjudgedOutput(f"{where}: {named}")
    raise UsageError(_unread_sentence(where, text))
