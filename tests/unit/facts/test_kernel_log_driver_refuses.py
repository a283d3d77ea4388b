"""A driver that refuses the GPU it finds (the newest generations' commonest failure on a fresh
box): a Blackwell GPU under the proprietary kernel module ("... requires use of the NVIDIA open
kernel modules"), a GPU newer than the driver branch ("... is not supported by the NVIDIA
520.56.06 driver release"), the open module without the GSP firmware, or a GPU an R590+ branch
dropped for its legacy one ("... supported through the NVIDIA 580.xx Legacy drivers ... will
ignore this GPU"). The driver then logs RmInitAdapter failed / probe failed for that GPU, which
gpu_xid read as a GPU to replace (or reboot for): a false hardware claim, the GPU being sound.
Now the refusal is one fault, `install_driver`, and the failures it causes are not listed apart.
Real captures: tests/fixtures/real/SOURCES.md, "A driver that refuses the GPU"."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts.kernel_log import parse_kernel_log
from gpuonboard.steps.checks.xid_rules import rule_xid

REAL = Path(__file__).parents[2] / "fixtures" / "real"
OPEN_REQUIRED = "dmesg-grep-nvrm__requires-open-kernel-modules__rtx5090-laptop__driver580.105.08.txt"
TOO_OLD = "dmesg-H__not-supported-by-driver-release__rtx3050ti-laptop__driver520.56.06.txt"
NO_GSP = "dmesg__open-nvidia-ko-without-gsp__h100-pcie__driver535.86.06.txt"
LEGACY = "dmesg-journalctl__legacy-580xx-driver-ignores-gtx1050__driver595.58.03.txt"
RMINIT = "dmesg-T__rminitadapter-failed-no-xid__titan-v.txt"  # a GPU that failed on its own


def _xid(text: str) -> tuple[str, str, str]:
    log = parse_kernel_log(text)
    check = rule_xid(log.events, True, "", [], log.covers_boot)
    return check.verdict, check.actual, check.detail


@pytest.mark.parametrize(
    ("name", "actual"),
    [
        # 17 boots' worth of "requires use of the NVIDIA open kernel modules", each followed by
        # "RmInitAdapter failed! (0x22:0x56:884)" and "rm_init_adapter failed": it said
        # "GPU failed to initialise (RmInitAdapter failed) x17 -> replace"
        (
            OPEN_REQUIRED,
            "GPU at PCI 0000:02:00.0: driver message (no Xid): the installed driver does not support"
            " this GPU x17 -> install_driver",
        ),
        # "probe routine failed for 1 device(s)" after it: it said "... probe a GPU -> reboot"
        (
            TOO_OLD,
            "GPU at PCI 0000:01:00.0: driver message (no Xid): the installed driver does not support"
            " this GPU -> install_driver",
        ),
        (
            NO_GSP,
            "GPU at PCI 0000:01:00.0: driver message (no Xid): the installed driver does not support"
            " this GPU -> install_driver",
        ),
        # it passed ("no Xid in the kernel log"): the driver ignored the GPU, naming its model only
        (
            LEGACY,
            "a GPU (no PCI address in the message): driver message (no Xid): the installed driver does"
            " not support this GPU -> install_driver",
        ),
    ],
)
def test_a_driver_that_refuses_the_gpu_asks_for_another_driver_not_a_new_gpu(name: str, actual: str) -> None:
    verdict, said, detail = _xid((REAL / name).read_text())
    assert (verdict, said) == ("fail", actual)
    assert detail.startswith("Ask the vendor to install an NVIDIA driver that supports this GPU")
    assert "no fault of the GPU" in detail and "replace" not in detail


def test_another_gpus_own_initialisation_failure_still_fails_as_its_own() -> None:
    """The refusal explains the failures of its GPU only: a GPU at another address that failed to
    initialise (the Titan V's RmInitAdapter at 0000:81:00.0) is still a GPU to replace."""
    text = (REAL / OPEN_REQUIRED).read_text() + (REAL / RMINIT).read_text()
    verdict, said, detail = _xid(text)
    assert verdict == "fail"
    assert said == (
        "GPU at PCI 0000:81:00.0: driver message (no Xid): GPU failed to initialise (RmInitAdapter"
        " failed) x2 -> replace; GPU at PCI 0000:02:00.0: driver message (no Xid): the installed"
        " driver does not support this GPU x17 -> install_driver"
    )
    assert "inspect and replace" in detail
