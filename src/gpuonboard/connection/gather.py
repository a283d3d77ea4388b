"""Gather a host's facts: the core probes plus those steps ask for, in ONE remote execution."""

from __future__ import annotations

import dataclasses
import functools
import threading
import weakref
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from gpuonboard import shell
from gpuonboard.errors import CommandError
from gpuonboard.facts.driver_module import MODULE_FILE, MODULE_FILE_MARK, MODULE_PROBE, split_module_file
from gpuonboard.facts.gpu_probes import WARNING_EXIT
from gpuonboard.facts.nvidia_smi_failure import stopped_said
from gpuonboard.facts.probe import Probe, ProbeOutput, build_script, new_token, split_output
from gpuonboard.once import loaded_once

if TYPE_CHECKING:
    from gpuonboard.connection import Runner

    # The parsers (xml.etree, csv, many regexes: ~10 ms of start-up) are imported where they
    # parse, so a run whose playbook needs no hardware facts (core=False) never loads them.
    from gpuonboard.facts import cpu, disks, memory, nvidia_smi, topo
    from gpuonboard.facts.gpu_merge import GpuEvidence

CORE_NAMES = (
    "nvidia_smi",
    "nvidia_smi_q",
    "nvidia_smi_csv",
    "nvidia_smi_table",
    "nvidia_smi_list",
    "nvidia_smi_apps",
    "nvidia_topo",
    "nvidia_nvlink",
    "nvidia_nvlink_errors",
    "kernel_log",
    "rdma_ports",
    "fabric_manager",
    "lscpu",
    "free",
    "df",
    "lsblk",
    "os_release",
    "kernel",
    "nproc",
    "container_runtime",
    "cgroup_limits",
    "loop_backing",
)


# A hung driver (a GPU fallen off the bus, a wedged persistence daemon) makes nvidia-smi
# block for ever: each call gets this long, then TERM (KILL 5 s later) and exit 124 (GNU timeout's
# 124 or 137, BusyBox's 143). A 137 or 143 before the time is up is no timeout of the probe's: the
# call was killed by another process or the kernel's OOM killer, its code kept (never a hang).
NVIDIA_SMI_TIMEOUT = 60
TIMED_OUT = 124  # the probe's exit code when nvidia-smi did not answer in time


def _nvidia_smi_prelude(seconds: int) -> str:
    """Shell: `n ARGS` runs nvidia-smi under `timeout` (when the host has it); a call that
    timed out ends the probe with exit 124, so no fallback call waits as long again; a call
    killed (137) or terminated (143) before its time was up keeps its code: no hang."""
    return (
        "command -v nvidia-smi >/dev/null 2>&1 || exit 127; "
        "if command -v timeout >/dev/null 2>&1; then n() { t0=$(date +%s); "
        f'timeout -k 5 {seconds} nvidia-smi "$@"; c=$?; case $c in 124) exit {TIMED_OUT} ;; '
        f"137|143) [ $(($(date +%s)-t0)) -ge {seconds} ] && exit {TIMED_OUT} ;; esac; return $c; }}; "
        'else n() { nvidia-smi "$@"; }; fi; '
    )


def _cgroup_limits_command() -> str:
    """Shell: the memory and CPU limits of the probe's own cgroup and every cgroup above it,
    as `FILE<TAB>VALUE` lines (v2 memory.max / cpu.max / cpuset.cpus.effective; v1
    memory.limit_in_bytes, cpu.cfs_quota_us / cpu.cfs_period_us and cpuset.effective_cpus /
    cpuset.cpus). Read-only, builtins only (no process per file).
    First, in the same form, what says whether the login is in a container
    (facts/slice_signs.py SIGNS_SH): PID 1's name (/proc/1/comm), the container type systemd saw
    (/run/systemd/container), Docker's and Podman's marker files (`/.dockerenv<TAB>present`),
    Kubernetes' service-account mount, PID 1's cgroups (/proc/1/cgroup, one line each), and the
    filesystem of `/` and of LXD's and lxcfs' mounts (/proc/self/mountinfo)."""

    def walk(root: str, files: tuple[str, ...]) -> str:
        reads = " ".join(
            f'[ -r "$d/{f}" ] && read -r v <"$d/{f}" && printf \'%s\\t%s\\n\' "$d/{f}" "$v";' for f in files
        )
        return (
            f"r={shell.quote(root)}; d=$r$p; while :; do {reads} "
            '[ "$d" = "$r" ] || [ -z "$d" ] && break; d=${d%/*}; [ "${#d}" -ge "${#r}" ] || d=$r; done'
        )

    from gpuonboard.facts.slice_signs import SIGNS_SH

    return (
        SIGNS_SH + "[ -r /proc/self/cgroup ] || exit 127; "
        'while IFS=: read -r _ c p; do case ",$c," in '
        f",,) {walk('/sys/fs/cgroup', ('memory.max', 'cpu.max', 'cpuset.cpus.effective'))};; "
        f"*,memory,*) {walk('/sys/fs/cgroup/memory', ('memory.limit_in_bytes',))};; "
        f"*,cpu,*) {walk('/sys/fs/cgroup/cpu', ('cpu.cfs_quota_us', 'cpu.cfs_period_us'))};; "
        f"*,cpuset,*) {walk('/sys/fs/cgroup/cpuset', ('cpuset.effective_cpus', 'cpuset.cpus'))};; "
        "esac; done </proc/self/cgroup; exit 0"
    )


