"""A PCIe link narrower than its maximum on an idle GPU is no degraded link from that one
reading: nvidia-smi --help-query-gpu says of `pcie.link.width.current`, as of the generation,
"These may be reduced when the GPU is not in use". Judged on real captures."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.steps.checks import gpu_health

REAL = Path(__file__).parents[3] / "fixtures" / "real"


def _pcie(name: str, probe: str) -> tuple[str, str, str]:
    facts = parse_facts({probe: ProbeOutput((REAL / name).read_text(), "", 0)})
    (check,) = [c for c in gpu_health.evaluate(facts) if c.name == "pcie_link"]
    return check.verdict, check.actual, check.detail


@pytest.mark.parametrize(
    ("name", "probe", "actual"),
    [
        # an AWS passthrough A10G at P8, 0 %: x8 of x16 (and Gen1 of Gen4)
        (
            "nvidia-smi-q-x__a10g__1gpu__driver515.105.01__aws-passthrough.xml",
            "nvidia_smi",
            "GPU 0 x8 of x16, Gen1 of Gen4",
        ),
        # a Quadro P2000 at P8
        (
            "nvidia-smi-q-x__quadro-p2000__1gpu__driver525.125.06.xml",
            "nvidia_smi",
            "GPU 0 x8 of x16, Gen1 of Gen3",
        ),
    ],
)
def test_an_idle_gpus_narrow_link_warns_never_fails(name: str, probe: str, actual: str) -> None:
    verdict, shown, detail = _pcie(name, probe)
    assert (verdict, shown) == ("warn", actual)
    assert "idle" in detail and "rerun under load" in detail


def test_a_narrow_link_on_a_gpu_not_known_idle_still_fails() -> None:
    # a Tesla T4 at P0 whose clock reasons say not idle (gpu_idle Not Active): x8 of x16
    verdict, shown, _ = _pcie("nvidia-smi-q-x__tesla-t4__1gpu__driver515.105.01.xml", "nvidia_smi")
    assert (verdict, shown) == ("fail", "GPU 0 x8 of x16 at Gen3 of Gen3 (not power saving)")


def test_a_narrow_link_at_its_top_generation_fails_even_idle() -> None:
    # a Tesla V100 SXM2 at P0 whose clock reasons read "Idle: Active": x2 of x16 at Gen3 of Gen3.
    # Power saving drops the generation with the width (every real idle narrow link above is at
    # Gen1): a link at its top generation but narrower has lost lanes
    verdict, shown, detail = _pcie(
        "nvidia-smi-q__tesla-v100-sxm2-32gb__1of4gpu__driver418.67.txt", "nvidia_smi_q"
    )
    assert verdict == "fail", (shown, detail)
    # (GPU 0 of the 4 attached: a fault of what was read, its other GPUs not read)
    assert shown == (
        "GPU 0 x2 of x16 at Gen3 of Gen3 (not power saving) (of what was read; incomplete probe:"
        " nvidia-smi says 4 attached but lists 1 (the nvidia-smi -q text has lines left out by hand,"
        " marked `...`))"
    )


A10_IDLE = "nvidia-smi-q__a10__1gpu__driver550.90.12__idle-sw-power-cap__gls.txt"


@pytest.mark.parametrize(
    ("name", "probe", "actual"),
    [
        # an A10 at P8, 0 %: Gen1 of Gen4 at x16 of x16
        (A10_IDLE, "nvidia_smi_q", "at max width; idle, power saving: GPU 0 Gen1 of Gen4"),
        # an RTX 3060 at P8 (-q -x): Gen1 of Gen4 at x16 of x16
        (
            "nvidia-smi-q-x__geforce-rtx-3060__1gpu__driver570.124.04.xml",
            "nvidia_smi",
            "at max width; idle, power saving: GPU 0 Gen1 of Gen4",
        ),
        # 8 x RTX 4090, GPUs 1 and 4 busy at Gen4, the six idle ones at Gen1 of Gen4, all x16
        (
            "nvidia-smi-q__geforce-rtx-4090__8gpu__driver535.154.05__2-busy-6-gen1.txt",
            "nvidia_smi_q",
            "at max width; idle, power saving: GPU 0 Gen1 of Gen4; GPU 2 Gen1 of Gen4; GPU 3 Gen1 of Gen4;"
            " GPU 5 Gen1 of Gen4; GPU 6 Gen1 of Gen4; GPU 7 Gen1 of Gen4",
        ),
    ],
)
def test_an_idle_gpus_lower_generation_at_full_width_is_power_saving_and_passes(
    name: str, probe: str, actual: str
) -> None:
    """An idle GPU's link at Gen1 with every lane trained is the driver's power saving (nvidia-smi:
    "may be reduced when the GPU is not in use"), not a degraded link (it was a warning before)."""
    verdict, shown, _ = _pcie(name, probe)
    assert (verdict, shown) == ("pass", actual)


def test_a_lower_generation_under_load_still_fails(tmp_path: Path) -> None:
    """The real idle A10 `-q` edited in-test to read as busy: Performance State P8 -> P0 and
    GPU utilization 0 % -> 100 %; its link still at Gen1 of Gen4 then fails."""
    text = (REAL / A10_IDLE).read_text()
    busy = text.replace(
        "Performance State                     : P8", "Performance State                     : P0"
    )
    busy = busy.replace(
        "        Gpu                               : 0 %", "        Gpu                               : 100 %"
    )
    assert busy.count(": P0") == 1 and ": 100 %" in busy
    facts = parse_facts({"nvidia_smi_q": ProbeOutput(busy, "", 0)})
    (check,) = [c for c in gpu_health.evaluate(facts) if c.name == "pcie_link"]
    assert (check.verdict, check.actual) == ("fail", "GPU 0 Gen1 of Gen4")


def test_an_idle_gpus_link_between_gen1_and_its_max_still_warns() -> None:
    """The real idle A10 `-q` (P8, 0 %) with its PCIe Current and Device Current generation edited
    in-test from 1 to 3: Gen3 of Gen4 is no power-saving state (idle links drop to Gen1), so it
    is no pass; rerun under load."""
    text = (REAL / A10_IDLE).read_text()
    edited = text.replace("Current                   : 1", "Current                   : 3")
    assert edited.count("Current                   : 3") == 2
    facts = parse_facts({"nvidia_smi_q": ProbeOutput(edited, "", 0)})
    (check,) = [c for c in gpu_health.evaluate(facts) if c.name == "pcie_link"]
    assert (check.verdict, check.actual) == ("warn", "GPU 0 Gen3 of Gen4")


H100_BRAKE = "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.183.01__power-brake-active.txt"
H200_Q = "nvidia-smi-q__h200__1gpu__driver610.43.02.txt"
RTX4090_IDLE = "nvidia-smi-q__geforce-rtx-4090__8gpu__driver535.154.05__3-idle-gen1.txt"
# the 3-idle-gen1 capture's GPUs 5 and 7 (P8, 0 %, Gen1 of Gen4 at x16): power saving
RTX4090_OTHERS = "idle, power saving: GPU 5 Gen1 of Gen4; GPU 7 Gen1 of Gen4"


def _edited_row(name: str, old: str, new: str, gpu: int = 0, count: int = 1) -> tuple[str, str]:
    """pcie_link's (verdict, actual) of the real `-q` capture `name` with the first `count` lines
    of its GPU record number `gpu` (0: the first) whose end matches the pattern `old` ending in
    `new` instead (re.sub's replacement)."""
    lines = (REAL / name).read_text().split("\n")
    starts = [i for i, line in enumerate(lines) if line.startswith("GPU 0")] + [len(lines)]
    block = range(starts[gpu], starts[gpu + 1])
    at = [i for i in block if re.search(old + "$", lines[i])][:count]
    assert len(at) == count
    for i in at:
        lines[i] = re.sub(old + "$", new, lines[i])
    facts = parse_facts({"nvidia_smi_q": ProbeOutput("\n".join(lines), "", 0)})
    (check,) = [c for c in gpu_health.evaluate(facts) if c.name == "pcie_link"]
    return check.verdict, check.actual


@pytest.mark.parametrize(
    ("name", "old", "new", "gpu", "count", "actual"),
    [
        # GPU 0 of an idle H100 box (P0, "Idle: Active"): PCIe Current and Device Current 5 -> 1
        (
            H100_BRAKE,
            r"(Current\s+: )5",
            r"\g<1>1",
            0,
            2,
            "GPU 0 Gen1 of Gen5",
        ),
        # the idle H200 (P0, "Idle: Active"), its Current and Device Current 5 -> 1
        (
            H200_Q,
            r"(Current\s+: )5",
            r"\g<1>1",
            0,
            2,
            "GPU 0 Gen1 of Gen5",
        ),
        # GPU 4 of the 4090 box at P8 but `Gpu : 0 %` -> `100 %` (its record's own line)
        (
            RTX4090_IDLE,
            "Gpu                               : 0 %",
            "Gpu                               : 100 %",
            4,
            1,
            f"GPU 4 Gen1 of Gen4; {RTX4090_OTHERS}",
        ),
        # GPU 4 of the 4090 box, its `Performance State : P8` -> `N/A` ("Idle: Active" still)
        (
            RTX4090_IDLE,
            "Performance State                     : P8",
            "Performance State                     : N/A",
            4,
            1,
            f"GPU 4 Gen1 of Gen4; {RTX4090_OTHERS}",
        ),
    ],
    ids=["h100-p0-idle-active", "h200-p0-idle-active", "4090-p8-at-100pct", "4090-pstate-na"],
)
def test_gen1_is_power_saving_only_in_an_idle_pstate_with_no_load(
    name: str, old: str, new: str, gpu: int, count: int, actual: str
) -> None:
    """Real `-q` captures edited in-test as each case says. Every real idle Gen1 link is at P8;
    an idle data-centre GPU sits at P0 with "Idle: Active" at its full generation: its link at
    Gen1 is no power saving seen (it passed as one), nor is Gen1 at 100 % or with no P-state."""
    assert _edited_row(name, old, new, gpu, count) == ("warn", actual)


def test_an_idle_gen1_link_whose_width_is_unread_is_unverified_and_names_the_field() -> None:
    """The real 8 x RTX 4090 `-q` (GPU 4 idle at P8, Gen1 of Gen4 at x16), GPU 4's Link Width
    `Current : 16x` edited in-test to `N/A`: the generation is power saving, the width unknown,
    so unverified naming the field not read (it warned "GPU 4 Gen1 of Gen4" as a slow idle link;
    before that it said "GPU 4 Gen1 (the card's maximum not reported)")."""
    got = _edited_row(RTX4090_IDLE, "Current                   : 16x", "Current                   : N/A", 4)
    assert got == ("unverified", "GPU 4 Gen1 (current width not reported)")


def test_a_link_whose_current_width_is_unread_names_that_field() -> None:
    """The real 8 x RTX 4090 `-q`, GPU 0's Link Width `Current : 16x` (at Gen4 of Gen4) edited
    in-test to `N/A`: unverified, naming the field not read, not the card's maximum (read)."""
    got = _edited_row(RTX4090_IDLE, "Current                   : 16x", "Current                   : N/A", 0)
    assert got == ("unverified", "GPU 0 Gen4 (current width not reported)")


# the real idle A10 `-q`'s GPU: its uuid and bus id, for the CSVs written beside it
A10_ID = "0, GPU-14705cc6-2e5b-ae28-e00a-0f87622e4299, 00000000:08:00.0"


def _a10_busy() -> str:
    """The real idle A10 `-q` edited to a GPU at work: PCIe Current and Device Current
    generation 1 -> 4, Performance State P8 -> P0, `Gpu : 0 %` -> `100 %`."""
    text = (REAL / A10_IDLE).read_text()
    edited = text.replace("Current                   : 1", "Current                   : 4")
    edited = edited.replace(
        "Performance State                     : P8", "Performance State                     : P0"
    )
    edited = edited.replace(
        "        Gpu                               : 0 %", "        Gpu                               : 100 %"
    )
    assert edited.count("Current                   : 4") == 2 and edited.count(": 100 %") == 1
    return edited


def _with_csv(outputs: dict[str, str], header: str, row: str) -> tuple[str, str]:
    """pcie_link's (verdict, actual) of `outputs` (probe -> text) beside a CSV query of the A10's
    GPU (`index, uuid, pci.bus_id, ` + header; A10_ID + row)."""
    csv = f"index, uuid, pci.bus_id, {header}\n{A10_ID}, {row}\n"
    probes = {k: ProbeOutput(v, "", 0) for k, v in outputs.items()}
    probes["nvidia_smi_csv"] = ProbeOutput(csv, "", 0)
    (check,) = [c for c in gpu_health.evaluate(parse_facts(probes)) if c.name == "pcie_link"]
    return check.verdict, check.actual


LINK_ONLY = "pcie.link.gen.current, pcie.link.gen.max, pcie.link.width.current, pcie.link.width.max"


@pytest.mark.parametrize(
    ("header", "row", "actual"),
    [
        (LINK_ONLY, "1, 4, 16, 16", "GPU 0 Gen1 of Gen4 (in the CSV query)"),
        (LINK_ONLY, "1, 4, 8, 16", "GPU 0 x8 of x16, Gen1 of Gen4 (in the CSV query)"),
        ("pcie.link.gen.current", "1", "GPU 0 Gen1 of Gen4 (in the CSV query)"),
    ],
    ids=["gen1-x16", "gen1-x8", "gen-current-only"],
)
def test_a_csv_link_read_with_no_load_beside_a_busy_q_is_unverified(
    header: str, row: str, actual: str
) -> None:
    """The real A10 `-q` edited to Gen4, P0, 100 % (_a10_busy) beside a CSV of the same GPU that
    reads only its link (Gen1): that reading has no load of its own, and -q's P0, 100 % went with
    -q's Gen4, so whether the GPU was idle at the CSV's moment is unknown (it failed as a slot
    fault from -q's load)."""
    verdict, shown = _with_csv({"nvidia_smi_q": _a10_busy()}, header, row)
    assert (verdict, shown) == ("unverified", actual + " (whether the GPU was idle is not reported)")


def test_a_tables_load_is_no_load_of_a_csv_link() -> None:
    """The real A10 table (`nvidia-smi`, no link) edited to P0, 100 % (its `P8` -> `P0`, `0%
    Default` -> `100%  Default`) beside a CSV reading only the link, Gen1 x16 of Gen4 x16: the
    table's load is another call's, so the link's load is unknown (it failed)."""
    table = (REAL / "nvidia-smi__a10__1gpu__driver550.90.12.txt").read_text()
    busy = table.replace(" P8 ", " P0 ").replace("     0%      Default", "   100%      Default")
    assert busy != table and "100%" in busy
    verdict, shown = _with_csv({"nvidia_smi": busy}, LINK_ONLY, "1, 4, 16, 16")
    assert (verdict, shown) == ("unverified", "GPU 0 Gen1 of Gen4 (whether the GPU was idle is not reported)")


@pytest.mark.parametrize(
    ("header", "row"),
    [
        ("pstate, pcie.link.gen.current, utilization.gpu [%]", "P8, 1, 0 %"),
        ("pstate, pcie.link.gen.current, pcie.link.gen.max, utilization.gpu [%]", "P8, 1, 4, 0 %"),
        (f"utilization.gpu [%], {LINK_ONLY}", "0 %, 1, 4, 16, 16"),
        (LINK_ONLY, "1, 4, 16, 16"),
    ],
    ids=["p8-gen1-no-width", "p8-gen1-max-no-width", "util0-no-pstate", "no-load"],
)
def test_an_idle_csv_gen1_beside_the_idle_q_is_power_saving(header: str, row: str) -> None:
    """The real idle A10 `-q` (Gen1 x16 of Gen4 x16, P8, 0 %) beside a CSV of the same GPU at
    Gen1 that leaves out the width, the P-state or the whole load: a field the CSV did not read
    is no worse link; -q read that same Gen1 link idle, so it is power saving (it warned)."""
    verdict, shown = _with_csv({"nvidia_smi_q": (REAL / A10_IDLE).read_text()}, header, row)
    assert (verdict, shown) == ("pass", "at max width; idle, power saving: GPU 0 Gen1 of Gen4")


def test_an_idle_gen1_csv_with_no_width_alone_is_unverified() -> None:
    """A CSV of the real A10's GPU, `pstate, pcie.link.gen.current, pcie.link.gen.max,
    utilization.gpu` = `P8, 1, 4, 0 %` with no other output: Gen1 at P8 is power saving, the
    width unread, so unverified naming it (it warned "GPU 0 Gen1 of Gen4")."""
    csv = (
        "index, uuid, pci.bus_id, pstate, pcie.link.gen.current, pcie.link.gen.max, utilization.gpu [%]\n"
        f"{A10_ID}, P8, 1, 4, 0 %\n"
    )
    facts = parse_facts({"nvidia_smi_csv": ProbeOutput(csv, "", 0)})
    (check,) = [c for c in gpu_health.evaluate(facts) if c.name == "pcie_link"]
    assert (check.verdict, check.actual) == (
        "unverified",
        "GPU 0 Gen1 (current width and max width not reported)",
    )
