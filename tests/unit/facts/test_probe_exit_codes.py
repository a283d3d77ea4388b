"""An nvidia-smi call's exit code where it printed a whole answer: 14 (nvidia-smi(1), RETURN
VALUE: "14 - infoROM is corrupted"), a warning beside the whole table (NVIDIA/gpu-operator#285:
the table of a P100 and `echo $?` 14; "status 14 is a warning", pytorch/pytorch#87464).

The live probe read the four main formats whatever their exit code, but `-L`, the compute apps,
`topo -m` and `nvlink -s` / `-e` only at exit 0: on a box whose nvidia-smi warns of a corrupted
infoROM, an NVLink pair that the same outputs saved to files pass was unverified live, the
processes `--query-compute-apps` lists were unread. Now every nvidia-smi output with exit 14 is
read as answered, the code kept (`exited`, the run's saved raw output); every other code (15 a
GPU fallen off the bus, 9 no driver, 4 no permission ...) keeps its failure: never a pass.

A GPU listing (the table, `-q`, `-q -x`, the query CSV) printed by a call that then failed with
any other code, or was stopped by the probe's timeout (124), was read as a whole listing: a real
4 x A100 table with `exit 15` failed an order of 8 GPUs, "4", a hardware claim from an output
nvidia-smi itself says failed. Now it is part of the answer (an incomplete probe, the code
named), unless a lost GPU's own line ("Unable to determine the device handle ...") explains it.
So is `-L`'s listing now (round 37): live it was dropped at any code but 0 and 14, where the same
output saved to a file is read (a lost GPU's line, then the GPUs nvidia-smi could open)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.connection.gather import Facts, parse_facts
from gpuonboard.facts.probe import ProbeOutput

FIXTURES = Path(__file__).parents[2] / "fixtures"
REAL = FIXTURES / "real"
# nvidia-smi's own warning line, as the real 8 x V100 capture ends (Azure/azhpc-diagnostics)
WARNING = (
    (REAL / "nvidia-smi__tesla-v100-sxm2-32gb__8gpu__driver460.32.03__inforom-corrupted-gpu7__azhpc.txt")
    .read_text()
    .strip()
    .splitlines()[-1]
)
# nvidia-smi(1)'s other return codes: 2 invalid argument, 3 not supported, 4 no permission, 6 not
# found, 8 power cables, 9 no driver, 10 interrupt issue, 12 no NVML, 13 not implemented, 15 a
# GPU fallen off the bus, 255 other
FAILURES = (2, 3, 4, 6, 8, 9, 10, 12, 13, 15, 255)
LONE = "not applicable: one GPU in the box, no NVLink peer"


def _rules(facts: Facts, order: str) -> dict[str, tuple[str, str]]:
    return {c.name: (c.verdict, c.actual) for c in offline.judge(facts, offline.load_order(order))}


def _fabric(facts: Facts) -> dict[str, tuple[str, str]]:
    from gpuonboard.steps.checks.fabric_health import health_checks

    return {c.name: (c.verdict, c.actual) for c in health_checks(facts)}


def _h100_pcie(tmp_path: Path) -> dict[str, ProbeOutput]:
    """A real 2 x H100 PCIe box (driver 555.42.02): its table and `topo -m` (NV12)."""
    return offline.load_outputs(
        [
            str(REAL / "nvidia-smi__h100-pcie__2gpu__driver555.42.02.txt"),
            str(REAL / "nvidia-smi-topo-m__h100-pcie__2gpu-nv12__driver555.42.02.txt"),
        ]
    )


def _h100_sxm(tmp_path: Path) -> dict[str, ProbeOutput]:
    """A real 1 x H100 SXM (driver 590.48.01): its query CSV and `nvlink -s` (18 links)."""
    return offline.load_outputs(
        [
            str(REAL / "nvidia-smi-query-gpu__h100-80gb-hbm3__1gpu__driver590.48.01__idle.csv"),
            str(REAL / "nvidia-smi-nvlink-s__h100-80gb-hbm3__1gpu__driver590.48.01.txt"),
        ]
    )


def _h100_mig(tmp_path: Path) -> dict[str, ProbeOutput]:
    """A real 1 x H100 in MIG mode (driver 590.48.01): its table, `-q` and `-L` (4 MIG devices)."""
    return offline.load_outputs(
        [
            str(REAL / f"{kind}__h100-80gb-hbm3-mig__1gpu-4mig__driver590.48.01{tail}.txt")
            for kind, tail in (("nvidia-smi", "__load"), ("nvidia-smi-q", "__load"), ("nvidia-smi-L", ""))
        ]
    )


def _h200_apps(tmp_path: Path) -> dict[str, ProbeOutput]:
    """A real 1 x H200 under load: its query CSV (no process list) and `--query-compute-apps`."""
    return offline.load_outputs(
        [
            str(
                FIXTURES
                / "compute-apps/nvidia-smi-query-compute-apps__h200-mig__1gpu__driver590.48.01__load.csv"
            ),
            str(REAL / "nvidia-smi-query-gpu__h200__1gpu__driver590.48.01__load.csv"),
        ]
    )


def _with_exit(raw: dict[str, ProbeOutput], probe: str, code: int) -> dict[str, ProbeOutput]:
    """`raw` with `probe` exiting `code` and nvidia-smi's warning on its stderr (as live)."""
    out = dataclasses.replace(raw[probe], exit_code=code, stderr=WARNING if code == 14 else "NVML error")
    return {**raw, probe: out}