# loopN<TAB>backing file, for every attached loop device (a data "disk" that is a file on /)
_LOOP_BACKING = (
    'for f in /sys/block/loop*/loop/backing_file; do [ -r "$f" ] || continue; '
    'read -r b <"$f" && n=${f#/sys/block/} && printf \'%s\\t%s\\n\' "${n%%/*}" "$b"; done; exit 0'
)


# A network mount whose server is gone (a hard NFS mount) makes df block in statfs for ever,
# and with it the whole probe (every rule lost to "a remote command timed out"): df gets this
# long, then TERM (KILL 5 s later) and exit 124, where the host's `timeout` takes -k (GNU
# timeout exits 124 on expiry, 137 where KILL was needed; BusyBox's exits 143, its TERM's).
DF_TIMEOUT = 30


# The most lines of the kernel's mount table the df probe prints (a Kubernetes node's table holds
# thousands of mounts; their first 3 fields, ~100 bytes a line: at most ~0.4 MB)
MOUNT_TABLE_LINES = 4096
# the kernel's mount table of the probe's own mount namespace, each line's first 3 fields
# (device, mount point, type: never the options, which may hold a share's `username=`), at most
# MOUNT_TABLE_LINES lines: by cut and head (a Kubernetes node's table, which the shell's `read`
# takes a byte at a time), by the shell's builtins where there are none
_MOUNT_TABLE = (
    "[ -r /proc/self/mounts ] && { echo '==> /proc/self/mounts <=='; "
    "if command -v cut >/dev/null 2>&1 && command -v head >/dev/null 2>&1; then "
    f"cut -d' ' -f1-3 /proc/self/mounts | head -n {MOUNT_TABLE_LINES}; else n=0; "
    f'while [ $n -lt {MOUNT_TABLE_LINES} ] && read -r x y z _; do printf \'%s %s %s\\n\' "$x" "$y" "$z"; '
    "n=$((n+1)); done </proc/self/mounts; fi; }"
)


def df_command(seconds: int = DF_TIMEOUT) -> str:
    """Shell: df with each file system's type (a GPFS, WekaFS or Lustre mount whose device looks
    local is a network share only by its type), run once where the host's df takes -T and its
    `timeout` takes -k (asked silently first, `timeout -k 5 1 true`: 0, or 126/127 where it took
    -k but found no `true` to run; an old BusyBox one that refuses -k runs no df, and its usage
    text is never quoted as df's failure). Its rows are kept in a variable (a fork, no
    program): a df that failed without printing a row is asked again without -T (a df that
    refuses it: toybox, BusyBox before 1.23); GNU df's exit 1 beside a mount it could not read
    keeps its rows and asks nothing again. Where
    the rows that answered have no types, the kernel's mount table follows them (after the line
    `==> /proc/self/mounts <==`: each line's device, mount point and type), which types them."""
    said = shell.quote(f"df did not answer within {seconds} s (a network mount that does not answer?)")
    return (
        "command -v df >/dev/null 2>&1 || exit 127; "
        "t=; command -v timeout >/dev/null 2>&1 && { timeout -k 5 1 true >/dev/null 2>&1; "
        f"case $? in 0|126|127) t='timeout -k 5 {seconds}' ;; esac; }}; "
        'd() { a=$1; o=$($t df -P -k $1); c=$?; case $c in 0|124|137|143) return 1 ;; esac; [ -z "$o" ]; }; '
        'd -T && d ""; '
        '[ -n "$o" ] && printf \'%s\\n\' "$o"; '
        f"case $c in 124|137|143) echo {said} >&2; exit 124 ;; esac; "
        f'[ -n "$o" ] && [ -z "$a" ] && {_MOUNT_TABLE}; exit $c'
    )


