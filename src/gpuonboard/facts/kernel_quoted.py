"""Whether a text read as a kernel log is another tool's report that quotes kernel lines: gpud's
scan (`[XID found] (54 minutes ago) "NVRM: Xid (PCI:0000:9b:00): 119, ..."`, leptonai/gpud#500),
a health tool's or a script's summary. Its quoted faults are the box's and count; its silence
proves nothing: it quotes the lines it looked for, not the whole log (an SXid, a host error it
did not look for is not in it)."""

from __future__ import annotations

import re

from gpuonboard.facts.kernel_nvrm import DRIVER_LOAD
from gpuonboard.facts.kernel_span import BOOT_LOAD_S, seconds_since_boot
from gpuonboard.facts.kernel_wrap import KERNEL_STAMP
from gpuonboard.once import lazy_re

__all__ = ["MODULE_LOAD", "bus_excerpt", "gpu_driver_only", "nvidia_only", "nvswitch_only", "quoting_report"]

# a driver's kernel line quoted inside another program's line: a quote mark (or `MESSAGE=`) right
# before the driver's tag, after text that is no kernel stamp (`[XID found] (54 minutes ago) "`)
_QUOTED = lazy_re(r"""^(?!\s*\[\s*[\d.]+\])\s*\S[^"'`]*["'`]\s*(?:NVRM|nvidia-nvswitch\d*|kernel)\b:?""")
_DRIVER_TAG = re.compile(r"\bNVRM\b|\bnvidia-nvswitch\d*:")


def quoting_report(lines: list[str]) -> str | None:
    """The first line of `lines` that quotes a driver's kernel line, where every line holding a
    driver's tag quotes one (a tool's report, not the kernel log); None where any driver line is
    the kernel's own or none is quoted."""
    tagged = [line for line in lines if _DRIVER_TAG.search(line)]
    if not tagged or not all(_QUOTED.match(line) for line in tagged):
        return None
    return tagged[0].strip()


# the NVSwitch driver's kernel line (`nvidia-nvswitch1: SXid (PCI:0000:84:00.0): 12028, ...`)
_NVSWITCH_LINE = lazy_re(r"\bnvidia-nvswitch\d*:")
# a mail's or a forum's quote marks before a line (`> `, `>> `)
_QUOTE_MARK = lazy_re(r"^\s*(?:>\s?)+")


# a monitor's CSV sample row (`nvidia-smi --query-gpu=... --format=csv,noheader`, a script's
# `14:23:05.954, 41, 44.35 W, 510 MHz, 81 MiB, 0 %, P0`): three fields at least, each a number
# with its unit, a time, a P-state or N/A: no line the kernel prints, so no sign of a whole log
_CSV_FIELD = r"\s*(?:[+-]?\d[\d:./]*\s*(?:%|[KMGT]i?B|[KMG]?Hz|W|C)?|P\d{1,2}|\[?N/A\]?)\s*"
_CSV_ROW = lazy_re(rf"{_CSV_FIELD}(?:,{_CSV_FIELD}){{2,}}")


def _said(lines: list[str]) -> list[str]:
    """A saved log's lines without quote marks or blanks, or a monitor's CSV rows pasted beside
    them (no kernel line, _CSV_ROW); of a log of stamped lines, those with a stamp (the lines
    without one are pieces of the one above, a page's wrap); of a log without stamps, those not
    indented under a line (the kernel's continuation lines are indented: `NVRM: Xid (...): 79,
    pid=811977, name=nvidia-smi,` / `      GPU has fallen off the bus.`), or each line its own."""
    said = [
        text for line in lines if (text := _QUOTE_MARK.sub("", line).strip()) and not _CSV_ROW.fullmatch(text)
    ]
    stamped = [line for line in said if KERNEL_STAMP.match(line)]
    if said and stamped and said[0] == stamped[0]:
        return stamped
    # (a set of the stripped texts: one lookup a line, a long log read in linear time; review revN)
    indented = {
        text.strip()
        for line in lines[1:]
        if (text := _QUOTE_MARK.sub("", line)).strip() and text[:1].isspace()
    }
    return [line for i, line in enumerate(said) if i == 0 or line not in indented]


