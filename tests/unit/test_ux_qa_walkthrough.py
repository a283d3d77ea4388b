"""What a first-time user sees from `invoke inventory`: the inventory's own words, as written."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard import api


def _inventory(tmp_path: Path, vendor_name: str, gpu_model: str) -> Path:
    (tmp_path / "vendors").mkdir()
    (tmp_path / "vendors" / "acme.yml").write_text(f"name: {vendor_name!r}\n")
    hosts = tmp_path / "hosts.yml"
    hosts.write_text(
        "hosts:\n"
        f"  g1: {{address: 10.0.0.1, vendor: acme, order: {{gpu_model: {gpu_model!r}, gpu_count: 1}}}}\n"
    )
    return hosts


@pytest.mark.parametrize(
    ("vendor_name", "gpu_model"),
    [
        ("Acme [cn/gpu] Cloud", "A100 [sxm4]"),  # (rich markup took these for styles and dropped them)
        ("Acme [/cn] Cloud", "A100 SXM"),  # (a closing tag that matches none: internal error, 70)
    ],
)
def test_the_inventory_table_shows_brackets_in_names_as_written(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    vendor_name: str,
    gpu_model: str,
) -> None:
    hosts = _inventory(tmp_path, vendor_name, gpu_model)
    monkeypatch.setenv("COLUMNS", "200")
    assert api.list_inventory(api.Selection(str(hosts)), api.Settings(project=tmp_path)) == 0
    out = capsys.readouterr().out
    assert vendor_name in out
    assert f"1 x {gpu_model}" in out
