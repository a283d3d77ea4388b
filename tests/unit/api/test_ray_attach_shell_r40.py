"""Ray's `ray attach CLUSTER.yaml` opens a shell on the cluster's head node, in Ray's container
where the cluster's YAML names one, as `docker exec -it ray_container bash` does: the commands typed
at that shell's prompt ran there (`ray exec CLUSTER.yaml -- CMD`), and an NVML failure there is that
call's own (api/shell_opened.py). measure40d 07: ray-project/ray #49594, whose `nvidia-smi` at the
`(base) ray@ip-...:~$` prompt failed with `Failed to initialize NVML: Unknown Error`; before,
nvidia_driver failed as the box's."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api.shell_opened import opened_shell

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
RAY = "session__ray-attach-container-nvml-unknown-error-then-ssh-host__a10g__ray-49594.txt"
ORDER = "gpu_model: A10G\ngpu_count: 1\n"
CLUSTER = "/home/henry/projects/AC3_migration/chocolate_ac3/deployment/ray_cluster/test_cluster.yaml"


def test_the_nvml_failure_in_rays_shell_is_that_calls_own(tmp_path: Path) -> None:
    got = verdicts(tmp_path, "s.txt", (REAL / RAY).read_text(), ORDER)
    assert got["nvidia_driver"][0] == "unverified"
    assert "Failed to initialize NVML: Unknown Error" in got["nvidia_driver"][1]
    assert f"`ray exec {CLUSTER} -- nvidia-smi` ran in a container" in got["nvidia_driver"][1]


@pytest.mark.parametrize(
    "opener", [f"ray attach --tmux {CLUSTER}", f"ray attach {CLUSTER} -n gpu-test", "ray attach -n c1 c.yml"]
)
def test_rays_attach_with_its_options_opens_the_shell(tmp_path: Path, opener: str) -> None:
    text = (REAL / RAY).read_text()
    first, rest = text.split("\n", 1)
    typed = first.split("$ ", 1)[0] + "$ " + opener
    got = verdicts(tmp_path, "s.txt", typed + "\n" + rest, ORDER)
    assert got["nvidia_driver"][0] == "unverified"
    assert "ran in a container" in got["nvidia_driver"][1]


@pytest.mark.parametrize(
    ("command", "prefix"),
    [
        ("ray attach cluster.yaml", "ray exec cluster.yaml --"),
        ("ray attach --screen cluster.yml", "ray exec cluster.yml --"),
        ("ray up cluster.yaml", ""),  # (starts a cluster: opens no shell)
        ("ray attach", ""),  # (no cluster named: not read as one)
    ],
)
def test_the_prefix_rays_attach_gives(command: str, prefix: str) -> None:
    assert opened_shell(command) == prefix
