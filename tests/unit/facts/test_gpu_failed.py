"""A saved nvidia-smi failure beside another nvidia-smi output of the same box that lists GPUs
(facts/gpu_failed.py): two answers of the box, named as a disagreement, never dropped."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..offline_judge import judged_box

REAL = Path(__file__).parents[2] / "fixtures" / "real"
WSL_FAILED = "nvidia-smi__failed-couldnt-communicate-driver-not-loaded__wsl2__wsl-9134.txt"
WSL_TABLE = "nvidia-smi__geforce-gtx-1080-ti__2gpu__driver517.48__windows__cut-in-gpu1-row__wsl-9134.txt"
GTX690 = "nvidia-smi__geforce-gtx-690__1gpu__driver410.79__power-na__nvidia-docker-523.txt"


def test_a_failed_nvidia_smi_beside_a_table_of_the_same_pc_fails_the_driver(tmp_path: Path) -> None:
    """microsoft/WSL#9134: nvidia-smi in WSL2 failed (`couldn't communicate with the NVIDIA
    driver`), nvidia-smi.exe on its Windows host listed 2 GPUs (cut in GPU 1's row). The failure
    was dropped without a word; both files are named now, the GPU rules unverified."""
    files = {
        "nvidia-smi-wsl.txt": (REAL / WSL_FAILED).read_text(),
        "nvidia-smi-windows.txt": (REAL / WSL_TABLE).read_text(),
    }
    _, checks = judged_box(tmp_path, files, "gpu_model: GTX 1080 Ti\ngpu_count: 2\nvram: 11GB\n")
    driver = checks["nvidia_driver"]
    assert driver.verdict == "fail", driver
    assert (
        "nvidia-smi in nvidia-smi-wsl.txt failed (NVIDIA-SMI has failed because it couldn't" in driver.actual
    )
    assert "the plain `nvidia-smi` table in nvidia-smi-windows.txt listed 2 GPUs" in driver.actual
    assert [checks[r].verdict for r in ("gpu_model", "gpu_count", "vram")] == ["unverified"] * 3


@pytest.mark.parametrize(
    "failure",
    [
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that"
        " the latest NVIDIA driver is installed and running.\n",
        "Failed to initialize NVML: Driver/library version mismatch\n",
        "No devices were found\n",
    ],
)
def test_each_whole_failure_beside_a_whole_table_is_no_pass(tmp_path: Path, failure: str) -> None:
    """nvidia-docker#523's whole GTX 690 table (real) beside a second file holding one of
    nvidia-smi's whole-failure lines (each as nvidia-smi prints it; the file written by the
    test): the table alone passes every GPU rule, and with the failure beside it passed as if the
    failure were not there (exit 0, nvidia_driver pass)."""
    files = {"nvidia-smi.txt": (REAL / GTX690).read_text(), "nvidia-smi-later.txt": failure}
    _, checks = judged_box(tmp_path, files, "gpu_model: GTX 690\ngpu_count: 1\n")
    driver = checks["nvidia_driver"]
    assert driver.verdict == "fail", driver
    assert f"nvidia-smi in nvidia-smi-later.txt failed ({failure.strip()[:60]}" in driver.actual
    assert "the plain `nvidia-smi` table in nvidia-smi.txt listed 1 GPU " in driver.actual
    assert checks["gpu_count"].verdict == "unverified"


def test_a_lost_gpus_line_beside_a_table_stays_that_gpus_fault(tmp_path: Path) -> None:
    """`Unable to determine the device handle for GPU <address>` names one GPU: a fault of the
    set (gpu_unopened), not a failure of nvidia-smi as a whole (the table's GPU 0 at 04:00.0, the
    line naming 05:00.0, written by the test)."""
    files = {
        "nvidia-smi.txt": (REAL / GTX690).read_text(),
        "nvidia-smi-q.txt": "Unable to determine the device handle for GPU 0000:05:00.0: Unknown Error\n",
    }
    _, checks = judged_box(tmp_path, files, "gpu_count: 2\n")
    assert checks["nvidia_driver"].verdict == "pass"
    assert "disagree" not in checks["nvidia_driver"].actual
    assert checks["gpu_health"].verdict == "fail"


H100X8 = "nvidia-smi__h100-80gb-hbm3__8gpu__driver550.90.07.txt"


@pytest.mark.parametrize(
    ("name", "failure"),
    [
        ("nvidia-smi-q-i8.txt", "$ nvidia-smi -q -i 8\nNo devices were found\n"),
        ("nvidia-smi-q-i8.txt", "No devices were found\n"),
        (
            "nvidia-smi-docker.txt",
            "$ docker run --rm --gpus all nvidia/cuda:12.4.0-base-ubuntu22.04 nvidia-smi\n"
            "No devices were found\n",
        ),
        ("nvidia-smi-pod.txt", "$ kubectl exec -it cuda-pod -- nvidia-smi\nNo devices were found\n"),
        (
            "nvidia-smi-q.txt",
            "$ sudo -u nobody nvidia-smi -q\nFailed to initialize NVML: Insufficient Permissions\n",
        ),
        ("nvidia-smi-q-x.txt", "$ nvidia-smi -q -x\nFailed to initialize NVML: Insufficient Permissions\n"),
        ("nvidia-smi-q-x.txt", "Failed to initialize NVML: No permission\n"),
    ],
)
def test_a_calls_own_failure_beside_the_whole_table_is_no_failure_of_the_box(
    tmp_path: Path, name: str, failure: str
) -> None:
    """The real whole 8x H100 table beside a second file written by the test: a call narrowed to
    a GPU the box has not (`-i 8` of 8, said by its copied command or its file's name), one run
    in a container or as another user, or NVML refused for the login's rights. Each is that
    call's own answer: the box passed as 8 GPUs, not NO-GO on a disagreement."""
    files = {"nvidia-smi.txt": (REAL / H100X8).read_text(), name: failure}
    _, checks = judged_box(tmp_path, files, "gpu_count: 8\n")
    assert checks["nvidia_driver"].verdict == "pass", checks["nvidia_driver"]
    assert checks["gpu_count"].verdict == "pass", checks["gpu_count"]


@pytest.mark.parametrize("name", ["nvidia-smi-q-i3.txt", "nvidia-smi-L.txt"])
def test_no_devices_at_a_listed_index_or_of_the_whole_box_stays_a_disagreement(
    tmp_path: Path, name: str
) -> None:
    """The real whole 8x H100 table beside `No devices were found` (written by the test) of a
    file named for GPU 3 (one the table lists) or of `-L`: still two answers that cannot both be
    true of one box."""
    files = {"nvidia-smi.txt": (REAL / H100X8).read_text(), name: "No devices were found\n"}
    _, checks = judged_box(tmp_path, files, "gpu_count: 8\n")
    assert checks["nvidia_driver"].verdict == "fail"
    assert checks["gpu_count"].verdict == "unverified"


RTX4090_Q = "nvidia-smi-q__geforce-rtx-4090__8gpu__driver535.154.05__3-idle-gen1.txt"
MISMATCH = "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 535.154\n"
RELOAD = "user@gpu01:~$ sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && sudo modprobe nvidia\n"


def test_a_failure_fixed_before_the_listing_in_one_session_is_superseded(tmp_path: Path) -> None:
    """One saved session written by the test around the real 8x RTX 4090 `nvidia-smi -q`: a plain
    `nvidia-smi` failing with the driver/library mismatch, the driver reloaded, then the whole
    `-q`. The later answer is the box now: the failure is a note ("failed ... at line 1, answered
    at line 5"), not the NO-GO disagreement it was."""
    session = f"user@gpu01:~$ nvidia-smi\n{MISMATCH}{RELOAD}user@gpu01:~$ nvidia-smi -q\n"
    facts, checks = judged_box(
        tmp_path, {"session.txt": session + (REAL / RTX4090_Q).read_text()}, "gpu_count: 8\n"
    )
    assert checks["nvidia_driver"].verdict == "pass", checks["nvidia_driver"]
    assert checks["gpu_count"].verdict == "pass", checks["gpu_count"]
    assert any("at line 1, answered at line 5" in w for w in facts.warnings), facts.warnings


def test_a_failure_after_the_listing_in_one_session_is_the_box_now(tmp_path: Path) -> None:
    """The same session in the other order (the real `-q` first, then `nvidia-smi` failing with
    the mismatch): the failure is what the box says now, still a failure."""
    session = "user@gpu01:~$ nvidia-smi -q\n" + (REAL / RTX4090_Q).read_text()
    session += f"user@gpu01:~$ nvidia-smi\n{MISMATCH}"
    _, checks = judged_box(tmp_path, {"session.txt": session}, "gpu_count: 8\n")
    assert checks["nvidia_driver"].verdict == "fail", checks["nvidia_driver"]
    assert "Driver/library version mismatch" in checks["nvidia_driver"].actual


def test_a_failure_printed_before_and_after_the_listing_is_the_box_now(tmp_path: Path) -> None:
    """Review MMM: `nvidia-smi -q` failing with the mismatch, then the real 8 x RTX 4090 `-q`
    under another command, then `nvidia-smi -q` failing again with the same text. The session
    reader read the same output twice once, named by its first line, so the failure read as
    one the listing fixed (nvidia_driver pass); of the same answer twice the later is judged:
    the box failed after its listing."""
    failing = f"user@gpu01:~$ nvidia-smi -q\n{MISMATCH}"
    session = failing + "user@gpu01:~$ sudo nvidia-smi -q\n" + (REAL / RTX4090_Q).read_text() + failing
    _, checks = judged_box(tmp_path, {"session.txt": session}, "gpu_count: 8\n")
    assert checks["nvidia_driver"].verdict == "fail", checks["nvidia_driver"]


def test_a_host_id_in_a_files_name_is_no_gpu_index(tmp_path: Path) -> None:
    """Review MMM: `node-id12_nvidia-smi-q.txt` holding only `No devices were found` beside the
    same node's whole 8 x H100 table: `id12` names the host, not nvidia-smi's `-i 12`, so the
    failure is no call's own: the outputs disagree (nvidia_driver fails), never a pass."""
    files = {
        "node-id12_nvidia-smi.txt": (REAL / H100X8).read_text(),
        "node-id12_nvidia-smi-q.txt": "No devices were found\n",
    }
    _, checks = judged_box(tmp_path, files, "gpu_count: 8\n")
    assert checks["nvidia_driver"].verdict == "fail", checks["nvidia_driver"]
