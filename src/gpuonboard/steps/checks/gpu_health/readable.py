"""What gpu_health could not read: no GPU checked at all (the driver missing, nvidia-smi failing,
hung or listing none), GPUs nvidia-smi lists but cannot read, and single sensors that read
`ERR!`."""

from __future__ import annotations

from collections.abc import Sequence

from gpuonboard.connection.gather import Facts
from gpuonboard.connection.probe_commands import TIMED_OUT
from gpuonboard.facts.nvidia_smi import GpuInfo
from gpuonboard.facts.nvidia_smi.faults import (
    INFOROM_FAULT,
    SANDBOX_REFUSED_FIELDS,
    blocked_faults,
    fault_field,
    judged_field,
)
from gpuonboard.facts.nvidia_smi.version_skew import SKEW_SAID
from gpuonboard.facts.nvidia_smi_failure import (
    HUNG_ADVICE,
    NOT_FOUND_ADVICE,
    UNKNOWN_CAUSE_ADVICE,
    nvidia_smi_failure,
    stopped_said,
)
from gpuonboard.steps.base import Check
from gpuonboard.steps.checks.acceptance import fault_advice
from gpuonboard.steps.checks.gpu_health.common import BLOCKED_ADVICE, gpu_label, sandboxed_advice
from gpuonboard.steps.checks.gpu_health.readings import UNREAL_ADVICE, impossible_readings
from gpuonboard.steps.checks.missing_facts import not_found_said


def _unreal_check(unreal: list[str], faults: list[str]) -> Check:
    """sensor_faults where a cell holds a figure no GPU can give (readings.impossible_readings):
    a warn naming it, beside any cell that reads a fault marker."""
    return Check(
        "sensor_faults",
        "every sensor readable",
        "; ".join(unreal + faults),
        "warn",
        UNREAL_ADVICE
        + ("; and a reading the driver cannot make (named) often means a failing sensor" if faults else ""),
    )


def _sensor_read(g: GpuInfo) -> bool:
    """Whether any of `g`'s sensors was read (a temperature, a power draw, a clock, a utilisation,
    the memory in use, an ECC count)."""
    readings = (
        g.temperature_c,
        g.power_draw_w,
        g.clocks_sm_mhz,
        g.utilization_gpu_pct,
        g.memory_used_mib,
        g.ecc_volatile_uncorrectable,
        g.ecc_aggregate_uncorrectable,
    )
    return g.power_read or any(value is not None for value in readings)


