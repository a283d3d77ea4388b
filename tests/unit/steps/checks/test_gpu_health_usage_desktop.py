"""foreign_processes and a desktop's own processes typed `C+G`: a compositor that also makes a
compute context (KDE's kwin_wayland) and every process under Windows' WDDM (dwm.exe,
explorer.exe, the shell's hosts) is typed `C+G`; such a process is the box's display (a warn,
as a `G` process), never "another job"; any other `C+G` process stays a job (a fail).

Real captures (tests/fixtures/real, SOURCES.md), edited in memory only where a test says."""

from __future__ import annotations

from pathlib import Path

import pytest

from ...offline_judge import checks, judged_box

REAL = Path(__file__).parents[3] / "fixtures" / "real"
KDE_TABLE = "nvidia-smi__geforce-rtx-4080-super__1gpu__driver595.71.05__idle.txt"
KDE_Q = "nvidia-smi-q__geforce-rtx-4080-super__1gpu__driver595.71.05__nvenc-load.txt"
WIN591 = "nvidia-smi__geforce-rtx-2080-super__1gpu__driver591.86__windows-wddm-load.txt"
WIN610 = "nvidia-smi__geforce-rtx-2080-super__1gpu__driver610.62__windows-wddm.txt"
KDE_CSV = "nvidia-smi-query-gpu__geforce-rtx-4080-super__1gpu__driver595.71.05__idle.csv"
KDE_APPS = (
    Path(__file__).parents[3]
    / "fixtures"
    / "compute-apps"
    / "nvidia-smi-query-compute-apps__geforce-rtx-4080-super__1gpu__driver595.71.05__idle.csv"
)


def foreign(tmp_path: Path, text: str, name: str = "nvidia-smi.txt") -> tuple[str, str, str]:
    """(verdict, actual, detail) of foreign_processes for `text` judged offline."""
    row = next(c for c in checks(tmp_path, name, text) if c.name == "foreign_processes")
    return row.verdict, row.actual, row.detail


def without_rows(text: str, *names: str) -> str:
    """`text` without its process rows naming any of `names`."""
    return "\n".join(line for line in text.split("\n") if not any(n in line for n in names))


def test_kde_compositor_typed_c_plus_g_is_the_display_not_another_job(tmp_path: Path) -> None:
    """The real RTX 4080 SUPER table as captured: KDE Plasma on Wayland, kwin_wayland typed C+G
    beside plasmashell / Xwayland typed G, 0 % utilisation: a desktop session (warn), not a
    tenant's job (the old fail)."""
    verdict, actual, detail = foreign(tmp_path, (REAL / KDE_TABLE).read_text())
    assert verdict == "warn"
    assert "pid 2165 /usr/bin/kwin_wayland (25 MiB) (C+G: a desktop's own process)" in actual
    assert "a desktop session runs on the GPU you rent" in detail
    assert "another job is using" not in detail


def test_kde_compositor_in_q_beside_ffmpeg_still_fails_on_the_ffmpeg_jobs(tmp_path: Path) -> None:
    """The real RTX 4080 SUPER `-q` under NVENC load: kwin_wayland C+G is the display, the two
    ffmpeg processes typed C are jobs: a fail naming ffmpeg, kwin_wayland among the graphics."""
    verdict, actual, detail = foreign(tmp_path, (REAL / KDE_Q).read_text(), "nvidia-smi-q.txt")
    assert verdict == "fail"
    assert actual.startswith("GPU 0: pid 5021 ffmpeg (360 MiB); GPU 0: pid 5022 ffmpeg (503 MiB)")
    assert "kwin_wayland (25 MiB) (C+G: a desktop's own process)" in actual
    assert "another job is using" in detail


