"""torch's collect_env on Windows prints Win32_Processor's fields under `CPU:` (`Name:`,
`Manufacturer:`, `Family: 198`, `Architecture: 9`, `ProcessorType:` ...), no lscpu and no core
count: cpu_cores stays unverified, its words naming those fields (and a block cut short), asking
for what a Windows box gives, never "the lscpu output" nor plain lscpu (measure39e 20)."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.api import collect_env

from ..offline_judge import checks

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"
WINDOWS = (
    REAL
    / (
        "collect_env__windows-11-cpu-build-no-cuda__win32-processor-cpu-fields-cut-at-ProcessorT__i7-1270p"
        "__pytorch-137846.txt"
    )
).read_text()
ORDER = "cpu_cores: 12\n"


def _cpu(tmp_path: Path, text: str) -> tuple[str, str, str]:
    got = {c.name: c for c in checks(tmp_path, "env.txt", text, ORDER)}["cpu_cores"]
    return got.verdict, got.actual, got.detail


def test_windows_cpu_fields_cut_are_named(tmp_path: Path) -> None:
    verdict, actual, detail = _cpu(tmp_path, WINDOWS)
    assert verdict == "unverified"
    assert "Windows CPU fields (Win32_Processor)" in actual and "lscpu output" not in actual, actual
    assert "cut short (its last line, `ProcessorT`" in detail and "Get-CimInstance Win32_Processor" in detail


def test_windows_cpu_fields_whole_are_named_not_cut(tmp_path: Path) -> None:
    """The block completed as torch prints it (ProcessorType, DeviceID, clocks, then a blank line)."""
    rest = "ype: 3\nDeviceID: CPU0\nCurrentClockSpeed: 2200\nMaxClockSpeed: 2200\n"
    whole = WINDOWS + rest + "\nVersions of relevant libraries:\n"
    found, _ = collect_env.parts(whole)
    cpu = next(p for p in found if p.kind == "lscpu")
    assert cpu.what == collect_env.WINDOWS_CPU and cpu.text.startswith("Name: 12th Gen"), cpu
    verdict, actual, detail = _cpu(tmp_path, whole)
    assert verdict == "unverified" and "Win32_Processor" in actual, actual
    assert "cut short" not in detail, detail


def test_linux_lscpu_block_is_still_lscpu() -> None:
    """A Linux report's `Architecture: x86_64` starts lscpu's block, as before."""
    linux = WINDOWS.replace("Architecture: 9", "Architecture: x86_64")
    found, _ = collect_env.parts(linux)
    cpu = next(p for p in found if p.kind == "lscpu")
    assert cpu.what == "lscpu" and cpu.text.startswith("Architecture: x86_64"), cpu
