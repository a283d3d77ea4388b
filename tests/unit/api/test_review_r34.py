"""Review revM of round 34's changes: a `topo -m` that is a view (a container's, a pod's, a batch
job's) is no listing of the box's GPUs; a /proc/cpuinfo cut at its top but whole at its end (an
lxcfs view's tail) proves no package's `cpu cores`; a banner a document quotes under its prose or
a fence is no output of the box for min_driver. Inputs: real captures, a line typed above them or
their blocks edited as the test says (tests/fixtures/real/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
TOPO = REAL / "nvidia-smi-topo-m__h100-pcie__2gpu-nv12__driver555.42.02.txt"
EPYC = REAL / (
    "proc-cpuinfo__epyc-9654p-96-core__from-processor-4__siblings-191__cut-in-flags__ansible-82244.txt"
)
BANNER_OF = REAL / "nvidia-smi__rtxa6000-24q-vgpu__1gpu__driver550.54.15__guest.txt"


@pytest.mark.parametrize(
    "above",
    [
        "$ kubectl exec -it trainer-0 -- nvidia-smi topo -m\n",
        "$ docker run --rm --gpus 2 nvidia/cuda:12.4.0-base-ubuntu22.04 nvidia-smi topo -m\n",
        "SLURM_JOB_ID=3939512\nsrun: job 3939512 queued and waiting for resources\n",
        "NVIDIA_VISIBLE_DEVICES=0,1\n",
    ],
)
def test_a_topo_matrix_of_a_view_never_fails_the_box_s_count(tmp_path: Path, above: str) -> None:
    """The real 2-GPU matrix under a container's, a pod's or a job's line, against 8 ordered: the
    view's GPUs only, so gpu_count is unverified (it failed "2 ..., its matrix whole")."""
    verdict, actual = verdicts(tmp_path, "topo.txt", above + TOPO.read_text(), "gpu_count: 8\n")["gpu_count"]
    assert verdict == "unverified", actual


def test_the_box_s_own_whole_topo_matrix_still_fails_a_short_count(tmp_path: Path) -> None:
    verdict, actual = verdicts(tmp_path, "topo.txt", TOPO.read_text(), "gpu_count: 8\n")["gpu_count"]
    assert verdict == "fail" and "its matrix whole" in actual, actual


def _whole_blocks() -> str:
    """The EPYC's block of CPU 4 made whole (its flags ended, bogomips and power management lines
    added), and the same block as CPU 5: a listing from CPU 4 whose end is whole."""
    tail = "\nbogomips        : 4792.58\npower management: ts ttp tm hwpstate\n\n"
    block = EPYC.read_text().rstrip("\n") + tail
    return block + block.replace("processor       : 4", "processor       : 5", 1)


def test_a_cpuinfo_cut_at_its_top_only_proves_no_package_s_cpu_cores(tmp_path: Path) -> None:
    """Two whole blocks from CPU 4 to 5, `siblings : 191`: no CPU beyond 5 is shown to exist (an
    lxcfs view keeps the host's `cpu cores`): >= 96 stays unverified; cut in its flags (the real
    capture), it passes."""
    text = _whole_blocks()
    assert "processor       : 5" in text
    assert verdicts(tmp_path, "cpuinfo.txt", text, "cpu_cores: 96\n")["cpu_cores"][0] == "unverified"
    assert verdicts(tmp_path, "cpuinfo.txt", EPYC.read_text(), "cpu_cores: 96\n")["cpu_cores"][0] == "pass"


@pytest.mark.parametrize(
    "above",
    [
        "Requirements\n\nThe host must run a recent driver, for example this one.\n",
        "Your output should look like the following\n```\n",
        "README.md\nTested with\n",
    ],
)
def test_a_banner_a_document_quotes_passes_no_min_driver(tmp_path: Path, above: str) -> None:
    """The real 550.54.15 table's border and banner alone under a document's words: unverified
    (it passed 550.54.15 under any lines but a `:` one)."""
    banner = "".join(BANNER_OF.read_text().splitlines(keepends=True)[1:4])
    assert "Driver Version: 550.54.15" in banner
    verdict, actual = verdicts(tmp_path, "doc.txt", above + banner, "min_driver: '550'\n")["min_driver"]
    assert verdict == "unverified", actual


FM_FAILED = REAL / (
    "systemctl-status-nvidia-fabricmanager__failed-result-signal-killed__journal-elided__nvls-recovery-notes.txt"
)


def test_a_failed_fabric_manager_with_another_unit_s_status_after_it_stays_failed() -> None:
    """`systemctl status nvidia-fabricmanager nvidia-persistenced`: the real failed unit's status,
    then the persistence daemon's (an edit: its three lines as systemctl prints them): the first
    unit's `Active:` is the manager's (the last one had won: "active", a pass; review revN)."""
    from gpuonboard.facts.fabric_manager import parse_fabric_manager

    other = (
        "\n● nvidia-persistenced.service - NVIDIA Persistence Daemon\n"
        "     Loaded: loaded (/lib/systemd/system/nvidia-persistenced.service; enabled;"
        " vendor preset: enabled)\n"
        "     Active: active (running) since Mon 2026-08-10 06:41:20 UTC; 5 days ago\n"
    )
    assert parse_fabric_manager(FM_FAILED.read_text() + other).state == "failed"


def test_a_host_s_cat_of_a_container_s_cgroup_limit_is_not_the_login_s(tmp_path: Path) -> None:
    """A host's session: `free -k` of 2 TB, then `cat` of a docker scope's memory.max (8 GiB): that
    container's limit, not this login's: ram passes on free (it failed "8.0 GiB usable"); a `cat`
    of the tree's own root file is still read (test_offline_round34_host.py)."""
    session = (
        "root@gpu-host:~# free -k\n"
        "               total        used        free      shared  buff/cache   available\n"
        "Mem:      2113450132    45210044  2051234100       12044    17005988  2058240088\n"
        "Swap:              0           0           0\n"
        "root@gpu-host:~# cat /sys/fs/cgroup/system.slice/docker-3f2a9c1b7e.scope/memory.max\n"
        "8589934592\n"
        "root@gpu-host:~#\n"
    )
    verdict, actual = verdicts(tmp_path, "session.txt", session, "ram: 2000GB\n")["ram"]
    assert verdict == "pass", actual
