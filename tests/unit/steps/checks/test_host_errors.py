"""host_hw_errors against real kernel logs of faulty hosts: an uncorrectable DIMM error, machine
checks, a firmware (APEI) record of a PCIe error, a fatal PCIe error of a root port. The kernel-log
rules read only the GPU drivers' lines, so such a box passed gpu_xid and no rule named its fault
(ovro-lwa/lwa-issues#117: a node that crashed, its dmesg an EDAC UE and an APEI PCIe error, passed
with exit 0). The row appears only where the log shows such an error."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts.host_errors import host_errors, log_lines
from gpuonboard.steps.checks.host_errors import rule_host_hw_errors

from ...offline_judge import verdicts

REAL = Path(__file__).parents[3] / "fixtures" / "real"
LWA = "dmesg__edac-ue-apei-pcie-recoverable__lwa-issues-117.txt"
ORDER = "gpu_model: RTX 2080\ngpu_count: 2\n"


def _judged(tmp_path: Path, name: str, text: str | None = None) -> tuple[str, str]:
    said = verdicts(tmp_path, name, (REAL / name).read_text() if text is None else text, ORDER)
    assert "host_hw_errors" in said, said
    return said["host_hw_errors"]


def test_an_uncorrectable_dimm_error_and_an_apei_pcie_error_fail_naming_the_parts(tmp_path: Path) -> None:
    """lwa-issues#117 as pasted: `EDAC MC3: 1 UE memory read error on CPU_SrcID#1_MC#1_Chan#2_DIMM#0
    (... row:1a1e8 ...)`, an APEI record `event severity: recoverable`, `section_type: PCIe error`,
    `device_id: 0000:5e:00.0` (a Samsung NVMe), `mce: ... Machine check events logged`. (Before:
    no row; gpu_xid passed, the box GO.)"""
    verdict, actual = _judged(tmp_path, LWA)
    assert verdict == "fail", actual
    assert "MC3 CPU_SrcID#1_MC#1_Chan#2_DIMM#0 (row 1a1e8): uncorrectable memory error (EDAC UE)" in actual
    assert "PCI 0000:5e:00.0: PCIe error reported by the firmware (APEI, severity recoverable)" in actual


def test_many_corrected_errors_on_one_dimm_warn_naming_it(tmp_path: Path) -> None:
    """openstreetmap/operations#300's kern.log: `EDAC MC0: 4 CE error on CPU#0Channel#2_DIMM#0`
    and six more lines on that DIMM, 16 corrected errors in 8 s (the DIMM was replaced)."""
    verdict, actual = _judged(tmp_path, "kern-log__edac-ce-repeated-one-dimm__osm-operations-300.txt")
    assert (verdict, actual) == ("warn", "MC0 CPU#0Channel#2_DIMM#0: corrected memory error (EDAC CE) x16"), (
        actual
    )


def test_one_corrected_error_passes_naming_its_dimm(tmp_path: Path) -> None:
    """radiasoft/devops#134's syslog: one corrected scrubbing error (`EDAC MC1: 1 CE memory scrubbing
    error on CPU_SrcID#1_Ha#0_Chan#0_DIMM#0`) and the machine check EDAC decoded it from (`Bank 11:
    8c00004f000800c2`: no UC bit, a memory controller's error): a few are normal, named."""
    verdict, actual = _judged(tmp_path, "syslog__edac-sbridge-one-ce-scrub__radiasoft-devops-134.txt")
    assert verdict == "pass", actual
    assert "MC1 CPU_SrcID#1_Ha#0_Chan#0_DIMM#0: corrected memory error (EDAC CE)" in actual


@pytest.mark.parametrize(
    ("name", "verdict", "said"),
    [
        # andikleen/mcelog#70: `Bank 4: a600000000020408`, its UC bit (61) set
        (
            "kern-log__mce-uncorrected-bank4-at-boot__mcelog-70.txt",
            "fail",
            "CPU 0 bank 4: uncorrected machine check",
        ),
        # DualCoder/vgpu_unlock#114: a root port's `severity=Uncorrected (Fatal)`, lines left out around it
        (
            "dmesg__pcieport-aer-fatal-root-port__vgpu-unlock-114.txt",
            "fail",
            "PCI pcieport 0000:00:01.1: PCIe uncorrectable fatal error",
        ),
    ],
)
def test_machine_checks_and_fatal_pcie_errors_are_judged_by_their_status(
    name: str, verdict: str, said: str
) -> None:
    """A machine check bank's status says whether it was corrected (MCi_STATUS.UC, bit 61;
    VAL, bit 63: a record at all); a device's fatal PCIe error takes its link down. (Before: no
    row; the kernel-log rules passed or judged the GPUs only.)"""
    check = rule_host_hw_errors(host_errors(*log_lines((REAL / name).read_text())))
    assert check is not None and check.verdict == verdict and said in check.actual, check


def test_machine_checks_logged_alone_are_unverified(tmp_path: Path) -> None:
    """andikleen/mcelog#116's `dmesg | grep -i machine`: three `mce: [Hardware Error]: Machine check
    events logged` lines, their records in rasdaemon only (corrected memory read errors). The
    kernel prints that line whenever it queued records for mcelog / rasdaemon, corrected ones
    (CMCI, polling) mostly: what they were is not in the log. (Before: warn, an error claimed
    that the log does not show; now unverified, never a pass either.)"""
    name = "dmesg-grep-machine__mce-events-logged-alone__mcelog-116.txt"
    verdict, actual = _judged(tmp_path, name, (REAL / name).read_text())
    said = "a CPU: machine check events logged (their records not in the log)"
    assert (verdict, actual) == ("unverified", said)


def test_a_machine_check_bank_without_a_valid_error_is_no_error() -> None:
    """mchehab/rasdaemon#155's `dmesg | tail`: `Machine check events logged` and its record, `CPU 0:
    Machine Check: 0 Bank 9: 0000000000000000`: the bank's status has VAL (bit 63) clear, no
    error in it, and the notice is that record's. (Before: warn, "machine check, its status
    unreadable"; now no row, as a log without a host error.)"""
    text = (REAL / "dmesg-tail__mce-bank9-status-zero__rasdaemon-155.txt").read_text()
    assert rule_host_hw_errors(host_errors(*log_lines(text))) is None


def test_a_log_without_host_errors_has_no_row(tmp_path: Path) -> None:
    """A GPU's Xid log (no EDAC, machine check or APEI line) says nothing of the host: no row."""
    text = (REAL / "dmesg-T__xid-119-gsp-timeout__h100-dell-xe9680.txt").read_text()
    assert "host_hw_errors" not in verdicts(tmp_path, "dmesg.txt", text, ORDER)
    assert rule_host_hw_errors(()) is None


def test_a_gpus_own_aer_error_is_left_to_gpu_xid() -> None:
    """The real capture's fatal AER line, its device made the nvidia driver's (`nvidia 0000:00:01.1:`
    for `pcieport 0000:00:01.1:`): gpu_xid judges it; host_hw_errors does not list it twice."""
    text = (REAL / "dmesg__pcieport-aer-fatal-root-port__vgpu-unlock-114.txt").read_text()
    assert host_errors(*log_lines(text.replace("pcieport 0000:00:01.1:", "nvidia 0000:00:01.1:"))) == ()


def test_few_corrected_errors_in_a_narrowed_log_are_unverified() -> None:
    """radiasoft/devops#134's one CE, the log given a `| grep` of it: the errors it left out are
    not known, so the pass is unverified; a fault it shows still fails."""
    text = (REAL / "syslog__edac-sbridge-one-ce-scrub__radiasoft-devops-134.txt").read_text()
    check = rule_host_hw_errors(host_errors(*log_lines(text)), "filtered by grep")
    assert check is not None and check.verdict == "unverified", check
    failing = rule_host_hw_errors(host_errors(*log_lines((REAL / LWA).read_text())), "filtered by grep")
    assert failing is not None and failing.verdict == "fail", failing


def test_a_log_that_ends_inside_an_edac_line_is_unverified() -> None:
    """radiasoft/devops#134's syslog with its last line cut after `EDAC MC1: 1` (no newline: the
    log ends inside the line, before its `CE`): one corrected error passed where the cut line may
    have said UE; now unverified, quoting the cut line."""
    text = (REAL / "syslog__edac-sbridge-one-ce-scrub__radiasoft-devops-134.txt").read_text()
    cut = text[: text.index("EDAC MC1: 1 CE") + len("EDAC MC1: 1")]
    check = rule_host_hw_errors(host_errors(*log_lines(cut)))
    assert check is not None and check.verdict == "unverified", check
    assert check.actual.endswith("the log ends inside a line, cut short: 'EDAC MC1: 1'"), check


@pytest.mark.parametrize(
    "name",
    [
        # returnn#1500: `pcieport 0000:00:03.0: AER: Multiple Uncorrected (Fatal) error received:
        # 0000:00:03.0` (the root port's own completion timeout) between the GPU's `nvidia
        # 0000:03:00.0: AER: can't recover` lines
        "dmesg-H__aer-fatal-cmplto-cant-recover__returnn-1500.txt",
        # gpu-burn#1: the root port's Surprise Down (`Uncorrected (Fatal) error received: id=0010`),
        # its broadcast answered by `nvidia 0000:02:00.0: device has no AER-aware driver`, Xid 79
        "dmesg__pcieport-aer-fatal-surprise-down-xid-79__gpu-burn-1.txt",
    ],
)
def test_a_gpus_root_port_fatal_error_is_named_by_gpu_xid_once(tmp_path: Path, name: str) -> None:
    """A GPU's root port reporting a fatal PCIe error whose handling names the GPU (the link to
    the GPU is down: the GPU's fault) is the GPU rules' to name: gpu_xid fails naming the GPU,
    and host_hw_errors does not count the port's error again. (Before: both failed, one fault
    named twice, the second time as a host part to replace.)"""
    said = verdicts(tmp_path, name, (REAL / name).read_text(), ORDER)
    assert said["gpu_xid"][0] == "fail", said["gpu_xid"]
    assert "host_hw_errors" not in said, said["host_hw_errors"]


