"""A saved terminal session (several commands under their prompt lines in one file) is read as
the outputs it holds, each judged as if saved alone (api/transcript.py).

The class test puts every real capture that is read alone (tests/fixtures/real, .../public) into a
session after another real output, each under a prompt line, and compares the verdicts with those
of the two files given apart."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuonboard.api import offline, paste, transcript
from gpuonboard.api.collect_env import looks_like_collect_env
from gpuonboard.connection.gather import parse_facts
from gpuonboard.errors import UsageError
from gpuonboard.inventory import OrderSpec

from ..offline_judge import verdicts
from .test_offline_refusals_r13 import refused

FIXTURES = Path(__file__).parents[2] / "fixtures"
REAL = FIXTURES / "real"
LSCPU = REAL / "lscpu__intel-xeon-16vcpu__h200-vm.txt"
FREE = REAL / "free-k__h200-vm__procps-4.0.2.txt"
TABLE = REAL / "nvidia-smi__h200__1gpu__driver580.159.04.txt"
DF = REAL / "df-P-B1__h200-vm.txt"
ORDER = OrderSpec(gpu_model="H200", gpu_count=1, cpu_cores=8, ram_bytes=128 * 2**30, min_driver="535")


def _judged(paths: list[Path], order: OrderSpec | None = ORDER) -> list[tuple[str, str, str, str]]:
    facts = parse_facts(offline.load_outputs([str(p) for p in paths]))
    return [(c.name, c.verdict, c.actual, c.detail) for c in offline.judge(facts, order)]


def read_session(path: Path) -> tuple[list[str], list[str]]:
    """(the kinds of output read from a saved file, the notes said of it)."""
    notes: list[str] = []
    return sorted(offline.load_outputs([str(path)], notes)), notes


def _readable_alone() -> list[Path]:
    out = []
    for folder in (REAL, FIXTURES / "public"):
        for path in sorted(folder.iterdir()):
            if path.name == "SOURCES.md" or path.is_dir():
                continue
            try:
                kinds = offline.load_outputs([str(path)])
            except UsageError:
                continue
            # (a bare number is nproc by its file's name only: under `./saved-output.sh` in a
            # session it is no output, whatever count it says)
            both = "lscpu" in kinds and "free" in kinds
            # (a collect_env report alone is read as the several outputs it holds; under a prompt
            # in a session it is read as one output, as before: api/collect_env.py)
            both = both or looks_like_collect_env(path.read_text(errors="replace"))
            # (a paste's stray backtick before its first line is the file's, no output's in a session;
            # a script's block of several tools' outputs under its own headings is cut at them only
            # where it is a file of its own: api/test_script_blocks_r34.py)
            both = both or "stray-leading-backtick" in path.name or path.name.startswith("script-blocks__")
            # (round 35: a table saved under its own `kubectl exec POD --` line, one a doc commented
            # out line by line, a README's excerpt of several outputs: each tells where it came from
            # by its own first lines, which a prompt typed above it makes another command's)
            both = both or any(
                w in path.name for w in ("kubectl-exec-pod", "hash-commented", "readme-excerpt__")
            )
            # (round 36: a grep's lines under the poster's comments and its copied command: alone,
            # the command narrows the log; under another prompt's `./saved-output.sh` the session
            # reader does not read a bare command line inside a section, so the grep goes unsaid)
            both = both or "copied-command-under-poster-comments" in path.name
            # (round 37: a --query-gpu CSV among a README's or notes' prose, read alone by the
            # prose reader, capped; under a prompt it is one section of a session, where a
            # section's own lines are its output: api/test_offline_csv_prose_r37.py)
            both = both or "prose" in path.name
            # (round 36: a capture saved under its own copied command that narrows or places it,
            # `nvidia-smi | grep Driver`, `docker run --gpus all ... nvidia-smi`: a prompt typed
            # above makes that line part of another section, judged apart in
            # steps/checks/test_driver_grep_banner_r36.py and api/test_sessions_r36.py)
            both = both or any(
                w in path.name for w in ("nvidia-smi-grep-driver__", "docker-run-gpus-all__copied-command")
            )
            # (round 38: likewise a whole `-q` saved under its own bare `nvidia-smi -i 0 -q` line, a
            # view of GPU 0 of 2: under another prompt that line is no command, the view unsaid)
            both = both or any("shows only the GPUs it asked for" in out.partial for out in kinds.values())
            # (round 39: a table under its own label line naming its command in inline code, an
            # issue template's `Output from running ...: `kubectl exec ... -- nvidia-smi``: the
            # container's view alone; under another prompt that line is no command, the view unsaid)
            both = both or any("of the container it ran in" in out.partial for out in kinds.values())
            # (round 40: a launcher's own line glued after a fence and a prompt's counter,
            # "```[0741] cuser1@cgpu-1 ~$ singularity exec ... nvidia-smi": its job's view alone)
            both = both or any(
                w in out.partial
                for out in kinds.values()
                for w in ("its launcher gave", "container runtime was given")
            )
            # (a saved session whose own prompts name its host, `jesse@Jesse:~$`: under gpu-1's
            # prompt it is two boxes' commands, refused as such)
            parts = transcript.sections(paste.normalise(path.read_text(errors="replace")))
            both = both or any(part.host for part in parts or [])
            # (a capture saved under its own one prompt naming its host, `root@gl8:...# ibv_devinfo`,
            # a conda env's `(base) admini@5002544:~$ docker info` too; round 38: a bracketed
            # `[stephen@Hunt ~/src/lscpu]$ lscpu`, a quoted `> [user@ftp-a64n97 scripts]$ srun ...`)
            both = both or (
                re.match(
                    # (round 40: a fence's line above it, sonar#247's "```" then `[root@gpu-10 ~]#`)
                    r"(?:```\n)?(?:> )?(?:\(\S+\) )?(?:\[\S+@[\w.-]+ [^\]\n]*\]|\S+@[\w.-]+:\S*)\s*[#$] ",
                    path.read_text(errors="replace"),
                )
                is not None
            )
            out.append(path) if not both and "nproc" not in kinds else None
    return out


CAPTURES = _readable_alone()


def test_the_class_is_the_real_family() -> None:
    assert len(CAPTURES) > 150  # (every real capture read alone, not a hand-picked few)


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.name)
def test_a_capture_in_a_session_is_judged_as_alone(tmp_path: Path, capture: Path) -> None:
    # the other output is one of a kind the capture is not (a session with two lscpu is refused)
    kinds = offline.load_outputs([str(capture)])
    other = FREE if "lscpu" in kinds else LSCPU
    session = tmp_path / capture.name  # (a name that says what was saved: `free-b.txt`, `nproc.txt`)
    session.write_text(
        f"ubuntu@gpu-1:~$ {'free -k' if other == FREE else 'lscpu'}\n{other.read_text()}"
        f"ubuntu@gpu-1:~$ ./saved-output.sh\n{capture.read_text(encoding='utf-8', errors='replace')}"
    )
    # (the capture last: a capture cut short ends the file as it ends its own)
    assert _judged([session]) == _judged([other, capture])


def test_the_whole_page_of_commands_is_read(tmp_path: Path) -> None:
    session = tmp_path / "session.txt"
    session.write_text(
        f"[root@gpu-1 ~]# nvidia-smi\n{TABLE.read_text()}[root@gpu-1 ~]# lscpu\n{LSCPU.read_text()}"
        f"[root@gpu-1 ~]# free -k\n{FREE.read_text()}[root@gpu-1 ~]# df -P -B1\n{DF.read_text()}"
        "[root@gpu-1 ~]# "
    )
    assert sorted(offline.load_outputs([str(session)])) == ["df", "free", "lscpu", "nvidia_smi_table"]
    judged = _judged([session])
    assert judged == _judged([TABLE, LSCPU, FREE, DF])
    assert {name: verdict for name, verdict, *_ in judged}["cpu_cores"] == "pass"  # (was "no lscpu given")


@pytest.mark.parametrize(
    ("line", "command", "host"),
    [
        ("ubuntu@gpu-1:~$ nvidia-smi -q", "nvidia-smi -q", "gpu-1"),
        ("(base) me@a100.lab.example:/data# sudo dmesg -T", "sudo dmesg -T", "a100.lab.example"),
        ("me@mac ~ % ssh gpu-2 lscpu", "ssh gpu-2 lscpu", "gpu-2"),
        ("[root@gpu01 ~]# free -h", "free -h", "gpu01"),
        ("PS C:\\Users\\me> ssh box df -h", "ssh box df -h", "box"),
        ("$ ls -la", "ls -la", None),
        ("ubuntu@gpu-1:~$", "", "gpu-1"),
        ("# nvidia-smi -L", "nvidia-smi -L", None),
        ("➜  ~ nvidia-smi topo -m", "nvidia-smi topo -m", None),
        ("!nvidia-smi", "nvidia-smi", None),
        ("bash-4.2$ lscpu", "lscpu", None),
        ("sh-4.4# nvidia-smi", "nvidia-smi", None),
        ("❯ nvidia-smi", "nvidia-smi", None),
        ("~ via 🅒 ml ❯ free -h", "free -h", None),
        ("[12:01:33] jdoe@gpu07:~$ df -h", "df -h", "gpu07"),
        ("(/home/jdoe/envs/ml) jdoe@gpu07:~$ lscpu", "lscpu", "gpu07"),
        ("In [3]: !nvidia-smi", "nvidia-smi", None),
        ("➜  ~ git:(main) ✗ nvidia-smi", "nvidia-smi", None),
        ("gpu07:~ # nvidia-smi", "nvidia-smi", "gpu07"),
        ("jdoe@gpu07:~/proj (main)$ lscpu", "lscpu", "gpu07"),
    ],
)
def test_prompt_lines(line: str, command: str, host: str | None) -> None:
    parts = transcript.sections(f"{line}\nout\n$ uptime\nup 3 days\n")
    assert parts is not None and (parts[0].command, parts[0].host) == (command, host)


@pytest.mark.parametrize(
    "line",
    [
        "overlay          100G  5.0G   95G   5% /var/lib/docker",  # a df row at a command's name
        "|  0%   35C    P8    15W / 300W |      0MiB / 46068MiB |      0%      Default |",
        "# comment in a file",  # `#`, `%`, `>` only with a command whose output is read
        "> free text",
        "NVRM: GPU at PCI:0000:3b:00: GPU-5d2e (df $ free)",
    ],
)
def test_output_lines_are_no_prompts(line: str) -> None:
    assert transcript.sections(f"{line}\nmore\n{line}\nmore\n") is None


def test_one_output_under_its_prompt_is_one_output() -> None:
    assert transcript.sections(f"root@gpu-1:~# lscpu\n{LSCPU.read_text()}root@gpu-1:~# \n") is None


def test_commands_not_read_are_noted(tmp_path: Path) -> None:
    session = tmp_path / "s.txt"
    session.write_text(
        f"me@gpu-1:~$ ls\ndata  models\nme@gpu-1:~$ lscpu\n{LSCPU.read_text()}"
        "me@gpu-1:~$ sudo dmesg | grep -i xid\n"
        f"me@gpu-1:~$ cat notes.txt\nrented on Monday\nme@gpu-1:~$ free -k\n{FREE.read_text()}"
    )
    kinds, notes = read_session(session)
    assert kinds == ["free", "lscpu"]
    assert notes == [
        f"{session}: a saved terminal session; not read: line 1 (`ls`) is not an output this tool reads;"
        " line 47 (`sudo dmesg | grep -i xid`) printed nothing; line 48 (`cat notes.txt`) is not an output"
        " this tool reads."
    ]


def test_an_output_that_cannot_be_read_is_said_and_the_rest_judged(tmp_path: Path) -> None:
    # (a file of it alone is refused with the same sentence, exit 2)
    session = tmp_path / "s.txt"
    df_i = REAL / "df-i__sda2-xfs-root_sdb1-ext4-mydata.txt"
    session.write_text(f"$ lscpu\n{LSCPU.read_text()}$ df -i\n{df_i.read_text()}")
    kinds, notes = read_session(session)
    assert kinds == ["lscpu"]
    assert notes == [
        f"{session}: a saved terminal session; not read: line 45 (`df -i`): this df output has no size"
        " column (`df -i` counts inodes), so no disk size can be read from it; save `df -P -k` (or"
        " `df -h`) of the box instead."
    ]


def test_two_hosts_in_one_session_are_refused(tmp_path: Path) -> None:
    session = tmp_path / "s.txt"
    session.write_text(
        f"me@gpu-1:~$ lscpu\n{LSCPU.read_text()}me@gpu-2:~$ free -k\n{FREE.read_text()}"
        # a container's shell on the box is the box
        f"root@4a3b2c1d5e6f:/workspace# nvidia-smi\n{TABLE.read_text()}"
    )
    assert refused(session) == (
        f"error: {session}: this saved terminal session ran commands on 2 hosts (gpu-1, gpu-2), which"
        " cannot be judged as one box; save each box's outputs in a file of its own."
    )


@pytest.mark.parametrize(
    ("first", "then"),
    [
        # a GPU fault in the whole table, then one GPU's view: the fault must not be dropped
        ("nvidia-smi", "nvidia-smi -i 0"),
        # the box's own GPUs, then a container given one of them
        ("nvidia-smi", "docker run --rm --gpus 1 nvidia/cuda:12.4.1-base-ubuntu22.04 nvidia-smi"),
    ],
)
def test_a_narrower_or_later_output_of_one_kind_is_refused(tmp_path: Path, first: str, then: str) -> None:
    session = tmp_path / "s.txt"
    one = (REAL / "nvidia-smi__a40__8gpu__driver525.60.13__gpu4-err.txt").read_text()
    session.write_text(f"$ {first}\n{one}$ {then}\n{TABLE.read_text()}")
    # (since round 28 the refusal says what the narrower one shows, as a folder's does)
    said = (
        rf"are two plain `nvidia-smi` table outputs \(`{re.escape(then)}` shows only the GPUs .*\),"
        " which cannot both be judged"
    )
    with pytest.raises(UsageError, match=said):
        offline.load_outputs([str(session)])


def test_the_same_output_twice_is_read_once(tmp_path: Path) -> None:
    session = tmp_path / "s.txt"
    session.write_text(f"$ free -k\n{FREE.read_text()}$ free -k\n{FREE.read_text()}")
    kinds, notes = read_session(session)
    assert kinds == ["free"]
    assert notes == [
        f"{session}: a saved terminal session; not read: line 1 (`free -k`): the same output as line 5"
        " (`free -k`), which is judged."
    ]


@pytest.mark.parametrize(
    ("session", "hosts"),
    [
        ("$ ssh ubuntu@10.0.0.5 nvidia-smi -L\n{L}$ ssh ubuntu@10.0.0.6 lscpu\n{C}", "10.0.0.5, 10.0.0.6"),
        ("jdoe@box-a:~/proj (main)$ nvidia-smi -L\n{L}jdoe@box-b:~/proj (main)$ lscpu\n{C}", "box-a, box-b"),
        ("gpu01:~ # nvidia-smi -L\n{L}gpu02:~ # lscpu\n{C}", "gpu01, gpu02"),
        # an interactive login: the commands before it ran on the laptop
        (
            "$ lscpu\n{C}$ ssh gpu-box\nWelcome\n$ nvidia-smi -L\n{L}",
            "the machine the session started on, gpu-box",
        ),
    ],
)
def test_commands_of_two_machines_are_refused(tmp_path: Path, session: str, hosts: str) -> None:
    path = tmp_path / "s.txt"
    listing = (REAL / "nvidia-smi-L__l40s__1gpu__driver595.80.txt").read_text()
    path.write_text(session.format(L=listing, C=LSCPU.read_text()))
    with pytest.raises(UsageError, match=re.escape(f"ran commands on 2 hosts ({hosts})")):
        offline.load_outputs([str(path)])


@pytest.mark.parametrize(
    "laptop",
    [
        "me@laptop:~$ grep -c . hosts.txt\n1\n",
        "me@laptop:~$ zcat notes.gz\nrack 4 slot 2\n",
        "me@laptop:~$ fgrep gpu01 ~/.ssh/config\nHost gpu01\n",
    ],
)
def test_a_command_on_the_laptop_that_read_nothing_of_a_box_is_no_second_host(
    tmp_path: Path, laptop: str
) -> None:
    # a filter's output on the laptop (no output this tool reads) is no box's: the session is one box
    path = tmp_path / "s.txt"
    listing = (REAL / "nvidia-smi-L__l40s__1gpu__driver595.80.txt").read_text()
    path.write_text(f"{laptop}me@laptop:~$ ssh root@gpu01\nroot@gpu01:~# nvidia-smi -L\n{listing}")
    kinds, notes = read_session(path)
    command = laptop.split("$ ")[1].split("\n")[0]
    assert kinds == ["nvidia_smi_list"]
    assert notes == [
        f"{path}: a saved terminal session; not read: line 1 (`{command}`) {transcript._NOT_READ}."
    ]


def test_a_copied_free_command_gives_its_unit(tmp_path: Path) -> None:
    # `free -g` of a 2 TiB box (`Mem: 2015`) is also 2015 MiB: its unit comes from the command
    path = tmp_path / "box.txt"
    path.write_text(
        "$ free -g\n              total        used        free      shared  buff/cache   available\n"
        "Mem:           2015          10        2000           0           5        2004\n"
        "Swap:             0           0           0\n"
    )
    assert parse_facts(offline.load_outputs([str(path)])).memory.total_bytes == 2015 * 2**30


SESSIONS = FIXTURES / "sessions"


@pytest.mark.parametrize(
    ("name", "kinds", "not_read"),
    [
        ("transcript__nvidia-smi+nvcc-V__rtx2070-laptop-mx19.txt", ["nvcc", "nvidia_smi_table"], None),
        (
            "transcript__nvidia-smi+topo-m__2xA100-PCIE-40GB-xinghe1.txt",
            ["nvidia_smi_table", "nvidia_topo"],
            None,
        ),
        # a container's shell (`root@ff9250fe4fe3`) on the box
        (
            "transcript__nvidia-smi+topo-m__4xH100-80GB-root-container.txt",
            ["nvidia_smi_table", "nvidia_topo"],
            None,
        ),
        ("transcript__nvidia-smi-NVMLmismatch+dmesg-NVRM__h01.txt", ["kernel_log", "nvidia_smi"], None),
        (
            # (its `numactl --hardware` is shown, not judged: a kind of its own)
            # (its `uname -a` read as the kernel release: m36e 09)
            "transcript__free+numactl+uname__R7525-A30-cloudlab-node0.txt",
            ["free", "kernel", "numactl"],
            None,
        ),
        (
            "transcript__lspci+lscpu__xeon4116-V100-krylov100.txt",
            ["lscpu"],
            "the text above its first prompt (`($ lspci)`) is not an output this tool reads.",
        ),
        (
            # `# nvidia-smi 無法通訊` is a comment above the command, not a root prompt
            "transcript__lspci+lsmod+nvidia-smi-FAILED+python__L40S-vm.txt",
            ["nvidia_smi"],
            "the text above its first prompt (`# 硬體看得到`) is not an output this tool reads; line 2"
            " (`lspci | grep -i nvidia`) is not an output this tool reads; line 6 (`lsmod | grep nvidia`) is"
            ' not an output this tool reads; line 14 (`python -c "import torch;'
            ' print(torch.cuda.is_available())"`)'
            " is not an output this tool reads.",
        ),
        (
            # prompts without a space after `$` (`$nvidia-smi`)
            "transcript__python-V+os-release+nvidia-smi+dpkg__V100-SXM2-32GB-noSpacePrompt.txt",
            ["nvidia_smi_table", "os_release"],
            "line 1 (`python --version`) is not an"
            " output this tool reads; line 38"
            " (`sudo dpkg -l |grep nvidia`) is not an output this tool reads.",
        ),
        # the shell's `-bash: nvidia-smi: command not found`: nvidia-smi's absence, the box's answer
        (
            "transcript__nvidia-smi-NOTFOUND+nvcc-version__gh200-miyabi-login-node.txt",
            ["nvcc", "nvidia_smi"],
            None,
        ),
        (
            "transcript__nvidia-smi-NOTFOUND+free-g+df-h+curl__cpu-box-medgemma-notes.txt",
            ["free", "nvidia_smi"],
            "line 8 (`df -h /home/phuong`): this tool reads df's output but could not read what it printed;"
            " line 11 (`curl -s -o /dev/null"
            ' -w "%{http_code}" https://huggingface.co/api/models/google/medgemma-1.5-4b-it`) is not an'
            ' output this tool reads; line 14 (`[ -n "$HF_TOKEN" ] && echo yes || echo no`) is not an output'
            " this tool reads.",
        ),
        (
            # tcsh's numbered prompt `udc-ba30-5: 2 $ nvidia-smi`
            "transcript__which+nvidia-smi__K20m-rivanna-udc-ba30-5.txt",
            ["nvidia_smi_table"],
            "the text above its first prompt (`udc-ba30-5: 1 $ which nvidia-smi`) is not an output this tool"
            " reads.",
        ),
    ],
)
def test_real_sessions(name: str, kinds: list[str], not_read: str | None) -> None:
    read, notes = read_session(SESSIONS / name)
    assert read == kinds
    assert notes == (
        [f"{SESSIONS / name}: a saved terminal session; not read: {not_read}"] if not_read else []
    )


def test_a_session_reads_what_each_output_says() -> None:
    h100 = SESSIONS / "transcript__nvidia-smi+topo-m__4xH100-80GB-root-container.txt"
    shown = offline.summary(parse_facts(offline.load_outputs([str(h100)])))
    assert (shown["gpu_count"], shown["interconnect"]) == (4, "nvlink")


def test_two_different_outputs_of_one_command_are_refused() -> None:
    """A MIG set-up session runs `nvidia-smi -L` before and after a second instance is made: the
    two are two states of the box, and which one to judge is the user's to say."""
    a30 = SESSIONS / "transcript__nvidia-smi-mig+nvidia-smi-L-x2+nvidia-smi__A30-MIG-conda-base.txt"
    with pytest.raises(UsageError) as refused_:
        offline.load_outputs([str(a30)])
    assert str(refused_.value) == (
        f"{a30}: line 15 (`nvidia-smi -L`) and line 21 (`nvidia-smi -L`) are two `nvidia-smi -L` outputs,"
        " which cannot both be judged as the box (one may show part of it, or the box changed between"
        " them): keep one of them in the file."
    )