# probe, the box's outputs, what the probe's answer gives (its fact, or a rule's verdict and words)
CASES: dict[str, tuple[str, Callable[[Path], dict[str, ProbeOutput]], Callable[[Facts, str], object]]] = {
    "topo": ("nvidia_topo", _h100_pcie, lambda f, order: _rules(f, order)["interconnect"]),
    "nvlink": ("nvidia_nvlink", _h100_sxm, lambda f, _: _fabric(f)["nvlink_links"]),
    "list": ("nvidia_smi_list", _h100_mig, lambda f, _: f.gpu_evidence and f.gpu_evidence.listed),
    "apps": (
        "nvidia_smi_apps",
        _h200_apps,
        lambda f, _: f.gpu and [(p.pid, p.name) for g in f.gpu.gpus for p in g.processes],
    ),
}


@pytest.fixture
def order(tmp_path: Path) -> str:
    path = tmp_path / "order.yml"
    path.write_text("gpu_count: 2\ninterconnect: nvlink\n")
    return str(path)


@pytest.mark.parametrize("case", list(CASES))
def test_an_answer_with_exit_14_is_read_as_the_same_answer_at_exit_0(
    tmp_path: Path, order: str, case: str
) -> None:
    probe, box, answer = CASES[case]
    raw = box(tmp_path)
    assert raw[probe].exit_code == 0 and raw[probe].stdout.strip()
    whole = answer(parse_facts(raw), order)
    assert whole and not (isinstance(whole, tuple) and whole[0] == "unverified"), whole  # (it reads)
    facts = parse_facts(_with_exit(raw, probe, 14))
    assert answer(facts, order) == whole
    out = facts.raw[probe]
    assert (out.exit_code, out.exited, out.own_exit_code) == (0, 14, 14)
    (said,) = [w for w in facts.warnings if "exited 14" in w]
    assert said.endswith(
        " exited 14, nvidia-smi's code for a corrupted infoROM (a warning beside a whole answer):"
        " read as answered"
    ), said


@pytest.mark.parametrize("code", FAILURES)
@pytest.mark.parametrize("case", [c for c in CASES if c != "list"])  # (-L: a listing, below)
def test_any_other_exit_code_keeps_its_failure(tmp_path: Path, order: str, case: str, code: int) -> None:
    probe, box, answer = CASES[case]
    raw = box(tmp_path)
    whole = answer(parse_facts(raw), order)
    facts = parse_facts(_with_exit(raw, probe, code))
    read = answer(facts, order)
    assert read != whole
    if case == "nvlink" and code == 3:  # (nvidia-smi's "not supported" on the box's one GPU)
        assert read == ("pass", f"{LONE} (`nvidia-smi nvlink -s` says NVLink is not available there)")
    elif isinstance(read, tuple):  # a rule: never a pass on an output whose nvidia-smi failed
        assert read[0] != "pass", read
    assert facts.raw[probe].exited is None and facts.raw[probe].exit_code == code


