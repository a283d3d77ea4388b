"""The host rules of the `acceptance` step: CPU cores (RAM: ram_rules.py; the data disk:
disk_rules.py; both re-exported here).

Pure functions of the order and the facts, each returning a Check. CPUs count as usable only
when this login may use them (offline CPUs, affinity, a cgroup quota).
"""

from __future__ import annotations

import dataclasses
import math
import re
import shlex

from gpuonboard.connection.gather import Facts
from gpuonboard.facts.cpu import (
    AFFINITY_LINE,
    CPUINFO,
    LSCPU_JSON_CUT,
    CpuInfo,
    looks_like_lscpu,
    nproc_unread,
)
from gpuonboard.facts.cpu_cgroup import CPU_LIMIT_FILES, CPUSET_FILES, cgroup_cpuset_read
from gpuonboard.inventory import OrderSpec
from gpuonboard.once import lazy_re
from gpuonboard.steps.base import Check, Verdict
from gpuonboard.steps.checks.cpu_vm import hypervisor_said, model_cores_unshown
from gpuonboard.steps.checks.disk_rules import rule_data_disk as rule_data_disk
from gpuonboard.steps.checks.floors import cores_floor_met
from gpuonboard.steps.checks.host_facts import answered as _answered
from gpuonboard.steps.checks.missing_facts import docker_info_said, not_judged
from gpuonboard.steps.checks.ram_rules import RAM_RESERVE_BYTES as RAM_RESERVE_BYTES
from gpuonboard.steps.checks.ram_rules import container_view, limit_read
from gpuonboard.steps.checks.ram_rules import rule_ram as rule_ram
from gpuonboard.steps.checks.slice_view import container_said


def _or_unknown(n: int | None) -> str:
    return "?" if n is None else str(n)


# a /proc/cpuinfo's line of any architecture: x86's `processor : 0`, ARMv7's `Processor : ARMv7
# ...`, s390's `vendor_id : IBM/S390` and `# processors : 4`
_CPUINFO_LINE = lazy_re(r"^(?:processor|Processor|vendor_id|# processors)\s*:", re.M)


# what told the usable CPU count, by _usable_cpus's reason
_SOURCE_OF = {"affinity/cgroup": "nproc", "offline": "lscpu's Off-line CPU(s) list"}


def _source(why: str, facts: Facts) -> str:
    """What told the usable CPU count (_usable_cpus's reason `why`): the CPU set's file read."""
    if why == "cgroup CPU set" and (read := cgroup_cpuset_read(_answered(facts, "cgroup_limits"))):
        return f"the cgroup's {read[1]}"
    if why == "affinity/cgroup" and _answered(facts, "nproc").lstrip().startswith(AFFINITY_LINE):
        return "the affinity list in /proc/self/status (nproc is not installed)"
    return _SOURCE_OF.get(why, why)


# the reasons whose CPUs are a set of the host's (any of them may be a hyperthread of a core
# whose other thread is in the set too), not a quota of CPU time
_CPU_SETS = ("affinity/cgroup", "offline", "cgroup CPU set")


def _usable_cpus(facts: Facts) -> tuple[int | None, str]:
    """CPUs a process of this login may use: the online CPUs (lscpu's CPU(s) less its Off-line
    CPU(s) list), nproc (the affinity mask), the cgroup's CPU set (cpuset.cpus.effective: a
    saved listing of the cgroup files may give it where no nproc was saved) and its CPU quota,
    whichever is smallest, with what limited it; (None, "") when none is known."""
    usable, why = None, ""
    cpu = facts.cpu
    if cpu is not None and cpu.offline_cpus and cpu.logical_cpus is not None:
        usable, why = max(0, cpu.logical_cpus - cpu.offline_cpus), "offline"
    # nproc counts only online CPUs: no lower than the online count, offline is the reason
    if facts.nproc is not None and (usable is None or facts.nproc < usable):
        usable, why = facts.nproc, "affinity/cgroup"
    # (nproc's affinity lies within the CPU set: a set smaller than a read nproc is a misread)
    cpuset = facts.cgroup_cpuset if facts.nproc is None else None
    if cpuset is not None and (usable is None or cpuset < usable):
        usable, why = cpuset, "cgroup CPU set"
    if facts.cgroup_cpus is not None:
        quota = max(1, math.floor(facts.cgroup_cpus + 1e-9))
        if usable is None or quota < usable:
            usable, why = quota, "cgroup CPU quota"
    return usable, why


