"""df printed inside a container (`kubectl exec POD -- df -h`, `docker exec app df -h`, or typed
at a container's prompt, `root@3f4e5a6b7c8d:/#`, Docker's default host name the container ID):
it shows the container's own root (an overlay) and the mounts given to it, a view of the box's
disks, so data_disk is no pass or fail of the box's disk: unverified, saying whose view it is
(api/narrowed.py container_view and container_prompt_view, as free's and lscpu's container
views are marked). Before, the pod's 15T GPFS file system passed a 10 TB data disk order though
the pod's own volume (a claim on that file system) may be far smaller.

Real capture: IBM/ibm-spectrum-scale-csi#80 (tests/fixtures/real/SOURCES.md), df -h inside a
Kubernetes pod; the copied command and the container prompt above it are test inputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from ...offline_judge import verdicts

REAL = Path(__file__).parents[3] / "fixtures" / "real"
POD_DF = (REAL / "df-h__paths-given__trn2-container-overlay.txt").read_text()
ORDER = "data_disk: {mount: /workspace, min_size: 1TB}\n"


@pytest.mark.parametrize(
    ("prompt", "said"),
    [
        ("user@gpu01:~$ kubectl exec mongo-0 -- df -h", "`kubectl exec mongo-0 -- df -h` shows the disks of"),
        ("user@gpu01:~$ docker exec mongo df -h", "`docker exec mongo df -h` shows the disks of"),
        ("root@3f4e5a6b7c8d:/# df -h", "a container's shell (its host name a container ID)"),
    ],
)
def test_a_container_s_df_is_no_verdict_of_the_box_s_disk(tmp_path: Path, prompt: str, said: str) -> None:
    got = verdicts(tmp_path, "session.txt", f"{prompt}\n{POD_DF}", ORDER)
    assert got["data_disk"][0] == "unverified", got["data_disk"]
    assert said in got["data_disk"][1], got["data_disk"]


def test_the_same_df_typed_in_the_box_s_shell_is_judged(tmp_path: Path) -> None:
    """Control: at the box's own prompt the mount is judged as before (its 2.0T device)."""
    got = verdicts(tmp_path, "session.txt", f"user@gpu01:~$ df -h\n{POD_DF}", ORDER)
    assert got["data_disk"][0] in ("pass", "warn", "fail"), got["data_disk"]


HATLAB_DF = (REAL / "df-h__nvme-3.5t-home2__hatlab-a100.txt").read_text()
MOBY_NONE_ROOT = (REAL / "df-h__busybox-alpine-container-none-root__docker-run__moby-22677.txt").read_text()


def test_a_df_whose_root_is_a_disk_s_partition_is_the_box_s_at_a_hex_prompt(tmp_path: Path) -> None:
    """review revJ F4: a box's host name may look like a container ID (`root@a0369f1c2d3e:~#`),
    but a container's `/` is its engine's (an overlay, `none`), never a disk's partition: a df
    whose `/` is `/dev/nvme0n1p2` ran on the box, and its disks are judged. Before, it was called
    a container's shell and data_disk unverified."""
    order = "data_disk: {mount: /home2, min_size: 1TB}\n"
    got = verdicts(tmp_path, "session.txt", f"root@a0369f1c2d3e:~# df -h\n{HATLAB_DF}", order)
    assert got["data_disk"][0] in ("pass", "warn", "fail"), got["data_disk"]
    assert "container" not in got["data_disk"][1], got["data_disk"]


def test_a_df_whose_root_is_the_engine_s_is_a_container_s_at_a_hex_prompt(tmp_path: Path) -> None:
    """Control: Docker's `none` root (moby#22677) at the same prompt is the container's view."""
    order = "data_disk: {mount: /etc/hosts, min_size: 1TB}\n"
    got = verdicts(tmp_path, "session.txt", f"root@a0369f1c2d3e:/# df -h\n{MOBY_NONE_ROOT}", order)
    assert got["data_disk"][0] == "unverified", got["data_disk"]
    assert "a container's shell" in got["data_disk"][1], got["data_disk"]
