"""Round 37 review revT F1: `Context: default` does not show a `docker info`'s daemon is the box's
own: docker/cli resolves the context `default` whenever `-H`/`--host` or DOCKER_HOST is set. Its
Total Memory is the box's RAM only where no other daemon was asked and the daemon's `Name:` (or its
`Kernel Version:`) is the box's own, as the box's other outputs show it."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..offline_judge import checks, judged_box

REAL = Path(__file__).parents[2] / "fixtures" / "real"
NATIVE = REAL / (
    "docker-info__docker-24.0.7__native-ubuntu-22.04-context-default__a30-box-31.31gib-16cpus"
    "__conda-prompt__hello-k8s.txt"
)
PROMPT = "(base) admini@5002544:~$ docker info"


@pytest.mark.parametrize(
    ("command", "said"),
    [
        ("docker -H ssh://root@build-server info", "-H ssh://root@build-server"),
        ("docker --host=tcp://10.0.0.5:2375 info", "--host=tcp://10.0.0.5:2375"),
        ("DOCKER_HOST=ssh://root@build-server docker info", "DOCKER_HOST=ssh://root@build-server"),
        ("docker --context prod info", "--context prod"),
    ],
)
def test_a_docker_info_of_another_daemon_gives_no_ram(tmp_path: Path, command: str, said: str) -> None:
    """Test inputs made from the native capture, its command asking another daemon (the review's
    `admini@laptop:~$ docker -H ssh://root@build-server info`): it still says `Context: default`,
    but its Total Memory is that daemon's machine's: ram unverified, the command named. Before,
    ram passed on it."""
    text = NATIVE.read_text().replace(PROMPT, f"admini@laptop:~$ {command}")
    got = {c.name: c for c in checks(tmp_path, "docker-info.txt", text, "ram: 32GB\n")}
    assert got["ram"].verdict == "unverified", got["ram"]
    assert f"asked the daemon `{said}` names, not the box's own" in got["ram"].actual, got["ram"].actual


def test_a_daemon_whose_name_is_not_the_prompts_host_gives_no_ram(tmp_path: Path) -> None:
    """The same output typed at another host's prompt (`admini@laptop`, its daemon `Name: 5002544`),
    nothing else of the box given: the daemon is not shown to be the box's: unverified, saying why."""
    text = NATIVE.read_text().replace(PROMPT, "admini@laptop:~$ docker info")
    got = {c.name: c for c in checks(tmp_path, "docker-info.txt", text, "ram: 32GB\n")}
    assert got["ram"].verdict == "unverified", got["ram"]
    assert "its `Name: 5002544` is no host name the box's other outputs show" in got["ram"].actual


def test_a_daemon_without_a_prompt_is_matched_by_the_boxs_uname(tmp_path: Path) -> None:
    """No prompt line above it: the box's `uname -a` beside it names the same node (or kernel):
    judged; a `uname -a` of another node and kernel: unverified."""
    text = NATIVE.read_text().replace(PROMPT + "\n", "")
    uname = "Linux 5002544 5.15.0-125-generic #135-Ubuntu SMP Fri Sep 27 13:53:58 UTC 2024 x86_64 GNU/Linux\n"
    _, got = judged_box(tmp_path / "a", {"docker-info.txt": text, "uname.txt": uname}, "ram: 32GB\n")
    assert got["ram"].verdict == "pass", got["ram"]
    other = uname.replace("5002544", "gpu-07").replace("5.15.0-125", "6.8.0-45")
    _, got = judged_box(tmp_path / "b", {"docker-info.txt": text, "uname.txt": other}, "ram: 32GB\n")
    assert got["ram"].verdict == "unverified", got["ram"]
    kernel_only = uname.replace("5002544", "gpu-07")
    _, got = judged_box(tmp_path / "c", {"docker-info.txt": text, "uname.txt": kernel_only}, "ram: 32GB\n")
    assert got["ram"].verdict == "pass", got["ram"]
    assert "`Kernel Version: 5.15.0-125-generic`, the box's `uname -r`" in got["ram"].actual
