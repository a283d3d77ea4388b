"""host_errors: AMD's decode of a machine check (drivers/edac/mce_amd.c: `MC4 Error (node 3):
DRAM ECC error detected on the NB.`, `MC4_STATUS[Over|CE|MiscV|-|AddrV|CECC]: 0x...`) read as
the error it says: a corrected DRAM ECC error counted as EDAC's CE, one whose bank overflowed
(`Over`: errors were lost) a warning, an uncorrected one (`UE`) a failure. The log is a real
capture (tests/fixtures/real), edited in-test where a test says so."""

from __future__ import annotations

import re
from pathlib import Path

from gpuonboard.facts.host_errors import host_errors, log_lines
from gpuonboard.steps.checks.host_errors import rule_host_hw_errors

REAL = Path(__file__).parents[2] / "fixtures" / "real"
UCR_404 = "syslogd-wall__amd-mc4-dram-ecc-corrected-over__cut-at-end__ucr-cs100-404.txt"


def _syslog(text: str) -> str:
    """ucr-cs100#404's wall broadcasts as the syslog lines they were (`Nov 10 08:58:06 hammer
    kernel: [Hardware Error]: ...`), the broadcast lines and blank lines dropped."""
    said = re.findall(r"^ kernel:(.*)$", text, re.M)
    return "".join(f"Nov 10 08:58:06 hammer kernel: {line}\n" for line in said)


def test_ucr_404s_overflowed_corrected_dram_ecc_errors_warn() -> None:
    """The capture as stored, and as plain syslog lines: two corrected DRAM ECC errors of node 3's
    memory controller, each bank overflowed: host_hw_errors warns naming them and that more
    errors were lost. (Before: no host_hw_errors row at all.)"""
    text = (REAL / UCR_404).read_text()
    for log in (text, _syslog(text)):
        check = rule_host_hw_errors(host_errors(*log_lines(log)))
        assert check is not None and check.verdict == "warn", check
        assert check.actual.startswith("node 3 DRAM (MC4): corrected memory error; the bank overflowed")
        assert check.actual.endswith("0xdc5c410004080a13) x2")


def test_a_corrected_dram_ecc_error_without_overflow_is_counted_as_edacs_ce() -> None:
    """The syslog lines with `Over` made `-` and the status's OVER bit cleared in-test (0xdc5c...
    to 0x9c5c...): two corrected memory errors on node 3's DRAM, fewer than CE_WARN_AT: pass,
    named."""
    text = _syslog((REAL / UCR_404).read_text()).replace("[Over|", "[-|").replace("0xdc5c", "0x9c5c")
    check = rule_host_hw_errors(host_errors(*log_lines(text)))
    assert check is not None and check.verdict == "pass", check
    assert check.actual.startswith("node 3 DRAM (MC4): corrected memory error (MC4_STATUS[-|CE|")


def test_an_uncorrected_dram_ecc_error_fails() -> None:
    """The syslog lines with `CE` made `UE` and the status's UC bit set in-test (0xdc5c... to
    0xfc5c...): host_hw_errors fails naming an uncorrectable memory error on node 3's DRAM."""
    text = _syslog((REAL / UCR_404).read_text()).replace("|CE|", "|UE|").replace("0xdc5c", "0xfc5c")
    check = rule_host_hw_errors(host_errors(*log_lines(text)))
    assert check is not None and check.verdict == "fail", check
    assert check.actual.startswith("node 3 DRAM (MC4): uncorrectable memory error")


def test_the_kernels_bank_line_and_amds_decode_of_it_count_once() -> None:
    """The syslog lines with the kernel's own bank line for the same machine check put before the
    first decode in-test (`mce: [Hardware Error]: CPU 18: Machine Check: 0 Bank 4:
    dc5c410004080a13`, as mce.c prints it before edac_mce_amd's decode): still two errors."""
    lines = _syslog((REAL / UCR_404).read_text()).splitlines(keepends=True)
    bank = "Nov 10 08:58:06 hammer kernel: mce: [Hardware Error]: CPU 18: Machine Check: 0 Bank 4: "
    bank += "dc5c410004080a13\n"
    check = rule_host_hw_errors(host_errors(*log_lines("".join([bank, *lines]))))
    assert check is not None and check.actual.endswith("0xdc5c410004080a13) x2"), check
