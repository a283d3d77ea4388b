"""foreign_processes on a vGPU guest whose driver (before R510) counts the framebuffer the vGPU
reserves as used memory: an idle vGPU shows about 7 % of its profile used with no process and
0 % utilisation (2192 MiB of a GRID V100D-32Q, 1040 MiB of a P100-16Q). That memory is no
job's: never "another job is using the GPUs you rent", but not idle either, as a job in another
container of the VM would show the same: unverified. R510 and later report the reserve apart
(0 MiB used), and utilisation or a listed process still shows a job.

Real captures (tests/fixtures/real, SOURCES.md), edited in memory only where a test says."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.steps.checks.gpu_health.usage import reserve_counted_as_used

from ...offline_judge import checks

REAL = Path(__file__).parents[3] / "fixtures" / "real"
V100D_32Q = "nvidia-smi__grid-v100d-32q-vgpu__1gpu__driver440.56__idle-reserve-counted-used__falconcv.txt"
P100_16Q = "nvidia-smi__grid-p100-16q-vgpu__1gpu__driver384.73__idle-reserve-counted-used__ukcloud.txt"
A100_4C = "nvidia-smi__grid-a100-4c-vgpu__1gpu__driver510.47.03__guest.txt"


def foreign(tmp_path: Path, text: str) -> tuple[str, str, str]:
    """(verdict, actual, detail) of foreign_processes for the table `text` judged offline."""
    row = next(c for c in checks(tmp_path, "nvidia-smi.txt", text) if c.name == "foreign_processes")
    return row.verdict, row.actual, row.detail


def test_idle_v100d_32q_reserve_is_no_other_job(tmp_path: Path) -> None:
    """The real GRID V100D-32Q table (driver 440.56): 2192 MiB used at 0 %, "No running
    processes found": the vGPU's reserve, unverified (the old fail said another job)."""
    verdict, actual, detail = foreign(tmp_path, (REAL / V100D_32Q).read_text())
    assert verdict == "unverified"
    assert actual == "GPU 0 (GRID V100D-32Q) at 0 % utilisation with 2.1 GiB used, no process listed"
    assert "driver 440.56 (before R510) counts the framebuffer a vGPU reserves as used" in detail
    assert "another job is using" not in detail


def test_idle_p100_16q_reserve_is_no_other_job(tmp_path: Path) -> None:
    """The real UKCloud GRID P100-16Q table (driver 384.73, its own redrawn borders): 1040 MiB
    used at 0 %, no process: unverified, never a fail."""
    verdict, actual, _detail = foreign(tmp_path, (REAL / P100_16Q).read_text())
    assert verdict == "unverified"
    assert "GRID P100-16Q" in actual


def test_busy_vgpu_still_fails(tmp_path: Path) -> None:
    """The V100D-32Q table edited in memory to read 13 % utilisation (`0%` -> `13%` in its GPU
    row): a job works there that nvidia-smi does not list: the fail stands."""
    text = (REAL / V100D_32Q).read_text().replace("|      0%      Default |", "|     13%      Default |")
    verdict, actual, detail = foreign(tmp_path, text)
    assert verdict == "fail"
    assert "13 % utilisation" in actual
    assert "another job is using" in detail


def test_same_memory_under_r510_or_later_still_fails(tmp_path: Path) -> None:
    """The V100D-32Q table with its driver edited in memory to 510.47.03 (both banner versions):
    R510 reports the reserve apart, so 2192 MiB used at 0 % is some process's: the fail stands."""
    text = (REAL / V100D_32Q).read_text().replace("440.56   ", "510.47.03")
    verdict, _actual, detail = foreign(tmp_path, text)
    assert verdict == "fail"
    assert "another job is using" in detail


def test_r510_vgpu_idle_passes(tmp_path: Path) -> None:
    """The real GRID A100-4C guest table (driver 510.47.03, 0 MiB used): idle, a pass."""
    assert foreign(tmp_path, (REAL / A100_4C).read_text())[0] == "pass"


