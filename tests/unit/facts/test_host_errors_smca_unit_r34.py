"""An AMD Scalable MCA bank's `CECC` flag says an ECC-protected structure of the bank's unit,
which the kernel's own decode names on the line after the status (`Platform Security Processor
Ext. Error Code: 62`): a corrected memory (DRAM) error only where that unit is a memory
controller (measure34d 07: the PSP's bank was called a corrected memory error). Real capture:
tests/fixtures/real/SOURCES.md."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.facts.host_errors import host_errors

REAL = Path(__file__).parents[2] / "fixtures" / "real"
BESZEL = REAL / "dmesg__amd-smca-corrected-gmi-over-and-psp-cecc__beszel-1558.txt"


def test_a_psp_banks_cecc_is_a_machine_check_of_that_unit_not_memory() -> None:
    errors = [e for e in host_errors(BESZEL.read_text().splitlines()) if e.where == "CPU 1 bank 28"]
    assert len(errors) == 1 and errors[0].severity == "warn", errors
    assert errors[0].what.startswith(
        "corrected machine check (Platform Security Processor, ext. error code 62:"
    )
    assert "memory" not in errors[0].what


def test_a_memory_controllers_cecc_stays_a_corrected_memory_error() -> None:
    """The same record, its decode naming the Unified Memory Controller (as mce_amd.c prints a UMC
    bank's): a corrected memory error, as before."""
    lines = BESZEL.read_text().splitlines()
    lines = [
        line.replace(
            "Platform Security Processor Ext. Error Code: 62",
            "Unified Memory Controller Ext. Error Code: 0, DRAM ECC error.",
        )
        for line in lines
    ]
    errors = [e for e in host_errors(lines) if e.where.endswith("bank 28") or "MC28" in e.where]
    assert [e.severity for e in errors] == ["corrected"] and errors[0].what.startswith(
        "corrected memory error"
    )
