"""Read-only probes for the fabric facts that are not nvidia-smi's: kernel Xid/SXid lines, RDMA
ports, Fabric Manager (the nvidia-smi ones, `-L`, `nvlink -s` and `nvlink -e` among them, are
built in connection/probe_commands.py, under its timeout). Each is a `Probe` whose output the pure parsers
of facts/kernel_log.py, infiniband.py and fabric_manager.py read.

They are cheap and bounded: the kernel log is filtered on the host to the lines its readers
read (NVRM/Xid/SXid/nvswitch, a GPU function's and uncorrectable AER lines, boot markers, the
host's own hardware errors: EDAC, machine checks, APEI records) and
capped (a dmesg ring buffer is up to several MB; journalctl -k -b of a long uptime more).
Exit codes: 127 = the tool is absent; 126 = the kernel log could not be read by dmesg nor
journalctl (stderr says which refused and why, e.g. "dmesg: read kernel buffer failed:
Operation not permitted").
"""

from __future__ import annotations

from gpuonboard import shell
from gpuonboard.facts.probe import Probe

__all__ = [
    "FABRIC_MANAGER",
    "KERNEL_LOG",
    "KERNEL_LOG_MAX_LINES",
    "KERNEL_LOG_REFUSED",
    "SAVE_AGAIN",
    "RDMA_PORTS",
    "kernel_log_command",
]

