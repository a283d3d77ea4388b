"""`gpuonboard facts`: saved outputs judged offline, through the real CLI."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpuonboard import api
from gpuonboard.api import offline, run_folder
from gpuonboard.api.collect_env import looks_like_collect_env
from gpuonboard.api.offline import detect_kind
from gpuonboard.connection.gather import parse_facts
from gpuonboard.errors import UsageError
from gpuonboard.facts.probe import ProbeOutput
from gpuonboard.inventory import Host
from gpuonboard.results import HostResult, conclude

REAL = Path(__file__).parents[2] / "fixtures" / "real"
DERIVED = Path(__file__).parents[2] / "fixtures" / "derived"


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-c", "from gpuonboard.cli import main; main()", "facts", *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    ("name", "kind"),
    [(p.name, None) for p in sorted(REAL.iterdir()) if p.name != "SOURCES.md"],
)
def test_every_real_fixture_is_recognised(name: str, kind: None) -> None:
    text = (REAL / name).read_text()
    if name.startswith(("collect_env__", "sglang-check_env__")):
        # (a report of several outputs, read as each of them: api/collect_env.py)
        assert looks_like_collect_env(text)
        return
    expected = {
        # first prefix that matches wins: the longer nvidia-smi-* prefixes before "nvidia-smi"
        "part-of-nvidia-smi": None,  # a part naming no GPU set (a Processes table alone, -q lines): refused
        "nvidia-smi-topo": "nvidia_topo",
        "nvidia-smi-nvlink-g": None,  # NVML's refusal of the link counters: refused naming it
        "nvidia-container-cli-info": None,  # the Container Toolkit's view: named in a note, not judged
        "talosctl-dmesg": "kernel_log",  # Talos Linux's kernel log
        "nvidia-smi-nvlink-e": "nvidia_nvlink_errors",
        "nvidia-smi-nvlink": "nvidia_nvlink",
        "nvidia-smi-L-per-pod__": None,  # pods' listings below their names: refused saying so
        "nvidia-smi-L__": "nvidia_smi_list",
        "nvidia-smi-query-gpu-sampler": None,
        # a CSV of one field no rule reads: named in a note, not judged (api/unjudged.py)
        "nvidia-smi-query-gpu__compute-cap-only": None,
        "nvidia-smi-query-gpu__fan-speed-noheader": None,  # gpu_benchmark's headerless sampler log
        "nvidia-smi-query-gpu__noheader-among": None,  # a miner's headerless CSV: refused saying so
        "nvidia-smi-usage-error": None,  # its refusal of its own command line: refused, no failed nvidia-smi
        "nvidia-smi-mig-lci": None,  # another operation's refusal: refused, no failed nvidia-smi
        # (round 36) a GPU reset's refusal: named, a note beside others (api/smi_refusals.py); gpustat's
        # lines: refused naming gpustat (api/saved_forms.py)
        "nvidia-smi-gpu-reset__": None,
        "gpustat": None,
        "nvidia-smi-mig-lgip": None,  # a MIG profile list: refused naming it (facts/nvidia_smi/mig_lists.py)
        "nvidia-smi-dmon-": None,  # a dmon sample: refused naming it (facts/nvidia_smi/monitor.py)
        "nvidia-smi-pmon-": None,  # a pmon sample: refused naming it
        "nvidia-smi": "nvidia_smi",
        "lscpu-line-breaks-lost": None,  # a page that ran its fields together: refused naming it
        "lscpu-numa-section-only": None,  # lscpu's NUMA section alone: refused naming the whole lscpu
        "lscpu-C__": None,  # lscpu's cache table: refused naming it, no CPU count (round 37)
        "lscpu-extended-modelname__": None,  # lscpu -e of chosen columns: refused naming it (round 39)
        "lscpu": "lscpu",
        "proc-cpuinfo__armv7": None,  # 32-bit ARM's form: refused naming it (saved_forms.uncounted_cpuinfo)
        "proc-cpuinfo__ibm-z": None,  # IBM Z's form: refused naming it
        "proc-cpuinfo": "lscpu",  # (`cat /proc/cpuinfo`: read as the CPUs, cores and sockets it gives)
        "free": "free",
        "meminfo": "free",
        # /proc/meminfo lines without MemTotal (a grep, a paste): refused saying so (round 32)
        "proc-meminfo-no-memtotal": None,  # (`cat /proc/meminfo`: read as the RAM it gives, exact KiB)
        # df's own stderr lines (`/bin/df: ...`) above its table: read once split back to its
        # stderr (api/test_offline_df_unread.py), as a saved file is
        "df-alP__rhel6-satellite__bin-df": None,
        "df-hT-grep": None,  # grep dropped df's header: read under its copied command only
        "df-fr-h": "df",  # French df: read since round 24 (data/df_labels.yml)
        "df-h__it-it": None,  # Italian df: refused, naming LC_ALL=C
        "df-h__vda3-99g-root__mail-quoted__copied-command__header-split": None,  # header a paste broke
        "df-h__k3s-node": None,  # rows with no header line (the paste's top cut off): refused
        "df-h__drone-ci-log-view": None,  # a CI log view's gutter between its lines: api/viewer_lines.py
        "df-h": "df",
        "df__alpine-2.7": "df",
        "df-ah": "df",
        "df-TH": "df",
        "df-P-B1": "df",
        "df-PT": "df",
        "df-i": "df",  # (`df -i`: recognised as df, then refused: it lists no sizes)
        "df__": "df",  # plain `df`
        # lsblk's own warnings above its table: the same (api/test_offline_lsblk_table.py)
        "lsblk__debian-8-loop-root__dm-failed": None,
        "lsblk__vm-sda-root-timeshift_nvme0n1p1-3.5t-no-mountpoint__copied-command": None,  # (`$ lsblk`)
        "lsblk": "lsblk",
        "nvcc": "nvcc",
        "nproc": None,  # a bare number; only the test-host profiles replay it
        "cpuinfo-grep-c": None,  # a bare number (`grep -c ^processor`); tests put its command before it
        "cpuset-cpus": None,  # a bare CPU list (`tail` of the file); tests put its file's name before it
        "docker-info": "docker_info",
        "docker-version": "docker_version",  # (its own kind, read beside a docker info: api/shown.py)
        "iperf3": "iperf3",
        # (round 36: the mail's `numactl --hardware` line above it; read below it, test_host_readers_r36)
        "numactl-H__powerkvm-3node-200cpu-memoryless__cpu-lists-wrapped-by-mail": None,
        # (round 39: a poster's heading above it; read below it, api/test_heading_above_kinds_r39.py)
        "numactl-H__2x-opteron-6272-4node-127.98gib__markdown-heading-above": None,
        "numactl-H": "numactl",  # (shown, not judged)
        "ibdev2netdev": "ibdev2netdev",  # (shown, not judged: its Up/Down is the net device's)
        "ibv_devinfo": "rdma_ports",
        "ib-sysfs-grep": None,  # `grep .` of the port files: read by its form (api/ib_sysfs_files.py)
        "ib-sysfs": "rdma_ports",
        "ibstatus": "rdma_ports",
        "ibstat": "rdma_ports",
        # a reader's refusal alone: no log's content, read as the probe that could read none
        # (offline._saved_output; steps/checks/test_blocked_views.py)
        "dmesg__refused": None,
        # one device's AER lines without stamps: one kind of kernel line, as a grep keeps (review BBB):
        # refused (host_hw_errors reads it in steps/checks/test_host_errors.py)
        "dmesg__pcieport-aer-fatal-root-port": None,
        "journalctl__refused": None,
        # a journal of other programs' lines only, whatever they quote (a dmesg-like stamp): no kernel log
        "journalctl-b__bumblebeed": None,
        # sudo's own `sudo: nvidia-smi: command not found` (its secure_path): refused, no output of the box
        "sudo__": None,
        # (round 35) journals of no kernel line: refused saying so, naming their NVIDIA failures
        # (api/journal_refusal.py); mcelog's records: read as the machine-check lines they are
        # (facts/mcelog.py); a grep of fabric manager logs: refused naming it; a README's excerpt
        # of a -q, a vgpu listing and a dmesg: its -q's kind; a simulator's banner: refused
        "journalctl-b-1-p3__": None,
        "journalctl-u-nvidia-persistenced__": None,
        # (round 39: the fabric manager's journal, refused naming it and its cause: api/journal_refusal.py)
        "journalctl-u-nvidia-fabricmanager__": None,
        # (round 38) a syslog of the daemon's own lines, no `[pid]` in its tag: refused as its journal
        "syslog__nvidia-persistenced": None,
        "mcelog__": "kernel_log",
        "fabricmanager-log-grep": None,
        "readme-excerpt__": "nvidia_smi",
        "session__vgpu-simulator": None,
        "session__lscpu-then-lscpu-caches": "lscpu",  # (round 37: its first output, lscpu)
        "dmesg": "kernel_log",
        # kern.log / syslog excerpts of host hardware errors (EDAC, machine checks): host_hw_errors
        "kern-log__": "kernel_log",
        "syslog__edac": "kernel_log",
        "journal-syslog__": "kernel_log",  # (round 38: a syslog of one AER event, nbfc #181)
        "syslog__bk-": "kernel_log",  # (round 38: a forum's syslog quote with `-bk-` break lines)
        "notes-md__": "kernel_log",  # (round 38: log lines in a Markdown note's list item)
        "syslog__apei": "kernel_log",
        "journalctl__no-entries": None,  # (an empty kernel journal: read apart, as the refusals are)
        "journalctl-k__": "kernel_log",
        "journalctl-k-no-hostname__": "kernel_log",  # (round 36: no host column)
        # (a `-p err` journal of several programs, its typed command above it; round 35)
        "journalctl-p-err__": "kernel_log",
        "journalctl-kernel-prefix__": "kernel_log",  # (a journal block with only its ` kernel:` heads)
        "journalctl__gpu-lost": "kernel_log",
        "journalctl__pve-aer": "kernel_log",
        "journalctl__root-port-aer": "kernel_log",  # (round 37: a root port's fatal AER, a live box's too)
        # an author's excerpt of kernel lines (a monitor's CSV row above one, a wrapped grep's): its
        # name kept out of the dmesg inventories (test_joined_log, test_kernel_log_cut_r9/r10)
        # (round 36: its poster's comment and command lines above it: read under them, as a saved
        # file is, api/test_offline_comment_above_command_r36.py)
        "log-excerpt__dmesg-grep-xid79__copied-command-under-poster-comments": None,
        # (round 37: a mail's `> `-quoted guest log, read as the kernel log its file name says; its
        # quote marks keep its content from being detected as one)
        "log-excerpt__mail-quoted-guest-dmesg-xid119": None,
        "log-excerpt__": "kernel_log",
        "journalctl__zh-cn": "kernel_log",
        "syslogd-wall__": "kernel_log",  # (syslogd's wall broadcasts of kernel lines)
        # a tool's report quoting kernel lines: read as a log whose silence proves nothing
        "gpud-scan__": "kernel_log",
        # a /var/log/messages excerpt (its name kept out of the chat-joined inventory, test_joined_log)
        "var-log-messages__": "kernel_log",
        "kubectl-describe-node": None,  # a node's condition rows: refused naming them
        "fabricmanager-log__": None,  # nv-fabricmanager's own log: refused naming it (api/fabric_log.py)
        # a watchdog's log quoting nvidia-smi's failure: its record, noted (api/test_failure_record_r34.py)
        "nvoc-tempcontrol-log__": None,
        # `systemctl status nvidia-fabricmanager`: the service's state (test_fabric_manager_status_r34)
        "systemctl-status-nvidia-fabricmanager__": "fabric_manager",
        "unstamped-kernel-lines__": None,  # two kinds of kernel line without stamps: refused
        # (round 40) a gpu_burn run, rasdaemon's error counts, a mcelog unit's status and journal:
        # refused naming them (test_host_tool_outputs_r40)
        "gpu-burn__": None,
        "ras-mc-ctl-summary__": None,
        "systemctl-status-mcelog__": None,
        "podman-info": "podman_info",  # (shown, not judged)
        # the driver's version file: read by its form (facts/driver_module.py, api/saved_forms.py)
        "proc-driver-nvidia-version__": None,
        "query-gpu-csv__": "nvidia_smi",  # (a --query-gpu CSV of undotted fields: round 30)
        "query-compute-apps-csv__": None,  # processes, not GPUs: a note naming the query (LLL)
        # top's summary: its Mem total read as free's (round 37, m37e 06; refused naming it in round 30)
        "top-summary-mem-swap__": "free",
        # a script's outputs under its own `--- CPU ---` headings: cut there (test_script_blocks_r34)
        # (round 35: lscpu's lines, a blank line, free: the whole text's first output is lscpu)
        "script-blocks__lscpu-lines+free": "lscpu",
        "script-blocks__date-uname-lscpu-meminfo": "lscpu",  # (round 36: headings with no blank above)
        "script-blocks__lscpu-then-free-h-glued": "lscpu",  # (round 37: free glued under lscpu)
        "script-blocks__": "nvidia_smi",
        # (round 37: a project's environment-check script, its platform line then nvidia-smi's table)
        "check-env__": "nvidia_smi",
        "nccl-tests": None,  # an all-reduce log the prove step reads (steps/prove), no acceptance output
        "top-b": "free",  # top's memory lines: no free's (facts/test_memory.py), read as its kind (round 37)
        "report-sh__nvidia-smi-topo": "nvidia_topo",  # a report's topo -m first (facts/test_topo.py)
        # a saved session under its prompts (api/test_transcript.py): read command by command; its
        # whole text detects as the nvidia-smi output it holds
        # a service's journal and systemctl's failed job: no output read, refused naming both
        "session__systemctl-restart-fabricmanager": None,
        # (round 35: `#ibdev2netdev`'s lines then `#ibswitches`': no one output; read part by part)
        "session__hash-glued-prompts__": None,
        "session__zsh-prompts__numactl-H-4node-then-lscpu": "lscpu",  # (round 36: no nvidia-smi in it)
        # (round 36: `ibdev2netdev` then `rdma link` typed without prompts, `~# lspci` then `~# rdma
        # link`: no one output, read part by part; a session whose first output is free's)
        "session__typed-no-prompts__": None,
        "session__tilde-hash-prompts__": None,
        "session__bash-gt-prompt__free-h": "free",
        # (round 37: a harness's one-line record of nvidia-smi's exit code and stdout: read once
        # normalised, the output taken off its line, api/exit_labelled.py)
        "session__harness-record-": None,
        # (round 37: `sudo dmesg | grep error` then `| grep -i NVRM`: no nvidia-smi in it, the log's lines)
        "session__two-dmesg-greps": "kernel_log",
        # (round 38: a `> `-quoted session, `$ srun -p a64fx lscpu`: read part by part)
        "session__srun-": None,
        "session__cat-memory-max-": None,  # (round 38: a cgroup file's value, read by its form)
        "session__lscpu-freebsd-": "lscpu",  # (round 38: a BSD lscpu under its prompt)
        "session__pouch-run-": "free",  # (round 38: no nvidia-smi in it; read part by part)
        "session__lxc-list-then-lxc-exec": "free",  # (round 38: no nvidia-smi in it; free's is the output)
        # (round 39: a host's free, then the container it enters: free's; two lscpu forms not read,
        # and numbered steps: read as a session, no one kind)
        "session__free-m-host-then-lxc-attach": "free",
        "session__lscpu-e-then-lscpu-p": None,
        "session__numbered-steps": None,
        # (round 40: a Ray container's shell whose nvidia-smi failed, then the host's login; a
        # container whose nvidia-smi is missing, then a driver's information file: no table)
        "session__ray-attach-container-": None,
        "session__nvidia-smi-command-not-found-then-proc-driver": None,
        "session__": "nvidia_smi",
        # (round 37: an `lspci -nn` listing and `systemd-detect-virt`'s word: no output read, named in
        # a note; no Xid or NVLink row says they may hold one, api/test_sessions_r37.py)
        "lspci-nn__": None,
        "systemd-detect-virt__": None,
        # `uname -a` under its copied prompt: read by its form as the kernel release (api/saved_probe.py)
        "uname-a__": None,
        # (round 39: DCGM's listing and diagnostics, accelerate env's report: refused naming them;
        # vmstat -s's and top's graph-mode memory lines: free's)
        "dcgmi-": None,
        "accelerate-env__": None,
        "vmstat-s__": "free",
        "top-graph-mode__": "free",
        # (round 40: a wall-clock journal of a boot's first second; NVML's failure as inline code)
        "journal__": "kernel_log",
        "journalctl-b-1-grep-tail__": "kernel_log",  # (round 40: one earlier boot's grep, read)
        "nvml-failure__": "nvidia_smi",
    }
    want = next(v for k, v in expected.items() if name.startswith(k))
    if (
        "__prompt__" in name or "__gt-prompt__" in name
    ):  # (round 37: under its own prompt line, read once it is taken off)
        from gpuonboard.api.saved_text import strip_prompt

        text = strip_prompt(text)
    assert detect_kind(text) == want


# (real outputs saved with their command line above them, named otherwise)
_SAVED_WITH_COMMAND = {
    "ibstat__mlx4-qdr-40g-1port-active__prompt-line-then-ca-line-one-blank-in__fedora-ib-guide.txt",
    "numactl-H__powerkvm-3node-200cpu-memoryless__cpu-lists-wrapped-by-mail__linux-mm-2014.txt",
    "journalctl-u-nvidia-persistenced__failed-to-query-devices-first-char-cut__rocky-615-hami-notes.txt",
    "journalctl-b-1-p3__modules-load-nvidia-drm-persistenced-pager-cut__cs-laptop-blog.txt",
    "fabricmanager-log-grep-fatal-A11__gpu-nvl-fatal-error-gpuguid__gb200-rack-runbook.txt",
    "systemctl-status-nvidia-fabricmanager__active-running__b300-hgx-dell__prompt-and-pager-line"
    "__kr-bringup-report.txt",
    "nvidia-smi__b200__1gpu__driver580.95.05__vm-passthrough__lines-left-out-by-hand__ubicloud-blog.txt",
    # (round 37: its root shell's `# cat /var/log/messages | grep fail` line above it)
    "dmesg-syslog__grep-fail-bar1-failed-to-assign-rminitadapter-0x24__esxi-debian11-vm__zh-notes.txt",
    "nvidia-smi__gb200__1gpu__driver580.126.20__kubectl-logs-pod__whole-table__gang-scheduling-report.txt",
    "nvidia-smi__quadro-p1000__1gpu__driver410.78__docker-run-prompts__cut-after-gpu0-first-line__tensorflow-28171.txt",
    "nvidia-smi__geforce-name-cut__1gpu-12288mib__driver526.47__windows-wddm__prompt-glyph__cut-in-gpu0-compute-mode"
    "__wsl-9099.txt",
    # (round 39: its root shell's `# lscpu --extended=MODELNAME` line above it)
    # (round 39: an issue template's label line naming its command in inline code, a copied command)
    "nvidia-smi__rtx4090-535.129.03__template-checkbox-label-kubectl-exec-driver-ctr-indented-fence-CUT"
    "__gpu-operator-607.txt",
    # (round 39: a miner's issue with the step `1. nvidia-smi` above its CSV: a numbered step's command)
    "nvidia-smi-query-gpu__noheader-among-miner-lines__8x-rtx-a4000__rainbowminer-1796.txt",
    "lscpu-extended-modelname__snapdragon-7-cpus__hash-prompt-poster-comment__util-linux-3062.txt",
    # (round 40: the poster's sentence naming its command in double quotes above the table)
    "nvidia-smi__geforce-gt1030-525.85.12__prose-double-quoted-docker-exec-label-CUT-in-processes-header"
    "__frigate-5483.txt",
    # (round 40: its label line `` `nvidia-smi` output : `` above the fenced table)
    "nvidia-smi__geforce-rtx-4080__1gpu__driver551.61__windows-wddm__display-on-1620mib__fenced-cut-at-gpu-border"
    "__nerfstudio-2930.txt",
    # (round 40: its fence glued to the `[0741] cuser1@cgpu-1 ~$ singularity exec ...` prompt line)
    "nvidia-smi__singularity-home-pwd-bind-cut-after-gpu2__gtx1080ti-396.26__singularity-1548.txt",
    # (round 40: its label line `nvidia-smi result:` above the inline-code failure)
    "nvml-failure__blocked-by-os-inline-code-backticks-across-lines-under-prose__wsl2-rtx3080__wsl-7627.txt",
}


def test_no_real_output_loses_its_first_line_as_a_command() -> None:
    """strip_prompt drops a first line that is a prompt and command or the bare command pasted
    above the output (`nvidia-smi -L`): no real output's own first line reads as one."""
    from gpuonboard.api.saved_text import strip_prompt

    for path in sorted(REAL.iterdir()):
        if (
            "copied-command" in path.name
            or "__prompt__" in path.name
            or "-prompt__" in path.name  # (round 37: `__conda-prompt__`, `__pod-prompt__`)
            or path.name.startswith("session__")
            or path.name in _SAVED_WITH_COMMAND
        ):
            continue  # (saved with its prompt and command: those lines are dropped, by design)
        text = path.read_text()
        first = next(line for line in text.splitlines() if line.strip())
        assert next(line for line in strip_prompt(text).splitlines() if line.strip()) == first, path.name