def _host_threads(per_core: int | None, cores: int | None, cpus: int | None) -> int:
    """Threads per core: lscpu's `Thread(s) per core`; where it says 0 or nothing (lxcfs's view
    of a container's CPU set, a box with most CPUs offline: `0`), `CPU(s)` over the cores
    (`Socket(s)` x `Core(s) per socket`), the host's; 1 where neither says more."""
    if per_core:
        return per_core
    return cpus // cores if cpus and cores and cpus % cores == 0 else 1


def _counted(count: int | str, noun: str) -> str:
    """`count` `noun`s, in the singular for one: "1 core", "8 cores", "unknown cores"."""
    return f"{count} {noun}{'' if str(count) == '1' else 's'}"


def _limited_detail(usable: int, why: str, logical: int, offline: int | None, source: str = "lscpu") -> str:
    """Why fewer CPUs than the host has may be used, and what to do."""
    if why == "offline":
        listed = (
            "lscpu's Off-line CPU(s) list"
            if source == "lscpu"
            else "present, not online, in /sys/devices/system/cpu"
        )
        return (
            f"only {usable} of {logical} CPUs online ({offline} offline: {listed});"
            " ask the vendor to bring them online (`chcpu -e`, or a kernel `maxcpus=`/`nr_cpus=` limit"
            " removed) or for the box that was ordered; in an LXC/LXD container, lxcfs shows the host's"
            " CPUs outside the container's share as offline: ask for the CPUs ordered"
        )
    return (
        f"only {usable} CPU{'s' if usable != 1 else ''} usable ({why}) of {logical};"
        " the host has more than this login may use"
    )


# the end of cpu_cores' actual where /proc/cpuinfo gives no `physical id` / `core id`
_CORES_NOT_IN_CPUINFO = ": the core count is not in this /proc/cpuinfo"


def _cores_unread(
    ordered: int, expected: str, actual: str, logical: int, threads: int | None, source: str = "lscpu"
) -> Check:
    """cpu_cores where lscpu (or /proc/cpuinfo: `source`) gave enough CPUs but no core count (no
    `Socket(s)` or `Core(s) per socket` read; no `physical id` / `core id`): each core holds at
    most `Thread(s) per core` of the CPUs, so there are at least CPU(s) / threads cores; below
    the order that bound says nothing about hyperthreads."""
    if ordered <= 1 <= logical:  # (any CPU is a core, or a thread of one: one core at least)
        return Check(
            "cpu_cores", expected, f"{actual}: at least 1 core ({_counted(logical, 'CPU')} online)", "pass"
        )
    if threads is not None and threads > 0 and math.ceil(logical / threads) >= ordered:
        at_least = _counted(math.ceil(logical / threads), "core")
        return Check(
            "cpu_cores",
            expected,
            f"{actual}: at least {at_least} ({_counted(logical, 'CPU')}, {threads} per core)",
            "pass",
        )
    if source == CPUINFO:
        return Check(
            "cpu_cores",
            expected,
            f"{actual}{_CORES_NOT_IN_CPUINFO}",
            "unverified",
            f"/proc/cpuinfo lists {_counted(logical, 'online CPU')} but no `physical id` and `core id` lines"
            " (arm64, POWER and many VMs print none), so the cores cannot be told from hyperthreads:"
            " read /sys/devices/system/cpu/cpu*/topology/core_cpus_list on the box (`grep ."
            " /sys/devices/system/cpu/cpu*/topology/core_cpus_list`), or save `lscpu` where util-linux"
            " is installed",
        )
    per_core = "no Thread(s) per core" if threads is None else f"{_counted(threads, 'thread')} per core"
    return Check(
        "cpu_cores",
        expected,
        f"{actual}: the core count is not in this lscpu output",
        "unverified",
        f"lscpu gave {logical} CPUs and {per_core} but no Socket(s) or Core(s) per socket, so"
        f" the cores cannot be told from hyperthreads: run `lscpu` (util-linux 2.20 or newer) or"
        " read /sys/devices/system/cpu/cpu*/topology on the box",
    )


