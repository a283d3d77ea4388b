"""The login's own nvidia-smi failure beside a call that ran nvidia-smi elsewhere (in a container,
through a launcher: api/narrowed.py ran_elsewhere) in one saved session: the box's own answer is
never dropped for, nor superseded by, that call's (review revB F1, F1b, F5)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..offline_judge import judged_box

REAL = Path(__file__).parents[2] / "fixtures" / "real"
H100X8 = "nvidia-smi__h100-80gb-hbm3__8gpu__driver550.90.07.txt"
FAILED = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that"
    " the latest NVIDIA driver is installed and running.\n"
)
ELSEWHERE = [
    "srun --gres=gpu:1 nvidia-smi",
    "docker run --rm --gpus all ubuntu nvidia-smi",
    "apptainer exec --nv pytorch.sif nvidia-smi",
]


@pytest.mark.parametrize("command", ELSEWHERE)
@pytest.mark.parametrize("own_first", [True, False])
def test_the_boxs_own_failure_is_kept_beside_the_same_failure_elsewhere(
    tmp_path: Path, command: str, own_first: bool
) -> None:
    """The same failure text from the login's `nvidia-smi` and from a call elsewhere (the session
    written by the test): the box's own is judged whichever came later, failing nvidia_driver
    (the later, the container's, was kept as "the same output" and left it unverified)."""
    own, other = f"$ nvidia-smi\n{FAILED}", f"$ {command}\n{FAILED}"
    files = {"session.txt": own + other if own_first else other + own}
    _, checks = judged_box(tmp_path, files, "gpu_count: 8\n")
    assert checks["nvidia_driver"].verdict == "fail", checks["nvidia_driver"]


@pytest.mark.parametrize(
    "command",
    [
        "nvidia-smi && srun --gres=gpu:8 nvidia-smi -L",
        "nvidia-smi && docker run --rm --gpus all ubuntu nvidia-smi -L",
        "nvidia-smi; srun nvidia-smi",
    ],
)
def test_a_chain_whose_first_call_is_the_logins_own_failure_is_the_boxs(tmp_path: Path, command: str) -> None:
    """`nvidia-smi && srun ... nvidia-smi -L` above a failure (the chain stopped at the login's
    own call): the box's failure, never blamed on the launcher or container later in the line."""
    from gpuonboard.api.narrowed import ran_elsewhere

    assert ran_elsewhere("nvidia_smi", command) == ""
    files = {"session.txt": f"$ {command}\n{FAILED}"}
    _, checks = judged_box(tmp_path, files, "gpu_count: 8\n")
    assert checks["nvidia_driver"].verdict == "fail", checks["nvidia_driver"]


def test_every_call_elsewhere_in_a_chain_still_names_the_launcher() -> None:
    """Where every nvidia-smi of the line ran elsewhere, the first is named."""
    from gpuonboard.api.narrowed import ran_elsewhere

    said = ran_elsewhere("nvidia_smi", "srun -N1 nvidia-smi && docker run --gpus all u nvidia-smi -L")
    assert said == "`srun -N1 nvidia-smi` ran through `srun -N1`"


@pytest.mark.parametrize(
    ("own", "other"),
    [
        ("nvidia-smi", "docker run --rm --gpus all ubuntu nvidia-smi"),
        ("nvidia-smi -L", "srun -p gpu nvidia-smi"),
    ],
)
@pytest.mark.parametrize("own_first", [True, False])
def test_a_table_elsewhere_never_supersedes_the_logins_own_failure(
    tmp_path: Path, own: str, other: str, own_first: bool
) -> None:
    """The login's own failure and the real 8x H100 table printed by a container or a Slurm step:
    the login's own failure is judged (it passed silently; then the whole file was refused, exit
    2, losing every verdict: review revE F5), the other call's table left out."""
    a, b = f"$ {own}\n{FAILED}", f"$ {other}\n{(REAL / H100X8).read_text()}"
    files = {"session.txt": a + b if own_first else b + a}
    _, checks = judged_box(tmp_path, files, "gpu_count: 8\n")
    assert checks["nvidia_driver"].verdict == "fail", checks["nvidia_driver"]
    assert "nvidia-smi failed (NVIDIA-SMI has failed" in checks["nvidia_driver"].actual
    assert checks["gpu_count"].verdict == "unverified", checks["gpu_count"]


def test_a_session_with_a_table_elsewhere_is_judged_whole(tmp_path: Path) -> None:
    """revE d8: the login's nvidia-smi fails, `docker run --gpus all ... nvidia-smi` prints the
    real 8x H100 table, then `free -g`: exit 1, nvidia_driver failing on the login's own failure,
    ram judged, and a note that the container's answer is not the box's (it was refused, exit 2,
    saying to keep an output that was there)."""
    import json
    import subprocess
    import sys

    other = "docker run --rm --gpus all nvidia/cuda:12.0.0-base-ubuntu22.04 nvidia-smi"
    free = (
        "               total        used        free      shared  buff/cache   available\n"
        "Mem:             503          12         480           0          10         488\n"
        "Swap:              0           0           0\n"
    )
    text = f"user@gpu01:~$ nvidia-smi\n{FAILED}\nuser@gpu01:~$ {other}\n{(REAL / H100X8).read_text()}"
    (tmp_path / "session.txt").write_text(f"{text}user@gpu01:~$ free -g\n{free}user@gpu01:~$ \n")
    (tmp_path / "order.yml").write_text("gpu_count: 8\nram: 512GB\n")
    cmd = [
        sys.executable,
        "-c",
        "from gpuonboard.cli import main; main()",
        "facts",
        str(tmp_path / "session.txt"),
    ]
    r = subprocess.run(
        [*cmd, "--order", str(tmp_path / "order.yml"), "--json"], capture_output=True, text=True
    )
    assert r.returncode == 1, r.stderr
    got = json.loads(r.stdout)
    rules = {c["name"]: c for c in got["rules"]}
    assert rules["nvidia_driver"]["verdict"] == "fail", rules["nvidia_driver"]
    assert rules["ram"]["verdict"] == "pass", rules["ram"]
    said = " ".join(got["notes"])
    assert "line 1 (`nvidia-smi`) is the login's own nvidia-smi failing" in said, said
    assert f"(`{other}`) answered elsewhere" in said and "not the box's" in said, said