def test_reserve_counted_as_used_by_driver_version() -> None:
    """Before R510 only; an unread or unparsable version is not known to count it."""
    assert reserve_counted_as_used("440.56")
    assert reserve_counted_as_used("470.103.01")
    assert not reserve_counted_as_used("510.47.03")
    assert not reserve_counted_as_used("N/A")
    assert not reserve_counted_as_used(None)


V100_8C = "nvidia-smi__grid-v100-8c-vgpu__1gpu__driver470.63.01__half-v100-pcie-16gb__nrec.txt"


def test_half_v100_vgpu_for_a_whole_v100_order_says_vgpu(tmp_path: Path) -> None:
    """The real NREC GRID V100-8C table (half of a V100 PCIe 16GB) judged against an order for
    the whole card: gpu_model and vram fail, and vram's sentence names the vGPU profile's share
    of the framebuffer (it said "a smaller model of the card, or MIG slices"); its 592 MiB used
    at 0 % is under 1 GiB: foreign_processes passes."""
    found = {
        c.name: c
        for c in checks(
            tmp_path, "nvidia-smi.txt", (REAL / V100_8C).read_text(), "gpu_model: V100\nvram: 16GB\n"
        )
    }
    assert found["gpu_model"].verdict == "fail"
    assert found["vram"].verdict == "fail"
    assert (
        "a vGPU (GRID V100-8C) has only its profile's share of the board's framebuffer"
        in found["vram"].detail
    )
    assert "smaller model" not in found["vram"].detail
    assert found["foreign_processes"].verdict == "pass"


A100X_2_10C = (
    "nvidia-smi__grid-a100x-2-10c-mig-backed-vgpu__1gpu__driver550.54.16__idle-1058mib__vgpu-user-guide.txt"
)


def test_idle_mig_backed_vgpu_reserve_is_no_other_job(tmp_path: Path) -> None:
    """NVIDIA's vGPU guide's real GRID A100X-2-10C table (a MIG-backed vGPU, R550): 1058 MiB used,
    utilisation N/A (MIG), "No running processes found" in a freshly made guest: the vGPU's
    reserve, which a MIG-backed vGPU's driver counts as used in every release; unverified (the
    old fail said another job)."""
    verdict, actual, detail = foreign(tmp_path, (REAL / A100X_2_10C).read_text())
    assert verdict == "unverified"
    assert actual == "GPU 0 (GRID A100X-2-10C) at N/A (MIG) utilisation with 1.0 GiB used, no process listed"
    assert "a MIG-backed vGPU's driver (any release) counts the framebuffer a vGPU reserves as used" in detail


def test_vgpu_memory_far_above_the_reserve_still_fails(tmp_path: Path) -> None:
    """The V100D-32Q table edited in memory to `30192MiB / 32768MiB` (92 % of the profile) at its
    real 0 %: far more than any reserve (7-13 % of a profile) is someone's job: the fail stands
    (it read unverified, as the reserve)."""
    text = (REAL / V100D_32Q).read_text().replace("  2192MiB / 32768MiB", " 30192MiB / 32768MiB")
    verdict, actual, detail = foreign(tmp_path, text)
    assert verdict == "fail"
    assert "29.5 GiB used" in actual
    assert "another job is using" in detail


def test_mig_backed_vgpu_memory_far_above_the_reserve_still_fails(tmp_path: Path) -> None:
    """The A100X-2-10C table edited in memory to `9958MiB / 10235MiB` in both its GPU row and its
    MIG device row (utilisation N/A, as MIG reads): a job's memory, not the vGPU's reserve: fail."""
    text = (REAL / A100X_2_10C).read_text().replace("  1058MiB / 10235MiB", "  9958MiB / 10235MiB")
    verdict, _actual, detail = foreign(tmp_path, text)
    assert verdict == "fail"
    assert "another job is using" in detail