def rule_cpu(order: OrderSpec, facts: Facts) -> Check:
    """Physical cores >= ordered; only hyperthreads reaching it is a warning; fewer CPUs usable
    by this login (offline CPUs, affinity, cgroup quota: a container rental) than ordered fails,
    and a CPU set of an SMT host that may be hyperthreads of fewer cores than ordered warns.
    An nproc output that was given but not read (a number without nproc's final newline: cut
    short?) leaves the CPUs this login may use unknown: no pass or warning, only a fail that
    does not depend on them."""
    check = container_view(
        _judge_cpu(order, facts), facts, "lscpu and nproc show the host's CPUs", CPU_LIMIT_FILES
    )
    check = _lscpu_narrowed(_cpu_set_unknown(check, facts), facts)
    check = _cpus_in_container(check, order, facts)
    unread = nproc_unread(_answered(facts, "nproc"))
    if unread is None or check.verdict == "fail":
        return check
    detail = (
        f"{unread}: the number of CPUs this login may use is unknown; save `nproc` of the box"
        " again (`nproc > nproc.txt`)"
    )
    return Check(
        "cpu_cores",
        check.expected,
        check.actual,
        "unverified",
        "; ".join(filter(None, [detail, check.detail])),
    )


def _lscpu_narrowed(check: Check, facts: Facts) -> Check:
    """A pass or warning from a saved lscpu whose copied command kept only some of its lines
    (`lscpu | grep -E '^CPU\\(s\\)|Socket|Core|Thread'`: ProbeOutput.partial): a line it left
    out may say CPUs are offline (`Off-line CPU(s) list`, which fails a box whose lscpu says
    40 CPUs with 36 of them offline) or hold another CPU type's cores; unverified. A fail
    stands: a filter adds no CPU. Of a /proc/cpuinfo so kept (`grep -E 'processor|core id'
    /proc/cpuinfo`, `cat /proc/cpuinfo | head -n 56`, or blocks of topology lines only), the
    other way round: it lists the online CPUs only, so a pass stands, but a filter that left
    CPU blocks out left CPUs out: a warning or a fail is unverified."""
    out = facts.raw.get("lscpu")
    cpu = facts.cpu
    if cpu is not None and cpu.source == CPUINFO:
        kept = (out.partial if out is not None else "") or cpu.filtered
        if kept and check.verdict == "unverified" and check.actual.endswith(_CORES_NOT_IN_CPUINFO):
            # (the box's /proc/cpuinfo may have them: the filter kept other lines)
            return Check(
                check.name,
                check.expected,
                f"{check.actual.removesuffix(_CORES_NOT_IN_CPUINFO)}; {kept}",
                "unverified",
                "the filter may have left out the `physical id` and `core id` lines the cores are"
                " read from: save the whole `cat /proc/cpuinfo` (or `lscpu`) of the box",
            )
        if check.verdict not in ("warn", "fail") or not kept:
            return check
        return Check(
            check.name,
            check.expected,
            f"{check.actual}; {kept}",
            "unverified",
            "a filter of /proc/cpuinfo may have left out the blocks of some CPUs, so fewer cores or"
            " CPUs than ordered is not known: save the whole `cat /proc/cpuinfo` (or `lscpu`) of the box",
        )
    if check.verdict not in ("pass", "warn") or out is None or not out.partial:
        return check
    if check.verdict == "warn" and cpu is not None and _cores_capped_by_shown(cpu, out.partial):
        # (`lscpu | grep -E "^(CPU\(s\)|Thread|Core|Socket)"`: the cores its lines count are the
        # most the box has, fewer than ordered, as the whole lscpu says; m38e 01)
        return Check(
            check.name,
            check.expected,
            f"{check.actual}; {out.partial}",
            "warn",
            f"{check.detail}: the lines shown count {_counted(cpu.physical_cores or 0, 'core')}"
            " (Socket(s) x Core(s) per socket), and a line the filter left out can only lower that"
            " (another CPU type prints Core(s) per socket and Socket(s) lines of its own, which the"
            " filter keeps, and none is shown); one may say CPUs are offline, fewer CPUs still:"
            " save the whole `lscpu` of the box",
        )
    return Check(
        check.name,
        check.expected,
        f"{check.actual}; {out.partial}",
        "unverified",
        "a line the filter left out may say CPUs are offline (lscpu's Off-line CPU(s) list) or"
        " hold another CPU type: save the whole `lscpu` of the box",
    )


