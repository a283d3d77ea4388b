"""The captures of the 2026-12 truth audit (new real outputs from public repositories and issues,
SOURCES in tests/fixtures/real/SOURCES.md, sections "Truth audit captures" and "..., round 2").

PARSED_RIGHT: the captures test_audit_captures.py checks value by value (we read them as a careful
human does). FINDINGS: the captures we read wrongly today, with the finding; they have no value
test yet (a test of today's output would pin a wrong value): fix the class of error, then move
the capture to PARSED_RIGHT with its values. The per-parser "every real capture is covered" tests
count both sets as covered.
"""

from __future__ import annotations

from pathlib import Path

from gpuonboard.api import offline
from gpuonboard.connection.gather import Facts, parse_facts

REAL = Path(__file__).parents[2] / "fixtures" / "real"


def read(name: str) -> str:
    """A real capture's text."""
    return (REAL / name).read_text()


def saved(*names: str) -> Facts:
    """Real captures judged offline together (`invoke facts FILE ...`): each kind detected from
    its content, prompts stripped."""
    return parse_facts(offline.load_outputs([str(REAL / n) for n in names]))


PARSED_RIGHT = frozenset(
    {
        "real/nvidia-smi__geforce-rtx-3090__1gpu__driver470.76__wsl-smi470.28__util-err__display-on.txt",
        "real/nvidia-smi-q__a10__1gpu__driver550.90.12__idle-sw-power-cap__gls.txt",
        "real/nvidia-smi__gh200-480gb__1gpu__driver550.127.05__gls.txt",
        "real/nvidia-smi-q__gh200-480gb__1gpu__driver550.127.05__dram-unc-1__power-limit-700of900__gls.txt",
        "real/nvidia-smi-q-x__rtx-pro-6000-blackwell-max-q__1gpu__driver590.44.01__telegraf.xml",
        "real/nvidia-smi__gb200__4gpu__driver580.126.09__openshift-blog.txt",
        "real/nvidia-smi__tesla-v100-sxm2-32gb__8gpu__driver460.32.03__inforom-corrupted-gpu7__azhpc.txt",
        "real/nvidia-smi__geforce-gtx-780-ti__2gpu__driver352.79__processes-not-supported.txt",
        "real/nvidia-smi-query-gpu__util-power-only__1gpu__k8s-pod-busy.csv",
        "real/df-fr-h__ubuntu-lvm__rst-indented.txt",
        "real/df-h__root-lvm-name-wrapped__e6400.txt",
        "real/df-hT-grep__nvme0n1-xfs-3.0t-ssd1__no-header__greatsql.txt",
        "real/nvidia-smi-q-elided__a100-sxm4-80gb__1of8gpu__driver510.73.08__remap-pending__no-banner.txt",
        "real/nvidia-smi-q-d-ecc-row-remapper-i__1of8gpu__driver550.90.07__remap-pending-annotated.txt",
        "real/df-TH__zh-cn__nfs4-19g-si__elided.txt",
        "real/nvidia-smi-q-x__tesla-k20m__1gpu__driver340.24__dtd-v6__icsw.xml",
        "real/nvidia-smi-q-x__rtx-pro-6000-blackwell__1gpu__driver580-trimmed__netdata.xml",
        "real/nvidia-smi__a100-sxm4-40gb__8gpu__driver450.102.04__mig-pending-gpu7__dgx-doc.txt",
        "real/nvidia-smi__geforce-rtx-2060__1gpu__driver442.50__windows-tcc-wddm.txt",
        "real/nvidia-smi__geforce-rtx-3050-4gb-laptop__1gpu__driver531.88__windows-tcc-wddm.txt",
        "real/nvidia-smi__geforce-rtx-2070-laptop__1gpu__driver440.100__name-cut.txt",
        "real/nvidia-smi__titan-v__1gpu__driver515.65.01.txt",
        "real/nvidia-smi__geforce-rtx-3070__1gpu__driver531.68__wsl-smi530.47.txt",
        "real/nvidia-smi__tesla-k20m__1gpu__driver361.93.02.txt",
        "real/nvidia-smi-q-x__a10g__1gpu__driver515.105.01__aws-passthrough.xml",
        "real/nvidia-smi-q-x__geforce-rtx-3060__1gpu__driver570.124.04.xml",
        "real/nvidia-smi-q-x__geforce-rtx-3080__1gpu__driver536.40.xml",
        "real/nvidia-smi-q-x__geforce-rtx-3080__1gpu__driver595.58.03__dtd-v13.xml",
        "real/nvidia-smi-q-x__geforce-rtx-3090__1gpu__driver525.147.05__power-limit-lowered.xml",
        "real/nvidia-smi-q-x__quadro-p2000__1gpu__driver525.125.06.xml",
        "real/nvidia-smi-q-x__quadro-p400__1gpu__driver418.43.xml",
        "real/nvidia-smi-query-gpu-nounits__geforce-rtx-2080-ti__1gpu__driver442.19__unknown-error-cell.csv",
        "real/nvidia-smi-topo-m__geforce-rtx-2080-super__1gpu__driver610.57.04__ansi-escapes.txt",
        "real/nvidia-smi-nvlink-s__geforce-rtx-2080-super__all-inactive__driver610.57.04.txt",
        "real/lscpu__power9-ppc64le__2socket-6numa__v100-traverse.txt",
        "real/ibv_devinfo__connectx3-mlx4__2hca-2of4-ports-down.txt",
        "real/ibv_devinfo-v__connectx3-mlx4__port-down-polling.txt",
        "real/dmesg-T__xid-79-unknown-pid__titan-v.txt",
        "real/df-PT__long-device-name-mapper__jc-generic.txt",
        "real/free-w__centos-7.7-vm.txt",
        "real/free-h__centos-7.7-vm.txt",
        "real/nvidia-smi-query-gpu__geforce-rtx-2080-super__1gpu__driver610.57.04__nvenc-load.csv",
        "edited/nvidia-smi__geforce-rtx-5070__1gpu__driver575.64.03__cuda-na__cut-both-ends__edited.txt",
        # fixed F1 (R610 table header, Windows Driver-Model column), F2/F3 (R610 -q versions,
        # nested power limits), F9 (pre-R331 MB cells)
        "real/nvidia-smi__geforce-rtx-2080-super__1gpu__driver610.57.04__kmd-version.txt",
        "real/nvidia-smi__geforce-rtx-2080-super__1gpu__driver610.62__windows-wddm.txt",
        "real/nvidia-smi-q__geforce-rtx-2080-super__1gpu__driver610.57.04__kmd-version.txt",
        "real/nvidia-smi-q__geforce-rtx-2080-super__1gpu__driver610.62__windows-wddm.txt",
        "edited/nvidia-smi__geforce-gtx-titan__3gpu__driver325.15__mb-units__cut-in-processes__edited.txt",
        # fixed F5 (placeholder name), F6 (NVRM faults without an Xid): value tests in
        # tests/unit/steps/checks/test_truth_audit_rules.py and tests/unit/facts/test_kernel_log_nvrm.py
        "real/nvidia-smi-q-x__geforce-gtx-1660__1gpu__driver418.43__graphics-device-name.xml",
        "real/dmesg__nvrm-fallen-off-bus-no-xid__driver570.158.01.txt",
        "real/dmesg-T__rminitadapter-failed-no-xid__titan-v.txt",
        # round 2 (values: test_audit_captures_r2.py); fixed R2-F1 (one CPU type's cores counted
        # of a GB10's two), R2-F2 (lscpu in another language), R2-F3 (a "Not Supported" memory
        # cell warned as a column not found)
        "real/lscpu__gb10-dgx-spark-cortex-x925-a725__aarch64-2-core-types.txt",
        "real/lscpu__zh-cn__i7-8550u__util-linux-nested.txt",
        "real/nvidia-smi__gb10__1gpu__driver580.95.05__memory-not-supported.txt",
        "real/lscpu__raspberry-pi-4b-cortex-a72__aarch64-clusters.txt",
        "real/free__gb10-dgx-spark__unified-memory.txt",
        "real/nvidia-smi__h100-80gb-hbm3-mig__1gpu-4mig__driver590.48.01__load.txt",
        "real/nvidia-smi-q__h100-80gb-hbm3-mig__1gpu-4mig__driver590.48.01__load.txt",
        "real/nvidia-smi-q__h200__1gpu__driver590.48.01__load.txt",
        "real/nvidia-smi-q__l40s__1gpu__driver595.80__nvenc-load.txt",
        "real/nvidia-smi-query-gpu__l40s__1gpu__driver595.80__nvenc-load.csv",
        "real/nvidia-smi-q__geforce-rtx-4080-super__1gpu__driver595.71.05__nvenc-load.txt",
        "real/nvidia-smi__geforce-rtx-4080-super__1gpu__driver595.71.05__idle.txt",
        "real/nvidia-smi-q__geforce-rtx-2080-super__1gpu__driver591.86__windows-wddm.txt",
        "real/nvidia-smi-q__geforce-rtx-4090__8gpu__driver535.154.05__3-idle-gen1.txt",
        "real/nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.183.01__power-brake-active.txt",
        "real/nvidia-smi-nvlink-s__h200__1gpu-18links__driver590.48.01.txt",
        "real/df__ubuntu-18.04-vm__snap-loops.txt",
        "real/df-h__centos-7.7-vm__lvm-root.txt",
        "real/free-h__ubuntu-18.04-vm.txt",
        "real/nvidia-smi-q__h200-mig__1gpu-5mig__driver590.48.01__load.txt",
        "real/nvidia-smi__geforce-rtx-2080-super__1gpu__driver591.86__windows-wddm-load.txt",
        # fixed R2-F4 (a GPU that needs a reset, logged without an Xid: data/nvrm_faults.yml)
        "real/dmesg-T__nv-err-reset-required-no-xid__gsp.txt",
        # round 3 (values: test_audit_captures_r3.py); fixed R3-F2 (a lost GPU's "for GPU1:
        # ADDR" line), R3-F3 (a no-sensor field's Unknown Error warned as a failing sensor),
        # R3-F4 (a `-q -d ECC` view's unnamed GPUs excused as non-data-centre models)
        "real/nvidia-smi__rtx-pro-6000-blackwell__4gpu-1-lost__driver610.57.04.txt",
        "real/nvidia-smi-q__geforce-rtx-4090__8gpu__driver535.154.05__addressing-mode-unknown-error.txt",
        "real/nvidia-smi-q-d-ecc__a100-pcie-40gb__2gpu__driver555.42.02.txt",
        "real/nvidia-smi-q__titan-v__1gpu__driver560.35.03.txt",
        "real/nvidia-smi-q__geforce-rtx-4090__8gpu__driver535.154.05__2-busy-6-gen1.txt",
        "real/nvidia-smi-q__geforce-rtx-4090__8gpu__driver535.154.05__2-busy-later.txt",
        "real/nvidia-smi__h100-pcie__2gpu__driver555.42.02.txt",
        "real/nvidia-smi__a100-pcie-40gb__2gpu__driver555.42.02.txt",
        "real/nvidia-smi-query-gpu__a100-pcie-40gb__2gpu__driver555.42.02.csv",
        "real/nvidia-smi-topo-m__h100-pcie__2gpu-nv12__driver555.42.02.txt",
        "real/nvidia-smi-nvlink-s__h100-pcie__2gpu-12of18-links__driver555.42.02.txt",
        "real/nvidia-smi-nvlink-s__a100-pcie-40gb__2gpu-all-inactive__driver555.42.02.txt",
        "real/lsblk-J-b__vm-22tib-virtio-root__gpud.json",
        "real/lsblk-J-b__1x-nvme-3.2tb__gpud.json",
        "real/lsblk-J-b__md-raid1-root__lvm-raid-4x-nvme__gpud.json",
        "real/lsblk-J__human-sizes__8x-nvme-lvm-kubelet__gpud.json",
        "real/lsblk-J__human-sizes__8x-nvme-md-raid0__gpud.json",
        # round 4 (values: test_audit_captures_r4.py); fixed R4-F1 (an Xid named as the cause by
        # a later Xid 45), R4-F2 (`nvidia-smi -L` lines joined by a paste, a lost `)`), R4-F3
        # (ibstat cut short by `ibpanic:` read as the whole listing)
        "real/dmesg-journalctl__xid-45-caused-by-previous-xid-149-145__driver590.48.01.txt",
        "real/dmesg-ctime__xid-13-109__peermem__quoted__gpud-readme.txt",
        "real/dmesg__xid-32-31__geforce-optimus__bumblebee.txt",
        "real/dmesg-kmsg__xid-149-netir-fatal__gb200-domain-0019__gpud.txt",
        "real/nvidia-smi-L__a100-sxm4-80gb__1gpu-7mig-1g.10gb__driver535.216.01__datadog.txt",
        "real/nvidia-smi-L__a100-80gb-pcie__1gpu-2mig-3g.40gb__driver530.30.02__lxc.txt",
        "real/nvidia-smi-L__a100-80gb-pcie__1gpu-1mig-2g.20gb__go-dcgm.txt",
        "real/nvidia-smi-L__geforce-rtx-2080-ti__4gpu__lines-joined-by-issue-form.txt",
        "real/nvidia-smi-L__geforce-rtx-2080-super__2gpu__lines-joined-by-comma__driver610.43.02.txt",
        "real/nvidia-smi-L__geforce-gtx-1660-ti__1gpu__closing-paren-lost__driver430.64.txt",
        "real/nvidia-smi-L__a100-sxm4-80gb__4gpu-1mig-4x1g.20gb__telegraf.txt",
        "real/df-h__overlay-root__custom-initrd.txt",
        # round 5 (values: test_audit_captures_r5.py); fixed R5-F1 (GPUs listed without a name
        # called "no GPU"), R5-F2 (a memory figure read called missing), R5-F3 (a `> `-quoted
        # table read no GPU offline); R5-F4 (live) is a strict xfail there
        # round 6 (values: test_audit_captures_r6.py): host facts beside the GPU; fixed R6-F1
        # (an `nvlink -s` listing cut short with `...` failed as links down), R6-F2 (that
        # listing "not a recognised command output" offline)
        "real/nvidia-smi-topo-m__geforce-gtx-1080-ti__2gpu-phb__no-nic.txt",
        "real/nvidia-smi-topo-m__a100__8gpu-17nic-bond__gpu-numa-id.txt",
        "real/nvidia-smi-topo-m__a10__4gpu-2nic-sys__gpu-numa-id.txt",
        "real/nvidia-smi-topo-m__rtx-6000-ada__2gpu-2nic-phb__driver575.51.03__threadripper-wrx90.txt",
        "real/lscpu__xeon-platinum-8481c-sapphire-rapids__2socket-4numa__kvm.txt",
        "real/nvidia-smi-nvlink-s__gb200__2gpu-second-elided.txt",
        "real/nvidia-smi__a40__8gpu__driver525.60.13__gpu4-err.txt",
        "real/nvidia-smi__a30__8gpu__driver525.85.12__gpu3-err__no-processes.txt",
        "real/nvidia-smi__h100-80gb-hbm3__8gpu__driver580.95.05__indented__no-processes.txt",
        "real/nvidia-smi__h100-80gb-hbm3__8gpu__driver550.90.07__no-processes.txt",
        "real/nvidia-smi__h200__8gpu__driver575.57.08__load.txt",
        "real/nvidia-smi__geforce-rtx-4090__8gpu__driver535.146.02.txt",
        "real/nvidia-smi__thor__1gpu__driver580.00__spaces-collapsed.txt",
        "real/nvidia-smi__geforce-gtx-1060__2gpu__driver384.90__spaces-collapsed.txt",
        "real/nvidia-smi__geforce-rtx-4070-laptop__1gpu__driver575.64.03__spaces-collapsed.txt",
        "real/nvidia-smi__tesla-m60-p40__3gpu__driver418.240__spaces-collapsed.txt",
        "real/nvidia-smi-query-gpu__h100__1gpu__gpu-requires-reset.csv",
        "real/nvidia-smi-query-gpu__h100__1gpu__busy.csv",
        "real/nvidia-smi-query-gpu__geforce-rtx-4060-laptop__1gpu__driver566.26__power-limit-na.csv",
        "real/nvidia-smi-query-gpu__rtx-a6000__2gpu__indented.csv",
        "real/nvidia-smi-query-gpu__geforce-rtx-4050-laptop__1gpu__driver592.82.csv",
        # round 7 (values: test_audit_captures_r7.py, the -l logs in test_query_csv_samples.py):
        # fixed R7-F1 (a looped query's samples counted as GPUs), R7-F2 (pcie_link "at max"
        # without a maximum), R7-F3 (ECC facts left out taken as no ECC), R7-F4 (0 C passed)
        "real/nvidia-smi-query-gpu__h100-80gb-hbm3__1gpu__driver595.71.05__gen-current-only.csv",
        "real/nvidia-smi__rtxa6000-24q-vgpu__1gpu__driver550.54.15__guest.txt",
        "real/nvidia-smi-q-x__grid-p4-1q-vgpu__1gpu__driver513.46__windows-guest.xml",
        # round 7, second search: fixed R7-F5 (NVLink blocks taken by their place, not the GPU
        # they name), R7-F6 (two GPUs on one bus id merged), R7-F7 (one GPU's ECC count spoke
        # for all), R7-F8 (a view of GPU 7 alone read as a 1-GPU box)
        "real/nvidia-smi-nvlink-s__h800__8gpu-8links__elided.txt",
        "real/nvidia-smi__tesla-t4__2gpu-one-bus-id__driver545.23.08__gpu1-err.txt",
        "real/nvidia-smi__a100-sxm4-40gb__8gpu__driver450.80.02__7-mig.txt",
        "real/nvidia-smi__h20__8gpu-3mig__driver570.158.01__elided-tail.txt",
        "real/nvidia-smi__h800__gpu7-of-8__driver525.105.17__ecc-off.txt",
        # round 8, host outputs (values: test_audit_captures_r8_host.py): fixed R8-B1 (a df cut
        # in the middle of a row read as whole), R8-B2 (util-linux 2.17's "CPU socket(s)" not
        # read, then a hyperthread claim from the unread core count), R8-B3 (a multi-line NVRM
        # message in syslog form split at its "(PCI ID: ...)" line)
        "real/df-h__zh-cn__ascend910b-node__lustre-s3fs__cut-mid-line.txt",
        "real/lscpu__amd-phenom-ii-4core__util-linux-2.17-cpu-sockets-label.txt",
        "real/lscpu__intel-core-i3-2c4t__util-linux-2.17-lucid.txt",
        "real/dmesg-syslog__h100-hgx__fallen-off-bus-multiline-no-xid__driver525.125.06.txt",
        # round 8, nvidia-smi (values: test_audit_captures_r8.py): fixed R8-A1 (R5xx's "Reset
        # Required: Yes" and NVML's error strings as values not read), R8-A2 (a fabric state
        # judged only with a fabric-manager file), R8-A3 (pre-R331 "No running compute
        # processes found" read as a process list not visible)
        "real/nvidia-smi-q__h200__1gpu__driver610.43.02.txt",
        "real/nvidia-smi-nvlink-s__h200__1gpu-18links__driver610.43.02.txt",
        "real/nvidia-smi__tesla-k20m__2gpu__driver319.37__rst-indented.txt",
        "edited/nvidia-smi-q__a10__1gpu__driver535.129.03__reset-required-not-ready__edited.txt",
        "edited/nvidia-smi-q-x__geforce-rtx-4090__1gpu__driver535.86.05__reset-required__edited.xml",
        "edited/nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08__gpu3-fabric-in-progress__edited.txt",
        "edited/nvidia-smi-q-x__h200__1gpu__driver580.159.04__fabric-in-progress__edited.xml",
        "real/dmesg-H__rtx3090-aarch64-rockchip__bar-invalid-fallen-off-bus-no-xid.txt",
        # round 8, order matching (values: steps/checks/test_model_match_r8.py): fixed R8C-F1/F2
        # (a vGPU profile passed as its whole board, and got forward compatibility)
        "real/nvidia-smi__grid-a100-4c-vgpu__1gpu__driver510.47.03__guest.txt",
        # round 11 (values: api/test_offline_paste.py): fixed R11-A1 (lines ending in a backslash)
        "real/nvidia-smi__b200__8gpu__driver580.95.05__load__backslash-line-ends.txt",
        # round 11 (values: api/test_offline_narrowed.py): fixed R11-D1 (a view of GPU 0 alone, a df of
        # some paths: read with their prompt lines put back)
        "real/nvidia-smi-i0__a100-sxm4-40gb__1of8gpu__driver580.126.09__mig.txt",
        "real/df-h__paths-given__trn2-container-overlay.txt",
        # round 11 (values: test_audit_captures_r4.py): fixed R11-C2 (an Xid the driver logged Nonfatal)
        "real/dmesg-kmsg__xid-144-saw-mvb-nonfatal__gpud.txt",
        # round 11: fixed R11-D2 (values: steps/checks/test_host_rules_rounded.py), R11-B1
        # (values: steps/checks/test_gpu_health_listed.py)
        "real/df-h__nvme-3.5t-home2__hatlab-a100.txt",
        "real/nvidia-smi-q-i0__a16__1of4gpu__driver470.129.04__ahv-host.txt",
        "real/nvidia-smi-L__a16__4gpu__driver470.129.04__ahv-host.txt",
        "real/dmesg-journalctl__xid-145-rlw-nonfatal-137__nccl.txt",
        # round 19 (values: steps/checks/test_xid_rules_r19.py): fixed R19-K1 (one code's events on
        # one GPU judged by its first: a Fatal NVLink5 Xid after a Nonfatal one only watched)
        "real/dmesg-kmsg__xid-144-145-nonfatal-then-fatal-one-gpu__gpud.txt",
        # round 19 (values: steps/checks/test_xid_rules_r19.py): fixed R19-K2 (a fault logged
        # before a log's last reboot judged as of the boot the box runs now)
        "real/dmesg-journalctl__two-boots-reboot-separator__ubuntu-20.04-forum.txt",
        # round 25 (values: steps/checks/test_driver_compat.py): fixed R25-N1 (a vGPU host's
        # driver with no CUDA passed an NGC container on its version alone)
        "real/nvidia-smi__a100-80gb-pcie__1gpu__driver550.90.05__cuda-na__vgpu-host__mig-section-cut.txt",
        # round 25 (values: steps/checks/test_driver_compat.py): fixed R25-N2 (a GeForce card on
        # R555 failed `must_upgrade` where one on R550 warned)
        "real/nvidia-smi__geforce-rtx-4060-ti__1gpu__driver555.42.02__ollama.txt",
    }
)

# capture -> what we get wrong today (the numbers are the findings' in the audit report)
FINDINGS: dict[str, str] = {}  # all fixed (F1-F9 of the 2026-12 audit, round 4's R4-F1..F7)


def covered(prefix: str) -> set[str]:
    """The real captures of this audit whose file name starts with `prefix` (file names only),
    and those of the boxes judged both live and offline (tests/integration/
    test_live_offline_same_box.py BOXES: each read by the same readers both ways)."""
    names = {n.split("/", 1)[1] for n in PARSED_RIGHT | FINDINGS.keys() if n.startswith("real/")}
    return {n for n in names | _live_offline_boxes() if n.startswith(prefix)}


def _live_offline_boxes() -> set[str]:
    import ast

    text = (Path(__file__).parents[2] / "integration" / "test_live_offline_same_box.py").read_text()
    return {
        node.value.removeprefix("real/")
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("real/")
    }
