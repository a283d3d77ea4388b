"""A cause the driver prints after a failure's closing line is not that failure's (review N F1):
osinit.c prints the cause before `RmInitAdapter failed!`, nv.c's `rm_init_adapter failed ...` line
closes the failure, so a `failed to copy vbios to system memory` after it belongs to the next
failure (another GPU's, or the next try): the failure with no cause logged before it keeps its own
action (replace), the next one takes the cause. The kernel's own line its log prints below the
failure it caused (`caller ... [nvidia] mapping multiple BARs`) still names it.

Real captures: tests/fixtures/real/SOURCES.md; the edits are in memory."""

from __future__ import annotations

from pathlib import Path

import pytest

from ...offline_judge import checks

REAL = Path(__file__).parents[3] / "fixtures" / "real"

BEARING = (
    "dmesg-syslog__vbios-copy-failed-rminitadapter-0x30-minor-number-bearing"
    "__laptop__switch-screen-readme.txt"
)
BARS = "log-excerpt__dmesg-rminitadapter-then-mapping-multiple-bars__esxi-p40-passthrough__k3s-notes.txt"
RMINIT = "GPU failed to initialise (RmInitAdapter failed)"
VBIOS = "the driver could not copy the GPU's video BIOS"


def xid(tmp_path: Path, text: str) -> tuple[str, str]:
    row = next(c for c in checks(tmp_path, "dmesg.txt", text) if c.name == "gpu_xid")
    return row.verdict, row.actual


def _lines() -> list[str]:
    return [x for x in (REAL / BEARING).read_text().splitlines() if x.strip()]


def _no_cause_failure(line: str, minor: int) -> str:
    return line.replace("0x30:0xffff:660", "0x26:0x56:1474").replace(
        "minor number 0", f"minor number {minor}"
    )


@pytest.mark.parametrize("form", ["bearing", "pci"])
def test_a_cause_after_a_gpus_closing_line_is_the_next_gpus(tmp_path: Path, form: str) -> None:
    """The real 3xx capture's failure of minor 0 with no cause line before it (its vbios line moved
    to the second GPU), then GPU minor 1's vbios line and failure; also with both GPUs' addresses."""
    vbios, rminit, closing = _lines()
    gpu0 = [_no_cause_failure(rminit, 0), _no_cause_failure(closing, 0)]
    gpu1 = [vbios, rminit, closing.replace("minor number 0", "minor number 1")]
    if form == "pci":
        gpu0 = [x.replace("NVRM: ", "NVRM: GPU 0000:01:00.0: ") for x in gpu0]
        gpu1 = [gpu1[0], *(x.replace("NVRM: ", "NVRM: GPU 0000:02:00.0: ") for x in gpu1[1:])]
    verdict, actual = xid(tmp_path, "\n".join([*gpu0, *gpu1, ""]))
    assert verdict == "fail"
    first, second = actual.split("; ", 1)
    assert RMINIT in first and first.endswith("-> replace"), actual
    assert VBIOS in second and second.endswith("-> fix_host_setup") and "replace" not in second, actual


def test_a_cause_after_the_only_failures_closing_line_is_not_its_cause(tmp_path: Path) -> None:
    """One GPU's failure, then a vbios line after its closing line (the next try, cut before its
    failure): the failure keeps replace; the vbios line is listed on its own."""
    vbios, rminit, closing = _lines()
    verdict, actual = xid(
        tmp_path, "\n".join([_no_cause_failure(rminit, 0), _no_cause_failure(closing, 0), vbios, ""])
    )
    assert verdict == "fail"
    failure, cause = actual.split("; ", 1)
    assert RMINIT in failure and failure.endswith("-> replace"), actual
    assert VBIOS in cause and RMINIT not in cause, actual


def test_the_kernels_bar_line_below_its_failure_still_names_it(tmp_path: Path) -> None:
    """The real ESXi P40 excerpt: the kernel's `mapping multiple BARs` below the failure's closing
    line is that failure's cause, no other failure after it."""
    verdict, actual = xid(tmp_path, (REAL / BARS).read_text())
    assert verdict == "fail" and actual.endswith("-> fix_bar_mapping") and "replace" not in actual, actual