def rule_sensor_faults(
    gpus: list[GpuInfo], unplaced: Sequence[str] = (), sandbox: str | None = None
) -> Check | None:
    """A sensor nvidia-smi cannot read on a GPU that otherwise answers (`cell_faults`, e.g. the
    fan column reading `ERR!`, or its warning that a GPU's infoROM is corrupted; `unplaced`: such
    a fault of a GPU known by PCI address only): WARN, naming it; the GPU is not failed for it (a
    whole GPU that cannot be read is the `gpu_health` row's). Unverified where the operating
    system refused the readings (faults.blocked_faults), or where the login sees the GPUs from
    inside a sandbox or guest (`sandbox`: its kernel log's first line), whose nvidia-smi reads
    `ERR!` for what the sandbox does not pass on (gVisor's Perf and ECC cells, google/gvisor PR
    10675 and 10676). A cell whose figure no GPU can give (a draw many times its power limit:
    readings.impossible_readings) warns too, naming it. A field that is no sensor and that
    no rule reads ("Addressing Mode : Unknown Error") is named in a passing row, never warned as
    a failing sensor. None when no such fault (the row appears only then)."""
    found = [f"{gpu_label(g)}: {fault}" for g in gpus for fault in g.cell_faults if judged_field(fault)]
    found += unplaced
    other = [f"{gpu_label(g)}: {fault}" for g in gpus for fault in g.cell_faults if not judged_field(fault)]
    # (a figure no GPU can give, `588W /   35W`: no reading, named as a fault of its cell)
    unreal = [f"{gpu_label(g)}: {said}" for g in gpus for said in impossible_readings(g)]
    if unreal:
        return _unreal_check(unreal, found + other)
    if not found and not other:
        return None
    if not found and not any(map(_sensor_read, gpus)):
        # (a record cut before its first sensor, `-q` cut after Product Architecture: no sensor
        # was read, none said readable; measure40b 20)
        return Check(
            "sensor_faults",
            "every sensor readable",
            f"no sensor read; not read (no sensor, no check uses it): {'; '.join(other)}",
            "unverified",
            "no GPU's sensor (temperature, power draw, clocks, utilisation, memory in use, ECC"
            " counts) is in the output given: save the whole `nvidia-smi -q` of the box",
        )
    if not found:
        return Check(
            "sensor_faults",
            "every sensor readable",
            f"every sensor read; not read (no sensor, no check uses it): {'; '.join(other)}",
            "pass",
        )
    refused = {f"{gpu_label(g)}: {fault}" for g in gpus for fault in blocked_faults(g.cell_faults)}
    if all(f in refused for f in found):
        # (the operating system refused the calls: a sandbox's or a guest's view, no sensor's fault)
        return Check(
            "sensor_faults", "every sensor readable", "; ".join(found + other), "unverified", BLOCKED_ADVICE
        )
    sandboxed = _sandbox_refused(gpus) if sandbox else frozenset()
    if sandbox and all(f in sandboxed for f in found):
        return Check(
            "sensor_faults",
            "every sensor readable",
            "; ".join(found + other),
            "unverified",
            sandboxed_advice(sandbox),
        )
    if all(SKEW_SAID in f for f in found):
        # (an nvidia-smi newer than its driver: the fields the driver lacks read ERR!, no sensor's fault)
        return Check(
            "sensor_faults",
            "every sensor readable",
            "; ".join(found + other),
            "unverified",
            VERSION_SKEW_ADVICE,
        )
    return Check(
        "sensor_faults",
        "every sensor readable",
        "; ".join(found + other),
        "warn",
        (INFOROM_ADVICE if any(INFOROM_FAULT in f for f in found) else "")
        + "a reading the driver cannot make often means a failing fan or sensor (a fan that has"
        " stopped lets the GPU overheat under load) or a GPU in a bad state (look for Xid errors in"
        " `dmesg`); ask the vendor to check it"
        + (_sandbox_note(sandbox, found, sandboxed) if sandbox else ""),
    )


def _sandbox_refused(gpus: list[GpuInfo]) -> frozenset[str]:
    """The cell faults ('GPU 0: performance state reads ERR!') a sandbox's refusal explains: of a
    field a sandbox is known to refuse (SANDBOX_REFUSED_FIELDS) that no GPU of the output read (a
    refusal hits every GPU alike; a field another GPU read is that GPU's own fault)."""
    faulted = [{fault_field(f) for f in g.cell_faults} for g in gpus]
    fields = {f for f in SANDBOX_REFUSED_FIELDS if all(f in each for each in faulted)}
    return frozenset(
        f"{gpu_label(g)}: {fault}" for g in gpus for fault in g.cell_faults if fault_field(fault) in fields
    )


def _sandbox_note(sandbox: str, found: list[str], sandboxed: frozenset[str]) -> str:
    """The warn's note that the login is inside a sandbox or guest (`sandbox`: its kernel log's
    first line), which explains only the fields it is known to refuse."""
    refused = [f for f in found if f in sandboxed]
    which = f" ({'; '.join(refused)} may be the sandbox's)" if refused else ""
    return (
        f"; this login is inside a sandbox or guest (its kernel log's first line {sandbox!r}),"
        f" which refuses nvidia-smi the performance state and ECC only{which}: the other"
        " readings are the GPU's own"
    )