# the narrowest width a page or a terminal wraps a pasted line at
_WRAP_WIDTH = 72
# a journal's or syslog's kernel line head (`kernel: `, `host kernel: `)
_KERNEL_HEAD = lazy_re(r"(?:^|\s)kernel:\s")


def _kernel_said(lines: list[str]) -> list[str]:
    """_said's lines, where any is a stamped or a journal's kernel line, without the lines that
    are neither nor hold a driver's tag: a page's wrap pieces, a CI log's own lines (`[Pipeline]
    sh`, `+ journalctl -k`) left above a journal whose heads kept its stamps; a log without any
    (`dmesg -t`) keeps each line its own."""
    said = _said(lines)

    def headed(line: str) -> bool:
        return bool(KERNEL_STAMP.match(line) or _KERNEL_HEAD.search(line) or _DRIVER_TAG.search(line))

    if any(KERNEL_STAMP.match(line) or _KERNEL_HEAD.search(line) for line in said):
        return [line for line in said if headed(line)]
    # (a log without either: a line after one as long as a page's wrap width is its wrap piece)
    return [line for i, line in enumerate(said) if i == 0 or headed(line) or len(said[i - 1]) < _WRAP_WIDTH]


# a syslog's or journal's line head up to its program: its time (`Aug 30 11:11:00`, an ISO time)
# and the host's name (`nvidia-node01`), which says nothing of what a grep kept. Only before a
# program's tag (`kernel: `, `nvidia-persistenced[812]: `), never a device's name before its
# address (`nvidia 0000:01:00.0: ...`), and never after `dmesg --time-format iso`'s stamp (its
# `,` microseconds: dmesg prints no host, `NVRM cpuidInfoAMD: ...` is the driver's own text)
_HOST_HEAD = lazy_re(
    r"^\s*(?:>\s*)*(?:[A-Z][a-z]{2}\s+\d{1,2}\s+\d\d:\d\d:\d\d(?:\.\d+)?|\d{4}-\d\d-\d\d[T ][^\s,]+)"
    r"\s+\S+\s+(?=[^\s:\[]+(?:\[\d+\])?:(?:\s|$))"
)


def _text(line: str) -> str:
    """A log line's text after a syslog's or journal's time and host (its program kept: a grep
    matches `nvidia-persistenced[812]: ...`), lowered."""
    return _HOST_HEAD.sub("", line, count=1).lower()


def nvswitch_only(lines: list[str]) -> str | None:
    """The first line of a saved log (no live probe's header) whose every line is the NVSwitch
    driver's (gpud#338's one `dmesg --decode --time-format iso` SXid line, a `| grep SXid`):
    lines picked from the log by a grep or by hand that keeps none of the GPU driver's (no
    `NVRM: Xid` line could be among them, and no kernel log has only such lines), its lines
    without a stamp read as pieces of a stamped one (a page's wrap); None where any line is
    another's."""
    said = _said(lines)
    if not said or not all(_NVSWITCH_LINE.search(line) and "NVRM" not in line for line in said):
        return None
    return said[0]


def gpu_driver_only(lines: list[str]) -> str | None:
    """The first line of a saved log (no live probe's header) whose every line holds `NVRM` (a
    `dmesg | grep NVRM`, `grep -i nvrm` saved without its command): lines picked from the log
    that could keep none of the NVSwitch driver's (`nvidia-nvswitch0: SXid ...` holds no NVRM),
    as no kernel log has only such lines; None where any line is another's. (A syslog's or
    journal's host name is no line's text: `nvrm-lab kernel: ...`.)"""
    said = _kernel_said(lines)
    if not said or not all("nvrm" in _text(line) and not _NVSWITCH_LINE.search(line) for line in said):
        return None
    return None if _other_program_without(lines, "nvrm") else said[0]


