"""host_hw_errors: the host's own hardware errors in the kernel log (facts/host_errors.py): an
uncorrectable memory error, a machine check, a firmware (APEI) error record, a fatal PCIe error
of a device that is no GPU. The row appears only where the log shows such an error: a log
without one says nothing of it (a `dmesg | grep NVRM` keeps no EDAC line), so healthy boxes'
reports are unchanged."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from gpuonboard.facts.host_errors import HostError
from gpuonboard.steps.base import Check

__all__ = ["CE_WARN_AT", "rule_host_hw_errors"]

# corrected memory errors on one DIMM (or CPU bank) at which it warns: a few in a long uptime
# are normal (a cosmic ray, a weak cell the ECC covers); many on one DIMM say it is failing
# (mcelog's own trigger: 10 corrected errors in 24 h)
CE_WARN_AT = 10
_EXPECTED = "no host hardware error (memory, CPU, PCIe) in the kernel log"
_EARLIER = " (logged before the log's last reboot)"


def _said(events: Sequence[HostError]) -> list[str]:
    """Each (part, error) once, in the log's order, with its count."""
    counts: Counter[tuple[str, str, bool]] = Counter()
    for e in events:
        counts[(e.where, e.what, e.earlier_boot)] += e.count
    return [
        f"{where}: {what}{' x' + str(n) if n > 1 else ''}{_EARLIER if earlier else ''}"
        for (where, what, earlier), n in counts.items()
    ]


def rule_host_hw_errors(events: Sequence[HostError], narrowed: str = "") -> Check | None:
    """fail: an uncorrectable memory error (EDAC UE, naming its DIMM), an uncorrected machine
    check, an APEI record of severity fatal or recoverable, a fatal PCIe error of a device that is
    no GPU; warn: a corrected machine check or APEI record (not memory's), a non-fatal PCIe error,
    CE_WARN_AT or more corrected memory errors on one DIMM; unverified: machine checks logged
    without a record beside the notice (which says only that records went to mcelog); pass: a few
    corrected memory errors (EDAC's, a memory controller's machine check, a firmware's APEI
    record), each DIMM named. None where the log shows no such error (no
    claim either way). `narrowed`: why the log is only part of it: a pass is then unverified (what
    it leaves out may hold more)."""
    # the kernel's notice that machine checks were logged says only that records went to mcelog /
    # rasdaemon (corrected errors mostly, found by polling or CMCI): where the log holds a record
    # of them (a bank's status, EDAC's decode, a firmware record) those are judged; where it holds
    # none, what they were is not known (unverified, never a warning of an error not seen); a
    # bank whose status holds no valid error (VAL clear, `Bank 9: 0000000000000000`) is no error
    unexplained = [e for e in events if e.severity == "notice"][:1]
    # (a last line that says nothing yet, a bare stamp, narrows the errors the log shows; alone
    # it is no host error's: no row, gpu_xid says the log is cut)
    stamp = [e for e in events if e.source == "stamp"]
    events = [e for e in events if e.severity not in ("notice", "logged", "record") and e.source != "stamp"]
    if not events and not unexplained:
        return None
    events += stamp
    fails = [e for e in events if e.severity == "fail"]
    warns = [e for e in events if e.severity == "warn"]
    corrected = [e for e in events if e.severity == "corrected"]
    per_part: Counter[str] = Counter()
    for e in corrected:
        per_part[e.where] += e.count
    many = [e for e in corrected if per_part[e.where] >= CE_WARN_AT]
    few = [e for e in corrected if per_part[e.where] < CE_WARN_AT]
    if faulty := _faulty(fails, warns, many, few):
        return faulty
    actual = "; ".join(_said(few)) + f" (fewer than {CE_WARN_AT} on each DIMM: a few are normal)"
    return _unsure(events, unexplained, few, actual, narrowed) or Check(
        "host_hw_errors", _EXPECTED, actual, "pass"
    )


