"""Views a provider restricts, against real captures: what the login is shown is not the box.

A gVisor sandbox answers `dmesg` with its own emulated kernel's lines: the host kernel, whose
NVIDIA driver logs Xids, is out of sight, so no Xid there is no evidence (it passed). lxcfs
shows a container's CPU set as the online CPUs of the host's lscpu, whose core count is the
host's: the online CPUs of an SMT host may be hyperthreads of fewer cores (it passed).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts import kernel_log, kernel_refusal
from gpuonboard.facts.extra_probes import KERNEL_LOG_PATTERN
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.steps.checks import fabric_health

from ...offline_judge import checks, verdicts

REAL = Path(__file__).parents[3] / "fixtures" / "real"
GVISOR = "dmesg__gvisor-sandbox__emulated-kernel-log__k8s-image-builder-docs.txt"
H200 = "nvidia-smi__h200__1gpu__driver580.159.04.txt"
# a kernel's own log of a box with no Xid (control): the same rules pass it
# a WSL2 guest's `dmesg`: its GPU's driver is the Windows host's (microsoft/WSL #9029)
WSL_GUEST = "dmesg__wsl2-guest-dxgkrnl-ioctl-failed-no-nvrm__wsl-9029.txt"
# a WSL2 guest's boot as `dmesg` prints it, its `Linux version ...-microsoft-standard-WSL2` first
WSL_BOOT = "dmesg__wsl2-guest-boot-head-linux-version-microsoft-standard__wsl-7770.txt"
KERNEL_LOGS = sorted(p.name for p in REAL.glob("dmesg*") if p.name not in (GVISOR, WSL_GUEST, WSL_BOOT))


def test_a_sandbox_kernels_log_is_no_evidence_offline(tmp_path: Path) -> None:
    """The saved `dmesg` of a gVisor pod: gpu_xid and nvswitch_sxid passed "no Xid in the kernel
    log"; now unverified, naming the sandbox's first line and asking for the host's log."""
    text = (REAL / GVISOR).read_text()
    found = {c.name: c for c in checks(tmp_path, GVISOR, text)}
    for name, what in (("gpu_xid", "Xid"), ("nvswitch_sxid", "SXid")):
        check = found[name]
        assert check.verdict == "unverified", check
        assert check.actual == (
            "kernel log not readable: the sandbox's own (its first line '[    0.000000] Starting gVisor...')"
        )
        assert f"whose NVIDIA driver logs {what}s" in check.detail
        assert "the host's kernel log" in check.detail


@pytest.mark.parametrize("caption", ["sandbox log:", "Output:", "root@pod:~# cmd"])
def test_a_sandbox_kernels_log_under_a_caption_is_no_evidence(tmp_path: Path, caption: str) -> None:
    """The saved gVisor `dmesg` with a line pasted above it (a caption, a prompt with a command
    this tool does not know): the banner is the log's first stamped line, so gpu_xid is still
    unverified (it passed "no Xid in the kernel log (the log read starts after boot)")."""
    text = caption + "\n" + (REAL / GVISOR).read_text()
    assert verdicts(tmp_path, GVISOR, text)["gpu_xid"] == (
        "unverified",
        "kernel log not readable: the sandbox's own (its first line '[    0.000000] Starting gVisor...')",
    )


def test_a_sandbox_kernels_log_is_no_evidence_live() -> None:
    """Live, the probe keeps only the driver's lines (none here) and heads its output with the
    log's first line: that line tells the sandbox (it passed "no Xid since boot": the line is
    at 0.000000, so the log seemed to reach back to boot)."""
    text = (REAL / GVISOR).read_text()
    kept = [line for line in text.splitlines() if re.search(KERNEL_LOG_PATTERN, line)]
    assert kept == []
    first = text.splitlines()[0]
    out = ProbeOutput(f"# source: dmesg\n# first: {first}\n", "", 0)
    log = kernel_log.parse_kernel_log(out.stdout)
    assert log.sandbox == "[    0.000000] Starting gVisor..." and log.covers_boot
    facts = parse_facts({"kernel_log": out})
    found = {c.name: c for c in fabric_health.health_checks(facts)}
    assert found["gpu_xid"].verdict == "unverified"
    assert found["nvswitch_sxid"].verdict == "unverified"


def test_the_live_probe_on_a_sandbox_kernel_is_no_evidence(tmp_path: Path) -> None:
    """The live probe's own shell run where `dmesg` prints the gVisor capture: unverified."""
    from ...facts.test_kernel_log_probe_filter import _probe

    out = ProbeOutput(_probe(tmp_path, REAL / GVISOR), "", 0)
    assert out.stdout.splitlines()[1] == "# first: [    0.000000] Starting gVisor..."
    found = {c.name: c for c in fabric_health.health_checks(parse_facts({"kernel_log": out}))}
    assert found["gpu_xid"].verdict == "unverified"
    assert found["nvswitch_sxid"].verdict == "unverified"


def test_a_sandbox_banner_under_any_time_stamp(tmp_path: Path) -> None:
    """`dmesg -T` prints the same line under a date: still the sandbox's log."""
    text = (REAL / GVISOR).read_text().replace("[    0.000000]", "[Thu Jan  1 00:00:00 1970]", 1)
    assert verdicts(tmp_path, "dmesg.txt", text)["gpu_xid"][0] == "unverified"


