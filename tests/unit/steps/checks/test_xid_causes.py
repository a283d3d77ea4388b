"""A GPU that failed to initialise (`RmInitAdapter failed!`) beside the line that says why: the
driver's (`failed to copy vbios to system memory`, `(the GPU is likely in a bad state and may need
to be reset)`, `osInitNvMapping: *** Cannot attach gpu`, `... requires use of the NVIDIA open kernel
modules`) or the kernel's (`vmap allocation ... failed: use vmalloc=<size>`, `caller ... [nvidia]
mapping multiple BARs`, `Unable to change power state from D3cold to D0, device inaccessible`).
The failure still fails, but asks for what its cause needs, never "Ask the vendor to inspect and
replace the GPU" (measure35d 04-08, measure35e 20 and 24, measure34d 11 and 23); a failure with no
cause beside it keeps `replace`.

Real captures: tests/fixtures/real/SOURCES.md; the edits are in memory."""

from __future__ import annotations

from pathlib import Path

import pytest

from ...offline_judge import checks

REAL = Path(__file__).parents[3] / "fixtures" / "real"

VMAP = "dmesg-syslog__vmap-allocation-failed-rminitadapter-0x25__evga-geforce-kdm__ubuntuforums-2014.txt"
VBIOS = (
    "log-excerpt__dmesg-vbios-copy-failed-rminitadapter-0x30__fence-blank-lines__g210m__ubuntuforums-2009.txt"
)
VBIOS_MBP = "dmesg__unstamped-irq-line-vbios-copy-failed-rminitadapter__macbookpro81__ubuntuforums.txt"
OPEN = "dmesg__rminitadapter-then-requires-open-kernel-modules-elided__rtx50__nvkvm-docs.txt"
GSP = (
    "log-excerpt__dmesg-gsp-wpr2-up-may-need-reset-hand-wrapped-rminitadapter__rtx5090-egpu__aorus-notes.txt"
)
BARS = "log-excerpt__dmesg-rminitadapter-then-mapping-multiple-bars__esxi-p40-passthrough__k3s-notes.txt"
D3COLD = "dmesg__d3cold-not-ready-giving-up-rminitadapter-x3__line-cut-as-stored__gpu-passthrough-39.txt"
PVGPU = "dmesg__pvgpu-assert-cannot-attach-gpu-rminitadapter-2-gpus__h20-snp-guest__nvtrust-128.txt"

DRIVER, KERNEL = "the driver's line beside it:", "the kernel's line beside it:"
RMINIT = "GPU failed to initialise (RmInitAdapter failed)"


def xid(tmp_path: Path, text: str, name: str = "dmesg.txt") -> tuple[str, str, str]:
    row = next(c for c in checks(tmp_path, name, text) if c.name == "gpu_xid")
    return row.verdict, row.actual, row.detail


@pytest.mark.parametrize(
    ("name", "said", "action"),
    [
        (VMAP, f"{KERNEL} the kernel's vmalloc area is too small", "fix_host_setup"),
        (
            VBIOS,
            f"{DRIVER} the driver could not copy the GPU's video BIOS",
            "fix_host_setup",
        ),
        (
            VBIOS_MBP,
            f"{DRIVER} the driver could not copy the GPU's video BIOS",
            "fix_host_setup",
        ),
        (GSP, f"{DRIVER} the GPU was left in a state the driver cannot boot its GSP", "reset_gpu"),
        (
            BARS,
            f"{KERNEL} the driver's mapping of the GPU's memory spans",
            "fix_bar_mapping",
        ),
        (D3COLD, f"{KERNEL} the GPU did not come back from a low-power state", "reboot"),
        (PVGPU, f"{DRIVER} the driver could not attach the GPU", "fix_host_setup"),
    ],
)
def test_a_failure_beside_its_cause_asks_for_what_the_cause_needs(
    tmp_path: Path, name: str, said: str, action: str
) -> None:
    verdict, actual, detail = xid(tmp_path, (REAL / name).read_text())
    assert verdict == "fail", actual
    assert f"{RMINIT}; {said}" in actual, actual
    assert f"-> {action}" in actual and "-> replace" not in actual, actual
    assert "replace the GPU" not in detail, detail


def test_a_cause_is_not_listed_apart(tmp_path: Path) -> None:
    """The D3cold capture's kernel repeats `Unable to change power state ...` before each try, and
    its `not ready ... giving up` before the first: one failure of the GPU at 01:00.0, listed once."""
    _verdict, actual, _ = xid(tmp_path, (REAL / D3COLD).read_text())
    assert actual.startswith(f"GPU at PCI 0000:01:00.0: driver message (no Xid): {RMINIT};"), actual
    assert actual.count("0000:01:00.0:") == 1, actual