def said_count(lines: list[str]) -> int:
    """How many lines of a saved log say something of the kernel's (_kernel_said): a page's bare
    `> ` quote mark above them is none (measure35d 19: "only lines with NVRM (5 lines" of 4)."""
    return len(_kernel_said(lines))


def nvidia_only(lines: list[str]) -> str | None:
    """The first line of a saved log (no live probe's header) whose every line holds `nvidia`
    in any case (a `dmesg | grep -i nvidia` saved without its command): an Xid line, `NVRM: Xid
    (PCI:...): 43, pid=..., name=pt_main_thread, ...`, holds no such word, so the grep may have
    dropped every one, and no kernel log has only such lines; None where any line is another's
    (a syslog's or journal's host name is no line's text: a whole journal of `nvidia-node01`)."""
    said = _kernel_said(lines)
    if not said or not all("nvidia" in _text(line) for line in said):
        return None
    return None if _other_program_without(lines, "nvidia") else said[0]


# a syslog's or journal's line of a program other than the kernel: its time, the host's name and
# the program's tag (`May 15 08:57:36 red llama-swap[80783]: ...`)
_OTHER_PROGRAM = lazy_re(
    r"^\s*(?:[A-Z][a-z]{2}\s+\d{1,2}\s+\d\d:\d\d:\d\d(?:\.\d+)?|\d{4}-\d\d-\d\dT\S+)\s+\S+\s+"
    r"(?!kernel:)[\w.@/-]+(?:\[\d+\])?:\s"
)


def _other_program_without(lines: list[str], word: str) -> bool:
    """A line of another program than the kernel without `word` (any case) is among the lines: a
    plain journal or syslog window (`journalctl --since ...`), which a grep for the word would
    not have kept (ikawrakow/ik_llama.cpp#425's journal, its one NVRM line among llama-swap's)."""
    return any(_OTHER_PROGRAM.match(line) and word not in line.lower() for line in lines)


def driver_excerpt(lines: list[str]) -> str | None:
    """The first line of a saved log (no live probe's header) whose every line is the NVIDIA GPU
    driver's (holds `NVRM` or `nvidia`: `nvidia 0000:01:00.0: irq 47 for MSI/MSI-X`, `[drm:nv_drm_load
    [nvidia_drm]] *ERROR* ...`, `caller ... [nvidia] mapping multiple BARs`), none the NVSwitch
    driver's, and none its load at boot (`NVRM: loading NVIDIA UNIX ...`, _holds_boot_load): an
    author's excerpt around a fault, picked from the log (no kernel log has only such lines, and a
    grep of a whole boot's for the driver's words keeps its banner); what it left out, an SXid line
    among it, is not known (measure35d 07, measure35e 22, 24: "no SXid in the kernel log" passed,
    while an excerpt of NVRM lines alone was unverified). A banner stamped hours into boot is a
    load after it (`rmmod` / `modprobe`, a GPU that fell off the bus probed again), whose excerpt
    holds it and none of the boot's own load (measure38c 16: `[14387.274366] NVRM: loading ...`
    below the fallen GPU's lines, and nvswitch_sxid passed). None where any line is another's."""
    said = _kernel_said(lines)
    if not said or any(_NVSWITCH_LINE.search(line) for line in said) or _holds_boot_load(said):
        return None
    if not all("nvrm" in (text := _text(line)) or "nvidia" in text for line in said):
        return None
    return (
        None if _other_program_without(lines, "nvidia") and _other_program_without(lines, "nvrm") else said[0]
    )


# a line the NVIDIA driver's modules print as they load, before the GPU driver's banner (the kernel's
# taint notes for the module, printed once a boot: a grep from them on starts at the boot's load;
# NVLink core's): a grep of the driver's lines that starts with one starts where the driver loaded
MODULE_LOAD = lazy_re(
    r"NVRM: loading NVIDIA|\bnvidia\w*: (?:loading out-of-tree module|module license"
    r"|module verification failed)|nvidia-nvlink: Nvlink Core is being initialized"
    r"|nvidia-modeset: Loading NVIDIA",
    re.I,
)
# the taint notes the kernel prints at a boot's first load of the module only
_TAINT = lazy_re(
    r"\bnvidia\w*: (?:loading out-of-tree module|module license|module verification failed)", re.I
)


