"""A session that shows the host's own output, then enters a container on it with a command that
opens a shell there (`lxc-attach -n container`, `lxc exec c -- bash`, `docker exec -it c bash`,
`pct enter 101`, `lxc shell c`), then runs the same command at the container's prompt
(`[root@container ~]# free -m`): one box, the host's output judged, the container's named as its
view (measure39d 19: refused as "2 hosts (host, container)"). Where the prompts change with no such
command between them, the refusal stays."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.api.shell_opened import opened_shell
from gpuonboard.errors import UsageError

from ..offline_judge import verdicts

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"
LXC_ATTACH = (
    REAL / "session__free-m-host-then-lxc-attach-n-container-free-m-old-procps__lxcfs-187.txt"
).read_text()
ORDER = "ram: 32GB\n"


def _notes(tmp_path: Path, text: str) -> list[str]:
    (tmp_path / "s.txt").write_text(text, encoding="utf-8")
    notes: list[str] = []
    offline.load_outputs([str(tmp_path / "s.txt")], notes)
    return notes


def test_lxc_attach_host_free_judged_container_free_named(tmp_path: Path) -> None:
    """The host's `free -m` (31901 MiB) passes 32 GB; the container's (old procps, the same
    31901: lxcfs not serving it) is named as run in the container `lxc-attach` entered."""
    got = verdicts(tmp_path, "s.txt", LXC_ATTACH, ORDER)
    assert got["ram"][0] == "pass", got["ram"]
    said = " ".join(_notes(tmp_path, LXC_ATTACH))
    assert "`lxc-attach -n container -- free -m` shows the memory of the container" in said, said
    assert "line 8 (`lxc-attach -n container`) opened a shell in the container" in said, said


@pytest.mark.parametrize(
    "opener",
    [
        "docker exec -it container bash",
        "lxc exec container -- bash",
        "lxc shell container",
        "sudo lxc-attach container",
    ],
)
def test_other_openers_are_one_box(tmp_path: Path, opener: str) -> None:
    """The same session with the container entered by another engine's shell: one box."""
    text = LXC_ATTACH.replace("lxc-attach -n container", opener)
    got = verdicts(tmp_path, "s.txt", text, ORDER)
    assert got["ram"][0] == "pass", (opener, got["ram"])
    assert "opened a shell in the container" in " ".join(_notes(tmp_path, text))


def test_prompt_change_without_opener_stays_refused(tmp_path: Path) -> None:
    """The `lxc-attach` line taken out: two hosts' prompts and nothing that links them."""
    text = LXC_ATTACH.replace("[root@host ~]# lxc-attach -n container\n", "")
    (tmp_path / "s.txt").write_text(text)
    with pytest.raises(UsageError, match="2 hosts"):
        offline.load_outputs([str(tmp_path / "s.txt")], [])


def test_another_host_after_the_shell_exited_is_refused(tmp_path: Path) -> None:
    """`exit` typed in the container ends its shell: a third host's prompt after it is no
    container's view, and two hosts' outputs stay refused."""
    host_free = "\n".join(LXC_ATTACH.split("\n")[1:4])
    head = LXC_ATTACH[: LXC_ATTACH.index("[root@container ~]# uptime")]
    text = f"{head}[root@container ~]# exit\n[root@other ~]# free -m\n{host_free}\n"
    (tmp_path / "s.txt").write_text(text)
    with pytest.raises(UsageError, match="2 hosts"):
        offline.load_outputs([str(tmp_path / "s.txt")], [])


@pytest.mark.parametrize(
    ("command", "prefix"),
    [
        ("lxc-attach -n c1", "lxc-attach -n c1 --"),
        ("pct enter 101", "pct exec 101 --"),
        ("incus shell c1", "incus exec c1 --"),
        ("kubectl exec -it pod -- bash", "kubectl exec -it pod --"),
        ("docker run -it --gpus all img /bin/bash -l", "docker run -it --gpus all img"),
        ("lxc-attach -n c1 -- free -m", ""),
        ("docker exec -it c1 bash -c nvidia-smi", ""),
        ("docker exec c1 bash", ""),
    ],
)
def test_opened_shell_reads_the_command_line(command: str, prefix: str) -> None:
    """The opener is read by command_line's grammar: a shell given no command, or an engine's
    own shell (`lxc-attach` with no command, `pct enter`, `lxc shell`)."""
    assert opened_shell(command) == prefix
