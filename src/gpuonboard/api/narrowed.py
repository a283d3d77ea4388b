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
from collections.abc import Sequence

from gpuonboard.api.command_line import (
    KUBE_CLIS,
    Run,
    container_log,
    elsewhere,
    run,
    runs,
    tool_name,
)
from gpuonboard.api.kernel_command import KERNEL_LOG_TOOLS, kernel_log_mixed, kernel_log_narrowed, log_runs
from gpuonboard.facts.cpu import TYPE_FIELDS, lscpu_labels
from gpuonboard.facts.gpu_views import ASKED_FOR, IN_RUNNING_CONTAINER, IN_STARTED_CONTAINER, RUNTIME_GIVEN
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.facts.topo import PCIE_PATHS_ONLY
from gpuonboard.masking import command_said
from gpuonboard.once import lazy_re

# the commands of a pipeline after the tool known to pass every line it gets (a pager, a tee, a
# sort, a time stamper, a re-spacer): any other stage (grep and its z/xz/bz kin, head, awk, sed,
# cut, perl -ne, python3 -c, ack, ag, ...) may keep part of them, and is read as doing so
_PASSES = frozenset(
    {
        "tee",
        "cat",
        "less",
        "more",
        "most",
        "pg",
        "sort",
        "ts",
        "column",
        "nl",
        "expand",
        "tr",
        "iconv",
        "ccze",
        "bat",
        "batcat",
    }
)
# sort's option that keeps one line of each run of equal ones (`sort -u`, `-nu`, `--unique`)
_SORT_UNIQUE = re.compile(r"--unique|-[A-Za-z]*u[A-Za-z]*")


def _passes(name: str, stage: Sequence[str]) -> bool:
    """A pipeline's stage `name` (its words `stage`) passes every line it gets (_PASSES): a `sort
    -u` does not, it keeps one of each line (`nvidia-smi --query-gpu=name --format=csv,noheader |
    sort -u` printed one name on a box of 8 alike: revR F2, gpu_count "7 of the 8 missing")."""
    if name not in _PASSES:
        return False
    return name != "sort" or not any(_SORT_UNIQUE.fullmatch(word) for word in stage[1:])


# df's options that narrow the listing (-t TYPE, -l local only), and those that take a value
_DF_NARROWING = frozenset({"-t", "--type", "-l", "--local"})
_DF_VALUED = frozenset({"-B", "--block-size", "-t", "--type", "-x", "--exclude-type"})


def narrowed(kind: str, command: str) -> str:
    """Why `command` (the copied prompt's, "" if none) shows only part of what the box has, as
    one clause naming the command; "" when it shows all of it (or is not understood). The words
    read are those of the commands it runs (api/command_line.py: `ssh box 'df -h | grep -v
    tmpfs'` is df kept by grep; `df -h 2>/dev/null` is df alone); of a list, any of those the
    output is or was read from that shows part is enough (`dmesg > d.txt; grep NVRM d.txt`)."""
    if not command:
        return ""
    if kind == "kernel_log":  # (no log at all, two boots' logs: api/kernel_command.py)
        if why := kernel_log_mixed(command):
            return why
        found = log_runs(command)
    else:
        found = runs(command, _tools(kind))
    return next((why for ran in found if (why := _narrowed_run(kind, ran))), "")


# the HPC container runtimes a launcher word may name that run on the login's own machine
# (command_line.LAUNCHERS less Slurm's and the many-host shells)
_LOCAL_RUNTIMES = frozenset({"apptainer", "singularity", "enroot"})