# lsblk's JSON (util-linux 2.27+), else its pairs (`-P`: RHEL/CentOS 7, Ubuntu 14.04), which
# facts/disks.py reads alike. JSON is asked once, its text kept in a variable (a fork, no
# program): an lsblk that failed without printing anything is asked for its pairs; a box
# without lsblk exits 127
_LSBLK_COLUMNS = "-b -o NAME,SIZE,TYPE,MOUNTPOINT,ROTA,MODEL"
LSBLK_COMMAND = (
    "command -v lsblk >/dev/null 2>&1 || exit 127; "
    f'o=$(lsblk -J {_LSBLK_COLUMNS}); c=$?; [ "$c" -ne 0 ] && [ -z "$o" ] && exec lsblk -P {_LSBLK_COLUMNS}; '
    '[ -n "$o" ] && printf \'%s\\n\' "$o"; exit $c'
)
# a file's lines, printed by the shell's builtins (no program: a box without cat), a last line
# without its newline too
_LINES = 'while IFS= read -r l || [ -n "$l" ]; do printf \'%s\\n\' "$l"; done <{}'
# nproc, else the kernel's affinity list it counts (/proc/self/status' Cpus_allowed_list line,
# read by the shell's builtins: a box without coreutils), which facts/cpu.py parse_nproc reads
NPROC_COMMAND = (
    "if command -v nproc >/dev/null 2>&1; then exec nproc; fi; [ -r /proc/self/status ] || exit 127; "
    "while IFS= read -r l; do case $l in Cpus_allowed_list:*) printf '%s\\n' \"$l\"; exit 0 ;; esac;"
    " done </proc/self/status; exit 127"
)
# lscpu, else the kernel's /proc/cpuinfo (a minimal image without util-linux; an lscpu that
# failed, printing nothing or part of its output: OpenVZ, gVisor, a kernel 2.6.32 without
# /sys/devices/system/cpu/possible; one that printed nothing; by the shell's builtins where
# there is no cat either; where /proc/cpuinfo cannot be read, lscpu's own answer), which
# facts/cpu.py reads for the same CPU, core and socket counts, and after it the kernel's list of
# online CPUs (`ONLINE_FILE: 1-63`), which tells a /proc/cpuinfo whole where CPU 0 is offline
# from one whose top is missing, and of present CPUs (`.../present: 0-63`): those not online are
# offline, as lscpu's Off-line CPU(s) list says
LSCPU_COMMAND = (
    "o=; c=; if command -v lscpu >/dev/null 2>&1; then o=$(lscpu); c=$?; "
    'if [ "$c" -eq 0 ] && [ -n "$o" ]; then printf \'%s\\n\' "$o"; exit 0; fi; fi; '
    '[ -r /proc/cpuinfo ] || { [ -n "$o" ] && printf \'%s\\n\' "$o"; exit "${c:-127}"; }; '
    "if command -v cat >/dev/null 2>&1; then cat /proc/cpuinfo || exit; else "
    + _LINES.format("/proc/cpuinfo")
    + "; fi; for f in /sys/devices/system/cpu/online /sys/devices/system/cpu/present; do"
    + """ [ -r $f ] && read -r o <$f && printf '%s: %s\\n' "$f" "$o"; done; exit 0"""
)
# /etc/os-release, else /usr/lib/os-release (os-release(5): a system may ship that one alone),
# and the kernel's release as `uname -r` prints it (/proc/sys/kernel/osrelease): by the shell's
# builtins, `cat` and `uname` where the files cannot be read
OS_RELEASE_COMMAND = (
    "for f in /etc/os-release /usr/lib/os-release; do [ -r $f ] || continue; "
    + _LINES.format("$f")
    + "; exit 0; done; exec cat /etc/os-release"
)
KERNEL_COMMAND = (
    '[ -r /proc/sys/kernel/osrelease ] && read -r k </proc/sys/kernel/osrelease && [ -n "$k" ]'
    " && printf '%s\\n' \"$k\" && exit 0; exec uname -r"
)
# free, else the kernel's /proc/meminfo it reads (a minimal image without procps: Alpine
# without busybox's applets, distroless; by the shell's builtins), which facts/memory.py reads
FREE_COMMAND = (
    "if command -v free >/dev/null 2>&1; then exec free -k; fi; [ -r /proc/meminfo ] || exit 127; "
    + _LINES.format("/proc/meminfo")
)


# The NVIDIA kernel module's own version file, read in the table probe only where nvidia-smi
# failed (a driver/library version mismatch, "couldn't communicate with the NVIDIA driver"): then
# it is the only answer about the driver loaded now (min_driver, nvidia_driver read it as they
# read a saved one: facts/driver_module.py); a healthy box reads no file more. After the line
# MODULE_FILE_MARK (on a line of its own: nvidia-smi's answer may end without a newline); by cat,
# else by the shell's builtins; a file not there (no module loaded) reads as nothing, its error
# left out of nvidia-smi's, and no mark printed (nvidia-smi's answer as it was). The path is a
# constant of this module, never a value given.
MODULE_READ = (
    f"m=$({{ if command -v cat >/dev/null 2>&1; then cat {shell.quote(MODULE_FILE)}; else"
    f' {_LINES.format(shell.quote(MODULE_FILE))}; fi; }} 2>/dev/null); [ -z "$m" ] ||'
    f" printf '\\n%s\\n%s\\n' {shell.quote(MODULE_FILE_MARK)} \"$m\""
)
# (nvidia-smi's exit 0, or 14, an infoROM warning beside a whole answer: no failure)
_MODULE_AFTER_FAILURE = f"case $c in 0|{WARNING_EXIT}) ;; *) {MODULE_READ} ;; esac"


