"""A saved `nvidia-bug-report.log` (and the `.log.gz` the script writes) is read as the outputs
it holds (api/bug_report.py): each section routed to the reader of that output, named in the
facts' sources, the sections not read named in a note, a log cut short read as incomplete.

No whole public bug report could be cited here, so each log is assembled, as nvidia-bug-report.sh
writes it, from real captures (tests/fixtures/real) under the script's own headings: the
separator line, `*** /proc/cpuinfo` with its `*** ls:` line (append), `dmesg:`, and
report_command's `/usr/bin/nvidia-smi --query` with the commands after it in the same section
(NVIDIA's script, driver 390.48 and the 2025 one: tests/fixtures/real/SOURCES.md, "nvidia-bug-report.sh
headings"). The captures are of several boxes: each test says what it asserts of which."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpuonboard.api import bug_report, offline
from gpuonboard.api.saved_bytes import gunzipped

REAL = Path(__file__).parents[2] / "fixtures" / "real"
SEP = "____________________________________________\n\n"
PROLOGUE = (
    "Start of NVIDIA bug report log file.  Please include this file, along\n"
    "with a detailed description of your problem, when reporting a graphics\n"
    "driver bug via the NVIDIA Linux forum (see forums.developer.nvidia.com)\n"
    "or by sending email to 'linux-bugs@nvidia.com'.\n\n"
    "nvidia-bug-report.sh Version: 34158455\n\n"
    "Date: Tue Apr 15 16:52:10 UTC 2025\n"
    "uname: Linux gpu01 6.8.0-57-generic #59-Ubuntu SMP x86_64 GNU/Linux\n"
    "command line flags: \n\n"
)
EPILOGUE = SEP.rstrip("\n") + "\n\nEnd of NVIDIA bug report log file.\n"
QUERY = "nvidia-smi-q__titan-v__1gpu__driver560.35.03.txt"
DMESG = "dmesg-T__xid-79-unknown-pid__titan-v.txt"


def _file(path: str, name: str) -> str:
    """append()'s section of a file: its path, its `ls -l` line, its text."""
    ls = f"*** ls: -r--r--r-- 1 root root 0 2025-04-15 16:52:11.000000000 +0000 {path}\n"
    return f"{SEP}*** {path}\n{ls}{(REAL / name).read_text()}\n"


def sections(dmesg: str | None = None) -> list[str]:
    """A log's sections in the script's order (the kernel log, `dmesg`'s text, given or the
    real Titan V one; the nvidia-smi section: report_command's commands without separators)."""
    kernel = (REAL / DMESG).read_text() if dmesg is None else dmesg
    smi = (REAL / QUERY).read_text()
    return [
        SEP + PROLOGUE,
        f"{SEP}*** /var/log/nvidia-installer.log does not exist\n\n",
        f"{SEP}/usr/bin/lspci -nnDvvvxxxx\n\n01:00.0 VGA compatible controller [0300]: NVIDIA Corporation\n",
        f"{SEP}/usr/sbin/dmidecode\n\n# dmidecode 3.5\n",
        f"{SEP}dmesg:\n\n{kernel}",
        _file("/proc/cpuinfo", "proc-cpuinfo__i5-8279u__vm-2socket-1core__jc.txt"),
        _file("/proc/meminfo", "meminfo__3.8gib-vm__jc.txt"),
        f"{SEP}/usr/bin/nvidia-smi --query\n\n{smi}\n/usr/bin/nvidia-smi --query --unit\n\n"
        "\n==============NVSMI LOG==============\n\nTimestamp                                 : Tue Apr 15"
        " 16:52:12 2025\nDriver Version                            : 560.35.03\n\nAttached Units"
        "                            : 0\n\n",
        EPILOGUE,
    ]