def _narrowed_run(kind: str, ran: Run) -> str:
    """narrowed for one command of the copied line."""
    if kind == "nvidia_topo" and _matrix_pci_run(ran):
        # (first: a filter after it keeps lines, this hides what every line could say)
        return f"`{ran.said}` {PCIE_PATHS_ONLY}"
    for stage in ran.stages[1:]:  # (a `|` inside quotes, `-g 'Xid|NVRM'`, is no pipe)
        if stage and not _passes(name := stage[0].rsplit("/", 1)[-1], stage):
            if kind == "lscpu" and _args_of(ran.head, ("lscpu",)) and _drops_no_count(stage):
                continue  # (`lscpu | grep -v Flags`)
            return f"`{ran.said}` keeps only the lines {name} let through"
    if kind == "kernel_log":  # (another boot's log, a rotated file, some levels: api/kernel_command.py)
        return kernel_log_narrowed(ran)
    if container_log(ran.head) and kind.startswith("nvidia_smi"):
        # (a pod's or a container's log: what its own command printed there, a view of its GPUs)
        return f"`{ran.said}` shows only the GPUs of {IN_RUNNING_CONTAINER} (that container's log)"
    found = _args_of(ran.head, _tools(kind))
    if found is None and kind == "lscpu" and any(w.endswith("cpuinfo") for w in ran.head[1:]):
        name = ran.head[0].rsplit("/", 1)[-1]  # (/proc/cpuinfo read by a filter: `grep -E ... /proc/cpuinfo`)
        return "" if name in _PASSES else f"`{ran.said}` keeps only the lines {name} let through"
    if found is None:
        return ""
    tool, args = found
    said = f"`{ran.said}`"
    if ran.container:
        started = ran.started
        where = IN_STARTED_CONTAINER if started else IN_RUNNING_CONTAINER
        if tool == "df":
            return f"{said} lists the filesystems of {where}, not the box's"
        if tool == "nvidia-smi" and not (started and _every_gpu(ran.container)):
            return f"{said} shows only the GPUs of {where}"
    if tool == "nvidia-smi" and not ran.container and (launcher := elsewhere(ran, ("nvidia-smi",))):
        if launcher.split()[0].rsplit("/", 1)[-1] in _LOCAL_RUNTIMES:
            # (on the login's own machine: `--nv` binds the host's GPUs, a job's cgroup may narrow them)
            return f"{said} {RUNTIME_GIVEN}"
        # (a launcher's job sees the GPUs it was given: `srun --gres=gpu:2`; `pdsh`/`clush`
        # another host's: never known to be the box's all)
        return f"{said} shows only the GPUs its launcher gave the job (a share of the box's)"
    if tool == "df" and _df_narrows(args):
        return f"{said} lists only some of the box's filesystems"
    if tool == "nvidia-smi" and _asks_for_gpus(args):
        return f"{said} {ASKED_FOR}"
    if kind == "rdma_ports" and _asks_for_ports(tool, args):
        return f"{said} lists only the devices or ports it asked for"
    return ""


# a batch scheduler's job log: the header or footer its prolog/epilog prints around the job's
# own output (Slurm's `Begin Slurm Prolog: ...`, Torque's `Begin PBS Prologue`, LSF's mailed
# `Sender: LSF System` / `Subject: Job 123: ...`), the lines its launcher prints (`salloc: Granted
# job allocation 570480`, `srun: error: ...`, `slurmstepd: error: ...`), or a job variable its
# script echoed (`SLURM_JOB_ID=3939512`, `PBS_JOBID=...`, `LSB_JOBID=...`)
_JOB_LOG = re.compile(
    r"(?im)^[ \t]*(?:-+[ \t]*)?(?:"
    r"(?P<slurm>begin[ \t]+slurm[ \t]+(?:prolog|epilog)|end[ \t]+slurm[ \t]+(?:prolog|epilog)"
    r"|s(?:alloc|run|batch):[ \t]+(?:granted[ \t]+job[ \t]+allocation|job[ \t]+\d+"
    r"|nodes[ \t]+\S+[ \t]+are[ \t]+ready|error:)"
    r"|slurmstepd(?:-\S+)?:[ \t]|SLURM_JOB_?ID[ \t]*[=:])"
    r"|(?P<pbs>begin[ \t]+pbs[ \t]+prologue|end[ \t]+pbs[ \t]+epilogue|pbs[ \t]+job[ \t]+id:"
    r"|PBS_JOBID[ \t]*[=:])"
    r"|(?P<lsf>sender:[ \t]+lsf[ \t]+system|subject:[ \t]+job[ \t]+\d+:|LSB_JOBID[ \t]*[=:])"
    r")"
)
_SCHEDULERS = {"slurm": "Slurm", "pbs": "PBS", "lsf": "LSF"}
# the variable that names the GPUs a container was given, as its process printed it (`echo
# "NVIDIA_VISIBLE_DEVICES = 2,3"`: the container toolkit shows it only those, nvidia-smi too): a
# list of some of them, never `all` (nor none: `void`, empty). Not CUDA_VISIBLE_DEVICES, which
# CUDA reads and nvidia-smi (NVML) ignores: a box's `echo $CUDA_VISIBLE_DEVICES; nvidia-smi` shows
# every GPU (review revN)
_VISIBLE = re.compile(
    r"(?m)^[ \t]*(?:export[ \t]+)?[\"'“]?(?P<name>NVIDIA_VISIBLE_DEVICES)[ \t]*[=:][ \t]*[\"'“]?"
    r"(?P<value>(?!all\b|void\b|none\b|NoDevFiles\b)[\w,:-]+)"
)