# the narrowing of an lscpu by line-pattern filters only (`lscpu | grep -E '^CPU\(s\)|Core'`,
# `lscpu | egrep ... | grep -v Flags`): the command the note quotes, and its filters' options
_GREP_KEPT = lazy_re(r"^`(?P<command>[^`]+)` keeps only the lines e?f?grep let through")
_GREPS = frozenset({"grep", "egrep", "fgrep"})
# a grep option that keeps fewer matching lines than match, or prints other than the lines
# (`-m 1`, `--max-count`, `-c`, `-l`, `-o`, `-q`)
_GREP_CUTS = lazy_re(r"^(?:-[A-Za-z]*[mclLoq]|--(?:max-count|count|files|only|quiet|silent))")


def _cores_capped_by_shown(cpu: CpuInfo, partial: str) -> bool:
    """Whether the cores an lscpu narrowed by `partial` counts are the most the box has: read from
    its Socket(s) and Core(s) per socket lines (the count's own) and kept by grep alone (a
    pattern keeps every line that matches: a second CPU type's lines of
    those labels too; no `-m`, `head` or `sed` that stops after some)."""
    found = _GREP_KEPT.match(partial)
    if found is None or cpu.sockets is None or cpu.cores_per_socket is None or cpu.physical_cores is None:
        return False
    try:
        words = list(shlex.shlex(found.group("command"), posix=True, punctuation_chars=True))
    except ValueError:  # (an unclosed quote)
        return False
    stages: list[list[str]] = [[]]
    for word in words:
        if word == "|":
            stages.append([])
        else:
            stages[-1].append(word)
    stages = stages[1:]
    if not stages or any(not words or words[0].rsplit("/", 1)[-1] not in _GREPS for words in stages):
        return False
    return not any(_GREP_CUTS.match(word) for words in stages for word in words[1:])


def _cpus_in_container(check: Check, order: OrderSpec, facts: Facts) -> Check:
    """A warning or fail read from an lscpu (or /proc/cpuinfo) that its copied command ran inside a
    container (`docker exec app lscpu`, `lxc exec c1 -- lscpu`: ProbeOutput.in_container): lxcfs
    shows that container's CPU set as the online CPUs (and its /proc/cpuinfo lists those only),
    so fewer CPUs or cores than ordered is the container's share, not the box's: unverified. A
    pass stands (a container sees no CPU the box lacks), and so does a shortfall of the CPUs
    this login may use (nproc, the cgroup's CPU set or quota: the login's own limits). An lscpu's
    own shortfall stands where it is the box's: lxcfs changes only which CPUs are online, so
    fewer CPUs in all (`CPU(s):`, offline ones counted: sysfs' possible and present) than cores
    ordered, or no CPU offline (the host's view: a container without lxcfs), is the box's."""
    out = facts.raw.get("lscpu")
    if check.verdict not in ("warn", "fail") or out is None or not out.in_container:
        return check
    assert order.cpu_cores is not None
    cpu = facts.cpu
    if (
        cpu is not None
        and cpu.source != CPUINFO
        and _lscpu_is_the_boxs(cpu, order.cpu_cores, out.in_container)
    ):
        return check
    usable, why = _usable_cpus(facts)
    if usable is not None and why not in ("", "offline"):
        cpu = facts.cpu
        threads = _host_threads(cpu.threads_per_core, cpu.physical_cores, cpu.logical_cpus) if cpu else 1
        if usable < order.cpu_cores or (why in _CPU_SETS and math.ceil(usable / threads) < order.cpu_cores):
            return check
    tool = facts.cpu.source if facts.cpu is not None else "lscpu"
    return Check(
        check.name,
        check.expected,
        f"{check.actual}; {out.in_container}",
        "unverified",
        f"inside a container {tool} shows the host's CPUs, or where lxcfs serves it only the"
        " container's CPU set (the others as offline), so fewer CPUs or cores than ordered is"
        f" not known of the box: save `{'cat /proc/cpuinfo' if tool == CPUINFO else 'lscpu'}`"
        " of the box, run in its own shell",
    )


