"""A saved output read as the live probe would have read it (`invoke facts`, api/offline.py): its
exit code, its unit, the probe name of its nvidia-smi format, the part of it its copied command
kept, where it ran; its other forms (cgroup limit files, RDMA ports' sysfs files, a
`--query-compute-apps` CSV) as that probe's output; and a run's own raw output (raw/<host>/) as
the run read it.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from gpuonboard.api import output_runs, saved_cgroup, saved_forms
from gpuonboard.api.ib_sysfs_files import ib_sysfs_ports
from gpuonboard.api.kernel_command import earlier_boot, logged_order, printed
from gpuonboard.api.narrowed import (
    container_view,
    job_log_view,
    matrix_nvlink,
    matrix_pci,
    narrowed,
    nvlink_whole,
    ran_elsewhere,
)
from gpuonboard.api.saved_kinds import nvidia_smi_failed, talos_cut
from gpuonboard.api.saved_text import decode_saved
from gpuonboard.api.unjudged import UnjudgedOutput
from gpuonboard.api.unreadable import refuse_damaged_xml, refuse_unreadable
from gpuonboard.errors import UsageError
from gpuonboard.facts import disks, memory
from gpuonboard.facts.gpu_probes import GPU_PROBES, WARNING_EXIT
from gpuonboard.facts.kernel_pstore import pstore_alone, pstore_parts, pstore_record, pstore_said
from gpuonboard.facts.nvidia_smi import parse_any
from gpuonboard.facts.nvidia_smi.table_frames import looped
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.facts.stderr_lines import split_stderr_lines
from gpuonboard.once import lazy_re

# the exit code of a saved nvidia-smi that printed only why it failed: a file keeps no exit code,
# and any non-zero one reads as "it ran and failed", as the live probe's (not 124: it hung, nor
# 127: it is not installed, which say other things)
SAVED_FAILURE_EXIT = 1


# `uname -a`'s line: the kernel's name, the host, its release, then its build (`#79-Ubuntu SMP
# ...`, `#31~24.04.1-Ubuntu ...`, `#1 SMP ...`) and the machine
_UNAME_ALL = lazy_re(r"Linux\s+(?P<node>\S+)\s+(?P<release>\d+\.\d+[\w.+~-]*)\s+#\S+(?:\s+[ -~]*)?")
# `uname -r`'s (or /proc/sys/kernel/osrelease's) line, only under that command
_RELEASE = re.compile(r"\d+\.\d+[\w.+~-]*")
_UNAME_R = re.compile(
    r"(?:sudo\s+)?(?:\S*/)?uname\s+(?:-r|--kernel-release)\s*|cat\s+/proc/sys/kernel/osrelease\s*"
)

# a copied prompt line of uname (`$ uname -a`, `root@box:~# uname -r`)
_UNAME_TYPED = re.compile(r"[^\n]{0,80}?[$#%>]\s*(?P<command>(?:sudo\s+)?uname(?:\s+-{1,2}[\w-]+)*)")


def uname_release(text: str, command: str = "") -> str | None:
    """The kernel release a saved `uname -a` names (`5.15.0-1078-nvidia` of `Linux box
    5.15.0-1078-nvidia #79-Ubuntu SMP ... GNU/Linux`, its copied `$ uname -a` line taken off), or
    `uname -r`'s one line under that command; None for any other text. Read as the live `kernel`
    probe: before, such a file was refused as no output known and the rules of a kernel log and
    NVLink asked to save it again (m36e 09, 21)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) == 2 and (typed := _UNAME_TYPED.fullmatch(lines[0])) is not None:
        command, lines = typed.group("command"), lines[1:]  # (its copied prompt line, `$ uname -a`)
    if len(lines) != 1:
        return None
    if (found := _UNAME_ALL.fullmatch(lines[0])) is not None:
        return found.group("release")
    if _UNAME_R.fullmatch(command.strip()) and _RELEASE.fullmatch(lines[0]):
        return lines[0]
    return None


def _uname_node(text: str) -> str:
    """The node name (the box's host name) a saved `uname -a` gives, "" for `uname -r`'s line."""
    found = next((m for line in text.splitlines() if (m := _UNAME_ALL.fullmatch(line.strip()))), None)
    return found.group("node") if found is not None else ""


def probe_form(where: str, text: str, command: str = "") -> tuple[str, ProbeOutput] | None:
    """A saved output of another form than the live probe's, as that probe's output: cgroup
    limit files (`grep . /sys/fs/cgroup/memory.max ...`, or a session's `cat` of them), the RDMA
    ports' sysfs files (`grep . /sys/class/infiniband/*/ports/*/state ...`), a
    `--query-compute-apps` CSV with its header; None for none of them (errors name `where`)."""
    if (release := uname_release(text, command)) is not None:
        return "kernel", ProbeOutput(f"{release}\n", "", 0, host_name=_uname_node(text))
    text = saved_cgroup.cat_listing(command, text) or text
    if (edited := saved_cgroup.edited_limit(text)) is not None:
        raise UnjudgedOutput(f"{where}: {edited}.")  # (read, not judged: said, the rest judged)
    if (limits := saved_cgroup.cgroup_limits(text)) is not None:
        lines, why = limits
        if why:
            raise UsageError(f"{where}: {why}")
        return "cgroup_limits", ProbeOutput(lines, "", 0)
    if (ports := ib_sysfs_ports(text)) is not None:
        lines, why = ports
        if why:
            raise UsageError(f"{where}: {why}")
        return "rdma_ports", ProbeOutput(lines, "", 0)
    if (apps := saved_forms.compute_apps(text)) is not None:
        rows, why = apps
        if why:
            raise UsageError(f"{where}: {why}")
        return "nvidia_smi_apps", ProbeOutput(rows, "", 0)
    return None