def job_log_view(kind: str, text: str) -> str:
    """Why an nvidia-smi output of `kind` whose text is a batch job's log (a scheduler's prolog or
    epilog around it, its launcher's lines: _JOB_LOG) or holds the GPU list its process was given
    (`CUDA_VISIBLE_DEVICES=0`: _VISIBLE) shows only part of the box: the job's allocation, as a
    container's log is its container's (`narrowed`); "" otherwise. A `topo -m` too: its matrix
    names the GPUs the job was given, never the node's (review revM)."""
    if not kind.startswith(("nvidia_smi", "nvidia_topo")):
        return ""
    if found := _JOB_LOG.search(text):
        scheduler = _SCHEDULERS[next(k for k, v in found.groupdict().items() if v)]
        line = found.group(0).strip().strip("-").strip()
        return (
            f"the output is in a {scheduler} job's log (`{line}`), which shows only the GPUs"
            " the scheduler gave that job (a share of the node's)"
        )
    if found := _VISIBLE.search(text):
        said = f"{found['name']}={found['value']}"
        return f"the output's log prints `{said}`, the GPUs its process was given (a share of the box's)"
    return ""


def klog_container_log(quoter: str) -> str:
    """Why the nvidia-smi output a Kubernetes component's klog record quotes (`quoter`: its message,
    `"Fetched tail of log of instance"`) shows only part of the box: it is a container's log."""
    return (
        f"a Kubernetes component's log record ({quoter} ...=<) quotes a container's log, which"
        f" shows only the GPUs of {IN_RUNNING_CONTAINER} (that container's log)"
    )


def report_in_container(command: str) -> str:
    """Why the GPU lines of a report that runs nvidia-smi itself (collect_env's are `nvidia-smi
    -L`'s) show only the GPUs of the container the copied `command` ran it in (`kubectl exec POD
    -- python collect_env.py`, `docker exec app python collect_env.py`, `docker run --gpus 1 ...`),
    as narrowed says it of nvidia-smi run there; "" where it ran on the box or in a container
    started with every GPU (`docker run --gpus all ...`)."""
    if not command:
        return ""
    ran = run(command)
    if not ran.container or (ran.started and _every_gpu(ran.container)):
        return ""
    where = IN_STARTED_CONTAINER if ran.started else IN_RUNNING_CONTAINER
    return f"`{ran.said}` shows only the GPUs of {where} (the report's nvidia-smi ran there)"


# a copied command run as another login (`sudo -u nobody ...`, `runuser -u bob --`, `su bob -c`)
_OTHER_USER = re.compile(
    r"(?:^|[\s;&|(])(?:sudo\b[^|;&]*?\s(?:-u\s*|--user[=\s])|runuser\s+(?:-u\s*)?|su\s+(?:-\s+|-l\s+)?)"
    r"(?!root\b)([A-Za-z_#][\w.$-]*)"
)