KERNEL_LOG_MAX_LINES = 2000  # the last N matching lines are kept
KERNEL_LOG_REFUSED = 126  # the exit code of the probe where no reader could read the log
# what a saved kernel log that could not be read (a chat joined its lines) asks, in its reason: the
# kernel rules then ask for the log saved again, not for read access to it
SAVE_AGAIN = "save it again as the command printed it"
# kernel log lines kept: every line the readers of the log (facts/kernel_log.py, facts/aer.py)
# read, so that the live probe's filtered log is judged as the whole log saved offline: the GPU
# driver's (NVRM: Xid, GPU fallen off the bus ...), the NVSwitch driver's (nvidia-nvswitchN:
# SXid ...), the kernel's lines about a GPU function (`nvidia 0000:03:00.0: AER: can't recover`,
# a failed probe: `nvidia: probe of 0000:3b:00.0 failed with error -1`)
# and its uncorrectable PCIe errors (a root port's `AER: Uncorrected (Fatal) error received:
# 0000:03:00.0`, `PCIe Bus Error: severity=Uncorrected (Fatal)`), and a boot's first line (the
# `Linux version` banner) and journalctl's boot separators, and the paravirtual GPU driver's
# registration of a WSL2 / Hyper-V guest (`hv_vmbus: registering driver dxgkrnl`, once a boot):
# its GPU's driver is the Windows host's, so no Xid there is no evidence (facts/kernel_log.py).
# Then the AER lines no reader reads are dropped (KERNEL_LOG_DROP): corrected errors, the GPU's
# own too (a flaky riser logs three lines an event, thousands of them), and the status/mask and
# bit lines that detail an error: they would push the GPU's Xid lines out of the last KERNEL_LOG_MAX_LINES.
# The lines of the GPU and NVSwitch drivers (and a boot's markers) are capped apart from the
# others (any device's uncorrectable PCIe errors: a NIC may log thousands), so that another
# device's flood never pushes a GPU's Xid out; the probe says how many matching lines it left
# out of each (`# dropped: driver N other M`), and a log of which some were left out is only part
# of the log (facts/kernel_log.py KernelLog.cut_by_cap). On a host without sort or cut the lines
# cannot be put back in order: the newest KERNEL_LOG_MAX_LINES of the drivers' and the others'
# are kept, as one cap, and the host errors' lines are left out (they would share that cap and
# push a GPU's Xid out: a storm of corrected EDAC errors); the counts are of the lines of each
# kind left out all the same (the host's all of them, a driver's line that is a host error's too).
KERNEL_LOG_DRIVER = (
    "NVRM|Xid|SXid|nvswitch|nvidia [0-9a-fA-F]{4}:|nvidia: probe of "
    "|Linux version |-- (Reboot|Boot [0-9a-f]+) --|registering driver dxgkrnl"
    # (the kernel's lines that say why the driver failed a GPU: data/nvrm_faults.yml kernel_line)
    "|vmap allocation for size|mapping multiple BARs"
    # (a BAR the kernel could not assign at boot: `pci 0000:13:00.0: BAR 1: failed to assign [mem
    # ...]`, since 6.8 `BAR 1 [mem ...]: can't assign; no space`; nvrm_faults.yml bar_assign_failed)
    "|BAR ?[0-9]+(: (failed to assign|no space for) \\[mem| \\[mem[^]]*\\]: (can't|failed to) assign)"
    # (the Jetson iGPU driver's error lines, `nvgpu: 17000000.gpu <function>:<line>  [ERR]  ...`:
    # data/nvrm_faults.yml nvgpu_*, GPU fault events without an Xid)
    "|nvgpu: .*\\[ERR\\]"
    # (a GSP-CrashCat report's line the firmware prints without the driver's tag: `GSP task
    # watchdog timeout @ pc:...`, `GSP task exception ...`: nvrm_faults.yml gsp_crashcat_task)
    "|GSP task (watchdog timeout|exception)"
)
KERNEL_LOG_PATTERN = f"{KERNEL_LOG_DRIVER}|[Uu]ncorrect"
# the host's own hardware errors (facts/host_errors.py, host_hw_errors): the memory controllers'
# EDAC lines (`EDAC MC3: 1 UE ...`, `EDAC sbridge MC1: CPU 1: Machine Check Event: ...`), the
# machine checks' and the firmware's APEI records (`mce: [Hardware Error]: ...`, `{1}[Hardware
# Error]: ...`, a fatal machine check's panic) and the kernel's word on a poisoned page. They are
# kept and capped apart from both other kinds (a storm of corrected EDAC errors, thousands of
# lines, never pushes a GPU's Xid nor a device's uncorrectable PCIe error out), counted apart
# (`host H` in `# dropped:`), and left out of KERNEL_LOG_PATTERN, which a saved log's lines are
# compared with (a saved log of such lines alone is no GPU grep's: facts/kernel_log.py)
KERNEL_LOG_HOST = (
    r"EDAC [^:]*MC[0-9]+: |\[Hardware Error\]|[Mm]achine [Cc]heck|Uncorrected hardware memory error"
    r"|Memory failure: "
)
# a kernel log's first line at boot (dmesg's stamp 0.000000, the kernel's first words: `Linux
# version` on x86, `Booting Linux on` before it on arm64), in grep -E and Python re alike: a log whose
# first line is none of these no longer reaches back to boot (dmesg's ring buffer wrapped, a journal
# whose oldest entries were dropped), so a fault before its first line is not in it
KERNEL_LOG_BOOT = r"^\[ *0\.0+\]|Linux version |Booting Linux on "
KERNEL_LOG_DROP = r"severity=Correct|error status/mask=|: (AER: )? +\[ ?[0-9]+\] "