@pytest.mark.parametrize("name", KERNEL_LOGS)
def test_no_kernels_own_log_is_taken_for_a_sandbox(name: str) -> None:
    """No real kernel log reads as a sandbox's."""
    assert kernel_log.parse_kernel_log((REAL / name).read_text(errors="replace")).sandbox is None


def test_the_sandbox_log_beside_the_gpus_still_judges_them(tmp_path: Path) -> None:
    """With the box's nvidia-smi beside it, the GPU rules are judged as before; only the kernel
    log rules are unverified."""
    folder = tmp_path / "box"
    folder.mkdir()
    (folder / GVISOR).write_text((REAL / GVISOR).read_text())
    (folder / H200).write_text((REAL / H200).read_text())
    from gpuonboard.api import offline

    judged = {c.name: c for c in offline.judge(parse_facts(offline.load_outputs([str(folder)])), None)}
    assert judged["gpu_xid"].verdict == "unverified"
    assert judged["temperature"].verdict == "pass"


# lscpu in a Kubernetes container under lxcfs: CPUs 8, 9, 24, 25 of a 2 x 8-core SMT host online
LXCFS = "lscpu__xeon-silver-4110__2socket-32cpu__k8s-lxcfs-4-online__threads-per-core-0.txt"
OFFLINE = "lscpu__xeon-e5-2630v4__2socket__36-of-40-cpus-offline.txt"  # 4 of 40 online, bare metal
EPYC_255 = "lscpu__amd-epyc-7742__2socket-256cpu__cpu255-offline__bench-notes.txt"


def test_lxcfs_online_cpus_of_an_smt_host_may_be_hyperthreads(tmp_path: Path) -> None:
    """lxcfs shows the container's 4 CPUs as the online ones (two cores' threads here: 8/24, 9/25)
    and lscpu counts the host's 16 cores: 4 cores ordered passed on the host's cores. The 4 CPUs
    hold at least 2 cores (32 CPUs / 16 cores: 2 threads per core; lscpu's `Thread(s) per core:
    0` says nothing): 4 warns, 2 passes, 8 fails naming lxcfs."""
    text = (REAL / LXCFS).read_text()
    warned = checks(tmp_path, LXCFS, text, "cpu_cores: 4")[-1]
    assert (warned.name, warned.verdict) == ("cpu_cores", "warn")
    assert warned.detail == (
        "the 4 online CPUs may be hyperthreads (2 per core) of as few as 2 cores; the order is met"
        " for certain only by 7 or more online CPUs"
    )
    assert verdicts(tmp_path, LXCFS, text, "cpu_cores: 2")["cpu_cores"][0] == "pass"
    failed = checks(tmp_path, LXCFS, text, "cpu_cores: 8")[-1]
    assert failed.verdict == "fail" and "lxcfs" in failed.detail


def test_offline_cpus_of_an_smt_host_may_be_hyperthreads(tmp_path: Path) -> None:
    """The same on bare metal booted with 4 of 40 CPUs (20 cores, SMT 2): 4 ordered warns."""
    text = (REAL / OFFLINE).read_text()
    assert verdicts(tmp_path, OFFLINE, text, "cpu_cores: 4")["cpu_cores"][0] == "warn"
    assert verdicts(tmp_path, OFFLINE, text, "cpu_cores: 2")["cpu_cores"][0] == "pass"


def test_online_cpus_that_hold_the_order_for_certain_pass(tmp_path: Path) -> None:
    """Control: 2 x EPYC 7742 (128 cores, 256 CPUs) with CPU 255 offline, where lscpu says 1
    thread per core: 128 still passes; 129 is met only by hyperthreads."""
    text = (REAL / EPYC_255).read_text()
    assert verdicts(tmp_path, EPYC_255, text, "cpu_cores: 128")["cpu_cores"][0] == "pass"
    assert verdicts(tmp_path, EPYC_255, text, "cpu_cores: 129")["cpu_cores"][0] == "warn"


@pytest.mark.parametrize("name", [LXCFS, OFFLINE])
def test_the_cpus_said_to_meet_the_order_are_the_fewest_that_do(tmp_path: Path, name: str) -> None:
    """The warning's figure is the fewest CPUs that hold the ordered cores for certain, the same
    condition that warns (N CPUs at T per core hold at least ceil(N / T) cores): it said
    cores x T, one core's threads too many (4 cores at 2 per core: 8, where 7 hold 4 for
    certain)."""
    text = (REAL / name).read_text()
    warned = 0
    for cores in range(2, 131):
        check = checks(tmp_path, name, text, f"cpu_cores: {cores}")[-1]
        said = re.search(r"\((\d+) per core\).* only by (\d+) or more", check.detail)
        if check.verdict != "warn" or said is None:
            continue
        threads, fewest = int(said.group(1)), int(said.group(2))
        assert math.ceil(fewest / threads) >= cores > math.ceil((fewest - 1) / threads), check.detail
        warned += 1
    assert warned