def test_a_command_continued_on_the_next_line_is_one_command(tmp_path: Path) -> None:
    """`nvidia-smi --query-gpu=... \\` then `> --format=csv,noheader` (bash's PS2): the command was
    cut at the backslash, so the noheader CSV's fields were unknown and it was not read."""
    csv_rows = (
        "0, NVIDIA A100-PCIE-40GB, 40960 MiB, 555.42.02\n1, NVIDIA A100-PCIE-40GB, 40960 MiB, 555.42.02\n"
    )
    session = tmp_path / "s.txt"
    session.write_text(
        "ubuntu@gpu-1:~$ nvidia-smi --query-gpu=index,name,memory.total,driver_version \\\n"
        f"> --format=csv,noheader\n{csv_rows}ubuntu@gpu-1:~$ free -k\n{FREE.read_text()}"
    )
    assert read_session(session) == (["free", "nvidia_smi_csv"], [])
    assert offline.summary(parse_facts(offline.load_outputs([str(session)])))["gpu_count"] == 2


def test_a_command_continued_over_two_lines_is_one_command(tmp_path: Path) -> None:
    """`nvidia-smi \\` / `> --query-gpu=... \\` / `> --format=csv,noheader` (two continuations,
    bash's PS2): one command. Before, two lines ending in a backslash were taken for Markdown's
    hard line breaks and both dropped, the command cut at its first line, and the noheader CSV
    not read."""
    csv_rows = "0, NVIDIA A100-PCIE-40GB, 40960 MiB, 555.42.02\n"
    session = tmp_path / "s.txt"
    session.write_text(
        "ubuntu@gpu-1:~$ nvidia-smi \\\n> --query-gpu=index,name,memory.total,driver_version \\\n"
        f"> --format=csv,noheader\n{csv_rows}ubuntu@gpu-1:~$ free -k\n{FREE.read_text()}"
    )
    assert read_session(session) == (["free", "nvidia_smi_csv"], [])


