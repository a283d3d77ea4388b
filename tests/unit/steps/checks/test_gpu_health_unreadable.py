"""A GPU nvidia-smi lists but cannot read (`ERR!`, `[GPU requires reset]`) fails `gpu_health`.

Before, its `ERR!` cells became None (or, for ECC and MIG mode, the mode "ERR!", counted as
enabled ECC), every rule skipped it, and a box with a dead GPU got GO from the health step.
The capture is real: an 8 x A40 box whose GPU 4 reads ERR! after a GSP timeout (Xid 119).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.nvidia_smi import parse_any
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.steps.checks import gpu_health

FIXTURES = Path(__file__).parents[3] / "fixtures"
A40_ERR = FIXTURES / "public" / "nvidia-smi__a40__8gpu__driver525.60.13__gpu4-err.txt"
H100_CSV = FIXTURES / "real" / "nvidia-smi-query-gpu__h100-80gb-hbm3__1gpu__driver590.48.01__idle.csv"


def _plan(text: str) -> object:
    facts = parse_facts({"nvidia_smi": ProbeOutput(text, "", 0)})
    ctx = SimpleNamespace(host=SimpleNamespace(vars={}), facts=facts)
    return gpu_health.GpuHealthStep({}).plan(ctx)  # type: ignore[arg-type]


def test_err_gpu_in_the_table_fails_gpu_health_naming_it() -> None:
    plan = _plan(A40_ERR.read_text())
    assert plan.failed  # type: ignore[attr-defined]
    checks = {c.name: c for c in plan.checks}  # type: ignore[attr-defined]
    check = checks["gpu_health"]
    assert check.verdict == "fail"
    assert check.actual == "GPU 4 (00000000:83:00.0): nvidia-smi reads ERR!"
    assert "Xid" in check.detail and "nvidia-smi -i N -r`, N in 4)" in check.detail
    assert "gpu_health" in plan.msg  # type: ignore[attr-defined]


def test_err_cells_are_no_values() -> None:
    gpus = parse_any(A40_ERR.read_text()).gpus
    assert len(gpus) == 8
    bad = gpus[4]
    assert bad.faults == ("ERR!",)
    # "ERR!" is not an ECC or MIG mode, nor a temperature or a power reading
    assert (bad.ecc_mode, bad.mig_mode, bad.temperature_c, bad.power_limit_w) == (None, None, None, None)
    assert [g.index for g in gpus if g.faults] == [4]
    assert all(g.ecc_mode == "Enabled" for g in gpus if not g.faults)


def test_gpu_requires_reset_in_the_query_csv_fails() -> None:
    """The real H100 --query-gpu capture with its values as nvidia-smi prints them for a GPU that
    needs a reset (`[GPU requires reset]`); one minimal edit made here, on the data row only."""
    header, row = H100_CSV.read_text().splitlines()[:2]
    cells = row.split(", ")
    keep = {"name", "pci.bus_id", "count", "driver_version", "index"}
    names = [h.split(" [")[0] for h in header.split(", ")]
    edited = [c if n in keep else "[GPU requires reset]" for n, c in zip(names, cells, strict=True)]
    plan = _plan(header + "\n" + ", ".join(edited) + "\n")
    check = next(c for c in plan.checks if c.name == "gpu_health")  # type: ignore[attr-defined]
    assert (check.verdict, check.actual) == (
        "fail",
        "GPU 0 (00000000:00:09.0): nvidia-smi reads GPU requires reset",
    )


LOST_GPU_CAPTURES = {
    "nvidia-smi__rtx-pro-6000-blackwell__4gpu-1-lost__driver610.57.04.txt",
    # a GPU reading ERR! / [GPU requires reset]: tests/unit/facts/test_audit_captures_r5.py
    "nvidia-smi__a40__8gpu__driver525.60.13__gpu4-err.txt",
    "nvidia-smi__a30__8gpu__driver525.85.12__gpu3-err__no-processes.txt",
    "nvidia-smi-query-gpu__h100__1gpu__gpu-requires-reset.csv",
    # a GPU listed at another GPU's PCI address, ERR!: tests/unit/facts/test_audit_captures_r7.py
    "nvidia-smi__tesla-t4__2gpu-one-bus-id__driver545.23.08__gpu1-err.txt",
    # Windows' "Unable to detect the device handle" (a lost GPU): tests/unit/facts/test_nvidia_smi_failure.py
    # round 37: Linux's "Unable to determine the device handle" alone (a lost GPU, no listing): its box
    # with the lspci and dmesg of it, tests/integration/test_live_offline_same_box.py
    "nvidia-smi__unable-device-handle-gpu3-unknown-error__8x-rtx-a4000__ru-blog.txt",
    "nvidia-smi__unable-device-handle-gpu08-unknown-error__dgx-station-4x-v100__driver525.txt",
    "nvidia-smi__windows-unable-to-detect-device-handle-unknown-error__a10-gpu-pv__easy-gpu-pv-276.txt",
    # a table cut inside its header below a CUDA image's banner (no GPU row):
    # tests/unit/facts/test_container_banner.py
    "nvidia-smi__docker-run-cuda-11.4-deprecated-image-banner__table-cut-in-header__nct-69.txt",
}


@pytest.mark.parametrize(
    "path",
    sorted(
        p
        for p in (FIXTURES / "real").glob("nvidia-smi*")
        # other commands' outputs (topo -m, nvlink -s, -L) and the benchmark's sampler log
        if not p.name.startswith(
            (
                "nvidia-smi-topo",
                "nvidia-smi-nvlink-",
                "nvidia-smi-L__",
                "nvidia-smi-query-gpu-sampler",
                "nvidia-smi-mig-",
                "nvidia-smi-usage-error",  # (nvidia-smi's refusal of a command line: no listing)
                "nvidia-smi-vgpu__",  # (a vGPU host's `nvidia-smi vgpu`, refused: no GPU table)
                "nvidia-smi-dmon-",  # (`dmon` / `pmon` samples, refused: no GPU table)
                "nvidia-smi-pmon-",
            )
        )
        # (a box with a GPU nvidia-smi cannot open: test_audit_captures_r3.py, R3-F2)
        and p.name not in LOST_GPU_CAPTURES
        # (a launcher's line prefix before each line: read through the paste's clean-up only,
        # tests/unit/api/test_paste_transforms.py)
        and "line-prefix" not in p.name
        # (one-column CSVs of a field no rule reads and a banner cut after its first line: no
        # listing, api/test_offline_unjudged.py)
        and "ollama-9031" not in p.name
        and "nvsmi-2" not in p.name
        # (a -q -x a mail reply escaped, read through the paste's clean-up: api/test_paste_transforms.py;
        # a node's banner alone, no GPU row: api/test_offline_narrowed_kube_clis.py)
        and "1panel-11910" not in p.name
        # (a -q -x pasted after a stray Markdown backtick, read through the paste's clean-up:
        # api/test_paste_backticks.py)
        and "stray-leading-backtick" not in p.name
        # (a -q -x pasted in a `<details>` section, read through the paste's clean-up:
        # api/test_paste_xml_lead.py)
        and "details-blank-line-fence" not in p.name
        and "banner-only-eks-node" not in p.name
        # (nvidia-smi's failure alone, no listing: facts/test_gpu_failed.py)
        and not p.name.startswith("nvidia-smi__failed-")
        # (a banner a page ran onto one line: its banner read, no GPU row,
        # steps/checks/test_gpu_rules_cut.py ONE_LINE; a whole table so is read:
        # facts/test_nvidia_smi_table_joined_r35.py)
        and ("on-one-line" not in p.name or "table-on-one-line" in p.name)
        # (a CSV below a report's heading line: read through the saved text's clean-up,
        # api/test_offline_heading_above_r35.py)
        and "heading-line-above-header" not in p.name
        # (a table every line of which a `#` comments out: read through the saved text's
        # clean-up, api/test_offline_commented_r35.py)
        and "hash-commented" not in p.name
        # (CSV rows among a miner's own lines, and a CI log's stamped klog tail whose table is cut
        # after its banner: read through the paste's clean-up only, api/test_offline_csv_among.py)
        and "noheader-among-miner-lines" not in p.name
        and "gha-stamped-klog" not in p.name
        # (a banner cut below it under a stress tool's lines, no GPU row:
        # steps/checks/test_driver_line_shape.py GST)
        and "cut-below-banner" not in p.name
        # (several pods' `-L` listings of one GPU, refused: api/test_labelled_listings_r34.py; a
        # `nvidia-smi --version`, no listing: api/test_offline_round34_host.py)
        and "7-pods-kubectl-logs-loop" not in p.name
        and not p.name.startswith("nvidia-smi-version__")
        # (`nvidia-smi | grep Driver`'s banner line alone, no GPU row:
        # steps/checks/test_driver_grep_banner_r36.py)
        and not p.name.startswith("nvidia-smi-grep-driver__")
        # (`nvidia-smi --gpu-reset`'s refusal, no listing: api/test_sessions_r36.py)
        and not p.name.startswith("nvidia-smi-gpu-reset__")
        # (`nvidia-smi | head -8` without its borders: the banner and the header, no GPU row,
        # steps/checks/test_min_driver_banner_no_border_r37.py; round 37)
        and "head-8-banner-only-no-borders" not in p.name
        # (a table cut inside GPU 0's first row, after its name: no GPU row read,
        # api/test_smi_tables_csvs_r39.py; round 39)
        and "cut-after-gpu0-name-no-persistence-cell" not in p.name
        # (a --query-gpu CSV among a README's or notes' prose: read through the saved text's
        # clean-up only, api/test_offline_csv_prose_r37.py; round 37)
        and "prose" not in p.name
        # (two CSV outputs of one query, the second's command line headless: refused naming both,
        # api/test_lost_head_query_r40.py; round 40)
        and "second-command-head-lost" not in p.name
    )
    # (the derived utilisation streams the simulator's monitor and autostop watcher replay are
    # no listing)
    + sorted(
        p
        for p in (FIXTURES / "derived").glob("nvidia-smi-q*")
        if "-monitor__" not in p.name and "-utilization__" not in p.name
    ),
    ids=lambda p: p.name,
)
def test_healthy_captures_have_no_unreadable_gpu(path: Path) -> None:
    report = parse_any(path.read_text())
    assert report.gpus and not any(g.faults for g in report.gpus)
    facts = parse_facts({"nvidia_smi": ProbeOutput(path.read_text(), "", 0)})
    assert "gpu_health" not in {c.name for c in gpu_health.evaluate(facts)}