VERSION_SKEW_ADVICE = (
    "this nvidia-smi is of a newer branch than the driver it talks to (a container's or a newer"
    " user-space nvidia-smi over an older kernel driver): it asks for fields the driver does not"
    " have and prints them as ERR!, which says nothing of the GPU; read them with the nvidia-smi"
    " that came with the driver (on the host, outside the container), or ask the vendor for a"
    " driver of the tool's branch"
)
INFOROM_ADVICE = (
    "a corrupted infoROM (the board's store of its ECC, page-retirement and configuration"
    " records) cannot be trusted to keep them: ask the vendor to reflash it or replace the"
    " board (DCGM's health watch warns of it too); "
)


def rule_nothing_checked(facts: Facts) -> Check:
    """The host has no GPU nvidia-smi could report: not a healthy box, an unchecked one.

    FAIL, like acceptance's `nvidia_driver` rule for the same facts (missing driver, nvidia-smi
    failing, hung or listing no GPU); a failing nvidia-smi is quoted (its own line, as
    `nvidia_driver` quotes it) and the advice follows its cause."""
    raw = facts.gpu_raw if "nvidia_smi" in facts.raw else None
    line, advice = ("", "") if raw is None else nvidia_smi_failure(raw.stdout, raw.stderr)
    quoted = f": {line[:160]}" if line else ""
    if not facts.nvidia_smi_present:
        said, advice = not_found_said(facts)
        actual = f"nothing checked: {said}" + (" (no NVIDIA driver)" if advice == NOT_FOUND_ADVICE else "")
    elif raw is not None and raw.exit_code == TIMED_OUT:
        actual = "nothing checked: nvidia-smi did not answer (stopped)"
        advice = HUNG_ADVICE
    elif raw is not None and (stopped := stopped_said(raw.exit_code)) and facts.gpu is None:
        actual = f"nothing checked: nvidia-smi {stopped} before it answered"  # (no hang)
        advice = advice or UNKNOWN_CAUSE_ADVICE
    elif facts.gpu is None:
        code = "" if raw is None else f" (exit code {raw.exit_code})"
        actual = f"nothing checked: nvidia-smi failed{code}{quoted}"
        advice = advice or UNKNOWN_CAUSE_ADVICE
    else:
        # it answered (exit 0); "No devices were found" is such an answer
        actual = "nothing checked: nvidia-smi listed no GPU" + (quoted if advice else "")
        advice = advice or "run `nvidia-smi -L` on the host to see which GPUs the driver finds"
    unread = facts.unread_not_a_fault()
    if unread:
        # a provider's policy, an output cut short, text that is no listing: the GPUs could not
        # be read, which says nothing about them
        return Check(
            "gpu_health",
            "health of every GPU checked",
            f"nothing checked: {unread}",
            "unverified",
            "the GPUs could not be read (not a broken driver): rerun `invoke check`; where the"
            " provider blocks nvidia-smi's formats, ask which format they allow",
        )
    return Check(
        "gpu_health",
        "health of every GPU checked",
        actual,
        "fail",
        f"no ECC, memory-repair, PCIe, power, throttling or MIG check could run; {advice}",
    )


def rule_unreadable(gpus: list[GpuInfo]) -> Check | None:
    """GPUs nvidia-smi lists but cannot read (`ERR!`, `[GPU requires reset]`, `[GPU is lost]`):
    every other rule sees only "not reported" for them, so this one fails. None when every GPU
    answered (the `gpu_health` row appears only when some GPU could not be checked)."""
    bad = [g for g in gpus if g.faults]
    if not bad:
        return None

    def where(g: GpuInfo) -> str:
        bus = f" ({g.pci_bus_id})" if g.pci_bus_id else ""
        return f"{gpu_label(g)}{bus}: nvidia-smi reads {' / '.join(g.faults)}"

    return Check(
        "gpu_health",
        "health of every GPU checked",
        "; ".join(where(g) for g in bad),
        "fail",
        fault_advice(g.index for g in bad),
    )
