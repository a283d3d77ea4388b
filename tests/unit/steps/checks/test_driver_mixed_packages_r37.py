"""Round 37 (measure37e 09): a table whose banner names two driver releases on a native Linux box
(`NVIDIA-SMI 580.95.05   Driver Version: 590.48.01`: an nvidia-smi of another driver package than
the kernel module) warns in nvidia_driver, never passes silently. The family: every real table of
two releases (575.57.08 over 575.64.03, Colab's 450.36.06 over 418.67); a WSL2 guest's pair (the
Windows driver's two-part version beside an older nvidia-smi: virtualization says so) and the old
layout's tool number (`NVIDIA-SMI 5.319.37` of driver 319.37) are no mixed packages."""

from __future__ import annotations

from pathlib import Path

import pytest

from ...offline_judge import checks

FIXTURES = Path(__file__).parents[3] / "fixtures"
UNSLOTH = (
    FIXTURES
    / "sessions"
    / "page__nvidia-smi__rtx-3070-smi-580.95.05-over-driver-590.48.01-mixed-packages__unsloth-setup-notes.txt"
)


def _driver(tmp_path: Path, path: Path):  # type: ignore[no-untyped-def]
    return {c.name: c for c in checks(tmp_path, path.name, path.read_text())}["nvidia_driver"]


@pytest.mark.parametrize(
    ("path", "tool", "driver"),
    [
        (UNSLOTH, "580.95.05", "590.48.01"),
        (
            FIXTURES
            / "real"
            / "nvidia-smi__geforce-rtx-4070-laptop__1gpu__driver575.64.03__spaces-collapsed.txt",
            "575.57.08",
            "575.64.03",
        ),
    ],
)
def test_two_releases_in_the_banner_warn(tmp_path: Path, path: Path, tool: str, driver: str) -> None:
    check = _driver(tmp_path, path)
    assert check.verdict == "warn", check
    assert f"nvidia-smi {tool} of another release than the driver {driver}" in check.actual
    assert "kernel module" in check.detail


@pytest.mark.parametrize(
    "name",
    [
        "nvidia-smi__geforce-rtx-3070__1gpu__driver531.68__wsl-smi530.47.txt",
        "nvidia-smi__tesla-k20m__2gpu__driver319.37__rst-indented.txt",
        "nvidia-smi__h200__8gpu__driver575.57.08__load.txt",
    ],
)
def test_a_wsl2_pair_the_old_layout_and_one_release_are_no_mixed_packages(tmp_path: Path, name: str) -> None:
    check = _driver(tmp_path, FIXTURES / "real" / name)
    assert "another release" not in check.actual, check


# review revT F3 (a test input): a native Linux R410 box with mixed packages, nvidia-smi 410.48 over
# the 410.79 kernel module: Linux's own versions were two-part up to R435 (410.79, 418.67, 390.x)
_R410 = """+-----------------------------------------------------------------------------+
| NVIDIA-SMI 410.48       Driver Version: 410.79       CUDA Version: 10.0     |
|-------------------------------+----------------------+----------------------+
| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|===============================+======================+======================|
|   0  GeForce GTX 690     Off  | 00000000:04:00.0 N/A |                  N/A |
| 37%   54C    P0    N/A /  N/A |      0MiB /  1999MiB |     N/A      Default |
+-------------------------------+----------------------+----------------------+
"""


@pytest.mark.parametrize(
    ("tool", "driver"), [("410.48", "410.79"), ("418.56", "418.67"), ("390.48", "390.87")]
)
def test_a_two_part_pair_before_r455_is_linuxs_mixed_packages_never_wsl2(
    tmp_path: Path, tool: str, driver: str
) -> None:
    """WSL2's GPU support began with R455: a two-part driver version before it is Linux's own, so
    the pair is mixed packages (nvidia_driver warns), never a WSL2 guest (before, virtualization
    warned "WSL2 guest" and the mixed packages passed unsaid)."""
    text = _R410.replace("410.48", tool).replace("410.79", driver)
    got = {c.name: c for c in checks(tmp_path, "nvidia-smi.txt", text, "gpu_count: 1\n")}
    assert got["nvidia_driver"].verdict == "warn", got["nvidia_driver"]
    assert f"nvidia-smi {tool} of another release than the driver {driver}" in got["nvidia_driver"].actual
    assert "WSL2" not in got["virtualization"].actual, got["virtualization"]