def kernel_log_command(max_lines: int = KERNEL_LOG_MAX_LINES, pattern: str = KERNEL_LOG_PATTERN) -> str:
    """Shell: the kernel log's GPU lines since boot (KERNEL_LOG_PATTERN), the newest `max_lines`
    of the GPU and NVSwitch drivers' lines and as many of the others' (KERNEL_LOG_DRIVER).

    Tries `dmesg`, then `sudo -n dmesg` (never prompts), then `journalctl -k -b` only when
    dmesg was refused; and `journalctl -k -b` where dmesg's log no longer reaches back to boot
    (its ring buffer wrapped: KERNEL_LOG_BOOT) while the journal's does (it is read then).
    The host's own hardware errors (KERNEL_LOG_HOST) are kept too, the newest `max_lines` of them
    apart (left out on a host without sort or cut, where the caps cannot be apart). Output starts
    with `# source: <which answered>` and `# first: <the log's first line>` (so a reader can
    tell whether the log reaches back to boot) and
    `# dropped: driver <N> other <M> host <H>` (the matching lines left out of each kind: so it
    can tell the log kept is whole). When nothing could be read: exit 126, and stderr names each refusal
    and its first line; a host without grep, head or tail (the filter's tools) exits 126 too,
    naming the one missing.
    A reader that answers with nothing (a dmesg whose ring buffer was cleared) reads no log, and a
    journalctl that shows no kernel lines to this user ("-- No entries --", "Hint: You are
    currently not seeing messages ...", "No journal files were found.") counts as a refusal, not
    as an empty log: the next reader is tried, else exit 126.
    """
    emit = _kept_lines(pattern, int(max_lines))
    whole = _from_boot()
    # (each refusal's first line; util-linux's dmesg names itself, `dmesg: read kernel buffer failed`)
    first = "l=$(printf '%s\\n' \"$o\" | head -n 1); l=${l:-printed nothing}; "
    return (
        # (a host without grep, head or tail filters nothing: a log read through a missing grep
        # printed its header alone, a whole log from boot with no fault in it)
        "for x in grep head tail; do command -v $x >/dev/null 2>&1 || {"
        ' echo "$x is not installed: the kernel log cannot be filtered on the host" >&2;'
        f" exit {KERNEL_LOG_REFUSED}; }}; done; "
        '__gpo_n() { if [ -n "$1" ]; then printf \'%s\\n\' "$1" | grep -cE -- "$2"; else echo 0; fi; }; '
        # (the lines of `$1` that match `$3` and not `$2`: the host errors' that are no driver's)
        '__gpo_h() { if [ -n "$1" ]; then printf \'%s\\n\' "$1" | grep -vE -- "$2" | grep -cE -- "$3"; '
        "else echo 0; fi; }; "
        "e=; "
        f'if o=$(dmesg 2>&1) && [ -n "$o" ]; then s=dmesg; {whole}; {emit}; fi; {first}'
        'case $l in dmesg:*) e=$l;; *) e="dmesg: $l";; esac; '
        "if command -v sudo >/dev/null 2>&1; then "
        f"if o=$(sudo -n dmesg 2>/dev/null) && [ -n \"$o\" ]; then s='sudo -n dmesg'; {whole}; {emit}; fi; "
        # (its refusal, `sudo: a password is required`, read apart: a sudo warning on stderr is
        # no line of a log that is read)
        'l=$(sudo -n dmesg 2>&1 >/dev/null | head -n 1); e="$e; sudo -n dmesg: ${l:-printed nothing}"; fi; '
        "if command -v journalctl >/dev/null 2>&1; then "
        'if o=$(journalctl -k -b --no-pager -q 2>&1) && [ -n "$o" ] && '
        "! printf '%s\\n' \"$o\" | grep -q -e '^-- No entries --' -e 'not seeing messages' "
        "-e '^No journal files'; then "
        f"s='journalctl -k -b'; {emit}; fi; "
        f'{first}e="$e; journalctl -k -b: $l"; '
        'else e="$e; journalctl: not installed"; fi; '
        f"printf '%s\\n' \"$e\" >&2; exit {KERNEL_LOG_REFUSED}"
    )


def _kept_lines(pattern: str, cap: int) -> str:
    """Shell: the kernel log `$o` (read by `$s`) filtered to `pattern` and the host errors, capped
    at `cap` lines of each kind, under its `# source:`, `# first:` and `# dropped:` lines; exit 0
    (kernel_log_command's step for each reader that answered)."""
    keep = shell.quote(f"{pattern}|{KERNEL_LOG_HOST}")
    drop, driver, host = (
        shell.quote(KERNEL_LOG_DROP),
        shell.quote(KERNEL_LOG_DRIVER),
        shell.quote(KERNEL_LOG_HOST),
    )
    # (the matching lines numbered, the newest `cap` of the drivers', of the host errors' (not the
    # drivers') and of the others' kept, put back in the log's order, else the newest `cap` of
    # the drivers' and the others' (no host error's line: their count must never depend on those);
    # `# dropped:` the matching lines left out of each kind: those in `f` less those in `k`,
    # counted by `__gpo_n TEXT PATTERN`, the host errors' by `__gpo_h TEXT`)
    return (
        f"f=$(printf '%s\\n' \"$o\" | grep -E {keep} | grep -vE {drop} | grep -n ''); "
        "if command -v sort >/dev/null 2>&1 && command -v cut >/dev/null 2>&1; then "
        f"k=$({{ printf '%s\\n' \"$f\" | grep -E {driver} | tail -n {cap}; "
        f"printf '%s\\n' \"$f\" | grep -vE {driver} | grep -E {host} | tail -n {cap}; "
        f"printf '%s\\n' \"$f\" | grep -vE {driver} | grep -vE {host} | grep -v '^$' | tail -n {cap}; }} "
        "| sort -t: -k1,1n | cut -d: -f2-); "
        f"else k=$(printf '%s\\n' \"$o\" | grep -E {keep} | grep -vE {drop} | grep -vE {host}"
        f" | tail -n {cap}); fi; "
        f"n=$(__gpo_n \"$f\" ''); m=$(__gpo_n \"$k\" ''); "
        f'd=$(__gpo_n "$f" {driver}); kd=$(__gpo_n "$k" {driver}); '
        f'h=$(__gpo_h "$f" {driver} {host}); kh=$(__gpo_h "$k" {driver} {host}); '
        "printf '# source: %s\\n# first: %s\\n# dropped: driver %s other %s host %s\\n' "
        '"$s" "$(printf \'%s\\n\' "$o" | head -n 1)" "$((d - kd))" "$((n - m - d + kd - h + kh))" '
        '"$((h - kh))"; '
        '[ -n "$k" ] && printf \'%s\\n\' "$k"; exit 0'
    )


