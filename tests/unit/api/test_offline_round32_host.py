"""Round 32 (m32b, host side): real captures never seen before, each read as what it is."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.api.offline import SHOWN_KINDS
from gpuonboard.api.shown import shown
from gpuonboard.connection.gather import parse_facts
from gpuonboard.errors import UsageError
from gpuonboard.steps.base import Check

FIXTURES = Path(__file__).parents[2] / "fixtures"
SESSIONS = FIXTURES / "sessions"
REAL = FIXTURES / "real"
TWICE = "transcript__ibv_devinfo-x2-second-CUT__pod-mlx5_7-port-init__network-operator-1646.txt"


def _judge(
    tmp_path: Path, text: str, order: str, name: str = "session.txt"
) -> tuple[dict[str, Check], list[str]]:
    (tmp_path / name).write_text(text)
    (tmp_path / "order.yml").write_text(order)
    notes: list[str] = []
    raw = offline.load_outputs([str(tmp_path / name)], notes)
    notes += [shown(kind, raw[kind].stdout) for kind in SHOWN_KINDS if kind in raw]  # (as `run` adds them)
    facts = parse_facts(raw)
    checks = offline.judge(facts, offline.load_order(str(tmp_path / "order.yml")))
    return {c.name: c for c in checks}, notes


def test_a_command_run_again_and_cut_short_gives_way_to_its_whole_run(tmp_path: Path) -> None:
    """network-operator#1646: `ibv_devinfo` in a pod (mlx5_7 port 1 PORT_INIT), then the same
    command again, the paste cut after its `board_id`. It was refused, exit 2, "two RDMA port
    listing outputs ... keep one of them". The cut run says nothing the whole one does not (its
    lines are the whole one's as far as they go): the whole run is judged (the port INIT fails
    a 400G order), the cut one named in a note. Edited in-test: a rerun that differs from the
    first (a line changed) is still a rival, cut or not; the cut run first and the whole one
    after it: the whole one judged."""
    text = (SESSIONS / TWICE).read_text()
    order = 'rdma: "1x400G InfiniBand"\n'
    rules, notes = _judge(tmp_path, text, order)
    assert rules["rdma_ports"].verdict == "fail" and "mlx5_7/1 INIT" in rules["rdma_ports"].actual
    (note,) = [n for n in notes if "line 21" in n]
    assert (
        "line 21 (`ibv_devinfo`): the same command as line 1 (`ibv_devinfo`), its output cut short"
        " (mlx5_7 has no port block), the same as that one's as far as it goes; line 1"
        " (`ibv_devinfo`), whole, is judged"
    ) in note
    first, second = text.split("root@test-sr\\ov-podi:/etc/apt# ibv_devinfo\n")[1:]
    prompt = "root@test-sr\\ov-podi:/etc/apt# ibv_devinfo\n"
    changed = prompt + first + prompt + second.replace("28.39.3004", "28.40.1000")
    with pytest.raises(UsageError, match="are two RDMA port listing outputs"):
        _judge(tmp_path, changed, order)
    cut_first = prompt + second + "\n" + prompt + first
    rules, notes = _judge(tmp_path, cut_first, order)
    assert rules["rdma_ports"].verdict == "fail"
    assert any("line 1 (`ibv_devinfo`): the same command as line 11" in n for n in notes), notes


NCCL_TOPO = "nvidia-smi-topo-m__8x-h100-nv18__tab-separated-9-nics__cut-in-nic6-row__nccl-1453.txt"


def test_a_topo_m_given_alone_is_said_as_given(tmp_path: Path) -> None:
    """nccl#1453's 8 x H100 `topo -m` (tab-separated, cut in its NIC rows) given alone: its
    matrix passes an NVLink order, and the GPU rules said "no nvidia-smi output was given",
    untrue. They stay unverified (the matrix names the GPUs, not their model, memory, driver or
    health: no GPU listing) and say what was given: only its `topo -m`, with its 8 GPUs."""
    rules, _ = _judge(
        tmp_path, (REAL / NCCL_TOPO).read_text(), "gpu_count: 8\ninterconnect: nvlink\n", "topo.txt"
    )
    assert rules["interconnect"].verdict == "pass"
    for name in ("gpu_count", "nvidia_driver"):
        rule = rules[name]
        assert (rule.verdict, rule.actual) == (
            "unverified",
            "not judged: no nvidia-smi GPU listing was given (only its `topo -m`)",
        ), rule
        assert rule.detail.startswith(
            "only `nvidia-smi topo -m` was given, whose matrix names 8 GPU(s) (GPU0-GPU7) but not"
            " their model, memory, driver or health: "
        ), rule


KATA_INFO = "docker-info__docker-19.03.11__fedora-32-vm__total-memory-7.768gib__kata-containers-717.txt"
VERSIONS = {
    "docker-version__19.03.4-client-and-engine__copied-command__cut-in-runc__nvidia-docker-1121.txt": (
        "19.03.4",
        "19.03.4",
    ),
    "docker-version__25.0.2-docker-desktop-windows__cut-at-docker-init__for-win-13907.txt": (
        "25.0.2",
        "25.0.2",
    ),
}


def test_docker_info_s_total_memory_is_named_never_judged_as_the_box_s(tmp_path: Path) -> None:
    """kata-containers#717's docker info (Fedora 32 VM, `Total Memory: 7.768GiB`) alone: ram said
    "no free output was given" without a word of it. It is the memory of the machine docker's
    daemon runs on, which may be a VM's or Docker Desktop's, not the box's: named, not judged."""
    rules, notes = _judge(tmp_path, (REAL / KATA_INFO).read_text(), "ram: 8GB\n", "docker-info.txt")
    assert (rules["ram"].verdict, rules["ram"].actual) == (
        "unverified",
        "not judged: no free output was given (the docker info given says `Total Memory: 7.768GiB`:"
        " the memory of the machine docker runs on, which may be a VM's or Docker Desktop's, not the"
        " box's)",
    )
    assert any(n.startswith("docker info: docker 19.03.11; runtimes runc") for n in notes), notes