# a docker command line that asks a daemon other than the local one: `DOCKER_HOST=` or
# `DOCKER_CONTEXT=` set before it, or `-H`/`--host`, `-c`/`--context` among docker's own options
# (those between `docker` and `info`)
_DOCKER_INFO = lazy_re(r"(?P<env>(?:\S+=\S*\s+)*)(?:\S*/)?docker\s+(?P<options>(?:\S+\s+)*?)info\b")
_OTHER_DAEMON = lazy_re(r"(?:^|\s)(?:-H|--host|-c|--context)(?:[=\s]\S+|\S+)")
_OTHER_DAEMON_ENV = lazy_re(r"\bDOCKER_(?:HOST|CONTEXT)=\S*")


def _other_daemon(command: str) -> str:
    """The option or variable of a copied `docker info` line that asks a daemon other than the
    local one (`-H ssh://root@build-server`, `DOCKER_HOST=tcp://10.0.0.5:2375`), "" for none."""
    for found in _DOCKER_INFO.finditer(command):
        said = _OTHER_DAEMON.search(found.group("options")) or _OTHER_DAEMON_ENV.search(found.group("env"))
        if said is not None:
            return said.group().strip()
    return ""


def ran_elsewhere(kind: str, command: str) -> str:
    """Where the copied `command` ran nvidia-smi (an output of `kind`) other than on the box as its
    login: in a container (`docker run --gpus all IMAGE nvidia-smi`, `podman run`, `kubectl exec
    POD -- nvidia-smi`), through a launcher (`srun`, `apptainer exec`, `enroot start`: the
    one list, command_line.elsewhere) or as another user (`sudo -u nobody nvidia-smi -q`): one
    clause saying so (the first's); "" where it ran on the box, or where any nvidia-smi of the
    line ran on the box (`nvidia-smi && srun nvidia-smi -L`: the output may be the login's own
    call's, the chain stopped at it). Such a call's failure is its own, never the box's."""
    if command and kind == "docker_info" and (other := _other_daemon(command)):
        # (docker/cli resolves the context `default` whenever -H or DOCKER_HOST is set: its
        # `Context: default` then names no daemon of the box's own; revT F1)
        return f"`{command.strip()}` asked the daemon `{other}` names, not the box's own"
    if command and kind in _HOST_TOOLS:
        said = [_host_launched(ran, _HOST_TOOLS[kind]) for ran in runs(command, _HOST_TOOLS[kind])]
        return said[0] if said and all(said) else ""
    if not command or not kind.startswith("nvidia_smi"):
        return ""
    said = [_ran_elsewhere(ran) for ran in runs(command, ("nvidia-smi",))]
    return said[0] if said and all(said) else ""


# the host outputs a launcher may run on another machine than the box: each kind's commands, and
# the /proc file a saved `cat` of it reads
_HOST_TOOLS = {
    "free": ("free", "/proc/meminfo"),
    "lscpu": ("lscpu", "/proc/cpuinfo"),
    "df": ("df",),
    "lsblk": ("lsblk",),
    "numactl": ("numactl",),
    "nproc": ("nproc",),
}
# where each launcher (command_line.LAUNCHERS) runs the command after it
_LAUNCHED_ON = {
    "srun": "on a node Slurm chose",
    "salloc": "on a node Slurm chose",
    "pdsh": "on the nodes pdsh was given",
    "clush": "on the nodes clush was given",
}


def _host_launched(ran: Run, tools: tuple[str, ...]) -> str:
    """ran_elsewhere's clause for one run of a host tool (lscpu, free, df, ...; "" where the
    login's shell ran it): a Slurm job step or pdsh runs it on other machines, an HPC container
    runtime (`apptainer exec IMG`) in a container whose view may not be the box's (the same
    launchers as nvidia-smi's, command_line.LAUNCHERS)."""
    if ran.container or not (launched := elsewhere(ran, tools)):
        return ""
    where = _LAUNCHED_ON.get(tool_name(ran.head[0]), f"in a container `{command_said(launched)}` started")
    return f"`{ran.said}` ran {where}, not certainly the box"