FORMAT_NOT_READ = (
    "its output is a format this tool does not read (of nvidia-smi it reads the table, -q, -q -x,"
    " --query-gpu, --query-compute-apps, -L, topo -m and nvlink -s / -e)"
)


def test_a_session_of_outputs_none_read_names_each_command() -> None:
    """A real page's two MIG commands under their prompts (`nvidia-smi -i 0 -mig 1`'s answer,
    `nvidia-smi mig -lgip`'s profiles): nothing in it is an output this tool reads, and the
    refusal said only "a saved terminal session holding no output this tool reads", not which
    commands it saw, which a session with something read says in its note. (Round 32: each is a
    format this tool does not read, not "could not read what it printed", which says damage.)"""
    path = FIXTURES / "sessions" / "transcript__nvidia-smi-mig-1+nvidia-smi-mig-lgip__a100-e-com-net.txt"
    with pytest.raises(UsageError) as refusal:
        offline.load_outputs([str(path)])
    assert str(refusal.value) == (
        f"{path}: a saved terminal session holding no output this tool reads (line 1 (`sudo nvidia-smi"
        f" -i 0 -mig 1`): {FORMAT_NOT_READ}; line 4 (`sudo nvidia-smi mig -lgip`): an `nvidia-smi"
        " mig -lgip` list of the GPU instance profiles of GPU 0, 1, 2: MIG 1g.5gb, MIG 1g.5gb+me,"
        " MIG 2g.10gb, which names no GPU model,"
        " memory total or driver, so no GPU can be judged from it: save `nvidia-smi -q` (or the plain"
        " `nvidia-smi`) of the box)."  # (round 33: named, as dmon / pmon are)
    )


