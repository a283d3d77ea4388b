"""Round 35: one part of a saved session (or one file of several) that cannot be read, or that
was printed elsewhere than at the box's login, is a note naming it, never a refusal of the whole
run: the box's own outputs beside it are judged (api/transcript.py, api/offline.py). Real
captures: tests/fixtures/sessions/SOURCES.md, tests/fixtures/real/SOURCES.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.api.listed_first import listed_first
from gpuonboard.connection.gather import parse_facts
from gpuonboard.errors import UsageError
from gpuonboard.inventory import OrderSpec

FIXTURES = Path(__file__).parents[2] / "fixtures"
REAL, SESSIONS = FIXTURES / "real", FIXTURES / "sessions"
HOST_THEN_DOCKER = (
    SESSIONS / "transcript__nvidia-smi+docker-run-gpus-all-nvidia-smi-CONTAINER-VIEW-pm-changed"
    "__gtx1650-590.48-tw-notes.txt"
)
L_THEN_OMITTED = (
    SESSIONS / "transcript__nvidia-smi-L-4mig+nvidia-smi-OUTPUT-OMITTED-mig-section-only"
    "__a100-80g-pcie__root-bracket-prompt-no-host__maxiv-mortalgpu.txt"
)
Q_GREP = (
    REAL / "part-of-nvidia-smi-q__h100-80gb-hbm3-i0-grep-driver-version-kept-no-attached-gpus"
    "__plus-nvrm-version__kr-expdoc.txt"
)
Q_ROW_REMAPPER = (
    REAL / "part-of-nvidia-smi-q__rtx-pro-6000-d-row-remapper-i1-gpu-head-kept-no-header"
    "__pending-yes__copied-command__kr-blog-xid48.txt"
)
TOPO = REAL / "nvidia-smi-topo-m__8x-h100-nv18__space-aligned__nccl-note.txt"
FREE = REAL / "free-k__h200-vm__procps-4.0.2.txt"
JOURNAL = (
    SESSIONS / "journalctl-k-since-until-BACKSLASH-CONTINUED-grep-nvrm-xid__xid48-rtx-pro-6000__kr-blog.txt"
)


def _judged(paths: list[Path], order: OrderSpec) -> tuple[dict[str, tuple[str, str, str]], list[str]]:
    notes: list[str] = []
    facts = parse_facts(offline.load_outputs([str(p) for p in paths], notes))
    return {c.name: (c.verdict, c.actual, c.detail) for c in offline.judge(facts, order)}, notes


def test_a_containers_table_beside_the_hosts_own_is_noted_and_the_hosts_judged() -> None:
    """The host's `nvidia-smi` (Persistence Off, 0 MiB), then `docker run --rm --gpus all IMAGE
    nvidia-smi` (On, 1 MiB): refused as "two plain nvidia-smi table outputs". A container's answer
    never replaces the box's own: the host's table is judged, the container's noted."""
    judged, notes = _judged([HOST_THEN_DOCKER], OrderSpec(gpu_model="GTX 1650", gpu_count=1))
    assert judged["gpu_model"][0] == "pass" and judged["gpu_count"][0] == "pass"
    assert judged["persistence_mode"][1] == "Disabled on GPU 0"  # (the host's own table's)
    (note,) = notes
    assert "line 24 (`docker run --rm --gpus all nvidia/cuda:12.0.1-base-ubuntu22.04 nvidia-smi`)" in note
    assert "printed elsewhere than at the box's login" in note and "ran in a container" in note
    assert note.endswith("line 1 (`nvidia-smi`), the box's own, is judged.")


def test_a_containers_free_beside_the_hosts_own_is_noted_and_the_hosts_judged(tmp_path: Path) -> None:
    """The class: any kind, the container's run first or last (a real `free -k` as the host's,
    a smaller one edited as the container's view lxcfs serves; this one was already joined)."""
    host = FREE.read_text()
    total = host.split("\n")[1].split()[1]
    inside = host.replace(total, str(int(total) // 4), 1)
    session = tmp_path / "s.txt"
    session.write_text(f"root@gpu-1:~# docker exec app free -k\n{inside}root@gpu-1:~# free -k\n{host}")
    judged, notes = _judged([session], OrderSpec(ram_bytes=int(total) * 1024))
    assert judged["ram"][0] == "pass"
    assert "line 1 (`docker exec app free -k`)" in notes[0] and "not the box's" in notes[0]


def test_two_container_answers_stay_refused(tmp_path: Path) -> None:
    """Two views that are both elsewhere are rivals as before: neither is the box's own."""
    host = FREE.read_text()
    total = host.split("\n")[1].split()[1]
    inside = host.replace(total, str(int(total) // 4), 1)
    session = tmp_path / "s.txt"
    session.write_text(f"$ docker exec a free -k\n{inside}$ docker exec b free -k\n{host}")
    with pytest.raises(UsageError, match="cannot both be judged as the box"):
        offline.load_outputs([str(session)])


def test_a_trimmed_table_after_a_whole_listing_is_a_note() -> None:
    """`[root ~]# nvidia-smi -L` (GPU 0 and its 4 MIG devices), then `[root ~]# nvidia-smi` trimmed
    to its MIG devices section by `<output omitted>`: the whole run was refused for the trimmed
    table (the `[user dir]#` prompt, no host, was not read as one). The -L is judged."""
    judged, notes = _judged([L_THEN_OMITTED], OrderSpec(gpu_model="A100 80GB PCIe", gpu_count=1))
    assert judged["gpu_model"] == ("pass", "1 x NVIDIA A100 80GB PCIe", judged["gpu_model"][2])
    assert judged["gpu_count"][1] == "1 (MIG on: 4 slices)"
    (note,) = notes
    assert "not read: line 8 (`nvidia-smi`): the MIG devices section of nvidia-smi's table alone" in note


def test_a_refused_file_among_several_is_a_note_and_the_others_judged() -> None:
    """A `-q -i 0 | grep` part (no Attached GPUs, no block head) beside a whole `topo -m`: the
    refusal ended the run, and the topology was never judged."""
    judged, notes = _judged([Q_GREP, TOPO], OrderSpec(gpu_count=8, interconnect="nvlink"))
    assert judged["interconnect"][0] == "pass"
    (note,) = notes
    assert note.startswith(f"{Q_GREP}: lines of `nvidia-smi -q`")
    assert "the other files are judged" in note


def test_the_one_file_given_that_is_refused_stays_refused() -> None:
    with pytest.raises(UsageError, match="lines of `nvidia-smi -q`"):
        offline.load_outputs([str(Q_GREP)])


@pytest.mark.parametrize(
    ("capture", "said", "untrue"),
    [
        # its first line is `Driver Version : 580.126.20`
        (
            Q_GREP,
            "without the header's `Attached GPUs` line and the block's `GPU <PCI address>` line, so the"
            " number of GPUs and which GPU they belong to are not known",
            "(Driver Version, Attached GPUs)",
        ),
        # `nvidia-smi -i 1 -q -d ROW_REMAPPER` from its `GPU 00000000:55:00.0` line on
        (
            Q_ROW_REMAPPER,
            "lines of `nvidia-smi -q` from the block of GPU 00000000:55:00.0, without the header above"
            " them (Driver Version, Attached GPUs), so the driver and the number of GPUs are not known",
            "`GPU <PCI address>` line",
        ),
    ],
)
def test_a_q_part_is_said_to_lack_only_what_it_lacks(capture: Path, said: str, untrue: str) -> None:
    with pytest.raises(UsageError) as refused:
        offline.load_outputs([str(capture)])
    assert said in str(refused.value) and untrue not in str(refused.value)


def test_a_command_continued_over_lines_is_read_whole() -> None:
    """`sudo journalctl -k \\` / `--since ... \\` / `--until ... \\` / `--no-pager | grep -iE
    'nvrm|xid'`: the command was named cut at the backslash (`sudo journalctl -k \\`), its grep
    unseen."""
    judged, _ = _judged([JOURNAL], OrderSpec())
    detail = judged["nvswitch_sxid"][1] + judged["nvswitch_sxid"][2]
    assert "`sudo journalctl -k --since '2026-08-10 15:30:00 UTC' --until '2026-08-10 15:45:00 UTC'" in detail
    assert "--no-pager | grep -iE 'nvrm|xid'` keeps only the lines grep let through" in detail
    assert "journalctl -k \\`" not in detail
    assert judged["gpu_xid"][0] == "fail"


NVLINK_S = REAL / "nvidia-smi-nvlink-s__h100-pcie__2gpu-12of18-links__driver555.42.02.txt"
NVLINK_R = REAL / "nvidia-smi-nvlink-R__h100-pcie__2gpu-12links__hpe-dl380a.txt"
EIGHT = OrderSpec(gpu_count=8)


@pytest.mark.parametrize(
    ("command", "verdict"),
    [
        ("root@dl380ag11:~# nvidia-smi nvlink -s\n", "fail"),  # (as the page shows it: every GPU)
        ("$ sudo nvidia-smi nvlink --status\n", "fail"),
        ("$ nvidia-smi nvlink -s -i 0\n", "unverified"),  # (a view of GPU 0)
        ("$ nvidia-smi nvlink -s | head -30\n", "unverified"),  # (a filter: lines left out)
        ("$ docker run --gpus 1 img nvidia-smi nvlink -s\n", "unverified"),  # (a container's GPUs)
        ("", "unverified"),  # (no command: a view saved without it looks whole)
        ("root@3f4e5a6b7c8d:/# nvidia-smi nvlink -s\n", "unverified"),  # (a container's shell)
    ],
)
def test_an_nvlink_listing_saved_with_its_whole_command_counts_the_gpus(
    tmp_path: Path, command: str, verdict: str
) -> None:
    """m35e 14: `root@dl380ag11:~# nvidia-smi nvlink -s` (no `-i`), 2 H100 PCIe of 8 ordered, was
    unverified "a view of some GPUs (nvlink -s -i 0) saved without its command looks whole": the
    command was saved, and it lists every GPU."""
    saved = tmp_path / "nvlink.txt"
    saved.write_text(command + NVLINK_S.read_text())
    judged, _ = _judged([saved], EIGHT)
    assert judged["gpu_count"][0] == verdict, judged["gpu_count"]


def test_nvlink_r_and_nvlink_s_of_the_same_gpus_are_two_listings(tmp_path: Path) -> None:
    """`nvidia-smi nvlink -R` (where each link goes) then `nvlink -s` (each link's state) of the
    same 2 H100 PCIe (the DL380a page's two blocks): refused as "two `nvidia-smi nvlink -s`
    outputs"; the state is judged, the -R noted."""
    session = tmp_path / "s.txt"
    session.write_text(
        f"root@dl380ag11:~# nvidia-smi nvlink -R\n{NVLINK_R.read_text()}"
        f"root@dl380ag11:~# nvidia-smi nvlink -s\n{NVLINK_S.read_text()}"
    )
    judged, notes = _judged([session], EIGHT)
    assert judged["gpu_count"][:2] == ("fail", "2")
    assert notes == [
        f"{session}: line 1 (`nvidia-smi nvlink -R`) and line {2 + len(NVLINK_R.read_text().splitlines())}"
        " (`nvidia-smi nvlink -s`) are `nvidia-smi nvlink -R`'s listing of where each link goes and"
        " `nvlink -s`'s link states of the same GPUs, the link states judged."
    ]


SALLOC = (
    SESSIONS / "transcript__salloc+login-nvidia-smi-NO-DEVICES+srun-n1-nvidia-smi-v100-418.67"
    "__hpc-user-guide.txt"
)


def test_after_salloc_the_job_steps_answer_is_the_box_and_the_login_nodes_failure_a_note() -> None:
    """m35e 32: salloc's shell runs on the login node, whose `nvidia-smi` says `No devices were
    found`; `srun -n1 nvidia-smi` ran on the allocated node t016 and shows a healthy V100. The
    login's answer failed nvidia_driver, blaming passthrough, power or the driver."""
    judged, notes = _judged([SALLOC], OrderSpec(gpu_count=1))
    assert judged["nvidia_driver"][0] == "pass" and judged["nvidia_driver"][1].startswith("driver 418.67")
    assert "No devices were found" not in judged["nvidia_driver"][1]
    assert notes[-1] == (
        f"{SALLOC}: line 5 (`nvidia-smi`) ran at the shell `salloc` opened, which runs on the login node,"
        " another host than the allocated one: its `No devices were found` says the login node has no"
        " GPU the driver sees, not the box's; line 7 (`srun -n1 nvidia-smi`) ran as a job step on the"
        " allocated node (t016, as salloc named it), whose answer is judged as the box."
    )


def test_without_salloc_the_logins_own_failure_is_still_judged(tmp_path: Path) -> None:
    """No allocation in the session: the login's own failure beside an answer elsewhere is the
    box's, as before (docs/guides/offline.md)."""
    session = tmp_path / "s.txt"
    session.write_text("\n".join(SALLOC.read_text().splitlines()[4:]) + "\n")
    judged, _ = _judged([session], OrderSpec(gpu_count=1))
    assert judged["nvidia_driver"][0] == "fail"


LISTED_FIRST = (
    SESSIONS / "page__nvidia-smi-L+query-gpu-csv-COMMANDS-LISTED-FIRST-outputs-after"
    "__8xa100-sxm4-80gb-570.133__perf-report.txt"
)


def test_commands_listed_first_and_their_outputs_after_are_each_read() -> None:
    """m35e 15: `nvidia-smi -L` and a CSV query on the first two lines, then -L's 8 lines and the
    CSV: read as one output, every GPU rule said "nvidia-smi answered but listed no GPU"."""
    judged, _ = _judged([LISTED_FIRST], OrderSpec(gpu_model="A100 80GB", min_driver="575"))
    assert judged["nvidia_driver"][0] == "pass" and "listed no GPU" not in judged["nvidia_driver"][1]
    assert judged["min_driver"][:2] == ("fail", "570.133.20")
    assert judged["gpu_model"][1].startswith("8 x NVIDIA A100-SXM4-80GB")


def test_commands_listed_first_whose_outputs_do_not_split_are_read_as_before(tmp_path: Path) -> None:
    """Two commands whose outputs are of one kind cannot be told apart where one ends: no split."""
    text = LISTED_FIRST.read_text().split("name, memory")[0]
    saved = tmp_path / "s.txt"
    saved.write_text(
        text.replace("nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv", "nvidia-smi -L")
    )
    assert listed_first(saved.read_text()) is None


COMMENTED = (
    SESSIONS / "nvidia-smi__geforce-2gb-470.256.02-cuda-12.4__docker-run-HASH-COMMENTED-prompt-and-table"
    "__copied-command__cortex-notes.txt"
)


def test_a_commented_out_prompt_line_is_read_as_the_command() -> None:
    """m35e 06: `# root@pc-linux:...# docker run --rm --gpus all IMAGE nvidia-smi` above a table
    whose lines all start with `#`: the command read began with the prompt's host and path, so the
    table was taken for the box's own nvidia-smi, not a container's."""
    from gpuonboard.api.saved_text import copied_command, copied_host

    text = COMMENTED.read_text()
    assert copied_command(text) == "docker run --rm --gpus all nvidia/cuda:12.4.1-base-ubuntu22.04 nvidia-smi"
    assert copied_host(text) == "pc-linux"
    (out,) = offline.load_outputs([str(COMMENTED)]).values()
    assert out.ran_elsewhere.endswith("ran in a container")


PLUGIN_LOG = (
    SESSIONS / "kubectl-logs-device-plugin-BACKSLASH-CONTINUED-grep-error"
    "__xidcriticalerror-xid48-unhealthy__kr-blog.txt"
)


def test_a_containers_log_behind_a_continued_command_is_named_with_its_xid() -> None:
    """m35d 10: `kubectl logs ... \\` / `-c nvidia-device-plugin --tail=25 | grep ...`: the refusal
    quoted the command's continued line as what the container printed, and the log's
    `XidCriticalError: Xid=48` went unnamed."""
    with pytest.raises(UsageError) as refused:
        offline.load_outputs([str(PLUGIN_LOG)])
    said = str(refused.value)
    assert (
        "(`kubectl logs -n gpu-operator nvidia-device-plugin-daemonset-np9s6 -c nvidia-device-plugin" in said
    )
    assert "printed: `I0810 15:36:05.551834 1 health.go:169] XidCriticalError: Xid...`" in said
    assert "it names Xid 48 (`Xid=48 on Device=GPU-455e672a-...; marking device as unhealthy.`)" in said


def test_a_table_and_a_topo_listed_first_split_at_the_blank_between_them(tmp_path: Path) -> None:
    """The class: a table (whose own blank line sits between its GPU and Processes boxes) and a
    `topo -m`, their commands on the first two lines (real outputs, put together here)."""
    table = (REAL / "nvidia-smi__h200__1gpu__driver580.159.04.txt").read_text()
    topo = (REAL / "nvidia-smi-topo-m__a10__4gpu-2nic-sys__gpu-numa-id.txt").read_text()
    split = listed_first(f"nvidia-smi\nnvidia-smi topo -m\n{table}\n{topo}")
    assert split is not None
    assert (
        split.startswith("$ nvidia-smi\n") and f"\n\n$ nvidia-smi topo -m\n{topo.split(chr(10))[0]}" in split
    )


VGPU_README = (
    SESSIONS / "page__nvidia-smi-q-grep-cut+nvidia-smi-vgpu-table+dmesg-NO-PROMPTS"
    "__geforce-rtx-4088-host-vgpu-525.147__akb486-vgpu-readme.txt"
)


def test_a_refused_output_beside_a_kernel_log_with_no_prompt_between_is_a_note() -> None:
    """m35e 16: a `-q` and `nvidia-smi vgpu`'s listing (refused as that listing), then dmesg
    lines, no prompt between: the refusal ended the run, the log never read."""
    notes: list[str] = []
    read = offline.load_outputs([str(VGPU_README)], notes)
    # (and the `-q` above the listing is read since round 35's fixN5a: the listing alone is noted)
    assert list(read) == ["nvidia_smi_q", "kernel_log"]
    assert (
        "lines 1-43 (the other output, no prompt above them): from its line 34, `nvidia-smi vgpu`'s listing"
        in notes[0]
    )
