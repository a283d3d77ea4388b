"""A failed GPU initialisation (`RmInitAdapter failed!`) whose log names its cause in a line the
round-35/36 catalogue did not read (measure37d 13, 18, 23): the FAIL was right, but each read
"-> replace" / "Ask the vendor to inspect and replace the GPU":

- 13: `_kgspBootGspRm: unexpected WPR2 already up, cannot proceed with booting GSP` (a GPU left
  running by an earlier driver or VM), pasted under a `guest dmesg:` label whose indent joined it
  to the failure's line: a GPU reset (reset_gpu);
- 23: the kernel's `pci 0000:13:00.0: BAR 1: failed to assign [mem size 0x1000000000 64bit pref]`
  at boot (an ESXi VM's MMIO window too small): the BARs (fix_bar_mapping, the action of the
  table's other BAR causes);
- 18: 13 Xid 119 GSP RPC timeouts of the GPU right before its `RmInitAdapter failed!`: the GSP
  stopped answering (reset_gpu); RmInitAdapter is no catalogue Xid, so "per NVIDIA's Xid
  catalogue" is said only where an Xid asks for the advised action.

Each cause is a row of data/nvrm_faults.yml with `cause_of`, its source and a real log; the
class test reads every such row's named real logs. Real captures: tests/fixtures/real/SOURCES.md
("Round 37 fixes"); the edits are in memory."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from gpuonboard.facts.kernel_log import NvrmFault, load_nvrm_faults

from ...offline_judge import checks

REAL = Path(__file__).parents[3] / "fixtures" / "real"

WPR2 = "log-excerpt__guest-dmesg-label-wpr2-already-up-rminitadapter-0x62__rtx3060-vm__kayfabe-notes.txt"
BAR = "dmesg-syslog__grep-fail-bar1-failed-to-assign-rminitadapter-0x24__esxi-debian11-vm__zh-notes.txt"
XID119 = (
    "log-excerpt__mail-quoted-guest-dmesg-xid119-x13-then-rminitadapter__ahv-passthrough__kvm-list-2022.txt"
)
RMINIT = "GPU failed to initialise (RmInitAdapter failed)"
REPLACE = "inspect and replace the GPU"


def xid(tmp_path: Path, text: str, name: str = "dmesg.txt") -> tuple[str, str, str]:
    row = next(c for c in checks(tmp_path, name, text) if c.name == "gpu_xid")
    return row.verdict, row.actual, row.detail


@pytest.mark.parametrize(
    ("name", "cause", "action"),
    [
        (WPR2, "the GPU was left in a state the driver cannot boot its GSP firmware from", "reset_gpu"),
        (BAR, "the kernel could not give the GPU one of its PCI memory regions", "fix_bar_mapping"),
        (XID119, "GSP firmware timeout", "reset_gpu"),
    ],
)
def test_a_failure_whose_log_names_its_cause_asks_for_the_causes_action(
    tmp_path: Path, name: str, cause: str, action: str
) -> None:
    verdict, actual, detail = xid(tmp_path, (REAL / name).read_text())
    assert verdict == "fail", actual
    assert f"{RMINIT}; " in actual and cause in actual, actual
    assert f"-> {action}" in actual and "-> replace" not in actual, actual
    assert REPLACE not in detail, detail


def test_the_wpr2_line_on_its_own_line_is_the_cause_too(tmp_path: Path) -> None:
    """The kayfabe lines without the label and indent (two driver lines, as dmesg prints them)."""
    text = (
        "[  881.210000] NVRM: _kgspBootGspRm: unexpected WPR2 already up, cannot proceed with booting GSP\n"
        "[  881.210003] NVRM: RmInitAdapter failed! (0x62:0x40:2028)\n"
    )
    verdict, actual, detail = xid(tmp_path, text)
    assert verdict == "fail" and actual.endswith("-> reset_gpu"), actual
    assert REPLACE not in detail


def test_no_xid_catalogue_is_named_for_a_failure_no_xid_says(tmp_path: Path) -> None:
    """measure37d 18's advice said "per NVIDIA's Xid catalogue" for a replacement no Xid asked for
    (RmInitAdapter is the driver's sentence). Edit: the capture's Xid 119 lines made another GPU's
    (00:07): 00:06's failures have no cause beside them and keep replace, advised without the
    catalogue; the Xid lines alone are advised per the catalogue."""
    text = (REAL / XID119).read_text().replace("Xid (PCI:0000:00:06)", "Xid (PCI:0000:00:07)")
    _verdict, actual, detail = xid(tmp_path, text)
    assert f"GPU at PCI 0000:00:06.0: driver message (no Xid): {RMINIT} x2 -> replace" in actual, actual
    assert REPLACE in detail and "catalogue" not in detail, detail
    xids = "".join(x for x in text.splitlines(True) if "Xid" in x)
    _verdict, _actual, detail = xid(tmp_path, xids)
    assert detail.startswith("Ask the vendor to reset the GPU") and "per NVIDIA's Xid catalogue" in detail


_BAR_LINE = "pci 0000:13:00.0: BAR 1: failed to assign [mem size 0x1000000000 64bit pref]"


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # (kernels since 6.8 print the region before the verb)
        (_BAR_LINE, "pci 0000:13:00.0: BAR 1 [mem size 0x1000000000 64bit pref]: can't assign; no space"),
        (_BAR_LINE, "pci 0000:13:00.0: BAR 1: no space for [mem size 0x1000000000 64bit pref]"),
    ],
)
def test_the_kernels_other_forms_of_a_bar_it_could_not_assign(tmp_path: Path, old: str, new: str) -> None:
    text = (REAL / BAR).read_text().replace(old, new)
    assert new in text
    _verdict, actual, _ = xid(tmp_path, text, "messages.txt")
    assert actual.endswith("-> fix_bar_mapping"), actual


def test_the_bar_cause_holds_across_the_drivers_load(tmp_path: Path) -> None:
    """The BAR is laid out at boot, before the driver loads: a whole log has the driver's load
    banner between it and the failure, which still names it."""
    lines = (REAL / BAR).read_text().splitlines(True)
    banner = (
        "Apr 16 18:44:05 gpu-test kernel: [    2.901234] NVRM: loading NVIDIA UNIX x86_64 Kernel Module"
        "  525.105.17  Sat Mar 18 01:14:41 UTC 2023\n"
    )
    text = "".join([*lines[1:3], banner, *lines[3:]])
    _verdict, actual, _ = xid(tmp_path, text, "messages.txt")
    assert actual.endswith("-> fix_bar_mapping") and "-> replace" not in actual, actual


@pytest.mark.parametrize(
    "other",
    [
        "pci 0000:14:00.0: BAR 1: failed to assign",  # (another device)
        "pci 0000:13:00.1: BAR 0: failed to assign",  # (the GPU's audio function, not the GPU)
    ],
)
def test_another_devices_bar_is_no_cause_of_this_gpus_failure(tmp_path: Path, other: str) -> None:
    text = (REAL / BAR).read_text().replace("pci 0000:13:00.0: BAR 1: failed to assign", other)
    _verdict, actual, detail = xid(tmp_path, text, "messages.txt")
    assert "-> replace" in actual and "PCI memory regions" not in actual, actual
    assert REPLACE in detail


def test_a_bar_failure_with_no_gpu_failure_is_no_gpu_fault(tmp_path: Path) -> None:
    """The kernel line alone (the failures taken out): a BAR the kernel re-laid later, or another
    driver's device, as far as the log says: no GPU fault listed."""
    text = "".join(x for x in (REAL / BAR).read_text().splitlines(True) if "NVRM" not in x)
    _verdict, actual, _ = xid(tmp_path, text, "messages.txt")
    assert "PCI memory regions" not in actual, actual


_REAL_NAMED = re.compile(r"[\w.+-]+__[\w.+-]+\.txt")


_ROWS = {
    str(r["id"]): r
    for r in yaml.safe_load((Path(__file__).parents[4] / "src/gpuonboard/data/nvrm_faults.yml").read_text())[
        "nvrm_faults"
    ]
}


@pytest.mark.parametrize("row", [f for f in load_nvrm_faults() if f.cause_of], ids=lambda f: f.id)
def test_every_cause_row_is_read_as_the_cause_in_its_real_logs(tmp_path: Path, row: NvrmFault) -> None:
    """The class: each data/nvrm_faults.yml row that names a failure's cause (`cause_of`) cites
    real logs in its source; in each of them that holds the failure the row names, that failure is
    judged with the row's cause and action, never replace."""
    source = str(_ROWS[row.id]["source"])
    names = [n for n in _REAL_NAMED.findall(source) if (REAL / n).is_file()]
    assert names, row.id
    judged = 0
    # (the failures it names: RmInitAdapter's, a failed probe's, round 40's 64-bit BAR)
    failures = [f.name for f in load_nvrm_faults() if f.id in row.cause_of]
    for name in names:
        _verdict, actual, _ = xid(tmp_path, (REAL / name).read_text(errors="replace"))
        if not any(failure in actual for failure in failures):
            continue  # (a log of the row's own fault, with no failure it names)
        judged += 1
        assert row.name in actual and f"-> {row.action}" in actual, (name, actual)
    assert judged, names


# (a journal of two boots, the Xid in the first: the shape of test_xid_catalogue_r36's, a test
# input, not a capture)
_TWO_BOOTS = (
    "Mar 02 09:58:01 gpu01 kernel: Linux version 5.15.0-105-generic #115-Ubuntu SMP\n"
    "Mar 02 09:58:10 gpu01 kernel: NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.90.07\n"
    "Mar 02 10:00:01 gpu01 kernel: NVRM: Xid (PCI:0000:19:00): 64, pid=20431, name=python3, {text}\n"
    "-- Boot 5e1c0c3a2f0d4b8e9c6b0a1d2e3f4a5b --\n"
    "Mar 02 10:20:01 gpu01 kernel: Linux version 5.15.0-105-generic #115-Ubuntu SMP\n"
    "Mar 02 10:20:10 gpu01 kernel: NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.90.07\n"
    "{now}"
    "Mar 02 10:20:11 gpu01 kernel: nvidia-uvm: Loaded the UVM driver, major device number 509.\n"
)
_REMAP = "Row Remapper Error: Failed to remap row"


def test_an_earlier_boots_remap_failure_asks_to_show_the_repair_not_a_reset(tmp_path: Path) -> None:
    """Session 52 left it: an Xid 64 (row-remap failure, data/xid.yml `cleared_by_reset: false`)
    logged before the log's last reboot failed, rightly, but advised "Ask the vendor to reset the
    GPU (nvidia-smi -r, or a reboot) ..., per NVIDIA's Xid catalogue": the reboot since did that
    reset, which does not undo the failure. It asks for the repair to be shown (or the GPU
    replaced); the same Xid in this boot still asks for the catalogue's reset."""
    verdict, actual, detail = xid(tmp_path, _TWO_BOOTS.format(text=_REMAP, now=""), "journal.txt")
    assert verdict == "fail" and actual.endswith("(logged before the log's last reboot) -> show_repaired"), (
        actual
    )
    assert detail.startswith("Ask the vendor to show the GPU repaired, or to replace it"), detail
    assert "nvidia-smi -r" not in detail and "catalogue" not in detail, detail
    now = f"Mar 02 10:25:00 gpu01 kernel: NVRM: Xid (PCI:0000:19:00): 64, pid=3301, name=python3, {_REMAP}\n"
    verdict, actual, detail = xid(tmp_path, _TWO_BOOTS.format(text=_REMAP, now=now), "journal.txt")
    assert verdict == "fail" and "-> reset_gpu" in actual, actual
    assert detail.startswith("Ask the vendor to show the GPU repaired"), detail
