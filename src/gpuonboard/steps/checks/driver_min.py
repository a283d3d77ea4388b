"""min_driver: the driver is at least the ordered minimum version. nvidia-smi's driver version
first; where no nvidia-smi output names one, the kernel log's driver load line (the driver's
banner `NVRM: loading NVIDIA UNIX x86_64 Kernel Module  325.15 ...`, `... Open Kernel Module for
x86_64  530.41.03 ...`): the log's LAST such line is the driver loaded now (a reload or a new
boot prints it again). Older than the minimum fails, except in the log of a boot the box has
left (`journalctl -k -b -1`, a pstore crash record: unverified, the driver may have been upgraded
at the reboot since); at or above passes only where the log is
whole after that line (not cut short, no lines left out, no later boot), else unverified: a
driver loaded after the part given is not known. Where both name a driver and they disagree,
nvidia-smi's is judged and the log's is said."""

from __future__ import annotations

import re
from typing import NamedTuple

from gpuonboard.connection.gather import Facts
from gpuonboard.facts.driver_module import MODULE_PROBE, ModuleVersion, mismatch_versions, module_file_version
from gpuonboard.facts.kernel_log import parse_kernel_log
from gpuonboard.facts.kernel_text import log_text
from gpuonboard.facts.kernel_wrap import BOOT_SEPARATOR
from gpuonboard.facts.nvidia_smi.sniff import VERSION_ONLY
from gpuonboard.facts.nvidia_smi_failure import mismatch_library_version
from gpuonboard.inventory import OrderSpec
from gpuonboard.steps.base import Check
from gpuonboard.steps.checks import ngc
from gpuonboard.steps.checks.gpu_rules import DISAGREE_ADVICE
from gpuonboard.steps.checks.missing_facts import (
    disputed_said,
    driver_above_cut,
    no_gpu_actual,
    no_gpu_detail,
    no_version_said,
)

__all__ = ["log_driver", "rule_min_driver"]

# the driver's load banner and its version (kernel_nvrm.DRIVER_LOAD), any platform's words
_LOAD = re.compile(r"NVRM: loading NVIDIA UNIX\b[^\n]*?\bKernel Module(?: for \S+)?\s+(\d+\.\d+(?:\.\d+)?)\b")
_NEW_BOOT = re.compile(r"\bLinux version \d")


class LogDriver(NamedTuple):
    """The kernel log's last driver load line: its version, the line, whether the log is whole
    after it ("" where it is; else why not)."""

    version: str
    line: str
    not_whole: str
    # which line: the load banner, or the driver's API mismatch sentence naming the module's version
    what: str = "driver load line"
    # the log is all of a boot the box has left (`journalctl -k -b -1`, a pstore crash record):
    # its driver is no evidence of the one loaded now (an upgrade takes effect at a reboot)
    earlier_boot: bool = False


def log_driver(facts: Facts) -> LogDriver | None:
    """The driver the kernel log given shows loaded (its last load line); None where it has none."""
    out = facts.raw.get("kernel_log")
    if out is None or not out.stdout.strip():
        return None
    lines = list(log_text(out.stdout).lines)
    at = next((i for i in range(len(lines) - 1, -1, -1) if _LOAD.search(lines[i])), None)
    what = "driver load line"
    if at is None:
        # (no load line: the driver's API mismatch sentence names the module loaded, nv.c's
        # "... but this kernel module has the version %s", facts/driver_module.py)
        at = next((i for i in range(len(lines) - 1, -1, -1) if "API mismatch" in lines[i]), None)
        mismatch = mismatch_versions("\n".join(lines[at:])) if at is not None else None
        if at is None or mismatch is None:
            return None
        line, version, what = mismatch.said.split("`")[1], mismatch.version, "API mismatch line"
    else:
        m = _LOAD.search(lines[at])
        assert m is not None
        # (from `NVRM:`, its head left out; its blanks as one: a paste's tabs say the same line)
        line, version = " ".join(lines[at][m.start() :].split()), m.group(1)
    log = parse_kernel_log(out.stdout)
    after = lines[at + 1 :]
    not_whole = (
        out.partial
        or log.left_out
        or (
            "a later boot follows it"
            if any(BOOT_SEPARATOR.fullmatch(x.strip()) or _NEW_BOOT.search(x) for x in after)
            else ""
        )
        or (
            "the log is cut short after it"
            if any(e.cut for e in log.events) or log_text(out.stdout).open_end
            else ""
        )
    )
    return LogDriver(version, line, not_whole, what, out.earlier_boot)


# why the NVML library version a version mismatch names is no driver version to judge
MISMATCH_LIBRARY = (
    "the version it shows, NVML library %s, is the driver's user-space library, which does not match"
    " the loaded kernel module (the driver that runs), whose version is not read here"
)


