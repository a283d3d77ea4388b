"""Where `sim.up` finds the demo's vendor files and the captures its test hosts replay: an
installed package's `<prefix>/share/gpuonboard/...` (pyproject's data-files), else the source
checkout's; with neither, one plain error naming both places, before anything is started."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gpuonboard import resources
from gpuonboard.errors import UsageError
from gpuonboard.testing import sim


def test_an_installed_copy_is_found_before_the_checkouts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prefix, checkout = tmp_path / "prefix", tmp_path / "checkout"
    (prefix / "share" / "gpuonboard" / "fixtures").mkdir(parents=True)
    (checkout / "tests" / "fixtures").mkdir(parents=True)
    (checkout / "inventory" / "vendors").mkdir(parents=True)
    monkeypatch.setattr(sys, "prefix", str(prefix))
    monkeypatch.setattr(resources, "checkout_root", lambda: checkout)
    assert resources.shipped_dir("fixtures", "tests/fixtures") == prefix / "share" / "gpuonboard" / "fixtures"
    # (not installed there: the checkout's)
    assert (
        resources.shipped_dir("inventory/vendors", "inventory/vendors") == checkout / "inventory" / "vendors"
    )
    assert resources.shipped_dir("nothing", "nothing") is None


def test_the_source_checkout_ships_what_sim_up_needs() -> None:
    vendors = resources.shipped_dir("inventory/vendors", "inventory/vendors")
    fixtures = resources.shipped_dir("fixtures", "tests/fixtures")
    assert vendors is not None and (vendors / "demo-idc.yml").is_file()
    assert fixtures is not None and (fixtures / "real").is_dir() and (fixtures / "derived").is_dir()


def test_without_the_shipped_files_sim_up_says_so_and_starts_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "prefix"))
    monkeypatch.setattr(resources, "checkout_root", lambda: tmp_path / "lib")
    monkeypatch.setattr(resources, "user_root", lambda: tmp_path / "user" / "share" / "gpuonboard")
    base = tmp_path / "sim"
    with pytest.raises(UsageError) as err:
        sim.up(base, "h1", "a100-8x-nvlink")
    msg = str(err.value)
    assert msg == (
        "gpuonboard's shipped inventory/vendors directory is missing (not in"
        f" {tmp_path}/prefix/share/gpuonboard/inventory/vendors,"
        f" {tmp_path}/user/share/gpuonboard/inventory/vendors nor {tmp_path}/lib/inventory/vendors);"
        " reinstall gpuonboard"
    )
    assert not base.exists()  # (no key, no state, no sshd)
