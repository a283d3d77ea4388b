"""Round 36 (measure36a, b, d, e): sessions and where an output came from: another tool's
command typed without a prompt or after the prompt a read one was shown under (`rdma link`
beside `ibdev2netdev`), ..."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.api.unread_files import unread_rows
from gpuonboard.errors import UsageError

from ..offline_judge import checks, verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
TYPED_RDMA = REAL / "session__typed-no-prompts__ibdev2netdev-6-ports-then-rdma-link__roce-ib-notes.txt"
TILDE_RDMA = REAL / "session__tilde-hash-prompts__lspci-rdma-link-ibstat-grep__spiderpool-zh.txt"


def test_typed_ibdev2netdev_then_rdma_link_reads_ibdev2netdev(tmp_path: Path) -> None:
    """`ibdev2netdev`, a blank line, ` rdma link` and its lines, typed without prompts: the
    ibdev2netdev is read, `rdma link` said not read (was: the whole file refused as "not a
    recognised command output"); rdma_ports stays unverified (ibdev2netdev is a net device's
    state, never the port's)."""
    (tmp_path / "session.txt").write_text(TYPED_RDMA.read_text())
    notes: list[str] = []
    outputs = offline.load_outputs([str(tmp_path / "session.txt")], notes)
    assert "ibdev2netdev" in outputs, outputs.keys()
    assert "line 9 (`rdma link`) is not an output this tool reads" in " ".join(notes), notes
    got = verdicts(tmp_path, "session.txt", TYPED_RDMA.read_text(), 'rdma: "1x100G InfiniBand"\n')
    assert got["rdma_ports"][0] == "unverified", got["rdma_ports"]


def test_tilde_hash_prompts_name_every_command_refused(tmp_path: Path) -> None:
    """`~# lspci -nn | grep Infiniband`, `~# rdma link`, `~# ibstat mlx5_0 | grep "Link layer"`:
    refused (nothing read), its sentence naming each command, `rdma link` too (was: skipped, its
    line read as lspci's output)."""
    (tmp_path / "session.txt").write_text(TILDE_RDMA.read_text())
    with pytest.raises(UsageError) as refused:
        offline.load_outputs([str(tmp_path / "session.txt")], [])
    said = str(refused.value)
    assert "line 1 (`lspci -nn | grep Infiniband`) is not an output this tool reads" in said, said
    assert "line 4 (`rdma link`) is not an output this tool reads" in said, said
    assert "line 7 (`ibstat mlx5_0" in said, said


UNAMES = sorted(REAL.glob("uname-a__*.txt"))


@pytest.mark.parametrize("path", UNAMES, ids=lambda p: p.name[:40])
def test_a_saved_uname_a_is_read_as_the_kernel_release(tmp_path: Path, path: Path) -> None:
    """`$ uname -a` and its line, saved as a file of its own beside the others: read as the
    kernel release (was: refused as no output known, and the Xid, SXid and NVLink rows said it
    could be that output, asking to save it again: a 1-GPU laptop got NVLink rows)."""
    (tmp_path / "uname.txt").write_text(path.read_text())
    outputs = offline.load_outputs([str(tmp_path / "uname.txt")], [])
    release = path.read_text().split("\n")[1].split()[2]
    assert outputs["kernel"].stdout == f"{release}\n", outputs


def test_a_uname_beside_a_table_gives_no_kernel_log_or_nvlink_rows(tmp_path: Path) -> None:
    table = REAL / "nvidia-smi__geforce-rtx-3050-4gb-laptop__1gpu__driver531.88__windows-tcc-wddm.txt"
    (tmp_path / "uname.txt").write_text(UNAMES[-1].read_text())
    (tmp_path / "nvidia-smi.txt").write_text(table.read_text())
    unread: list[Path] = []
    other: list[Path] = []
    raw = offline.load_outputs([str(tmp_path)], [], unread, other)
    assert "kernel" in raw and not unread, unread
    rows = unread_rows(unread, raw, set(), other)
    assert rows == [], rows


QUOTED_QUERY = REAL / "session__bash-gt-prompt__free-h-2t-query-gpu-quoted-name-id0__h100-leiden.txt"


def test_a_quoted_one_field_noheader_query_under_its_command_is_read(tmp_path: Path) -> None:
    """`nvidia-smi --query-gpu "name" --format="noheader,csv" --id=0` printed `NVIDIA H100 80GB
    HBM3`: read as GPU 0's name, a view of the GPU asked for (was: "could not read what it
    printed", then gpu_model "no nvidia-smi output was given" of a session that gave one)."""
    got = checks(tmp_path, "session.txt", QUOTED_QUERY.read_text(), "gpu_model: H100 SXM\nram: 2TB\n")
    model = next(c for c in got if c.name == "gpu_model")
    assert "no nvidia-smi output was given" not in f"{model.actual} {model.detail}", model
    assert model.actual.startswith("1 x NVIDIA H100 80GB HBM3"), model
    assert model.verdict != "fail", model


@pytest.mark.parametrize(
    ("command", "rows"),
    [
        (
            'nvidia-smi --query-gpu "name" --format="noheader,csv"',
            "NVIDIA H100 80GB HBM3\nNVIDIA H100 80GB HBM3\n",
        ),
        ("nvidia-smi --query-gpu='name' --format=csv,noheader", "Tesla T4\n"),
        ("nvidia-smi --query-gpu=name --format=csv,noheader", "NVIDIA A100-SXM4-80GB\n"),
    ],
)
def test_a_one_field_noheader_name_list_counts_its_gpus(command: str, rows: str) -> None:
    """The family: one field a rule reads, its list quoted or not, one GPU a line."""
    from gpuonboard.api.saved_forms import with_query_header
    from gpuonboard.facts.nvidia_smi import parse_any

    text = with_query_header(command, rows)
    assert [g.name for g in parse_any(text).gpus] == rows.strip().split("\n"), text


RESETS = sorted(REAL.glob("nvidia-smi-gpu-reset__*.txt"))


@pytest.mark.parametrize("path", RESETS, ids=lambda p: p.name[:48])
def test_a_gpu_reset_refusal_is_named_alone_and_a_note_beside_others(tmp_path: Path, path: Path) -> None:
    """`The following GPUs could not be reset:` and its GPUs with NVML's refusal (`In use by
    another client`, `Not Supported`), its advice and a poster's `RESET_RC=255`: named as
    nvidia-smi's refusal of a GPU reset (was: "not a recognised command output"); alone it is
    refused, beside an nvidia-smi table it is a note and the table is judged."""
    (tmp_path / "alone").mkdir()
    (tmp_path / "alone" / "reset.txt").write_text(path.read_text())
    with pytest.raises(UsageError) as refused:
        offline.load_outputs([str(tmp_path / "alone" / "reset.txt")], [])
    assert "nvidia-smi's refusal of a GPU reset (`--gpu-reset`, `-r`: `GPU 0000" in str(refused.value)
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "reset.txt").write_text(path.read_text())
    table = REAL / "nvidia-smi__geforce-rtx-3050-4gb-laptop__1gpu__driver531.88__windows-tcc-wddm.txt"
    (tmp_path / "folder" / "nvidia-smi.txt").write_text(table.read_text())
    notes: list[str] = []
    raw = offline.load_outputs([str(tmp_path / "folder")], notes)
    assert "nvidia_smi_table" in raw, raw.keys()
    assert any("nvidia-smi's refusal of a GPU reset" in n for n in notes), notes