# a container runtime with a kernel of its own (gVisor's runsc, Kata's sandbox VM), named in the
# copied command (`docker run --runtime=runsc`, `--runtime=kata-runtime`, `ctr run --runtime
# io.containerd.kata.v2`, a RuntimeClass `kata-qemu`): its lscpu shows the sandbox's CPUs (a
# `--cpuset-cpus` set, the VM's vCPUs) with none offline, never the host's
_OWN_KERNEL = lazy_re(
    r"(?<![\w-])(runsc|gvisor|kata[\w.-]*|io\.containerd\.(runsc|kata)[\w.-]*)(?![\w-])", re.I
)


def _lscpu_is_the_boxs(cpu: CpuInfo, ordered: int, container: str = "") -> bool:
    """Whether an lscpu run in a container shows the box's CPUs as they are (_cpus_in_container):
    no CPU offline (no lxcfs CPU set: docker, podman, kubectl, lxc share the host's kernel and
    sysfs), or fewer CPUs in all, offline ones counted, than `ordered`; never where the
    `container` clause names a runtime with a kernel of its own (gVisor, Kata: its lscpu counts
    the sandbox's CPUs, all of them online)."""
    if _OWN_KERNEL.search(container):
        return False
    total = cpu.logical_cpus
    return not cpu.offline_cpus or (total is not None and total < ordered)


def _cpu_set_unknown(check: Check, facts: Facts) -> Check:
    """A pass of a container whose CPU quota was read (cpu.max: `max`, no quota) but neither
    its CPU set (cpuset.cpus.effective) nor nproc: a container run with `--cpuset-cpus=12-15`
    has no quota and may use 4 of the host's CPUs, which lscpu shows all of; unverified."""
    if check.verdict != "pass" or facts.nproc is not None or limit_read(facts, CPUSET_FILES):
        return check
    if nproc_unread(_answered(facts, "nproc")) is not None or not (container := container_said(facts)):
        return check  # (an nproc given but not read: rule_cpu says so)
    return Check(
        check.name,
        check.expected,
        f"{check.actual} (of the host: {container}, a container)",
        "unverified",
        "inside a container lscpu shows the host's CPUs, and the CPUs this container may run on"
        " (its CPU set: `docker run --cpuset-cpus`, a pod's exclusive CPUs) were not read: a CPU"
        " quota of `max` does not say it may use them all; save `nproc` of the box, or"
        " `grep . /sys/fs/cgroup/cpuset.cpus.effective` (cgroup v1:"
        " `grep . /sys/fs/cgroup/cpuset/cpuset.effective_cpus`) beside it",
    )


def _usable_only(usable: int, why: str, cores: int, expected: str, facts: Facts) -> Check:
    """cpu_cores from the CPUs this login may use alone (nproc, no lscpu read): threads, not
    cores, so at most a warning."""
    verdict: Verdict = "warn" if usable >= cores else "fail"
    out = facts.raw.get("lscpu")
    lscpu = "no lscpu"
    if facts.given("lscpu") and out is not None:
        failed = "lscpu not installed" if out.absent else "lscpu failed"
        lscpu = failed if out.exit_code else "lscpu unreadable"
    if facts.cpu is not None and facts.cpu.source == CPUINFO:  # (read where lscpu gave nothing)
        lscpu = f"no lscpu; /proc/cpuinfo {'cut short' if facts.cpu.cut else 'gives no core count'}"
    return Check(
        "cpu_cores",
        expected,
        f"{usable} logical CPUs ({lscpu})",
        verdict,
        f"only the logical CPUs this login may use are known ({_source(why, facts)}): threads,"
        " not cores; save `lscpu` of the box to count its cores",
    )


