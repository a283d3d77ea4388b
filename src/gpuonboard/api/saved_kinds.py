"""The kind of a saved command output, from its content alone (offline judging): which live
probe printed it (nvidia-smi in any format, topo -m, lscpu, free, df, lsblk, ...), the fabric
probes' outputs (kernel log, nvlink, RDMA ports), and the kinds shown but not judged (docker
info, iperf3 -J, numactl --hardware, ibdev2netdev); a failing nvidia-smi's own sentences."""

from __future__ import annotations

import re

from gpuonboard.api import saved_forms
from gpuonboard.api.failure_record import failure_record, unmarked_failure
from gpuonboard.api.shown import ibdev2netdev_line, read_docker_version
from gpuonboard.facts.cpu import looks_like_cpuinfo, looks_like_lscpu
from gpuonboard.facts.disks import df_header, looks_like_lsblk_pairs
from gpuonboard.facts.elision import ELISION
from gpuonboard.facts.gpu_unopened import names_unopened
from gpuonboard.facts.infiniband import no_rdma_device
from gpuonboard.facts.kernel_kinds import driver_name
from gpuonboard.facts.kernel_log import KERNEL_STAMP
from gpuonboard.facts.kernel_shapes import TALOS_LINE, journal_shaped, plain_kernel_text
from gpuonboard.facts.kernel_wrap import indented, program_of
from gpuonboard.facts.lsblk_table import looks_like_lsblk_table
from gpuonboard.facts.memory import (
    looks_like_free,
    looks_like_meminfo,
    looks_like_top_memory,
    looks_like_vmstat_memory,
    numactl_top_cut,
)
from gpuonboard.facts.mount_table import looks_like_mount_table
from gpuonboard.facts.nvidia_smi.query_csv import is_query_header
from gpuonboard.facts.nvidia_smi.sniff import Q_RECORD
from gpuonboard.facts.nvidia_smi_failure import nvidia_smi_failure
from gpuonboard.once import lazy_re

# recognised and shown, not judged (no rule reads them offline): kind -> what it is


_GPU_LINE = re.compile(r"^GPU \d+: .*$")
_MIG_LINE = re.compile(r"^\s*MIG \S+\s+Device\s+\d+:")  # (at any indentation: a page may lose it)
# (a link line flush left, as a web page that lost the indentation shows it, with its speed or
# `<inactive>`: Lambda's docs' `Link 0: 26.562 GB/s`)
_NVLINK_LINE = re.compile(
    r"^\s+Link \d+[:,]|does not have or support Nvlink|Nvlink queries are not supported"
    r"|all links are inActive|^Link \d+: (?:\d+(?:\.\d+)? GB/s|<inactive>)\s*$",
    re.I,
)
# a listing's last line where it is the start of the next GPU's header, cut before its colon
_GPU_HEADER_START = re.compile(r"^G(?:P(?:U(?: \d*)?)?)?$")
# a line of the kernel's own by its shape, for a log printed without stamps (printk.time off,
# `dmesg -t`): the boot banner and the boot's firmware lines, a driver's line about a PCI device
# (`bnx2 0000:0b:00.0: ...`, dev_printk's `driver address: `), a SCSI device's (`scsi 4:0:0:0:`,
# `sd 0:0:0:0:`, `scsi4 : hpsa`), an ATA / NVMe / USB port's, the NVIDIA driver's, EDAC's and
# the machine-check handler's, DRM's (`[drm] Initialized nvidia-drm ...`). One word is no
# evidence: several such lines, of several kinds (a grep keeps one or two), and most of the text
# (_UNSTAMPED_LEAST), make a log.
_KERNEL_SHAPE = re.compile(
    r"^(?:Linux version \d\S*\s+\(|(?:Kernel )?[Cc]ommand line: |BIOS-e820: |BIOS-provided physical RAM map"
    r"|e820: |ACPI: |DMI: |SMBIOS \d|\S+ [0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]: "
    r"|(?:scsi|sd|sr|sg) \d+:\d+:\d+:\d+: |scsi\d+ : |ata\d+(?:\.\d+)?: |nvme nvme\d+: |usb \d+-[\d.]+: "
    r"|nvidia(?:-\w+)?: |NVRM: |nvgpu: |EDAC |mce: |\[Hardware Error\]: |\[drm(?::\S+(?: \[\w+\])?)?\] )"
)

