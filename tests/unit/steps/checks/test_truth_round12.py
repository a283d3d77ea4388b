"""GPU rules on real captures of truth sweep round 12 (tests/fixtures/real/SOURCES.md, round
12), each a verdict that was wrong: a name nvidia-smi's table cut inside its model number
('GeForce RTX 207...') may be an RTX 2070 SUPER or Max-Q (warn, it passed) and is never an RTX
2080 (fail, it warned); the `TCC/WDDM` column of older Windows tables is the driver model, not
persistence mode (it passed as "Enabled"); a MIG cell `Disabled*` is a pending change; a card
with ECC whose mode no output gave has unknown error counts; an old XML's compute processes."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.steps.checks.model_match import match_model

from ...offline_judge import verdicts

REAL = Path(__file__).parents[3] / "fixtures" / "real"
RTX2070 = "nvidia-smi__geforce-rtx-2070-laptop__1gpu__driver440.100__name-cut.txt"
WIN442 = "nvidia-smi__geforce-rtx-2060__1gpu__driver442.50__windows-tcc-wddm.txt"
WIN531 = "nvidia-smi__geforce-rtx-3050-4gb-laptop__1gpu__driver531.88__windows-tcc-wddm.txt"


def judged(tmp_path: Path, name: str, model: str) -> dict[str, tuple[str, str]]:
    return verdicts(tmp_path, name, (REAL / name).read_text(), f"gpu_model: {model}")


@pytest.mark.parametrize(
    ("name", "model", "verdict"),
    [
        (RTX2070, "RTX 2070", "warn"),  # 'GeForce RTX 2070 SUPER' prints 'GeForce RTX 207...' too
        (RTX2070, "RTX 2080", "fail"),  # '207...' cannot be 2080
        (WIN531, "RTX 3050", "warn"),  # 'RTX 3050 4...' of 'RTX 3050 4GB Laptop GPU'
        (WIN531, "RTX 3060", "fail"),
        (WIN442, "RTX 2060", "warn"),
    ],
)
def test_a_name_cut_inside_its_number(tmp_path: Path, name: str, model: str, verdict: str) -> None:
    assert judged(tmp_path, name, model)["gpu_model"][0] == verdict


def test_the_fail_names_the_cut_number() -> None:
    assert (
        match_model("RTX 2080", "GeForce RTX 207...").why == "'RTX 2080' not in the name (it says RTX 207...)"
    )
    # a data-centre name's cut number (after its form word) hides no product word
    assert match_model("A100", "NVIDIA A100-SXM4-40...").verdict == "pass"
    assert match_model("V100", "Tesla V100-SXM2-3...").verdict == "pass"


@pytest.mark.parametrize("name", [WIN442, WIN531])
def test_the_tcc_wddm_cell_is_no_persistence_mode(tmp_path: Path, name: str) -> None:
    """The table's TCC/WDDM cell (`WDDM`) is the driver model, never a persistence mode: a GPU
    under a Windows driver model has none (round 29: N/A, passed as not applicable, where it was
    unverified "not reported")."""
    check = verdicts(tmp_path, name, (REAL / name).read_text())["persistence_mode"]
    assert check == ("pass", "N/A on GPU 0 (Windows WDDM driver model: no persistence mode)")


MIG_PENDING = "nvidia-smi__a100-sxm4-40gb__8gpu__driver450.102.04__mig-pending-gpu7__dgx-doc.txt"


def test_a_pending_mig_change_warns(tmp_path: Path) -> None:
    """GPU 7's MIG cell `Disabled*`: the star marks a change pending the next GPU reset, to
    MIG enabled (it passed as "Disabled": the star was ignored)."""
    check = verdicts(tmp_path, MIG_PENDING, (REAL / MIG_PENDING).read_text())["mig_mode"]
    assert check == ("warn", "Enabled pending a GPU reset on GPU 7")


def test_a_mig_mode_that_reads_as_neither_is_not_whole_gpus() -> None:
    from dataclasses import replace

    from gpuonboard.facts.nvidia_smi import parse_any
    from gpuonboard.steps.checks.gpu_health.modes import rule_mig

    gpus = parse_any((REAL / MIG_PENDING).read_text()).gpus
    odd = [replace(g, mig_mode="Pending", mig_mode_pending=None) if g.index == 7 else g for g in gpus]
    assert rule_mig(list(odd)).verdict == "unverified"


ECC_UNKNOWN = "nvidia-smi-q-x__rtx-pro-6000-blackwell__1gpu__driver580-trimmed__netdata.xml"


def test_no_ecc_count_and_no_ecc_mode_is_not_ecc_off(tmp_path: Path) -> None:
    """A workstation card with ECC whose output gives no ECC mode: ecc_mode is unverified, and
    so are its error counts (they passed as "not applicable (ECC off or unsupported)")."""
    rules = verdicts(tmp_path, ECC_UNKNOWN, (REAL / ECC_UNKNOWN).read_text())
    assert rules["ecc_mode"] == ("unverified", "not reported for GPU 0")
    assert rules["ecc_uncorrectable"] == ("unverified", "not reported")


DTD6 = "nvidia-smi-q-x__tesla-k20m__1gpu__driver340.24__dtd-v6__icsw.xml"


def test_an_old_xml_lists_its_compute_processes(tmp_path: Path) -> None:
    """DTD v6 (driver 340) names the list <compute_processes>: its 8 ANSYS processes were never
    read, and foreign_processes passed ("none")."""
    verdict, actual = verdicts(tmp_path, DTD6, (REAL / DTD6).read_text())["foreign_processes"]
    assert verdict == "fail"
    assert actual.startswith("GPU 0: pid 5495 /.opt/ansys_inc/v150/ansys/bin/linx64/ansys.e150 (98 MiB); ")
    assert actual.count("pid ") == 8


PUBLIC = REAL.parent / "public"
RETIRED_CLEAN = "nvidia-smi-q-d-page-retirement__8gpu__azurehpc-orig.txt"
RETIRED_BAD = "nvidia-smi-q-d-page-retirement__8gpu__azurehpc-bad-injected.txt"


def test_retired_pages_are_counted(tmp_path: Path) -> None:
    """The count of retired pages was never judged, only whether a retirement was pending:
    GPU 0 with 65 retired pages (5 after double-bit errors) and nothing pending passed. DCGM's
    health watch fails a GPU at 63 retired pages (DCGM_LIMIT_MAX_RETIRED_PAGES)."""
    clean = verdicts(tmp_path, RETIRED_CLEAN, (PUBLIC / RETIRED_CLEAN).read_text())["memory_repair"]
    assert clean == ("pass", "nothing pending")
    verdict, actual = verdicts(tmp_path, RETIRED_BAD, (PUBLIC / RETIRED_BAD).read_text())["memory_repair"]
    assert verdict == "fail"
    assert actual.startswith("GPU 0: 65 pages retired (60 single-bit, 5 double-bit); ")
    assert "GPU 1: 63 pages retired (2 single-bit, 61 double-bit)" in actual


def test_pages_retired_after_double_bit_errors_warn() -> None:
    from dataclasses import replace

    from gpuonboard.facts.nvidia_smi import parse_any
    from gpuonboard.steps.checks.gpu_health.memory import rule_memory_repair

    gpus = parse_any((PUBLIC / RETIRED_CLEAN).read_text()).gpus
    one = [replace(g, retired_pages_dbe=2) if g.index == 4 else g for g in gpus]
    check = rule_memory_repair(list(one))
    assert (check.verdict, check.actual) == ("warn", "GPU 4: 2 page(s) retired after double-bit errors")


REMAP = "nvidia-smi-q-d-ecc-row-remapper-i__1of8gpu__driver550.90.07__remap-pending-annotated.txt"
REMAP_COMMAND = "# nvidia-smi -q -d ECC,ROW_REMAPPER -i 52:00.0\n"


def test_an_annotated_pending_remap_still_fails(tmp_path: Path) -> None:
    """`Pending : Yes   <===` (the runbook author's marker): the pending remap was dropped and a
    weaker warning stood for the fault."""
    rules = verdicts(tmp_path, REMAP, (REAL / REMAP).read_text())
    assert rules["memory_repair"] == (
        "fail",
        # (the GPU at 52:00.0 of 8, named by its address: `-i` shows GPU records numbered by place)
        "GPU at PCI 00000000:52:00.0: row remap pending; GPU at PCI 00000000:52:00.0: 1 row(s) remapped"
        " after uncorrectable errors (of what was read; incomplete probe: nvidia-smi says 8 attached but"
        " lists 1)",
    )
    # an ECC mode nvidia-smi failed to read is said so, not "not reported"
    assert rules["ecc_mode"] == (
        "unverified",
        # (an unverified row of an output cut short names the cut too)
        "unreadable on GPU at PCI 00000000:52:00.0 (ECC reads Unknown Error) (of what was read;"
        " incomplete probe: nvidia-smi says 8 attached but lists 1)",
    )


def test_a_view_of_one_gpu_says_so(tmp_path: Path) -> None:
    """`-q ... -i 52:00.0` prints `Attached GPUs : 8` and one GPU: the count names the command
    that narrowed it, beside nvidia-smi's own count."""
    text = REMAP_COMMAND + (REAL / REMAP).read_text()
    verdict, actual = verdicts(tmp_path, "nvidia-smi-q.txt", text, "gpu_count: 8")["gpu_count"]
    assert verdict == "unverified"
    assert actual == (
        "1 listed; incomplete probe: nvidia-smi says 8 attached but lists 1"
        " (`nvidia-smi -q -d ECC,ROW_REMAPPER -i 52:00.0` shows only the GPUs it asked for)"
    )


NO_BANNER = "nvidia-smi-q-elided__a100-sxm4-80gb__1of8gpu__driver510.73.08__remap-pending__no-banner.txt"


def test_a_q_without_its_banner_is_read_and_its_elision_said(tmp_path: Path) -> None:
    """A guide's `-q` quoted without `==NVSMI LOG==` was refused ("not a recognised command
    output") and its pending remap lost; its `[...]` lines were taken for sections (a paste
    that "lost its indentation")."""
    rules = verdicts(tmp_path, NO_BANNER, (REAL / NO_BANNER).read_text())
    assert rules["memory_repair"] == (
        "fail",
        "GPU 0: row remap pending (of what was read; incomplete probe: nvidia-smi says 8 attached but"
        " lists 1 (the nvidia-smi -q text has lines left out by hand, marked `...`))",
    )
    assert rules["nvidia_driver"] == (
        "unverified",
        "driver 510.73.08, CUDA 11.6; incomplete probe: nvidia-smi says 8 attached but lists 1 (the"
        " nvidia-smi -q text has lines left out by hand, marked `...`)",
    )


def test_gpu_blocks_without_any_header_are_read_as_a_fragment_never_the_box(tmp_path: Path) -> None:
    """The GPU blocks alone (no driver, no `Attached GPUs`) were refused; since round 36 they are
    read as a `-q` fragment (sniff.Q_EXCERPT): the GPU shown named, the driver and the count
    unverified, the fault it shows still failed."""
    from gpuonboard.facts.nvidia_smi import parse_any
    from gpuonboard.facts.nvidia_smi.sniff import Q_EXCERPT

    blocks = (REAL / NO_BANNER).read_text().split("Attached GPUs", 1)[1].split("\n", 1)[1]
    report = parse_any(blocks)
    assert not report.complete and report.attached_gpus is None and Q_EXCERPT in report.warnings
    got = verdicts(tmp_path, "nvidia-smi-q.txt", blocks, "gpu_model: A100-SXM4-80GB\ngpu_count: 8\n")
    gap = "incomplete probe: the nvidia-smi -q text has lines left out by hand, marked `...`"
    assert got["nvidia_driver"] == ("unverified", f"driver unknown, CUDA unknown; {gap}")
    assert got["gpu_count"] == ("unverified", f"1 listed; {gap}")
    assert got["gpu_model"] == ("unverified", f"1 x NVIDIA A100-SXM4-80GB; {gap}")
    assert got["memory_repair"] == ("fail", f"GPU 0: row remap pending (of what was read; {gap})")


def test_one_gpu_whose_nvlink_commands_print_nothing_needs_no_nvlink() -> None:
    """Our own live run on a rented 1 x H200 VM (2026-12-04): `nvidia-smi nvlink -s` and `-e`
    printed nothing (the VM has no peer GPU), and the verdict was "GO with 2 unverified:
    nvlink_links, nvlink_errors". One GPU has no NVLink peer in the box: not applicable."""
    from gpuonboard.connection.gather import parse_facts
    from gpuonboard.facts.probe import ProbeOutput
    from gpuonboard.steps.checks.fabric_health import health_checks

    xml = (REAL / "nvidia-smi-q-x__h200__1gpu__driver580.159.04.xml").read_text()
    raw = {
        "nvidia_smi": ProbeOutput(xml, "", 0),
        "nvidia_nvlink": ProbeOutput("", "", 0),
        "nvidia_nvlink_errors": ProbeOutput("", "", 0),
    }
    checks = {c.name: c for c in health_checks(parse_facts(raw))}
    for name, command in (("nvlink_links", "nvlink -s"), ("nvlink_errors", "nvlink -e")):
        assert (checks[name].verdict, checks[name].actual) == (
            "pass",
            f"not applicable: one GPU in the box, no NVLink peer (`nvidia-smi {command}` printed nothing)",
        )
    # a call that failed says nothing of the links: 15 (a GPU fallen off the bus), 9 (no driver),
    # 14 (the infoROM warning) with no answer beside it
    for code, stderr in (
        (15, "Unable to determine the device handle for GPU0000:00:05.0: Unknown Error\n"),
        (9, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"),
        (14, "WARNING: infoROM is corrupted at gpu 0000:00:05.0\n"),
    ):
        failed = {
            **raw,
            "nvidia_nvlink": ProbeOutput("", stderr, code),
            "nvidia_nvlink_errors": ProbeOutput("", stderr, code),
        }
        checks = {c.name: c for c in health_checks(parse_facts(failed))}
        for name, command in (("nvlink_links", "nvlink -s"), ("nvlink_errors", "nvlink -e")):
            assert (checks[name].verdict, checks[name].actual) == (
                "unverified",
                f"`nvidia-smi {command}` failed",
            )
            assert f"exit {code}" in checks[name].detail or f"exited {code}" in checks[name].detail, checks[
                name
            ]
    # a view of one GPU of eight (`-i 0`) is no one-GPU box: still unverified
    eight = xml.replace("<attached_gpus>1</attached_gpus>", "<attached_gpus>8</attached_gpus>")
    raw["nvidia_smi"] = ProbeOutput(eight, "", 0)
    assert {c.name: c for c in health_checks(parse_facts(raw))}["nvlink_links"].verdict == "unverified"