def test_the_elided_open_module_refusal_is_the_drivers_refusal(tmp_path: Path) -> None:
    """measure35d 08: the author elided the sentence's head (`NVRM: ... requires use of the NVIDIA
    open kernel modules.`): still the driver's refusal, not a GPU to replace."""
    verdict, actual, _ = xid(tmp_path, (REAL / OPEN).read_text())
    assert verdict == "fail"
    assert actual.endswith("the installed driver does not support this GPU -> install_driver"), actual


def test_a_failure_without_its_cause_keeps_replace(tmp_path: Path) -> None:
    """Edit: the vbios capture without its `failed to copy vbios` line: nothing says why, the
    vendor explains it (replace)."""
    text = "".join(x for x in (REAL / VBIOS).read_text().splitlines(True) if "vbios" not in x)
    verdict, actual, _ = xid(tmp_path, text)
    assert verdict == "fail" and actual.endswith(f"{RMINIT} -> replace"), actual


def test_a_cause_of_another_gpu_is_not_this_ones(tmp_path: Path) -> None:
    """Edit: the D3cold lines moved to another GPU's address (02:00.0): the RmInitAdapter of
    01:00.0 has no cause of its own beside it; the other GPU's power loss is listed as its own."""
    text = (REAL / D3COLD).read_text().replace("nvidia 0000:01:00.0:", "nvidia 0000:02:00.0:")
    _verdict, actual, _ = xid(tmp_path, text)
    assert f"GPU at PCI 0000:01:00.0: driver message (no Xid): {RMINIT} x3 -> replace" in actual, actual
    assert "GPU at PCI 0000:02:00.0: kernel message (no Xid): the GPU did not come back" in actual, actual


def test_a_vmap_failure_with_no_gpu_failure_is_no_gpu_fault(tmp_path: Path) -> None:
    """Edit: the syslog without its NVRM lines: the kernel's vmalloc warning alone (another
    driver's, as far as the log says) is no GPU fault."""
    text = "".join(x for x in (REAL / VMAP).read_text().splitlines(True) if "NVRM" not in x)
    verdict, actual, _ = xid(tmp_path, text, "syslog.txt")
    assert verdict == "pass", actual


@pytest.mark.parametrize(("name", "pci"), [(VMAP, "0000:02:00.0"), (VBIOS_MBP, "0000:01:00.0")])
def test_an_old_drivers_failure_is_of_the_gpu_it_was_opening(tmp_path: Path, name: str, pci: str) -> None:
    """measure35d 04, 07: old drivers' `RmInitAdapter failed!` names no GPU, but the kernel's
    `nvidia 0000:02:00.0: irq 43 for MSI/MSI-X` right above it is the GPU the driver was opening:
    it read "a GPU (no PCI address in the message)"."""
    _verdict, actual, _ = xid(tmp_path, (REAL / name).read_text())
    assert actual.startswith(
        f"GPU at PCI {pci}: driver message (no Xid; its address tied by the kernel's `nvidia {pci}: irq"
    ), actual
    assert "no PCI address" not in actual, actual


def test_another_gpus_line_between_ties_nothing(tmp_path: Path) -> None:
    """Edit: the MacBook's lines with another GPU's kernel line inserted after the irq line (not
    an opening): the failure is no longer known to be the opened GPU's."""
    lines = (REAL / VBIOS_MBP).read_text().splitlines(True)
    text = "".join([lines[0], "nvidia 0000:03:00.0: enabling device (0000 -> 0003)\n", *lines[1:]])
    _verdict, actual, _ = xid(tmp_path, text)
    assert actual.startswith("a GPU (no PCI address in the message)"), actual


def test_a_cause_binds_past_its_own_gpus_failure_lines_only(tmp_path: Path) -> None:
    """revP F4: the pvgpu capture with GPU 06's own cause lines taken out: GPU 05's cause (no GPU
    named) was reached past GPU 05's failure lines and said of GPU 06 too ("fix_host_setup");
    GPU 06's failure has no cause beside it: replace, as a failure the log does not explain."""
    lines = (REAL / PVGPU).read_text().splitlines(True)
    text = "".join(lines[:8] + lines[12:])  # (GPU 06's four lines before its RmInitAdapter failed!)
    assert "0000:06:00.0: RmInitAdapter failed!" in text and text.count("Cannot attach gpu") == 1
    _verdict, actual, _ = xid(tmp_path, text)
    parts = {part[:12]: part for part in actual.split("GPU at PCI ") if part}
    five, six = parts["0000:05:00.0"], parts["0000:06:00.0"]
    assert "the driver could not attach the GPU" in five and "-> fix_host_setup" in five
    assert "-> replace" in six
    assert "could not attach" not in six