# a kernel log line: one that starts with a kernel log's stamp (facts/kernel_log.py KERNEL_STAMP:
# dmesg's in all its time forms, --decode's, a syslog or journalctl line's `... kernel: `); or
# any NVRM / SXid line. An ISO time alone is no kernel's: other tools print it at the head of
# their own lines (`docker logs -t`, `kubectl logs --timestamps`, Go's zap logger under
# `olares-cli gpu status`: `2026-01-11T00:49:13.833-0600    Installed: true`, measure32c 10);
# only dmesg's own (`--time-format=iso`: `2024-11-15T05:39:15,491363+00:00`, a comma and six
# digits) is, or an ISO time before a line of the kernel's shape (_KERNEL_SHAPE)
_ISO_TIME = r"\d{4}-\d\d-\d\dT\d\d:\d\d"
_DMESG_ISO = rf"{_ISO_TIME}:\d\d,\d{{6}}[+-]\d\d:?\d\d "
# (the head alternatives matched at the line's start, the others looked for by their words
# first: one pattern of both searched every line at every column, a tenth of a sweep's time)
_KERNEL_HEAD = lazy_re(
    rf"(?!{_ISO_TIME})(?:{KERNEL_STAMP.pattern})|{_DMESG_ISO}|{_ISO_TIME}[^\n]{{0,60}}?\bkernel: "
    rf"|{_ISO_TIME}\S* +(?:{_KERNEL_SHAPE.pattern[1:]})"
    r"|# source: (?:dmesg|sudo -n dmesg|journalctl)"
)
_SXID_WORD = lazy_re(r"nvidia-nvswitch\d+: SXid")
# (the Jetson / Orin / Thor iGPU's driver, as NVRM is the discrete GPU's: `nvgpu: 17000000.gpu
# gv11b_fb_mmu_fault_info_dump:294  [ERR]  [MMU FAULT] ...`, a serial console's or `journalctl -o
# cat`'s line without a stamp: measure39c 19)
_NVGPU_WORD = lazy_re(r"(?:^|\s)nvgpu: \S+ ")


def kernel_shaped(line: str) -> bool:
    """The line, read with no journal or syslog head, would be the kernel's: it starts with a
    kernel log's stamp (or a capture's `# source: dmesg` line), or is an NVRM, SXid or nvgpu line."""
    return (
        _KERNEL_HEAD.match(line) is not None
        or "NVRM: " in line
        or ("SXid" in line and _SXID_WORD.search(line) is not None)
        or ("nvgpu: " in line and _NVGPU_WORD.search(line) is not None)
    )


# a line's ISO time at its head, whoever printed it
_ISO_HEAD = re.compile(rf"^{_ISO_TIME}")
_UNSTAMPED_LEAST = 3


def unstamped_kinds(text: str) -> list[str]:
    """The kinds of kernel line (_shape_family) of a text most of whose lines are the kernel's by
    their shape but carry no stamp, too few of them or of too few kinds to read as a log (a
    `dmesg -t | grep` keeps one or two kinds): the documented refusal asks for `dmesg` with its
    stamps; [] for any other text."""
    lines = [line.strip() for line in text.splitlines() if line.strip()][:200]
    matched = [m for line in lines if not _kernel_line(line) and (m := _KERNEL_SHAPE.match(line))]
    if not matched or len(matched) * 2 < len(lines):
        return []
    return _families(matched, lines)


def _families(matched: list[re.Match[str]], lines: list[str]) -> list[str]:
    """The kinds of kernel line (_shape_family) of the unstamped lines `matched` among `lines`,
    DRM's (`[drm] Initialized nvidia-drm ... for 0000:17:00.0`) one of them only where every line
    holds `nvidia` (an excerpt no rule passes: kernel_quoted.nvidia_only): a grep by the GPUs' bus
    addresses keeps the PCI core's, the driver's and DRM's lines of them, and DRM's must not make
    its two kinds the three of a log (revR F1)."""
    kinds = list(dict.fromkeys(_shape_family(m.group(0)) for m in matched))
    if "[drm]" in kinds and not all("nvidia" in line.lower() for line in lines):
        kinds.remove("[drm]")
    return kinds


