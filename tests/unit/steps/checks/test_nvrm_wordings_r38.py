"""The NVIDIA driver's fault sentences in the wordings real logs hold (measure38c 07, 08):

- a GPU that failed to initialise prints two sentences for one failure, osinit.c's `RmInitAdapter
  failed! (0x30:...)` and, right after it, nv.c's closing line, which older drivers word
  `rm_init_adapter failed for device bearing minor number 0` or `rm_init_adapter(0) failed`: the
  cause logged before the first (`failed to copy vbios to system memory`) is the cause of both,
  one event asking for fix_host_setup. The `... bearing minor number 0` line was a second failure
  nothing explained ("-> replace");
- an author's shortening of the open module's refusal, `NVRM: GPU 0000:00:11.0 not supported by
  open nvidia.ko` (no `is`), is the driver refusing that GPU, which explains the probe failure
  after it: install_driver on 0000:00:11.0, never "a GPU (no PCI address in the message) ... the
  driver failed to probe a GPU -> reboot".

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
G210M = (
    "log-excerpt__dmesg-vbios-copy-failed-rminitadapter-0x30__fence-blank-lines__g210m__ubuntuforums-2009.txt"
)
OPEN_KO = (
    "log-excerpt__guest-dmesg-gpu-not-supported-by-open-nvidia-ko-probe-failed__rtx4060-kata-vm__zh-notes.txt"
)
SHORTENED = "NVRM: GPU 0000:00:11.0 not supported by open nvidia.ko"
H100_GSP = "dmesg__open-nvidia-ko-without-gsp__h100-pcie__driver535.86.06.txt"

RMINIT = "GPU failed to initialise (RmInitAdapter failed)"
VBIOS = "the driver could not copy the GPU's video BIOS"
BEARING_LINE = "rm_init_adapter failed for device bearing minor number 0"


def xid(tmp_path: Path, text: str, name: str = "dmesg.txt") -> tuple[str, str, str]:
    row = next(c for c in checks(tmp_path, name, text) if c.name == "gpu_xid")
    return row.verdict, row.actual, row.detail


def _one_vbios_failure(verdict: str, actual: str, detail: str) -> None:
    assert verdict == "fail"
    assert actual.count(RMINIT) == 1, actual  # (one event: its two sentences counted once)
    assert VBIOS in actual and actual.endswith("-> fix_host_setup"), actual
    assert "-> replace" not in actual and " x2" not in actual
    assert "replace the GPU" not in detail


def test_the_bearing_minor_number_line_closes_the_vbios_failure(tmp_path: Path) -> None:
    """measure38c 08: `failed to copy vbios` -> `RmInitAdapter failed! (0x30:0xffff:660)` ->
    `rm_init_adapter failed for device bearing minor number 0`, within 0.6 ms."""
    _one_vbios_failure(*xid(tmp_path, (REAL / BEARING).read_text()))


@pytest.mark.parametrize(
    "closing",
    [
        "rm_init_adapter failed for device bearing minor number 0",  # (drivers ~340-390)
        "rm_init_adapter failed, device minor number 0",  # (kernel-open/nvidia/nv.c)
        "rm_init_adapter(0) failed",  # (2xx drivers)
    ],
)
def test_each_wording_of_the_closing_line_is_the_same_failure(tmp_path: Path, closing: str) -> None:
    """The family: the real 3xx capture with its closing line in each driver's wording, and
    re-spaced as a syslog page may (two blanks after the tag)."""
    text = (REAL / BEARING).read_text().replace(BEARING_LINE, closing)
    _one_vbios_failure(*xid(tmp_path, text))
    _one_vbios_failure(*xid(tmp_path, text.replace("NVRM: ", "NVRM:  ")))


def test_the_2009_vbios_excerpt_stays_one_failure_now_its_closing_line_is_read(tmp_path: Path) -> None:
    """The g210m capture's `rm_init_adapter(0) failed` (now a sentence of the failure row, as the
    driver's source prints it) is the same failure's closing line."""
    _one_vbios_failure(*xid(tmp_path, (REAL / G210M).read_text()))


def test_an_old_drivers_closing_line_alone_is_a_failure(tmp_path: Path) -> None:
    """`NVRM: rm_init_adapter(0) failed` kept alone (a grep's last line): the GPU failed to
    initialise, never "no Xid"; with no cause beside it, it asks for the vendor."""
    last = (REAL / G210M).read_text().rstrip("\n").splitlines()[-1] + "\n"
    verdict, actual, _ = xid(tmp_path, last)
    assert verdict == "fail"
    assert RMINIT in actual and actual.endswith("-> replace")


def test_two_failures_of_one_form_do_not_share_one_cause(tmp_path: Path) -> None:
    """Two `RmInitAdapter failed!` lines of one form, no address on either, may be two GPUs':
    the VBIOS line before them names the cause of the one next to it only."""
    lines = (REAL / BEARING).read_text().splitlines()
    text = "\n".join([*lines[:2], lines[1].replace("701637", "701700"), ""])
    verdict, actual, _ = xid(tmp_path, text)
    assert verdict == "fail"
    assert actual.count(RMINIT) == 2 and "-> replace" in actual and "-> fix_host_setup" in actual


def test_a_shortened_open_module_refusal_explains_the_probe_failure(tmp_path: Path) -> None:
    """measure38c 07: `NVRM: GPU 0000:00:11.0 not supported by open nvidia.ko`, then `The
    NVIDIA probe routine failed for 1 device(s).`, a Kata guest's dmesg."""
    verdict, actual, detail = xid(tmp_path, (REAL / OPEN_KO).read_text())
    assert verdict == "fail"
    assert actual.startswith("GPU at PCI 0000:00:11.0: "), actual
    assert actual.endswith("the installed driver does not support this GPU -> install_driver"), actual
    assert "no PCI address" not in actual and "reboot" not in actual and "probe" not in actual
    assert "install an NVIDIA driver that supports this GPU" in detail
    assert "the proprietary kernel module for a GPU the open one refuses" in detail


@pytest.mark.parametrize(
    "refusal",
    [
        "NVRM: GPU 0000:00:11.0 is not supported by open nvidia.ko because it does not include the"
        " required GPU System Processor (GSP).",
        # (the driver's continuation, each line with its NVRM: tag)
        "NVRM: GPU 0000:00:11.0 not supported by open\nNVRM: nvidia.ko",
    ],
)
def test_the_open_module_refusal_in_other_wordings(tmp_path: Path, refusal: str) -> None:
    """The family: the real capture's refusal with its `is` and its reason (the driver's words on
    one line), or continued on a line of its own as the driver continues its sentences: the same
    GPU, the same refusal."""
    text = (REAL / OPEN_KO).read_text().replace(SHORTENED, refusal)
    verdict, actual, _ = xid(tmp_path, text)
    assert verdict == "fail"
    assert actual.startswith("GPU at PCI 0000:00:11.0: ") and actual.endswith("-> install_driver"), actual
    assert "reboot" not in actual


def test_the_drivers_own_open_module_refusal_is_read_as_before(tmp_path: Path) -> None:
    """The H100 PCIe's refusal as the driver prints it, over several NVRM lines."""
    verdict, actual, _ = xid(tmp_path, (REAL / H100_GSP).read_text())
    assert verdict == "fail"
    assert actual.startswith("GPU at PCI 0000:01:00.0: ") and actual.endswith("-> install_driver"), actual