def test_nproc_beside_lxcfs_reads_the_hosts_threads_per_core() -> None:
    """Live, nproc (4) beside the same lscpu: its `Thread(s) per core: 0` was read as 1, so the
    affinity warning was not given either; the host's 2 per core now are."""
    facts = parse_facts(
        {"lscpu": ProbeOutput((REAL / LXCFS).read_text(), "", 0), "nproc": ProbeOutput("4\n", "", 0)}
    )
    from gpuonboard.inventory import OrderSpec
    from gpuonboard.steps.checks.acceptance import evaluate

    check = evaluate(OrderSpec(cpu_cores=4), facts)[-1]
    assert check.name == "cpu_cores" and check.verdict == "warn"
    assert "as few as 2 cores" in check.detail


DMESG_REFUSED = "dmesg__refused-operation-not-permitted__aws-log-collector__scylla.txt"
JOURNAL_REFUSED = "journalctl__refused-not-in-adm-group__hint-no-entries__systemd-250.txt"


@pytest.mark.parametrize(
    ("name", "said"),
    [
        (DMESG_REFUSED, "dmesg: read kernel buffer failed: Operation not permitted"),
        (JOURNAL_REFUSED, "Hint: You are currently not seeing messages from the system."),
    ],
)
def test_a_saved_refusal_is_a_kernel_log_that_could_not_be_read(tmp_path: Path, name: str, said: str) -> None:
    """A saved `dmesg` (or `journalctl -k`) of a login that may not read the kernel log holds only
    the refusal: it was refused as "not a recognised command output" (exit 2, nothing judged).
    Now read as the live probe that could read no log: unverified, the refusal quoted, and the
    GPUs beside it judged."""
    folder = tmp_path / "box"
    folder.mkdir()
    (folder / name).write_text((REAL / name).read_text())
    (folder / H200).write_text((REAL / H200).read_text())
    from gpuonboard.api import offline

    judged = {c.name: c for c in offline.judge(parse_facts(offline.load_outputs([str(folder)])), None)}
    for rule in ("gpu_xid", "nvswitch_sxid"):
        assert judged[rule].verdict == "unverified"
        assert judged[rule].actual == f"kernel log not readable: {said}"
        assert "read access to the kernel log" in judged[rule].detail
    assert judged["temperature"].verdict == "pass"


def test_a_refusal_is_one_only_alone() -> None:
    """The refusal beside lines of a log (dmesg -c's read then refused clear, a paste) is no
    refusal of the whole log; a text of neither is none."""
    line = (REAL / DMESG_REFUSED).read_text()
    assert kernel_refusal.refusal(line) == line.strip()
    log = (REAL / "dmesg__xid-79-sxid-20034__nvswitch.txt").read_text()
    assert kernel_refusal.refusal(log + line) is None
    assert kernel_refusal.refusal("-- No entries --\n") == kernel_refusal.NO_ENTRIES
    assert kernel_refusal.refusal("-- No entries --\n" + log) is None
    assert kernel_refusal.refusal("") is None


LXD_FREE = "free-h__lxd-container-4000mb-limit__lxcfs__debian10.txt"


def test_free_alone_below_the_order_names_a_containers_limit(tmp_path: Path) -> None:
    """`free -h` inside an LXD container limited to 4000 MB (lxcfs shows `3.7Gi`), given alone
    against 8 GB: the failure blamed "a missing or failed DIMM, or a smaller box", a hardware
    claim from the container's view. With no limit file read it now names the container's limit
    too; with one read that sets no limit (`max`), the DIMM stays the reason."""
    text = (REAL / LXD_FREE).read_text()
    check = checks(tmp_path, LXD_FREE, text, "ram: 8G")[-1]
    assert (check.name, check.verdict) == ("ram", "fail")
    assert check.detail.endswith(
        "a missing or failed DIMM, or a smaller box, or a container's memory limit, which lxcfs shows"
        " as free's total: ask the vendor"
    )
    facts = parse_facts(
        {
            "free": ProbeOutput(text, "", 0),
            "cgroup_limits": ProbeOutput("/sys/fs/cgroup/memory.max\tmax\n", "", 0),
        }
    )
    from gpuonboard.inventory import OrderSpec
    from gpuonboard.steps.checks.host_rules import rule_ram

    unlimited = rule_ram(OrderSpec(ram_bytes=8 * 2**30), facts, 0.03)
    assert unlimited.verdict == "fail" and "container" not in unlimited.detail


SESSIONS = Path(__file__).parents[3] / "fixtures" / "sessions"
MIYABI = "transcript__nvidia-smi-NOTFOUND+nvcc-version__gh200-miyabi-login-node.txt"
NOTES = "transcript__nvidia-smi-NOTFOUND+free-g+df-h+curl__cpu-box-medgemma-notes.txt"


@pytest.mark.parametrize("name", [MIYABI, NOTES])
def test_a_saved_command_not_found_is_the_boxs_answer(tmp_path: Path, name: str) -> None:
    """A saved session whose `nvidia-smi` answered `-bash: nvidia-smi: command not found`: that
    answer was dropped ("not an output this tool reads") and nvidia_driver said "not judged: no
    nvidia-smi output was given". It is the box's answer: nvidia-smi absent, as live (fail)."""
    from gpuonboard.api import offline

    notes: list[str] = []
    outputs = offline.load_outputs([str(SESSIONS / name)], notes)
    assert outputs["nvidia_smi"].exit_code == 127
    assert "nvidia-smi: command not found" in outputs["nvidia_smi"].stderr
    assert not any("`nvidia-smi`" in note for note in notes), notes
    order = tmp_path / "order.yml"
    order.write_text("gpu_model: H100\ngpu_count: 1\n")
    judged = {c.name: c for c in offline.judge(parse_facts(outputs), offline.load_order(str(order)))}
    driver = judged["nvidia_driver"]
    assert (driver.verdict, driver.actual) == ("fail", "nvidia-smi not found")
    assert judged["gpu_count"].verdict == "unverified"  # (no GPU read: no hardware claim)