def _faulty(
    fails: Sequence[HostError],
    warns: Sequence[HostError],
    many: Sequence[HostError],
    few: Sequence[HostError],
) -> Check | None:
    """fail where the log shows an error a job does not survive, warn where it shows corrected
    errors that say a part may be failing (`many`: CE_WARN_AT or more on one DIMM); else None."""
    if fails:
        return Check(
            "host_hw_errors",
            _EXPECTED,
            "; ".join(_said([*fails, *warns, *many])),
            "fail",
            "the kernel logged a hardware error of the host that a training job does not survive (a"
            " DIMM's uncorrectable error, a machine check, a fatal PCIe error): ask the vendor to"
            " replace the part named (the DIMM, the CPU, the device) or for another box.",
        )
    if warns or many:
        return Check(
            "host_hw_errors", _EXPECTED, "; ".join(_said([*warns, *many, *few])), "warn", _warn_advice(warns)
        )
    return None


def _warn_advice(warns: Sequence[HostError]) -> str:
    """A warning's advice: corrected errors say the box works; a PCIe error that was not
    corrected (uncorrectable non-fatal, or one the kernel could not recover a device from) does
    not, naming the devices (measure34d 14: "corrected ... the box works" of `AER: can't recover`)."""
    uncorrected = list(dict.fromkeys(e.where for e in warns if e.source == "aer"))
    if uncorrected:
        return (
            f"the kernel logged PCIe errors it did not correct on {', '.join(uncorrected)} (uncorrectable"
            " non-fatal errors, or devices it could not recover: they may not work until the box is"
            " rebooted): no GPU is named, but ask the vendor what these devices are and to check them"
            " (`lspci -s <address>`) before accepting the box."
        )
    return (
        "the kernel logged corrected hardware errors of the host: the box works, but the part"
        f" named may be failing ({CE_WARN_AT} or more corrected errors on one DIMM; a machine"
        " check's record is read by `sudo ras-mc-ctl --errors` or mcelog): ask the vendor."
    )


def _unsure(
    events: Sequence[HostError],
    unexplained: Sequence[HostError],
    few: Sequence[HostError],
    actual: str,
    narrowed: str,
) -> Check | None:
    """unverified where what the log shows of the host's errors is not all of them: machine check
    events with no record in the log, a line it ends inside, a log that is only part of the boot's
    (`narrowed`); else None (`actual`: the few corrected errors it shows)."""
    cut = [f"the log ends inside a line, cut short: '{e.what}'" for e in events if e.severity == "cut"]
    if unexplained:
        # (and the line the log ends inside, which may have been its record)
        notice = "; ".join([f"{unexplained[0].where}: {unexplained[0].what}", *cut[:1]])
        return Check(
            "host_hw_errors",
            _EXPECTED,
            f"{actual}; {notice}" if few else notice,
            "unverified",
            "the kernel logged machine check events whose records are not in its log, so whether"
            " they were a few corrected errors or worse is not known: read them with `sudo"
            " ras-mc-ctl --errors` (rasdaemon) or `sudo mcelog --client`.",
        )
    if cut:
        # (the log ends inside a host error's line: it may say UE, or a bank's uncorrected status)
        said = cut[0]
        return Check(
            "host_hw_errors",
            _EXPECTED,
            f"{actual}; {said}" if few else said,
            "unverified",
            "the kernel log ends inside a line of a host hardware error, so what that error was (an"
            " uncorrectable one?) is not known: save the whole log again (`sudo dmesg -T`).",
        )
    if narrowed:
        return Check(
            "host_hw_errors",
            _EXPECTED,
            f"{actual}; {narrowed}",
            "unverified",
            f"the kernel log given is not the whole log of the boot ({narrowed}), so the errors it"
            " leaves out are not known: give the whole log (`sudo dmesg -T`, or `journalctl -k -b`).",
        )
    return None