@loaded_once
def core_probes(
    nvidia_smi_timeout: int = NVIDIA_SMI_TIMEOUT, df_timeout: int = DF_TIMEOUT
) -> tuple[Probe, ...]:
    """The core hardware probes (built once; the GPU query needs the parser's field list).

    Every nvidia-smi format is asked at once (XML, -q, the CSV query, the plain table, -L, the
    compute apps, topo -m), each its own probe: exit 127 when nvidia-smi is not installed at
    all, 124 when it did not answer within `nvidia_smi_timeout` seconds.
    """
    from gpuonboard.facts import extra_probes, nvidia_smi
    from gpuonboard.facts.gpu_merge import APPS_FIELDS

    gpu_fields = ",".join(nvidia_smi.QUERY_FIELDS)
    prelude = _nvidia_smi_prelude(nvidia_smi_timeout)

    def gpu(name: str, args: str) -> Probe:
        return Probe(name, f"{prelude}n {args}".rstrip(), slow=True)

    # every cheap nvidia-smi format at once (they run side by side on the host): each answers
    # other questions, and a provider may block some (facts/gpu_merge.py merges them)
    probes = (
        gpu("nvidia_smi", "-q -x"),
        gpu("nvidia_smi_q", "-q"),
        gpu("nvidia_smi_csv", f"--query-gpu={gpu_fields} --format=csv,nounits"),
        # (where the table's call fails, the driver's own version file after it: MODULE_READ)
        Probe("nvidia_smi_table", f"{prelude}n; c=$?; {_MODULE_AFTER_FAILURE}; exit $c", slow=True),
        gpu("nvidia_smi_list", "-L"),
        gpu("nvidia_smi_apps", f"--query-compute-apps={','.join(APPS_FIELDS)} --format=csv,noheader,nounits"),
        gpu("nvidia_topo", "topo -m"),
        gpu("nvidia_nvlink", "nvlink -s"),
        # `-e` (--errorcounters): each link's error counters, the form documented across driver
        # generations; not `-ec` (--crcerrorcounters, per-lane CRC counters, another table)
        gpu("nvidia_nvlink_errors", "nvlink -e"),
        # the kernel's Xid/SXid lines since boot, the RDMA ports, the fabric manager's state
        extra_probes.KERNEL_LOG,
        extra_probes.RDMA_PORTS,
        extra_probes.FABRIC_MANAGER,
        Probe("lscpu", LSCPU_COMMAND),
        Probe("free", FREE_COMMAND),
        Probe("df", df_command(df_timeout)),
        Probe("lsblk", LSBLK_COMMAND),
        Probe("os_release", OS_RELEASE_COMMAND),
        Probe("kernel", KERNEL_COMMAND),
        Probe("nproc", NPROC_COMMAND),
        Probe(
            "container_runtime",
            "docker --version 2>/dev/null || podman --version 2>/dev/null || exit 127",
        ),
        Probe("cgroup_limits", _cgroup_limits_command()),
        Probe("loop_backing", _LOOP_BACKING),
    )
    assert tuple(p.name for p in probes) == CORE_NAMES
    return probes


def __getattr__(name: str) -> object:
    """`CORE_PROBES` stays importable as before (computed on first access)."""
    if name == "CORE_PROBES":
        return core_probes()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _silent(out: ProbeOutput) -> bool:
    """An output that exited 0 with nothing on stdout or stderr (a stub, a blocked tool)."""
    return out.exit_code == 0 and not (out.stdout.strip() or out.stderr.strip())


