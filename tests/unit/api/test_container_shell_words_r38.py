"""A session typed in a container's shell that an engine opened with its own warning above it
(`pouch run -it -m 123m --enableLxcfs alpine sh`, then `WARNING: Current Kernel does not support
memory swap ...`; api/shell_opened.py): the commands typed at `/ #` are that container's views,
never "two boxes" (measure38d 15), and a /proc/meminfo is not called a `free` output."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.errors import UsageError

from ..offline_judge import verdicts

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"
POUCH_15 = "session__pouch-run-it-m-123m-lxcfs-sh__meminfo-then-busybox-free__two-containers__pouch-2768.txt"
FREE_M = (REAL / "free-m__devcontainer-110gib__vit-notes.txt").read_text(encoding="utf-8")


def _refusal(tmp_path: Path, text: str) -> str:
    (tmp_path / "s.txt").write_text(text, encoding="utf-8")
    with pytest.raises(UsageError) as err:
        offline.load_outputs([str(tmp_path / "s.txt")], [])
    return str(err.value)


@pytest.mark.parametrize("engine", ["pouch", "docker"])
def test_the_containers_views_are_named_never_two_boxes(tmp_path: Path, engine: str) -> None:
    text = (REAL / POUCH_15).read_text(encoding="utf-8").replace("pouch run", f"{engine} run")
    said = _refusal(tmp_path, text)
    assert "two boxes" not in said and "`free` outputs" not in said, said
    assert (
        f"`{engine} run -it -m 123m --enableLxcfs alpine cat /proc/meminfo` shows the memory of a container"
        in said
    )


def test_a_shell_opened_below_the_engines_pull_lines_is_the_containers(tmp_path: Path) -> None:
    pulled = (
        "root@ubuntu:~# docker run -it --rm -m 2g ubuntu:22.04 bash\n"
        "Unable to find image 'ubuntu:22.04' locally\n22.04: Pulling from library/ubuntu\n"
        "6414378b6477: Pull complete\n"
        "Digest: sha256:0bced47fffa3361afa981854fcabcd4577cd43cebbb808cea2b1f33a3dd7f508\n"
        "Status: Downloaded newer image for ubuntu:22.04\n"
        f"/ # free -m\n{FREE_M}"
    )
    got = verdicts(tmp_path, "s.txt", pulled, "ram: 200GB\n")
    assert got["ram"][0] == "unverified" and "a container it started" in got["ram"][1], got["ram"]
