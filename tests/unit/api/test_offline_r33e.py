"""Sentences of round 33's forum captures (measure33e; tests/fixtures/sessions/SOURCES.md and
tests/fixtures/real/SOURCES.md): a program whose argument names nvidia-smi is not nvidia-smi
(07), a pod's log is refused by name and a file read but of no known output is never called
unreadable (27), a Markdown quote's backslash escapes go with the quote (31), and the RAM
shortfall is one arithmetic whatever the output's rounding (26)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.api.unread_files import unread_rows
from gpuonboard.connection.gather import parse_facts
from gpuonboard.errors import UsageError
from gpuonboard.steps.base import Check

from ..offline_judge import details, verdicts

FIXTURES = Path(__file__).parents[2] / "fixtures"
SESSIONS = FIXTURES / "sessions"
REAL = FIXTURES / "real"
GODPLUGIN = SESSIONS / (
    "transcript__docker-exec-go.d.plugin-debug-m-nvidia-smi+docker-exec-nvidia-smi-525-CUT-in-header__netdata-17504.txt"
)
POD_LOG = (
    SESSIONS / "transcript__kubectl-logs-f-pod-vectoradd+nvidia-smi-L-rtxa5000-8q-vgpu__open-webui-5338.txt"
)
DMON = REAL / "nvidia-smi-dmon-d-1-s-pucvmet__4gpu__markdown-quote-escaped-hash__deepspeech-178.txt"
FREE_LOOP = SESSIONS / "transcript__while-date-free-m-loop-lxc-512-swap-1024__lxcfs-416.txt"
TABLE = REAL / "nvidia-smi__h200__1gpu__driver580.159.04.txt"


def _notes(path: Path) -> str:
    notes: list[str] = []
    offline.load_outputs([str(path)], notes)
    return "\n".join(notes)


def _refused(path: Path) -> str:
    with pytest.raises(UsageError) as refused:
        offline.load_outputs([str(path)])
    return str(refused.value)


def test_a_programs_argument_naming_nvidia_smi_is_not_the_command() -> None:
    """netdata's `go.d.plugin -d -m nvidia-smi` (run by `docker exec`): its debug log was said
    "this tool reads go.d.plugin's output but could not read what it printed"."""
    said = _notes(GODPLUGIN)
    assert (
        "line 1 (`docker exec -iu netdata -t netdata /usr/libexec/netdata/plugins.d/go.d.plugin -d -m"
        " nvidia-smi`) is not an output this tool reads" in said
    )
    assert "go.d.plugin's output" not in said


@pytest.mark.parametrize(
    ("command", "said"),
    [
        # (run on the box, no container: the program typed is go.d.plugin still)
        ("/usr/libexec/netdata/plugins.d/go.d.plugin -d -m nvidia-smi", "is not an output this tool reads"),
        # (nvidia-smi itself, in the container or not, is nvidia-smi's)
        ("docker exec -it netdata nvidia-smi", "this tool reads nvidia-smi's output"),
        ("nvidia-smi", "this tool reads nvidia-smi's output"),
        # (a launcher or a wrapper runs the command it is given; an option's value is no command)
        ("srun --gres=gpu:1 nvidia-smi", "this tool reads nvidia-smi's output"),
        ("/root/vgpu_unlock/vgpu_unlock nvidia-smi", "this tool reads nvidia-smi's output"),
        ("mpirun -np 2 nvidia-smi", "this tool reads nvidia-smi's output"),
        ("python3 check.py --cmd nvidia-smi", "is not an output this tool reads"),
        ("docker exec -it netdata /opt/go.d.plugin -m nvidia-smi", "is not an output this tool reads"),
    ],
)
def test_the_program_typed_names_what_could_not_be_read(tmp_path: Path, command: str, said: str) -> None:
    """The plugin's first log lines under each command (derived), then the real table below
    `nvidia-smi`: what the first command printed is said as its program's."""
    log = "\n".join(GODPLUGIN.read_text().split("\n")[5:9])  # (lines of no comma: no CSV)
    path = tmp_path / "session.txt"
    path.write_text(f"$ {command}\n{log}\n$ nvidia-smi\n{TABLE.read_text()}")
    assert said in _notes(path)