@dataclass(frozen=True)
class Facts:
    """Everything known about one host after the probe, parsed into typed values."""

    raw: Mapping[str, ProbeOutput]
    gpu: nvidia_smi.GpuReport | None
    topology: topo.Topology | None
    cpu: cpu.CpuInfo | None
    memory: memory.MemoryInfo | None
    mounts: tuple[disks.Mount, ...]
    block_devices: tuple[disks.BlockDevice, ...]
    os_release: Mapping[str, str]
    kernel: str | None
    nproc: int | None
    container_runtime: str | None
    warnings: tuple[str, ...] = field(default_factory=tuple)
    # limits of the login's cgroup (a container rental): None when unlimited or unknown
    memory_limit_bytes: int | None = None
    cgroup_cpus: float | None = None
    # the CPUs in the cgroup's CPU set (cpuset.cpus.effective): None where none was read
    cgroup_cpuset: int | None = None
    loop_backing: Mapping[str, str] = field(default_factory=dict)
    # the probes whose output reports never show (Probe.private): a template's own values
    private: frozenset[str] = frozenset()
    # which nvidia-smi formats answered and which the host refused (gpu is their merge)
    gpu_evidence: GpuEvidence | None = None

    @property
    def nvidia_smi_present(self) -> bool:
        """False when nvidia-smi is not installed (no driver): no format of it ran (an `nvlink -s`
        whose GPU lines were read, saved alone, ran it too)."""
        from gpuonboard.facts.gpu_probes import GPU_PROBES

        if any(name in self.raw and not self.raw[name].absent for name in GPU_PROBES):
            return True
        from gpuonboard.facts.gpu_agree import NVLINK_LISTINGS

        ev = self.gpu_evidence
        return ev is not None and any(label in NVLINK_LISTINGS for label in ev.answered)

    def given(self, probe: str) -> bool:
        """The probe ran on the host, or its saved output was among `invoke facts` files
        (parse_facts fills the others in as 'not probed')."""
        out = self.raw.get(probe)
        return out is not None and out.stderr != "not probed"

    def unread_not_a_fault(self) -> str:
        """Why no GPU could be read when that says nothing about the box: the host refuses every
        format that lists GPUs, the output was cut short, or nvidia-smi answered (exit 0) with
        text no GPU is read from (another command's capture, a mangled table). '' when nvidia-smi
        itself failed, hung or is missing (the box's own fault) or GPUs were read. A report whose
        banner gives the driver version answered: a lost GPU's line above rows that could not be
        read (cut off, mangled in a paste) names one GPU, it is no failed nvidia-smi."""
        from gpuonboard.facts.gpu_failed import listed_before, smis_own_failure
        from gpuonboard.facts.gpu_merge import refusal_line
        from gpuonboard.facts.nvidia_smi_failure import answered_unread, nvidia_smi_failure

        if not self.nvidia_smi_present or (self.gpu is not None and self.gpu.gpus):
            return ""
        raw = self.gpu_raw
        words = bool(nvidia_smi_failure(raw.stdout, raw.stderr)[1]) or "NVIDIA-SMI has failed" in raw.stdout
        driver = answered_unread(raw.stdout) if words else None
        failed = raw.exit_code == TIMED_OUT or (words and driver is None)
        own = smis_own_failure(nvidia_smi_failure(raw.stdout, raw.stderr)[0])
        if failed and raw.ran_elsewhere and own and refusal_line(raw) is None:
            # (`podman run ... nvidia-smi -L`, `srun nvidia-smi`: that call's own failure, which
            # may be the container's or the job step's, never certainly the box's driver)
            said = f"{raw.ran_elsewhere}: its failure is that call's own, not certainly the box's"
            return said + listed_before(f"{raw.stdout}\n{raw.stderr}")
        if failed and refusal_line(raw) is None:
            return ""  # a format that was not refused failed with a cause of its own
        ev = self.gpu_evidence
        if ev is not None and ev.refusals:
            return "; ".join(r.sentence() for r in ev.refusals)
        if driver is not None:
            return (
                f"nvidia-smi answered (driver {driver}), but its output was cut short or mangled:"
                " no GPU row could be read"
            )
        if self.gpu is not None and not self.gpu.complete:
            return "the nvidia-smi output was cut short"
        if self._answered_nothing():
            return "nvidia-smi answered (exit 0) with nothing"  # (a stub, a blocked tool: no evidence)
        if raw.exit_code == 0 and raw.stdout.strip():  # (and no failure words: see above)
            # a listing we read no GPU from (another command's text, a quoted or mangled table)
            # is no evidence about the driver
            return "nvidia-smi answered (exit 0), but no GPU could be read from its output"
        return ""

    def _answered_nothing(self) -> bool:
        """Whether every nvidia-smi format given exited 0 with nothing on stdout or stderr (one
        that failed in words says why no GPU was read)."""
        from gpuonboard.facts.gpu_merge import GPU_SOURCES, LIST_PROBE

        names = (*(n for n, _, _ in GPU_SOURCES), LIST_PROBE)
        given = [out for n in names if (out := self.raw.get(n)) is not None and not out.absent]
        return bool(given) and all(map(_silent, given))

    @property
    def gpu_raw(self) -> ProbeOutput:
        """The nvidia-smi output that says why no GPU could be read: the richest format's,
        passing over a format the host refused (its words are in gpu_evidence.refusals) and one
        that answered nothing at exit 0 where another said something."""
        from gpuonboard.facts.gpu_merge import GPU_SOURCES, refusal_line

        given = [
            out
            for name, _, _ in GPU_SOURCES
            if (out := self.raw.get(name)) is not None and not out.absent and refusal_line(out) is None
        ]
        said = [o for o in given if not _silent(o)]
        return (said or given or [self.raw["nvidia_smi"]])[0]

    def summary(self) -> dict[str, object]:
        """A small JSON-able digest for reports."""
        interconnect = None
        if self.topology:
            from gpuonboard.facts import topo

            interconnect = topo.interconnect(self.topology)
        return {
            # (no GPU report: nvidia-smi failed or is missing: the count is unknown, never 0)
            "gpu_count": len(self.gpu.gpus) if self.gpu else None,
            "gpu_model": self.gpu.gpus[0].name if self.gpu and self.gpu.gpus else None,
            "driver_version": self.gpu.driver_version if self.gpu else None,
            "cuda_version": self.gpu.cuda_version if self.gpu else None,
            "interconnect": interconnect,
            "cpu_cores": self.cpu.physical_cores if self.cpu else None,
            "logical_cpus": self.cpu.logical_cpus if self.cpu else None,
            "ram_bytes": self.memory.total_bytes if self.memory else None,
            "os": self.os_release.get("PRETTY_NAME"),
            "kernel": self.kernel,
            "container_runtime": self.container_runtime,
            # which nvidia-smi formats the facts came from, and those the host refused
            "nvidia_smi_formats": list(self.gpu_evidence.answered) if self.gpu_evidence else [],
            "nvidia_smi_refused": [r.sentence() for r in self.gpu_evidence.refusals]
            if self.gpu_evidence
            else [],
            # what the formats say otherwise of the box, each value with its format
            "nvidia_smi_disagree": list(self.gpu.disagreements) if self.gpu else [],
            # every GPU's identity (a swapped GPU, a box handed back: steps/identity.py)
            "gpus": [
                {
                    "index": g.index,
                    "name": g.name,
                    "serial": g.serial,
                    "uuid": g.uuid,
                    "board_part_number": g.board_part_number,
                    "pci_bus_id": g.pci_bus_id,
                }
                for g in (self.gpu.gpus if self.gpu else ())
            ],
        }


T = TypeVar("T")
# per Facts object (by id, while it lives): what memo() computed from it, by key
_MEMO: dict[int, tuple[weakref.ref[Facts], dict[Hashable, Any]]] = {}
_MEMO_LOCK = threading.Lock()


