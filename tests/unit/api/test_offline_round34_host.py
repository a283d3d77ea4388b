"""Round 34's host-side captures (measure34b): each output read as what it is, each sentence
true of the output given."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.api import offline
from gpuonboard.api.offline import SHOWN_KINDS
from gpuonboard.api.shown import shown
from gpuonboard.connection.gather import parse_facts
from gpuonboard.steps.base import Check

FIXTURES = Path(__file__).parents[2] / "fixtures"
REAL = FIXTURES / "real"
VERSION = REAL / "nvidia-smi-version__wsl2-driver552.22-nvml550.76-cuda12.4__copied-command__llm-c-388.txt"


def _judge(
    tmp_path: Path, text: str, order: str, name: str = "saved.txt"
) -> tuple[dict[str, Check], list[str]]:
    (tmp_path / name).write_text(text)
    (tmp_path / "order.yml").write_text(order)
    notes: list[str] = []
    raw = offline.load_outputs([str(tmp_path / name)], notes)
    notes += [shown(kind, raw[kind].stdout) for kind in SHOWN_KINDS if kind in raw]
    checks = offline.judge(parse_facts(raw), offline.load_order(str(tmp_path / "order.yml")))
    return {c.name: c for c in checks}, notes


def test_nvidia_smi_version_is_named_and_its_driver_judged(tmp_path: Path) -> None:
    """llm.c#388's whole `nvidia-smi --version` (WSL 2, Windows driver 552.22) was "nvidia-smi
    answered but listed no GPU (output not recognised as any nvidia-smi format)" with advice to
    look for Xid errors, and min_driver unknown (measure34b 14): the command is named, it lists
    no GPU (the table or -q is asked for), and its DRIVER version is judged."""
    rules, _ = _judge(tmp_path, VERSION.read_text(), 'min_driver: "550"\n')
    driver = rules["nvidia_driver"]
    assert driver.verdict == "unverified"
    assert driver.actual == (
        "an `nvidia-smi --version` output, which prints the versions of nvidia-smi, NVML, the driver"
        " and CUDA and no GPU list (driver 552.22, CUDA 12.4)"
    )
    assert "Xid" not in driver.detail and "`nvidia-smi -q`" in driver.detail
    assert (rules["min_driver"].verdict, rules["min_driver"].actual) == (
        "pass",
        "552.22 (`nvidia-smi --version`'s DRIVER version)",
    )
    rules, _ = _judge(tmp_path, VERSION.read_text(), 'min_driver: "560"\n')
    assert rules["min_driver"].verdict == "fail"


def test_a_version_listing_without_the_driver_line_is_not_read_as_one(tmp_path: Path) -> None:
    """Edited in-test: the same lines without `DRIVER version` name no driver: not taken for
    `--version`'s (min_driver unknown, as before)."""
    text = "".join(line for line in VERSION.read_text().splitlines(True) if "DRIVER" not in line)
    rules, _ = _judge(tmp_path, text, 'min_driver: "550"\n')
    assert rules["min_driver"].verdict == "unverified"


RUNJAVA = (
    FIXTURES
    / "sessions"
    / (
        "transcript__cat-cgroup-v1-memsw+cat-memory-limit-in-bytes__root-prompt-container-13.86gib__run-java-sh-32.txt"
    )
)


def test_a_cat_of_the_cgroup_memory_limit_is_read_and_judged(tmp_path: Path) -> None:
    """run-java-sh#32: `cat /sys/fs/cgroup/memory/memory.limit_in_bytes` at a container's root
    prompt (14881390592, 13.86 GiB) was "not an output this tool reads", though the tool reads
    that file in `grep .` form; and ram, even then, said only "no free output was given"
    (measure34b 25). The limit is what this login may use: below a 16 GB order it fails; above a
    13 GB one it is named, the box's RAM not judged by it."""
    rules, notes = _judge(tmp_path, RUNJAVA.read_text(), "ram: 16GB\n")
    assert (rules["ram"].verdict, rules["ram"].actual) == (
        "fail",
        "13.9 GiB usable (cgroup memory limit; no free output was given)",
    )
    assert not any("line 3" in n for n in notes), notes
    rules, _ = _judge(tmp_path, RUNJAVA.read_text(), "ram: 13GB\n")
    assert rules["ram"].verdict == "unverified"
    assert "the cgroup memory limit read is 13.9 GiB" in rules["ram"].actual


OPENIPC = (
    FIXTURES
    / "sessions"
    / ("transcript__busybox-free+cat-proc-meminfo-CUT-in-memtotal__openipc-t31-32mib__majestic-webui-28.txt")
)


def test_a_proc_meminfo_cut_in_its_first_line_is_said_cut_short(tmp_path: Path) -> None:
    """majestic-webui#28: BusyBox free, then `cat /proc/meminfo` cut inside `MemTotal:          33`:
    ram passed on free (right), but the meminfo was "not an output this tool reads", untrue: the
    tool reads /proc/meminfo; this one is cut short (measure34b 16)."""
    rules, notes = _judge(tmp_path, OPENIPC.read_text(), "ram: 32MB\n")
    assert rules["ram"].verdict == "pass"
    (note,) = [n for n in notes if "line 7" in n]
    assert "not an output this tool reads" not in note
    assert "line 7 (`cat /proc/meminfo`) is cut short: it ends at `MemTotal:          33`" in note
