"""A saved journal of other programs' lines only (`journalctl -u nvidia-persistenced`,
`journalctl -b -1 -p 3`) holds no kernel line: it is refused saying so and quoting the GPU
stack's failures it shows, not with the generic "not a recognised command output" (measure35d
22, 24). Real captures: tests/fixtures/real/SOURCES.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.api.journal_refusal import journal_without_kernel
from gpuonboard.errors import UsageError

REAL = Path(__file__).parents[2] / "fixtures" / "real"
CASES = [
    (
        "journalctl-u-nvidia-persistenced__failed-to-query-devices-first-char-cut__rocky-615-hami-notes.txt",
        "Failed to query NVIDIA devices",
    ),
    (
        "journalctl-b-1-p3__modules-load-nvidia-drm-persistenced-pager-cut__cs-laptop-blog.txt",
        "Failed to insert module 'nvidia_drm'",
    ),
]


@pytest.mark.parametrize(("name", "shown"), CASES)
def test_a_journal_without_kernel_lines_is_named_with_its_failures(
    tmp_path: Path, name: str, shown: str
) -> None:
    saved = tmp_path / "journal.txt"
    saved.write_text((REAL / name).read_text())
    with pytest.raises(UsageError) as refused:
        offline.load_outputs([str(saved)])
    said = str(refused.value)
    assert "not a recognised command output" not in said, said
    assert "a journal of other programs' lines only" in said and "no line of the kernel's" in said, said
    assert shown in said, said


def test_a_journal_with_a_kernel_line_is_no_such_journal() -> None:
    text = (
        REAL / CASES[1][0]
    ).read_text() + "May 29 13:04:03 cs-laptop kernel: nvidia: module verification failed\n"
    assert journal_without_kernel(text) is None
