"""The Xid catalogue's actions, round 36 (measure36d 2-5; tests/fixtures/real/SOURCES.md, "Round 36
fixes (fixN6g)").

measure36d 2, 3: "Xid 120 GSP Error -> replace ... Ask the vendor to inspect and replace the GPU
(or the box), per NVIDIA's Xid catalogue", where NVIDIA's catalogue (data/xid.yml's own
nvidia_resolution) says RESET_GPU, and the Xid 154 beside it says `(GPU Reset Required)`. The
class: every row whose action is not the one its catalogue resolution maps to (Xid 48, 64, 120 took
AWS's "Terminate instances" instead) said "per NVIDIA's catalogue" untruly.

measure36d 4: "Xid 94 Contained memory error -> check_app | WARN | application-level Xids (a program
faulted on this GPU since boot)": a contained error is the GPU's uncorrectable (memory) error that
the driver contained to the program using that memory, not the program's fault; NVIDIA's catalogue
says to reset the GPU when convenient, AWS to reset GPUs, and the driver's own `RST:` / `D-RST:`
words (where it prints them) say whether it needs the reset now."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpuonboard.facts.kernel_log import parse_kernel_log
from gpuonboard.steps.checks.xid_catalogue import XID_FILE
from gpuonboard.steps.checks.xid_rules import xid_action

from ...offline_judge import checks, judged_box

REAL = Path(__file__).parents[3] / "fixtures" / "real"
XID120_154 = REAL / (
    "journalctl-k-no-hostname__xid-120-gsp-exception-then-154-reset-required__rtx-pro-6000__nvforum-364958.txt"
)
XID94 = REAL / "dmesg-kmsg__xid-94-contained-ecc-error-no-rst-words__gpud-1174.txt"
XID94_RST_NO = REAL / "dmesg-T-grep-NVRM__xid-43-31-94-rst-no__3gpu-vm__driver535.183.01.txt"

# data/xid.yml's header: the catalogue's "Immediate Resolution" -> this tool's action
RESOLUTION_ACTION = {
    "IGNORE": "ignore",
    "RESTART_APP": "check_app",
    "RESET_GPU": "reset_gpu",
    "RESTART_BM": "reboot",
    "RESTART_VM": "reboot",
    "CONTACT_SUPPORT": "replace",
    "CHECK_MECHANICALS": "replace",
    "UPDATE_SWFW": "update_driver",
    "WORKFLOW_XID_45": "ignore",
    "WORKFLOW_XID_48": "reset_gpu",
    "WORKFLOW_NVLINK_ERR": "reset_gpu",
    "WORKFLOW_NVLINK5_ERR": "reset_gpu",
    "CHECK_UVM": "check_app",
    "XID_154": "from_message",
}


def _rows() -> list[dict[str, object]]:
    rows = yaml.safe_load(XID_FILE.read_text(encoding="utf-8"))["xid"]
    assert len(rows) > 150
    return [r for r in rows if r.get("nvidia_resolution")]


@pytest.mark.parametrize("row", _rows(), ids=lambda r: f"xid{r['code']}")
def test_every_action_is_the_one_its_catalogue_resolution_asks_for(row: dict[str, object]) -> None:
    """An action other than the resolution's is allowed only where the row says why, quoting the
    catalogue's own description of the code (`beyond_resolution`), as "per NVIDIA's catalogue"
    must stay true of it."""
    expected = RESOLUTION_ACTION[str(row["nvidia_resolution"])]
    if row["action"] != expected:
        why = str(row.get("beyond_resolution", ""))
        assert "NVIDIA's catalogue" in why, row


def _xid(tmp_path: Path, text: str) -> tuple[str, str, str]:
    row = next(c for c in checks(tmp_path, "dmesg.txt", text) if c.name == "gpu_xid")
    return row.verdict, row.actual, row.detail


def test_a_gsp_error_with_its_reset_required_asks_for_the_reset_not_a_new_gpu(tmp_path: Path) -> None:
    """measure36d 2: Xid 120 (RESET_GPU) and Xid 154 `to 0x1 (GPU Reset Required)`."""
    verdict, actual, detail = _xid(tmp_path, XID120_154.read_text())
    assert verdict == "fail"
    assert "Xid 120 GSP Error -> reset_gpu" in actual
    assert "Xid 154 GPU Recovery Action Changed (the driver: to GPU Reset Required) -> reset_gpu" in actual
    assert detail.startswith("Ask the vendor to reset the GPU"), detail
    assert "replace" not in detail


@pytest.mark.parametrize(
    ("line", "action"),
    [
        # (the catalogue's DBE workflow: "A GPU reset or node reboot is needed to clear this error")
        (
            "NVRM: Xid (PCI:0000:19:00): 48, pid=1, An uncorrectable double bit error (DBE) has been"
            " detected",
            "reset_gpu",
        ),
        ("NVRM: Xid (PCI:0000:19:00): 64, pid=1, Row Remapper: Failed to remap row", "reset_gpu"),
        ("NVRM: Xid (PCI:0000:19:00): 95, pid=1, Uncontained ECC error", "reset_gpu"),
        ("NVRM: Xid (PCI:0000:19:00): 92, High single-bit ECC error rate", "ignore"),
        (
            "NVRM: Xid (PCI:0000:19:00): 63, pid=1, Row Remapper: New row marked for remapping, reset gpu"
            " to activate.",
            "reset_gpu",
        ),
    ],
)
def test_memory_xids_follow_the_catalogue(line: str, action: str) -> None:
    (event,) = parse_kernel_log(line + "\n").xids()
    assert xid_action(event)[0] == action


def test_a_contained_memory_error_without_the_drivers_reset_words_asks_for_the_reset(tmp_path: Path) -> None:
    """measure36d 4: `94, pid=1234, name=python3, Contained ECC error` (no `RST:` words): the GPU's
    memory error, contained to that program; NVIDIA: reset the GPU when convenient."""
    verdict, actual, detail = _xid(tmp_path, XID94.read_text())
    assert verdict == "fail", actual
    assert "Xid 94 Contained memory error" in actual and "-> reset_gpu" in actual
    assert "memory error" in actual and "reset" in actual
    assert "application-level" not in detail and "a program faulted" not in detail, detail


def test_a_contained_error_the_driver_says_needs_no_reset_is_watched_not_blamed_on_a_program(
    tmp_path: Path,
) -> None:
    """The driver's own `RST: No, D-RST: No` (a 3-GPU VM's log): no reset now; watched, and the
    sentence names a contained GPU error, not a program's fault."""
    verdict, actual, detail = _xid(tmp_path, XID94_RST_NO.read_text())
    assert verdict in ("warn", "unverified"), (verdict, actual)  # (its grep keeps only part: unverified)
    assert "Xid 94 Contained memory error (contained to one program; the driver: RST: No, D-RST: No" in actual
    assert "-> watch" in actual
    line = "NVRM: Xid (PCI:0000:01:00): 94, pid=7, Contained: CE User Channel (0x9). RST: No, D-RST: No\n"
    (event,) = parse_kernel_log(line).xids()
    assert xid_action(event)[0] == "watch"


