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
            " this GPU -> install_driver",  # (the driver's lines only: a grep's, maybe; no word on its start)
        ),
        (
            NO_GSP,
            "GPU at PCI 0000:01:00.0: driver message (no Xid): the installed driver does not support"
            " this GPU -> install_driver",  # (the driver's lines only: a grep's, maybe; no word on its start)
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


# (the review of the refusal's `explains`: a cause without an address matched every GPU, and
# one refusal explained failures of a later driver load or a later boot)
KERN_LOG = "dmesg-syslog__not-supported-by-driver-release-304.88__gt640m-le__kern-log-forum.txt"
DERIVED = Path(__file__).parents[2] / "fixtures" / "derived"
RELOAD = "dmesg-grep-nvrm__open-modules-refusal__then-reload__rminitadapter-alone__derived.txt"
BOOTS = "dmesg-journalctl__open-modules-refusal__reboot-rminitadapter-alone__reboot__derived.txt"
TITAN_V = (
    "GPU at PCI 0000:81:00.0: driver message (no Xid): GPU failed to initialise (RmInitAdapter"
    " failed) x2 -> replace"
)


@pytest.mark.parametrize("refusal", [LEGACY, KERN_LOG])
def test_a_refusal_without_the_gpus_address_hides_no_other_gpus_initialisation_failure(refusal: str) -> None:
    """The R590+ legacy sentence names the GPU's model, never its address (and the driver ignores
    that GPU before it initialises any); a kern.log refusal lost its address where the `)` of
    `(PCI ID: 10de:0fd3)` was read as the message's end. Either hid the Titan V's own
    RmInitAdapter failure at 0000:81:00.0 (the check said install_driver only)."""
    verdict, said, detail = _xid((REAL / refusal).read_text() + (REAL / RMINIT).read_text())
    assert verdict == "fail"
    assert said.startswith(TITAN_V + "; ")
    assert "inspect and replace" in detail


def test_a_kern_log_refusal_keeps_its_gpus_address_over_lines_each_with_its_prefix() -> None:
    """rsyslog's kern.log prints each line of the driver's message with its own prefix (the same
    `[  680.610339]`): the message's `(PCI ID: 10de:0fd3)` is an aside, not its end; the GPU it
    refuses is 0000:01:00.0 (it said "a GPU (no PCI address in the message)"), and the probe
    failure that follows is that refusal's."""
    verdict, said, _ = _xid((REAL / KERN_LOG).read_text())
    assert (verdict, said) == (
        "fail",
        "GPU at PCI 0000:01:00.0: driver message (no Xid): the installed driver does not support"
        " this GPU -> install_driver (the log read starts after boot, so it does not cover the whole boot)",
    )


@pytest.mark.parametrize(
    ("name", "boot"),
    [
        # the driver loaded again (its `NVRM: loading NVIDIA UNIX ...` banner) and failed the GPU
        # without refusing it
        (RELOAD, ""),
        # a refusal in the first boot of three, the GPU failing without it in the second
        (BOOTS, " (logged before the log's last reboot)"),
    ],
)
def test_a_refusal_explains_only_the_failures_of_its_own_driver_load(name: str, boot: str) -> None:
    """A refusal explains the failures of its driver load in its boot, not those of a later load
    or boot, where the GPU failed to initialise with no refusal (it said install_driver only)."""
    verdict, said, _ = _xid((DERIVED / name).read_text())
    assert (verdict, said) == (
        "fail",
        f"GPU at PCI 0000:02:00.0: driver message (no Xid): GPU failed to initialise (RmInitAdapter"
        f" failed){boot} -> replace; GPU at PCI 0000:02:00.0: driver message (no Xid): the installed"
        f" driver does not support this GPU{boot} -> install_driver",
    )


def test_each_driver_load_and_boot_is_counted() -> None:
    """KernelEvent.load: the refusal and its failures of the first load share one; the failures
    after the banner of the next load, or after a reboot, are of another."""
    for name in (RELOAD, BOOTS):
        events = parse_kernel_log((DERIVED / name).read_text()).events
        assert [e.fault for e in events] == ["driver_refuses_gpu"] + ["rm_init_adapter_failed"] * 4
        assert len({e.load for e in events[:3]}) == len({e.load for e in events[3:]}) == 1
        assert events[0].load != events[3].load
    assert parse_kernel_log((DERIVED / BOOTS).read_text()).boots == 3
