"""A vGPU host's README (measure35e 16): a `nvidia-smi -q` grep cut (grep's `--` between its
groups), then the host's `nvidia-smi vgpu` listing, then dmesg lines, with no prompt between them.
Before, the whole run was refused as "nvidia-smi vgpu's listing", and the -q alone said it "does
not give the virtualisation mode" though it shows `Virtualization Mode : Host VGPU`. Now the -q
(its `--` read as lines grep left out) and the log are read, and the listing is said in a note."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.api import offline
from gpuonboard.connection.gather import parse_facts
from gpuonboard.facts.nvidia_smi import parse_any

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
README = (
    "readme-excerpt__vgpu-host-q-grep-vgpu-listing-dmesg__geforce-rtx-4088__driver525.147.01__akb486-vgpu.txt"
)
ORDER = "gpu_model: RTX 4080\ngpu_count: 1\n"


def test_the_readme_is_judged_and_its_vgpu_listing_noted(tmp_path: Path) -> None:
    (tmp_path / "README.txt").write_text((REAL / README).read_text())
    notes: list[str] = []
    facts = parse_facts(offline.load_outputs([str(tmp_path / "README.txt")], notes=notes))
    assert facts.gpu is not None and [g.name for g in facts.gpu.gpus] == ["NVIDIA GeForce RTX 4088"]
    assert facts.gpu.driver_version == "525.147.01"
    assert any(
        "from its line 34, `nvidia-smi vgpu`'s listing" in note and "not read" in note for note in notes
    )


def test_the_qs_virtualisation_mode_is_read_below_greps_separator(tmp_path: Path) -> None:
    got = verdicts(tmp_path, "README.txt", (REAL / README).read_text(), ORDER)
    assert got["virtualization"][1].startswith("Host VGPU")
    assert got["gpu_model"][0] == "fail"  # (RTX 4088 is no RTX 4080)
    # (the dmesg lines read: 5 of the driver's, no load banner, an excerpt: no Xid among them says
    # nothing of the lines left out, round 35's review)
    assert got["gpu_xid"][0] == "unverified" and "an excerpt picked from the log" in got["gpu_xid"][1]
    # (grep left lines of the record out, as a cut does; `Attached GPUs : 1`, its one record read)
    assert got["gpu_count"] == ("pass", "1")


def test_greps_separator_in_a_q_is_lines_left_out() -> None:
    text = (REAL / README).read_text().split("\n")
    q = "\n".join(text[1:32]) + "\n"
    report = parse_any(q)
    assert report.gpus[0].virtualization_mode == "Host VGPU"
    assert not report.complete and any("left out by grep" in w for w in report.warnings)


SIMULATOR = "session__vgpu-simulator-fake-vgpu-smi-banner-table__8xh200-elided__vgpu-shell-readme.txt"


def test_a_simulators_table_under_its_own_banner_is_refused_naming_that_banner(tmp_path: Path) -> None:
    """measure35e 28: a simulator's `nvidia-smi` prints `| VGPU-SMI 0.1.0  Driver Version: ...`:
    refused (right), but said to be "GPU rows without its banner and header"; now the other
    program's banner is named."""
    import pytest

    from gpuonboard.errors import UsageError

    with pytest.raises(UsageError) as refused:
        verdicts(tmp_path, "session.txt", (REAL / SIMULATOR).read_text(), ORDER)
    said = str(refused.value)
    assert "banner `VGPU-SMI 0.1.0`, another program's" in said
    assert "without its banner" not in said