FWSEC = REAL / "dmesg__fwsec-too-few-interface-entries-rminitadapter-0x62-0x25__rtx3080-open__ogkm-943.txt"


def test_a_gpu_whose_vbios_firmware_the_driver_could_not_prepare_asks_for_a_driver_or_vbios_update(
    tmp_path: Path,
) -> None:
    """measure36d 5: `s_vbiosPatchInterfaceData: too few interface entires found for FWSEC cmd 0x15`,
    `failed to prepare interface data for FWSEC cmd 0x15: 0x25`, `(note: VBIOS version ...)`, then
    `Cannot initialize GSP firmware RM` and `RmInitAdapter failed!`: the driver could not use the
    FWSEC firmware of the GPU's VBIOS (kernel_gsp_frts_tu102.c), a VBIOS / driver mismatch, not a
    GPU to replace first."""
    verdict, actual, detail = _xid(tmp_path, FWSEC.read_text())
    assert verdict == "fail"
    assert "FWSEC" in actual and "VBIOS" in actual, actual
    assert "-> update_driver" in actual and "-> replace" not in actual, actual
    assert "replace" not in detail, detail


@pytest.mark.parametrize(
    "cause",
    [
        # (the same file's other refusals of the VBIOS's FWSEC interface, kernel_gsp_frts_tu102.c)
        "NVRM: s_vbiosPatchInterfaceData: failed to find required interface entry for FWSEC cmd 0x15",
        "NVRM: s_prepareForFwsec_TU102: failed to prepare interface data for FWSEC cmd 0x19: 0x25",
    ],
)
def test_every_fwsec_interface_refusal_names_the_cause(tmp_path: Path, cause: str) -> None:
    text = (
        f"[   10.842107] {cause}\n"
        "[   10.842116] NVRM: s_prepareForFwsec_TU102: (note: VBIOS version 94.02.71.40.83)\n"
        "[   10.842171] NVRM: RmInitAdapter: Cannot initialize GSP firmware RM\n"
        "[   10.843941] NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x62:0x25:2015)\n"
    )
    verdict, actual, _ = _xid(tmp_path, text)
    assert verdict == "fail" and "-> update_driver" in actual and "-> replace" not in actual, actual


