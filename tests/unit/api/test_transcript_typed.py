"""Commands typed without a prompt, each above its output, on a page whose text read as one
output would hold two outputs of one kind (api/transcript.py prompted, api/offline.py
_typed_session): read as the saved session it is, never refused as "two boxes' in one file"."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.errors import UsageError

from ..offline_judge import judged_box

REAL = Path(__file__).parents[2] / "fixtures" / "real"
CRACKQ = (
    REAL.parent
    / "sessions"
    / (
        "page__docker-version+typed-nvidia-smi-CUT+typed-docker-exec-nvidia-smi-CUT+runtime-versions-NO-PROMPTS__crackq-43.txt"
    )
)
GTX690 = "nvidia-smi__geforce-gtx-690__1gpu__driver410.79__power-na__nvidia-docker-523.txt"
H100X8 = "nvidia-smi__h100-80gb-hbm3__8gpu__driver550.90.07.txt"


def test_the_logins_and_a_containers_typed_nvidia_smi_are_one_box(tmp_path: Path) -> None:
    """f0cker/crackq#43 (real): `nvidia-smi` (535.129.03, CUDA 12.2) and `sudo docker exec -it
    crackq nvidia-smi` (the same driver, CUDA 12.3), typed with no prompt under the poster's
    labels, each table cut after its banner. It was refused (exit 2) as "2 nvidia-smi outputs
    (one pasted twice, or two boxes' in one file)"; the host's banner is judged now, the
    container's output a view of it, the GPU rules unverified (no GPU row)."""
    notes: list[str] = []
    raw = offline.load_outputs([str(CRACKQ)], notes)
    assert "line 14 (`sudo docker exec -it crackq nvidia-smi`)" in " ".join(notes)
    assert "a container's view of its GPUs" in " ".join(notes)
    files = {"session.txt": CRACKQ.read_text()}
    _, checks = judged_box(tmp_path, files, "gpu_count: 1\nmin_driver: '535'\n")
    assert checks["nvidia_driver"].actual.startswith("driver 535.129.03, CUDA 12.2;"), checks["nvidia_driver"]
    assert checks["gpu_count"].verdict == "unverified"
    assert sorted(k for k in raw if k.startswith("nvidia_smi")) == ["nvidia_smi_table"]


def test_two_boxes_typed_tables_stay_refused(tmp_path: Path) -> None:
    """Two real whole tables of two boxes (a GTX 690's and an 8 x H100's), each typed under a
    bare `nvidia-smi` (the page written by the test): read as a session now, whose two
    different outputs of one kind are still refused, naming both lines (before: "this file holds
    2 nvidia-smi outputs", no line named)."""
    text = f"nvidia-smi\n{(REAL / GTX690).read_text()}\nnvidia-smi\n{(REAL / H100X8).read_text()}"
    saved = tmp_path / "page.txt"
    saved.write_text(text)
    with pytest.raises(UsageError, match=r"line 1 \(`nvidia-smi`\) and line 19 \(`nvidia-smi`\)"):
        offline.load_outputs([str(saved)])


def test_one_typed_command_is_no_session(tmp_path: Path) -> None:
    """One typed command above its output stays that output's copied first line, as before."""
    saved = tmp_path / "page.txt"
    saved.write_text(f"nvidia-smi\n{(REAL / GTX690).read_text()}")
    assert sorted(offline.load_outputs([str(saved)])) == ["nvidia_smi_table"]
