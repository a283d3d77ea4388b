"""Round 36 (measure36b, measure36e): host tool outputs the readers misread: a poster's notes
after lscpu's values (`Core(s) per socket: 64  #每个CPU插槽的核心数`), an ibstat indented by one
blank, /proc/meminfo under a script's heading, numactl's CPU lists wrapped by a mail client, an
lsblk that shows the ordered mount point is not there."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api.saved_text import unquote

from ..offline_judge import checks

REAL = Path(__file__).parents[2] / "fixtures" / "real"
KUNPENG = (
    REAL
    / "session__zsh-prompts__numactl-H-4node-then-lscpu__kunpeng-920-2x64c__posters-hash-notes-after-values"
    "__zhblog.txt"
)


@pytest.mark.parametrize(("cores", "verdict"), [(128, "pass"), (256, "fail")])
def test_an_lscpu_with_the_posters_notes_after_its_values_is_read(
    tmp_path: Path, cores: int, verdict: str
) -> None:
    """`Core(s) per socket: 64  #每个CPU插槽的核心数`, `Socket(s): 2  #CPU插槽数。`: the notes
    follow two blanks and a `#` with no blank after it; 2 x 64 cores (was unverified, "lscpu
    gave no readable output ... run lscpu on the box to see why")."""
    got = checks(tmp_path, "session.txt", KUNPENG.read_text(), f"cpu_cores: {cores}\nram: 942GB\n")
    rules = {c.name: c for c in got}
    assert rules["cpu_cores"].verdict == verdict, rules["cpu_cores"]
    assert rules["ram"].verdict == "pass", rules["ram"]


def test_a_kernels_cpu_numbers_after_two_blanks_are_no_note() -> None:
    """The kernel's `.... node  #0, CPUs:        #1   #2` (smpboot) keeps its `#N` marks, and
    a line that is a comment from its start is kept whole."""
    boot = "[    0.220000] .... node  #0, CPUs:        #1   #2   #3"
    assert unquote(boot) == boot
    assert unquote("# gpu   pwr  gtemp") == "# gpu   pwr  gtemp"
    assert unquote("CPU(s):     128  #逻辑cpu的数量") == "CPU(s):     128"
    assert unquote("MemTotal:  16384 kB\t#total") == "MemTotal:  16384 kB"


def test_an_lscpu_text_nothing_is_read_from_names_its_lines_not_the_box(tmp_path: Path) -> None:
    """Notes after `//` (a test input made from the Kunpeng paste): nothing counted, unverified,
    and the sentence names the count lines and asks for the plain output, never "run lscpu on
    the box to see why" as if the box failed."""
    text = KUNPENG.read_text().replace("  #", "  // ")
    got = checks(tmp_path, "session.txt", text, "cpu_cores: 128\n")
    cpu = next(c for c in got if c.name == "cpu_cores")
    assert cpu.verdict == "unverified", cpu
    assert cpu.actual == "unknown: no CPU count could be read from the lscpu output", cpu
    assert "`Core(s) per socket: 64 // 每个CPU插槽的核心数`" in cpu.detail, cpu.detail
    assert "to see why" not in cpu.detail, cpu.detail


IBSTAT_SHIFTED = (
    REAL / "ibstat__mlx4-qdr-40g-1port-active__prompt-line-then-ca-line-one-blank-in__fedora-ib-guide.txt"
)


@pytest.mark.parametrize(("order", "verdict"), [('rdma: "1x40G QDR"\n', "pass"), ('rdma: "2x40G"\n', "fail")])
def test_an_ibstat_whose_ca_line_a_page_indented_is_read(tmp_path: Path, order: str, verdict: str) -> None:
    """`# ibstat` then ` CA 'mlx4_0'` (one blank before it): its port read, 1 x 40 Gb/s active
    (was unverified, "no port listed ... no line of it is a port line": read as sysfs lines)."""
    got = checks(tmp_path, "ibstat.txt", IBSTAT_SHIFTED.read_text(), order)
    rdma = next(c for c in got if c.name == "rdma_ports")
    assert rdma.verdict == verdict, rdma
    assert "port line" not in rdma.actual + rdma.detail, rdma


@pytest.mark.parametrize(
    ("name", "command"),
    [
        ("ibstat__connectx6-hdr100__pf_plus_sriov-vf-both-active__bare-metal-host.txt", "ibstat"),
        ("ibstatus__a100-hdr200__all-active__gpud.txt", "ibstatus"),
        ("ibv_devinfo__connectx3-mlx4__2hca-2of4-ports-down.txt", "ibv_devinfo"),
    ],
)
@pytest.mark.parametrize("shift", ["first", "all"])
def test_an_rdma_listing_indented_under_its_prompt_reads_as_the_tools(
    tmp_path: Path, name: str, command: str, shift: str
) -> None:
    """The class: under its prompt line at the margin, a page indented the listing's first line
    (one blank) or the whole listing (4 blanks): the same ports, the same verdict."""
    text = (REAL / name).read_text()
    lines = text.split("\n")
    indented = ["    " + line if line else line for line in lines]
    shifted = [" " + lines[0], *lines[1:]] if shift == "first" else indented
    order = 'rdma: "1x100G InfiniBand"\n'
    want = next(c for c in checks(tmp_path, "rdma.txt", text, order) if c.name == "rdma_ports")
    got = checks(tmp_path, "rdma.txt", f"# {command}\n" + "\n".join(shifted), order)
    rdma = next(c for c in got if c.name == "rdma_ports")
    assert (rdma.verdict, rdma.actual) == (want.verdict, want.actual), (rdma, want)


ORDERBOOK = (
    REAL / "script-blocks__date-uname-lscpu-meminfo-under-dash-headings-no-blank-lines__kvm-epyc-9654-44vcpu"
    "__orderbook-case.txt"
)


@pytest.mark.parametrize(("ram", "verdict"), [("176GB", "pass"), ("192GB", "fail")])
def test_meminfo_under_a_heading_with_no_blank_line_above_is_read(
    tmp_path: Path, ram: str, verdict: str
) -> None:
    """`---- lscpu ----`, lscpu, `---- meminfo ----`, `MemTotal: 187511724 kB` with no blank
    line before either heading: each part read (was: the whole read as lscpu, ram "no free
    output was given")."""
    got = {
        c.name: c for c in checks(tmp_path, "env.txt", ORDERBOOK.read_text(), f"cpu_cores: 44\nram: {ram}\n")
    }
    assert got["ram"].verdict == verdict, got["ram"]
    assert got["ram"].actual.startswith("178.8 GiB"), got["ram"]
    assert got["cpu_cores"].verdict == "pass", got["cpu_cores"]


def test_a_one_sided_heading_with_no_blank_line_above_cuts_nothing() -> None:
    """`## GPU` or `--- CPU` right under a line may be a comment or a rule of the output: only a
    heading marked on both sides cuts without a blank line above it."""
    from gpuonboard.api import script_blocks
    from gpuonboard.api.saved_kinds import detect_kind

    text = ORDERBOOK.read_text().replace("---- meminfo ----", "---- meminfo")
    assert script_blocks.split(text, detect_kind) is None


POWERKVM = REAL / "numactl-H__powerkvm-3node-200cpu-memoryless__cpu-lists-wrapped-by-mail__linux-mm-2014.txt"


def test_numactl_cpu_lists_a_mail_wrapped_count_every_line() -> None:
    """Node 0's CPUs 0-99 over 5 lines, node 1's 100-199 over 6: 200 CPUs, the wrap said (was
    "38 CPUs", each list's first line alone, with no word)."""
    from gpuonboard.api.shown import shown

    said = shown("numactl", POWERKVM.read_text())
    assert said.startswith("numactl --hardware: 3 NUMA nodes, 200 CPUs, "), said
    assert "its CPU lists wrapped over several lines: 9 lines of CPU numbers read as their node's" in said


def test_a_wrap_that_cut_a_cpu_number_counts_no_cpus() -> None:
    """`... 22 2` / `3 24 ...` (a column wrap inside `23`): read joined, CPUs 2 and 3 twice, so
    no count is certain: CPUs not read, never a count one off."""
    from gpuonboard.api.shown import shown

    text = POWERKVM.read_text().replace("21 22\n23 24", "21 22 2\n3 24")
    said = shown("numactl", text)
    assert "CPUs not read" in said and "a wrap cut a number" in said, said


@pytest.mark.parametrize(("ram", "verdict"), [("2GB", "pass"), ("4GB", "unverified")])
def test_numactl_ram_with_wrapped_cpu_lists_is_unchanged(tmp_path: Path, ram: str, verdict: str) -> None:
    """The wrapped lines are no cut: node 0's 1998 MiB with CPUs is the RAM (the CPU-less node's
    2039 MiB left out, unverified where only the sum with it meets the order)."""
    got = {c.name: c for c in checks(tmp_path, "numactl.txt", POWERKVM.read_text(), f"ram: {ram}\n")}
    assert got["ram"].verdict == verdict, got["ram"]


UNMOUNTED = (
    REAL / "lsblk__vm-sda-root-timeshift_nvme0n1p1-3.5t-no-mountpoint__copied-command__zh-nfs-notes.txt"
)


def test_an_lsblk_with_nothing_at_the_ordered_mount_says_so(tmp_path: Path) -> None:
    """No df, an lsblk of every mount point: nothing at /mnt/data, the 3.5T NVMe unmounted. Still
    unverified (a network share or tmpfs is in no lsblk), but said, with the idle disk named
    (was "no df output was given", the lsblk ignored)."""
    got = checks(
        tmp_path, "lsblk.txt", UNMOUNTED.read_text(), "data_disk: {mount: /mnt/data, min_size: 3.84TB}\n"
    )
    disk = next(c for c in got if c.name == "data_disk")
    assert disk.verdict == "unverified", disk
    assert disk.actual.startswith("unknown: lsblk shows no device mounted at /mnt/data"), disk.actual
    assert "a network share, tmpfs" in disk.detail and "nvme0n1 (3.8 TB to 3.9 TB" in disk.detail, disk.detail


def test_an_lsblk_with_a_mount_above_the_ordered_path_is_judged_as_before(tmp_path: Path) -> None:
    """/mnt/data under a disk lsblk shows at /mnt (a test input from the same lsblk): that
    disk's directory, so lsblk alone says nothing of a missing mount: not judged, as before."""
    text = UNMOUNTED.read_text().replace("0   3.5T  0 part", "0   3.5T  0 part /mnt")
    got = checks(tmp_path, "lsblk.txt", text, "data_disk: {mount: /mnt/data}\n")
    disk = next(c for c in got if c.name == "data_disk")
    assert (disk.verdict, disk.actual) == ("unverified", "not judged: no df output was given"), disk


@pytest.mark.parametrize(
    ("name", "cpus"),
    [
        ("docker-info__docker-19.03.11__fedora-32-vm__total-memory-7.768gib__kata-containers-717.txt", "4"),
        ("docker-info__docker-28.0.0-rc.1__nvidia-runtime.txt", "2"),
    ],
)
def test_docker_info_s_cpus_are_named_never_judged_as_the_box_s_cores(
    tmp_path: Path, name: str, cpus: str
) -> None:
    """A docker info alone: cpu_cores names its `CPUs: N` as ram names its `Total Memory` (m36b
    12: the rows were inconsistent), still not judged: the threads of the machine docker runs on."""
    got = {
        c.name: c for c in checks(tmp_path, "docker-info.txt", (REAL / name).read_text(), "cpu_cores: 2\n")
    }
    cpu = got["cpu_cores"]
    assert cpu.verdict == "unverified", cpu
    # (docker 28's daemon runs natively on Linux, `Context: default`, but nothing else given shows
    # its `Name:` or kernel is the box's: not shown to be the box's own, revT F1)
    whose = (
        "the machine docker runs on, not shown to be the box's cores: its `Name:"
        " nvidia-container-toolkit-1-17-6-docker-28-0-0-rc-1`, and no other output of the box was given"
        " (a copied prompt's host, `uname -a`) to match its host name or kernel to)"
        if "28.0.0" in name
        else "the machine docker runs on, which may be a VM's or Docker Desktop's, not the box's cores)"
    )
    assert cpu.actual == (
        f"not judged: no lscpu output was given (the docker info given says `CPUs: {cpus}`: the CPU"
        f" threads of {whose}"
    ), cpu.actual


@pytest.mark.parametrize(
    ("name", "order", "rule"),
    [
        (
            "lscpu__epyc-2x64c-256cpu-8numa__paste-from-online-list__hackmd.txt",
            "cpu_cores: 128\n",
            "cpu_cores",
        ),
        ("meminfo__3.57gib__node-exporter.txt", "ram: 4GB\n", "ram"),
        ("free-b__h200-vm.txt", "ram: 64GB\n", "ram"),
        ("numactl-H__c5n.18xlarge-2node-184.9gib__aws-c-s3-403.txt", "ram: 184GB\n", "ram"),
        (
            "ibstat__cx6dx-mt4125__2port-roce-100g-active__l2fwd-nv-6.txt",
            'rdma: "2x100G RoCE"\n',
            "rdma_ports",
        ),
    ],
)
def test_every_key_value_reader_reads_past_a_posters_notes(
    tmp_path: Path, name: str, order: str, rule: str
) -> None:
    """The class: a note after every value line (`  #注释`, no blank after the `#`) leaves each
    key: value reader's verdict as it is without them (lscpu, /proc/meminfo, numactl, ibstat)."""
    text = (REAL / name).read_text()
    noted = "\n".join(f"{line}  #注释" if line.strip() and ":" in line else line for line in text.split("\n"))
    want = next(c for c in checks(tmp_path, "out.txt", text, order) if c.name == rule)
    got = next(c for c in checks(tmp_path, "out.txt", noted, order) if c.name == rule)
    assert (got.verdict, got.actual) == (want.verdict, want.actual), (got, want)


@pytest.mark.parametrize(
    ("name", "command", "order", "rule"),
    [
        ("numactl-H__c5n.18xlarge-2node-184.9gib__aws-c-s3-403.txt", "numactl -H", "ram: 184GB\n", "ram"),
        ("meminfo__3.57gib__node-exporter.txt", "cat /proc/meminfo", "ram: 4GB\n", "ram"),
        ("free-b__h200-vm.txt", "free -b", "ram: 128GB\n", "ram"),
        (
            "lscpu__epyc-2x64c-256cpu-8numa__paste-from-online-list__hackmd.txt",
            "lscpu",
            "cpu_cores: 128\n",
            "cpu_cores",
        ),
    ],
)
@pytest.mark.parametrize("shift", ["first", "all"])
def test_an_output_a_page_shifted_under_its_prompt_line_is_read(
    tmp_path: Path, name: str, command: str, order: str, rule: str, shift: str
) -> None:
    """The class beside ibstat's: under `$ CMD` at the margin, the output's first line one blank
    in (a copy's selection artefact) or the whole output indented: the verdict of the output
    saved alone (was: ` available: 2 nodes` under `$ numactl -H` refused as no known output)."""
    text = (REAL / name).read_text()
    lines = text.split("\n")
    indented = ["    " + line if line else line for line in lines]
    shifted = [" " + lines[0], *lines[1:]] if shift == "first" else indented
    want = next(c for c in checks(tmp_path, "out.txt", text, order) if c.name == rule)
    got = next(
        c for c in checks(tmp_path, "out.txt", f"$ {command}\n" + "\n".join(shifted), order) if c.name == rule
    )
    assert (got.verdict, got.actual) == (want.verdict, want.actual), (got, want)