def test_the_inforom_warning_of_topo_alone_names_its_gpu(tmp_path: Path, order: str) -> None:
    """`nvidia-smi -q -x` exits 0 on a box whose plain `nvidia-smi` exits 14 (microsoft/pai#3756):
    a warning on another call's stderr alone still names the GPU's corrupted infoROM: the box's
    GPU 0 (at C2; GPU 1 is at D5), or, at an address none of its GPUs has, the address."""
    raw = _h100_pcie(tmp_path)
    ours = dataclasses.replace(
        raw["nvidia_topo"], exit_code=14, stderr=WARNING.replace("0008:00:", "0000:C2:")
    )
    facts = parse_facts({**raw, "nvidia_topo": ours})
    assert [(g.pci_bus_id, g.cell_faults) for g in facts.gpu.gpus] == [
        ("00000000:C2:00.0", ("infoROM reads corrupted",)),
        ("00000000:D5:00.0", ()),
    ]
    rules = _rules(facts, order)
    assert rules["sensor_faults"] == ("warn", "GPU 0: infoROM reads corrupted")
    assert rules["interconnect"][0] == "pass"
    # the real warning's address (an 8 x V100's, 0008:00:00.0) is no GPU of this box: unplaced
    rules = _rules(parse_facts(_with_exit(raw, "nvidia_topo", 14)), order)
    assert rules["sensor_faults"] == ("warn", "GPU at PCI 0008:00:00.0: infoROM reads corrupted")


def test_every_nvidia_smi_probe_is_named_with_its_arguments() -> None:
    """The probes that run nvidia-smi are kept twice: `core_probes` (connection/probe_commands.py) runs
    them, NVIDIA_SMI_ARGS (facts/gpu_probes.py) names them for the exit-14 rule and its words.
    A probe added to one and not the other, or its arguments changed in one, is caught here."""
    from gpuonboard.connection.probe_commands import core_probes
    from gpuonboard.facts.gpu_probes import NVIDIA_SMI_ARGS

    ran: dict[str, str] = {}
    for probe in core_probes():
        if "nvidia-smi" in probe.command:
            _, _, args = probe.command.rpartition("; fi; n")  # (after the `n` function's prelude)
            # (up to the call's end: the table's call is followed by its failure's module read)
            ran[probe.name] = args.split(";", 1)[0].strip().split("=", 1)[0] or "(default table)"
    assert ran == NVIDIA_SMI_ARGS


# a listing of some GPUs and the order it falls short of: a real 4 x A100 SXM4 80GB table
# (thamada/gls) and a real 2 x A100 PCIe 40GB query CSV without `count` (HPE-Japan-Presales/e-learning)
LISTINGS = {
    "table": (
        "nvidia_smi_table",
        "nvidia-smi__a100-sxm4-80gb__4gpu__driver555.42.02.txt",
        8,
        "4 listed",
        "`nvidia-smi`",
    ),
    "csv": (
        "nvidia_smi_csv",
        "nvidia-smi-query-gpu__a100-pcie-40gb__2gpu__driver555.42.02.csv",
        4,
        "2 listed",
        "`nvidia-smi --query-gpu`",
    ),
}


@pytest.mark.parametrize("code", (*FAILURES, 124))
@pytest.mark.parametrize("case", list(LISTINGS))
def test_a_gpu_listing_whose_call_failed_after_it_is_part_of_the_answer(
    tmp_path: Path, case: str, code: int
) -> None:
    """The real listing as its call printed it, the call's exit code changed to `code` (nothing on
    stderr): fewer GPUs than ordered are not known missing, the failure is named."""
    probe, name, ordered, listed, call = LISTINGS[case]
    order = tmp_path / "order.yml"
    order.write_text(f"gpu_count: {ordered}\n")
    raw = offline.load_outputs([str(REAL / name)])
    assert _rules(parse_facts(raw), str(order))["gpu_count"] == ("fail", listed.split()[0])
    failed = {**raw, probe: dataclasses.replace(raw[probe], exit_code=code)}
    how = "was stopped after 60 s" if code == 124 else f"failed (exit {code})"
    assert _rules(parse_facts(failed), str(order))["gpu_count"] == (
        "unverified",
        f"{listed}; incomplete probe: {call} {how}: what it printed before may leave GPUs out",
    )


def test_a_lost_gpus_line_explains_the_failed_call_of_a_whole_listing(tmp_path: Path) -> None:
    """The real 4 x A100 table, its call exiting 15 with nvidia-smi's line for a GPU it could not
    open on stderr (at an address none of the four has): the listing is whole, the lost GPU a
    fault (gpu_health fails), the count judged."""
    order = tmp_path / "order.yml"
    order.write_text("gpu_count: 8\n")
    raw = offline.load_outputs([str(REAL / LISTINGS["table"][1])])
    lost = (
        "Unable to determine the device handle for GPU0000:3B:00.0: GPU is lost."
        "  Reboot the system to recover this GPU"
    )
    failed = {
        **raw,
        "nvidia_smi_table": dataclasses.replace(raw["nvidia_smi_table"], exit_code=15, stderr=lost),
    }
    facts = parse_facts(failed)
    assert facts.raw["nvidia_smi_table"].partial == ""
    rules = _rules(facts, str(order))
    assert rules["gpu_count"][0] == "fail" and "incomplete" not in rules["gpu_count"][1], rules["gpu_count"]


