"""A file refused among several given files is a note, the others judged, only where nothing it
holds is of a kind another file gives; where it is a note, the rules its kinds feed are
unverified (review revP F1: a session with `-L` showing 4 GPUs then 3 and an Xid 79, refused,
beside a healthy table and a clean dmesg, passed gpu_count and gpu_xid on the others). The
sessions are built from real captures (tests/fixtures/real/SOURCES.md)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.errors import UsageError
from gpuonboard.inventory import OrderSpec

REAL = Path(__file__).parents[2] / "fixtures" / "real"
LIST = REAL / "nvidia-smi-L__a16__4gpu__driver470.129.04__ahv-host.txt"
XID79 = REAL / "dmesg-T__xid-79-unknown-pid__titan-v.txt"
TABLE = REAL / "nvidia-smi__a100-pcie-40gb__2gpu__driver555.42.02.txt"
TOPO = REAL / "nvidia-smi-topo-m__8x-h100-nv18__space-aligned__nccl-note.txt"
CLEAN_LOG = (
    "[Mon Mar  4 09:00:00 2024] Linux version 5.15.0-101-generic (buildd@lcy02-amd64-031) #111-Ubuntu SMP\n"
    "[Mon Mar  4 09:00:05 2024] nvidia: loading out-of-tree module taints kernel.\n"
    "[Mon Mar  4 09:00:05 2024] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  470.129.04\n"
)


def _session(path: Path, xid: bool = True) -> Path:
    """`nvidia-smi -L` (4 GPUs), a grep of the log's Xid 79, then `-L` with a GPU gone: two -L
    outputs of one session, refused ("keep one of them")."""
    listed = LIST.read_text().splitlines()
    xid_line = next(line for line in XID79.read_text().splitlines() if "Xid" in line)
    lines = ["root@gpu01:~# nvidia-smi -L", *listed]
    if xid:
        lines += ["root@gpu01:~# sudo dmesg -T | grep -i xid", xid_line]
    lines += ["root@gpu01:~# nvidia-smi -L", *listed[:2], listed[3], "root@gpu01:~# "]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_refused_session_beside_a_table_of_the_same_gpus_stays_refused(tmp_path: Path) -> None:
    """Its `-L` outputs are GPU lists, as the table is: judged alone, the table passed the count
    the session shows fell from 4 to 3."""
    session = _session(tmp_path / "session.txt", xid=False)
    with pytest.raises(UsageError, match="two `nvidia-smi -L` outputs"):
        offline.load_outputs([str(session), str(TABLE)], [])


def test_a_refused_session_holding_an_xid_beside_a_clean_log_stays_refused(tmp_path: Path) -> None:
    """The session's Xid 79 grep is a kernel log's lines, as the clean dmesg beside it is (no GPU
    output given but the session's): gpu_xid passed "no Xid in the kernel log"."""
    session = _session(tmp_path / "session.txt")
    log = tmp_path / "dmesg.txt"
    log.write_text(CLEAN_LOG)
    with pytest.raises(UsageError, match="two `nvidia-smi -L` outputs"):
        offline.load_outputs([str(session), str(TOPO), str(log)], [])


def test_a_refused_session_beside_other_kinds_is_a_note_and_its_rules_unverified(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Beside a topo only, the session is a note and the topology judged; the Xid rule its grep
    feeds is unverified naming it, although its name (`smi-session.txt`) says an nvidia-smi
    output (the row was silently absent, the note's "unverified" untrue)."""
    session = _session(tmp_path / "smi-session.txt")
    code = offline.run([str(session), str(TOPO)], OrderSpec(interconnect="nvlink"), as_json=True)
    doc = json.loads(capsys.readouterr().out)
    rules = {r["name"]: r for r in doc["rules"]}
    assert code == 0 and rules["interconnect"]["verdict"] == "pass"
    assert rules["gpu_xid"]["verdict"] == "unverified"
    assert str(session) in rules["gpu_xid"]["actual"]
    assert any(n.startswith(f"{session}: line 1 (`nvidia-smi -L`)") for n in doc["notes"])


SESSIONS = Path(__file__).parents[2] / "fixtures" / "sessions"
HOST_THEN_DOCKER = (
    SESSIONS / "transcript__nvidia-smi+docker-run-gpus-all-nvidia-smi-CONTAINER-VIEW-pm-changed"
    "__gtx1650-590.48-tw-notes.txt"
)
SALLOC = (
    SESSIONS / "transcript__salloc+login-nvidia-smi-NO-DEVICES+srun-n1-nvidia-smi-v100-418.67"
    "__hpc-user-guide.txt"
)


def test_a_containers_fault_beside_the_logins_healthy_table_is_never_dropped(tmp_path: Path) -> None:
    """revP F3: the real session (the login's table, then `docker run --gpus all ... nvidia-smi`)
    with the container's GPU row made ERR!: a view may hide GPUs, never invent a fault, so the
    container's fault was dropped as "not the box's"; now the two are refused as rivals."""
    head, docker = HOST_THEN_DOCKER.read_text().split("docker run", 1)
    name = re.search(r"NVIDIA GeForce GTX 1650", docker)
    assert name
    session = tmp_path / "session.txt"
    session.write_text(
        head + "docker run" + docker.replace(name.group(0), "ERR!".ljust(len(name.group(0))), 1)
    )
    with pytest.raises(UsageError, match="cannot both be judged as the box"):
        offline.load_outputs([str(session)], [])


def test_a_containers_healthy_table_still_gives_way_to_the_logins() -> None:
    notes: list[str] = []
    assert "nvidia_smi_table" in offline.load_outputs([str(HOST_THEN_DOCKER)], notes)


def test_salloc_whose_shell_is_on_the_allocated_node_is_said_so(tmp_path: Path) -> None:
    """revP F7: the prompt after salloc names the node salloc allocated (`[user@t016 ~]$`): its
    `No devices were found` was said to be the login node's, another host."""
    session = tmp_path / "s.txt"
    session.write_text(SALLOC.read_text().replace("bash-4.2$ ", "[alice@t016 ~]$ "))
    notes: list[str] = []
    read = offline.load_outputs([str(session)], notes)
    assert "No devices were found" not in read["nvidia_smi_table"].stdout
    assert "on the allocated node itself (t016, as its prompt names it)" in notes[-1]
    assert "login node" not in notes[-1]