def _shape_family(shape: str) -> str:
    """The kind of kernel line a _KERNEL_SHAPE match is (`EDAC`, `ACPI:`, `nvme`, a PCI driver's
    name): a `dmesg -t | grep -i edac` holds one or two kinds, a whole log many (review BBB: three
    EDAC lines of a grep passed "no Xid in the kernel log")."""
    # (DRM's lines, `[drm] Initialized nvidia-drm ...`, `[drm:nv_drm_load [nvidia_drm]] ...`: one kind)
    if shape.startswith("[drm"):
        return "[drm]"
    return driver_name(shape.split()[0]) if shape.split() else shape


# a `talosctl dmesg` line that ends inside its head, before any message: `10.20.30.29: kern:    info`,
# `10.20.30.29: kern:  notice: [2023-04-02T08:2`, `10.20.30.29: ke`
_TALOS_HEAD_ONLY = re.compile(r"^\S+: (?:\w+: *\w+(?:: \[[^\]]*\]?:?)?|\w*:?)\s*$")


def talos_cut(text: str) -> str:
    """Why a `talosctl dmesg` log is cut short ("" where it is not one, or not cut): its last
    line ends inside its head, before the message (an excerpt cut mid-line), so the log may have
    gone on with any line, an Xid's too."""
    lines = [line for line in text.splitlines() if line.strip()]
    talos = sum(1 for line in lines[:200] if TALOS_LINE.match(line))
    if not lines or talos * 2 < min(len(lines), 200) or not _TALOS_HEAD_ONLY.match(lines[-1].strip()):
        return ""
    return f"its last line ends inside its head, before its message (`{lines[-1].strip()[:80]}`)"


def _messages(lines: list[str], most: int | None = None) -> list[str]:
    """The lines without the continuation lines of a message: journald prints a multi-line
    message's further lines indented to its message's column (`journalctl -k --no-hostname`:
    `Aug 18 23:50:24 kernel: NVRM: ... Check failed: ...` then `                        [NV_ERR_
    INVALID_STATE] ...`), dmesg to its stamp's; each is part of the message above it, a kernel
    line or another program's, not a line of no log (m32d: such a journal was refused). The
    first `most` of them, where given (a reader of a text's head: an 8-GPU `-q` is thousands)."""
    out: list[str] = []
    for line in lines:
        if out and indented(line) and (_kernel_line(out[-1]) or _other_program(out[-1])):
            continue
        if len(out) == most:
            break
        out.append(line)
    return out


def _kernel_line(line: str) -> bool:
    """The line is the kernel's own: a syslog or journal line of the program `kernel`, a
    `talosctl dmesg` line of the facility `kern`, or (unprefixed) a line with a kernel log's
    stamp, an NVRM or SXid line."""
    if program := program_of(line):
        return program == "kernel"
    if talos := TALOS_LINE.match(line):
        return talos.group("facility") == "kern"
    return kernel_shaped(line)


def _other_program(line: str) -> bool:
    """The line is a syslog, journal or `talosctl dmesg` line of another program than the kernel."""
    if program := program_of(line):
        return program != "kernel"
    talos = TALOS_LINE.match(line)
    return talos is not None and talos.group("facility") != "kern"


def log_line(line: str) -> bool:
    """The line is a kernel log's by its own marks (_kernel_line), or a syslog's or journal's line
    of another program, which a kernel log saved from one holds beside the kernel's."""
    return _kernel_line(line) or _other_program(line)


# `nvidia-smi nvlink -e`: `Link N: <counter name>: <value>` (the -s lines are `Link N: 25 GB/s`)
_NVLINK_ERR_LINE = re.compile(r"^\s*Link \d+: [^:]*[A-Za-z][^:]*: \S")
# the sysfs probe's line (facts/infiniband.py): DEV PORT STATE PHYS RATE [GUID pf|vf] LAYER
_IB_SYSFS_LINE = re.compile(r"^\S+\t\d+\t\d+: [A-Z_]+\t[^\t]*\t[^\t]*(?:\t[^\t]*\t(?:pf|vf)?)?\t[^\t]*$")
# the head of a device's block in the other RDMA tools parse_rdma (facts/infiniband.py) reads, as
# it tells them apart: ibstat `CA 'mlx5_0'`, ibstatus `Infiniband device 'mlx5_0' port 1 status:`
# (with the blanks a paste put before it: m36b 04)
_IB_BLOCK_HEAD = re.compile(
    r"^[ \t]*(?:CA\s+'[^']+'\s*$|Infiniband device\s+'[^']+'\s+port\s+\d+\s+status:)", re.M
)