# a page of fenced blocks: the words after a block, and a block of another command, are no more of
# the output above them
@pytest.mark.parametrize(
    ("name", "model", "count"),
    [
        # an -L block, a sentence, a compose file's YAML block
        ("page__nvidia-smi-L-FENCED+words+compose-yaml-block__4xRTX3090-ubu07-gpu-hot-64.txt", "RTX 3090", 4),
        # an -L block, `or`, a block whose first line is a bare `nvidia-smi --query-gpu=name` command
        (
            "page__nvidia-smi-L-FENCED+or+query-gpu-name-csv-FENCED-no-prompt__gtx1080ti-openmmtools-563.txt",
            "GTX 1080 Ti",
            1,
        ),
    ],
)
def test_a_pages_words_and_next_block_are_no_more_of_the_output_above(
    name: str, model: str, count: int
) -> None:
    """Refused before as no recognised output (the sentence and the next block read as more of the
    `nvidia-smi -L` listing); the listing is read, the rest noted as not read."""
    order = OrderSpec(gpu_model=model, gpu_count=count)
    judged = {rule: verdict for rule, verdict, _, _ in _judged([SESSIONS / name], order)}
    assert judged["gpu_model"] == "pass", judged
    assert judged["gpu_count"] == "pass", judged


def test_a_block_of_an_output_read_here_is_not_split_from_the_page_above_it() -> None:
    """nvidia-docker#933: the user's words quote nvidia-smi's `"No devices were found"`, then a
    log block, a sentence and a `docker version` block. The docker version block is not made a
    part of its own, so the words above it are not read as a failed nvidia-smi of the box (a
    first cut of the page reader failed nvidia_driver on that quote)."""
    name = (
        "page__words-QUOTING-No-devices-were-found+plugin-log-FENCED+docker-version-FENCED"
        "__nvidia-docker-933.txt"
    )
    judged = {rule: (verdict, actual) for rule, verdict, actual, _ in _judged([SESSIONS / name])}
    assert judged["nvidia_driver"][0] == "unverified", judged["nvidia_driver"]