def _ran_elsewhere(ran: Run) -> str:
    """ran_elsewhere's clause for one run of nvidia-smi ("" where the login's shell ran it)."""
    if ran.container:
        return f"`{ran.said}` ran in a container"
    if container_log(ran.head):
        return f"`{ran.said}` printed a container's log, its own command's output"
    if launched := elsewhere(ran, ("nvidia-smi",)):
        return f"`{ran.said}` ran through `{launched}`"
    if _OTHER_USER.search(ran.said):
        return f"`{ran.said}` ran as another user"
    return ""


def report_filtered(command: str) -> str:
    """Why the outputs a report holds (collect_env's GPU list, its lscpu) are part of what the
    report printed, where the copied `command` kept some of its lines (`python collect_env.py |
    head -21`, `| grep -A8 GPU`), as narrowed says it of a tool's output; "" otherwise."""
    for ran in runs(command, ()) if command else ():
        for stage in ran.stages[1:]:
            if stage and (name := stage[0].rsplit("/", 1)[-1]) not in _PASSES:
                return f"`{ran.said}` keeps only the lines {name} let through"
    return ""


# what a host tool's output (a kind's) shows of a container it ran in: lxcfs serves a container
# its own limits as /proc/meminfo, /proc/cpuinfo and the online CPUs (free's total is its memory
# limit, lscpu's Off-line CPU(s) list the CPUs outside its CPU set); without lxcfs, the host's
_CONTAINER_VIEWS = {"free": "the memory", "lscpu": "the CPUs", "df": "the disks"}
# the file each of those tools reads, which a saved `cat` of it is
_CONTAINER_FILES = {"free": "/proc/meminfo", "lscpu": "/proc/cpuinfo"}


def container_view(kind: str, command: str) -> str:
    """Where the copied `command` ran the host tool whose output is of `kind` (free or
    /proc/meminfo, lscpu or /proc/cpuinfo) inside a container (`docker exec app free -h`, `lxc
    exec c1 -- lscpu`, `kubectl exec pod -- cat /proc/meminfo`): one clause saying so, naming the
    command; "" where it ran on the box (or the kind is another)."""
    what = _CONTAINER_VIEWS.get(kind)
    if not command or what is None:
        return ""
    ran = next((ran for ran in runs(command, _tools(kind)) if _ran_inside(ran, kind)), None)
    if ran is None:
        return ""
    where = IN_STARTED_CONTAINER if ran.started else IN_RUNNING_CONTAINER
    return f"`{ran.said}` shows {what} of {where}, not the box's"


def container_prompt_view(kind: str, host: str, command: str, text: str = "") -> str:
    """Where a session's prompt names a container's shell (`root@3f4e5a6b7c8d:/#`: Docker's
    default host name, the container ID) and the command there printed free, lscpu or df: one
    clause saying the output is that container's view, naming the command; "" for another kind.
    A df's `text` may say otherwise: a container's `/` is its engine's (an overlay, `none`, a
    ZFS dataset, `/dev/mapper/docker-...`), never a disk's partition, so a df whose `/` is one
    (`/dev/nvme0n1p2`) ran on a box whose host name only looks like a container ID."""
    what = _CONTAINER_VIEWS.get(kind)
    if what is None or (kind == "df" and _BOX_ROOT.search(text)):
        return ""
    return (
        f"`{command_said(command)}` ran at the prompt of `{host}`, a container's shell (its host name a"
        f" container ID), so it shows {what} of that container, not the box's"
    )


# a df row of a device's partition mounted at `/` (`/dev/nvme0n1p2 102626232 ... /`): the box's
# root, not a container engine's (Docker's devicemapper `/dev/mapper/docker-...` aside)
_BOX_ROOT = re.compile(r"(?m)^[ \t]*/dev/(?!mapper/docker-)\S+[ \t].*[ \t]/[ \t]*$")


