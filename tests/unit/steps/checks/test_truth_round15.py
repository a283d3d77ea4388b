"""Rule wording and verdicts on real captures of truth sweep round 15 (tests/fixtures/real/
SOURCES.md, round 15): each a sentence or a verdict that told something the output does not."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.connection.gather import parse_facts
from gpuonboard.errors import UsageError
from gpuonboard.facts import gpu_merge
from gpuonboard.facts.aer import aer_events
from gpuonboard.facts.cpu import parse_lscpu
from gpuonboard.facts.disks import parse_df
from gpuonboard.facts.gpu_list import parse_gpu_list
from gpuonboard.facts.infiniband import parse_rdma
from gpuonboard.facts.nvidia_smi import GpuInfo, GpuReport, parse_any
from gpuonboard.facts.nvidia_smi.faults import INFOROM_FAULT
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.steps.base import Check

from ...offline_judge import checks as offline_checks
from ...offline_judge import verdicts

REAL = Path(__file__).parents[3] / "fixtures" / "real"


def judge_folder(folder: Path, order: str | None = None) -> list[Check]:
    """The checks of every saved output in `folder` judged as one box (`invoke facts DIR`)."""
    spec = None
    if order:
        (folder / "order.yml").write_text(order)
        spec = offline.load_order(str(folder / "order.yml"))
    return list(offline.judge(parse_facts(offline.load_outputs([str(folder)])), spec))


LOG_NO_INDEX = "nvidia-smi-query-gpu-l1__1gpu-11gb__3-samples__no-index.csv"
LOG_INDEXED = "nvidia-smi-query-gpu-l1__1gpu__3-samples__index-power-clocks.csv"


def test_rows_of_a_log_without_index_are_named_as_rows_not_gpus(tmp_path: Path) -> None:
    """An `-l` log of one GPU's 3 samples without index, uuid or pci.bus_id: its rows are not
    known to be GPUs, so no rule names a 'GPU 1' or 'GPU 2' the box may not have."""
    judged = verdicts(tmp_path, LOG_NO_INDEX, (REAL / LOG_NO_INDEX).read_text())
    said = " | ".join(actual for _, actual in judged.values())
    assert not re.search(r"GPU [0-9]|3 GPUs", said), said
    assert "CSV row 1" in judged["temperature"][1]
    # (an unverified row of an output cut short names the cut too)
    assert judged["mig_mode"][1] == (
        "not reported for all 3 CSV rows (of what was read; incomplete probe: its 3 CSV rows cannot"
        " be told apart as GPUs or as samples of one)"
    )


def test_rows_of_an_indexed_log_are_its_gpu(tmp_path: Path) -> None:
    judged = verdicts(tmp_path, LOG_INDEXED, (REAL / LOG_INDEXED).read_text())
    said = " | ".join(actual for _, actual in judged.values())
    assert "GPU 0" in said and "CSV row" not in said, said


TOPO_H200 = "nvidia-smi-topo-m__h200__8gpu-10nic.txt"


def test_a_topo_matrix_whose_header_lost_its_tabs_is_read_whole(tmp_path: Path) -> None:
    """A paste that joined the header's columns (`GPU0GPU1...`): round 15 said it unread ("no GPU
    row of the nvidia-smi topo -m matrix could be read"); since round 24 the glued labels are
    split by their shapes (facts/topo.py `_unglued`), so the matrix reads as the capture does."""
    text = (REAL / TOPO_H200).read_text()
    lines = text.split("\n")
    lines[0] = lines[0].replace("\t", "")
    order = "gpu_model: H200\ngpu_count: 8\ninterconnect: nvlink"
    judged = verdicts(tmp_path, TOPO_H200, "\n".join(lines), order)
    assert judged["interconnect"] == ("pass", "nvlink (weakest GPU link NV18)")
    assert judged["interconnect"] == verdicts(tmp_path, TOPO_H200, text, order)["interconnect"]


INFOROM_V100 = "nvidia-smi__tesla-v100-sxm2-32gb__8gpu__driver460.32.03__inforom-corrupted-gpu7__azhpc.txt"


def test_a_corrupted_inforom_after_the_table_warns_naming_its_gpu(tmp_path: Path) -> None:
    """`WARNING: infoROM is corrupted at gpu 0008:00:00.0` after a whole table of 8 V100s (Azure):
    every rule passed or was unverified, none named it."""
    judged = verdicts(tmp_path, INFOROM_V100, (REAL / INFOROM_V100).read_text())
    assert judged["sensor_faults"] == ("warn", "GPU 7: infoROM reads corrupted")


def _smi_captures() -> list[str]:
    return sorted(
        p.name
        for p in REAL.iterdir()
        if p.name.startswith("nvidia-smi") and parse_any(p.read_text(errors="replace")).gpus
    )


@pytest.mark.parametrize("name", _smi_captures())
def test_the_inforom_warning_beside_any_format_is_read_and_leaves_the_rest_as_it_was(name: str) -> None:
    """Every real nvidia-smi capture that lists GPUs, with the warning for its first GPU with a
    bus id printed before it, after it, or on stderr (the live probe's): the output reads as
    it did, and that GPU (only) holds the fault."""
    text = (REAL / name).read_text(errors="replace")
    plain = parse_any(text)
    target = next((g for g in plain.gpus if g.pci_bus_id), None)
    if target is None or "infoROM is corrupted" in text or target.pci_bus_id.count(".") != 1:
        # (the 270-era `-q` prints `0:2:0`, an address no driver's infoROM warning names)
        pytest.skip("no GPU with a bus id in today's form, or the capture's own warning")
    if [g.pci_bus_id for g in plain.gpus].count(target.pci_bus_id) > 1:
        pytest.skip("two GPUs listed at one address: the warning names both")
    domain, _, rest = target.pci_bus_id.partition(":")  # (nvidia-smi prints a 4-digit domain)
    line = f"WARNING: infoROM is corrupted at gpu {int(domain, 16):04x}:{rest}"
    probes = {"xml": "nvidia_smi", "text": "nvidia_smi_q", "csv": "nvidia_smi_csv"}
    probe = probes.get(plain.source, "nvidia_smi_table")
    for out in (
        ProbeOutput(f"{line}\n{text}", "", 0),
        ProbeOutput(f"{text.rstrip()}\n{line}\n", "", 0),
        ProbeOutput(text, line + "\n", 0),
    ):
        assert parse_any(out.stdout) == plain
        merged = gpu_merge.merge({probe: out}, parse_any, parse_gpu_list).report
        assert merged is not None
        faulted = [g.pci_bus_id for g in merged.gpus if INFOROM_FAULT in g.cell_faults]
        assert faulted == [target.pci_bus_id], name


TOPO_1OF4 = "nvidia-smi-topo-m__v100-sxm2__1of4gpu-slurm-view__4-mlx5-columns__traverse.txt"


@pytest.mark.parametrize(
    ("order", "actual"),
    [
        ("gpu_count: 4\ninterconnect: nvlink", "unknown: nvidia-smi topo -m shows 1 GPU of the 4 ordered"),
        ("interconnect: nvlink", "unknown: nvidia-smi topo -m shows 1 GPU, no GPU pair"),
    ],
)
def test_a_matrix_of_one_gpu_proves_no_nvlink(tmp_path: Path, order: str, actual: str) -> None:
    """A Slurm job's view of 1 GPU of a 4 x V100-SXM2 node: 'single' passed an NVLink order."""
    judged = verdicts(tmp_path, TOPO_1OF4, (REAL / TOPO_1OF4).read_text(), order)
    assert judged["interconnect"] == ("unverified", actual)


def test_a_matrix_of_fewer_gpus_than_ordered_and_no_listing_is_unverified(tmp_path: Path) -> None:
    """4 NVLinked GPUs of an 8-GPU order, no nvidia-smi listing beside the matrix."""
    name = "nvidia-smi-topo-m__h100-80gb-hbm3__4gpu-8nic__driver560.35.05__space-aligned.txt"
    judged = verdicts(tmp_path, name, (REAL / name).read_text(), "gpu_count: 8\ninterconnect: nvlink")
    assert judged["interconnect"] == (
        "unverified",
        "unknown: nvidia-smi topo -m shows 4 GPUs of the 8 ordered",
    )
    whole = verdicts(tmp_path, name, (REAL / name).read_text(), "gpu_count: 4\ninterconnect: nvlink")
    assert whole["interconnect"][0] == "pass"  # (the 4 ordered, all on NVLink)


def test_rdma_ordered_without_a_port_listing_is_not_judged_not_unreadable(tmp_path: Path) -> None:
    """Offline, a topo -m alone with RDMA ordered: it said the listing 'could not be read'."""
    judged = verdicts(tmp_path, TOPO_H200, (REAL / TOPO_H200).read_text(), 'rdma: "2x200G"')
    assert judged["rdma_ports"] == (
        "unverified",
        "not judged: no ibv_devinfo, ibstat or ibstatus output was given",
    )


GB200 = "nvidia-smi__gb200__4gpu__driver580.126.09__openshift-blog.txt"


def test_a_b200_order_on_gb200s_says_the_other_model(tmp_path: Path) -> None:
    """It said "'B200' not in the name" of 'NVIDIA GB200', whose name holds those letters."""
    judged = verdicts(tmp_path, GB200, (REAL / GB200).read_text(), "gpu_model: B200\ngpu_count: 4")
    assert judged["gpu_model"][0] == "fail"
    assert (
        verdicts(tmp_path, GB200, (REAL / GB200).read_text(), "gpu_model: GB200\ngpu_count: 4")["gpu_model"][
            0
        ]
        == "pass"
    )
    checks = {
        c.name: c for c in offline_checks(tmp_path, GB200, (REAL / GB200).read_text(), "gpu_model: B200")
    }
    assert checks["gpu_model"].detail == "NVIDIA GB200: 'B200' ordered, the name says 'GB200', another model"


MAXQ = "nvidia-smi-q-x__rtx-pro-6000-blackwell-max-q__1gpu__driver590.44.01__telegraf.xml"


def test_a_mig_mode_printed_na_is_said_not_unreported(tmp_path: Path) -> None:
    """`<current_mig>N/A</current_mig>` of a MIG-capable RTX PRO 6000 Blackwell: the -q -x given
    reports it (MIG not available as configured: the whole GPU), where 'not reported' sent the
    user to run `-q`. A mode left out of an output stays unverified."""
    text = (REAL / MAXQ).read_text()
    assert verdicts(tmp_path, MAXQ, text)["mig_mode"] == (
        "pass",
        "Disabled; GPU 0: N/A (MIG not available as configured)",
    )
    left_out = re.sub(r"<current_mig>N/A</current_mig>", "", text)
    assert verdicts(tmp_path, MAXQ, left_out)["mig_mode"][0] == "unverified"


EPYC = "lscpu__amd-epyc-7742__2socket-256cpu__cpu255-offline__bench-notes.txt"


def test_cores_short_of_the_order_are_said_before_the_offline_cpu(tmp_path: Path) -> None:
    """256 cores ordered of 2 x EPYC 7742 (128 cores) with CPU 255 offline: the fail's sentence
    blamed only the offline CPU, as if bringing it online met the order."""
    found = {c.name: c for c in offline_checks(tmp_path, EPYC, (REAL / EPYC).read_text(), "cpu_cores: 256")}
    assert found["cpu_cores"].verdict == "fail"
    assert found["cpu_cores"].detail.startswith(
        "lscpu counts 128 cores, fewer than the 256 ordered; and only 255"
    )
    at_128 = {c.name: c for c in offline_checks(tmp_path, EPYC, (REAL / EPYC).read_text(), "cpu_cores: 128")}
    assert at_128["cpu_cores"].verdict == "pass"


GH200_TABLE = "nvidia-smi__gh200-480gb__1gpu__driver550.127.05__gls.txt"
GH200_Q = "nvidia-smi-q__gh200-480gb__1gpu__driver550.127.05__dram-unc-1__power-limit-700of900__gls.txt"


def test_the_tables_count_since_boot_is_no_lifetime_zero(tmp_path: Path) -> None:
    """One GH200: its table's ECC cell `0` passed ecc_uncorrectable, while its `-q` says 1
    uncorrectable error in the lifetime count. The table alone is unverified; both, a fail."""
    table, q = (REAL / GH200_TABLE).read_text(), (REAL / GH200_Q).read_text()
    assert verdicts(tmp_path, GH200_TABLE, table)["ecc_uncorrectable"] == (
        "unverified",
        "0 since boot on GPU 0 (no lifetime count)",
    )
    assert verdicts(tmp_path, GH200_Q, q)["ecc_uncorrectable"] == ("fail", "GPU 0: 0 volatile / 1 aggregate")
    folder = tmp_path / "both"
    folder.mkdir()
    (folder / GH200_TABLE).write_text(table)
    (folder / GH200_Q).write_text(q)
    both = {c.name: c for c in judge_folder(folder)}
    assert both["ecc_uncorrectable"].verdict == "fail"


def _tables_with_ecc_on() -> list[str]:
    return sorted(
        p.name
        for p in REAL.glob("nvidia-smi__*")
        if (r := parse_any(p.read_text(errors="replace"))).source == "table"
        and any(g.ecc_mode == "Enabled" and g.ecc_volatile_uncorrectable is not None for g in r.gpus)
    )


@pytest.mark.parametrize("name", _tables_with_ecc_on())
def test_no_table_alone_passes_the_lifetime_ecc_count(tmp_path: Path, name: str) -> None:
    """The table's ECC cell is the volatile count: no real table with ECC on passes alone."""
    verdict = verdicts(tmp_path, name, (REAL / name).read_text(errors="replace"))["ecc_uncorrectable"][0]
    assert verdict in ("unverified", "fail")


A10_IDLE = "nvidia-smi-q__a10__1gpu__driver550.90.12__idle-sw-power-cap__gls.txt"


def test_a_power_cap_reported_at_idle_far_below_the_limit_holds_nothing_back(tmp_path: Path) -> None:
    """An idle A10 (P8, 15.65 W of 150 W) with `SW Power Cap : Active` warned "clocks are held at
    the power limit". The same reason on that GPU drawing near its limit still warns."""
    text = (REAL / A10_IDLE).read_text()
    assert verdicts(tmp_path, A10_IDLE, text)["throttling"] == (
        "pass",
        "none holding clocks back; GPU 0: sw_power_cap at idle (15.65 W of 150 W), no effect at that draw",
    )
    loaded = re.sub(r"Performance State\s+: P8", "Performance State                     : P0", text)
    loaded = re.sub(r"Power Draw\s+: 15.65 W", "Power Draw                        : 148.00 W", loaded)
    assert verdicts(tmp_path, A10_IDLE, loaded)["throttling"] == ("warn", "GPU 0: sw_power_cap")


def test_a_cap_below_the_requested_default_is_said_to_come_from_outside_nvidia_smi(tmp_path: Path) -> None:
    """GH200: enforced 700 W, requested and default 900 W (the module's 1000 W budget): the advice
    said `nvidia-smi -pl` restores it, which sets the requested limit, already 900 W."""
    found = {c.name: c for c in offline_checks(tmp_path, GH200_Q, (REAL / GH200_Q).read_text())}
    assert (found["power_limit"].verdict, found["power_limit"].actual) == (
        "fail",
        "GPU 0 700 W of 900 W (900 W requested)",
    )
    assert "set outside nvidia-smi" in found["power_limit"].detail
    assert "`nvidia-smi -pl` cannot" in found["power_limit"].detail


AER_LOG = "dmesg-H__aer-fatal-cmplto-cant-recover__returnn-1500.txt"


def test_a_log_cut_inside_any_line_of_the_nvidia_driver_never_passes(tmp_path: Path) -> None:
    """The real AER log cut anywhere inside a line of `nvidia 0000:03:00.0: ...` (no newline
    after it): `nvidia 0000:03:00.0: AER: can't` passed "no Xid in the kernel log"."""
    lines = (REAL / AER_LOG).read_text().split("\n")
    seen = 0
    for i, line in enumerate(lines):
        at = line.find("nvidia 0000")
        if at < 0:
            continue
        for cut in range(at + len("nvidia"), len(line), 3):
            text = "\n".join([*lines[:i], line[:cut]])
            verdict, actual = verdicts(tmp_path, AER_LOG, text)["gpu_xid"]
            assert verdict != "pass", (line[:cut], actual)
            seen += 1
    assert seen > 20


def _merged(probe: str, text: str) -> GpuReport | None:
    return gpu_merge.merge({probe: ProbeOutput(text, "", 0)}, parse_any, parse_gpu_list).report


@pytest.mark.parametrize("name", _smi_captures())
def test_a_line_naming_a_gpus_address_pasted_twice_is_no_second_gpu(name: str) -> None:
    """Every real capture with each line that names a GPU's bus id repeated (a paste that
    doubled it): it was "GPU 1 unreadable (nvidia-smi reads the PCI address of GPU 0)", a GPU
    fault (fallen off the bus) from a paste. Now the repeat is dropped (the output not whole)."""
    text = (REAL / name).read_text(errors="replace")
    plain = parse_any(text)
    probes = {"xml": "nvidia_smi", "text": "nvidia_smi_q", "csv": "nvidia_smi_csv"}
    probe = probes.get(plain.source, "nvidia_smi_table")
    whole = _merged(probe, text)
    assert whole is not None
    before = {g.index for g in whole.gpus if any("the PCI address of GPU" in f for f in g.faults)}
    lines = text.split("\n")
    buses = {g.pci_bus_id[-7:].lower() for g in plain.gpus if g.pci_bus_id}
    doubled = [i for i, line in enumerate(lines) if any(b in line.lower() for b in buses) and buses]
    if not doubled or plain.source == "xml":
        pytest.skip("no line names a bus id (or an XML: a line repeated breaks the document)")
    for i in doubled:
        damaged = _merged(probe, "\n".join([*lines[: i + 1], lines[i], *lines[i + 1 :]]))
        if damaged is None:
            continue
        after = {g.index for g in damaged.gpus if any("the PCI address of GPU" in f for f in g.faults)}
        assert after <= before, (name, lines[i])


RDMA = sorted(p.name for p in REAL.iterdir() if p.name.startswith(("ibstat", "ibv_devinfo", "ib-sysfs")))


@pytest.mark.parametrize("name", RDMA)
def test_an_rdma_listing_pasted_twice_or_a_line_doubled_counts_each_port_once(name: str) -> None:
    """An ibstat pasted twice passed '16 of 24 ACTIVE' where the box has 8 of 12; one sysfs line
    doubled passed '9 of 10' for 8 of 9."""
    text = (REAL / name).read_text()
    whole = parse_rdma(text)
    assert parse_rdma(text.rstrip("\n") + "\n" + text).ports == whole.ports
    lines = text.split("\n")
    for i in range(len(lines)):
        doubled = parse_rdma("\n".join([*lines[: i + 1], lines[i], *lines[i + 1 :]]))
        assert len(doubled.ports) <= len(whole.ports), (name, lines[i])


# (a -q that lost its indentation is a damaged paste already: one GPU record read whole,
# facts/test_text_q_flat_one_record.py; a second damage on it is not read apart)
Q_TEXT = sorted(p.name for p in REAL.glob("nvidia-smi-q__*") if "indentation-lost" not in p.name)
_FIELD = re.compile(r"^(\s*)\S.*?\s+: \S")


@pytest.mark.parametrize("name", Q_TEXT)
def test_two_q_fields_on_one_line_are_read_as_two(name: str) -> None:
    """A paste that lost the newline between two `label : value` lines of one indentation
    ("Persistence Mode : Disabled    Addressing Mode : HMM" read as Enabled; "State : Completed
    Status : Success" failed fabric_manager): every real `-q`, joined at many such places, reads
    as the whole."""
    lines = (REAL / name).read_text().split("\n")
    whole = parse_any("\n".join(lines)).gpus
    joined = 0
    # (every 17th line of a long capture; each of a short one, a -q cut in its first record)
    for i in range(0, len(lines) - 1, 17 if len(lines) > 100 else 1):
        a, b = _FIELD.match(lines[i]), _FIELD.match(lines[i + 1])
        if not (a and b and a.group(1) == b.group(1)):
            continue
        text = "\n".join([*lines[:i], lines[i].rstrip() + "    " + lines[i + 1].lstrip(), *lines[i + 2 :]])
        assert parse_any(text).gpus == whole, (name, lines[i], lines[i + 1])
        joined += 1
    assert joined


CSVS = sorted(
    p.name
    for p in REAL.glob("nvidia-smi-query-gpu*")
    if parse_any(p.read_text(errors="replace")).gpus and p.read_text(errors="replace").strip()
)


@pytest.mark.parametrize("name", CSVS)
def test_a_csv_cut_inside_its_last_cell_reads_no_other_value(name: str) -> None:
    """Every real CSV cut inside its last cell (no newline after it): each field of its GPUs is
    what the whole CSV says or not read, never another value (a GH200's `33` cut to `3` passed
    at 3 C; an 87 cut to 8 would pass)."""
    text = (REAL / name).read_text(errors="replace").rstrip("\n")
    whole = parse_any(text + "\n").gpus
    last_cell = text.rsplit(",", 1)[-1]
    for keep in range(1, len(last_cell.strip())):
        cut = text[: len(text) - len(last_cell)] + last_cell[: len(last_cell) - len(last_cell.strip()) + keep]
        for mine, full in zip(parse_any(cut).gpus, whole, strict=False):
            for field in ("temperature_c", "power_draw_w", "memory_used_mib", "utilization_gpu_pct", "index"):
                got = getattr(mine, field)
                assert got is None or got == getattr(full, field), (name, cut[-30:], field, got)


EVERY = sorted(p.name for p in REAL.iterdir() if p.name != "SOURCES.md")


@pytest.mark.parametrize("name", EVERY)
def test_a_capture_pasted_in_a_markdown_code_fence_reads_as_the_capture(tmp_path: Path, name: str) -> None:
    """Every real capture between ```` ```console ```` and ```` ``` ```` lines (a page's or a
    chat's code block): a fenced `-q -x` read as "listed no GPU" (every GPU rule lost, exit 0);
    a fenced `-L`, free, lsblk, nvlink or ibstat was refused."""
    if "hash-commented" in name:
        pytest.skip("commented out line by line: a paste already (api/test_offline_commented_r35.py)")
    text = (REAL / name).read_text(errors="replace")
    if "__line-cut-as-stored__" in name and not text.endswith("\n"):
        pytest.skip("cut inside its last line, no newline after it: a fence's newline would end that line")
    try:
        whole = verdicts(tmp_path, name, text)
    except UsageError:
        pytest.skip("refused whole (tests/fixtures/real/SOURCES.md says why)")
    assert verdicts(tmp_path, name, "```console\n" + text.rstrip("\n") + "\n```\n") == whole


LSCPU = sorted(p.name for p in REAL.glob("lscpu__*.txt"))


@pytest.mark.parametrize("name", LSCPU)
def test_an_lscpu_with_a_line_doubled_or_two_lines_joined_counts_no_other_cpus(name: str) -> None:
    """Every real lscpu with each line pasted twice, or each line joined to the next (a lost
    newline): the cores, CPUs and offline CPUs are the whole capture's or not read (a doubled
    type block counted 4 cores of 2; `Little EndianCPU(s): 40` lost the CPU count, and with it
    the 36 offline CPUs: the order passed)."""
    lines = (REAL / name).read_text().split("\n")
    whole = parse_lscpu("\n".join(lines))

    def agrees(text: str) -> None:
        got = parse_lscpu(text)
        for field in ("physical_cores", "logical_cpus", "offline_cpus"):
            assert getattr(got, field) in (getattr(whole, field), None), (name, field, text[:0])

    for i in range(len(lines) - 1):
        agrees("\n".join([*lines[: i + 1], lines[i], *lines[i + 1 :]]))
        agrees("\n".join([*lines[:i], lines[i] + lines[i + 1], *lines[i + 2 :]]))
    if whole.offline_cpus:  # (the CPU count lost: the online and offline lists still count them)
        at = next(i for i, line in enumerate(lines) if line.startswith("CPU(s):"))
        assert parse_lscpu(
            "\n".join([*lines[: at - 1], lines[at - 1] + lines[at], *lines[at + 1 :]])
        ).logical_cpus == (whole.logical_cpus)


XID145 = "dmesg-journalctl__xid-145-rlw-nonfatal-137__nccl.txt"


def test_an_nvlink5_xid_cut_before_its_fatal_word_is_not_read(tmp_path: Path) -> None:
    """Xid 145 logged `Nonfatal` (a warning) cut anywhere before that word: it failed as a
    fatal one (reset the GPU); its action is not known until the word is read."""
    lines = (REAL / XID145).read_text().split("\n")
    whole = verdicts(tmp_path, XID145, "\n".join(lines))["gpu_xid"][0]
    assert whole == "warn"
    at = next(i for i, line in enumerate(lines) if ": 145, " in line)
    word = lines[at].lower().index("nonfatal")
    for cut in range(lines[at].index("145") + 4, word + len("nonfatal"), 2):
        verdict, actual = verdicts(tmp_path, XID145, "\n".join([*lines[:at], lines[at][:cut]]))["gpu_xid"]
        assert verdict in ("unverified", "warn"), (lines[at][:cut], actual)


DF = sorted(p.name for p in REAL.glob("df-*") if parse_df(p.read_text()))


@pytest.mark.parametrize("name", DF)
def test_a_df_header_joined_to_its_first_row_reads_that_row(name: str) -> None:
    """`Mounted on/dev/nvme0n1p1  2.0T ... /workspace` (a lost newline): the first row was lost
    and `data_disk` failed "/workspace is not a mount point"."""
    text = (REAL / name).read_text()
    head, _, rest = text.partition("\n")
    if "Mounted on" not in head:
        pytest.skip("a header in another language")
    assert parse_df(head.rstrip() + rest) == parse_df(text)


PUBLIC = REAL.parent / "public"


@pytest.mark.parametrize(
    ("name", "said"),
    [
        (
            "lscpu-e__i7-6700-4c8t__notes.txt",
            "`lscpu -e` / `lscpu -p` (one line per CPU), which this tool does not read",
        ),
        ("lscpu-grep__online-offline-lines__notes.txt", "an `lscpu` without its first lines (a `grep` of it"),
        # round 31 (fixN1): `lscpu | grep CPU` from `CPU op-mode(s):` on (measure31b 19)
        (
            "lscpu-grep-CPU__amd-fx-6300__cpufetch-prompt__cpufetch-57.txt",
            "an `lscpu` without its first lines (a `grep` of it",
        ),
        # (the a100 fragment with its ERR! GPU is read since round 33: test_saved_forms_table_part_faults.py)
    ],
)
def test_a_form_read_in_another_form_is_refused_saying_what_to_save(
    tmp_path: Path, name: str, said: str
) -> None:
    """They were refused as "not a recognised command output (expected ... lscpu, lsblk -J ...)",
    which tells a user who saved `lscpu` nothing."""
    with pytest.raises(UsageError) as refused:
        verdicts(tmp_path, name, (PUBLIC / name).read_text())
    assert said in str(refused.value)
    assert "not a recognised command output" not in str(refused.value)


def test_a_whole_last_aer_line_without_its_newline_is_read_and_marked_cut() -> None:
    """The log's last line read whole but with no newline after it: its fault is judged, and it
    is marked cut (what may follow it is not known)."""
    lines = (REAL / AER_LOG).read_text().split("\n")
    at = next(i for i, line in enumerate(lines) if "AER: can't recover" in line)
    last = aer_events("\n".join(lines[: at + 1]))[-1]
    assert last.fault == "aer_unrecovered" and last.cut is not None


WSL_3090 = "nvidia-smi__geforce-rtx-3090__1gpu__driver470.76__wsl-smi470.28__util-err__display-on.txt"


def test_memory_on_a_gpu_driving_a_display_with_no_process_listed_is_a_desktops(tmp_path: Path) -> None:
    """WSL2 on a desktop: the RTX 3090 drives the display (Disp.A On) and holds 1.7 GiB; WSL's
    nvidia-smi lists no Windows process. It failed "another job is using the GPUs you rent";
    the same GPU with the display off is unverified on this WSL2 guest (round 40: the Windows
    host's own use counts there, its Disp.A never On), and fails under a Linux driver's banner
    (nothing tells whose memory it is)."""
    text = (REAL / WSL_3090).read_text()
    assert verdicts(tmp_path, WSL_3090, text)["foreign_processes"] == (
        "warn",
        "GPU 0 drives a display with 1.7 GiB used, no process listed",
    )
    headless = text.replace("00000000:01:00.0  On |", "00000000:01:00.0 Off |")
    assert headless != text
    guest = verdicts(tmp_path, WSL_3090, headless)["foreign_processes"]
    assert guest[0] == "unverified" and "on a WSL2 guest" in guest[1]
    linux = headless.replace("Driver Version: 470.76", "Driver Version: 470.28")
    assert linux != headless
    assert verdicts(tmp_path, WSL_3090, linux)["foreign_processes"][0] == "fail"


# (not a table whose blanks a page collapsed: two of its rows joined are not the same width
# as its border's lines, so the join cannot be told from one row's own cells)
TABLES = sorted(
    p.name
    for p in REAL.glob("nvidia-smi__*")
    if parse_any(p.read_text(errors="replace")).source == "table"
    and "collapsed-spaces" not in p.name
    # (round 39: its top border indented one space under its fence, its last border cut: no
    # border line of the table's width is left to tell two joined rows apart)
    and "indented-fence-CUT" not in p.name
)


@pytest.mark.parametrize("name", TABLES)
def test_two_table_lines_a_paste_joined_read_as_the_table(name: str) -> None:
    """Every real table with each pair of its GPU table's lines joined (a lost newline: `+---+|
    7  NVIDIA H100 ...|`): the GPUs read as the whole table's (the last GPU was lost: "1 of the
    8 ordered GPUs missing"; a T4's unreadable GPU vanished; a K20m's utilisation was lost)."""
    lines = (REAL / name).read_text(errors="replace").split("\n")
    whole = parse_any("\n".join(lines))
    table = [i for i, line in enumerate(lines) if line.startswith(("|", "+")) and lines[i + 1 : i + 2]]
    for i in table:
        if not lines[i + 1].startswith(("|", "+")) or len(lines[i]) != len(lines[i + 1]):
            continue
        joined = parse_any("\n".join([*lines[:i], lines[i] + lines[i + 1], *lines[i + 2 :]]))
        # (the GPUs' readings; whether the text after the GPU table was cut is the table's end's,
        # which a joined banner may read apart: facts/nvidia_smi/table._table_closed)
        assert [_readings(g) for g in joined.gpus] == [_readings(g) for g in whole.gpus], (name, i)


def _readings(gpu: GpuInfo) -> GpuInfo:
    return dataclasses.replace(gpu, processes_open=False, record_cut=False)


@pytest.mark.parametrize("name", Q_TEXT)
def test_a_q_cut_after_a_label_is_incomplete_and_invents_no_process(name: str) -> None:
    """Every real `-q` cut right after a label of its last 15 lines (`Process ID` with its value
    cut off): the report is not whole, and no process is read from a record cut short (it failed
    foreign_processes as a compute process "pid None"). A cut inside or after the last record's
    `Processes` (every section before it read) is whole in its GPU facts (round 26), its list
    open where the cut may have shortened it: never "none" read from the part cut away."""
    lines = (REAL / name).read_text().rstrip("\n").split("\n")
    whole = {p.pid for g in parse_any("\n".join(lines)).gpus for p in g.processes}
    processes = max(
        (i for i, line in enumerate(lines) if line.startswith("    Processes")), default=len(lines)
    )
    for i in range(max(0, len(lines) - 15), len(lines)):
        label = lines[i].split(":")[0].rstrip()
        if not label.strip() or not lines[i].startswith(" "):
            continue
        cut = parse_any("\n".join([*lines[:i], label]))
        assert not cut.complete or i > processes, (name, label)
        if i > processes and not any(line.startswith("    Capabilities") for line in lines[: i + 1]):
            assert cut.gpus[-1].processes_open or not cut.gpus[-1].processes_known, (name, label)
        assert {p.pid for g in cut.gpus for p in g.processes} <= whole, (name, label)


RTX4090_Q = "nvidia-smi-q__geforce-rtx-4090__8gpu__driver535.154.05__2-busy-later.txt"


def test_a_downshifted_link_of_a_gpu_whose_load_is_not_read_is_unverified(tmp_path: Path) -> None:
    """8 x RTX 4090 `-q`, GPU 0's links at Gen1 while idle (power saving, a pass whole); cut before
    GPU 0's P-state and utilisation lines it failed "riser/slot fault"."""
    lines = (REAL / RTX4090_Q).read_text().split("\n")
    assert verdicts(tmp_path, RTX4090_Q, "\n".join(lines))["pcie_link"][0] == "pass"
    at = next(i for i, line in enumerate(lines) if "Performance State" in line)
    assert verdicts(tmp_path, RTX4090_Q, "\n".join(lines[:at]) + "\n")["pcie_link"] == (
        "unverified",
        # (an unverified row of an output cut short names the cut too)
        "GPU 0 Gen1 of Gen4 (whether the GPU was idle is not reported) (of what was read; incomplete"
        " probe: nvidia-smi says 8 attached but lists 1)",
    )


# (not a listing below a login's variable line and a lost GPU's line, whose joins are no GPU
# line's: api/test_list_past_lost_gpu_r36.py)
LISTS = sorted(p.name for p in REAL.glob("nvidia-smi-L__*") if "no-device-handle__env-line" not in p.name)


@pytest.mark.parametrize("name", LISTS)
def test_two_lines_of_a_gpu_listing_a_paste_joined_read_as_the_listing(name: str) -> None:
    """Every real `nvidia-smi -L` with each pair of its lines joined (a lost newline, with or
    without a space): a GPU line joined to its MIG line failed gpu_model ("'MIG' marks another
    product"); two GPU lines joined failed gpu_count ("1 of 4 missing")."""
    lines = (REAL / name).read_text().rstrip("\n").split("\n")
    whole = parse_gpu_list("\n".join(lines) + "\n")
    for i in range(len(lines) - 1):
        for glue in ("", "  "):
            joined = [*lines[:i], lines[i] + glue + lines[i + 1].lstrip(), *lines[i + 2 :]]
            assert parse_gpu_list("\n".join(joined) + "\n").gpus == whole.gpus, (name, i, glue)