def test_a_command_not_found_alone_in_a_file(tmp_path: Path) -> None:
    """The same line saved alone (the Miyabi session's answer) reads the same; a command this
    tool does not read, or a text with more than the shell's line, is no such answer."""
    from gpuonboard.api.saved_forms import tool_missing

    line = (SESSIONS / MIYABI).read_text().splitlines()[1]
    alone = verdicts(tmp_path, "nvidia-smi.txt", line + "\n")["nvidia_driver"]
    assert alone == ("fail", "nvidia-smi not found")
    assert tool_missing(line.replace("nvidia-smi", "uname")) is None
    assert tool_missing(line + "\n" + (REAL / H200).read_text()) is None


@pytest.mark.parametrize(
    ("header", "said"),
    [
        # dmesg exited 0 and printed nothing (its ring buffer cleared: `dmesg -C`)
        ("# source: dmesg\n# first: \n", "dmesg printed nothing"),
        # journalctl's notice alone, exit 0 (systemd before v246 prints it under `-q`: systemd/systemd
        # src/journal/journalctl.c access_check, read_file id 23436565)
        ("# source: journalctl -k -b\n# first: No journal files were found.\n", "No journal files"),
    ],
)
def test_a_reader_that_answered_no_log_is_no_evidence(header: str, said: str) -> None:
    """The live probe's log headed by a reader that answered with nothing or its own notice (a
    run saved by an earlier probe, which read it so): gpu_xid and nvswitch_sxid passed "no Xid in
    the kernel log (the log read starts after boot)"; now unverified, naming it."""
    out = ProbeOutput(header + "# dropped: driver 0 other 0\n", "", 0)
    found = {c.name: c for c in fabric_health.health_checks(parse_facts({"kernel_log": out}))}
    for name in ("gpu_xid", "nvswitch_sxid"):
        assert found[name].verdict == "unverified", found[name]
        assert found[name].actual.startswith("kernel log not readable: ") and said in found[name].actual


@pytest.mark.parametrize("name", KERNEL_LOGS[:6])
def test_a_log_whose_lines_the_probe_left_out_is_still_a_log(name: str) -> None:
    """Control: a real log's first line over no kept line (a box with no GPU line) is a log read."""
    first = (REAL / name).read_text().splitlines()[0]
    out = ProbeOutput(f"# source: dmesg\n# first: {first}\n# dropped: driver 0 other 0\n", "", 0)
    found = {c.name: c for c in fabric_health.health_checks(parse_facts({"kernel_log": out}))}
    assert not found["gpu_xid"].actual.startswith("kernel log not readable"), found["gpu_xid"]


@pytest.mark.parametrize("blank", ["", "\n\n"])
def test_an_nvidia_smi_that_answers_nothing_at_exit_0_is_no_failed_driver(blank: str) -> None:
    """Every nvidia-smi format exiting 0 with nothing on stdout or stderr (a stub or a blocked
    tool) failed nvidia_driver "nvidia-smi failed": a fail from absence; now unverified, said."""
    from gpuonboard.facts.gpu_probes import GPU_SOURCES
    from gpuonboard.steps.checks.gpu_rules import rule_driver

    facts = parse_facts({name: ProbeOutput(blank, "", 0) for name, _, _ in GPU_SOURCES})
    check = rule_driver(facts)
    assert (check.verdict, check.actual) == ("unverified", "nvidia-smi answered (exit 0) with nothing")
    # (control: the same silence at a non-zero exit is nvidia-smi's own failure)
    failed = parse_facts({name: ProbeOutput(blank, "", 9) for name, _, _ in GPU_SOURCES})
    assert rule_driver(failed).verdict == "fail"


def test_a_wsl2_guests_log_is_no_evidence_of_the_gpus_driver(tmp_path: Path) -> None:
    """A WSL2 guest's `dmesg` (the paravirtual dxgkrnl driver's `misc dxg: dxgk: ...` lines, no
    NVIDIA driver line): the GPU's driver runs on the Windows host and logs its errors there, so
    gpu_xid passed "no Xid in the kernel log" of a log that can hold none; now unverified."""
    text = (REAL / WSL_GUEST).read_text()
    found = {c.name: c for c in checks(tmp_path, WSL_GUEST, text)}
    for name, what in (("gpu_xid", "Xid"), ("nvswitch_sxid", "SXid")):
        check = found[name]
        assert check.verdict == "unverified", check
        assert check.actual == (
            "kernel log not readable: a WSL2 or Hyper-V guest's, whose GPU is the Windows host's"
            " ('[   18.700397] misc dxg: dxgk: dxgkio_query_adapter_info: Ioctl failed: -22')"
        )
        assert f"so {what} errors are unknown" in check.detail