GPUSTATS = sorted(REAL.glob("gpustat*__*.txt"))


@pytest.mark.parametrize("path", GPUSTATS, ids=lambda p: p.name[:40])
def test_a_gpustat_output_is_named_as_gpustat(tmp_path: Path, path: Path) -> None:
    """gpustat's `[0] NAME | 40'C, 0 % | 604 / 143771 MB |` lines (its host line and copied
    command above them or not): refused naming gpustat (was: "a CSV without its header row" or
    "not a recognised command output"); a GPU it could not read (`((Unknown Error))`) named."""
    (tmp_path / "gpustat.txt").write_text(path.read_text())
    with pytest.raises(UsageError) as refused:
        offline.load_outputs([str(tmp_path / "gpustat.txt")], [])
    said = str(refused.value)
    assert "gpustat's output (`[0] " in said and "CSV" not in said, said
    assert ("it could not read GPU 0 (`((Unknown Error))`" in said) == (
        "Unknown Error" in path.read_text()
    ), said


@pytest.mark.parametrize("path", GPUSTATS, ids=lambda p: p.name[:40])
def test_a_gpustat_output_beside_a_table_is_a_note(tmp_path: Path, path: Path) -> None:
    """gpustat's output in a folder beside nvidia-smi's table: named in a note and the table
    judged, as a GPU reset's refusal is (revR L3: the whole folder was refused, exit 2)."""
    (tmp_path / "gpustat.txt").write_text(path.read_text())
    table = REAL / "nvidia-smi__geforce-rtx-3050-4gb-laptop__1gpu__driver531.88__windows-tcc-wddm.txt"
    (tmp_path / "nvidia-smi.txt").write_text(table.read_text())
    notes: list[str] = []
    raw = offline.load_outputs([str(tmp_path)], notes)
    assert "nvidia_smi_table" in raw, raw.keys()
    assert any("gpustat's output (`[0] " in n for n in notes), notes


DOCKER_RUN = (
    REAL / "nvidia-smi__rtx3060-laptop-wsl__580.76.04-580.97__docker-run-gpus-all__copied-command"
    "__cut-after-gpu-row__dify-wsl-pt.txt"
)
COMPOSE_RUN = (
    REAL / "nvidia-smi__v100-sxm2__418.40.04__docker-compose-run__copied-command__aws-compose-sample.txt"
)