def _holds_boot_load(lines: list[str]) -> bool:
    """Whether the driver's lines start where it loaded in a boot, whatever the lines' stamps
    (dmesg's seconds, `-T`'s, a journal's wall clock, none): a boot's driver lines that start with
    the modules' load lines (MODULE_LOAD, the taint notes the kernel prints at a boot's first load
    of the module wherever they stand: a GPU Operator's driver container or a manual `modprobe`
    loading at 312 s, its banner after its probe's lines: the grep starts at the load, as
    kernel_log._boot_first reads it, revK F4), or with the banner itself stamped under BOOT_LOAD_S
    seconds or with no such stamp. A banner after other driver lines of its boot (`NVRM: ... fallen
    off the bus`, the probe's failure: measure38c 16, in any stamp form, revK F1), or first but
    stamped hours into boot (the taint notes of the boot's first load are not before it), is a
    reload's. A boot starts where the seconds since boot go back."""
    fresh, last = True, None  # (fresh: no driver line yet in this boot)
    last_banner = max((at for at, line in enumerate(lines) if DRIVER_LOAD.search(line)), default=-1)
    for at, line in enumerate(lines):
        seconds = seconds_since_boot(line)
        if seconds is not None and last is not None and seconds < last:
            fresh = True  # (a new boot: its stamps start again)
        last = seconds if seconds is not None else last
        # (the modules' load lines start the driver's lines only where its banner follows them: a
        # grep from the load keeps it, `NVRM: loading NVIDIA UNIX ...`; a README's five lines of
        # the taint note, NVLink core's and the probe's, no banner, are lines picked from the log)
        banner_after = at <= last_banner
        if _TAINT.search(line) and banner_after:
            return True
        if fresh and DRIVER_LOAD.search(line):
            if seconds is None or seconds < BOOT_LOAD_S:
                return True
        elif fresh and MODULE_LOAD.search(line) and banner_after:
            return True
        fresh = False
    return False


# a PCI device's address in a kernel line (`0000:17:00.0`, `PCI:0000:19:00`)
_PCI_ADDRESS = lazy_re(r"\b[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\b", re.I)


def bus_excerpt(lines: list[str]) -> str | None:
    """The first line of a saved log (no live probe's header) printed without stamps whose every
    line holds a PCI address or `nvidia` (any case), some without `nvidia` or `NVRM`: a grep by
    the GPUs' bus addresses (`dmesg -t | grep -E '0000:17:00|0000:65:00'`: `pci 0000:17:00.0:
    ...`, `nvidia 0000:17:00.0: enabling device`, `[drm] Initialized nvidia-drm ... for
    0000:17:00.0`) or by those and the driver's word, saved without its command: no kernel log
    has only such lines (its banner, its command line, its memory map hold none), so the lines it
    left out, an SXid's or another GPU's Xid among them, are not known (revR F1: such an excerpt
    passed gpu_xid and nvswitch_sxid). None where any line is another's, or every line is the
    driver's (holds `nvidia` or `NVRM`: nvidia_only, driver_excerpt)."""
    said = _kernel_said(lines)
    if not said or all("nvidia" in (text := _text(line)) or "nvrm" in text for line in said):
        return None  # (the driver's lines: nvidia_only, driver_excerpt)
    if any(KERNEL_STAMP.match(line.strip()) or _HOST_HEAD.match(line) for line in said):
        return None  # (a stamped log: its stamps show where it starts and what it spans)
    if not all("nvidia" in (text := _text(line)) or _PCI_ADDRESS.search(text) for line in said):
        return None
    return None if _other_program_without(lines, "nvidia") else said[0]