def test_one_command_answered_otherwise_later_in_the_session_is_two_times_of_the_box() -> None:
    """nvidia-container-toolkit#32, as posted: `# ctr run ... --gpus 0 IMAGE sample nvidia-smi`
    printed a table's head (before a reboot), the same command `No devices were found` after it,
    then the host's `# nvidia-smi` (`...`) and the container's table head again. A failure of the
    tool as a whole is no rival form of a rerun (it was refused as "ran one command at two times",
    naming `-q -x`): the judging orders it by line. The failure is the container's (`ctr run`, a
    launcher of facts/command_line.LAUNCHERS), no table row of the box's own shell answers it: it
    says nothing certain of the box, unverified (round 31, fixN3's rule for a failure run elsewhere)."""
    path = SESSIONS / (
        "page__ctr-run-nvidia-smi-x3-table-CUT+No-devices-were-found+table-CUT"
        "__rhel86-containerd-nvidia-container-toolkit-32.txt"
    )
    judged = {rule: (verdict, actual) for rule, verdict, actual, _ in _judged([path])}
    assert judged["nvidia_driver"][0] == "unverified", judged["nvidia_driver"]
    assert "No devices were found" in judged["nvidia_driver"][1]


@pytest.mark.parametrize(
    ("command", "failed_first", "verdict"),
    [
        ("nvidia-smi", False, "fail"),  # a failure after the listing: the box now
        ("nvidia-smi", True, "pass"),  # the session's later listing answered it: a note
        # (a container's own failure beside the host's listing: a note, never the box's)
        ("docker run --rm --gpus all nvidia/cuda:12.4.0-base nvidia-smi", False, "pass"),
        ("docker run --rm --gpus all nvidia/cuda:12.4.0-base nvidia-smi", True, "pass"),
    ],
)
def test_a_rerun_that_failed_as_a_whole_is_judged_by_its_line(
    tmp_path: Path, command: str, failed_first: bool, verdict: str
) -> None:
    """One command line run twice, answered once by the real H200 table (TABLE) and once by
    nvidia-smi's `No devices were found`, either order: refused before as "ran one command at two
    times" (docs/reference/rules.md: "a failure after the listing is the box now and fails");
    now judged by facts/gpu_failed.py's order of lines (measure31a 44, nvidia-docker#1671)."""
    table, failure = TABLE.read_text(), "No devices were found\n"
    first, then = (failure, table) if failed_first else (table, failure)
    session = tmp_path / "s.txt"
    session.write_text(f"ubuntu@gpu-1:~$ {command}\n{first}ubuntu@gpu-1:~$ {command}\n{then}")
    judged = {rule: (v, actual) for rule, v, actual, _ in _judged([session])}
    assert judged["nvidia_driver"][0] == verdict, judged["nvidia_driver"]
    if verdict == "fail":
        said = judged["nvidia_driver"][1]
        assert "s.txt line 22 (`nvidia-smi`) failed (No devices were found)" in said, said
        assert "table in s.txt line 1 (`nvidia-smi`) listed 1 GPU" in said, said