def _unprompted(text: str) -> str:
    first, rest = text.split("\n", 1)
    return f"{first.split('$ ', 1)[-1]}\n{rest}"


@pytest.mark.parametrize("path", [DOCKER_RUN, COMPOSE_RUN], ids=["docker-run", "compose-run"])
def test_a_container_command_reads_alike_under_a_prompt_or_none(tmp_path: Path, path: Path) -> None:
    """m36a 03 vs 23: `docker run --rm --gpus all IMAGE nvidia-smi` (no prompt) and `$
    docker-compose run tensorflow nvidia-smi`: a container's view either way, its prompt or
    none changes no row (`--gpus all` sees every GPU: its count judged; a compose service
    chooses its GPUs in a file not shown: its count unverified, docs/guides/offline.md)."""
    order = "gpu_count: 1\n"
    bare = _unprompted(path.read_text())
    prompted = f"user@box:~$ {bare}"
    got = [checks(tmp_path, "nvidia-smi.txt", text, order) for text in (bare, prompted)]
    assert [(c.name, c.verdict, c.actual) for c in got[0]] == [(c.name, c.verdict, c.actual) for c in got[1]]
    count = next(c for c in got[0] if c.name == "gpu_count")
    assert ("container it started" in count.actual) == (path is COMPOSE_RUN), count


TABLE_8_H100 = REAL / "nvidia-smi__h100-80gb-hbm3__8gpu__driver550.90.07__no-processes.txt"
XID_79 = REAL / "dmesg-T__xid-79-unknown-pid__titan-v.txt"
# (an `ip -br a` listing: a tool this tool does not read; its lines as a test input)
IP_BR_A = (
    "lo               UNKNOWN        127.0.0.1/8 ::1/128\n"
    "eno1             UP             10.0.3.17/24 fe80::3eec:efff:fe2a:1b10/64\n"
    "eno2             DOWN\n"
    "ibp24s0          UP             192.168.100.17/24\n"
    "ibp64s0          UP             192.168.101.17/24\n"
    "ibp79s0          UP             192.168.102.17/24\n"
    "docker0          DOWN           172.17.0.1/16\n"
)


@pytest.mark.parametrize("other", ["ip -br a", "uname -a", "lsmod | head"])
def test_an_other_tools_section_does_not_swallow_the_xid_lines_below_it(tmp_path: Path, other: str) -> None:
    """`nvidia-smi` typed above its table, a blank line, `ip -br a` typed above its lines, a blank
    line, then the kernel log's `NVRM: Xid ...: 79` lines pasted without their command: the Xid
    79 is judged (gpu_xid FAIL), never dropped as `ip`'s output "not read" (revR F4: gpu_xid not
    judged, every rule passed or unverified, exit 0)."""
    xid = [line for line in XID_79.read_text().splitlines() if "fallen off the bus" in line]
    text = f"nvidia-smi\n{TABLE_8_H100.read_text().rstrip()}\n\n{other}\n{IP_BR_A}\n" + "\n".join(xid) + "\n"
    got = verdicts(tmp_path, "session.txt", text, "gpu_model: H100 SXM\ngpu_count: 8\n")
    assert got["gpu_xid"][0] == "fail", got["gpu_xid"]
    assert "Xid 79" in got["gpu_xid"][1], got["gpu_xid"]


@pytest.mark.parametrize(
    "command",
    [
        "nvidia-smi --query-gpu=name --format=csv,noheader | sort -u",
        "nvidia-smi --query-gpu=name --format=csv,noheader | sort --unique",
        "nvidia-smi --query-gpu=name --format=csv,noheader | sort -ru | cat",
        "nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | sort -u",
    ],
)
def test_a_sort_u_of_the_gpu_list_is_narrowed(tmp_path: Path, command: str) -> None:
    """`nvidia-smi --query-gpu=name --format=csv,noheader | sort -u` printed one line for a box of
    8 alike (the names of the real 8-GPU H100 table): a narrowing filter like `uniq`, so
    gpu_count is unverified, never a hardware claim (revR F2: gpu_count FAIL "7 of the 8 ordered
    GPUs missing"; with two fields, PASS on a count of 1 the box never said)."""
    name = "NVIDIA H100 80GB HBM3"
    assert name in TABLE_8_H100.read_text()
    row = f"{name}, 81559 MiB" if "memory.total" in command else name
    got = verdicts(tmp_path, "session.txt", f"$ {command}\n{row}\n", "gpu_model: H100 SXM\ngpu_count: 8\n")
    assert got["gpu_count"][0] == "unverified", got["gpu_count"]
    assert got["gpu_model"][0] == "unverified", got["gpu_model"]
