"""`sim.up` ends with the command to run next, ready to paste."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gpuonboard import resources
from gpuonboard.errors import UsageError
from gpuonboard.testing import hosts, sim
from gpuonboard.testing.sim import next_command


def test_the_next_command_names_the_sims_inventory_relative_and_quoted() -> None:
    cwd = Path("/home/me/my project")
    inv = cwd / ".gpuonboard" / "sim" / "inventory"
    assert (
        next_command("demo-a100", inv, cwd)
        == "invoke check --host demo-a100 --inventory .gpuonboard/sim/inventory"
    )
    assert next_command("h1", Path("/tmp/my sims/inventory"), cwd, "gpuonboard") == (
        "gpuonboard check --host h1 --inventory '/tmp/my sims/inventory'"
    )


# The simulated host's `autostop_shutdown_command` names a file in the sim dir, and the sim dir
# is under the current directory (`.gpuonboard/sim`): a project in a directory with a space
# (`~/My Projects/x`) made it `touch /home/u/My Projects/x/...`, which touched `/home/u/My` and a
# relative path instead, and a `;` in it ran the rest as a command (as root). The path is quoted.
# Also: without OpenSSH's sshd sim.up says so (it was "internal error (FileNotFoundError ...)").


@pytest.mark.parametrize("odd", ["My Projects", "x;touch INJECTED", "it's $(touch INJECTED)"])
def test_the_shutdown_command_touches_only_its_file(tmp_path: Path, odd: str) -> None:
    home = tmp_path / odd / "hosts" / "h1"
    home.mkdir(parents=True)
    entry = sim.sim_entry("h1", "127.0.3.1", 22, "/k", "SHA256:x", home)
    command = entry["vars"]["autostop_shutdown_command"]
    r = subprocess.run(["sh", "-c", command], cwd=tmp_path, capture_output=True, text=True, timeout=10)
    assert r.returncode == 0, r.stderr
    assert (home / "shutdown-ran").is_file()
    made = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert made == [f"{odd}/hosts/h1/shutdown-ran"]


def test_without_sshd_sim_up_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hosts, "SSHD", str(tmp_path / "no-sshd"))
    with pytest.raises(
        UsageError, match=r"no-sshd is missing; install it \(apt-get install openssh-server\)"
    ):
        sim.up(tmp_path / "sim", "h1", "a100-8x-nvlink")
    assert not (tmp_path / "sim").exists()


def test_a_base_that_is_a_file_is_a_usage_error(tmp_path: Path) -> None:
    """(It was "internal error (FileExistsError ...)", exit 70.)"""
    afile = tmp_path / "afile"
    afile.write_text("")
    with pytest.raises(UsageError, match=r"--base .*/afile is not a directory; give a directory for"):
        sim.up(afile, "h1", "a100-8x-nvlink")
    with pytest.raises(UsageError, match=r"--base .*/afile/sub: cannot create it \(Not a directory\)"):
        sim.up(afile / "sub", "h1", "a100-8x-nvlink")


# Where `sim.up` finds the demo's vendor files and the captures its test hosts replay: an
# installed package's `<prefix>/share/gpuonboard/...` (pyproject's data-files), else the source
# checkout's; with neither, one plain error naming both places, before anything is started.


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
