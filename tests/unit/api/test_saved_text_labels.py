"""A poster's label or caption line naming the command above a whole output (`Command: numactl
--hardware`, `Output of nvidia-smi -L:`, `**Output of `lscpu`:**`) is the copied command, as a
prompt line is (api/saved_text.py): the file was refused whole, "not a recognised command output"
(measure31b 04, awslabs/aws-c-s3#403)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpuonboard.api.saved_text import copied_command, strip_prompt

REAL = Path(__file__).parents[2] / "fixtures" / "real"

LABELLED = [
    (
        "Command: numactl --hardware",
        "numactl-H__c5n.18xlarge-2node-184.9gib__aws-c-s3-403.txt",
        "numactl --hardware",
    ),
    ("Output of `free -m`:", "free-m__devcontainer-110gib__vit-notes.txt", "free -m"),
    ("**Output of `lscpu`:**", "lscpu__amd-epyc-9374f__2socket__rtx6000ada-server.txt", "lscpu"),
    (
        "Output of nvidia-smi -L:",
        "nvidia-smi-L__a100-80gb-pcie__1gpu-1mig-2g.20gb__go-dcgm.txt",
        "nvidia-smi -L",
    ),
]


@pytest.mark.parametrize(("label", "name", "command"), LABELLED)
def test_a_label_line_is_the_copied_command(label: str, name: str, command: str) -> None:
    text = (REAL / name).read_text()
    assert copied_command(f"{label}\n{text}") == command
    assert strip_prompt(f"{label}\n{text}") == text


@pytest.mark.parametrize("line", ["Command: foo --bar", "Output of the GPU box:", "Running the free tier"])
def test_a_label_naming_no_tool_is_no_command(line: str) -> None:
    assert copied_command(f"{line}\nsome output\n") == ""


def test_numactl_under_its_label_line_is_read(tmp_path: Path) -> None:
    """aws-c-s3#403's c5n.18xlarge `numactl --hardware` under `Command: numactl --hardware`."""
    (tmp_path / "numactl.txt").write_text(
        "Command: numactl --hardware\n" + (REAL / LABELLED[0][1]).read_text()
    )
    order = tmp_path / "order.yml"
    order.write_text("ram: 128GB\n")
    cmd = [sys.executable, "-c", "from gpuonboard.cli import main; main()", "facts"]
    r = subprocess.run(
        [*cmd, str(tmp_path / "numactl.txt"), "--order", str(order), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert "numactl --hardware: 2 NUMA nodes, 72 CPUs, 189300 MiB (184.9 GiB) of memory" in r.stderr
    rules = {c["name"]: c for c in json.loads(r.stdout)["rules"]}
    assert rules["ram"]["verdict"] == "pass"