def test_a_rerun_that_read_nothing_gives_way(tmp_path: Path) -> None:
    """`nvidia-smi` not found (the shell's exit 127 line), then the same command answering with
    the real H200 table (after the driver was installed): the first read nothing of the box and
    is no rival (unread.gives_way); the table is judged."""
    session = tmp_path / "s.txt"
    session.write_text(
        "ubuntu@gpu-1:~$ nvidia-smi\nbash: nvidia-smi: command not found\n"
        f"ubuntu@gpu-1:~$ nvidia-smi\n{TABLE.read_text()}"
    )
    assert offline.summary(parse_facts(offline.load_outputs([str(session)])))["gpu_count"] == 1


# nvidia-docker#933's words above its first block, as posted: a person quoting nvidia-smi's message
_QUOTING_933 = (
    "After a reboot of the server, the nvidia-smi has stopped working with the following error: \n"
    '`"No devices were found"`\n'
)


@pytest.mark.parametrize(
    "words",
    [
        _QUOTING_933,
        # the same words, the message in plain quotes, or inside the sentence (edits of the above)
        _QUOTING_933.replace('`"No devices were found"`', '"No devices were found"'),
        "After a reboot of the server, nvidia-smi says No devices were found.\n",
        "nvidia-smi printed \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
        ' Make sure that the latest NVIDIA driver is installed and running."\n',
        "The error is `Failed to initialize NVML: Driver/library version mismatch` since the update.\n",
    ],
)
def test_words_above_the_first_prompt_quoting_a_failure_are_no_failed_nvidia_smi(
    tmp_path: Path, words: str
) -> None:
    """nvidia-docker#933's shape: the user's words quote nvidia-smi's message (a line that is the
    message in quotes, or a sentence holding it), then a session's `free -k` (the real FREE). The
    words were read as a failed nvidia-smi of the box (nvidia_driver FAIL); a person's words
    quoting a message are no output of the tool: nothing of nvidia-smi is read."""
    session = tmp_path / "s.txt"
    session.write_text(f"{words}\nubuntu@gpu-1:~$ free -k\n{FREE.read_text()}")
    notes: list[str] = []
    assert sorted(offline.load_outputs([str(session)], notes)) == ["free"]
    assert "the text above its first prompt" in notes[0], notes