def _lscpu_unread(expected: str, facts: Facts) -> Check:
    """cpu_cores where lscpu gave nothing readable and the usable CPUs are unknown: unverified,
    saying whether lscpu is not installed (exit 127: `sh: 1: lscpu: not found`)."""
    if (said := facts.raw.get("lscpu")) is not None and said.absent:
        return Check(
            "cpu_cores",
            expected,
            f"unknown: lscpu is not installed ({said.stderr.strip() or 'exit 127'})",
            "unverified",
            "lscpu (util-linux) is not on the login user's PATH, so the CPU cores could not be read:"
            " install util-linux (or ask the vendor to), or save `lscpu` run where it is installed",
        )
    if facts.cpu is not None and LSCPU_JSON_CUT in facts.cpu.warnings:
        return Check(
            "cpu_cores",
            expected,
            f"unknown: {LSCPU_JSON_CUT}",
            "unverified",
            "nothing of a JSON cut short is read: save the whole `lscpu -J` (or `lscpu`) of the box",
        )
    if facts.cpu is not None and facts.cpu.cut:  # (a /proc/cpuinfo not known whole)
        return Check(
            "cpu_cores",
            expected,
            f"unknown: the CPU listing is cut short ({facts.cpu.cut})",
            "unverified",
            "the CPUs outside what was read are unknown: save the whole `cat /proc/cpuinfo` (or"
            " `lscpu`) of the box",
        )
    if said is not None and _CPUINFO_LINE.search(said.stdout) and not looks_like_lscpu(said.stdout):
        return Check(  # (the live probe's /proc/cpuinfo where lscpu is not installed: s390, ARMv7)
            "cpu_cores",
            expected,
            "unknown: /proc/cpuinfo (lscpu is not installed) gave no CPU list this tool reads",
            "unverified",
            "this kernel's /proc/cpuinfo has no `processor : N` block per CPU (s390, 32-bit ARM),"
            " so the CPU cores could not be read: install util-linux and run `lscpu` on the box",
        )
    if said is not None and not said.exit_code and said.stdout.strip()[:1] not in ("", "{"):
        return _lscpu_text_unread(expected, said.stdout)  # (a text not lscpu's own: m36b 10)
    return Check(
        "cpu_cores",
        expected,
        "unknown: lscpu gave no readable output",
        "unverified",
        "the CPU cores could not be read: run `lscpu` (and `nproc`) on the box to see why",
    )


# lscpu's lines that count CPUs (any language's `CPU(s)`, `Thread(s) per core`, `Core(s) per ...`,
# `Socket(s)`; the BSD lscpu's `Total CPU(s)`), and the value each holds in lscpu's own form
_COUNT_LINE = lazy_re(
    r"^\s*(?:(?:Total |Active )?CPU\(s\)|Thread\(s\) per core|Core\(s\) per \w+|Socket\(s\))\s*:.*$", re.M
)
_COUNT_VALUE = lazy_re(r"[^:]*:\s*(?:\d+|-)\s*")
# Win32_Processor's fields, which torch's collect_env prints on Windows in place of lscpu (`Name:`,
# `Manufacturer: GenuineIntel`, `Family: 198`, `Architecture: 9`, `ProcessorType: 3`, `DeviceID: CPU0`)
_WINDOWS_CPU = lazy_re(
    r"^\s*(?:Manufacturer\s*:|Architecture\s*:\s*\d+\s*$|ProcessorType\s*:|DeviceID\s*:\s*CPU\d|MaxClockSpeed\s*:)",
    re.M,
)
# NanXiao's lscpu for FreeBSD and OpenBSD: `Total CPU(s):` (and `Active CPU(s):`), no `CPU(s):` line
_BSD_LSCPU = lazy_re(r"^\s*Total CPU\(s\)\s*:", re.M)