def test_kde_compositor_in_the_compute_apps_list_is_the_display(tmp_path: Path) -> None:
    """The real RTX 4080 SUPER `--query-gpu` CSV and `--query-compute-apps` CSV of the same idle
    moment, as captured: the compute-apps list (no type column) names kwin_wayland, which the
    table of that moment types C+G: the display (warn), not the old "another job" fail."""
    facts, rows = judged_box(
        tmp_path,
        {"query-gpu.csv": (REAL / KDE_CSV).read_text(), "compute-apps.csv": KDE_APPS.read_text()},
        "gpu_count: 1\n",
    )
    assert facts.gpu is not None
    [gpu] = facts.gpu.gpus  # (the CSV read as the capture says)
    assert (gpu.name, gpu.memory_total_mib, gpu.utilization_gpu_pct) == (
        "NVIDIA GeForce RTX 4080 SUPER",
        16376,
        0,
    )
    row = rows["foreign_processes"]
    assert row.verdict == "warn", row
    assert row.actual == (
        "GPU 0: pid 2165 /usr/bin/kwin_wayland (25 MiB) (in --query-compute-apps: a desktop's own process)"
    )


def test_windows_shell_alone_is_the_display(tmp_path: Path) -> None:
    """The real Windows 591.86 table (WDDM: every process C+G), edited: the two ffmpeg rows (C)
    and the third-party apps' rows (ControllerCompanion, NZXT CAM) removed, leaving dwm.exe,
    explorer.exe, NVIDIA Share.exe and Windows' shell hosts: a warn, not the old fail."""
    text = without_rows((REAL / WIN591).read_text(), "ffmpeg.exe", "ControllerCompanion", "NZXT CAM")
    verdict, actual, detail = foreign(tmp_path, text)
    assert verdict == "warn", actual
    assert "pid 2056 C:\\Windows\\System32\\dwm.exe (memory N/A) (C+G: a desktop's own process)" in actual
    assert "explorer.exe" in actual and "NVIDIA Share.exe" in actual
    assert "another job" in detail and "not another job" in detail


def test_windows_desktop_with_a_user_app_still_fails_on_the_app(tmp_path: Path) -> None:
    """The real Windows 610.62 table as captured: the shell (dwm.exe, explorer.exe,
    PhoneExperienceHost.exe ...) is the display, but msedge.exe, 1Password.exe and
    WindowsTerminal.exe are applications someone runs on the GPU: still a fail, naming them and
    not the shell's processes as jobs."""
    verdict, actual, _detail = foreign(tmp_path, (REAL / WIN610).read_text())
    assert verdict == "fail"
    jobs = actual.split("; ")
    assert any("msedge.exe (memory N/A)" in j and "desktop" not in j for j in jobs)
    assert any("dwm.exe" in j and j.endswith("(C+G: a desktop's own process)") for j in jobs)
    assert any("PhoneExperienceHost.exe" in j and j.endswith("a desktop's own process)") for j in jobs)


def test_an_unknown_c_plus_g_process_on_linux_stays_a_job(tmp_path: Path) -> None:
    """The real KDE table, edited: kwin_wayland's row renamed /usr/bin/python3 (C+G): a job."""
    text = (REAL / KDE_TABLE).read_text().replace("/usr/bin/kwin_wayland", "/usr/bin/python3     ")
    verdict, actual, detail = foreign(tmp_path, text)
    assert verdict == "fail"
    assert "pid 2165 /usr/bin/python3 (25 MiB)" in actual
    assert "another job is using" in detail


@pytest.mark.parametrize(
    ("name", "known"),
    [
        ("/usr/bin/kwin_wayland", True),
        ("C:\\Windows\\System32\\dwm.exe", True),
        ("...y\\StartMenuExperienceHost.exe", True),  # shortened before the last component
        ("...e Experience\\NVIDIA Share.exe", True),
        ("...xperienceHost.exe", False),  # shortened inside it: no name read
        ("/opt/evil/gnome-shell-miner", False),
        ("python3", False),
        ("", False),
    ],
)
def test_a_desktop_process_is_known_by_its_whole_last_component(name: str, known: bool) -> None:
    """Shapes of the names nvidia-smi prints in the real captures (paths, Windows' `...`
    shortening) and names that only look alike."""
    from gpuonboard.steps.checks.gpu_health.usage import is_desktop_process  # (new in this change)

    assert is_desktop_process(name) is known