def test_another_devices_fatal_pcie_error_stays_host_hw_errors() -> None:
    """vgpu_unlock#114's root port `0000:00:01.1` (no GPU line in its error's handling) still fails
    host_hw_errors: only a port whose error the log ties to a GPU is the GPU's."""
    text = (REAL / "dmesg__pcieport-aer-fatal-root-port__vgpu-unlock-114.txt").read_text()
    check = rule_host_hw_errors(host_errors(*log_lines(text)))
    assert check is not None and check.verdict == "fail", check


APEI_CE = "syslog__apei-corrected-memory-one-record__node-exporter-3511.txt"


def test_one_corrected_apei_memory_record_passes_as_one_edac_ce_does(tmp_path: Path) -> None:
    """prometheus/node_exporter#3511: a firmware-first box's one corrected memory error, reported
    as an APEI record (`event severity: corrected`, `fru_text: D2`, `section_type: memory error`,
    `single-bit ECC`) and no EDAC line. (Before: warn, where an OS-first box's one `EDAC MC0: 1
    CE` passes; now the same count and threshold: a pass naming the DIMM.)"""
    verdict, actual = _judged(tmp_path, APEI_CE)
    assert (verdict, actual) == (
        "pass",
        "D2: corrected memory error (APEI) (fewer than 10 on each DIMM: a few are normal)",
    )


