"""Round 37 (measure37a 17): a GPU whose name says vGPU without an NVIDIA vGPU profile's form
(AutoDL's renamed shares `NVIDIA vGPU-48GB`, `NVIDIA vGPU-32GB`) is a vGPU by its name in
`virtualization`, as `NVIDIA L40S-2Q` is (a warn, never "not reported"); and its ECC, read
Disabled, is that of a card of no known family, never "workstation GPU"."""

from __future__ import annotations

from pathlib import Path

import pytest

from ....offline_judge import checks

REAL = Path(__file__).parents[4] / "fixtures" / "real"
AUTODL = REAL / "nvidia-smi__autodl-vgpu-48gb__1gpu__driver570.124.04__ecc-off__fan99__easyedit-env.txt"


@pytest.mark.parametrize(("name", "mib"), [("NVIDIA vGPU-48GB", 49140), ("NVIDIA vGPU-32GB", 32760)])
def test_a_name_that_says_vgpu_warns_virtualization(tmp_path: Path, name: str, mib: int) -> None:
    text = AUTODL.read_text().replace("NVIDIA vGPU-48GB  ", f"{name:<18}")
    text = text.replace("49140MiB", f"{mib}MiB")
    by_rule = {c.name: c for c in checks(tmp_path, "nvidia-smi.txt", text)}
    virt = by_rule["virtualization"]
    assert (virt.verdict, virt.actual) == ("warn", f"vGPU ({name}, by its name)")
    # (no NVIDIA vGPU profile: its licence is not asked of it)
    assert "vgpu_license" not in by_rule


def test_ecc_off_on_a_card_of_no_known_family_is_not_called_a_workstation_gpu(tmp_path: Path) -> None:
    by_rule = {c.name: c for c in checks(tmp_path, AUTODL.name, AUTODL.read_text())}
    ecc = by_rule["ecc_mode"]
    assert ecc.verdict == "warn"
    assert "workstation" not in ecc.actual
    assert ecc.actual == "Disabled on GPU 0 (a GPU with ECC, its model not known)"