def test_vendor_outputs_dir_judged_against_an_order(tmp_path: Path) -> None:
    outputs = tmp_path / "from-vendor"
    outputs.mkdir()
    shutil.copy(DERIVED / "nvidia-smi-q-x__a100-sxm4-80gb__4gpu__derived.xml", outputs / "smi.xml")
    shutil.copy(REAL / "nvidia-smi-topo-m__h200__8gpu-10nic.txt", outputs / "topo.txt")
    # (named for its flag: as `free.txt`, its 2017300 may be `free -m`'s MiB, which 512 GB passes)
    shutil.copy(REAL / "free__ubuntu-18.04-vm.txt", outputs / "free-k.txt")
    order = tmp_path / "order.yml"
    order.write_text("order:\n  gpu_model: A100 80GB SXM\n  gpu_count: 8\n  ram: 512GB\n")
    r = cli(tmp_path, str(outputs), "--order", str(order), "--json")
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    rules = {x["name"]: x for x in doc["rules"]}
    assert rules["gpu_count"]["actual"] == "4 (MIG on: 16 slices)" and rules["gpu_count"]["verdict"] == "fail"
    assert rules["ram"]["verdict"] == "fail" and rules["gpu_model"]["verdict"] == "pass"
    assert doc["facts"]["summary"]["gpu_count"] == 4
    assert doc["facts"]["gpu"]["gpus"][0]["name"] == "NVIDIA A100-SXM4-80GB"
    assert doc["facts"]["topology"]["gpus"][:2] == ["GPU0", "GPU1"]