@pytest.mark.parametrize(
    "message",
    [
        "No devices were found",
        "Failed to initialize NVML: Driver/library version mismatch",
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that"
        " the latest NVIDIA driver is installed and running.",
    ],
)
def test_nvidia_smis_own_failure_line_is_still_its_failure(tmp_path: Path, message: str) -> None:
    """The guard of the class above: the message on its own line under `$ nvidia-smi` is the
    tool's own answer, read as its failure."""
    session = tmp_path / "s.txt"
    session.write_text(f"ubuntu@gpu-1:~$ nvidia-smi\n{message}\nubuntu@gpu-1:~$ free -k\n{FREE.read_text()}")
    judged = {rule: verdict for rule, verdict, _, _ in _judged([session])}
    assert judged["nvidia_driver"] == "fail", judged


def test_a_container_engines_own_error_is_named_and_the_hosts_failure_read() -> None:
    """nvidia-docker#584, as posted: `$ nvidia-smi` -> `Failed to initialize NVML: Function Not
    Found`, then `$ sudo nvidia-docker run ... nvidia-smi` -> nvidia-docker 1's own line `nvidia-docker
    | ... Error: nvml: Driver/library version mismatch`. Both were read as nvidia-smi outputs and
    the file refused as two of them; the second is nvidia-docker's error (nvidia-smi never ran
    there): named as such and not read, the host's failure judged."""
    path = SESSIONS / (
        "page__nvidia-smi-NVML-Function-Not-Found-FENCED+nvidia-docker1-run-ERROR-FENCED"
        "__ppc64le-nvidia-docker-584.txt"
    )
    notes: list[str] = []
    assert sorted(offline.load_outputs([str(path)], notes)) == ["nvidia_smi"]
    assert (
        "printed nvidia-docker's own error (`nvidia-docker | 2017/12/21 05:04:46 Error: nvml:" in notes[0]
    ), notes
    judged = {rule: (verdict, actual) for rule, verdict, actual, _ in _judged([path])}
    assert judged["nvidia_driver"] == (
        "fail",
        "nvidia-smi failed (Failed to initialize NVML: Function Not Found)",
    )