def _ran_inside(ran: Run, kind: str) -> bool:
    """Whether the stage of `ran` that printed the output of `kind` (the first running its tool or
    reading its /proc file, else the first) ran in a container: of `docker exec app true | free -h`
    only `true` did."""
    file = _CONTAINER_FILES.get(kind, "")
    printed = next(
        (at for at, words in enumerate(ran.stages) if any(tool_name(w) == kind or w == file for w in words)),
        0,
    )
    return bool(ran.container) and printed < ran.inside


# lines of lscpu a grep -v must keep, in English and in every language lscpu is translated into
# (its labels of these fields: data/lscpu_labels.yml): what the CPU count and cores are read from
_COUNT_FIELDS = ("Architecture", "CPU(s)", "On-line CPU(s) list", "Off-line CPU(s) list", *TYPE_FIELDS)
# the options of a grep -v read here (any other, a context option, `-f FILE`, is read as narrowing)
_GREP_FLAGS = frozenset("vEFGiwsx")


# values those lines hold (a CPU list, a count, ARM's `-`, an architecture)
_COUNT_VALUES = ("0-63,128-191", "1,3,5-7", "0", "2", "16", "-", "x86_64", "aarch64", "ppc64le")


def _count_lines() -> list[str]:
    """Lines of lscpu for each label of _COUNT_FIELDS, English and translated, and each of
    _COUNT_VALUES."""
    labels = [label for label, field in lscpu_labels().items() if field in _COUNT_FIELDS]
    return [f"{label}:   {value}" for label in (*_COUNT_FIELDS, *labels) for value in _COUNT_VALUES]


def _drops_no_count(stage: list[str]) -> bool:
    """Whether a pipeline's stage is a `grep -v` (egrep, fgrep) whose patterns match none of the
    lines lscpu's counts are read from (_COUNT_FIELDS): `grep -v Flags`, `grep -v '^Vulnerability'`."""
    name, flags, patterns, operands = stage[0].rsplit("/", 1)[-1], "", [], []
    words = iter(stage[1:])
    for word in words:
        if word == "-e":
            patterns.append(next(words, ""))
        elif word.startswith("-e") and len(word) > 2:
            patterns.append(word[2:])
        elif word.startswith("-") and len(word) > 1:
            flags += word[1:]
        else:
            operands.append(word)
    if len(operands) != (0 if patterns else 1):
        return False  # (a file named after the pattern: grep reads that, not lscpu)
    patterns += operands
    if name not in ("grep", "egrep", "fgrep") or "v" not in flags or not set(flags) <= _GREP_FLAGS:
        return False
    try:
        found = [_grep_regex(p, name, flags) for p in patterns]
    except re.error:
        return False
    return not any(regex.search(line) for regex in found for line in _count_lines())


def _grep_regex(pattern: str, name: str, flags: str) -> re.Pattern[str]:
    """Python's regex of a grep pattern: fixed (-F, fgrep), extended (-E, egrep) or basic (its
    `\\|`, `\\(`, `\\)`, `\\+`, `\\?` are ERE's operators, its bare ones literal)."""
    if "F" in flags or name == "fgrep":
        text = re.escape(pattern)
    elif "E" in flags or name == "egrep":
        text = pattern
    else:
        text = re.sub(r"\\([|()+?{}])|([|()+?{}])", lambda m: m.group(1) or "\\" + m.group(2), pattern)
    if "x" in flags:
        text = f"^(?:{text})$"
    elif "w" in flags:
        text = rf"(?<!\w)(?:{text})(?!\w)"
    return re.compile(text, re.IGNORECASE if "i" in flags else 0)


def matrix_pci(kind: str, command: str) -> bool:
    """Whether `command` (a saved `nvidia_topo` output's copied command) runs `nvidia-smi topo
    -mp` (`--matrix_pci`; `ssh box 'nvidia-smi topo -mp'`): the matrix of PCIe paths only, which
    shows no NVLink."""
    return kind == "nvidia_topo" and bool(command) and _matrix_pci_run(run(command, _tools(kind)))