def read_as(
    path: Path, where: str, kind: str, text: str, warned: str, copied: str, command: str
) -> tuple[str, ProbeOutput]:
    """A saved output of a known kind as the live probe would have read it: its exit code, one
    output per file, its unit, the part of it its copied command kept."""
    code = 1 if kind == "df" and warned else 0  # (GNU df exits 1 beside a mount it could not read)
    if kind == "nvidia_smi":
        refuse_damaged_xml(where, text)
        kind = gpu_format(text)  # several formats of one box are merged, as the live probe's
        if nvidia_smi_failed(text) and not parse_any(text).gpus:
            # it printed why it failed and no GPU: read as the live probe that failed (a table
            # after a lost GPU's line lists the others: that output is read as it answered)
            code = SAVED_FAILURE_EXIT
    what, runs = output_runs.outputs_in(kind, text)
    if runs > 1 and not (kind == "nvidia_smi_table" and looped(copied or command)):
        # (one GPU's lines repeated, each with its own MIG device: several pods' views of one GPU)
        same = output_runs.repeated_gpu(text) if kind == "nvidia_smi_list" else ""
        why = (
            f"{same}: several pods' or containers' views of one GPU, one output pasted again, or two"
            if same
            else "one pasted twice, or two"
        )
        raise UsageError(
            f"{where}: this file holds {runs} {what} outputs ({why} boxes' in one file), which cannot"
            " be told apart as one box; save one output of one box per file."
        )
    refuse_unreadable(where, kind, text)
    if kind == "free" and not memory.looks_like_meminfo(text):  # (/proc/meminfo is read as it is: KiB)
        text = memory.free_as_kib(path.name, text, command)  # the parsers read `free -k`
    if kind == "df" and saved_forms.df_si(path.name, command):
        text = disks.df_as_si(text)  # `df -H`: the same `Size` header as -h, in powers of 1000
    ran = printed(
        copied or command, text, kind
    )  # (read whole, its wrappers unwrapped; of `a || b`, the one that printed)
    text = logged_order(text, ran, kind)  # (`journalctl -r` prints the newest line first)
    partial, earlier = narrowed(kind, ran), earlier_boot(ran, kind)  # (`journalctl -k -b -1`)
    partial = partial or job_log_view(kind, text)  # (a Slurm job's .out: its allocation's GPUs)
    if kind == "kernel_log" and not partial:
        partial = talos_cut(text)  # (`talosctl dmesg` cut inside a line's head)
    history: tuple[str, ...] = ()
    elsewhere_ = ran_elsewhere(kind, ran)
    if kind == "kernel_log" and pstore_alone(text):
        record = pstore_record(text) or pstore_record(pstore_parts(text)[1][0])
        earlier, partial = True, partial or pstore_said(record)  # (/sys/fs/pstore's crash record)
    elif kind == "kernel_log" and (parts := pstore_parts(text))[1]:
        text, history = parts  # (this boot's log and a crash record in one file: two boots)
    return kind, ProbeOutput(
        text,
        warned,
        code,
        partial,
        matrix_pci(kind, ran),
        earlier_boot=earlier,
        history=history,
        in_container=container_view(kind, ran),
        ran_elsewhere=elsewhere_,
        nvlink_matrix=matrix_nvlink(kind, ran),
        nvlink_whole=not partial and not elsewhere_ and nvlink_whole(kind, ran),
    )


# the live probe that asks nvidia-smi for each format (connection/probe_commands.py), by the parsed source
_GPU_PROBE_OF = {
    "xml": "nvidia_smi",
    "text": "nvidia_smi_q",
    "csv": "nvidia_smi_csv",
    "table": "nvidia_smi_table",
}


def gpu_format(text: str) -> str:
    """The probe name of a saved nvidia-smi output's format, so that an XML and a table of one
    box given together are merged (each answers other questions) rather than refused."""
    return _GPU_PROBE_OF.get(parse_any(text).source, "nvidia_smi")


def named_file(kind: str, out: ProbeOutput, where: str) -> ProbeOutput:
    """An nvidia-smi output with the name of its file, so that a sentence about two of them (one
    failed, one listed GPUs: facts/gpu_merge.py) names the files the user gave."""
    return dataclasses.replace(out, saved_as=Path(where).name) if kind in GPU_PROBES else out


def run_output(path: Path, data: bytes, probe: str, code: int) -> ProbeOutput:
    """A run's own raw output, as the live run read it: no prompt to strip, the probe's own
    command (`free -k`), the exit code its summary.json records, and the stderr lines a reader
    reads that the run kept after it (nvidia-smi's infoROM warning, df's unread mount)."""
    text, stderr = split_stderr_lines(decode_saved(data))
    if probe == "nvidia_smi" and code in (0, WARNING_EXIT):
        refuse_damaged_xml(path, text)
    return ProbeOutput(text, stderr, code)
