"""A pinned `host_key` is checked when the inventory is read: the README's own placeholder
`SHA256:...`, a cut or MD5 fingerprint and a whole `ssh-keygen -l` line loaded fine and were
then reported as "possible man-in-the-middle" (exit 4) although the key was right. Now one
sentence names the file, line, host and field (exit 2); a base64 `=` pad (OpenSSH prints none)
is dropped."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpuonboard import inventory
from gpuonboard.errors import InventoryError

FP = "SHA256:I44RoCc0JOVYfsfCo6mWsdcxU4mdIJ1wj2DGelf8zPo"


def _load(tmp_path: Path, host_key: str) -> inventory.Inventory:
    (tmp_path / "hosts.yml").write_text(f"hosts:\n  gpu1:\n    address: 10.0.0.1\n    host_key: {host_key}\n")
    return inventory.load(tmp_path / "hosts.yml")


@pytest.mark.parametrize("written", [FP, f"{FP}=", f" {FP} ", "sha256:" + FP[7:], f"'{FP}='"])
def test_a_fingerprint_is_kept_as_openssh_prints_it(tmp_path: Path, written: str) -> None:
    assert _load(tmp_path, written).hosts["gpu1"].host_key == FP


@pytest.mark.parametrize(
    ("written", "said"),
    [
        ("SHA256:...", "'SHA256:...' is not an OpenSSH fingerprint, which is SHA256: and 43 base64"),
        (FP[:-3], f"{FP[:-3]!r} is not an OpenSSH fingerprint"),
        (f"'{FP} (ED25519)'", f"is a whole `ssh-keygen -l` line ('{FP} (ED25519)'); write only its"
         f" fingerprint (host_key: {FP})."),
        (f"'256 {FP} root@gpu1 (ED25519)'", f"write only its fingerprint (host_key: {FP})."),
        ("'256 SHA256:abcdef gpu1 (ED25519)'", "is a whole `ssh-keygen -l` line"),
        ("'MD5:aa:bb:cc'", "is an MD5 fingerprint; pin the SHA256 one"),
        ("[SHA256:a, SHA256:b]", "must be one OpenSSH fingerprint like SHA256:"),
    ],
)  # fmt: skip
def test_a_malformed_fingerprint_is_refused_at_load(tmp_path: Path, written: str, said: str) -> None:
    with pytest.raises(InventoryError) as err:
        _load(tmp_path, written)
    text = err.value.message
    assert text.startswith(f"{tmp_path / 'hosts.yml'}, line 4: host 'gpu1' field 'host_key' "), text
    assert said in text and "\n" not in text and text.endswith(")."), text


def test_the_readme_placeholder_is_exit_2_through_the_cli(tmp_path: Path) -> None:
    (tmp_path / "inventory").mkdir()
    (tmp_path / "inventory" / "hosts.yml").write_text(
        "hosts:\n  gpu1:\n    address: 127.0.0.1\n    port: 1\n    host_key: SHA256:...\n"
    )
    cmd = [sys.executable, "-c", "from gpuonboard.cli import main; main()", "check", "--host", "gpu1"]
    env = {**os.environ, "GPUONBOARD_SSH_CONFIG": "/dev/null"}
    r = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 2, r.stdout + r.stderr
    assert (
        r.stderr.startswith("error: ")
        and "field 'host_key'" in r.stderr
        and "man-in-the-middle" not in r.stderr
    )