def test_a_guest_log_with_the_nvidia_drivers_lines_is_read_as_usual() -> None:
    """A dxgkrnl line beside the NVIDIA driver's own lines (a VM with a GPU passed through and a
    paravirtual one): the driver's lines are in this log, which is read as usual."""
    text = (
        REAL / WSL_GUEST
    ).read_text() + "[   20.000000] NVRM: Xid (PCI:0000:01:00): 79, pid=0, GPU has fallen off the bus.\n"
    log = kernel_log.parse_kernel_log(text)
    assert log.sandbox is None and [e.code for e in log.xids()] == [79]


# rwth-i6/returnn #1500's `dmesg -H`: the root port's `AER: Multiple Uncorrected (Fatal) error
# received`, `nvidia 0000:03:00.0: AER: can't recover`, `device recovery failed`
AER_FATAL = "dmesg-H__aer-fatal-cmplto-cant-recover__returnn-1500.txt"


def test_a_wsl2_guests_log_still_shows_the_pcie_fatal_errors_it_holds(tmp_path: Path) -> None:
    """The WSL2 guest's `dmesg` (#9029) with returnn #1500's real AER lines appended in-test (a
    guest whose kernel sees a PCIe fatal error: the GPU passed through beside dxgkrnl): the log
    being a guest's made gpu_xid unverified over a fatal error it holds; it fails on it again.
    The SXid rule, which reads no AER line, stays unverified (none found is no evidence)."""
    text = (REAL / WSL_GUEST).read_text() + (REAL / AER_FATAL).read_text()
    found = {c.name: c for c in checks(tmp_path, WSL_GUEST, text)}
    assert found["gpu_xid"].verdict == "fail", found["gpu_xid"]
    assert "AER" in found["gpu_xid"].actual
    assert found["nvswitch_sxid"].verdict == "unverified"
    assert found["nvswitch_sxid"].actual.startswith("kernel log not readable: a WSL2 or Hyper-V guest's")


def test_the_live_probe_on_a_wsl2_guest_is_no_evidence(tmp_path: Path) -> None:
    """The live probe's own shell run where `dmesg` prints microsoft/WSL #7770's real boot head:
    its grep keeps no dxgkrnl line, only the kernel's `Linux version 5.10.60.1-microsoft-standard-WSL2
    ...` banner, and gpu_xid passed "no Xid since boot"; the WSL2 kernel's banner now tells."""
    from ...facts.test_kernel_log_probe_filter import _probe

    out = ProbeOutput(_probe(tmp_path, REAL / WSL_BOOT), "", 0)
    banner = (REAL / WSL_BOOT).read_text().splitlines()[0]
    assert [line for line in out.stdout.splitlines() if not line.startswith("# ")] == [banner]
    found = {c.name: c for c in fabric_health.health_checks(parse_facts({"kernel_log": out}))}
    for name in ("gpu_xid", "nvswitch_sxid"):
        assert found[name].verdict == "unverified", found[name]
        assert found[name].actual == (
            "kernel log not readable: a WSL2 or Hyper-V guest's, whose GPU is the Windows host's"
            f" ({banner!r})"
        )


def test_the_live_probe_keeps_the_paravirtual_gpu_drivers_registration(tmp_path: Path) -> None:
    """#7770's boot head, its banner edited in-test to a kernel that is no WSL2 one (`Linux version
    5.15.0-91-generic`, a Hyper-V VM's), then microsoft/WSL #7352's real `[    0.183904] hv_vmbus:
    registering driver dxgkrnl` line: the probe dropped that line and gpu_xid passed; the probe
    keeps it now, and the log is a guest's whose GPU is the host's: unverified."""
    from ...facts.test_kernel_log_probe_filter import _probe

    text = (REAL / WSL_BOOT).read_text()
    text = text.replace("5.10.60.1-microsoft-standard-WSL2", "5.15.0-91-generic", 1)
    text += "[    0.183904] hv_vmbus: registering driver dxgkrnl\n"
    (tmp_path / "dmesg.txt").write_text(text)
    out = ProbeOutput(_probe(tmp_path, tmp_path / "dmesg.txt"), "", 0)
    assert "[    0.183904] hv_vmbus: registering driver dxgkrnl" in out.stdout.splitlines()
    found = {c.name: c for c in fabric_health.health_checks(parse_facts({"kernel_log": out}))}
    assert found["gpu_xid"].verdict == "unverified", found["gpu_xid"]


# a gVisor sandbox's `nvidia-smi -q --display=ECC` (google/gvisor PR 10676): its nvproxy passed
# the ECC control calls on to no driver, and NVML answered NVML_ERROR_OPERATING_SYSTEM
GVISOR_ECC = (
    "part-of-nvidia-smi-q-d-ECC__gvisor-nvproxy-sandbox__ecc-mode-blocked-by-the-os__gvisor-10676.txt"
)
A10_Q = "nvidia-smi-q__a10__1gpu__driver535.129.03.txt"
BLOCKED = "GPU access blocked by the operating system"


