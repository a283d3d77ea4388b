"""The core probes of a host's facts and the shell commands each runs (nvidia-smi's formats
under a timeout, lscpu, free, df, lsblk, os-release, nproc, the cgroup limits, loop devices' backing
files, the kernel module's version file after a failed nvidia-smi), with their fallbacks to the
kernel's own files on a minimal image; gathered in one remote execution by connection/gather.py.
"""

from __future__ import annotations

from gpuonboard import shell
from gpuonboard.facts.driver_module import MODULE_FILE, MODULE_FILE_MARK
from gpuonboard.facts.gpu_probes import WARNING_EXIT
from gpuonboard.facts.probe import Probe
from gpuonboard.once import loaded_once

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