@pytest.mark.parametrize("name", sorted(VERSIONS))
def test_a_docker_version_is_said_as_what_it_is(tmp_path: Path, name: str) -> None:
    """nvidia-docker#1121's and for-win#13907's `docker version` (read with docker info's kind)
    were said as "docker info: docker (version not read)", untrue: it is a docker version, its
    client and engine versions read, and it lists no runtime."""
    client, engine = VERSIONS[name]
    _, notes = _judge(tmp_path, (REAL / name).read_text(), "ram: 8GB\n", "docker-version.txt")
    assert (
        f"docker version: client {client}, engine {engine}; it lists no runtime (no NVIDIA runtime"
        " read either way, `docker info` lists them): read, not judged (the container steps judge it"
        " on the box)."
    ) in notes, notes


NUMACTL = "proc-meminfo-no-memtotal__hugepages-elided-user-comments__copied-command__numactl-152.txt"
NETDATA = "proc-meminfo-no-memtotal__grep-i-hugep-markdown-bold__copied-command__netdata-3461.txt"
NO_MEMTOTAL = {
    NUMACTL: "HugePages_Total, HugePages_Free, HugePages_Rsvd, HugePages_Surp ...",
    NETDATA: "AnonHugePages, HugePages_Total, HugePages_Free, HugePages_Rsvd ...",
}


@pytest.mark.parametrize("name", sorted(NO_MEMTOTAL))
def test_meminfo_lines_without_memtotal_are_refused_naming_what_is_missing(tmp_path: Path, name: str) -> None:
    """numactl#152's hugepage lines under `cat /proc/meminfo` and a `...`, netdata#3461's `grep -i
    Hugep` (some in Markdown bold): refused as "not a recognised command output (expected ... free
    or /proc/meminfo ...)", while the file is /proc/meminfo lines. The refusal stays (no RAM total)
    and says what is missing: its MemTotal line."""
    with pytest.raises(UsageError) as refused:
        _judge(tmp_path, (REAL / name).read_text(), "ram: 8GB\n", "meminfo.txt")
    assert str(refused.value) == (
        f"{tmp_path / 'meminfo.txt'}: not a recognised command output (/proc/meminfo lines without its"
        f" MemTotal line: {NO_MEMTOTAL[name]}, a grep or a paste that kept only some of them), so no RAM"
        " total can be read: save `cat /proc/meminfo` whole, or `free -k`, of the box."
    )


CENTOS_DF = "transcript__dd+blockdev+df-1K-CUT__centos-7-vm-vda1-boot__netdata-7205.txt"
ODROID = "transcript__uname-HASH-PROMPT+lscpu-CUT__odroid-big-little__util-linux-1207.txt"


def test_a_df_alone_says_no_lsblk_was_given_when_it_cannot_tell_the_disks(tmp_path: Path) -> None:
    """netdata#7205's CentOS 7 VM session (its `df` in 1K blocks, / on an LVM LV, /boot on
    /dev/vda1): data_disk /boot warns, as whether vda1 is another disk than / is not known, but
    said "lsblk does not show both" where no lsblk was given; it says none was given."""
    rules, _ = _judge(tmp_path, (SESSIONS / CENTOS_DF).read_text(), "data_disk: /boot\n")
    rule = rules["data_disk"]
    assert rule.verdict == "warn" and rule.detail == (
        "could not tell whether /dev/vda1 is on another physical disk than /"
        " (/dev/mapper/centos_centos70-root): no lsblk output was given (save `lsblk -J -b` of the box"
        " to tell)"
    ), rule


def test_a_first_line_typed_at_a_prompt_is_no_text_above_one(tmp_path: Path) -> None:
    """util-linux#1207: `# uname -a` (root's prompt, a command not read) above `# lscpu`: the note
    called it "the text above its first prompt (`# uname -a`)", untrue (it is a prompt line); its
    output is read as the kernel release (m36e 09), never said as a text above a prompt. The
    lscpu is judged."""
    rules, notes = _judge(tmp_path, (SESSIONS / ODROID).read_text(), "cpu_cores: 6\n")
    assert rules["cpu_cores"].verdict == "pass", rules["cpu_cores"]
    assert not any("uname" in n for n in notes), notes
    assert "kernel" in offline.load_outputs([str(SESSIONS / ODROID)], [])