def _a10_in_a_sandbox(name: str = A10_Q) -> str:
    """The A10's real `-q` with its `ECC Mode` block (Current, Pending: Enabled) replaced by the
    gVisor capture's (both `GPU access blocked by the operating system`); nothing else changed."""
    text = (REAL / name).read_text()
    sandbox = (REAL / GVISOR_ECC).read_text().splitlines()
    block = "\n".join(sandbox[1:4]) + "\n"
    start = text.index("    ECC Mode\n")
    end = text.index("    ECC Errors\n")
    assert text[start:end].count("Enabled") == 2
    return text[:start] + block + text[end:]


@pytest.mark.parametrize("where", ["offline", "live"])
def test_a_reading_the_operating_system_refused_is_no_gpu_fault(tmp_path: Path, where: str) -> None:
    """NVML's `GPU access blocked by the operating system` in a field (a gVisor sandbox's ECC
    mode) was read as the GPU's fault: sensor_faults warned "a failing fan or sensor ... or a GPU
    in a bad state" and ecc_mode asked to reset the GPU, hardware claims from a refused view. Now
    both are unverified, saying the operating system refused the reading and to read it on the
    host; the A10's other rules are judged as before."""
    text = _a10_in_a_sandbox()
    if where == "offline":
        found = {c.name: c for c in checks(tmp_path, "nvidia-smi-q.txt", text)}
    else:
        from gpuonboard.steps.checks import gpu_health

        facts = parse_facts({"nvidia_smi_q": ProbeOutput(text, "", 0)})
        found = {c.name: c for c in gpu_health.evaluate(facts)}
    for rule in ("ecc_mode", "sensor_faults"):
        check = found[rule]
        assert check.verdict == "unverified", check
        assert f"ECC reads {BLOCKED}" in check.actual, check
        assert "the operating system refused nvidia-smi this reading" in check.detail, check
        assert "failing fan" not in check.detail and "reset the GPU" not in check.detail, check
    assert found["ecc_mode"].actual == f"not read on GPU 0 (ECC reads {BLOCKED})"
    assert found["temperature"].verdict == "pass"
    assert found["memory_repair"].verdict == "fail"  # the capture's 4 remapped rows, pending


def test_a_real_sensor_fault_beside_a_refused_reading_still_warns(tmp_path: Path) -> None:
    """The sandboxed A10 whose fan sensor also reads `ERR!` (its `Fan Speed : 0 %` so edited): the
    ERR! is a reading the driver could not make, so sensor_faults still warns (control)."""
    fan = "    Fan Speed                             : "
    text = _a10_in_a_sandbox()
    assert f"{fan}0 %\n" in text
    text = text.replace(f"{fan}0 %\n", f"{fan}ERR!\n")
    found = {c.name: c for c in checks(tmp_path, "nvidia-smi-q.txt", text)}
    assert found["sensor_faults"].verdict == "warn"
    assert "fan sensor reads ERR!" in found["sensor_faults"].actual


A10_Q_550 = "nvidia-smi-q__a10__1gpu__driver550.90.12__idle-sw-power-cap__gls.txt"
A10_TABLE_550 = "nvidia-smi__a10__1gpu__driver550.90.12.txt"


def test_the_tables_err_of_a_field_the_q_read_as_refused_is_that_refusal() -> None:
    """Live, every format is read: the sandbox's table prints `ERR!` in the ECC cell where its
    `-q` says `GPU access blocked by the operating system` (gVisor PR 10676 saw both). The real
    A10 table (driver 550.90.12) with its ECC cell `0` made `ERR!`, beside that A10's `-q` with
    the gVisor `ECC Mode` block spliced in: sensor_faults warned "a failing fan or sensor"
    for the table's ERR!; now unverified, the table's ERR! read as the refusal the `-q` names."""
    from gpuonboard.steps.checks import gpu_health

    table = (REAL / A10_TABLE_550).read_text()
    cell = "00000000:08:00.0 Off |                    0 |"
    assert cell in table
    table = table.replace(cell, cell.replace("   0 |", "ERR! |"))
    facts = parse_facts(
        {
            "nvidia_smi_q": ProbeOutput(_a10_in_a_sandbox(A10_Q_550), "", 0),
            "nvidia_smi_table": ProbeOutput(table, "", 0),
        }
    )
    found = {c.name: c for c in gpu_health.evaluate(facts)}
    check = found["sensor_faults"]
    assert check.verdict == "unverified", check
    assert "GPU 0: ECC reads ERR!" in check.actual
    assert "the operating system refused nvidia-smi this reading" in check.detail
    assert found["ecc_mode"].verdict == "unverified"
    assert "reset the GPU" not in found["ecc_mode"].detail


def _a10_table_perf_err() -> str:
    """The real A10 table (driver 550.90.12) with its Perf cell `P8` made `ERR!`, as a gVisor
    sandbox's nvidia-smi prints it (google/gvisor PR 10675: "shows `ERR!` under the `Perf`
    column for each GPU")."""
    table = (REAL / A10_TABLE_550).read_text()
    row = "|  0%   33C    P8             15W /  150W |"
    assert row in table
    return table.replace(row, row.replace("P8  ", "ERR!"))