def memo(facts: Facts, key: Hashable, compute: Callable[[], T]) -> T:
    """compute(), once per Facts object and key: for rules that several steps of a host run
    over the same facts (gpu_identity records the acceptance and health verdicts that those
    steps computed just before). The value is shared: keep it immutable (a tuple)."""
    try:
        hash(key)
    except TypeError:  # (a key of unhashable args: computed each time)
        return compute()
    ident = id(facts)
    with _MEMO_LOCK:
        entry = _MEMO.get(ident)
        if entry is not None and entry[0]() is facts and key in entry[1]:
            cached: T = entry[1][key]
            return cached
    value = compute()
    with _MEMO_LOCK:
        entry = _MEMO.get(ident)
        if entry is None or entry[0]() is not facts:
            entry = (weakref.ref(facts, functools.partial(_forget, ident)), {})
            _MEMO[ident] = entry
        entry[1][key] = value
    return value


def _forget(ident: int, ref: weakref.ref[Facts]) -> None:
    with _MEMO_LOCK:
        entry = _MEMO.get(ident)
        if entry is not None and entry[0] is ref:
            del _MEMO[ident]


def gather(
    runner: Runner,
    extra: Sequence[Probe] = (),
    timeout: float = 120,
    core: bool = True,
    prefetch: bool = False,
) -> Facts:
    """Run the ONE batched probe on the host and parse its outputs.

    `core=False` runs only the steps' own probes (a playbook that needs no hardware facts).
    """
    base = list(core_probes()) if core else []
    probes = base + [p for p in extra if p.name not in {c.name for c in base}]
    if not probes:  # (a playbook whose steps need no facts: nothing to run)
        return parse_facts({})
    token = new_token()
    result = runner.run(shell.sh_c(build_script(probes, token)), timeout=timeout, prefetch=prefetch)
    if token not in result.stdout:
        detail = (result.stderr.strip() or f"exit code {result.exit_code}").splitlines()[0]
        raise CommandError(f"host {runner.host.name}: the fact probe could not run ({detail}).")
    raw = split_output(result.stdout, result.stderr, token, [p.name for p in probes])
    return dataclasses.replace(parse_facts(raw), private=frozenset(p.name for p in probes if p.private))


def _df_in_part(out: ProbeOutput) -> ProbeOutput:
    """GNU df prints every filesystem it could read and exits 1 when one could not be read (a
    stale NFS or FUSE mount: `df: /mnt/s3: Transport endpoint is not connected`): its rows are
    read, as a listing of only some filesystems (a mount not among them is unknown, not missing)."""
    if out.exit_code != 1 or not out.stdout.strip() or out.partial:
        return out
    said = f"df could not read every filesystem ({out.failure(stdout=False)})"
    return dataclasses.replace(out, exit_code=0, partial=said, exited=out.exit_code)


def _answered_with_warning(out: ProbeOutput) -> ProbeOutput:
    """An nvidia-smi output whose exit code is its warning (14: a corrupted infoROM) beside a
    whole answer: read as answered, as the same output saved to a file is (its warning line a
    fault of the GPU it names: sensor_faults), the code kept in `exited`. Any other code keeps
    its failure: `-L`, `topo -m`, `nvlink` and the compute apps are read only when answered."""
    from gpuonboard.facts.nvidia_smi.faults import without_inforom_lines

    if out.exit_code != WARNING_EXIT or not without_inforom_lines(out.stdout).strip():
        return out  # (the warning and nothing else: no answer to read)
    return dataclasses.replace(out, exit_code=0, exited=out.exit_code)


# nvidia-smi(1), RETURN VALUE: the codes of a fault of a GPU itself, 8 "A device's external power
# cables are not properly attached", 10 "NVIDIA Kernel detected an interrupt issue with a GPU", 15
# "The GPU has fallen off the bus or has otherwise become inaccessible"
_GPU_FAULT_EXITS = (8, 10, 15)


def _failed_answer(out: ProbeOutput, args: str) -> ProbeOutput:
    """A GPU listing printed by an nvidia-smi call that then failed (exit 15, a GPU fallen off the
    bus; 6, 255 ...; 124, stopped by the probe's timeout) and names no GPU it could not open: a
    listing nvidia-smi itself says is not whole, so a GPU missing from it is not known missing
    (`partial`, which the GPU merge reads as a cut: each row read a GPU, more may follow). A lost
    GPU's own line ("Unable to determine the device handle for GPU ...") explains the code, as
    does, for a code of a GPU's fault (8, 10, 15), a GPU the listing shows with faults (`ERR!`,
    `[Unknown Error]`, `GPU requires reset`): read as whole."""
    from gpuonboard.facts.gpu_unopened import unopened_gpus
    from gpuonboard.facts.nvidia_smi import parse_any

    if out.exit_code in (0, 127) or out.partial or not out.stdout.strip():
        return out
    # (its failure's own words alone, `Failed to initialize NVML: ...`, list no GPU: a failure)
    gpus = parse_any(out.stdout).gpus
    if unopened_gpus([out.stdout, out.stderr]) or not gpus:
        return out
    if out.exit_code in _GPU_FAULT_EXITS and any(g.faults or g.cell_faults for g in gpus):
        return out
    call = f"`nvidia-smi {args}`" if args.startswith("-") else "`nvidia-smi`"
    how = (
        f"was stopped after {NVIDIA_SMI_TIMEOUT} s"
        if out.exit_code == TIMED_OUT
        else stopped_said(out.exit_code) or f"failed ({out.failure(stdout=False)})"
    )
    said = f"{call} {how}: what it printed before may leave GPUs out"
    return dataclasses.replace(out, partial=said)