# (a `journalctl -k` of two boots, the first with one Xid, as revR c6: a test input; the Xid's own
# text is the driver's for the code)
_TWO_BOOTS = (
    "Mar 02 09:58:01 gpu01 kernel: Linux version 5.15.0-105-generic #115-Ubuntu SMP\n"
    "Mar 02 09:58:10 gpu01 kernel: NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.90.07\n"
    "Mar 02 10:00:01 gpu01 kernel: NVRM: Xid (PCI:{pci}): {code}, pid=20431, name=python3, {text}\n"
    "-- Boot 5e1c0c3a2f0d4b8e9c6b0a1d2e3f4a5b --\n"
    "Mar 02 10:20:01 gpu01 kernel: Linux version 5.15.0-105-generic #115-Ubuntu SMP\n"
    "Mar 02 10:20:10 gpu01 kernel: NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.90.07\n"
    "Mar 02 10:20:11 gpu01 kernel: nvidia-uvm: Loaded the UVM driver, major device number 509.\n"
)
H100_Q = REAL / "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt"


@pytest.mark.parametrize(
    ("code", "text", "with_q", "verdict"),
    [
        # (a row-remap failure is not undone by the reboot since: it still fails)
        (64, "Row Remapper Error: Failed to remap row", False, "fail"),
        # (unless the GPU's -q beside the log says no remap ever failed: the reboot since did it)
        (64, "Row Remapper Error: Failed to remap row", True, "warn"),
        # (a double-bit error's reset was done by the reboot since: warned, as before)
        (
            48,
            "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer",
            False,
            "warn",
        ),
    ],
)
def test_an_earlier_boots_remap_failure_is_not_cleared_by_the_reboot(
    tmp_path: Path, code: int, text: str, with_q: bool, verdict: str
) -> None:
    """Xid 64 (row-remap failure) logged before the log's last reboot: data/xid.yml
    `cleared_by_reset: false` (NVML: set if a row remapping ever failed; NVIDIA's RMA threshold),
    so it keeps failing (revR F3: it only warned "the reboot did the GPU reset they asked for"),
    unless that GPU's nvidia-smi -q says `Remapping Failure Occurred: No`."""
    files = {"journal.txt": _TWO_BOOTS.format(pci="0000:19:00", code=code, text=text)}
    if with_q:
        assert "Remapping Failure Occurred        : No" in H100_Q.read_text()
        files["nvidia-smi-q.txt"] = H100_Q.read_text()
    _, judged = judged_box(tmp_path, files, "gpu_count: 8\n" if with_q else "gpu_count: 1\n")
    check = judged["gpu_xid"]
    assert check.verdict == verdict, check.actual
    assert f"Xid {code}" in check.actual, check.actual
    assert ("rebooted_since" in check.actual) == (verdict == "warn"), check.actual


def test_the_remap_failure_row_is_not_cleared_by_reset() -> None:
    xids = {row["code"]: row for row in yaml.safe_load(XID_FILE.read_text())["xid"]}
    assert xids[64].get("cleared_by_reset") is False
    assert all(row.get("cleared_by_reset", True) for code, row in xids.items() if code != 64)


D3COLD = (
    REAL / "dmesg__d3cold-not-ready-giving-up-rminitadapter-x3__line-cut-as-stored__gpu-passthrough-39.txt"
)
OFF_BUS = REAL / "dmesg-T__xid-79-unknown-pid__titan-v.txt"


@pytest.mark.parametrize("lost", ["xid79", "d3cold"])
def test_a_gpu_lost_before_its_fwsec_refusal_is_not_blamed_on_the_vbios(tmp_path: Path, lost: str) -> None:
    """The GPU's own loss (Xid 79 `GPU has fallen off the bus`, the kernel's `Unable to change
    power state from D3cold to D0`: real lines, put on the FWSEC fixture's GPU) logged before the
    FWSEC refusal: a GPU off the bus reads a VBIOS table of garbage, so FWSEC is not named as the
    cause and no driver update asked for (revR L2 c17, c18: `-> update_driver`)."""
    if lost == "xid79":
        line = next(ln for ln in OFF_BUS.read_text().split("\n") if ": 79," in ln)
        line = "[   10.800001]" + line.split("]", 1)[1].replace("0000:02:00", "0000:01:00")
    else:
        line = next(ln for ln in D3COLD.read_text().split("\n") if "D3cold to D0" in ln)
    verdict, actual, _ = _xid(tmp_path, f"{line}\n{FWSEC.read_text()}")
    assert verdict == "fail", actual
    assert "FWSEC" not in actual and "-> update_driver" not in actual, actual