def test_a_sandboxs_err_is_no_gpu_fault_offline(tmp_path: Path) -> None:
    """The gVisor sandbox's `dmesg` beside its table with `ERR!` in the Perf cell: sensor_faults
    warned "a failing fan or sensor ... or a GPU in a bad state" though the kernel log says the
    login is inside a sandbox that prints ERR! for what it does not pass on. Now unverified,
    naming the sandbox's first line and asking for the host's nvidia-smi; the log's rules stay
    unverified and the A10's readings are judged."""
    folder = tmp_path / "box"
    folder.mkdir()
    (folder / GVISOR).write_text((REAL / GVISOR).read_text())
    (folder / "nvidia-smi.txt").write_text(_a10_table_perf_err())
    from gpuonboard.api import offline

    judged = {c.name: c for c in offline.judge(parse_facts(offline.load_outputs([str(folder)])), None)}
    check = judged["sensor_faults"]
    assert (check.verdict, check.actual) == ("unverified", "GPU 0: performance state reads ERR!")
    assert "'[    0.000000] Starting gVisor...'" in check.detail
    assert "failing fan" not in check.detail
    assert judged["temperature"].verdict == "pass"


def test_a_sandboxs_err_is_no_gpu_fault_live(tmp_path: Path) -> None:
    """Live: the kernel log probe's own shell over the gVisor `dmesg`, beside the table probe:
    sensor_faults unverified, as offline. Without the sandbox's log (control) the ERR! still
    warns."""
    from gpuonboard.steps.checks import gpu_health

    from ...facts.test_kernel_log_probe_filter import _probe

    table = ProbeOutput(_a10_table_perf_err(), "", 0)
    log = ProbeOutput(_probe(tmp_path, REAL / GVISOR), "", 0)
    found = {
        c.name: c for c in gpu_health.evaluate(parse_facts({"nvidia_smi_table": table, "kernel_log": log}))
    }
    assert found["sensor_faults"].verdict == "unverified"
    alone = {c.name: c for c in gpu_health.evaluate(parse_facts({"nvidia_smi_table": table}))}
    assert alone["sensor_faults"].verdict == "warn"


def test_a_sandboxs_ecc_err_asks_for_no_gpu_reset(tmp_path: Path) -> None:
    """The same table with its ECC cell `0` made `ERR!` too (gVisor PR 10676: "displays `ERR!`
    under the `ECC` column"), beside the sandbox's `dmesg`: ecc_mode said "often a GPU in a bad
    state ... ask the vendor to reset the GPU"; now it names the sandbox instead."""
    cell = "00000000:08:00.0 Off |                    0 |"
    table = _a10_table_perf_err()
    assert cell in table
    folder = tmp_path / "box"
    folder.mkdir()
    (folder / GVISOR).write_text((REAL / GVISOR).read_text())
    (folder / "nvidia-smi.txt").write_text(table.replace(cell, cell.replace("   0 |", "ERR! |")))
    from gpuonboard.api import offline

    judged = {c.name: c for c in offline.judge(parse_facts(offline.load_outputs([str(folder)])), None)}
    check = judged["ecc_mode"]
    assert (check.verdict, check.actual) == ("unverified", "not read on GPU 0 (ECC reads ERR!)")
    assert "Starting gVisor" in check.detail and "reset the GPU" not in check.detail


NO_MODULE = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
    " Make sure that the latest NVIDIA driver is installed and running."
)


@pytest.mark.parametrize("where", ["offline", "live"])
def test_a_failed_nvidia_smi_inside_a_sandbox_names_the_sandbox(tmp_path: Path, where: str) -> None:
    """nvidia-smi's real "couldn't communicate with the NVIDIA driver" beside the gVisor sandbox's
    `dmesg`: nvidia_driver failed saying "the NVIDIA kernel module is not loaded (often a new
    kernel ...): ask the vendor to reboot, or to reinstall the driver", a claim about the box's
    kernel from inside a sandbox whose kernel is gVisor's. It still fails (no GPU from this
    login), now naming the sandbox as the likely cause."""
    if where == "offline":
        folder = tmp_path / "box"
        folder.mkdir()
        (folder / GVISOR).write_text((REAL / GVISOR).read_text())
        (folder / "nvidia-smi.txt").write_text(NO_MODULE + "\n\n")
        from gpuonboard.api import offline

        judged = {c.name: c for c in offline.judge(parse_facts(offline.load_outputs([str(folder)])), None)}
    else:
        from gpuonboard.steps.checks import acceptance

        from ...facts.test_kernel_log_probe_filter import _probe

        raw = {
            "nvidia_smi": ProbeOutput(NO_MODULE + "\n\n", "", 9),
            "kernel_log": ProbeOutput(_probe(tmp_path, REAL / GVISOR), "", 0),
        }
        from gpuonboard.inventory import OrderSpec

        judged = {c.name: c for c in acceptance.evaluate(OrderSpec(gpu_count=1), parse_facts(raw))}
    check = judged["nvidia_driver"]
    assert check.verdict == "fail"
    assert "Starting gVisor" in check.detail, check
    assert "kernel module is not loaded" not in check.detail, check


A40_TABLE = "nvidia-smi__a40__8gpu__driver525.60.13__gpu4-err.txt"
WSL_3090 = "nvidia-smi__geforce-rtx-3090__1gpu__driver470.76__wsl-smi470.28__util-err__display-on.txt"