def matrix_nvlink(kind: str, command: str) -> bool:
    """Whether `command` (a saved `nvidia_topo` output's copied command) runs `nvidia-smi topo
    -m` (`--matrix`) without `p`: the matrix that prints NV# wherever NVLink joins two GPUs."""
    if kind != "nvidia_topo" or not command:
        return False
    found = _args_of(run(command, _tools(kind)).head, ("nvidia-smi",))
    return (
        found is not None
        and bool({"-m", "--matrix"} & set(found[1]))
        and not _matrix_pci_run(run(command, _tools(kind)))
    )


def nvlink_whole(kind: str, command: str) -> bool:
    """Whether `command` (a saved nvidia-smi output's copied command) runs `nvidia-smi nvlink` on
    the box's login with no `-i` / `--id` and no filter after it: its listing names every GPU the
    box's nvidia-smi sees (m35e 14: `root@dl380ag11:~# nvidia-smi nvlink -s`, 2 GPUs of 8 ordered,
    was unverified as if a view of some GPUs saved without its command)."""
    if not kind.startswith(("nvidia_smi", "nvidia_nvlink")) or not command:
        return False
    found = runs(command, ("nvidia-smi",))
    if len(found) != 1 or found[0].container or len(found[0].stages) > 1:
        return False
    args = _args_of(found[0].head, ("nvidia-smi",))
    if args is None or args[0] != "nvidia-smi" or not args[1] or args[1][0] != "nvlink":
        return False
    words = args[1][1:]
    return not any(w in ("-i", "--id") or w.startswith(("-i", "--id=")) for w in words)


def _matrix_pci_run(ran: Run) -> bool:
    found = _args_of(ran.head, ("nvidia-smi",))
    return found is not None and bool({"-mp", "--matrix_pci"} & set(found[1]))


def _tools(kind: str) -> tuple[str, ...]:
    """The commands whose saved output is of `kind` (an `nvidia_smi*` kind, and `nvidia_topo`,
    is nvidia-smi's)."""
    if kind == "rdma_ports":
        return ("ibstat", "ibstatus", "ibv_devinfo")
    if kind == "kernel_log":
        return tuple(sorted(KERNEL_LOG_TOOLS))
    return ("nvidia-smi",) if kind.startswith(("nvidia_smi", "nvidia_topo", "nvidia_nvlink")) else (kind,)


def _args_of(words: list[str], tools: tuple[str, ...]) -> tuple[str, list[str]] | None:
    """The tool (one of `tools`) and the words after it (`sudo`, `ssh box` or a path in front
    of it), None without it."""
    for at, word in enumerate(words):
        if (name := word.rsplit("/", 1)[-1]) in tools:
            return name, words[at + 1 :]
    return None


# the options and variables that choose a container's GPUs (Docker's --gpus, CDI's --device, the
# NVIDIA runtime's NVIDIA_VISIBLE_DEVICES, nvidia-docker 1's NV_GPU)
_ASSIGNED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*", re.S)
_GPU_CHOICE = re.compile(
    r"(?:--gpus|--device|-e|--env)=?(?P<opt>.*)|(?P<var>(?:NVIDIA_VISIBLE_DEVICES|NV_GPU)=.*)", re.S
)


def _every_gpu(container: tuple[str, ...]) -> bool:
    """Whether a container that `docker run` (podman's, nerdctl's, nvidia-docker's) started sees
    every GPU: each GPU choice among its words says all (`--gpus all`, `--gpus
    all,capabilities=utility`, `--gpus count=all`, `--device nvidia.com/gpu=all`, `-e
    NVIDIA_VISIBLE_DEVICES=all`), and one that names some (`--gpus 2`, `--gpus device=0`, `-e
    NVIDIA_VISIBLE_DEVICES=0,1`, `--device /dev/nvidia0`) says part. A run that chooses none
    (`--runtime=nvidia`, or the default runtime) gets the image's NVIDIA_VISIBLE_DEVICES, `all`
    in NVIDIA's CUDA images and those built on them, and no GPU (no nvidia-smi) without it:
    read as every GPU, so a count the box falls short of still fails. A compose service or a
    pod chooses its GPUs in a file this command does not show: part."""
    if _chooses_gpus_elsewhere(container):
        return False
    chosen: list[str] = []
    for at, word in enumerate(container):
        if not (m := _GPU_CHOICE.fullmatch(word)):
            continue
        value = m.group("var") or m.group("opt") or (container[at + 1] if at + 1 < len(container) else "")
        if _chooses_gpus(word, value):
            chosen.append(value)
    return all(_says_all(value) for value in chosen)