def _read_past_exit(raw: dict[str, ProbeOutput]) -> list[str]:
    """Each output whose non-zero exit code leaves its answer readable, as answered (df's rows,
    nvidia-smi's warning), or as a part of the answer (a GPU listing whose call failed after
    it): `raw` changed in place; a sentence for each nvidia-smi one read as answered."""
    from gpuonboard.facts.gpu_probes import GPU_SOURCES, NVIDIA_SMI_ARGS

    raw["df"] = _df_in_part(raw["df"])
    listings = {name for name, _, _ in GPU_SOURCES}
    read = []
    for name, args in NVIDIA_SMI_ARGS.items():
        out = raw[name]
        raw[name] = _answered_with_warning(out)
        if raw[name] is not out:
            named = args.startswith(("-", "topo", "nvlink"))
            read.append(f"`nvidia-smi {args}`" if named else "`nvidia-smi`")
        elif name in listings:
            raw[name] = _failed_answer(out, args)
    if not read:
        return []
    return [
        f"{', '.join(read)} exited 14, nvidia-smi's code for a corrupted infoROM (a warning beside a"
        " whole answer): read as answered"
    ]


def _ok(raw: Mapping[str, ProbeOutput], name: str) -> str | None:
    out = raw.get(name)
    return out.stdout if out is not None and out.exit_code == 0 and out.stdout.strip() else None


def _read_gpus(
    raw: Mapping[str, ProbeOutput], warnings: list[str]
) -> tuple[nvidia_smi.GpuReport | None, GpuEvidence | None]:
    """parse_facts's GPUs: every nvidia-smi format that answered, merged (the report and the
    evidence of where each field came from); their warnings are added to `warnings`."""
    gpu = evidence = None
    from gpuonboard.facts.gpu_merge import NVLINK_PROBES
    from gpuonboard.facts.gpu_probes import GPU_PROBES

    if any(_some(raw, name) for name in (*GPU_PROBES, *NVLINK_PROBES)):
        from gpuonboard.facts import gpu_merge, nvidia_smi
        from gpuonboard.facts.gpu_list import parse_gpu_list

        evidence = gpu_merge.merge(raw, nvidia_smi.parse_any, parse_gpu_list)
        gpu = evidence.report
        answered = (
            text
            for name, _, _ in gpu_merge.GPU_SOURCES
            if (text := _ok(raw, name)) and gpu_merge.refusal_line(raw[name]) is None
        )
        if gpu is None and (text := next(answered, None)):
            gpu = nvidia_smi.parse_any(text)  # a format answered, but listed no GPU: say why
        warnings += list(gpu.warnings) if gpu else []
        warnings += [r.sentence() for r in evidence.refusals]
    return gpu, evidence


def _mount_table_apart(raw: dict[str, ProbeOutput]) -> None:
    """The kernel's mount table the df probe printed after its rows (df_command) as the output
    `mounts` of its own, df's rows alone in `df`; a mount table's options (a saved `cat
    /proc/mounts` read offline: a share's `username=`, `domain=`) dropped, so that no report
    writes them. `raw` changed in place."""
    from gpuonboard.facts import mount_table

    df = raw["df"]
    rows, table = mount_table.split_df_mount_table(df.stdout)
    if table is not None:
        raw["df"] = dataclasses.replace(df, stdout=rows)
        raw["mounts"] = ProbeOutput(table, "", 0)
    if (out := raw.get("mounts")) is not None and out.stdout:
        raw["mounts"] = dataclasses.replace(out, stdout=mount_table.mount_table_fields(out.stdout))


def _module_file_apart(raw: dict[str, ProbeOutput]) -> None:
    """The module file the table probe printed after nvidia-smi's failed answer (MODULE_READ) as
    the output MODULE_PROBE of its own, as a saved one is read offline; the table probe's answer
    alone in `nvidia_smi_table`. `raw` changed in place."""
    table = raw["nvidia_smi_table"]
    answer, module = split_module_file(table.stdout)
    if module is not None:
        raw["nvidia_smi_table"] = dataclasses.replace(table, stdout=answer)
    if module and module.strip():  # (no file, no module loaded: nothing read, nothing said)
        raw.setdefault(MODULE_PROBE, ProbeOutput(module, "", 0))


