"""What loading an inventory imports: a native inventory (the check's) leaves the Ansible
readers' own modules unimported (configparser, decimal, difflib, the INI reader: ~5 ms of a
run's CPU); an Ansible inventory that needs them still imports them and reads as before."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

# (each in a fresh interpreter: this one has imported everything the other tests needed)
LAZY = ("configparser", "decimal", "difflib", "gpuonboard.inventory.ansible_ini")


def _imported_after(tmp_path: Path, hosts_file: str, text: str) -> list[str]:
    """Load `text` as `hosts_file` after importing what `gpuonboard check` imports first (the
    CLI), and return which of LAZY were imported, after the host's address and port."""
    d = tmp_path / "inv"
    d.mkdir()
    (d / hosts_file).write_text(text)
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from gpuonboard.cli import main\n"
        "from gpuonboard import inventory\n"
        f"h = next(iter(inventory.load(Path({str(d)!r})).hosts.values()))\n"
        f"print(h.address, h.port, *[m for m in {LAZY!r} if m in sys.modules])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path, check=True
    )
    return out.stdout.split()


def test_a_native_inventory_is_loaded_without_the_ansible_readers_modules(tmp_path: Path) -> None:
    text = "defaults: {user: root}\nhosts:\n  gpu-1: {address: 10.0.0.7, port: 2222}\n"
    assert _imported_after(tmp_path, "hosts.yml", text) == ["10.0.0.7", "2222"]


def test_an_ini_inventory_with_a_written_out_float_port_still_reads_it(tmp_path: Path) -> None:
    """INI's `ansible_port=2222.0` is Ansible's whole number 2222 (read with decimal, imported
    for it), and the INI reader is imported for an INI inventory."""
    text = "[gpus]\ngpu-1 ansible_host=10.0.0.7 ansible_port=2222.0\n"
    got = _imported_after(tmp_path, "hosts.ini", text)
    assert got[:2] == ["10.0.0.7", "2222"]
    assert {"decimal", "gpuonboard.inventory.ansible_ini"} <= set(got[2:])
