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
    support the GPU); its `journalctl -b -0:` part, this boot's log again, is named, not read (a
    rival of the dmesg section). Before, the log was read as its /proc/meminfo alone."""
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
    assert "read as its uname line, journalctl -b -1 | grep NVRM, dmesg," in err
    assert "journalctl -b -0 | grep NVRM" in err.split("not read", 1)[1]


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