H100_TABLE = "nvidia-smi__h100-80gb-hbm3__8gpu__driver550.90.07.txt"
# a real 2 x T4 table whose GPU 1 reads ERR! for its temperature and power
T4_ERR = "nvidia-smi__tesla-t4__2gpu-one-bus-id__driver545.23.08__gpu1-err.txt"
# the gpu_health rules read from the table's rows
_PER_GPU = ("ecc_mode", "temperature", "persistence_mode", "mig_mode")


def _failed_table(name: str, code: int, order_text: str, tmp_path: Path) -> dict[str, tuple[str, str]]:
    """The rules of the real table `name` as its call printed it, the call's exit code `code`."""
    order = tmp_path / "order.yml"
    order.write_text(order_text)
    raw = offline.load_outputs([str(REAL / name)])
    failed = {**raw, "nvidia_smi_table": dataclasses.replace(raw["nvidia_smi_table"], exit_code=code)}
    return _rules(parse_facts(failed), str(order))


@pytest.mark.parametrize("code", (15, 255, 124))
def test_a_whole_table_of_as_many_gpus_as_ordered_whose_call_failed_meets_the_count(
    tmp_path: Path, code: int
) -> None:
    """The real 8 x H100 table, its call's exit code changed to `code`, 8 GPUs ordered. Before
    (round 29) gpu_count was unverified, "8 listed; incomplete probe: ...": the failed call was
    read as rows that may be samples. Now a cut: eight rows are eight GPUs, the count passes
    naming the failure; the rules of each GPU's values are judged as over a table cut after its
    eighth GPU (the part cut away may hold another GPU)."""
    how = "was stopped after 60 s" if code == 124 else f"failed (exit {code})"
    said = f"incomplete probe: `nvidia-smi` {how}: what it printed before may leave GPUs out"
    rules = _failed_table(H100_TABLE, code, "gpu_count: 8\n", tmp_path)
    assert rules["gpu_count"] == ("pass", f"8 listed; {said}")
    whole = _failed_table(H100_TABLE, 0, "gpu_count: 8\n", tmp_path)
    assert all(whole[r][0] == "pass" for r in ("gpu_count", *_PER_GPU))
    lines = (REAL / H100_TABLE).read_text().splitlines(keepends=True)
    shown = [i for i, line in enumerate(lines) if line.startswith("|   7  ")][0] + 4
    (tmp_path / "nvidia-smi.txt").write_text("".join(lines[:shown]))
    cut = _rules(
        parse_facts(offline.load_outputs([str(tmp_path / "nvidia-smi.txt")])), str(tmp_path / "order.yml")
    )
    assert {r: rules[r][0] for r in _PER_GPU} == {r: cut[r][0] for r in _PER_GPU}
    assert rules["gpu_count"][0] == cut["gpu_count"][0] == "pass"


@pytest.mark.parametrize("code", (8, 10, 15))
def test_a_table_showing_a_faulty_gpu_explains_a_gpu_fault_code(tmp_path: Path, code: int) -> None:
    """The real 2 x T4 table (GPU 1's temperature and power ERR!), its call's exit code changed to
    `code`, nvidia-smi(1)'s code of a GPU's own fault (8 power cables, 10 interrupt issue, 15
    fallen off the bus), 2 GPUs ordered. Before (round 29) gpu_count was unverified, an
    incomplete probe; the ERR! GPU explains the code as a lost GPU's line does: the table is
    whole, gpu_count fails as over the call that exited 0. Exit 255 names no GPU's fault: the
    table stays part of the answer."""
    whole = _failed_table(T4_ERR, 0, "gpu_count: 2\n", tmp_path)
    assert whole["gpu_count"] == ("fail", "2 (1 unreadable)")
    assert _failed_table(T4_ERR, code, "gpu_count: 2\n", tmp_path)["gpu_count"] == whole["gpu_count"]
    other = _failed_table(T4_ERR, 255, "gpu_count: 2\n", tmp_path)["gpu_count"]
    assert other[0] == "unverified" and "exit 255" in other[1]