def rule_min_driver(order: OrderSpec, facts: Facts) -> Check:
    """The driver is at least the ordered minimum version (nvidia-smi's; else the kernel log's)."""
    assert order.min_driver is not None
    expected = f">= {order.min_driver}"
    problem = no_gpu_actual(facts, "min_driver")
    version_only = facts.gpu is not None and VERSION_ONLY in facts.gpu.warnings
    if problem and (driver_above_cut(facts) or version_only):  # (its driver line whole: judged)
        problem = None
    if problem or facts.gpu is None or not facts.gpu.driver_version:
        library = mismatch_library_version(facts.gpu_raw.stdout, facts.gpu_raw.stderr) if problem else None
        if (module := file_module(facts)) is not None:
            return _from_module_file(order.min_driver, expected, module, library)
        if (loaded := log_driver(facts)) is not None:
            failed = "nvidia-smi failed" in (problem or "")
            return _from_log(order.min_driver, expected, loaded, failed)
        if problem and library:
            problem += f"; {MISMATCH_LIBRARY % library}"
        return Check(
            "min_driver",
            expected,
            problem or "unknown: the driver version was not reported",
            "unverified",
            no_gpu_detail(facts) if problem else no_version_said(facts),
        )
    if disputed := disputed_said(facts, "driver_version"):  # (two drivers named: neither judged)
        return Check("min_driver", expected, disputed, "unverified", DISAGREE_ADVICE)
    driver = facts.gpu.driver_version
    try:
        ok = ngc.version_key(driver) >= ngc.version_key(order.min_driver)
    except ValueError:  # a garbled or cut-off version: no evidence that the driver is older
        return Check(
            "min_driver",
            expected,
            f"driver version {driver!r} unreadable",
            "unverified",
            "nvidia-smi did not report a numeric driver version; run nvidia-smi on the host to read it",
        )
    loaded = log_driver(facts)
    actual = f"{driver} (`nvidia-smi --version`'s DRIVER version)" if version_only else driver
    if loaded is not None and loaded.version != driver:  # (nvidia-smi's is judged; the log's said)
        actual = f"{driver} (nvidia-smi; the kernel log's last driver load line says {loaded.version})"
    if ok:
        return Check("min_driver", expected, actual, "pass")
    return Check("min_driver", expected, actual, "fail", _older(order.min_driver))


def file_module(facts: Facts) -> ModuleVersion | None:
    """The loaded kernel module's version a saved /proc/driver/nvidia/version names, or None."""
    out = facts.raw.get(MODULE_PROBE)
    return module_file_version(out.stdout) if out is not None and out.exit_code == 0 else None


def _from_module_file(need: str, expected: str, module: ModuleVersion, library: str | None) -> Check:
    """min_driver judged by the driver's own version file (the kernel module loaded now), no
    nvidia-smi driver version given; where nvidia-smi failed on a driver/library version
    mismatch, the library's version is said beside it."""
    said = f"{module.version} (the loaded kernel module, {module.said[:160]})"
    if library:
        said += f"; nvidia-smi failed on a version mismatch: its NVML library is {library}, not the module's"
    if not module.release:
        return Check(
            "min_driver",
            expected,
            f"{said}; {module.version} is no driver release number (a Jetson's module names its L4T release)",
            "unverified",
            "save `nvidia-smi` (its table's header) or `nvidia-smi -q` of the box, which names the"
            " driver release",
        )
    ok = ngc.version_key(module.version) >= ngc.version_key(need)
    return Check("min_driver", expected, said, "pass" if ok else "fail", "" if ok else _older(need))


def _older(need: str) -> str:
    return (
        f"the NVIDIA driver is older than the ordered {need}: ask the vendor to install a"
        f" {need} or newer driver (a driver upgrade needs root and, usually, a reboot)"
    )


def _from_log(need: str, expected: str, loaded: LogDriver, smi_failed: bool = False) -> Check:
    """min_driver judged by the kernel log's last driver load line (no nvidia-smi driver given:
    none saved, or nvidia-smi failed, `smi_failed`)."""
    none = "nvidia-smi failed before naming it" if smi_failed else "no nvidia-smi output was given"
    said = f"{loaded.version} (the kernel log's {loaded.what} `{loaded.line[:120]}`; {none})"
    try:
        ok = ngc.version_key(loaded.version) >= ngc.version_key(need)
    except ValueError:
        ok = None
    if ok is False and not loaded.earlier_boot:
        return Check("min_driver", expected, said, "fail", _older(need))
    if ok and not loaded.not_whole:
        return Check("min_driver", expected, said, "pass")
    return Check(
        "min_driver",
        expected,
        f"{said}; {loaded.not_whole or 'its version could not be read'}",
        "unverified",
        "a driver loaded after the part of the kernel log given is not known: save `nvidia-smi` (its"
        " table's header) or `nvidia-smi -q` of the box, or its whole kernel log of this boot",
    )