def _lscpu_text_unread(expected: str, text: str) -> Check:
    """cpu_cores where an lscpu's text was given and no count was read from it: the text is the
    reason (a paste's notes or edits after its values, a BSD lscpu), never the box; the lines not
    in lscpu's form named (every count line where none is: measure38d 06)."""
    lines = [" ".join(m.group(0).split()) for m in _COUNT_LINE.finditer(text)]
    odd = [line for line in lines if not _COUNT_VALUE.fullmatch(line)]
    shown = "; ".join(f"`{line[:80]}`" for line in (odd or lines)[:3])
    if _WINDOWS_CPU.search(text):
        return _windows_cpu_unread(expected, text)
    if _BSD_LSCPU.search(text):
        edited = f"; its count lines ({shown}) are not lscpu's own form either" if odd else ""
        detail = (
            "it is the BSD `lscpu` (NanXiao's, for FreeBSD and OpenBSD: `Total CPU(s):`, no `CPU(s):`"
            f" line), whose counts are not util-linux's and are not read{edited}: give util-linux's"
            " plain `lscpu` output of the box"
        )
    elif lines:
        detail = (
            f"its count lines ({shown}) are not lscpu's own form: give the plain `lscpu` output of the"
            " box (without notes or edits after its values)"
        )
    else:
        detail = (
            "it holds no `CPU(s):`, `Core(s) per socket:` or `Socket(s):` line: give the plain `lscpu`"
            " output of the box (without notes or edits after its values)"
        )
    return Check(
        "cpu_cores",
        expected,
        "unknown: no CPU count could be read from the lscpu output",
        "unverified",
        detail,
    )


def _windows_cpu_unread(expected: str, text: str) -> Check:
    """cpu_cores of a collect_env run on Windows: its CPU block is Win32_Processor's fields (name,
    maker, family, clocks), which count no cores; never lscpu's (measure39e 20)."""
    last = text.rstrip(" \t").rsplit("\n", 1)[-1].strip()
    cut = ""
    if last and not text.endswith("\n"):
        cut = f"; the block is cut short (its last line, `{last[:40]}`, ends without a line end)"
    return Check(
        "cpu_cores",
        expected,
        "unknown: collect_env's Windows CPU fields (Win32_Processor) give no core count",
        "unverified",
        "torch's collect_env on Windows prints the processor's Name, Manufacturer, Family,"
        f" Architecture ... (Win32_Processor), no lscpu and no core count{cut}: give the box's"
        " `Get-CimInstance Win32_Processor | Select-Object NumberOfCores, NumberOfLogicalProcessors`"
        " (PowerShell), or `lscpu` where it runs Linux",
    )


