"""Why a part of a saved terminal session is not read, in words (api/transcript.py reads the
parts): a `cat /proc/meminfo` cut short, an nvidia-smi command whose output is a format this tool
does not read, a service's journal or failed start, a container engine's own error."""

from __future__ import annotations

import re

from gpuonboard.api.command_line import run, tool_name
from gpuonboard.api.part import Part
from gpuonboard.facts.probe import first_line

_MEMINFO_CUT = re.compile(r"[A-Za-z_()]+:?[ \t]*\d*")


def meminfo_cut(part: Part) -> str:
    """Why a `cat /proc/meminfo` whose output ends on a line cut before its ` kB` is not read:
    cut short, never "not an output this tool reads"; "" for any other part."""
    lines = [line.strip() for line in part.text.splitlines() if line.strip()]
    if part.command.split() != ["cat", "/proc/meminfo"] or not lines or len(lines) > 60:
        return ""
    if not _MEMINFO_CUT.fullmatch(lines[-1]):
        return ""
    return (
        f"{part.where} is cut short: it ends at `{lines[-1][:60]}`, before the"
        " ` kB` the kernel prints after each size"
    )


# what nvidia-smi printed for one of its commands whose output this tool does not read (`mig -lgi`'s
# table, `-i 0 -mig 1`'s answer): a format of its own, never an output said damaged
SMI_NOT_READ = (
    "its output is a format this tool does not read (of nvidia-smi it reads the table, -q, -q -x,"
    " --query-gpu, --query-compute-apps, -L, topo -m and nvlink -s / -e)"
)
# nvidia-smi's subcommands whose output is read, each with the options that print it
_SMI_READ_SUBCOMMANDS = {"topo": ("-m", "--matrix"), "nvlink": ("-s", "--status", "-e", "--errorcounters")}
# nvidia-smi's options that change a setting or run an operation, printing only its outcome
_SMI_OPERATIONS = frozenset(
    [
        "-mig",
        "--multi-instance-gpu",
        "-pm",
        "--persistence-mode",
        "-e",
        "--ecc-config",
        "-p",
        "--reset-ecc-errors",
        "-c",
        "--compute-mode",
        "-r",
        "--gpu-reset",
        "-pl",
        "--power-limit",
        "-ac",
        "--applications-clocks",
        "-rac",
        "--reset-applications-clocks",
        "-lgc",
        "--lock-gpu-clocks",
        "-rgc",
        "--reset-gpu-clocks",
        "-lmc",
        "--lock-memory-clocks",
        "-rmc",
        "--reset-memory-clocks",
        "-am",
        "--accounting-mode",
        "-caa",
        "--clear-accounted-apps",
        "-dm",
        "--driver-model",
        "-fdm",
        "--force-driver-model",
    ]
)


def smi_format_not_read(part: Part, tool: str) -> bool:
    """Whether `part`'s nvidia-smi command prints a format this tool does not read: a subcommand
    other than `topo -m` and `nvlink -s` / `-e` (`mig -lgi`, `dmon`, `vgpu`, `nvlink -c`), or an
    operation that prints only its outcome (`-i 0 -mig 1`, `-pm 1`)."""
    if tool != "nvidia-smi":
        return False
    ran = run(part.command)
    words = next((stage[1:] for stage in ran.stages if stage and tool_name(stage[0]) == tool), [])
    if any(word.split("=", 1)[0] in _SMI_OPERATIONS for word in words):
        return True
    # (a subcommand is nvidia-smi's first word; plain nvidia-smi's options' values are none)
    if not words or not re.fullmatch(r"[a-z][a-z0-9-]*", words[0]):
        return False
    read = _SMI_READ_SUBCOMMANDS.get(words[0])
    return read is None or not any(word.split("=", 1)[0] in read for word in words[1:])


# a unit's journal (`journalctl -u X`, `-xeu X`, `--unit=X`) and the kernel's (`-k`, `--dmesg`)
_UNIT = re.compile(r"(?:^|\s)(?:-[a-zA-Z]*u\s*|--unit[= ]\s*)([^\s|;&]+)")
_KERNEL_FLAG = re.compile(r"(?:^|\s)(?:-[a-zA-Z]*k\b|--dmesg\b)")
# systemctl's word on a unit that did not start (`Job for nvidia-fabricmanager.service failed
# because the control process exited with error code.`)
_JOB_FAILED = re.compile(r"^Job for (\S+) failed\b[^\n]*", re.M)


# (the fabric manager down on an NVSwitch box: CUDA there reports `system not yet initialized`)
_FM_DOWN = " (on an NVSwitch box, GPUs without a running fabric manager cannot run CUDA work)"


def service_said(part: Part, tool: str) -> str:
    """Why a part is not read, where it is a service's: a unit's journal (`journalctl -xeu
    nvidia-fabricmanager.service`: not the kernel's, which this tool reads), or a command whose
    output is systemctl's `Job for X failed ...` (said: the service did not start); "" else."""
    if (
        tool == "journalctl"
        and (unit := _UNIT.search(part.command))
        and not _KERNEL_FLAG.search(part.command)
    ):
        return (
            f"{part.where}: the journal of the service {unit.group(1)} (`journalctl -u`), not the"
            " kernel's: this tool reads the kernel log (`journalctl -k -b`)"
        )
    if job := _JOB_FAILED.search(part.text):
        return (
            f"{part.where} is not an output this tool reads; it shows `{job.group(0).strip()[:120]}`:"
            f" the service {job.group(1)} did not start{_FM_DOWN if 'fabricmanager' in job.group(1) else ''}"
        )
    return ""


def engine_error(part: Part) -> str:
    """Why a command run through a container engine printed no output of the tool it ran, where
    the engine's own error stands in its place (`nvidia-docker | 2017/12/21 05:04:46 Error: nvml:
    ...`, `docker: Error response from daemon: ...`, `ctr: failed to ...`, podman's `Error: ...`,
    kubectl's `error: ...`): the tool never answered; "" otherwise."""
    if not part.command.strip():
        return ""
    engine = next((tool_name(w) for w in run(part.command).container if "=" not in w), "")
    first = first_line(part.text).strip()
    if not engine or not re.match(rf"(?:{re.escape(engine)}\s*[:|]|Error\b|error:)", first):
        return ""
    return (
        f"{part.where} printed {engine}'s own error (`{first[:80]}{'...' if len(first) > 80 else ''}`),"
        f" no output of the command it was to run: not read"
    )
