"""Round 34 (measure34c 30): an nvidia-smi output inside a batch scheduler's job log is the job's
allocation, a view of part of the node, as `kubectl logs` is a container's (api/narrowed.py
job_log_view): gpu_count, gpu_model and vram never pass from it.

The real capture is a Slurm job's .out on a PACE ICE H200 node: `Begin Slurm Prolog`,
`CUDA_VISIBLE_DEVICES=0`, the table its script printed, the epilog's `gres/gpu:h200=1`. The other
schedulers' headers (Torque's prologue, LSF's mail header, a launcher's `salloc:` lines) and a
printed `NVIDIA_VISIBLE_DEVICES` are test inputs built around that real table, not captures."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api.narrowed import job_log_view

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
SLURM_JOB = REAL / (
    "nvidia-smi__h200__1gpu__driver575.57.08__slurm-job-out-prolog-epilog-cuda-visible-devices__pace-ice.txt"
)
ORDER = 'gpu_model: H200\ngpu_count: 1\nvram: 141GB\nmin_driver: "575"\n'


def _table() -> str:
    """The real table alone: from its time stamp line to the Processes box's border."""
    lines = SLURM_JOB.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Fri Dec"))
    end = next(i for i, line in enumerate(lines) if line.startswith("Imports:"))
    return "\n".join(lines[start:end]) + "\n"


@pytest.mark.parametrize("order", [ORDER, ORDER.replace("gpu_count: 1", "gpu_count: 8")])
def test_a_slurm_jobs_log_is_the_jobs_allocation(tmp_path: Path, order: str) -> None:
    got = verdicts(tmp_path, "job.out", SLURM_JOB.read_text(), order)
    for rule in ("gpu_count", "gpu_model", "vram"):
        assert got[rule][0] == "unverified", got[rule]
        assert "a Slurm job's log (`Begin Slurm Prolog`)" in got[rule][1], got[rule]
    assert got["nvidia_driver"][0] == "pass" and got["min_driver"][0] == "pass", got


def test_the_table_alone_is_read_as_the_box(tmp_path: Path) -> None:
    """Without the job's lines, the same table is the box's, as before."""
    got = verdicts(tmp_path, "nvidia-smi.txt", _table(), ORDER)
    assert got["gpu_count"] == ("pass", "1"), got["gpu_count"]


@pytest.mark.parametrize(
    ("head", "said"),
    [
        ("----------------------------------------\nBegin PBS Prologue Wed Mar 4 10:00:01 2026\n", "PBS"),
        ("PBS Job Id: 123456.pbs01\n", "PBS"),
        ("Sender: LSF System <lsfadmin@node17>\nSubject: Job 4242: <nvsmi> in cluster <c1> Done\n", "LSF"),
        ("salloc: Granted job allocation 570480\nsalloc: Nodes atl1 are ready for job\n", "Slurm"),
        ("SLURM_JOB_ID=3939512\n", "Slurm"),
        ("NVIDIA_VISIBLE_DEVICES=2,3\n", "`NVIDIA_VISIBLE_DEVICES=2,3`"),
    ],
)
def test_other_job_logs_are_views_too(tmp_path: Path, head: str, said: str) -> None:
    assert said in job_log_view("nvidia_smi_table", head + _table())
    got = verdicts(tmp_path, "job.log", head + _table(), ORDER)
    assert got["gpu_count"][0] == "unverified", got["gpu_count"]


@pytest.mark.parametrize(
    "head",
    [
        "CUDA_VISIBLE_DEVICES=all\n",
        "NVIDIA_VISIBLE_DEVICES=void\n",
        "Running on host: node1\n",
        # (CUDA reads it, nvidia-smi ignores it: a box's own table printed after it shows every GPU;
        # review revN)
        'CUDA_VISIBLE_DEVICES = "0"\n',
        "CUDA_VISIBLE_DEVICES=0,1\n",
    ],
)
def test_no_view_where_no_job_or_share_is_named(head: str) -> None:
    assert job_log_view("nvidia_smi_table", head + _table()) == ""


def test_only_gpu_outputs_are_views() -> None:
    assert job_log_view("free", SLURM_JOB.read_text()) == ""