# `podman info` (YAML): its `host:` mapping first (after `--debug`'s `debug:` one), with podman's
# own keys in it
_PODMAN_INFO = re.compile(
    r"(?:debug:[ \t]*\n(?:[ \t].*\n){1,12})?host:[ \t]*\n(?:[ \t].*\n){0,12}?"
    r"[ \t]+(?:buildahVersion|conmon|ociRuntime|cgroupManager):"
)
# `numactl --hardware` (`-H`): `available: 2 nodes (0-1)`, then each node's `node 0 cpus: ...`
_NUMACTL_HEAD = re.compile(r"^available: \d+ nodes? \(")
_NUMACTL_CPUS = re.compile(r"^node \d+ cpus:")


# `docker info | grep -i runtime`: its `Runtimes:` / `Default Runtime:` lines (one blank in from
# docker 19.03), any other line with the word, and docker's stderr warnings a grep passes
# through (docker/for-linux#1531: `WARNING: daemon is not using the default seccomp profile`)
_DOCKER_RUNTIME_FIELD = re.compile(r"^ ?(?:Runtimes|Default Runtime): *\S")


def _docker_runtime_lines(lines: list[str]) -> bool:
    """The lines are `docker info | grep -i runtime`'s (see _DOCKER_RUNTIME_FIELD)."""
    return any(_DOCKER_RUNTIME_FIELD.match(line) for line in lines) and all(
        "runtime" in line.lower() or line.startswith("WARNING: ") for line in lines
    )


# `systemctl status nvidia-fabricmanager`: its unit line (a state glyph before it: `●`, `○`, `×`,
# `*` where the terminal had no UTF-8) and its `Active:` line, or its word on a unit not installed
_FM_STATUS_UNIT = re.compile(
    r"^[ \t]*(?:[●○×✕↻*][ \t]*)?nvidia-fabricmanager(?:\.service)?[ \t]+-[ \t]", re.M
)
_FM_STATUS_TYPED = re.compile(r"\bsystemctl\b.*\bstatus\b.*\bnvidia-fabricmanager\b")
_FM_STATUS_ACTIVE = re.compile(r"^[ \t]*Active:[ \t]+[a-z]", re.M)
_FM_NO_UNIT = re.compile(r"\A\s*Unit nvidia-fabricmanager(?:\.service)? could not be found\.\s*\Z")