def judge(
    tmp_path: Path, name: str, data: bytes, order: str = ""
) -> tuple[dict[str, dict[str, str]], str, int]:
    """`gpuonboard facts --json` of one saved file: (rules by name, stderr, exit code)."""
    saved = tmp_path / name
    saved.write_bytes(data)
    args = [str(saved)]
    if order:
        (tmp_path / "order.yml").write_text(order)
        args += ["--order", str(tmp_path / "order.yml")]
    cmd = [sys.executable, "-c", "from gpuonboard.cli import main; main()", "facts", "--json", *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode in (0, 1), r.stderr
    return {c["name"]: c for c in json.loads(r.stdout)["rules"]}, r.stderr, r.returncode


ORDER = "gpu_model: TITAN V\ngpu_count: 1\n"


def test_a_bug_report_is_read_as_the_outputs_it_holds(tmp_path: Path) -> None:
    """Before, a saved nvidia-bug-report.log was read as one output of its first recognised kind
    (/proc/meminfo: `free`): exit 0, GO, the Xid 79 of its dmesg section and its GPU unread
    (gpu_xid not judged; gpu_count "no nvidia-smi output was given"). Now each section is read as
    its output: the Titan V of its `nvidia-smi --query`, the Xid 79 (the real Titan V log, of
    GPU 0000:02:00) fails gpu_xid, and the note names the sections read and those not."""
    rules, err, code = judge(tmp_path, "nvidia-bug-report.log", "".join(sections()).encode(), ORDER)
    assert code == 1
    assert rules["gpu_xid"]["verdict"] == "fail" and "Xid 79" in rules["gpu_xid"]["actual"], rules["gpu_xid"]
    assert rules["gpu_count"]["verdict"] == "pass" and rules["gpu_model"]["verdict"] == "pass"
    assert rules["nvidia_driver"]["actual"].startswith("driver 560.35.03")
    read = "read as its uname line, dmesg, /proc/cpuinfo, /proc/meminfo, nvidia-smi --query"
    assert f"an nvidia-bug-report.log, {read}" in err
    assert "lspci -nnDvvvxxxx" in err and "dmidecode" in err and "nvidia-smi --query --unit" in err


def test_each_output_names_its_section_as_its_source(tmp_path: Path) -> None:
    """The facts' sources name the log's section (`FILE (nvidia-bug-report.log: dmesg)`), as a
    collect_env report's do; `nvidia-smi --query --unit` (S-class units, no GPU) is not read as a
    second nvidia-smi output of the box."""
    saved = tmp_path / "nvidia-bug-report.log"
    saved.write_text("".join(sections()))
    notes: list[str] = []
    raw = offline.load_outputs([str(saved)], notes)
    assert sorted(raw) == ["free", "kernel", "kernel_log", "lscpu", "nvidia_smi_q"]
    assert raw["kernel"].stdout == "6.8.0-57-generic\n"  # (the prologue's `uname -a` line)
    found = offline._saved_outputs(saved, saved.read_bytes(), [])
    assert [where for _, _, where in found] == [
        f"{saved} (nvidia-bug-report.log: {name})"
        for name in ("uname line", "dmesg", "/proc/cpuinfo", "/proc/meminfo", "nvidia-smi --query")
    ]


def test_a_gzip_bug_report_of_one_member_per_section_is_read(tmp_path: Path) -> None:
    """nvidia-bug-report.sh pipes each section through `gzip -c >> nvidia-bug-report.log.gz`:
    one gzip member per section. Before, the file was refused ("a gzip file, not a saved command
    output: gunzip it"), exit 2. Now it is decompressed (every member, bounded) and judged as the
    same log saved plainly."""
    data = b"".join(gzip.compress(part.encode()) for part in sections())
    rules, err, code = judge(tmp_path, "nvidia-bug-report.log.gz", data, ORDER)
    plain, _, plain_code = judge(tmp_path, "nvidia-bug-report.log", "".join(sections()).encode(), ORDER)
    assert (code, {k: v["verdict"] for k, v in rules.items()}) == (
        plain_code,
        {k: v["verdict"] for k, v in plain.items()},
    )
    assert rules["gpu_xid"]["verdict"] == "fail"
    assert "nvidia-bug-report.log.gz: an nvidia-bug-report.log, read as its uname line, dmesg" in err


def test_a_bug_report_cut_in_its_kernel_log_leaves_gpu_xid_unverified(tmp_path: Path) -> None:
    """The real Titan V dmesg cut in-test after its first two lines (above its Xid 79 line), the
    file ending there without the script's `End of NVIDIA bug report log file.` (the script hung,
    or the copy was cut): the kernel log read is incomplete, so gpu_xid is unverified, never a
    pass ("no Xid"), and the sections after it (nvidia-smi) were never written: not judged.
    Before, the file was read as its first recognised output alone and gpu_xid was not judged."""
    kernel = "".join((REAL / DMESG).read_text().splitlines(keepends=True)[:2])
    parts = sections(kernel)
    cut = "".join(parts[: parts.index(next(p for p in parts if "dmesg:" in p)) + 1])
    rules, err, _ = judge(tmp_path, "nvidia-bug-report.log", cut.encode(), ORDER)
    assert rules["gpu_xid"]["verdict"] == "unverified", rules["gpu_xid"]
    assert rules["gpu_count"]["verdict"] == "unverified"
    assert "cut short" in err and "ends inside its dmesg section" in err


def test_a_bug_report_whose_script_hung_in_nvidia_smi_judges_no_gpu(tmp_path: Path) -> None:
    """A log that ends below `/usr/bin/nvidia-smi --query` (the script hung there: nvidia-smi
    blocks on a wedged driver; NVIDIA/open-gpu-kernel-modules#1150 "nvidia-bug-report.sh freezes
    during execution") holds no nvidia-smi answer: the GPU rules are unverified, the section
    named as the one the file ends inside, never a GPU missing."""
    parts = sections()
    cut = "".join(parts[:-2]) + f"{SEP}/usr/bin/nvidia-smi --query\n\n"
    rules, err, _ = judge(tmp_path, "nvidia-bug-report.log", cut.encode(), ORDER)
    assert rules["gpu_count"]["verdict"] == "unverified" and rules["gpu_model"]["verdict"] == "unverified"
    assert rules["gpu_xid"]["verdict"] == "fail"  # (the whole dmesg section above it)
    assert (
        "ends inside its nvidia-smi --query section" in err and "nvidia-smi --query (printed nothing)" in err
    )


def test_a_gzip_bomb_is_refused_before_it_expands() -> None:
    """A gzip that expands past the bound is refused in one clause, never expanded further (each
    step expands at most what is left of the bound)."""
    bomb = gzip.compress(b"\0" * (9 * 2**20))
    with pytest.raises(ValueError, match=r"^a gzip file that expands past 8 MiB \(a zip bomb"):
        gunzipped(bomb, 8 * 2**20)


def test_a_gzip_cut_short_gives_what_its_bytes_hold() -> None:
    """A `.log.gz` download cut short: the text up to the cut, said not ended (the log's missing
    last line then says it is cut)."""
    whole = gzip.compress("".join(sections()).encode())
    text, ended = gunzipped(whole[: len(whole) // 2], 2**20)
    assert not ended and text and "".join(sections()).encode().startswith(text)
    assert gunzipped(whole, 2**20) == ("".join(sections()).encode(), True)


@pytest.mark.parametrize(
    ("heading", "name", "kinds"),
    [
        ("*** /usr/bin/nvidia-smi -q", "nvidia-smi -q", ("nvidia_smi",)),
        ("/usr/bin/nvidia-smi nvlink --status", "nvidia-smi nvlink --status", ("nvidia_nvlink",)),
        (
            "/usr/bin/nvidia-smi nvlink --errorcounters",
            "nvidia-smi nvlink --errorcounters",
            ("nvidia_nvlink_errors",),
        ),
        ("/usr/bin/nvidia-smi nvlink --remotelinkinfo", "nvidia-smi nvlink --remotelinkinfo", ()),
        ("/usr/sbin/ibstat", "ibstat", ("rdma_ports",)),
        ("*** /proc/meminfo", "/proc/meminfo", ("free",)),
        ("/proc/cpuinfo", "/proc/cpuinfo", ("lscpu",)),  # (the 2009-2011 scripts: the path alone)
        ("*** /proc/driver/nvidia/version", "/proc/driver/nvidia/version", ()),
    ],
)
def test_each_heading_of_the_script_names_its_output(heading: str, name: str, kinds: tuple[str, ...]) -> None:
    found, whole = bug_report.sections(f"{SEP}{PROLOGUE}{SEP}{heading}\n\nsome output\n{EPILOGUE}")
    assert whole and [(s.name, s.kinds) for s in found][2] == (name, kinds)  # (after the prologue, its uname)


def test_sections_pasted_without_the_prologue_are_a_bug_report() -> None:
    """An issue's paste of two file sections of the log, its first lines left out."""
    text = "".join(sections()[5:7])
    assert bug_report.looks_like_bug_report(text)
    assert not bug_report.looks_like_bug_report((REAL / QUERY).read_text())


def test_the_scripts_grep_of_an_earlier_boots_journal_is_that_boots_history(tmp_path: Path) -> None:
    """The script's `Scanning kernel log files for NVIDIA kernel messages:` section: its
    `journalctl -b -1:` part (the real RTX 5080 journal lines, all NVRM lines, so its grep keeps
    each: Xid 38 and 109) is read as the earlier boot's kernel log narrowed by the grep, its faults
    history beside this boot's `dmesg:` section (the real H100 PCIe log: the driver does not
    support the GPU); its `journalctl -b -0:` part, this boot's log again, is read beside the
    dmesg section (its faults, the same ones, listed once). Before, the log was read as its
    /proc/meminfo alone."""
    journal = (REAL / "dmesg-journalctl-pl-locale__xid-38-109-ctx-switch-timeout__rtx5080.txt").read_text()
    kernel = (REAL / "dmesg__open-nvidia-ko-without-gsp__h100-pcie__driver535.86.06.txt").read_text()
    parts = sections(kernel)
    scanning = "Scanning kernel log files for NVIDIA kernel messages:\n\n"
    parts.insert(4, f"{SEP}{scanning}  journalctl -b -0:\n{kernel}\n  journalctl -b -1:\n{journal}\n")
    rules, err, _ = judge(tmp_path, "nvidia-bug-report.log", "".join(parts).encode())
    actual = rules["gpu_xid"]["actual"]
    assert "Xid 109 Context Switch Timeout Error (logged before the log's last reboot)" in actual
    assert (
        "the installed driver does not support this GPU" in actual and rules["gpu_xid"]["verdict"] == "fail"
    )
    assert "read as its uname line, journalctl -b -0 | grep NVRM, journalctl -b -1 | grep NVRM, dmesg," in err
    assert "journalctl -b -0 | grep NVRM" not in err.split("not read", 1)[1]


def test_nvidia_smis_failure_in_its_section_fails_the_driver(tmp_path: Path) -> None:
    """The box a bug report is made for is often one whose driver broke: its `nvidia-smi --query`
    section then holds nvidia-smi's own failure (the real line of
    tests/fixtures/sessions/transcript__lspci+lsmod+nvidia-smi-FAILED+python__L40S-vm.txt, line
    11, put in-test under both commands of the section). It is the box's answer, read as a saved
    failed nvidia-smi: nvidia_driver fails with its words, the GPU rules unverified. Before, the log
    was read as its /proc/meminfo alone: GO, exit 0 with an order of GPUs not judged."""
    session = REAL.parent / "sessions" / "transcript__lspci+lsmod+nvidia-smi-FAILED+python__L40S-vm.txt"
    failed = session.read_text().splitlines()[10] + "\n"
    assert failed.startswith("NVIDIA-SMI has failed because")
    parts = sections()
    parts[-2] = (
        f"{SEP}/usr/bin/nvidia-smi --query\n\n{failed}\n/usr/bin/nvidia-smi --query --unit\n\n{failed}\n"
    )
    rules, _, code = judge(tmp_path, "nvidia-bug-report.log", "".join(parts).encode(), ORDER)
    assert code == 1 and rules["nvidia_driver"]["verdict"] == "fail"
    assert rules["nvidia_driver"]["actual"].startswith("nvidia-smi failed (NVIDIA-SMI has failed because")
    assert rules["gpu_count"]["verdict"] == "unverified"


def test_a_bug_report_cut_inside_nvidia_smi_query_is_judged_of_what_was_read(tmp_path: Path) -> None:
    """The log cut in-test inside its `nvidia-smi --query` section, right below the Titan V's
    `Product Name` line (the real -q): the GPU the -q lists is counted (its `Attached GPUs: 1`), each
    health rule is unverified "of what was read", never a pass on fields cut away, and the dmesg
    section above is judged whole (Xid 79 fails). Before, the log was read as its /proc/meminfo."""
    parts = sections()
    at = next(i for i, part in enumerate(parts) if "/usr/bin/nvidia-smi --query" in part)
    cut = "".join(parts[:at]) + parts[at][: parts[at].index("    Product Brand")]
    rules, err, _ = judge(tmp_path, "nvidia-bug-report.log", cut.encode(), ORDER)
    assert rules["gpu_count"]["verdict"] == "pass" and rules["gpu_xid"]["verdict"] == "fail"
    for name in ("gpu_model", "ecc_mode", "pcie_link", "temperature", "throttling", "foreign_processes"):
        assert rules[name]["verdict"] == "unverified", rules[name]
    assert "ends inside its nvidia-smi --query section" in err


# the real H100 PCIe log's first three lines (the driver loading, no fault, its first stamp at
# 160 s: the dmesg section of a box whose ring buffer no longer reaches back to boot)
WRAPPED = "".join(
    (REAL / "dmesg__open-nvidia-ko-without-gsp__h100-pcie__driver535.86.06.txt")
    .read_text()
    .splitlines(True)[:3]
)
# the real pop-os kern.log (syslog lines, as `journalctl -b` prints them) through the script's
# `grep -e NVRM -e nvidia-`: its Xid 79 on GPU 0000:01:00 and the lines around it
POP_OS = (
    "dmesg-syslog__xid-79-fallen-off-bus__gdm-x-session-lines-outnumber-kernel"
    "__last-line-cut__pop-os-3363.txt"
)
GREPPED = "".join(
    line for line in (REAL / POP_OS).read_text().splitlines(True) if "NVRM" in line or "nvidia-" in line
)


def _scanning(head: str, text: str) -> str:
    """The script's `Scanning kernel log files for NVIDIA kernel messages:` section with one part."""
    return f"{SEP}Scanning kernel log files for NVIDIA kernel messages:\n\n  {head}:\n{text}\n"


@pytest.mark.parametrize("dmesg", [WRAPPED, ""], ids=["ring-buffer-wrapped", "dmesg-empty"])
def test_this_boots_journal_grep_is_read_beside_the_dmesg_section(tmp_path: Path, dmesg: str) -> None:
    """The `journalctl -b -0:` part of the script's scan (this boot's journal through its grep:
    the real pop-os Xid 79 lines) beside a dmesg section that no longer holds them (the real H100
    log's first three lines, a ring buffer that wrapped; or empty, cleared). Before, the -b -0
    part was named, not read: gpu_xid passed "no Xid" (GO). Now it is read as this boot's kernel
    log beside the dmesg section (alone where that is empty): Xid 79 fails, listed once."""
    parts = sections(dmesg)
    parts.insert(4, _scanning("journalctl -b -0", GREPPED))
    rules, err, code = judge(tmp_path, "nvidia-bug-report.log", "".join(parts).encode(), ORDER)
    assert code == 1 and rules["gpu_xid"]["verdict"] == "fail", rules["gpu_xid"]
    assert rules["gpu_xid"]["actual"].count("Xid 79") == 1
    assert "journalctl -b -0 | grep NVRM" in err.split("not read", 1)[0]


def test_a_fault_only_a_log_files_grep_holds_leaves_gpu_xid_unverified(tmp_path: Path) -> None:
    """The scan's `/var/log/messages:` part (a file of several boots, the grep dropped its boot
    lines) holds the real pop-os Xid 79 that the dmesg section (the real H100 log's first three
    lines) does not: of this boot or an earlier one, not known. Before: gpu_xid passed "no Xid".
    Now it is unverified, naming the line, never a fail on a boot not told."""
    parts = sections(WRAPPED)
    parts.insert(4, _scanning("/var/log/messages", GREPPED))
    rules, err, _ = judge(tmp_path, "nvidia-bug-report.log", "".join(parts).encode(), ORDER)
    assert rules["gpu_xid"]["verdict"] == "unverified", rules["gpu_xid"]
    assert "grep of /var/log/messages holds a GPU fault line" in rules["gpu_xid"]["actual"]
    assert "NVRM: Xid (PCI:0000:01:00): 79" in rules["gpu_xid"]["actual"]
    assert "of a boot it does not tell" in err


def test_a_session_that_pastes_the_head_of_a_bug_report_reads_its_other_commands(tmp_path: Path) -> None:
    """The real L40S session (tests/fixtures/sessions/
    transcript__lspci+lsmod+nvidia-smi-FAILED+python__L40S-vm.txt: `nvidia-smi` failed, the
    driver not loaded) with `$ head -12 nvidia-bug-report.log` and the
    script's first 12 lines appended in-test. Before, the whole file was read as a bug report
    (its uname line only): the failed nvidia-smi lost, nvidia_driver not judged. Now the session
    is split first: the failure fails nvidia_driver, the head read as a bug report's (cut short)."""
    session = (
        REAL.parent / "sessions" / "transcript__lspci+lsmod+nvidia-smi-FAILED+python__L40S-vm.txt"
    ).read_text()
    head = "".join((SEP + PROLOGUE).splitlines(True)[:12])
    text = session.rstrip("\n") + "\n\n$ head -12 nvidia-bug-report.log\n" + head
    rules, err, code = judge(tmp_path, "session.txt", text.encode(), ORDER)
    assert code == 1 and rules["nvidia_driver"]["verdict"] == "fail", rules["nvidia_driver"]
    assert "(`head -12 nvidia-bug-report.log`): an nvidia-bug-report.log, read as its uname line" in err
    assert "ends inside its `Start of NVIDIA bug report log file.` section" in err


def test_a_session_that_cats_a_whole_bug_report_reads_it_and_names_its_other_commands(tmp_path: Path) -> None:
    """`$ ls` then `$ cat nvidia-bug-report.log` and the whole log (the assembled one: the Titan V
    dmesg's Xid 79): before, the file was read whole as a bug report and the session's `ls` dropped
    unsaid; now the session is split, the log read as the `cat`'s output (gpu_xid fails on its Xid
    79) and `ls` named as not read."""
    text = "$ ls\nnvidia-bug-report.log\n$ cat nvidia-bug-report.log\n" + "".join(sections())
    rules, err, code = judge(tmp_path, "session.txt", text.encode(), ORDER)
    assert code == 1 and rules["gpu_xid"]["verdict"] == "fail"
    assert (
        "line 3 (`cat nvidia-bug-report.log`): an nvidia-bug-report.log, read as its uname line, dmesg" in err
    )
    assert "not read: line 1 (`ls`)" in err


def test_text_outside_the_bug_reports_separators_is_named(tmp_path: Path) -> None:
    """A line above the log's first separator (the command that printed it, pasted with it) and
    one after `End of NVIDIA bug report log file.`: before, both were dropped unsaid; now the
    note names each as not read."""
    text = "$ zcat nvidia-bug-report.log.gz\n" + "".join(sections()) + "copied on Tue Apr 15\n"
    _, err, _ = judge(tmp_path, "nvidia-bug-report.log", text.encode(), ORDER)
    assert "the text above its first separator line (`$ zcat nvidia-bug-report.log.gz`)" in err
    assert "the text after its last line (`copied on Tue Apr 15`)" in err


def test_the_ib_sections_commands_after_ibstat_are_pieces_of_their_own(tmp_path: Path) -> None:
    """The IB section as the 2025 script prints it: ibstat (the real one-CA capture, mlx5_7's
    port down), then `Running InfiniBand commands for device: mlx5_7` and report_command's
    `/usr/sbin/ibnetdiscover -C mlx5_7` with its failure (the real lines of
    treydock/infiniband_exporter#26). Before, those were glued into ibstat's piece, read as a
    listing that stopped early: rdma_ports unverified. Now each heading splits: the down port
    fails, the ibnetdiscover piece named as not read."""
    ibstat = (REAL / "ibstat__one-ca-named-mlx5_7__port-down__sriov-pod.txt").read_text()
    failed = (
        "ibwarn: [298726] mad_rpc_open_port: client_register for mgmt 1 failed\n"
        "/var/tmp/OFED_topdir/BUILD/rdma-core-2307mlnx47/libibnetdisc/ibnetdisc.c:802;"
        " can't open MAD port ((null):0)\n"
        "ibnetdiscover: iberror: failed: discover failed\n"
    )
    ib = (
        f"{SEP}/usr/sbin/ibstat\n\n{ibstat}\nRunning InfiniBand commands for device: mlx5_7\n\n"
        f"/usr/sbin/ibnetdiscover -C mlx5_7\n\n{failed}\n"
    )
    parts = sections()
    parts.insert(-1, ib)
    order = ORDER + 'rdma: "1x400G InfiniBand"\n'
    rules, err, _ = judge(tmp_path, "nvidia-bug-report.log", "".join(parts).encode(), order)
    assert rules["rdma_ports"]["verdict"] == "fail", rules["rdma_ports"]
    assert "mlx5_7/1 DOWN" in rules["rdma_ports"]["actual"]
    assert "ibnetdiscover -C mlx5_7" in err.split("not read", 1)[1]


def test_a_bug_report_section_gives_way_to_the_same_output_saved_apart(tmp_path: Path) -> None:
    """A vendor's folder: the bug report (its dmesg section the real H100 log's first three
    lines, no fault) and the box's `dmesg.txt` saved apart (the real Titan V log, Xid 79).
    Before: refused, "a second kernel_log output", exit 2. Now the file saved apart is judged
    (Xid 79 fails) and the section named as not read; a section holding a fault the file does not
    would still be refused (never dropped)."""
    (tmp_path / "nvidia-bug-report.log").write_text("".join(sections(WRAPPED)))
    (tmp_path / "dmesg.txt").write_text((REAL / DMESG).read_text())
    notes: list[str] = []
    raw = offline.load_outputs([str(tmp_path)], notes)
    assert "Xid (PCI:0000:02:00): 79" in raw["kernel_log"].stdout
    assert any(
        "(nvidia-bug-report.log: dmesg): not read:" in n and "dmesg.txt, saved apart" in n for n in notes
    )
    (tmp_path / "dmesg.txt").write_text(WRAPPED)
    (tmp_path / "nvidia-bug-report.log").write_text("".join(sections()))  # (its Xid 79 the file lacks)
    with pytest.raises(offline.UsageError, match="a second kernel log output"):
        offline.load_outputs([str(tmp_path)], [])


# the real mcelog#70 kern.log (an uncorrected machine check, bank 4, at boot) as dmesg prints it:
# each line's syslog prefix (`Sep 16 19:51:15 kernel: `) cut off in-test
MCE = "".join(
    line.split("kernel: ", 1)[1]
    for line in (REAL / "kern-log__mce-uncorrected-bank4-at-boot__mcelog-70.txt").read_text().splitlines(True)
)
H100 = (REAL / "dmesg__open-nvidia-ko-without-gsp__h100-pcie__driver535.86.06.txt").read_text()


def _grep(text: str) -> str:
    """The script's `grep -e NVRM -e nvidia-` of a log."""
    return "".join(line for line in text.splitlines(True) if "NVRM" in line or "nvidia-" in line)


def test_a_bug_report_cut_in_its_dmesg_section_keeps_the_host_errors_it_read(tmp_path: Path) -> None:
    """A bug report whose dmesg section (the real mcelog#70 machine check lines, then the real H100
    PCIe log) the file ends inside (no section after it: cut), with the scan's `journalctl -b -0:`
    part (the H100 log through the script's grep) before it. Before, both this boot's logs were
    partial and the journal's grep was taken as the base, the dmesg section only beside it for
    its GPU faults: host_hw_errors gave no row (the uncorrected machine check lost, GO on the
    host). Now the dmesg section is the base, cut or not: host_hw_errors fails on CPU 0 bank 4."""
    parts = sections(MCE + H100)[:5]
    parts.insert(4, _scanning("journalctl -b -0", _grep(H100)))
    rules, _, code = judge(tmp_path, "nvidia-bug-report.log", "".join(parts).encode(), ORDER)
    assert code == 1
    host = rules["host_hw_errors"]
    assert host["verdict"] == "fail" and "CPU 0 bank 4: uncorrected machine check" in host["actual"], host


def test_this_boots_journal_fault_is_judged_beside_the_same_fault_of_an_earlier_boot(tmp_path: Path) -> None:
    """The scan's `journalctl -b -0:` and `journalctl -b -1:` parts both hold the real pop-os Xid 79
    (the same lines: the GPU fell off the bus in both boots), beside a dmesg section without it
    (the real H100 log's first three lines). Before, this boot's fault was taken as known from
    the earlier boot's: gpu_xid warned "logged before the log's last reboot". Now this boot's
    Xid 79 fails gpu_xid (the earlier boot's still said)."""
    parts = sections(WRAPPED)
    parts.insert(4, _scanning("journalctl -b -0", GREPPED) + f"\n  journalctl -b -1:\n{GREPPED}\n")
    rules, _, code = judge(tmp_path, "nvidia-bug-report.log", "".join(parts).encode(), ORDER)
    xid = rules["gpu_xid"]
    assert code == 1 and xid["verdict"] == "fail", xid
    assert "Xid 79 GPU has fallen off the bus -> reboot" in xid["actual"]


def test_the_journal_grep_does_not_repeat_a_dmesg_fault_under_an_unnamed_gpu(tmp_path: Path) -> None:
    """The real H100 PCIe log (`nvidia: probe of 0000:01:00.0 failed`, then `NVRM: The NVIDIA probe
    routine failed for 1 device(s).`) as the dmesg section and, through the script's grep (which
    drops the `nvidia: probe of` line), as the scan's `journalctl -b -0:` part. Before, the
    journal's probe failure, no GPU named, was listed again: "a GPU (no PCI address in the
    message): ... the driver failed to probe a GPU -> reboot" beside the named GPU's
    `-> install_driver`. Now it is the dmesg section's same fault, listed once."""
    parts = sections(H100)
    parts.insert(4, _scanning("journalctl -b -0", _grep(H100)))
    rules, _, _ = judge(tmp_path, "nvidia-bug-report.log", "".join(parts).encode(), ORDER)
    xid = rules["gpu_xid"]
    assert "0000:01:00.0" in xid["actual"] and "install_driver" in xid["actual"], xid
    assert "no PCI address" not in xid["actual"], xid


@pytest.mark.parametrize(
    ("dmesg", "name", "saved"),
    [
        (MCE + H100, "dmesg.txt", H100),  # (the section's GPU lines, without its machine check)
        (
            MCE + WRAPPED,
            "session.txt",
            "root@gpu01:~# dmesg | grep NVRM\n" + _grep(WRAPPED) + "root@gpu01:~# \n",
        ),
    ],
    ids=["dmesg-without-the-mce", "grep-nvrm-session"],
)
def test_a_section_holding_a_host_error_the_file_saved_apart_lacks_is_refused(
    tmp_path: Path, dmesg: str, name: str, saved: str
) -> None:
    """A bug report whose dmesg section holds the real mcelog#70 machine check and the real H100
    log (whole; or its first three lines), beside a file saved apart holding the H100 log
    (whole; or a session's `dmesg | grep NVRM` of its three lines: narrowed). Before, the section
    gave way where the file held its GPU faults (compared alone): the uncorrected machine check
    dropped (host_hw_errors no row, GO), and the grep's narrowing made gpu_xid unverified. Now
    the file gives way only where it holds every fault of the section, the host's too, and is as
    whole: refused, as two rival logs."""
    (tmp_path / "nvidia-bug-report.log").write_text("".join(sections(dmesg)))
    (tmp_path / name).write_text(saved)
    with pytest.raises(offline.UsageError, match="a second kernel log output"):
        offline.load_outputs([str(tmp_path)], [])


def test_a_gzip_bug_report_cut_in_its_last_member_leaves_the_whole_sections_whole(tmp_path: Path) -> None:
    """A bug report .gz of one member per section (the real H100 log's first three lines as its
    dmesg section, no fault; the Titan V `--query`, /proc/meminfo), cut in-test halfway through
    its last member (/proc/cpuinfo's). Before, every output of the cut gzip was incomplete: the
    dmesg section's pass made unverified (gpu_xid, nvswitch_sxid). Now only the section the file
    ends inside is cut (its note says so): gpu_xid passes on the whole dmesg section."""
    parts = sections(WRAPPED)[:-1]
    parts = [*parts[:5], *parts[6:], parts[5]]  # (/proc/cpuinfo last)
    members = [gzip.compress(part.encode()) for part in parts]
    data = b"".join(members[:-1]) + members[-1][: len(members[-1]) // 2]
    rules, err, _ = judge(tmp_path, "nvidia-bug-report.log.gz", data, ORDER)
    # (its 3 lines each hold `nvidia`, as a `grep -i nvidia` keeps them, which may drop an Xid
    # line: gpu_xid unverified for that since round 31, never for the gzip's cut)
    assert rules["gpu_xid"]["verdict"] == "unverified", rules["gpu_xid"]
    assert "it holds only lines with `nvidia`" in rules["gpu_xid"]["actual"]
    assert "cut" not in rules["gpu_xid"]["actual"]
    # (and every line is the GPU driver's, its load banner not among them: an excerpt, which says
    # nothing of the NVSwitch driver's SXids, round 35; never unverified for the gzip's cut)
    assert rules["nvswitch_sxid"]["verdict"] == "unverified", rules["nvswitch_sxid"]
    # (round 38: 2 kinds of line within 1 s, `nvidia` and `nvidia-nvlink`: picked lines whatever
    # their stamps, the reason said first)
    assert "picked from the log" in rules["nvswitch_sxid"]["actual"]
    assert "cut" not in rules["nvswitch_sxid"]["actual"]
    assert "ends inside its /proc/cpuinfo section" in err
