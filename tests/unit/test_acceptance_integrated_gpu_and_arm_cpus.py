"""Acceptance and health verdicts on real captures of a Jetson AGX Orin: an integrated GPU whose
nvidia-smi table has no PCI address, and an ARM CPU whose lscpu counts cores per cluster
("Socket(s): -"). Both were judged wrong: the driver failed ("nvidia-smi failed (Mon Apr 14
...)") on a GPU nvidia-smi listed, and 12 single-thread cores read as "only hyperthreads"."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.inventory import OrderSpec
from gpuonboard.steps.checks import gpu_health
from gpuonboard.steps.checks.acceptance import evaluate

REAL = Path(__file__).parents[1] / "fixtures" / "real"
ORIN_SMI = "nvidia-smi__jetson-agx-orin__1gpu__driver540.4.0.txt"
ORIN_LSCPU = "lscpu__jetson-agx-orin-cortex-a78ae__aarch64-clusters.txt"


def _facts(**outputs: str) -> object:
    return parse_facts({name: ProbeOutput(text, "", 0) for name, text in outputs.items()})


def _verdicts(order: OrderSpec, facts: object) -> dict[str, tuple[str, str, str]]:
    return {c.name: (c.verdict, c.actual, c.detail) for c in evaluate(order, facts)}  # type: ignore[arg-type]


def test_integrated_gpu_is_listed_and_its_cores_counted() -> None:
    facts = _facts(nvidia_smi=(REAL / ORIN_SMI).read_text(), lscpu=(REAL / ORIN_LSCPU).read_text())
    checks = _verdicts(OrderSpec(gpu_model="Orin", gpu_count=1, cpu_cores=12), facts)
    assert checks["nvidia_driver"] == ("pass", "driver 540.4.0, CUDA 12.6", "")
    assert checks["gpu_count"][:2] == ("pass", "1")
    assert checks["gpu_model"][0] == "pass"
    assert checks["cpu_cores"] == ("pass", "12 cores / 12 threads (Cortex-A78AE)", "")
    # more cores than the board has still fails, with the count it has
    assert _verdicts(OrderSpec(cpu_cores=16), facts)["cpu_cores"][:2] == (
        "fail",
        "12 cores / 12 threads (Cortex-A78AE)",
    )


def test_health_says_not_reported_where_the_board_prints_na() -> None:
    facts = _facts(nvidia_smi=(REAL / ORIN_SMI).read_text())
    checks = {c.name: c for c in gpu_health.evaluate(facts)}  # type: ignore[arg-type]
    # Persistence-M is N/A on Jetson: not "Enabled"
    assert (checks["persistence_mode"].verdict, checks["persistence_mode"].actual) == ("pass", "not reported")
    assert checks["foreign_processes"].actual == "none"


def test_an_answer_without_gpu_rows_is_not_called_a_failed_nvidia_smi() -> None:
    """nvidia-smi exited 0 but no GPU row could be read (the table cut after its header): the
    sentence says what happened, not 'nvidia-smi failed (<the timestamp line>)'."""
    head = "".join((REAL / ORIN_SMI).read_text().splitlines(keepends=True)[:8])
    checks = _verdicts(OrderSpec(gpu_count=1), _facts(nvidia_smi=head))
    _, actual, _ = checks["nvidia_driver"]
    # what happened, and that the table is cut (an incomplete probe), not "nvidia-smi failed (...)"
    assert actual == (
        "nvidia-smi answered but listed no GPU (no GPU rows found in nvidia-smi table; the nvidia-smi"
        " table output ends mid-table (mid-record): incomplete probe, rerun)"
    )
    # no GPU could be read: the count is unverified, never a hardware failure
    assert checks["gpu_count"][:2] == ("unverified", actual.join(("unknown: ", "")))


def test_a_table_cut_after_its_header_leaves_the_driver_rule_unverified() -> None:
    head = "".join((REAL / ORIN_SMI).read_text().splitlines(keepends=True)[:8])
    verdict, _, detail = _verdicts(OrderSpec(gpu_count=1), _facts(nvidia_smi=head))["nvidia_driver"]
    assert verdict == "unverified" and "rerun" in detail


def test_driver_compat_on_an_integrated_gpu() -> None:
    """Jetson runs only NGC's -igpu images, with the driver JetPack brings. The -igpu image
    failed as 'not for discrete GPUs such as Orin (nvgpu)' (advice: use the -py3 image), and
    23.10-py3 passed as 'runs natively' on the board's 540.4.0 driver, which it cannot."""
    from gpuonboard.steps.checks import driver_compat, ngc

    facts = _facts(nvidia_smi=(REAL / ORIN_SMI).read_text())
    releases = ngc.load_releases()

    def judge(image: str) -> tuple[str, str, str]:
        check = driver_compat.evaluate(facts, image, releases)[0]  # type: ignore[arg-type]
        return check.verdict, check.actual, check.detail

    verdict, actual, detail = judge("nvcr.io/nvidia/pytorch:24.08-py3-igpu")
    assert verdict == "warn"
    assert actual == "24.08-py3-igpu on integrated GPU (Orin (nvgpu)): not judged"
    assert "JetPack" in detail
    for release in ("23.10", "24.08"):
        verdict, actual, detail = judge(f"nvcr.io/nvidia/pytorch:{release}-py3")
        assert verdict == "fail"
        assert (
            actual
            == f"{release}-py3 is built for discrete GPUs; this host's GPU is integrated (Orin (nvgpu))"
        )
        assert detail.endswith(f"use nvcr.io/nvidia/pytorch:{release}-py3-igpu")
    # a discrete GPU keeps its verdicts: the -igpu image is refused there
    h200 = _facts(nvidia_smi=(REAL / "nvidia-smi__h200__1gpu__driver580.159.04.txt").read_text())
    check = driver_compat.evaluate(h200, "nvcr.io/nvidia/pytorch:24.08-py3-igpu", releases)[0]  # type: ignore[arg-type]
    assert check.verdict == "fail" and "not for discrete GPUs such as NVIDIA H200" in check.detail