def _from_boot() -> str:
    """Shell: `$o` and `$s` replaced by `journalctl -k -b`'s log where dmesg's no longer reaches
    back to boot (its first line is no KERNEL_LOG_BOOT line) and the journal's does."""
    boot = shell.quote(KERNEL_LOG_BOOT)
    return (
        f"if ! printf '%s\\n' \"$o\" | head -n 1 | grep -qE {boot} && command -v journalctl >/dev/null 2>&1"
        " && j=$(journalctl -k -b --no-pager -q 2>/dev/null) &&"
        f" printf '%s\\n' \"$j\" | head -n 1 | grep -qE {boot}; then o=$j; s='journalctl -k -b'; fi"
    )


# /sys/class/infiniband/DEV/ports/N/{state,phys_state,rate}, DEV/sys_image_guid, whether DEV's
# PCI function is an SR-IOV virtual function of this host (`vf`: its device has a `physfn` link;
# `pf`: it has a device and no such link), and N/link_layer -> one tab-separated line per port
# (builtins only: no process per file). No RDMA device: no output, exit 0; no sysfs to read
# (not mounted, masked: no /sys/class/net, which holds `lo` wherever sysfs is) exits 2, unread.
_RDMA_SYSFS = (
    "[ -d /sys/class/net ] || { echo 'no /sys/class/net: sysfs is not mounted or is masked' >&2; exit 2; }; "
    "for p in /sys/class/infiniband/*/ports/*; do "
    '[ -d "$p" ] || continue; D=${p%/ports/*}; d=${D##*/}; n=${p##*/}; '
    "s=; ph=; r=; g=; f=; l=; "
    '[ -r "$p/state" ] && read -r s <"$p/state"; '
    '[ -r "$p/phys_state" ] && read -r ph <"$p/phys_state"; '
    '[ -r "$p/rate" ] && read -r r <"$p/rate"; '
    '[ -r "$D/sys_image_guid" ] && read -r g <"$D/sys_image_guid"; '
    'if [ -e "$D/device/physfn" ]; then f=vf; elif [ -e "$D/device" ]; then f=pf; fi; '
    '[ -r "$p/link_layer" ] && read -r l <"$p/link_layer"; '
    'printf \'%s\\t%s\\t%s\\t%s\\t%s\\t%s\\t%s\\t%s\\n\' "$d" "$n" "$s" "$ph" "$r" "$g" "$f" "$l"; '
    "done; exit 0"
)

_FABRIC_MANAGER = (
    "command -v systemctl >/dev/null 2>&1 || exit 127; "
    "systemctl is-active nvidia-fabricmanager 2>&1; "
    "systemctl show -p LoadState nvidia-fabricmanager 2>/dev/null; exit 0"
)

KERNEL_LOG = Probe("kernel_log", kernel_log_command(), slow=True)
RDMA_PORTS = Probe("rdma_ports", _RDMA_SYSFS)
FABRIC_MANAGER = Probe("fabric_manager", _FABRIC_MANAGER)