def parse_facts(raw: Mapping[str, ProbeOutput]) -> Facts:
    """Pure: raw probe outputs -> Facts (missing tools become None, never an exception)."""
    # each parser module is imported only when there is output for it to parse
    warnings: list[str] = []
    raw = {**{name: ProbeOutput("", "not probed", 127) for name in CORE_NAMES}, **raw}
    if raw["df"].stdout or "mounts" in raw:
        _mount_table_apart(raw)
    if MODULE_FILE_MARK in raw["nvidia_smi_table"].stdout:
        _module_file_apart(raw)
    warnings += _read_past_exit(raw)
    cpu_info = mem = None
    gpu, evidence = _read_gpus(raw, warnings)
    topology = _read_topology(raw)
    nproc = None
    if nproc_text := _ok(raw, "nproc"):
        from gpuonboard.facts import cpu

        nproc = cpu.parse_nproc(nproc_text)  # (a number without nproc's newline may be cut: None)
    if cpu_text := _ok(raw, "lscpu"):
        from gpuonboard.facts import cpu

        cpu_info = (
            cpu.parse_cpuinfo(cpu_text, nproc)
            if cpu.looks_like_cpuinfo(cpu_text)
            else cpu.parse_lscpu(cpu_text)
        )
    if free_text := _ok(raw, "free"):
        from gpuonboard.facts import memory

        mem = memory.read_memory(free_text)
    elif raw["free"].stderr == "not probed" and (numactl_text := _ok(raw, "numactl")):
        # (offline: a saved `numactl -H`, and no free given)
        from gpuonboard.facts import memory

        mem = memory.read_numactl_memory(numactl_text)
    mounts, block = _read_disks(raw)
    memory_limit = cgroup_cpus = cgroup_cpuset = None
    if limits_text := _ok(raw, "cgroup_limits"):
        from gpuonboard.facts import cpu, cpu_cgroup, memory

        memory_limit = memory.parse_cgroup_memory_limit(limits_text)
        cgroup_cpus = cpu_cgroup.parse_cgroup_cpu_limit(limits_text)
        cgroup_cpuset = cpu_cgroup.parse_cgroup_cpuset(limits_text)
    loops: dict[str, str] = {}
    if loop_text := _ok(raw, "loop_backing"):
        from gpuonboard.facts import disks

        loops = disks.parse_loop_backing(loop_text)
    return Facts(
        raw=raw,
        gpu=gpu,
        topology=topology,
        cpu=cpu_info,
        memory=mem,
        mounts=tuple(mounts),
        block_devices=tuple(block),
        os_release=parse_os_release(_ok(raw, "os_release") or ""),
        kernel=(_ok(raw, "kernel") or "").strip() or None,
        nproc=nproc,
        container_runtime=_first_line(_ok(raw, "container_runtime")),
        warnings=tuple(warnings),
        memory_limit_bytes=memory_limit,
        cgroup_cpus=cgroup_cpus,
        cgroup_cpuset=cgroup_cpuset,
        loop_backing=loops,
        gpu_evidence=evidence,
    )


def _read_topology(raw: Mapping[str, ProbeOutput]) -> topo.Topology | None:
    """parse_facts's `nvidia-smi topo -m` (None where it gave none)."""
    if not (topo_text := _ok(raw, "nvidia_topo")):
        return None
    from gpuonboard.facts import topo

    topology = topo.parse_topo(topo_text)
    if (out := raw["nvidia_topo"]).pcie_paths_only:  # (offline: `$ nvidia-smi topo -mp`)
        topology = dataclasses.replace(topology, pcie_only=out.partial or topo.PCIE_PATHS_ONLY)
    elif (
        out.nvlink_matrix
        and not out.partial
        and (not topology.pcie_only or topology.pcie_only.startswith(topo.NO_LEGEND))
    ):  # (offline: `$ nvidia-smi topo -m`)
        # the command is `-m`: a legend saved with no NV# line is a `-mp`'s (the line above it
        # pasted wrong) or one cut short, unknown; where none was saved, the legend was cut
        # away after the matrix and takes nothing from it (a whole matrix of PCIe paths is a
        # box without NVLink, as with its legend)
        topology = dataclasses.replace(topology, shows_nvlink=True, pcie_only="")
    return topology


def _read_disks(
    raw: Mapping[str, ProbeOutput],
) -> tuple[Sequence[disks.Mount], Sequence[disks.BlockDevice]]:
    """parse_facts's mounts (df's, each file system type from the mount table where df gave
    none) and block devices (lsblk's)."""
    mounts: Sequence[disks.Mount] = ()
    block: Sequence[disks.BlockDevice] = ()
    df_text, lsblk_text = _ok(raw, "df"), _ok(raw, "lsblk")
    if df_text or lsblk_text:
        from gpuonboard.facts import disks, mount_table

        mounts = disks.parse_df(df_text) if df_text else ()
        from gpuonboard.facts.lsblk_table import read_lsblk

        block = read_lsblk(lsblk_text) if lsblk_text else ()
        if any(m.fstype is None for m in mounts) and (table := _ok(raw, "mounts")):
            mounts = mount_table.with_mount_types(mounts, mount_table.parse_mount_table(table))
    return mounts, block


def _some(raw: Mapping[str, ProbeOutput], name: str) -> bool:
    """The probe printed something (its exit code aside: a format may answer and still fail)."""
    out = raw.get(name)
    return out is not None and bool(out.stdout.strip() or out.stderr.strip()) and not out.absent


def _first_line(text: str | None) -> str | None:
    lines = (text or "").strip().splitlines()
    return lines[0].strip() if lines else None


def parse_os_release(text: str) -> dict[str, str]:
    """/etc/os-release KEY=value lines, quotes removed."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, eq, value = line.partition("=")
        if eq and key.strip() and not key.startswith("#"):
            out[key.strip()] = value.strip().strip('"').strip("'")
    return out