def test_a_pods_log_of_other_lines_is_refused_by_name() -> None:
    """`kubectl logs -f gpu-demo -n gpu`: the vectorAdd sample's lines and the pod's -L line,
    refused "not a recognised command output (expected ...)" naming no container's log."""
    said = _refused(POD_LOG)
    assert "(`kubectl logs -f gpu-demo -n gpu` printed a container's log" in said
    assert "`[Vector addition of 50000 elements]`" in said and "nothing of the box" in said
    assert "(expected " not in said


def test_a_file_read_but_of_no_known_output_is_not_called_unreadable(tmp_path: Path) -> None:
    """The pod's log in a folder beside a table: gpu_xid and the NVLink rows said "session.txt
    could not be read (see its note) ... save it again"; it was read: the NVLink rows ask for the
    output (its `-L` line is a line `nvlink -s` prints too), and no Xid row names it (round 37: no
    line of it could be a kernel log's, measure37e 14)."""
    (tmp_path / "session.txt").write_text(POD_LOG.read_text())
    (tmp_path / "nvidia-smi.txt").write_text(TABLE.read_text())
    rows = _rows(tmp_path)
    assert "gpu_xid" not in rows and "nvswitch_sxid" not in rows, rows
    links = rows["nvlink_links"]
    assert links.verdict == "unverified"
    assert (
        links.actual
        == f"not judged: {tmp_path / 'session.txt'} holds no output this tool reads (see its note)"
    )
    assert "save it again" not in links.detail and "could not be read" not in links.actual
    assert "add the box's `nvidia-smi nvlink -s` output" in links.detail


def _rows(folder: Path) -> dict[str, Check]:
    """The rows `invoke facts FOLDER` shows (api/offline.run), by rule."""
    unread: list[Path] = []
    other: list[Path] = []
    raw = offline.load_outputs([str(folder)], [], unread, other)
    checks = offline.judge(parse_facts(raw), None)
    return {c.name: c for c in checks + unread_rows(unread, raw, {c.name for c in checks}, other)}


def test_a_quoted_dmon_sample_with_markdowns_escaped_hash_is_named() -> None:
    """`> \\# gpu   pwr  temp ...`: the quote was undone, its `\\#` not: refused generically."""
    said = _refused(DMON)
    assert (
        "an `nvidia-smi dmon` sample (power, temperature" in said and "of GPU 0, 1, 2, 3 per interval" in said
    )
    assert "not a recognised command output" not in said


def test_the_escapes_go_only_with_a_quote() -> None:
    from gpuonboard.api.saved_text import unquote

    assert unquote("> \\# a \\* b \\_ c \\| d\n> e\n") == "# a * b _ c | d\ne\n"
    # (no quote: a backslash of the output's own, a Windows path's, is kept)
    assert unquote("C:\\_work\\#1\n") == "C:\\_work\\#1\n"


def test_the_shortfall_is_one_arithmetic_whatever_the_rounding(tmp_path: Path) -> None:
    """`free -m`'s 512 (512-513 MiB) on an order of 1 GiB said "511.0 MiB less than ordered"
    beside "512.0 MiB" read; an exact 512 MiB says 512.0: both the order less the most the total
    may be, the rounded one saying so."""
    text = FREE_LOOP.read_text()
    assert verdicts(tmp_path, "session.txt", text, "ram: 1GB")["ram"] == ("fail", "512.0 MiB (536.9 MB)")
    assert details(tmp_path, "session.txt", text, "ram: 1GB")["ram"].startswith(
        "at least 511.0 MiB less than ordered"
        " (the 512.0 MiB read may be up to 1.0 MiB more: the output rounds it),"
    )
    exact = "MemTotal:         524288 kB\nMemFree:          459776 kB\nMemAvailable:     483328 kB\n"
    assert details(tmp_path, "meminfo.txt", exact, "ram: 1GB")["ram"].startswith(
        "512.0 MiB less than ordered, "
    )