def fabric_manager_status(text: str) -> bool:
    """Whether `text` is `systemctl status nvidia-fabricmanager`'s output: the unit's line first,
    its `Active:` line below (its journal lines after them are the unit's log, not read)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if lines and _FM_STATUS_TYPED.search(lines[0]):
        lines = lines[1:]  # (its prompt line above it: `dell@dell:~$ systemctl status nvidia-fabricmanager`)
    return bool(
        lines
        and _FM_STATUS_UNIT.match(lines[0])
        and any(_FM_STATUS_ACTIVE.match(line) for line in lines[1:4])
    ) or bool(_FM_NO_UNIT.match(text))


def detect_fabric_kind(text: str) -> str | None:
    """The fabric probes' outputs and the kinds shown but not judged (docker info, iperf3 -J),
    from content alone; None for any other text."""
    head = text.lstrip()[:4000]
    lines = [line for line in text.splitlines() if line.strip()]
    while lines and ELISION.match(lines[0]):  # (a paste's `....` above what it kept)
        lines = lines[1:]
    if not lines:
        return None
    if fabric_manager_status(text):
        return "fabric_manager"
    if head.startswith("{") and '"intervals"' in text and '"start"' in text:
        return "iperf3"
    if _NUMACTL_HEAD.match(lines[0]) and any(_NUMACTL_CPUS.match(line) for line in lines[1:4]):
        return "numactl"
    if numactl_top_cut(text):  # (its `available:` line lost: a page that begins mid-output)
        return "numactl"
    if all(ibdev2netdev_line(line) for line in lines):  # (plain or `-v`)
        return "ibdev2netdev"
    if _PODMAN_INFO.match(text.lstrip()):
        return "podman_info"
    if re.search(r"^Server Version:", head, re.M):
        return "docker_info"
    if re.search(r"^Client:", head, re.M):
        # (`docker version`, its Server section's ` Engine:` (or, before docker 17.06, its
        # ` Version:`) and no `Server Version:` line of docker info's: another command, read
        # beside a docker info, never its second copy)
        version = read_docker_version(text.lstrip("\n"))
        if version is not None and not re.search(r"^[ \t]*Server Version:", text, re.M):
            return "docker_version"
        if re.search(r"^Server:", text, re.M):
            return "docker_info"
    if _docker_runtime_lines(lines):
        return "docker_info"
    if (
        re.search(r"^[ \t]*hca_id:", head, re.M)  # ibv_devinfo
        or _IB_BLOCK_HEAD.search(head)  # ibstat, ibstatus
        or all(_IB_SYSFS_LINE.match(line) for line in lines[:50])  # the probe's sysfs listing
        or no_rdma_device(text)  # `No IB devices found`: the listing of a box without one
    ):
        return "rdma_ports"
    if any(_GPU_LINE.match(line) for line in lines[:50]):
        counters = sum(1 for line in lines[:200] if _NVLINK_ERR_LINE.match(line))
        others = sum(1 for line in lines[:200] if not (_GPU_LINE.match(line) or _NVLINK_ERR_LINE.match(line)))
        if counters and others <= counters // 4:  # (`nvlink -e -i N` loops echo a header per GPU)
            return "nvidia_nvlink_errors"
    if _GPU_LINE.match(lines[0]):
        rest = lines[1:]
        if rest and _GPU_HEADER_START.match(rest[-1].strip()):  # (cut inside the next header)
            rest = rest[:-1]
        if (
            rest
            and all(
                _NVLINK_LINE.search(line) or _GPU_LINE.match(line) or ELISION.match(line) for line in rest
            )
            and any(_NVLINK_LINE.search(line) for line in rest)
        ):
            return "nvidia_nvlink"
        if all(_GPU_LINE.match(line) or _MIG_LINE.match(line) for line in lines):
            return "nvidia_smi_list"
    # (a journal's JSON / export / verbose entries, `dmesg -r`'s `<4>`: read as dmesg prints them)
    # (a journal of other programs' entries only, whatever they quote, is no kernel log)
    if (plain := plain_kernel_text(text)) != text:
        lines = [line for line in plain.splitlines() if line.strip()]
        if not lines:  # (its kernel log is empty: KernelLog.no_log says so)
            return "kernel_log" if journal_shaped(text) else None
    lines = _messages(lines, 201)  # (only its first 200 are read, and whether there are more)
    kernel = sum(1 for line in lines[:200] if _kernel_line(line))
    # (a log printed without stamps: its lines' shapes, several of them and a quarter of its lines
    # at least, the others those of drivers no list names: `bonding: bond0: ...`, `lo: ...`)
    matched = [m for line in lines[:200] if not _kernel_line(line) and (m := _KERNEL_SHAPE.match(line))]
    shaped = len(matched)
    if (
        shaped >= _UNSTAMPED_LEAST
        and shaped * 4 >= min(len(lines), 200)
        and len(_families(matched, lines[:200])) >= _UNSTAMPED_LEAST
    ):
        return "kernel_log"
    if kernel:  # (a log of stamped lines and unstamped ones, or of ISO times the kernel's lines vouch for)
        kernel += shaped + sum(1 for line in lines[:200] if _ISO_HEAD.match(line) and not _kernel_line(line))
    # (a syslog's other programs' lines count as the log's own: they may outnumber the kernel's;
    # a log of other programs alone is no kernel log, whatever their messages quote)
    others = sum(1 for line in lines[:200] if _other_program(line))
    if kernel and kernel + others >= min(len(lines), 200) // 2:
        return "kernel_log"
    return None


# nvidia-smi's output when it failed is its own sentence(s) and nothing else: one line, or one
# per GPU it could not open, and a warning or two; a longer text that names a cause is another
# command's (a forum page, a log), not a failing nvidia-smi
_FAILURE_MAX_LINES = 40


def nvidia_smi_failed(text: str) -> bool:
    """The text is a failing nvidia-smi's whole output: a line naming a cause the rules know
    (facts/nvidia_smi_failure.py: "Unable to determine the device handle for GPU ...", "No devices
    were found") or one of nvidia-smi's own failure sentences, "NVIDIA-SMI has failed ..." and
    NVML's "Failed to initialize NVML: <reason>" for any reason NVML gives (a WSL2 or Hyper-V
    guest's "GPU access blocked by the operating system" too). The kernel's own NVRM line about
    the same fault is a kernel log's, not nvidia-smi's. A table whose banner answered and whose
    rows could not be read (cut off, mangled in a paste) is no failure: a lost GPU's line above
    it names that GPU (nvidia_smi_failure.answered_unread)."""
    from gpuonboard.facts.nvidia_smi_failure import answered_unread

    line = _failure_line(text)
    return line is not None and not failure_record(text, line) and answered_unread(text) is None


def recorded_failure(text: str) -> str:
    """Why `text` is another program's log quoting nvidia-smi's failure (api/failure_record.py),
    "" where it is not."""
    line = _failure_line(text)
    return failure_record(text, line) if line is not None else ""


def _failure_line(text: str) -> str | None:
    """The line of nvidia-smi's own failure that `text` holds (nvidia_smi_failed's), None where it
    holds none."""
    lines = [line for line in unmarked_failure(text).splitlines() if line.strip()]  # (`→ NVIDIA-SMI ...`)
    if not lines or len(lines) > _FAILURE_MAX_LINES:
        return None
    # (another operation's refusal names NVML's error too: left out, it is no failed query; so is
    # a syslog or journal record of a program, which quotes what it met when it ran, not now: an
    # exporter's `... prometheus-nvidia-exporter[1144]: ... stdout: NVIDIA-SMI has failed ...`;
    # and a line where the words are not at its start: a person quoting them, `the following
    # error: "No devices were found"`, or another tool's line naming NVML's error, `nvidia-docker
    # | 2017/12/21 05:04:46 Error: nvml: Driver/library version mismatch`)
    own = [
        line
        for line in lines
        if not saved_forms.OTHER_OPERATION.match(line.strip())
        and program_of(line.strip()) is None
        and _OWN_FAILURE_LINE.match(line)
    ]
    if not own:
        return None
    line, advice = nvidia_smi_failure("\n".join(own), "")
    if advice:
        failed = not kernel_shaped(line)
    else:
        failed = any(
            line.lstrip(" \t`").startswith(_OWN_FAILURES) or saved_forms.STATE_ERROR.match(line.strip(" \t`"))
            for line in own
        )
    return line if failed else None


_OWN_FAILURES = ("NVIDIA-SMI has failed", "Failed to initialize NVML:")
# a line of nvidia-smi's own when it fails: its words at the line's start (after a table's `|`),
# `NVIDIA-SMI has failed ...`, `No devices were found`, `Failed to initialize NVML: ...`, `Unable
# to determine the device handle for GPU ...`, or a warning of its own (`WARNING: infoROM ...`),
# behind a poster's Markdown inline-code backtick too (`` `Failed to initialize NVML: ...` ``);
# and the NVIDIA Container Toolkit's `nvidia-container-cli: initialization error: nvml error: ...`
# (inside docker's `Error response from daemon: ...` too), NVML's answer on the host, as before
_OWN_FAILURE_LINE = re.compile(
    r"[\s|`]*(?:(?-i:NVIDIA-SMI)\b|No devices were found|(?:Failed|Unable) to \w|WARNING:)"
    r"|.*\bnvidia-container-cli: initialization error: nvml error:",
    re.I,
)


# nvidia-smi's own word: its table's banner (`| NVIDIA-SMI 535.54.03 ...`), its version line or a
# failure it printed, at a line's start (`NVIDIA-SMI has failed because ...`); the same words quoted
# inside another program's log record (an exporter's `... stdout: NVIDIA-SMI has failed ...`) are
# that program's record of an earlier run, not nvidia-smi's output
_NVIDIA_SMI_OWN = re.compile(r"NVIDIA-SMI \d|^[ \t|]*NVIDIA-SMI\b", re.M)

# lscpu's first line, `Architecture:` and a CPU architecture (uname -m's), or beside one of lscpu's
# own fields; never an `Architecture:` line alone: `nvidia-container-cli info` prints the GPU's
# compute capability so (`Architecture:   6.1`)
_LSCPU_ARCH = re.compile(
    r"^Architecture:\s*(?:x86_64|i[3-6]86|amd64|aarch64|arm\w*|ppc\w*|s390x?|riscv\w*|mips\w*|loongarch\w*"
    r"|sparc\w*|ia64|alpha|parisc\w*)\s*$"
    r"|^(?=[\s\S]*^Architecture:)[\s\S]*^(?:CPU\(s\)|Model name|Byte Order|CPU op-mode\(s\)|Vendor ID):",
    re.M,
)

# `nvidia-smi -q`'s header line of its GPU count
_Q_ATTACHED = re.compile(r"^[^\S\n]*Attached GPUs\s+:\s*\d", re.M)


# a topo matrix's sign where its legend is cut off: its header's "CPU Affinity" (wrapped or not)
# or its first row, GPU0's self cell
_TOPO_SIGN = re.compile(r"CPU\s+Affinity|^GPU0[ \t]+X[ \t]", re.M)


# a shell variable a login or job script echoed above the output (`CUDA_VISIBLE_DEVICES='<unset>'`)
_ENV_LINE = re.compile(r"^[A-Z][A-Z0-9_]*=\S*$")


def _listing_past_lost(head: str) -> bool:
    """`nvidia-smi -L` that names a GPU it cannot open ("Unable to determine the device handle for
    gpu 0000:3B:00.0: Unknown Error") and lists the others after it: a listing, its lost GPU a
    fault the GPU merge reads (facts/gpu_unopened), never a failed nvidia-smi that listed none."""
    lines = [line.strip() for line in head.splitlines() if line.strip()]
    lost = [line for line in lines if names_unopened(line)]
    rest = [line for line in lines if not names_unopened(line)]
    while rest and _ENV_LINE.match(rest[0]):
        rest = rest[1:]
    # (its first GPU's line with its UUID; or that line the text's last, cut short before it:
    # the listing cut, read as one and incomplete, never a failed nvidia-smi that listed none)
    first = rest[0] if rest else ""
    return (
        bool(lost and rest)
        and all(_GPU_LINE.match(line) or _MIG_LINE.match(line) for line in rest)
        and ("(UUID: " in first or (len(rest) == 1 and head.rstrip().endswith(first)))
    )


def detect_kind(text: str) -> str | None:
    """Which probe produced this output, from its content alone (None: not recognised)."""
    if (fabric := detect_fabric_kind(text)) is not None:
        return fabric
    head = text.lstrip()[:4000]
    if head.startswith("<?xml") or "<nvidia_smi_log" in head:
        return "nvidia_smi"
    if _listing_past_lost(head):
        return "nvidia_smi_list"
    if (
        "NVSMI LOG" in head
        or _NVIDIA_SMI_OWN.search(head)
        or _Q_ATTACHED.search(head)  # (`-q` saved without its ==NVSMI LOG== banner)
        or Q_RECORD.search(head)  # (an excerpt of `-q` from a GPU's record on)
        or head.startswith(("name,", "index,"))
        or "memory.total" in head
        or is_query_header(head.split("\n", 1)[0])  # (any --query-gpu CSV's header)
        or nvidia_smi_failed(text)
    ):
        return "nvidia_smi"
    if "GPU0" in head and ("Legend" in text or _TOPO_SIGN.search(head)):
        return "nvidia_topo"
    if (
        (head.startswith("{") and '"blockdevices"' in head)
        or looks_like_lsblk_pairs(head)
        or looks_like_lsblk_table(head)  # (the plain table: its header names lsblk's columns)
    ):
        return "lsblk"  # (`lsblk -P`'s `NAME="sda" ...` before os-release's `NAME="Ubuntu"`)
    if head.startswith("{") and '"lscpu"' in head:
        return "lscpu"
    if (_LSCPU_ARCH.search(head) or looks_like_lscpu(head)) and "Server Version:" not in head:
        return "lscpu"
    if looks_like_cpuinfo(head):  # (`cat /proc/cpuinfo`: read as the CPUs, cores, sockets it gives)
        return "lscpu"
    if looks_like_free(head) or looks_like_meminfo(head):  # (free in any language it speaks)
        return "free"
    if looks_like_top_memory(head):  # (procps top's `MiB Mem : ... total,`: MemTotal, as free's)
        return "free"
    if looks_like_vmstat_memory(head):  # (`vmstat -s`'s `4020152 K total memory`: MemTotal)
        return "free"
    if df_header(head) is not None:
        return "df"
    if looks_like_mount_table(head):  # (`cat /proc/mounts`: the type of each mount df listed)
        return "mounts"
    if "Cuda compilation tools" in head:
        return "nvcc"
    if "PRETTY_NAME=" in head or head.startswith("NAME="):
        return "os_release"
    return None