def _judge_cpu(order: OrderSpec, facts: Facts) -> Check:
    """rule_cpu from lscpu, nproc (when read) and the cgroup quota."""
    assert order.cpu_cores is not None
    expected = f">= {order.cpu_cores} cores"
    usable, why = _usable_cpus(facts)
    least = cores_floor_met(order.cpu_cores, expected, facts)  # (a cut listing's: `at least N read`)
    if least is not None and (usable is None or usable >= order.cpu_cores):
        return least
    if facts.cpu is None or (facts.cpu.physical_cores is None and facts.cpu.logical_cpus is None):
        # (no lscpu, or one nothing was read from: a damaged `lscpu -J`, another command's text)
        if usable is None and not facts.given("lscpu"):
            check = not_judged("cpu_cores", expected, "lscpu", "lscpu")
            return dataclasses.replace(check, actual=f"{check.actual}{docker_info_said(facts, 'CPUs')}")
        if usable:
            return _usable_only(usable, why, order.cpu_cores, expected, facts)
        # lscpu ran but gave nothing readable, and the usable CPU count is unknown: no evidence
        # of fewer cores than ordered (a missing tool is not missing hardware)
        return _lscpu_unread(expected, facts)
    physical, logical = facts.cpu.physical_cores, facts.cpu.logical_cpus
    model = f" ({facts.cpu.model_name})" if facts.cpu.model_name else ""
    actual = f"{_counted(_or_unknown(physical), 'core')} / {_counted(_or_unknown(logical), 'thread')}{model}"
    threads = _host_threads(facts.cpu.threads_per_core, physical, logical)
    if usable is not None and logical is not None and usable < logical:
        if why == "offline":
            # (no core count: lscpu counts cores over the online CPUs, or over all, by version:
            # "2 cores / 4 threads" of 4 single-thread cores, 2 of them offline, misled)
            actual = f"{_counted(logical, 'CPU')}{model}, {usable} online"
        else:
            actual += f", {usable} usable ({why})"
        if usable < order.cpu_cores:
            detail = _limited_detail(usable, why, logical, facts.cpu.offline_cpus, facts.cpu.source)
            if physical is not None and physical < order.cpu_cores:  # (the first shortfall to say)
                cores = _counted(physical, "core")
                short = f"{facts.cpu.source} counts {cores}, fewer than the {order.cpu_cores} ordered"
                detail = f"{short}; and {detail}"
            return Check("cpu_cores", expected, actual, "fail", detail)
        if why in _CPU_SETS and math.ceil(usable / threads) < order.cpu_cores:
            # a CPU set (cpuset, taskset; lxcfs shows a container's set as the online CPUs) or the
            # online CPUs of an SMT host may hold both threads of each core
            kind = "online" if why == "offline" else "usable"
            return Check(
                "cpu_cores",
                expected,
                actual,
                "warn",
                f"the {usable} {kind} CPUs may be hyperthreads ({threads} per core) of as few as"
                f" {_counted(math.ceil(usable / threads), 'core')}; the order is met for certain only by"
                f" {(order.cpu_cores - 1) * threads + 1} or more {kind} CPUs",  # (the fewest that hold them)
            )
    if physical is not None and physical >= order.cpu_cores:
        return Check("cpu_cores", expected, actual, "pass")
    if logical is not None and logical >= order.cpu_cores:
        if physical is None and facts.cpu.cut:
            return Check(
                "cpu_cores",
                expected,
                f"{actual}: the lscpu output is cut short",
                "unverified",
                f"the lscpu output is cut short ({facts.cpu.cut}), so the cores it did not show (a"
                " core count, a CPU type after it) are unknown: save the whole `lscpu` of the box",
            )
        if physical is None:
            return _cores_unread(
                order.cpu_cores, expected, actual, logical, facts.cpu.threads_per_core, facts.cpu.source
            )
        return Check("cpu_cores", expected, actual, "warn", "the order is met only by counting hyperthreads")
    return Check("cpu_cores", expected, actual, "fail", _fewer_cpus(facts, logical))


def _fewer_cpus(facts: Facts, logical: int | None) -> str:
    """Why a box with fewer CPUs than ordered (hyperthreads included) fails cpu_cores, by where
    its CPUs were read: /proc/cpuinfo (the online CPUs only), a VM's vCPUs, or a host's lscpu."""
    assert facts.cpu is not None
    if facts.cpu.source == CPUINFO:  # (it lists the online CPUs only)
        return (
            "fewer online CPUs than ordered in /proc/cpuinfo, hyperthreads included (it lists only the"
            " CPUs online): CPUs offline, a smaller CPU model or fewer sockets; run `lscpu` (its"
            " Off-line CPU(s) list) and ask the vendor for the box that was ordered"
        )
    if hypervisor := hypervisor_said(facts):
        # (a VM's CPUs are the vCPUs its host gave it, not a CPU model's or sockets' count)
        return (
            f"fewer CPUs than ordered, hyperthreads included: a virtual machine ({hypervisor}) given"
            f" {_counted(logical, 'vCPU') if logical is not None else 'fewer vCPUs'}; ask the vendor"
            " for the size that was ordered"
        )
    if sliced := model_cores_unshown(facts.cpu):
        return (
            f"fewer CPUs than ordered, hyperthreads included: {sliced}, so a virtual machine given"
            f" {_counted(logical, 'vCPU') if logical is not None else 'fewer vCPUs'} (its lscpu's"
            " Hypervisor vendor line not given), or cores disabled in the firmware; ask the vendor for"
            " the size that was ordered"
        )
    return (
        "fewer CPUs than ordered, hyperthreads included: a smaller CPU model or fewer sockets;"
        " ask the vendor for the box that was ordered"
    )
