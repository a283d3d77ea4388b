"""Whether a saved output's copied command shows only part of the box: `df -h /workspace` lists
the filesystems of the paths it was given, not every mount; `nvidia-smi -i 0` shows the GPU it
was asked for, which reads like a 1-GPU box; `ibstat mlx5_7` one device's ports; `df -h | grep
nvme` the lines grep kept. What such an output does not show is not known to be missing
(data_disk, gpu_count and the GPU rules read it as an incomplete probe, rdma_ports as a listing
that is not whole); what it shows is judged as usual. `nvidia-smi topo -mp` prints the matrix of
`topo -m` with PCIe paths where NVLink joins GPUs: it shows no NVLink (interconnect reads it so).
"""

from __future__ import annotations

import re
import shlex

from gpuonboard.api.kernel_command import kernel_log_narrowed, pipeline
from gpuonboard.facts.topo import PCIE_PATHS_ONLY

# the commands of a pipeline after the tool that keep part of its lines
_FILTERS = frozenset({"grep", "egrep", "fgrep", "rg", "head", "tail", "awk", "sed", "cut"})
# df's options that narrow the listing (-t TYPE, -l local only), and those that take a value
_DF_NARROWING = frozenset({"-t", "--type", "-l", "--local"})
_DF_VALUED = frozenset({"-B", "--block-size", "-t", "--type", "-x", "--exclude-type"})


def narrowed(kind: str, command: str) -> str:
    """Why `command` (the copied prompt's, "" if none) shows only part of what the box has, as
    one clause naming the command; "" when it shows all of it (or is not understood)."""
    if not command:
        return ""
    head, *piped = pipeline(command)  # (a `|` inside quotes, `-g 'Xid|NVRM'`, is no pipe)
    if matrix_pci(kind, command):
        # (first: a filter after it keeps lines, this hides what every line could say)
        return f"`{head.strip()}` {PCIE_PATHS_ONLY}"
    found = _args_of(_words(head), _tools(kind))
    for stage in piped:
        stage_words = stage.split()
        if stage_words and stage_words[0].rsplit("/", 1)[-1] in _FILTERS:
            return f"`{command.strip()}` keeps only the lines {stage_words[0]} let through"
    if kind == "kernel_log":  # (another boot's log, a rotated file, some levels: api/kernel_command.py)
        return kernel_log_narrowed(head)
    if found is None:
        return ""
    tool, args = found
    if tool == "df" and _df_narrows(args):
        return f"`{head.strip()}` lists only some of the box's filesystems"
    if tool == "nvidia-smi" and _asks_for_gpus(args):
        return f"`{head.strip()}` shows only the GPUs it asked for"
    if kind == "rdma_ports" and _asks_for_ports(tool, args):
        return f"`{head.strip()}` lists only the devices or ports it asked for"
    return ""


def matrix_pci(kind: str, command: str) -> bool:
    """Whether `command` (a saved `nvidia_topo` output's copied command) is `nvidia-smi topo -mp`
    (`--matrix_pci`): the matrix of PCIe paths only, which shows no NVLink."""
    if kind != "nvidia_topo" or not command:
        return False
    found = _args_of(_words(pipeline(command)[0]), _tools(kind))
    return found is not None and bool({"-mp", "--matrix_pci"} & set(found[1]))


def _words(head: str) -> list[str]:
    """The words of a command line (split as the shell would; by blanks where its quotes do not
    close)."""
    try:
        return shlex.split(head)
    except ValueError:
        return head.split()


def _tools(kind: str) -> tuple[str, ...]:
    """The commands whose saved output is of `kind` (an `nvidia_smi*` kind, and `nvidia_topo`,
    is nvidia-smi's)."""
    if kind == "rdma_ports":
        return ("ibstat", "ibstatus", "ibv_devinfo")
    return ("nvidia-smi",) if kind.startswith(("nvidia_smi", "nvidia_topo")) else (kind,)


def _args_of(words: list[str], tools: tuple[str, ...]) -> tuple[str, list[str]] | None:
    """The tool (one of `tools`) and the words after it (`sudo`, `ssh box` or a path in front
    of it), None without it."""
    for at, word in enumerate(words):
        if (name := word.rsplit("/", 1)[-1]) in tools:
            return name, words[at + 1 :]
    return None


def _df_narrows(args: list[str]) -> bool:
    """df given a path or device (an operand), a type (-t) or local filesystems only (-l)."""
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg == "--" or not arg.startswith("-") or arg == "-":
            return True  # (an operand: `df -h /workspace`)
        if arg.startswith("--"):
            name, eq, _ = arg.partition("=")
            if name in _DF_NARROWING:
                return True
            skip = name in _DF_VALUED and not eq
            continue
        for at, flag in enumerate(arg[1:], 1):
            if f"-{flag}" in _DF_NARROWING:
                return True
            if f"-{flag}" in _DF_VALUED:  # (its value: the rest of the word, or the next word)
                skip = at == len(arg) - 1
                break
    return False


def _asks_for_ports(tool: str, args: list[str]) -> bool:
    """`ibstat mlx5_7` / `ibstatus mlx5_0:1` (a device named), `ibv_devinfo -d mlx5_0` / `-i 1`."""
    if tool == "ibv_devinfo":
        return any(re.fullmatch(r"-[di].*|--ib-(?:dev|port)(?:=.*)?", arg) for arg in args)
    return any(not arg.startswith("-") for arg in args)


def _asks_for_gpus(args: list[str]) -> bool:
    """nvidia-smi given `-i N` / `--id=N` (some GPUs, by index, UUID or bus id)."""
    return any(re.fullmatch(r"-i.*|--id(?:=.*)?", arg) for arg in args)
