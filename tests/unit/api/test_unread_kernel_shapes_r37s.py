"""A saved file of kernel lines without their time stamps (a customer's note with the console's
`pcieport 0000:00:02.0: AER: ...` lines): the Xid and SXid rules' "not read" rows (revS F1).

The tool refused such a file as kernel lines it cannot tell from a grep ("kernel lines without
their time stamps, of 2 kinds only ..."), then dropped its gpu_xid and nvswitch_sxid rows: the
unread-file test knew no unstamped device line, so the rules vanished from the report. A file the
tool itself refused as kernel lines keeps its rows (unverified, "not read"), and an unread file
of unstamped kernel lines of the shapes facts/kernel_kinds knows may hold the log."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.api.unread_files import unread_rows
from gpuonboard.connection.gather import parse_facts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
H100_LISTING = REAL / "nvidia-smi-L__h100-80gb-hbm3__8gpu__ccr-buffalo.txt"
# a root port's fatal AER (a GPU fallen off the bus), as the console prints it (no stamps)
AER = (
    "pcieport 0000:00:02.0: AER: Uncorrected (Fatal) error received: id=0010\n"
    "pcieport 0000:00:02.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer,"
    " id=0010(Receiver ID)\n"
    "pcieport 0000:00:02.0:    [ 5] Surprise Down Error    (First)\n"
    "nvidia 0000:02:00.0: device has no AER-aware driver\n"
)
NOTE = "Customer report, node gpu-17, 2026-12-06:\nTraining job died at step 41200. From the console:\n\n"


def test_a_file_refused_as_kernel_lines_keeps_the_xid_rules_not_read(tmp_path: Path) -> None:
    (tmp_path / "nvidia-smi-L.txt").write_text(H100_LISTING.read_text())
    (tmp_path / "report.txt").write_text(NOTE + AER)
    (tmp_path / "order.yml").write_text("gpu_count: 8\n")
    unread: list[Path] = []
    other: list[Path] = []
    held: dict[Path, set[str]] = {}
    notes: list[str] = []
    raw = offline.load_outputs(
        [str(tmp_path / "nvidia-smi-L.txt"), str(tmp_path / "report.txt")], notes, unread, other, held
    )
    assert any("kernel lines without their time stamps" in n for n in notes), notes
    rows = {row.name: row for row in unread_rows(unread, raw, set(), other, held)}
    assert set(rows) == {"gpu_xid", "nvswitch_sxid"}, rows
    assert all(
        r.verdict == "unverified" and "not read" in r.actual and "report.txt" in r.actual
        for r in rows.values()
    )
    judged = {
        c.name: c.verdict
        for c in offline.judge(parse_facts(raw), offline.load_order(str(tmp_path / "order.yml")))
    }
    assert judged["gpu_count"] == "pass"


@pytest.mark.parametrize(
    "lines",
    [
        AER,
        "nvidia 0000:3b:00.0: enabling device (0000 -> 0003)\n",
        "nvme nvme0: I/O 12 QID 3 timeout, aborting\n",
        "EDAC MC0: 1 CE memory read error on CPU_SrcID#0_MC#0_Chan#0_DIMM#0\n",
        "mce: [Hardware Error]: Machine check events logged\n",
    ],
    ids=["pcieport-aer", "nvidia-pci", "nvme", "edac", "mce"],
)
def test_an_unread_file_of_unstamped_kernel_lines_may_hold_the_log(tmp_path: Path, lines: str) -> None:
    """Unread (held by no refusal), named as no kind: its unstamped kernel lines say it may be
    the log, so both rules stay unverified naming it (was: no row, the file shown as holding none)."""
    path = tmp_path / "notes.txt"
    path.write_text(NOTE + lines)
    rows = {row.name for row in unread_rows([path], set(), set(), [], {})}
    assert rows == {"gpu_xid", "nvswitch_sxid"}, rows