def test_the_container_toolkits_nvml_error_stays_read_as_the_hosts_failure(tmp_path: Path) -> None:
    """The guard of the engine's-error class: the real `docker start` stderr of a driver update
    (tests/fixtures/container-runs, `nvidia-container-cli: initialization error: nvml error:
    driver/library version mismatch`) under `$ docker run ... nvidia-smi`, before the real FREE:
    NVML's answer on the host through the toolkit, read as the failure it was read as before."""
    stderr = FIXTURES / "container-runs" / "docker-start__nvidia-container-cli-version-mismatch.stderr"
    session = tmp_path / "s.txt"
    session.write_text(
        f"$ docker run --rm --gpus all nvidia/cuda:12.4.0-base nvidia-smi\n{stderr.read_text()}"
        f"ubuntu@gpu-1:~$ free -k\n{FREE.read_text()}"
    )
    judged = {rule: (verdict, actual) for rule, verdict, actual, _ in _judged([session])}
    assert judged["nvidia_driver"][0] == "fail", judged["nvidia_driver"]
    assert "driver/library version mismatch" in judged["nvidia_driver"][1]


COLABFOLD = (
    "session__two-line-box-prompt__nvcc-nvidia-smi-L-gtx1650__table-cut-in-header__localcolabfold-74.txt"
)


def test_a_two_line_prompt_drawn_with_box_corners_splits_the_session(tmp_path: Path) -> None:
    """YoshitakaMo/localcolabfold#74: `nvcc --version`, `nvidia-smi -L` and a `nvidia-smi` table
    cut in its header, each under a two-line prompt (`╭╴ at  ~` / `╰─ <command>`). Before, no line
    was taken for a prompt: the file was read as one cut table and the -L and nvcc outputs dropped
    silently (gpu_model, gpu_count unverified); now each is read: 1 x GTX 1650 passes."""
    got = verdicts(
        tmp_path, "session.txt", (REAL / COLABFOLD).read_text(), "gpu_model: GTX 1650\ngpu_count: 1\n"
    )
    assert got["gpu_model"] == ("pass", "1 x NVIDIA GeForce GTX 1650")
    assert got["gpu_count"][0] == "pass"


@pytest.mark.parametrize(
    ("first", "second", "command"),
    [
        ("╭╴ at  ~", "╰─ nvidia-smi -L", "nvidia-smi -L"),  # starship / powerlevel10k
        ("╭─ ~/work ─────────────── ✔  base ─╮", "╰─ lscpu", "lscpu"),  # powerlevel10k's frame
        ("┌──(kali㉿kali)-[~]", "└─$ free -h", "free -h"),  # Kali's zsh
        ("┌─[user@parrot]─[~]", "└──╼ $nvidia-smi", "nvidia-smi"),  # Parrot's bash
        ("┏━ ~/src", "┗━❯ df -h", "df -h"),  # a heavy-lined starship
    ],
)
def test_two_line_prompts_are_prompts(first: str, second: str, command: str) -> None:
    """The family of two-line prompts (each written here as the theme draws it): the second line,
    a box-drawing corner before the command, is the prompt; the first is no output's line."""
    text = paste.normalise(f"{first}\n{second}\nout\n{first}\n{second}\nout again\n")
    parts = transcript.sections(text)
    assert parts is not None and parts[0].command == command
    assert parts[0].text == "out\n\n"


def test_lsblk_tree_lines_are_no_prompts() -> None:
    """lsblk's tree (`└─nvme0n1p1`, made `+-nvme0n1p1`) and its ASCII form are output lines."""
    text = paste.normalise("nvme0n1 259:0 0 1.8T 0 disk\n└─nvme0n1p1 259:1 0 512M 0 part /boot\n" * 2)
    assert transcript.sections(text) is None


# nvidia-docker#1671 (https://github.com/NVIDIA/nvidia-docker/issues/1671, a comment, 2022-09-02):
# its two code blocks of one container, joined (the host's `systemctl daemon-reload` between them
# is in the prose): the table's head, then the same `nvidia-smi` answering NVML's Unknown Error
NVDOCKER_1671 = (
    "docker run --gpus all --rm -it nvidia/cuda:11.4.2-base-ubuntu18.04 bash\n"
    "root@098b49afe624:/# nvidia-smi \n"
    "Fri Sep  2 21:54:31 2022       \n"
    "+-----------------------------------------------------------------------------+\n"
    "| NVIDIA-SMI 510.68.02    Driver Version: 510.68.02    CUDA Version: 11.6     |\n"
    "|-------------------------------+----------------------+----------------------+\n"
    "root@098b49afe624:/# nvidia-smi \n"
    "Failed to initialize NVML: Unknown Error\n"
)


def test_a_container_losing_its_gpus_after_the_table_fails_the_driver(tmp_path: Path) -> None:
    """It was refused: "line 2 (`nvidia-smi`) and line 7 (`nvidia-smi`) ran one command at two
    times ... (an output read as plain `nvidia-smi` table, then one read as nvidia-smi (`-q -x`,
    or its failure)": both were plain `nvidia-smi`, and a failure after the listing is the box
    now (measure31a 44)."""
    session = tmp_path / "session.txt"
    session.write_text(NVDOCKER_1671)
    judged = {rule: (v, actual, detail) for rule, v, actual, detail in _judged([session], None)}
    verdict, actual, detail = judged["nvidia_driver"]
    assert (verdict, actual) == ("fail", "nvidia-smi failed (Failed to initialize NVML: Unknown Error)")
    assert "daemon-reload" in detail, detail