def _chooses_gpus_elsewhere(container: tuple[str, ...]) -> bool:
    """Whether the engine of a container's words (its own word: the first after any `VAR=x`, its
    path left off) is compose (`docker-compose`, `docker compose` before its verb) or a Kubernetes
    CLI, which chooses the GPUs in a file; a container's name, image or volume (`--name oc`, `-v
    /srv/k:/k`) is no engine."""
    words = [w for w in container if not _ASSIGNED.fullmatch(w)]
    engine = tool_name(words[0]) if words else ""
    if engine in {"docker-compose", "podman-compose", *KUBE_CLIS}:
        return True
    verb = next((at for at, w in enumerate(words) if w in ("run", "exec")), len(words))
    return "compose" in words[1:verb]


def _chooses_gpus(word: str, value: str) -> bool:
    """Whether a container option (`word`, its `value`) chooses GPUs: --gpus, an env of
    NVIDIA_VISIBLE_DEVICES, a CDI GPU or a GPU's device node (not /dev/nvidiactl, -uvm, ...)."""
    if word.startswith(("-e", "--env")):
        return value.startswith(("NVIDIA_VISIBLE_DEVICES", "NV_GPU"))
    if word.startswith("--device"):
        return value.startswith(("nvidia.com/gpu", "/dev/nvidia")) and not value.startswith(
            ("/dev/nvidiactl", "/dev/nvidia-")
        )
    return True


def _says_all(value: str) -> bool:
    """Whether one GPU choice's value gives every GPU (`all` among its comma-separated fields)."""
    if value.startswith(("NVIDIA_VISIBLE_DEVICES=", "NV_GPU=", "nvidia.com/gpu=")):
        value = value.partition("=")[2]
    elif value.startswith("/dev/nvidia"):
        return False
    fields = [f.strip().strip("'\"") for f in value.strip("'\"").split(",")]
    return any(f in ("all", "count=all") for f in fields)


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


def shown_faults(kind: str, out: ProbeOutput) -> frozenset[str]:
    """The GPU faults an nvidia-smi output shows, each as 'GPU KEY: FAULT' (KEY: the GPU's PCI
    address, else its UUID, else its index): a GPU ERR!, lost or needing a reset, a cell it could
    not read, a GPU it could not open. A container's view may hide GPUs, never invent a fault: a
    fault it shows that the login's output beside it does not is the box's (review revP F3)."""
    from gpuonboard.facts.gpu_list import parse_gpu_list
    from gpuonboard.facts.gpu_probes import GPU_PROBES
    from gpuonboard.facts.gpu_unopened import unopened_gpus
    from gpuonboard.facts.nvidia_smi.faults import FAULT_WORDS
    from gpuonboard.facts.nvidia_smi.sniff import parse_any

    if kind not in GPU_PROBES and kind != "nvidia_smi":
        return frozenset()
    text = out.stdout
    gpus = [*parse_any(text).gpus, *unopened_gpus([text])]
    said = {
        f"GPU {g.pci_bus_id or g.uuid or g.index}: {f}" for g in gpus for f in (*g.faults, *g.cell_faults)
    }
    for listed in parse_gpu_list(text).gpus if kind == "nvidia_smi_list" else ():  # (`-L`'s name, UUID)
        line = f"{listed.name} {listed.uuid}".lower()
        said |= {f"GPU {listed.uuid or listed.index}: {w}" for w in FAULT_WORDS if w.lower() in line}
    return frozenset(said)