def _sensor_faults_offline(tmp_path: Path, log: str, table: str) -> tuple[str, str, str]:
    """sensor_faults' (verdict, actual, detail) of the saved kernel log `log` (a real capture's
    name) beside the table text `table`."""
    from gpuonboard.api import offline

    folder = tmp_path / "box"
    folder.mkdir()
    (folder / log).write_text((REAL / log).read_text())
    (folder / "nvidia-smi.txt").write_text(table)
    judged = {c.name: c for c in offline.judge(parse_facts(offline.load_outputs([str(folder)])), None)}
    check = judged["sensor_faults"]
    return check.verdict, check.actual, check.detail


def _a40_gpu3(old: str, new: str) -> str:
    """The real A40 table (8 GPUs, GPU 4 unreadable) with GPU 3's row cell `old` made `new`."""
    table = (REAL / A40_TABLE).read_text()
    row = "|  0%   30C    P8    14W / 300W |      0MiB / 46068MiB |      0%      Default |"
    assert table.count(row) == 1
    return table.replace(row, row.replace(old, new, 1))


def test_a_dying_fan_inside_a_sandbox_still_warns(tmp_path: Path) -> None:
    """The real A40 table with GPU 3's fan cell `  0%` made `ERR!`, beside the gVisor sandbox's
    `dmesg`: sensor_faults was unverified ("the sandbox does not pass on"), hiding a failing fan;
    gVisor refuses the performance state and ECC only (google/gvisor PR 10675 / 10676), and the
    other seven GPUs read their fans. Now a warn, with the sandbox's note."""
    verdict, actual, detail = _sensor_faults_offline(tmp_path, GVISOR, _a40_gpu3("|  0%", "|ERR!"))
    assert verdict == "warn"
    assert actual.startswith("GPU 3: fan sensor reads ERR!")
    assert "failing fan" in detail and "'[    0.000000] Starting gVisor...'" in detail


def test_one_gpus_perf_err_inside_a_sandbox_is_that_gpus(tmp_path: Path) -> None:
    """The real A40 table with GPU 3's Perf cell `P8` made `ERR!` (the other GPUs read theirs),
    beside the gVisor `dmesg`: a sandbox's refusal hits every GPU alike, so a field the other
    GPUs read is GPU 3's own fault: warn (was unverified)."""
    verdict, actual, _detail = _sensor_faults_offline(tmp_path, GVISOR, _a40_gpu3("P8  ", "ERR!"))
    assert verdict == "warn"
    assert actual.startswith("GPU 3: performance state reads ERR!")


@pytest.mark.parametrize("log", [WSL_GUEST, WSL_BOOT])
@pytest.mark.parametrize(
    ("old", "new", "field"), [("| 30%", "|ERR!", "fan sensor"), ("  35C", " ERR!", "temperature sensor")]
)
def test_a_sensor_err_inside_a_wsl_guest_still_warns(
    tmp_path: Path, log: str, old: str, new: str, field: str
) -> None:
    """The real WSL2 GeForce RTX 3090 table with its utilization cell `ERR!` made `3%` again and
    its fan `30%` (or temperature `35C`) made `ERR!`, beside a WSL2 guest's `dmesg`: sensor_faults
    was unverified; a guest is not known to refuse the fan or temperature: warn, with the
    guest's note."""
    table = (REAL / WSL_3090).read_text()
    row = "| 30%   35C    P8    16W / 350W |   1782MiB / 24576MiB |    ERR!      Default |"
    assert row in table
    table = table.replace(row, row.replace("    ERR!", "      3%").replace(old, new, 1))
    verdict, actual, detail = _sensor_faults_offline(tmp_path, log, table)
    assert (verdict, actual) == ("warn", f"GPU 0: {field} reads ERR!")
    assert "sandbox or guest" in detail


@pytest.mark.parametrize(
    ("said", "advice"),
    [
        (
            "Unable to determine the device handle for GPU0000:01:00.0: GPU is lost.  Reboot the"
            " system to recover this GPU",
            "fallen off the bus",
        ),
        ("Failed to initialize NVML: Driver/library version mismatch", "different versions"),
    ],
)
def test_a_failed_nvidia_smi_inside_a_sandbox_keeps_the_cause_it_names(
    tmp_path: Path, said: str, advice: str
) -> None:
    """nvidia-smi's own words for a known cause (a GPU lost, a driver/library version mismatch,
    as real nvidia-smi prints them) beside the gVisor sandbox's `dmesg`: nvidia_driver's advice
    was the sandbox's ("may be the sandbox's ... ask the vendor to give this instance its GPUs"),
    dropping the reset or reboot the cause asks for. Now the named cause keeps its own advice;
    only failures that name no cause (no devices, couldn't communicate, unknown) name the
    sandbox."""
    folder = tmp_path / "box"
    folder.mkdir()
    (folder / GVISOR).write_text((REAL / GVISOR).read_text())
    (folder / "nvidia-smi.txt").write_text(said + "\n")
    from gpuonboard.api import offline

    judged = {c.name: c for c in offline.judge(parse_facts(offline.load_outputs([str(folder)])), None)}
    check = judged["nvidia_driver"]
    assert check.verdict == "fail"
    assert advice in check.detail, check
    assert "Starting gVisor" not in check.detail, check
