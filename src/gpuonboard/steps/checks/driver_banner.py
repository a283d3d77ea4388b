"""The two versions a table's banner names, nvidia-smi's own and the driver's (`NVIDIA-SMI
580.95.05   Driver Version: 590.48.01`): a WSL2 guest's pair (the Windows driver's two-part
version beside an older nvidia-smi: gpu_health/guest.py) or a Linux box's mixed driver packages
(an nvidia-smi of another driver release than the kernel module: `nvidia_driver` warns)."""

from __future__ import annotations

from gpuonboard.once import lazy_re

# the table's banner: `NVIDIA-SMI 580.102.01   Driver Version: 581.57` (R610: KMD Version); a
# version at a line's end with digits on the next line is one a page's wrap cut (`535.183` /
# `.06   CUDA Version: 12.2`): no version of its own (round 37)
_WHOLE = r"(?![^\S\n]*\n[^\S\n]*[\d.])"
_BANNER = lazy_re(
    rf"NVIDIA-SMI\s+(\d+\.\d+(?:\.\d+)?){_WHOLE}\s.*?"
    rf"\b(?:Driver|KMD) Version:\s*(\d+\.\d+(?:\.\d+)?)\b{_WHOLE}"
)


def _older(tool: str, driver: str) -> bool:
    """Whether nvidia-smi's version is older than the driver's, of its branch or the one or two
    before (WSL2: 580 beside 581; never the old layout's tool number `5.319.37` of driver 319.37)."""
    have, want = tuple(map(int, tool.split("."))), tuple(map(int, driver.split(".")))
    return want[0] - 2 <= have[0] and have < want


def banner_windows_driver(text: str) -> tuple[str, str] | None:
    """(nvidia-smi's version, the driver's) where a table's banner shows a WSL2 guest's pair: the
    Windows driver's two-part version (`581.57`) of R455 or later (WSL2's GPU support) beside an
    older nvidia-smi of the Linux side (`580.102.01`, `530.47`); None otherwise (Colab's newer tool
    over its driver, a Linux box's mixed packages of three-part versions or of two-part ones before
    R455, `410.48` over `410.79`, one version in both)."""
    for tool, driver in _BANNER.findall(text):
        if (
            driver.count(".") == 1
            and int(driver.split(".")[0]) >= _WSL2_FIRST
            and tool != driver
            and _older(tool, driver)
        ):
            return tool, driver
    return None


# the first driver branch with WSL2 GPU support (R455); Linux's own driver versions were two-part
# too up to R435 (410.79, 418.67, 390.x): a two-part pair before R455 is a Linux box's (revT F3)
_WSL2_FIRST = 455


def mixed_packages(text: str) -> tuple[str, str] | None:
    """(nvidia-smi's version, the driver's) where a table's banner names two releases and they are
    no WSL2 guest's pair (banner_windows_driver) nor the old layout's tool number (`5.319.37` of
    driver 319.37): nvidia-smi of another driver package than the kernel module's (a native box
    upgraded in part, a container's own nvidia-smi); None otherwise."""
    for tool, driver in _BANNER.findall(text):
        if tool == driver or int(tool.split(".")[0]) < 100 or banner_windows_driver(text):
            continue
        return tool, driver
    return None