def test_an_apei_memory_record_and_its_edac_line_are_one_event() -> None:
    """node_exporter#3511's record with the line ghes_edac prints for the same event after it
    (added in-test, its form the kernel's `EDAC MC0: 1 CE single-bit ECC on unknown memory
    (node:... page:... grain:1 syndrome:0x0)`, its numbers the record's): one event, counted
    once; ten such pairs (the record repeated) are ten errors on the DIMM, not twenty."""
    text = (REAL / APEI_CE).read_text()
    edac = (
        "Dec 29 05:24:23 proxmox kernel: EDAC MC0: 1 CE single-bit ECC on unknown memory (node:6"
        " card:1 module:0 rank:1 bank:2 device:11 row:40948 col:560 page:0x6a47d1f offset:0x540"
        " grain:1 syndrome:0x0)\n"
    )
    once = host_errors(*log_lines(text + edac))
    assert [(e.source, e.severity, e.count) for e in once] == [("edac", "corrected", 1)], once
    check = rule_host_hw_errors(host_errors(*log_lines((text + edac) * 9)))
    assert check is not None and check.verdict == "pass" and "x9" in check.actual, check


RADIASOFT = "syslog__edac-sbridge-one-ce-scrub__radiasoft-devops-134.txt"


def test_a_benign_last_line_without_its_newline_is_read_whole() -> None:
    """radiasoft/devops#134's syslog cut at the end of its `EDAC sbridge MC1: PROCESSOR 0:306e4
    TIME 1519356496 SOCKET 1 APIC 20` line, without that line's newline: a machine check's detail
    line, which no error line starts as (it has left `EDAC ... MCn: <count> UE|CE` and `CPU N:
    Machine Check`), so the one corrected memory error read passes. (Before: any EDAC line the
    log ended inside made the row unverified.)"""
    text = (REAL / RADIASOFT).read_text()
    cut = text[: text.index("APIC 20") + len("APIC 20")]
    check = rule_host_hw_errors(host_errors(*log_lines(cut)))
    assert check is not None and check.verdict == "pass", check
    assert check.actual.startswith(
        "CPU 1 bank 11: corrected memory error (machine check 8c00004f000800c2)"
    ), check


