"""revP F5: Xid 63 `... marked for remapping, reset gpu to activate` beside that GPU's nvidia-smi
-q saying its Remapped Rows `Pending : No`: the reset was done since (memory_repair passes
"nothing pending"), so gpu_xid notes the remap done as the catalogue says (ignore: pass);
`Pending : Yes` agrees with the line (reset_gpu); no -q: as the line says."""

from __future__ import annotations

from pathlib import Path

import pytest

from ...offline_judge import judged_box

REAL = Path(__file__).parents[3] / "fixtures" / "real"
H100 = "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt"
LINE = (
    "[Mon Mar  4 11:42:17 2024] NVRM: Xid (PCI:{pci}): 63, pid=1896, Row Remapper: New row"
    " (0x00000012bac1c3e0) marked for remapping, reset gpu to activate.\n"
)


@pytest.mark.parametrize(
    ("name", "pci", "verdict", "said"),
    [
        # (Pending : No, nvidia-smi -q and -q -x)
        (H100, "0000:19:00", "pass", "repair done since"),
        ("nvidia-smi-q-x__h200__1gpu__driver580.159.04.xml", "0000:00:06", "pass", "repair done since"),
        # (Pending : Yes: the reset is still to do)
        ("nvidia-smi-q__a10__1gpu__driver535.129.03.txt", "0000:07:00", "fail", "-> reset_gpu"),
        # (another GPU's -q says nothing of this one)
        (H100, "0000:ee:00", "fail", "-> reset_gpu"),
    ],
)
def test_a_remap_the_gpus_q_says_is_no_longer_pending_is_done(
    tmp_path: Path, name: str, pci: str, verdict: str, said: str
) -> None:
    saved = name.split("__")[0] + Path(name).suffix
    files = {saved: (REAL / name).read_text(), "dmesg.txt": LINE.format(pci=pci)}
    _, judged = judged_box(tmp_path, files, "gpu_count: 1\n")
    check = judged["gpu_xid"]
    assert check.verdict == verdict, check.actual
    assert said in check.actual