def test_health_rules_without_an_order_and_table_output(tmp_path: Path) -> None:
    src = REAL / "nvidia-smi-q__a10__1gpu__driver535.129.03.txt"
    r = cli(tmp_path, str(src))
    assert r.returncode == 1
    assert "memory_repair" in r.stdout and "FAIL" in r.stdout


def test_unrecognised_or_missing_files_are_one_sentence(tmp_path: Path) -> None:
    junk = tmp_path / "notes.txt"
    junk.write_text("hello from the vendor\n")
    r = cli(tmp_path, str(junk))
    assert r.returncode == 2
    assert r.stderr.startswith(f"error: {junk}: not a recognised command output")
    assert len(r.stderr.strip().splitlines()) == 1
    r = cli(tmp_path, str(tmp_path / "nope.xml"))
    assert r.returncode == 2
    assert (
        r.stderr.strip()
        == f"error: {tmp_path / 'nope.xml'}: cannot read this file (No such file or directory)."
    )
    r = cli(tmp_path)  # Invoke's own parser answers a missing positional argument
    assert r.returncode != 0 and "did not receive required positional arguments: 'paths'" in r.stderr


def test_saved_free_b_is_read_as_bytes(tmp_path: Path) -> None:
    """`free -b` saved for `gpuonboard facts`: by its name, or by a total no box has in KiB."""
    from gpuonboard.facts.memory import free_as_kib, free_unit, parse_free

    text = (REAL / "free-b__h200-vm.txt").read_text()
    assert free_unit("free-b__h200-vm.txt", text) == 1 == free_unit("out.txt", text)
    small = (REAL / "free__ubuntu-18.04-vm.txt").read_text()
    assert free_unit("free.txt", small) == 1024 and free_unit("free -b.txt", small) == 1
    kib = parse_free(free_as_kib("out.txt", text))
    assert (kib.total_bytes, kib.available_bytes, kib.swap_total_bytes) == (135148564480, 134617243648, 0)
    outputs = tmp_path / "saved"
    outputs.mkdir()
    shutil.copy(REAL / "free-b__h200-vm.txt", outputs / "mem.txt")
    r = cli(tmp_path, str(outputs), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["facts"]["summary"]["ram_bytes"] == 135148564480


def test_saved_free_m_is_converted(tmp_path: Path) -> None:
    """`free -m` saved for `gpuonboard facts`: read in MiB (it was refused), named or not."""
    kib = (DERIVED / "free-k__h200-vm__derived.txt").read_text()
    import re

    mib = re.sub(r"(?m)(?<=\s)\d+(?=\s|$)", lambda m: str(int(m.group()) // 1024), kib)  # free -m of it
    for name in ("free -m.txt", "mem.txt"):
        outputs = tmp_path / name.replace(" ", "_")
        outputs.mkdir()
        (outputs / name).write_text(mib)
        r = cli(tmp_path, str(outputs / name), "--json")
        assert r.returncode == 0, r.stdout + r.stderr
        total = json.loads(r.stdout)["facts"]["memory"]["total_bytes"]
        assert abs(total - 135148564480) < 2**20, total


# `gpuonboard facts` on a run's own evidence, `reports/<run>/raw/<host>/`: it is recognised by
# the run's summary.json (whose `raw` records name the files in that folder), each file is read
# as the probe the run recorded (with its exit code), and a probe offline judging does not read
# is skipped with one note; the same files in a user's own folder keep today's error. Runs are
# written by the real api.write_reports from real captured outputs.

RUN = "20261201-000000-aaaa"
CONTAINER_PROBE = "container:5c59f674b1"  # a probe name that becomes a hashed file name


def _outputs() -> dict[str, ProbeOutput]:
    def real(name: str) -> str:
        return (REAL / name).read_text()

    return {
        "nvidia_smi": ProbeOutput(real("nvidia-smi-q-x__h200__1gpu__driver580.159.04.xml"), "", 0),
        "lscpu": ProbeOutput(real("lscpu__intel-xeon-16vcpu__h200-vm.txt"), "", 0),
        "free": ProbeOutput(real("free__ubuntu-18.04-vm.txt"), "", 0),  # the probe runs `free -k`
        "nproc": ProbeOutput(real("nproc__h200-vm.txt"), "", 0),
        "nvidia_topo": ProbeOutput("", "", 127),  # recorded, failed: not judged as a topology
        CONTAINER_PROBE: ProbeOutput("sha256:0123abcd\n", "", 0),
    }


def _write_run(reports: Path, host: str = "gpu-1") -> Path:
    """A run's reports as `check` writes them; the host's raw folder."""
    meta = {
        **dict.fromkeys(("playbook_path", "inventory", "started", "finished"), "-"),
        **{"run_id": RUN, "playbook": "acceptance", "check_mode": False, "duration": 1.0, "exit_code": 0},
    }
    outputs = _outputs()
    facts = dataclasses.replace(parse_facts(outputs), raw=outputs)  # (only these probes' files)
    result = HostResult(Host(name=host, address="10.0.0.1"), "ok", "1 ok", facts=facts)
    out = api.write_reports(conclude([result]), meta, reports, RUN)
    (folder,) = (out / "raw").iterdir()
    return folder


def test_a_runs_raw_folder_is_recognised_by_its_summary(tmp_path: Path) -> None:
    folder = _write_run(tmp_path / "reports")
    manifest = run_folder.raw_dir_manifest(folder)
    assert manifest is not None
    assert {probe for probe, _code in manifest.values()} == set(_outputs())
    assert manifest["nvidia_smi.txt"] == ("nvidia_smi", 0)
    assert manifest["nvidia_topo.txt"] == ("nvidia_topo", 127)
    assert sorted(manifest) == sorted(f.name for f in folder.iterdir())
    # through the `latest` link, as a user types it
    assert run_folder.raw_dir_manifest(tmp_path / "reports" / "latest" / "raw" / folder.name) == manifest

    # the same files in a user's own folder, or under a `raw/` with no run of ours beside it
    own = tmp_path / "vendor" / "raw" / folder.name
    shutil.copytree(folder, own)
    assert run_folder.raw_dir_manifest(own) is None
    (own.parent.parent / "summary.json").write_text(json.dumps({"schema": "other/1", "hosts": []}))
    assert run_folder.raw_dir_manifest(own) is None
    (own.parent.parent / "summary.json").write_text("{not json")
    assert run_folder.raw_dir_manifest(own) is None
    # another host's folder of the same run is not this one's
    other = folder.parent / "gpu-2"
    other.mkdir()
    assert run_folder.raw_dir_manifest(other) is None


def test_a_runs_raw_folder_is_judged_and_an_unread_probe_skipped_with_one_note(tmp_path: Path) -> None:
    folder = _write_run(tmp_path / "reports")
    notes: list[str] = []
    raw = offline.load_outputs([str(folder)], notes)
    assert sorted(raw) == ["free", "lscpu", "nproc", "nvidia_smi", "nvidia_topo"]
    assert raw["nvidia_topo"].exit_code == 127  # as the live run read it: failed, not empty text
    assert notes == [
        f"{folder}: 1 saved output of this gpuonboard run skipped, offline judging does not read it"
        f" ({CONTAINER_PROBE})."
    ]
    facts = parse_facts(raw)
    assert facts.gpu is not None and len(facts.gpu.gpus) == 1
    assert facts.nproc == 16 and facts.topology is None


def test_the_same_files_in_a_users_folder_keep_the_error(tmp_path: Path) -> None:
    """A run's files copied to a folder of the user's own are read as saved files: the container
    probe's output, no output this tool reads, is one missing answer, a note (round 32: it refused
    the folder), and so is the run's empty `nvidia_topo.txt` (round 35: a file among several
    that is refused is a note, the others judged; it refused the folder)."""
    folder = _write_run(tmp_path / "reports")
    own = tmp_path / "from-vendor"
    shutil.copytree(folder, own)
    odd = sorted(f.name for f in own.iterdir())[0]  # the container probe's hashed name sorts first
    assert odd.startswith("container_")
    notes: list[str] = []
    offline.load_outputs([str(own)], notes)
    assert any(n.startswith(f"{own / 'nvidia_topo.txt'}: an empty file") for n in notes), notes
    (own / "nvidia_topo.txt").unlink()  # (the container probe's file alone is a note)
    notes = []
    offline.load_outputs([str(own)], notes)
    assert any(n.startswith(f"{own / odd}: not a recognised command output") for n in notes), notes


def test_a_run_folder_or_its_raw_folder_names_the_host_folder_to_give(tmp_path: Path) -> None:
    folder = _write_run(tmp_path / "reports")
    run = tmp_path / "reports" / RUN
    for given, example in ((run, run / "raw" / "gpu-1"), (run / "raw", run / "raw" / "gpu-1")):
        with pytest.raises(UsageError) as err:
            offline.load_outputs([str(given)])
        assert str(err.value) == (
            f"{given}: this is a gpuonboard run's folder, not one box's saved outputs; give one host's"
            f" folder of it (its hosts: gpu-1), e.g. {example}/"
        )
    assert folder == run / "raw" / "gpu-1"


# `gpuonboard facts`: empty folders, damaged or failed outputs, and outputs it recognised but
# did not show, judged through the real CLI on real captured outputs.

H200_XML = REAL / "nvidia-smi-q-x__h200__1gpu__driver580.159.04.xml"


def test_an_empty_folder_is_a_usage_error_not_a_pass(tmp_path: Path) -> None:
    """A folder with nothing in it judged nothing and exited 0 with an empty table."""
    folder = tmp_path / "from-vendor"
    folder.mkdir()
    (folder / ".DS_Store").write_text("x")  # hidden files are left out, as before
    r = cli(tmp_path, str(folder))
    assert r.returncode == 2, r.stdout
    assert (
        r.stderr.strip() == f"error: {folder}: no saved command output in this directory (it holds no files)."
    )


def test_a_cut_short_nvidia_smi_xml_names_the_file_exit_2(tmp_path: Path) -> None:
    """A truncated `nvidia-smi -q -x` (a mail client cut it) passed: exit 0, gpu_count 0, a
    warning line; cut before any GPU's record it is a bad file, not a box without GPUs. (Since
    round 28 a record cut inside is read up to the cut, as a cut `-q` is: the next test.)"""
    cut = tmp_path / "smi.xml"
    data = H200_XML.read_bytes()
    cut.write_bytes(data[: data.index(b"<gpu id=") + 20])
    r = cli(tmp_path, str(cut))
    assert r.returncode == 2, r.stdout
    # cut mid-record: named an incomplete probe (not "XML not parseable"), still a bad file
    assert r.stderr.strip() == (
        f"error: {cut}: this nvidia-smi XML cannot be read (the nvidia-smi -q -x output ends before"
        " </nvidia_smi_log> (mid-record): incomplete probe, rerun); the file is cut short:"
        " save `nvidia-smi -q -x` again."
    )


def test_a_nvidia_smi_xml_cut_inside_its_record_is_read_up_to_the_cut(tmp_path: Path) -> None:
    """Edit: the real H200 `-q -x` cut at byte 3,000, inside its record's <pci> (the name and
    UUID closed above it). Before: refused, exit 2, "this nvidia-smi XML cannot be read" though
    its name was read whole. Now: read as a cut `-q` is, an incomplete probe said as one, the
    GPU's name and the driver judged (Attached GPUs 1, one record)."""
    cut = tmp_path / "smi.xml"
    cut.write_bytes(H200_XML.read_bytes()[:3000])
    r = cli(tmp_path, str(cut))
    assert r.returncode == 0, r.stderr
    assert "ends before </nvidia_smi_log> (mid-record)" in " ".join(r.stdout.split())
    assert "NVIDIA H200" in r.stdout


def test_nvidia_smi_that_failed_fails_without_an_order(tmp_path: Path) -> None:
    """What nvidia-smi prints on a box whose driver does not load passed with exit 0 when no order
    was given (`invoke facts vendor-outputs/`, the README's first example)."""
    failed = tmp_path / "nvidia-smi.txt"
    failed.write_text(
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that"
        " the latest NVIDIA driver is installed and running.\n\n"
    )
    r = cli(tmp_path, str(failed), "--json")
    assert r.returncode == 1, r.stdout + r.stderr
    rule = {c["name"]: c for c in json.loads(r.stdout)["rules"]}["nvidia_driver"]
    assert rule["verdict"] == "fail"
    # the driver's own words, not "answered but listed no GPU"
    assert rule["actual"].startswith("nvidia-smi failed (NVIDIA-SMI has failed because it couldn't"), rule
    # a good output gets the same rule, passing
    ok = cli(tmp_path, str(H200_XML), "--json")
    assert ok.returncode == 0, ok.stderr
    rule = {c["name"]: c for c in json.loads(ok.stdout)["rules"]}["nvidia_driver"]
    assert (rule["verdict"], rule["actual"]) == ("pass", "driver 580.159.04, CUDA 13.0")


def test_nvcc_is_shown_and_gpu_count_unknown_without_nvidia_smi(tmp_path: Path) -> None:
    """A saved `nvcc --version` was recognised and then shown nowhere; without an nvidia-smi
    output the table said `gpu_count 0`, as if the box had no GPU."""
    folder = tmp_path / "saved"
    folder.mkdir()
    shutil.copy(REAL / "nvcc-version__cuda-11.4__jetson-agx-xavier-aarch64.txt", folder / "nvcc.txt")
    shutil.copy(REAL / "free-b__h200-vm.txt", folder / "free-b.txt")
    r = cli(tmp_path, str(folder), "--json")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)["facts"]["summary"]
    assert summary["cuda_toolkit"] == "11.4.239"
    assert summary["gpu_count"] is None
    table = cli(tmp_path, str(folder))
    assert table.returncode == 0, table.stderr
    rows = {
        line.split("│")[1].strip(): line.split("│")[2].strip()
        for line in table.stdout.splitlines()
        if "│" in line
    }
    assert rows["cuda_toolkit"] == "11.4.239" and rows["gpu_count"] == "-"


def test_two_outputs_of_one_command_name_both_files(tmp_path: Path) -> None:
    """Two outputs of one nvidia-smi format (two -q -x files) cannot both be the box's: refused,
    both named."""
    other = REAL / "nvidia-smi-q-x__a100-sxm4-80gb__1of4gpu__driver535.54.03.xml"
    r = cli(tmp_path, f"{H200_XML},{other}")
    assert r.returncode == 2
    assert r.stderr.strip() == (
        f"error: {other}: a second nvidia-smi (`-q -x`, or its failure) output (the first is {H200_XML});"
        " this tool judges one output of each command, of one box at one time: pass only the one to"
        " judge (the latest, the box now), or run `invoke facts` on each file by itself."
    )


def test_two_nvidia_smi_formats_of_one_box_are_merged(tmp_path: Path) -> None:
    """-q -x and the plain table of one box answer together, merged as the live probe's formats:
    every field from the XML (the richer format), both formats named in the source."""
    table = REAL / "nvidia-smi__h200__1gpu__driver580.159.04.txt"
    r = cli(tmp_path, f"{H200_XML},{table}", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    gpu = out["facts"]["gpu"]
    assert (gpu["source"], gpu["complete"]) == ("xml+table", True)
    assert [(g["name"], g["provenance"]) for g in gpu["gpus"]] == [("NVIDIA H200", [])]
    rules = {c["name"]: c for c in out["rules"]}
    assert (rules["nvidia_driver"]["verdict"], rules["nvidia_driver"]["actual"]) == (
        "pass",
        "driver 580.159.04, CUDA 13.0",
    )


def test_a_huge_file_in_the_folder_is_one_missing_answer_never_read_whole(tmp_path: Path) -> None:
    """A file past the size bound in a saved folder refused the whole folder (exit 2), the H200's
    `-q -x` beside it unjudged. It is one file that cannot be read: named in a note with what to
    do, what it would have shown unverified, the other files judged (changed on purpose, round 31;
    docs/guides/offline.md). Named itself, it is still refused: the user asked for that file."""
    folder = tmp_path / "saved"
    folder.mkdir()
    shutil.copy(H200_XML, folder / "smi.xml")
    with (folder / "dataset.tar").open("wb") as f:
        f.truncate(130 * 2**20)  # sparse: 130 MiB of zeros (past the one bound for a text, 128 MiB)
    too_big = (
        f"{folder / 'dataset.tar'}: larger than 128 MiB, not a saved command output;"
        " leave it out of the files to judge."
    )
    order = tmp_path / "order.yml"
    order.write_text("order:\n  gpu_model: H200\n  gpu_count: 1\n  ram: 64GB\n")
    r = cli(tmp_path, str(folder), "--order", str(order), "--json")
    assert r.returncode == 0, r.stderr
    assert r.stderr.strip() == (
        f"note: {too_big} Not read: what it would have shown is unverified (one missing answer:"
        " the other files are judged)."
    )
    rules = {x["name"]: x["verdict"] for x in json.loads(r.stdout)["rules"]}
    assert (rules["gpu_model"], rules["gpu_count"], rules["ram"]) == ("pass", "pass", "unverified")
    r = cli(tmp_path, f"{folder / 'smi.xml'},{folder / 'dataset.tar'}")
    assert (r.returncode, r.stderr.strip()) == (2, f"error: {too_big}")
    (folder / "smi.xml").unlink()  # (a folder of nothing readable: nothing judged, refused)
    r = cli(tmp_path, str(folder))
    assert r.returncode == 2 and r.stderr.strip().endswith("No other output was given, so nothing is judged.")


def test_a_glob_skips_subfolders_as_a_folder_does(tmp_path: Path) -> None:
    folder = tmp_path / "saved"
    (folder / "old").mkdir(parents=True)
    shutil.copy(H200_XML, folder / "smi.xml")
    r = cli(tmp_path, "saved/*", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["facts"]["summary"]["gpu_count"] == 1


def test_facts_json_to_a_reader_that_left_exits_141_quietly(tmp_path: Path) -> None:
    """`facts X --json | head -1` said 'internal error (BrokenPipeError ...)' and exited 70."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        r = subprocess.run(
            [
                sys.executable,
                "-c",
                "from gpuonboard.cli import main; main()",
                "facts",
                str(H200_XML),
                "--json",
            ],
            stdout=write_end,
            stderr=subprocess.PIPE,
            timeout=60,
        )
    finally:
        os.close(write_end)
    assert (r.returncode, r.stderr.decode()) == (141, "")


def test_a_saved_nproc_is_read_by_its_file_name(tmp_path: Path) -> None:
    """`nproc` (what the live probe reads for the cores the login may use) prints a bare number:
    a file named nproc* is that; it made the whole directory an input error."""
    (tmp_path / "nproc.txt").write_text("12\n")
    r = cli(tmp_path, str(tmp_path / "nproc.txt"), "--json")
    assert r.returncode in (0, 1), r.stderr
    assert json.loads(r.stdout)["facts"]["nproc"] == 12
    (tmp_path / "count.txt").write_text("12\n")  # (a bare number under another name: no telling)
    assert cli(tmp_path, str(tmp_path / "count.txt")).returncode == 2


MIG_LCI = "nvidia-smi-mig-lci__insufficient-permissions__a100-node__hami-1044.txt"


def test_another_operations_refusal_is_no_failed_nvidia_smi(tmp_path: Path) -> None:
    """A real `nvidia-smi mig -lci` refused on an A100 node (HAMi issue #1044: "Failed to display
    compute instances: Insufficient Permissions"; its prompt line `[root@aio-node15 ~]# nvidia-smi
    mig -lci` put back above it here) was read as nvidia-smi that
    failed: `nvidia_driver` failed, "the login user may not open the NVIDIA device files", though
    only the listing of MIG compute instances was refused. It is refused now, alone or in a
    session, in one sentence naming what to save; so is the same refusal of `nvidia-smi -pm 1`
    (the capture's two lines replaced by `$ nvidia-smi -pm 1`, "Unable to set persistence mode for
    GPU 00000000:01:00.0: Insufficient Permissions" and "Terminating early due to previous
    errors.")."""
    text = "[root@aio-node15 ~]# nvidia-smi mig -lci\n" + (REAL / MIG_LCI).read_text()
    pm = (
        "$ nvidia-smi -pm 1\nUnable to set persistence mode for GPU 00000000:01:00.0: Insufficient"
        " Permissions\nTerminating early due to previous errors.\n"
    )
    for saved, said in (
        (text, "Failed to display compute instances: Insufficient Permissions"),
        (pm, "Unable to set persistence mode for GPU 00000000:01:00.0: Insufficient Permissions"),
    ):
        path = tmp_path / "smi.txt"
        path.write_text(saved)
        with pytest.raises(UsageError) as raised:
            offline.load_outputs([str(path)])
        assert str(raised.value) == (
            f"{path}: nvidia-smi's refusal of an operation other than its query of the GPUs (`{said}`),"
            " which does not say whether nvidia-smi reads them: save the plain `nvidia-smi` (or"
            " `nvidia-smi -q`) output of the box."
        )
    # in a session beside the box's own table, noted and not read: the table is judged as it reads
    table = (REAL / "nvidia-smi__a100-sxm4-40gb__1gpu__driver550.144.03.txt").read_text()
    path = tmp_path / "session.txt"
    path.write_text(f"{text}[root@aio-node15 ~]# nvidia-smi\n{table}")
    notes: list[str] = []
    facts = parse_facts(offline.load_outputs([str(path)], notes=notes))
    row = {c.name: c for c in offline.judge(facts, None)}["nvidia_driver"]
    assert row.verdict == "pass" and row.actual.startswith("driver 550.144.03")
    assert any("`nvidia-smi mig -lci`" in note for note in notes)


@pytest.mark.parametrize(
    "said",
    [
        "Failed to display compute instances: GPU is lost",
        "Unable to set persistence mode for GPU 00000000:01:00.0: GPU is lost",
        "Failed to get the device handle for GPU 0000:01:00.0: GPU is lost",
        "Failed to query GPU count: GPU is lost",
        "Failed to display compute instances: GPU requires reset",
        "Failed to display compute instances: Driver Not Loaded",
        "Failed to display compute instances: Unknown Error",
        "Failed to display compute instances: Timeout",
    ],
)
def test_a_state_error_another_operation_prints_is_a_failed_nvidia_smi(tmp_path: Path, said: str) -> None:
    """The real HAMi #1044 refusal with NVML's `Insufficient Permissions` replaced by a state
    error (or its words by another operation's, `-pm 1`'s, the device handle's, the GPU count's),
    `Terminating early due to previous errors.` below it, alone and in a session under `$ sudo
    nvidia-smi -pm 1` above a real lscpu: the box's state, which the query meets too, was read as
    another operation's refusal (refused; in the session "no nvidia-smi output was given"). Now
    nvidia_driver fails quoting the line."""
    assert "Insufficient Permissions" in (REAL / MIG_LCI).read_text()
    text = f"{said}\nTerminating early due to previous errors.\n"
    lscpu = (REAL / "lscpu__amd-epyc-9374f__2socket__rtx6000ada-server.txt").read_text()
    for name, saved in (
        ("smi.txt", text),
        ("session.txt", f"$ sudo nvidia-smi -pm 1\n{text}$ lscpu\n{lscpu}"),
    ):
        path = tmp_path / name
        path.write_text(saved)
        facts = parse_facts(offline.load_outputs([str(path)]))
        row = {c.name: c for c in offline.judge(facts, None)}["nvidia_driver"]
        assert row.verdict == "fail", (name, row.actual)
        assert said in row.actual, (name, row.actual)