def test_a_last_line_of_a_stamp_alone_narrows_the_errors_read() -> None:
    """radiasoft#134's syslog, its last line cut to its stamp and tag (`Feb 23 03:28:16  kernel: `,
    the line of its one CE cut before `EDAC`): the line may be any kernel line, an uncorrectable
    error's too, so the corrected errors read are no pass: unverified, quoting it. (Before: a pass,
    only an EDAC or machine check tag read as a line's start.) Alone, a stamp is no host error's:
    no row (gpu_xid says the log is cut)."""
    text = (REAL / RADIASOFT).read_text()
    cut = text[: text.index("EDAC MC1: 1 CE")]
    check = rule_host_hw_errors(host_errors(*log_lines(cut)))
    assert check is not None and check.verdict == "unverified", check
    assert check.actual.endswith("the log ends inside a line, cut short: 'Feb 23 03:28:16  kernel:'"), check
    assert rule_host_hw_errors(host_errors(*log_lines(cut[cut.rindex("\n") + 1 :]))) is None


def test_an_amd_memory_controllers_corrected_error_counts_as_a_ce_and_later_notices_are_unread() -> None:
    """mchehab/rasdaemon#95's `dmesg | grep -i mce`: `Bank 17: dc2040000000011b` (corrected), its
    record's `IPID 9600050f00` naming the bank an AMD Unified Memory Controller (hardware id
    0x096): one corrected DRAM error, counted as an EDAC CE is; then seven `Machine check events
    logged`, five minutes apart, with no record beside them: corrected errors (or more) whose
    records went to mcelog / rasdaemon only. (Before: warn, "corrected machine check", a CPU fault
    claimed; now unverified: the errors after the first are not in the log.)"""
    check = rule_host_hw_errors(
        host_errors(
            *log_lines((REAL / "dmesg-grep-mce__mce-corrected-amd-bank17__rasdaemon-95.txt").read_text())
        )
    )
    assert check is not None and check.verdict == "unverified", check
    assert check.actual == (
        "CPU 0 bank 17: corrected memory error (machine check dc2040000000011b) (fewer than 10 on each"
        " DIMM: a few are normal); a CPU: machine check events logged (their records not in the log)"
    )
