"""A tool's output a page glued onto its copied command line (api/glued.py): read below the
command where df's or free's whole header follows it, on its own or inside a saved session; a
line holding several commands' outputs is refused, never read as one of them."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.errors import UsageError

from ..offline_judge import verdicts

FIXTURES = Path(__file__).parents[2] / "fixtures"
REAL = FIXTURES / "real"
MEDGEMMA = (
    FIXTURES / "sessions" / "transcript__nvidia-smi-NOTFOUND+free-g+df-h+curl__cpu-box-medgemma-notes.txt"
)
FREE = "free-h__ubuntu-18.04-vm.txt"
DF = "df-h__centos-7.7-vm__lvm-root.txt"
SEVERAL = (
    "several commands' outputs share one line (a page that lost its line ends), which cannot be"
    " told apart: put each command and its output on lines of their own, as the terminal printed them"
)
ORDER = "ram: 4GB\ndata_disk: {mount: /boot, min_size: 2G}"


def _one_line(text: str) -> str:
    """The text's lines on one line, its runs of blanks as one, as a page that lost its line
    ends shows them."""
    return " ".join(text.split())


def _refusal(tmp_path: Path, text: str) -> str:
    """The refusal of `text` saved alone."""
    path = tmp_path / "saved.txt"
    path.write_text(text)
    with pytest.raises(UsageError) as refused:
        offline.load_outputs([str(path)])
    return str(refused.value)


def test_a_session_run_together_on_one_line_is_refused(tmp_path: Path) -> None:
    """The real medgemma session (`$ nvidia-smi` not found, `$ free -g`, `$ df -h ...`, `$ curl
    ...`) with its line ends taken out in the test: free's header was taken as the start of one
    output, everything before it (nvidia-smi's "command not found", which fails the driver rule)
    dropped as the command and df's row read as part of free; ram was judged, nvidia_driver said
    "no nvidia-smi output was given". Several commands' outputs on one line are refused."""
    text = _one_line(MEDGEMMA.read_text()) + "\n"
    assert _refusal(tmp_path, text) == f"{tmp_path / 'saved.txt'}: {SEVERAL}."


def test_two_real_outputs_glued_onto_their_prompts_on_one_line_are_refused(tmp_path: Path) -> None:
    """Real `df -h` and `free -h` outputs, each glued onto its prompt line and both on one line
    (the test's edit): free's rows were read and df's lost ("no df output was given", though
    its rows were there)."""
    df, free = (_one_line((REAL / name).read_text()) for name in (DF, FREE))
    text = f"root@h:~# df -h {df} root@h:~# free -h {free}\n"
    assert _refusal(tmp_path, text).endswith(f": {SEVERAL}.")


def test_a_glued_output_in_a_session_is_its_commands_output(tmp_path: Path) -> None:
    """The real medgemma session with free's output glued onto its `$ free -g` line (the test's
    edit): the line was taken as a command that printed nothing, and ram said "no free output
    was given" of a session that holds one. It judges as the session as saved."""
    real = MEDGEMMA.read_text()
    header = real.index("\n               total")
    glued = (
        real[:header]
        + " "
        + _one_line(real[header : real.index("\n\n$ df")])
        + real[real.index("\n\n$ df") :]
    )
    assert "$ free -g total used free shared buff/cache available Mem: 15" in glued
    order = "ram: 16GB\nmin_driver: '535'"
    assert verdicts(tmp_path, "session.txt", glued, order) == verdicts(tmp_path, "session.txt", real, order)
    assert verdicts(tmp_path, "session.txt", glued, order)["nvidia_driver"][0] == "fail"


@pytest.mark.parametrize("first", ["free", "df"])
def test_a_glued_output_beside_another_section_keeps_both(tmp_path: Path, first: str) -> None:
    """Real `free -h` glued onto its `$ free -h` line, then a real `df -h` under its own prompt
    (in either order; the test's session): the glued line read as a command that printed
    nothing, so the file was one output, and the two were refused or one lost."""
    free = f"$ free -h {_one_line((REAL / FREE).read_text())}\n"
    df = f"$ df -h\n{(REAL / DF).read_text()}"
    session = free + df if first == "free" else df + free
    apart = f"$ free -h\n{(REAL / FREE).read_text()}$ df -h\n{(REAL / DF).read_text()}"
    got = verdicts(tmp_path, "session.txt", session, ORDER)
    assert got == verdicts(tmp_path, "session.txt", apart, ORDER)
    assert (got["ram"][0], got["data_disk"][0]) == ("fail", "fail")


@pytest.mark.parametrize(
    ("name", "command", "order"),
    [
        ("df-h__zh-cn__vda1-80g-root_vdb1-500g-data.txt", "[root@h ~]# df -h", "data_disk: /data 400G"),
        ("free-h__zh-cn__3.8gi.txt", "[root@h ~]# free -h", "ram: 4GB"),
        ("df-P-B1__h200-vm.txt", "root@h:~# df -P -B1", "data_disk: /dev/shm 100G"),
    ],
)
def test_a_translated_or_block_size_header_glued_onto_its_prompt_is_read(
    tmp_path: Path, name: str, command: str, order: str
) -> None:
    """Real zh_CN `df -h` (`文件系统 容量 ... 挂载点`) and `free -h` (`总计 ... 内存：`), and a
    real `df -P -B1` (`1-blocks`), each glued onto its prompt line, all on one line (the test's
    edit): refused as "a copied command line with no output below it", though the readers know
    these headers. They judge as the outputs saved alone."""
    real = (REAL / name).read_text()
    glued = f"{command} {_one_line(real)}\n"
    assert verdicts(tmp_path, "out.txt", glued, order) == verdicts(tmp_path, "out.txt", real, order)
    rule = order.split(":", 1)[0]
    assert verdicts(tmp_path, "out.txt", glued, order)[rule][0] != "unverified"


def test_an_argument_that_looks_like_a_header_is_the_commands(tmp_path: Path) -> None:
    """`$ df -h Filesystem Size Used` (its arguments df's header words, as a page shows a
    command) above a real `df -h` output on its own lines: the words were taken for a glued
    header and the file refused as "2 df outputs". Only a header that runs on to df's `Mounted
    on` is glued output; the real output below is read."""
    real = (REAL / DF).read_text()
    text = f"$ df -h Filesystem Size Used\n{real}"
    got = verdicts(tmp_path, "df.txt", text, "data_disk: {mount: /boot, min_size: 1G}")
    assert got["data_disk"][0] != "unverified", got["data_disk"]


def test_a_session_line_holding_several_outputs_refuses_the_session(tmp_path: Path) -> None:
    """The real medgemma session with its first two commands and their outputs run together on
    its first line (the test's edit), the rest as saved: nvidia-smi's "command not found" (a
    failed driver rule) and free's rows were on a line read as a command, and the session was
    judged without them. A session holding such a line is refused, naming it."""
    real = MEDGEMMA.read_text()
    end = real.index("\n\n$ df")
    text = _one_line(real[:end]) + real[end:]
    assert _refusal(tmp_path, text) == (
        f"{tmp_path / 'saved.txt'}: line 1 (`nvidia-smi bash: nvidia-smi: command not found $ free -g`):"
        f" {SEVERAL}."
    )