# a real `nvidia-smi -L` of a 2 x RTX 4090 box whose GPU 3b:00.0 was lost: the lost GPU's line,
# then GPU 1 (incident notes, after the login's CUDA_VISIBLE_DEVICES line); a real -L of 8 x H100
LOST_LISTING = "nvidia-smi-L__geforce-rtx-4090__2gpu-gpu0-no-device-handle__env-line__incident-notes.txt"
H100_LISTING = "nvidia-smi-L__h100-80gb-hbm3__8gpu__ccr-buffalo.txt"


@pytest.mark.parametrize("code", FAILURES)
def test_a_failed_gpu_listing_of_L_is_read_as_its_saved_file_is(tmp_path: Path, code: int) -> None:
    """`nvidia-smi -L` naming a GPU it could not open, then the GPU it could, its call exiting
    `code`: live, the listing was dropped (only `-L` at exit 0 was read) and gpu_count and
    gpu_model were unverified ("nvidia-smi failed"), where the same output saved to a file fails
    both: 2 GPUs, one unreadable (tests/integration/test_live_offline_same_box.py, lo-4090-L-lost).
    Now it is read as the saved file is, the lost GPU's line explaining the code."""
    order = tmp_path / "order.yml"
    order.write_text("gpu_model: RTX 4090\ngpu_count: 2\nvram: 24GB\n")
    raw = offline.load_outputs([str(REAL / LOST_LISTING)])
    saved = _rules(parse_facts(raw), str(order))
    assert saved["gpu_count"] == ("fail", "2 (1 unreadable)")
    failed = {**raw, "nvidia_smi_list": dataclasses.replace(raw["nvidia_smi_list"], exit_code=code)}
    facts = parse_facts(failed)
    assert facts.raw["nvidia_smi_list"].exited == code
    live = _rules(facts, str(order))
    assert {r: live[r] for r in ("gpu_model", "gpu_count", "vram", "gpu_health")} == {
        r: saved[r] for r in ("gpu_model", "gpu_count", "vram", "gpu_health")
    }


@pytest.mark.parametrize(
    ("code", "how"),
    (
        (124, "was stopped after 60 s"),
        (137, "was stopped (exit 137: killed)"),
        (143, "was stopped (exit 143: terminated)"),
    ),
)
def test_a_stopped_L_listing_is_part_of_the_answer_even_after_a_lost_gpus_line(
    tmp_path: Path, code: int, how: str
) -> None:
    """`nvidia-smi -L` stopped by the probe's timeout (124) or a signal (137, 143) after the lost
    GPU's line and the GPU it could open: the lost GPU's line explains a failure nvidia-smi
    reported itself, never a stop, which cuts the listing short wherever it was (more GPUs may
    have followed). It was read as whole (gpu_count FAIL "2 (1 unreadable)", a hardware claim
    from a killed listing); now it is part of the answer, the stop named (revS F3)."""
    order = tmp_path / "order.yml"
    order.write_text("gpu_count: 2\n")
    raw = offline.load_outputs([str(REAL / LOST_LISTING)])
    failed = {**raw, "nvidia_smi_list": dataclasses.replace(raw["nvidia_smi_list"], exit_code=code)}
    facts = parse_facts(failed)
    assert facts.raw["nvidia_smi_list"].partial == (
        f"`nvidia-smi -L` {how}: what it printed before may leave GPUs out"
    )
    verdict, actual = _rules(facts, str(order))["gpu_count"]
    assert verdict == "unverified" and f"`nvidia-smi -L` {how}" in actual


@pytest.mark.parametrize("code", (*FAILURES, 124))
def test_a_whole_L_listing_whose_call_failed_is_part_of_the_answer(tmp_path: Path, code: int) -> None:
    """The real 8 x H100 `-L`, its call's exit code changed to `code` (no lost GPU's line): a
    listing nvidia-smi says is not whole, read (8 listed) with its failure named, never a pass
    on it; before, nothing was read (gpu_count unverified, "unknown: nvidia-smi failed")."""
    order = tmp_path / "order.yml"
    order.write_text("gpu_count: 8\n")
    raw = offline.load_outputs([str(REAL / H100_LISTING)])
    assert _rules(parse_facts(raw), str(order))["gpu_count"] == ("pass", "8")
    failed = {**raw, "nvidia_smi_list": dataclasses.replace(raw["nvidia_smi_list"], exit_code=code)}
    how = "was stopped after 60 s" if code == 124 else f"failed (exit {code})"
    assert _rules(parse_facts(failed), str(order))["gpu_count"] == (
        "unverified",
        f"8 listed; incomplete probe: `nvidia-smi -L` {how}: what it printed before may leave GPUs out",
    )
