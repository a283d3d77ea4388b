"""A saved output copied through a web page, a chat or a mail (non-breaking spaces, a blank line
after every line, a code block's indent, lines wrapped at the page's width) is judged as the
output itself; a file holding two outputs (pasted twice, two boxes) is refused, not read as one
box with twice the GPUs. Real captures, each damaged as a paste damages it (found by a sweep of
every real capture through 16 such transforms); each test fails on the code before."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.errors import UsageError
from gpuonboard.steps.checks.kernel_event_rule import BOOT_SPAN

from ..offline_judge import column_wrapped, verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
MIG_TABLE = "nvidia-smi__h200-mig__1gpu__driver590.48.01__load.txt"
K20M = "nvidia-smi__tesla-k20m__1gpu__driver361.93.02.txt"
FALLEN = "dmesg__nvrm-fallen-off-bus-no-xid__driver570.158.01.txt"
RESET_CSV = "nvidia-smi-query-gpu__h100__1gpu__gpu-requires-reset.csv"
CAUSED_BY = "dmesg-journalctl__xid-45-caused-by-previous-xid-149-145__driver590.48.01.txt"
LSCPU_J = "lscpu-J__intel-xeon-16vcpu__h200-vm.json"
DF = "df-P-B1__h200-vm.txt"


def real(name: str) -> str:
    return (REAL / name).read_text()


def wrapped(text: str, width: int) -> str:
    """Every line longer than `width` split at that width (a paste wrapped by a mail or chat)."""
    return column_wrapped("\n".join(text.splitlines()), width) + "\n"


DAMAGE = {
    "nbsp": lambda t: t.replace(" ", "\u00a0"),
    "double-spaced": lambda t: "\n".join(line + "\n" for line in t.splitlines()),
    "code-block-indent": lambda t: (
        "\n".join("    " + line if line else line for line in t.splitlines()) + "\n"
    ),
    # Markdown's hard line break (or a shell's continuation) after every line
    "backslash-line-ends": lambda t: "".join(line + " \\\n" for line in t.splitlines()),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
@pytest.mark.parametrize(
    ("name", "order"),
    [
        (MIG_TABLE, "gpu_count: 1"),  # MIG Enabled: mig_mode warns
        (K20M, "gpu_count: 1"),  # 76 % busy with no process listed: foreign_processes fails
        (FALLEN, None),  # "has fallen off the bus" over three lines: gpu_xid fails
        (RESET_CSV, "gpu_count: 1"),  # "[GPU requires reset]": gpu_count fails (1 unreadable)
        ("nvidia-smi-L__h200-mig__1gpu-5mig__driver590.48.01.txt", "gpu_count: 1"),
        ("nvidia-smi-nvlink-s__a100-sxm4-80gb__8gpu.txt", None),
    ],
)
def test_a_pasted_output_is_judged_as_the_output(
    tmp_path: Path, name: str, order: str | None, damage: str
) -> None:
    """Before: behind non-breaking spaces the fallen-off GPU and the reset-needing GPU passed;
    double-spaced, the table's second row was the blank line (MIG read as disabled, the
    utilisation lost); indented as a code block, -L and nvlink -s were not recognised."""
    text = real(name)
    assert verdicts(tmp_path, name, DAMAGE[damage](text), order) == verdicts(tmp_path, name, text, order)


def test_a_table_whose_lines_end_in_a_backslash_is_read_whole(tmp_path: Path) -> None:
    """Before: the Processes box of a real 8 x B200 paste, every line ending in ` \\`, was read
    as a table cut short listing no process ("... though this nvidia-smi output lists no
    processes"; nvidia_driver, gpu_model and vram unverified)."""
    name = "nvidia-smi__b200__8gpu__driver580.95.05__load__backslash-line-ends.txt"
    text = real(name)
    plain = "".join(line.removesuffix(" \\").removesuffix("\\") + "\n" for line in text.splitlines())
    order = "gpu_model: B200\ngpu_count: 8\nvram: 180GB"
    got = verdicts(tmp_path, name, text, order)
    assert got == verdicts(tmp_path, name, plain, order)
    assert all(got[rule][0] == "pass" for rule in ("nvidia_driver", "gpu_model", "gpu_count", "vram"))
    busy = got["foreign_processes"]
    assert busy[0] == "fail" and "python" in busy[1] and "lists no processes" not in busy[1]


def test_a_kernel_log_wrapped_at_a_pages_width_keeps_each_lines_end(tmp_path: Path) -> None:
    """Before: wrapped at 80 columns, `... Ch 00000001 c` / `aused by previous Xid 149` lost the
    Xid it names as the cause, and gpu_xid passed (Xid 45 alone)."""
    text = real(CAUSED_BY)
    for width in (80, 120):
        assert verdicts(tmp_path, CAUSED_BY, wrapped(text, width)) == verdicts(tmp_path, CAUSED_BY, text)
    assert verdicts(tmp_path, CAUSED_BY, text)["gpu_xid"][0] == "fail"


def test_a_df_wrapped_at_a_pages_width_reads_the_same_mounts(tmp_path: Path) -> None:
    """Before: `... Use% Mounted o` / `n`: the header's wrapped end was taken for a device name
    and glued to the first row, a mount `1% /dev/shm` on device `n`."""
    from gpuonboard.facts import disks

    text = real(DF)
    whole = disks.parse_df(text)
    assert disks.parse_df(offline.paste.normalise(wrapped(text, 80))) == whole
    assert disks.df_cut(wrapped(text, 80)) == "a line df does not print (n)"
    order = f"data_disk: {{mount: {whole[0].mountpoint}, min_size: 1GB}}"
    assert verdicts(tmp_path, DF, wrapped(text, 80), order) == verdicts(tmp_path, DF, text, order)


def test_a_damaged_lscpu_json_is_unverified_not_fewer_cpus(tmp_path: Path) -> None:
    """Before: any damage to `lscpu -J` (a wrap inside a string, a cut) failed cpu_cores as
    "fewer CPUs than ordered" with "? cores / ? threads"."""
    got = verdicts(tmp_path, LSCPU_J, wrapped(real(LSCPU_J), 80), "cpu_cores: 16")
    assert got["cpu_cores"] == ("unverified", "unknown: lscpu gave no readable output")


@pytest.mark.parametrize(
    ("name", "what"),
    [
        ("nvidia-smi-q__h200__1gpu__driver580.159.04.txt", "nvidia-smi -q"),
        (MIG_TABLE, "nvidia-smi"),
        ("nvidia-smi-query-gpu__h200__1gpu__driver590.48.01__load.csv", "nvidia-smi --query-gpu"),
        ("nvidia-smi-L__l40s__1gpu__driver595.80.txt", "nvidia-smi -L"),
        ("lscpu__amd-epyc-9374f__2socket__rtx6000ada-server.txt", "lscpu"),
        ("free__ubuntu-18.04-vm.txt", "free"),
        (DF, "df"),
    ],
)
def test_an_output_pasted_twice_is_refused(tmp_path: Path, name: str, what: str) -> None:
    """Before: -L and lscpu twice doubled the GPUs and cores (an order of twice the box passed),
    a CSV's second header was a GPU named "name", a -q's second copy "GPU 1 unreadable"."""
    text = real(name)
    with pytest.raises(UsageError) as err:
        verdicts(tmp_path, name, text + "\n" + text)
    assert str(err.value).endswith(
        f"/{name}: this file holds 2 {what} outputs (one pasted twice, or two boxes' in one file),"
        " which cannot be told apart as one box; save one output of one box per file."
    )


def test_two_boxes_in_one_file_are_refused_one_looped_log_is_not(tmp_path: Path) -> None:
    """Two boxes' `free` in one file: the second Mem row was taken for the first box's RAM. A
    `--query-gpu -l N` log prints its header once: one output."""
    text = real("free__gb10-dgx-spark__unified-memory.txt") + real("free__ubuntu-18.04-vm.txt")
    with pytest.raises(UsageError, match="holds 2 free outputs"):
        verdicts(tmp_path, "free.txt", text)
    looped = "nvidia-smi-query-gpu-l3__tesla-v100-pcie-16gb__1gpu__driver565.57.01__4-samples.csv"
    assert verdicts(tmp_path, looped, real(looped), "gpu_count: 1")["gpu_count"][0] == "pass"


@pytest.mark.parametrize(
    ("first", "second", "what"),
    [
        # a Markdown list's indented table after another box's plain one, and the other way round
        (
            "nvidia-smi__h100-80gb-hbm3__8gpu__driver580.95.05__indented__no-processes.txt",
            "nvidia-smi__h100-pcie__2gpu__driver555.42.02.txt",
            "nvidia-smi",
        ),
        (
            "nvidia-smi__h100-80gb-hbm3__8gpu__driver550.90.07__no-processes.txt",
            "nvidia-smi__h100-80gb-hbm3__8gpu__driver580.95.05__indented__no-processes.txt",
            "nvidia-smi",
        ),
        (
            "nvidia-smi-q__h200__1gpu__driver580.159.04.txt",
            "nvidia-smi-q__h200__1gpu__driver580.159.04.txt",
            "-q",
        ),
    ],
)
def test_two_outputs_one_of_them_indented_are_refused(
    tmp_path: Path, first: str, second: str, what: str
) -> None:
    """An indent on one copy only (a Markdown list's) is not removed by the shared-indent rule:
    its banner was not counted, and two boxes' tables were read as one 10- or 16-GPU box."""
    indented = (
        real(second)
        if "indented" in second
        else "".join(f"   {line}" for line in real(second).splitlines(True))
    )
    with pytest.raises(UsageError, match="this file holds 2 "):
        verdicts(tmp_path, first, real(first).rstrip("\n") + "\n" + indented)


def test_an_nvlink_listing_pasted_below_an_elision_mark_is_read(tmp_path: Path) -> None:
    """Before: a real `nvlink -s` paste whose first line is the reporter's `....` (the GPUs left
    out above) was refused as not a recognised output (exit 2); its GPU 3 has 2 links down."""
    name = "nvidia-smi-nvlink-s__v100-sxm2-32gb__gpu3-links-3-5-inactive__elided-above.txt"
    verdict, actual = verdicts(tmp_path, name, real(name))["nvlink_links"]
    assert (verdict, actual) == (
        "fail",
        "GPU 3: 4 of 6 links active, inactive link(s) 3, 5; links not readable for GPU 0 (not listed),"
        " GPU 1 (not listed), GPU 2 (not listed)",
    )


DERIVED = Path(__file__).parents[2] / "fixtures" / "derived"


@pytest.mark.parametrize(
    ("derived", "source", "prompt", "verdict"),
    [
        # `dmesg -T | grep NVRM` typed in a `script` session: grep's colour around each NVRM
        # (a narrowed log showing application Xids only: unverified, never a pass)
        (
            "dmesg-T-grep-NVRM__xid-43-31-94__grep-colour-script-session__derived.txt",
            "dmesg-T-grep-NVRM__xid-43-31-94-rst-no__3gpu-vm__driver535.183.01.txt",
            "root@node4:~# dmesg -T |grep NVRM\n",
            "unverified",
        ),
        # dmesg in a terminal: `NVRM: ` in brown before the Xid
        (
            "dmesg-t__xid-149-netir-fatal__gb200__terminal-colour__derived.txt",
            "dmesg-kmsg__xid-149-netir-fatal__gb200-domain-0019__gpud.txt",
            "",
            "fail",
        ),
        # the same copied where the ESC byte was lost (`[33mNVRM: [0mXid`), or shown as `ESC`
        # (`less`): before, no Xid was read and gpu_xid passed
        (
            "dmesg-t__xid-149-netir-fatal__gb200__colour-esc-lost__derived.txt",
            "dmesg-kmsg__xid-149-netir-fatal__gb200-domain-0019__gpud.txt",
            "",
            "fail",
        ),
        (
            "dmesg-t__xid-149-netir-fatal__gb200__colour-esc-shown__derived.txt",
            "dmesg-kmsg__xid-149-netir-fatal__gb200-domain-0019__gpud.txt",
            "",
            "fail",
        ),
    ],
)
def test_a_kernel_log_saved_with_its_terminal_colours_is_read_as_the_log(
    tmp_path: Path, derived: str, source: str, prompt: str, verdict: str
) -> None:
    """Before: the colour codes a terminal session keeps (grep's `ESC[01;31mESC[KNVRM ESC[mESC[K`,
    dmesg's brown `NVRM: `) hid every Xid line: gpu_xid passed "no Xid in the kernel log" on a
    GB200 with a fatal Xid 149, and said "no Xid" of a VM's grep showing Xid 43/31/94."""
    text = (DERIVED / derived).read_text(encoding="utf-8")
    got = verdicts(tmp_path, source, text)
    assert got == verdicts(tmp_path, source, prompt + real(source))
    assert got["gpu_xid"][0] == verdict and "Xid" in got["gpu_xid"][1]


@pytest.mark.parametrize(
    "name",
    [
        "dmesg-H__aer-fatal-cmplto-cant-recover__returnn-1500.txt",  # (`[mem 0x...]`-like brackets)
        "dmesg__xid-79-sxid-20034__nvswitch.txt",
        "dmesg-T__xid-119-gsp-timeout__h100-dell-xe9680.txt",
    ],
)
def test_colour_residue_is_only_read_where_a_reset_shows_it_is_one(name: str) -> None:
    """A text without a colour's reset (`[0m`, `ESC[m`, grep's `[m[K`) is never touched: a kernel
    log's `[mem 0x...]`, `[  12.3]` or a `[1m` of its own text stay as printed."""
    from gpuonboard.api import paste

    text = real(name)
    assert paste.normalise(text + "[mem 0x0-0x9ffff] [1m]\n").endswith("[mem 0x0-0x9ffff] [1m]\n")
    assert paste.normalise("[32m" + text.replace("\n", "[0m\n", 1)) == paste.normalise(text)


def test_a_session_with_a_coloured_prompt_and_window_title_is_read(tmp_path: Path) -> None:
    """Ubuntu's prompt as `script` keeps it (its window title `ESC]0;...BEL`, colours, bash's
    bracketed paste `ESC[?2004h`) is a prompt line: the outputs under it are read, not refused."""
    prompt = "\x1b[?2004h\x1b]0;ubuntu@gpu-01: ~\x07\x1b[01;32mubuntu@gpu-01\x1b[00m:\x1b[01;34m~\x1b[00m$ "
    lscpu = "lscpu__amd-epyc-9374f__2socket__rtx6000ada-server.txt"
    free = "free__ubuntu-18.04-vm.txt"
    session = f"{prompt}lscpu\r\n\x1b[?2004l\r{real(lscpu)}{prompt}free\r\n\x1b[?2004l\r{real(free)}{prompt}"
    order = "cpu_cores: 64\nram: 2GB"
    got = verdicts(tmp_path, "session.txt", session, order)
    plain = verdicts(tmp_path, "session.txt", f"$ lscpu\n{real(lscpu)}$ free\n{real(free)}", order)
    assert got == plain
    assert got["cpu_cores"][0] == "pass" and got["ram"][0] == "pass"


@pytest.mark.parametrize(
    ("name", "width", "order"),
    [
        # `CPU(s):   6` / `4`, `Core(s) per socket:   3` / `2`: read 6 cores / 6 CPUs
        ("lscpu__amd-epyc-9374f__2socket__rtx6000ada-server.txt", 27, "cpu_cores: 64"),
        ("lscpu__gh200-grace-neoverse-v2__aarch64.txt", 39, "cpu_cores: 72"),
        ("lscpu__intel-xeon-16vcpu__h200-vm.txt", 42, "cpu_cores: 16"),
        # `CPU(s): 25` / `6`, and at narrower widths its On-line list cut (`0 CPUs`)
        ("lscpu__amd-epyc-7742__2socket-256cpu__cpu255-offline__bench-notes.txt", 35, "cpu_cores: 128"),
        ("lscpu__amd-epyc-7742__2socket-256cpu__cpu255-offline__bench-notes.txt", 25, "cpu_cores: 128"),
        # `Mem:     13514856448` / `0 ...`: 13.5 GB of a 135 GB box
        ("free-b__h200-vm.txt", 20, "ram: 125GiB"),
    ],
)
def test_an_output_wrapped_inside_a_number_reads_the_whole_number(
    tmp_path: Path, name: str, width: int, order: str
) -> None:
    """Before: a line wrapped by a narrow terminal, a phone's chat or a page inside its value was
    read as the number's first digits: cpu_cores failed "fewer CPUs than ordered" on a 64-core
    EPYC read as 6 cores, ram failed on an H200 VM's free -b read as 12.6 GiB."""
    text = real(name)
    got = verdicts(tmp_path, name, wrapped(text, width), order)
    assert got == verdicts(tmp_path, name, text, order)
    assert got[order.partition(":")[0]][0] == "pass"


def test_a_script_typescript_is_read_as_the_session_it_recorded(tmp_path: Path) -> None:
    """`script`'s file as util-linux writes it: its `Script started on ...` line, each prompt
    between bash's bracketed-paste switches, CRLF line ends, `Script done on ...` at the end.
    Before: the escapes before each prompt hid it, so free's output was read as part of lscpu's
    and ram said "not judged: no free output was given" of a file that gives it."""
    lscpu = "lscpu__amd-epyc-9374f__2socket__rtx6000ada-server.txt"
    free = "free-k__h200-vm__procps-4.0.2.txt"

    def prompt(command: str) -> str:
        return f"\x1b[?2004hroot@gpu-01:~# {command}\n\x1b[?2004l\r"

    session = (
        'Script started on 2026-12-05 09:00:00+00:00 [TERM="xterm-256color" TTY="/dev/pts/0"]\n'
        + prompt("lscpu")
        + real(lscpu)
        + prompt("free -k")
        + real(free)
        + prompt("exit")
        + 'exit\n\nScript done on 2026-12-05 09:01:00+00:00 [COMMAND_EXIT_CODE="0"]\n'
    ).replace("\n", "\r\n")
    order = "cpu_cores: 64\nram: 125GiB"
    got = verdicts(tmp_path, "typescript", session, order)
    assert got["cpu_cores"] == ("pass", "64 cores / 64 threads (AMD EPYC 9374F 32-Core Processor)")
    assert got["ram"][0] == "pass"


def word_wrapped(text: str, width: int) -> str:
    """Every line longer than `width` broken at the last space before it, the space dropped (a
    mail client's or an editor's word wrap)."""
    import textwrap

    out: list[str] = []
    for line in text.split("\n"):
        out += [line] if len(line) <= width else textwrap.wrap(line, width, replace_whitespace=False)
    return "\n".join(out) + "\n"


@pytest.mark.parametrize(
    ("name", "damage"),
    [
        # journalctl's indented continuation lines wrapped too: 2 stamped lines of 10
        ("dmesg-journalctl__legacy-580xx-driver-ignores-gtx1050__driver595.58.03.txt", "w80"),
        ("dmesg-journalctl__legacy-580xx-driver-ignores-gtx1050__driver595.58.03.txt", "ww80"),
        # each line wrapped twice: 2 stamped lines of 5
        ("dmesg-T__nv-err-reset-required-no-xid__gsp.txt", "w100"),
        # a word wrap whose breaks happen to be as long as most: `systemis not supported`
        ("dmesg-syslog__not-supported-by-driver-release-304.88__gt640m-le__kern-log-forum.txt", "ww80"),
        # a column wrap right before a blank: ` Legacy drivers. Please` is no indent of the log's
        ("dmesg-journalctl__legacy-580xx-driver-ignores-gtx1050__driver595.58.03.txt", "w72"),
        # a word wrap that dropped the driver's two blanks (`Kernel Module  580.105.08`): read
        # unjoined, `requires use of the NVIDIA` / `open kernel modules.` was "RmInitAdapter
        # failed -> replace" (the GPU to be replaced) instead of the driver to install
        ("dmesg-grep-nvrm__requires-open-kernel-modules__rtx5090-laptop__driver580.105.08.txt", "ww72"),
    ],
)
def test_a_kernel_log_wrapped_more_than_its_stamps_keeps_its_driver_messages(
    tmp_path: Path, name: str, damage: str
) -> None:
    """Before: a log with fewer stamped lines than wrapped pieces was read unjoined, and a word
    wrap's pieces were glued where they were as long as most: the driver's "not supported by
    the NVIDIA ... driver" and NV_ERR_RESET_REQUIRED were not recognised and gpu_xid passed "no
    Xid in the kernel log"."""
    text = real(name)
    width = int(damage.lstrip("w"))
    pasted = word_wrapped(text, width) if damage.startswith("ww") else wrapped(text, width)
    got = verdicts(tmp_path, name, pasted)["gpu_xid"]
    whole = verdicts(tmp_path, name, text)["gpu_xid"]
    assert whole[0] == "fail" and got[0] == "fail"
    assert got[1].removesuffix(BOOT_SPAN) == whole[1].removesuffix(BOOT_SPAN)


def test_an_xid_cause_word_wrapped_right_after_its_channel_is_read(tmp_path: Path) -> None:
    """Word-wrapped at 80, every line of this real log breaks right after `Ch 0000000N` (at 100,
    after `previous`), each piece as long, as a terminal's wrap inside a word would: glued back
    (`Ch 00000001caused by previous Xid 149`).
    Before: the cause was not read and gpu_xid passed on Xid 45 alone."""
    text = real(CAUSED_BY)
    whole = verdicts(tmp_path, CAUSED_BY, text)["gpu_xid"]
    for width in (80, 100):  # (at 100: `caused by previous` / `Xid 149`, glued `previousXid 149`)
        got = verdicts(tmp_path, CAUSED_BY, word_wrapped(text, width))["gpu_xid"]
        assert got[0] == whole[0] == "fail"
        assert sorted(got[1].split("; ")) == sorted(whole[1].split("; "))


def test_a_table_cut_below_a_lost_gpu_does_not_fail_the_count(tmp_path: Path) -> None:
    """A real 4-GPU table whose GPU 1 nvidia-smi cannot reach, cut after its header (a paste
    that lost the rows, or one this tool cannot rejoin): no GPU row is read, only the lost GPU's
    line. Before: gpu_count failed "1 (1 unreadable)" of an order of 1 GPU that the box (3
    readable) meets; it is unverified, and the lost GPU still fails gpu_health."""
    name = "nvidia-smi__rtx-pro-6000-blackwell__4gpu-1-lost__driver610.57.04.txt"
    lines = real(name).splitlines(keepends=True)
    cut = "".join(lines[: next(i for i, line in enumerate(lines) if line.startswith("|====")) + 1])
    got = verdicts(tmp_path, name, cut, "gpu_count: 1")
    assert got["gpu_count"][0] == "unverified" and "incomplete probe" in got["gpu_count"][1]
    assert got["gpu_health"][0] == "fail"
    whole = verdicts(tmp_path, name, real(name), "gpu_count: 4")["gpu_count"]
    assert whole == ("fail", "4 (1 unreadable)")


# (a table a page ran onto one line has no line to wrap: steps/checks/test_gpu_rules_cut.py ONE_LINE)
# (a table cut in its Processes table's top border reads whole only by its closed GPU table's
# blank line, which a wrap at a page's width changes: read cut there, never more)
TABLES = sorted(
    p.name
    for p in REAL.glob("nvidia-smi__*.txt")
    if "on-one-line" not in p.name
    and "cut-in-processes-top-border" not in p.name
    # (a CI log's stamped, klog-quoted lines: their frame is undone only as saved)
    and "gha-stamped" not in p.name
    # (a table commented out line by line: a wrap's pieces carry no mark, so no comment is
    # around the whole block: api/test_offline_commented_r35.py)
    and "hash-commented" not in p.name
    # (its copied prompt line is 104 columns: wrapped, `docker-compose run tensorflow nvidia-smi`
    # is cut from the prompt, and the container's view with it: api/test_sessions_r36.py)
    and "docker-compose-run__copied-command__aws-compose-sample" not in p.name
    # (a table whose head a page cut, a `topo -m` right under it: wrapped, no GPU row is read and
    # its rules are unverified, never more; read as saved in api/test_table_then_topo_r36.py)
    and "topo-m-below-cut-after-nic5" not in p.name
    # (round 40: likewise its 170-column `[0741] cuser1@cgpu-1 ~$ singularity exec ...` line,
    # wrapped, is no command: its runtime's view unsaid; read as saved in the r40 tests)
    and "singularity-home-pwd-bind" not in p.name
)


def _lines_unnumbered(got: dict[str, tuple[str, str]]) -> dict[str, tuple[str, str]]:
    """The verdicts with the line a hand elision stands on left unnumbered (`...` on line 7 of
    the wrapped text is on line 5 of the saved one)."""
    return {k: (v, re.sub(r"on line \d+", "on line N", said)) for k, (v, said) in got.items()}


@pytest.mark.parametrize("name", TABLES)
def test_a_table_wrapped_at_a_pages_width_reads_as_the_table(tmp_path: Path, name: str) -> None:
    """Every real `nvidia-smi` table (R525+'s are 91 columns wide), wrapped at 80 columns by a
    terminal (with its trailing blanks trimmed too) or word-wrapped by a mail. Before, no GPU
    row of a wrapped table was read (every GPU rule unverified), and the lost-GPU table's
    `Unable to determine the device handle` line alone failed gpu_count."""
    text = real(name)
    order = "gpu_count: 1"
    whole = _lines_unnumbered(verdicts(tmp_path, name, text, order))
    trimmed = "\n".join(line.rstrip() for line in wrapped(text, 80).split("\n"))
    for pasted in (wrapped(text, 80), trimmed, word_wrapped(text, 80)):
        got = _lines_unnumbered(verdicts(tmp_path, name, pasted, order))
        # (a line outside the box, nvidia-smi's own `Unable to determine ...`, is read cut)
        assert {k: v for k, v in got.items() if k not in ("gpu_health", "vram")} == {
            k: v for k, v in whole.items() if k not in ("gpu_health", "vram")
        }
        assert got.get("gpu_health", ("",))[0] == whole.get("gpu_health", ("",))[0]


@pytest.mark.parametrize("name", TABLES)
def test_a_table_whose_verticals_a_page_lost_is_never_a_failed_nvidia_smi(tmp_path: Path, name: str) -> None:
    """Every real `nvidia-smi` table with its `|` lost (a page or a font that drops the box's
    verticals): each rule is judged as on the whole table or unverified, never another verdict.
    Before, no GPU row was read but the table closed, so it was taken for a failed nvidia-smi:
    nvidia_driver failed "nvidia-smi failed (0 1532 C+G Insufficient Permissions N/A)" on a
    Windows RTX 2060 whose process list names such a process, and "(Unable to determine the
    device handle for GPU1 ...)" of a box whose 3 other GPUs answer."""
    order = "gpu_count: 1"
    whole = verdicts(tmp_path, name, real(name), order)
    try:
        got = verdicts(tmp_path, name, real(name).replace("|", " "), order)
    except UsageError:
        return  # (refused as no output it recognises: said so, exit 2)
    changed = {
        k: (whole.get(k), v)
        for k, v in got.items()
        if v[0] != "unverified" and v[0] != whole.get(k, ("",))[0]
    }
    assert not changed


GUTTERED = [
    "dmesg-grep-nvrm__requires-open-kernel-modules__rtx5090-laptop__driver580.105.08.txt",
    "dmesg__nvrm-fallen-off-bus-no-xid__driver570.158.01.txt",
    "dmesg-journalctl__legacy-580xx-driver-ignores-gtx1050__driver595.58.03.txt",
    "nvidia-smi__rtx-pro-6000-blackwell__4gpu-1-lost__driver610.57.04.txt",
    "nvidia-smi-topo-m__a100__8gpu-12nic__dgx-a100.txt",
    "nvidia-smi-q__h200__1gpu__driver590.48.01__load.txt",
    "lscpu__amd-epyc-9374f__2socket__rtx6000ada-server.txt",
    "free__ubuntu-18.04-vm.txt",
    DF,
    "ibstat__h100-8x-ndr400__some-down__gpud.txt",
    "nvidia-smi-nvlink-s__a100-sxm4-80gb__8gpu.txt",
]


@pytest.mark.parametrize("gutter", ["{n:>6}\t", "{n:>4} | ", "{n}: "])
@pytest.mark.parametrize("name", GUTTERED)
def test_an_output_copied_with_its_line_numbers_is_read_as_the_output(
    tmp_path: Path, name: str, gutter: str
) -> None:
    """Real captures as a pager (`cat -n`, `less -N`), an editor or a pastebin shows them, each
    line after its number. Before, most were refused as no output this tool reads, and a kernel
    log's continuation lines, their indent behind the gutter, were messages of their own: the
    RTX 5090's `requires use of the NVIDIA open kernel modules` added "RmInitAdapter failed ->
    replace" (the GPU to be replaced) to the driver to install."""
    text = real(name)
    order = "gpu_count: 1\ncpu_cores: 1\nram: 1GB\nrdma: 1x10G\ninterconnect: nvlink"
    numbered = "".join(gutter.format(n=n) + line + "\n" for n, line in enumerate(text.splitlines(), 1))
    assert verdicts(tmp_path, name, numbered, order) == verdicts(tmp_path, name, text, order)


def test_a_df_with_every_line_commented_out_is_read(tmp_path: Path) -> None:
    """A df pasted with every line prefixed `# ` (a shell script's or a config's comment lines;
    edit: the CentOS 7.7 VM's `df -h` so prefixed under a `$ df -h` line): read as df (was:
    refused as "df run in a language other than English?")."""
    lines = (REAL / "df-h__centos-7.7-vm__lvm-root.txt").read_text().splitlines()
    text = "$ df -h\n" + "".join(f"# {line}\n" for line in lines)
    got = verdicts(tmp_path, "df.txt", text, "data_disk: /boot 500M\n")
    assert got["data_disk"][1] == "/dev/sda1 at /boot, 1.1 GB", got["data_disk"]


def test_docker_s_pull_lines_above_a_container_s_df_are_skipped(tmp_path: Path) -> None:
    """docker-library/official-images#1449: `docker run alpine:2.7 df` with docker's pull lines
    (`Unable to find image ...`, `Pull complete`, `Digest:`, `Status:`) above df's header (edit:
    the command line and the pull lines, as the issue shows them, put back above the df): read as
    the container's df (was: refused as "df run in a language other than English?")."""
    pulled = (
        "docker run alpine:2.7 df\nUnable to find image 'alpine:2.7' locally\n"
        "2.7: Pulling from library/alpine\n"
        "4dea34575ff3: Pull complete \n"
        "Digest: sha256:9f08005dff552038f0ad2f46b8e65ff3d25641747d3912e3ea8da6785046561a\n"
        "Status: Downloaded newer image for alpine:2.7\n"
    )
    text = pulled + (REAL / "df__alpine-2.7-container__overlay-root__official-images-1449.txt").read_text()
    got = verdicts(tmp_path, "df.txt", text, "data_disk: /data 10G\n")
    verdict, actual = got["data_disk"]
    assert verdict == "unverified" and "lists only some filesystems" in actual


def test_head_of_proc_cpuinfo_is_read_as_a_filtered_cpuinfo(tmp_path: Path) -> None:
    """`$ head -9 /proc/cpuinfo` above the first lines of a CPU block (edit: the Graviton
    capture's first 9 lines under that line): read as a cpuinfo filtered by head, its cores
    unverified (was: "not a recognised command output", as `| head -9` was not)."""
    lines = (REAL / "proc-cpuinfo__graviton-a1-cortex-a72__first-6-blocks__gprofiler-458.txt").read_text()
    text = "$ head -9 /proc/cpuinfo\n" + "".join(f"{line}\n" for line in lines.splitlines()[:9])
    verdict, actual = verdicts(tmp_path, "cpuinfo.txt", text, "cpu_cores: 8\n")["cpu_cores"]
    assert (
        verdict == "unverified" and "`head -9 /proc/cpuinfo` keeps only the lines head let through" in actual
    )


def test_a_tool_s_version_line_in_a_session_is_said_so(tmp_path: Path) -> None:
    """`# free -V` in a saved session printed procps' version line (edit: the H200 VM's `free -b`
    under `# free -b`, after `# free -V` and `free from procps-ng 3.3.16`): the version line is
    noted as such (was: "an empty file", its line read as the command) and the free judged."""
    text = "# free -V\nfree from procps-ng 3.3.16\n\n# free -b\n" + (REAL / "free-b__h200-vm.txt").read_text()
    saved = tmp_path / "free.txt"
    saved.write_text(text)
    notes: list[str] = []
    raw = offline.load_outputs([str(saved)], notes)
    assert "free" in raw
    assert any("free's version line (`free from procps-ng 3.3.16`)" in note for note in notes), notes
    assert not any("empty file" in note for note in notes), notes
