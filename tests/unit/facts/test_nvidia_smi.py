"""nvidia-smi parsers against every real capture (values read by eye from the files)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from gpuonboard.facts.nvidia_smi import (
    CLOCK_EVENT_REASONS,
    QUERY_FIELDS,
    GpuInfo,
    GpuProcess,
    GpuReport,
    parse_any,
    parse_query_csv,
    parse_table,
    parse_text_q,
    parse_xml,
)

FIXTURES = Path(__file__).parents[2] / "fixtures"
REAL = FIXTURES / "real"
DERIVED = FIXTURES / "derived"


def read(path: Path) -> str:
    """Fixture text without newline translation."""
    return path.read_bytes().decode("utf-8")


# The 1 x H200 captures of 2026-11-29 (driver 580.159.04, CUDA 13.0; see real/SOURCES.md).
H200_XML = "real/nvidia-smi-q-x__h200__1gpu__driver580.159.04.xml"
H200_TEXT = "real/nvidia-smi-q__h200__1gpu__driver580.159.04.txt"
H200_TABLE = "real/nvidia-smi__h200__1gpu__driver580.159.04.txt"
H200_CSV = "real/nvidia-smi-query-gpu__h200__1gpu__driver580.159.04.csv"
# nvidia-smi --query-gpu=...sampler fields... --format=csv,noheader,nounits -lms=500: a sampler
# log (no header), read by gpu_benchmark.summarize_samples (tests/unit/steps/prove/test_gpu_benchmark.py)
H200_SAMPLER = "nvidia-smi-query-gpu-sampler__h200__1gpu__driver580.159.04__resnet50-load.csv"

JETSON_TABLE = "real/nvidia-smi__jetson-agx-orin__1gpu__driver540.4.0.txt"
VGPU_UNLICENSED = "real/nvidia-smi-q__rtxa6000-24q-vgpu__1gpu__driver535.183.06__unlicensed__guest.txt"
VGPU_GRACE = (
    "real/nvidia-smi-q__rtxa6000-24q-vgpu__1gpu__driver535.183.06__unlicensed-unrestricted__guest.txt"
)
# a vGPU guest's -q: the board's power, temperatures, retired pages and remapped rows N/A, "Clocks
# Event Reasons : N/A", two Xorg processes
VGPU_Q = (
    "00.00.00.00.00", "NVIDIA RTX Virtual Workstation", "Ampere", (0, 0, 0, 0), (None, None, None),
    (None, None, None, None), (None, None, None, None), (), False, "P8", 0, (None, None, None), "VGPU",
    "Default", True, 2,
)  # fmt: skip

# file, source, driver, cuda, attached_gpus, number of GPUs, name of GPU 0, memory MiB of GPU 0
CASES = [
    ("real/nvidia-smi-q-x__a100-sxm4-40gb-mig__1gpu__driver510.47.03.xml",
     "xml", "510.47.03", "11.6", 1, 1, "NVIDIA A100-SXM4-40GB", 40960),
    ("real/nvidia-smi-q-x__a100-sxm4-80gb__1of4gpu__driver535.54.03.xml",
     "xml", "535.54.03", "12.2", 4, 1, "NVIDIA A100-SXM4-80GB", 81920),
    ("real/nvidia-smi-q-x__geforce-rtx-4090__1gpu__driver535.86.05.xml",
     "xml", "535.86.05", "12.2", 1, 1, "NVIDIA GeForce RTX 4090", 24564),
    ("real/nvidia-smi-q-x__rtx-4000-sff-ada__1gpu__driver595.84__dtd-v13.xml",
     "xml", "595.84", "13.2", 1, 1, "NVIDIA RTX 4000 SFF Ada Generation", 20475),
    ("real/nvidia-smi-q-x__tesla-t4__1gpu__driver515.105.01.xml",
     "xml", "515.105.01", "11.7", 1, 1, "Tesla T4", 15360),
    # our own capture: rented 1 x H200 VM (Firecracker, GPU passed through), 2026-11-29
    (H200_XML, "xml", "580.159.04", "13.0", 1, 1, "NVIDIA H200", 143771),
    ("derived/nvidia-smi-q-x__a100-sxm4-80gb__8gpu__derived.xml",
     "xml", "535.54.03", "12.2", 8, 8, "NVIDIA A100-SXM4-80GB", 81920),
    ("derived/nvidia-smi-q-x__a100-sxm4-80gb__4gpu__derived.xml",
     "xml", "535.54.03", "12.2", 4, 4, "NVIDIA A100-SXM4-80GB", 81920),
    ("real/nvidia-smi-q__a10__1gpu__driver535.129.03.txt",
     "text", "535.129.03", "12.2", 1, 1, "NVIDIA A10", 23028),
    ("real/nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt",
     "text", "535.161.08", "12.2", 8, 8, "NVIDIA H100 80GB HBM3", 81559),
    (H200_TEXT, "text", "580.159.04", "13.0", 1, 1, "NVIDIA H200", 143771),
    # vGPU guests (an A6000's 24Q profile), License Status Unlicensed / Unlicensed (Unrestricted)
    (VGPU_UNLICENSED, "text", "535.183.06", "12.2", 1, 1, "NVIDIA RTXA6000-24Q", 24576),
    (VGPU_GRACE, "text", "535.183.06", "12.2", 1, 1, "NVIDIA RTXA6000-24Q", 24576),
    # R418 labels ("Ecc Mode", "Virtualization mode"); 1 of 4 GPUs shown, the rest elided
    ("real/nvidia-smi-q__tesla-v100-sxm2-32gb__1of4gpu__driver418.67.txt",
     "text", "418.67", "10.1", 4, 1, "Tesla V100-SXM2-32GB", 32480),
    ("real/nvidia-smi__a100-sxm4-40gb__1gpu__driver550.144.03.txt",
     "table", "550.144.03", "12.4", None, 1, "NVIDIA A100-SXM4-40GB", 40960),
    ("real/nvidia-smi__a100-sxm4-80gb__4gpu__driver555.42.02.txt",
     "table", "555.42.02", "12.5", None, 4, "NVIDIA A100-SXM4-80GB", 81920),
    ("real/nvidia-smi__a10__1gpu__driver550.90.12.txt",
     "table", "550.90.12", "12.4", None, 1, "NVIDIA A10", 23028),
    ("real/nvidia-smi__geforce-rtx-3090__1gpu__driver535.161.07.txt",
     "table", "535.161.07", "12.2", None, 1, "NVIDIA GeForce RTX 3090", 24576),
    ("real/nvidia-smi__geforce-rtx-4090__8gpu__driver550.127.05.txt",
     "table", "550.127.05", "12.4", None, 8, "NVIDIA GeForce RTX 4090", 24564),
    # a board reworked to 48 GB: nvidia-smi names it an RTX 4090 and shows its 49140 MiB
    ("real/nvidia-smi__geforce-rtx-4090-48gb-modded__2gpu__driver580.105.08__vastai.txt",
     "table", "580.105.08", "13.0", None, 2, "NVIDIA GeForce RTX 4090", 49140),
    ("real/nvidia-smi__h100-80gb-hbm3__8gpu__driver550.90.07.txt",
     "table", "550.90.07", "12.4", None, 8, "NVIDIA H100 80GB HBM3", 81559),
    ("real/nvidia-smi__h200-mig__1gpu__driver590.48.01__load.txt",
     "table", "590.48.01", "13.1", None, 1, "NVIDIA H200", 143771),
    ("real/nvidia-smi__h200__8gpu__driver570.158.01.txt",
     "table", "570.158.01", "12.8", None, 8, "NVIDIA H200", 143771),
    (H200_TABLE, "table", "580.159.04", "13.0", None, 1, "NVIDIA H200", 143771),
    ("real/nvidia-smi__l40s__1gpu__driver550.127.05.txt",
     "table", "550.127.05", "12.4", None, 1, "NVIDIA L40S", 46068),
    ("real/nvidia-smi__rtx-6000-ada__4gpu__driver575.51.03.txt",
     "table", "575.51.03", "12.9", None, 4, "NVIDIA RTX 6000 Ada Gene...", 49140),
    # Jetson AGX Orin (JetPack 6): an integrated GPU, Bus-Id and memory N/A
    (JETSON_TABLE, "table", "540.4.0", "12.6", None, 1, "Orin (nvgpu)", None),
    ("real/nvidia-smi-query-gpu__h100-80gb-hbm3__1gpu__driver590.48.01__idle.csv",
     "csv", "590.48.01", None, 1, 1, "NVIDIA H100 80GB HBM3", 81559),
    ("real/nvidia-smi-query-gpu__h200__1gpu__driver590.48.01__load.csv",
     "csv", "590.48.01", None, 1, 1, "NVIDIA H200", 143771),
    # MIG mode Enabled: utilization.gpu [N/A] (the autostop watcher's never-idle box)
    ("real/nvidia-smi-query-gpu__h100-80gb-hbm3-mig__1gpu__driver590.48.01__idle.csv",
     "csv", "590.48.01", None, 1, 1, "NVIDIA H100 80GB HBM3", 81559),
    # bench/device/run.sh's 7-field query: no count (attached unknown), no CUDA version
    (H200_CSV, "csv", "580.159.04", None, None, 1, "NVIDIA H200", 143771),
    # `nvidia-smi --query-gpu=... -l N` logs: one GPU's samples (test_query_csv_samples.py)
    ("real/nvidia-smi-query-gpu-l3__tesla-v100-pcie-16gb__1gpu__driver565.57.01__4-samples.csv",
     "csv", "565.57.01", None, None, 1, "Tesla V100-PCIE-16GB", 16384),
    ("real/nvidia-smi-query-gpu-l1__gh200__1gpu__5-samples__elided.csv",
     "csv", None, None, None, 1, "NVIDIA GH200 120GB", 97871),
    ("real/nvidia-smi-query-gpu-l1__1gpu__3-samples__index-power-clocks.csv",
     "csv", None, None, None, 1, "", None),
    ("real/nvidia-smi-query-gpu-l1__1gpu-11gb__3-samples__no-index.csv",
     "csv", None, None, None, 3, "", 10989),
    # netdata's field list has no memory.total and no driver_version
    ("real/nvidia-smi-query-gpu-nounits__tesla-p100-pcie-16gb__1gpu.csv",
     "csv", None, None, None, 1, "Tesla P100-PCIE-16GB", None),
]  # fmt: skip

PARSERS = {"xml": parse_xml, "text": parse_text_q, "table": parse_table}


@pytest.mark.parametrize(("name", "source", "driver", "cuda", "attached", "count", "gpu0", "mib"), CASES)
def test_every_capture(
    name: str,
    source: str,
    driver: str | None,
    cuda: str | None,
    attached: int | None,
    count: int,
    gpu0: str,
    mib: int | None,
) -> None:
    text = read(FIXTURES / name)
    report = parse_any(text)
    assert report.source == source
    assert report.driver_version == driver
    assert report.cuda_version == cuda
    assert report.attached_gpus == attached
    assert len(report.gpus) == count
    assert report.gpus[0].name == gpu0
    assert report.gpus[0].memory_total_mib == mib
    assert [g.index for g in report.gpus] == list(range(count))
    assert all(g.name == gpu0 for g in report.gpus)
    direct = parse_query_csv(text, ()) if source == "csv" else PARSERS[source](text)
    # (a -q / -q -x of some of the GPUs attached names its GPUs by PCI address: sniff._placed)
    assert direct == dataclasses.replace(
        report, gpus=tuple(dataclasses.replace(g, unplaced=False) for g in report.gpus)
    )
    assert all(g.unplaced for g in report.gpus) == (
        source in ("xml", "text") and attached > count and report.complete
    )


def test_every_real_nvidia_smi_output_is_covered() -> None:
    from gpuonboard.api.offline import detect_kind

    covered = {name.split("/", 1)[1] for name, *_ in CASES if name.startswith("real/")}
    # other nvidia-smi commands' outputs (topo -m, nvlink -s, -L) and its refusals of a command
    # line (api/test_saved_forms_refusals.py): their own tests
    other_commands = (
        "nvidia-smi-topo",
        "nvidia-smi-nvlink-",
        "nvidia-smi-L__",
        # several pods' `-L` below their names, refused saying so: api/test_labelled_listings_r34.py
        "nvidia-smi-L-per-pod__",
        "nvidia-smi-mig-",
        "nvidia-smi-usage-error",
        # `dmon` / `pmon` samples, refused by name: facts/test_nvidia_smi_monitor.py
        "nvidia-smi-dmon-",
        "nvidia-smi-pmon-",
        # `--gpu-reset`'s refusal, named: api/test_sessions_r36.py
        "nvidia-smi-gpu-reset__",
    )
    # a -q cut in its first record (steps/checks/test_gpu_rules.py) and a table behind a
    # launcher's line prefix (api/test_paste_transforms.py), the tables cut short of round 26
    # (facts/test_gpu_merge_cut.py, steps/checks/test_gpu_rules_cut.py), a CSV read beside its
    # compute-apps list (steps/checks/test_gpu_health_usage_desktop.py): tested there
    elsewhere = {
        *(p.name for p in REAL.glob("nvidia-smi__*__cut-in-processes__*.txt")),
        # `nvidia-smi --version`: versions, no GPU list (api/test_offline_round34_host.py)
        "nvidia-smi-version__wsl2-driver552.22-nvml550.76-cuda12.4__copied-command__llm-c-388.txt",
        "nvidia-smi__quadro-rtx-4000__2gpu-cut-in-gpu1__driver535.129.03__akash-provider-configs-12.txt",
        "nvidia-smi-query-gpu__geforce-rtx-4080-super__1gpu__driver595.71.05__idle.csv",
        # a table under an issue template's label line naming its command in inline code, the
        # driver container's view (api/test_label_lines_r39.py)
        "nvidia-smi__rtx4090-535.129.03__template-checkbox-label-kubectl-exec-driver-ctr-indented-fence-CUT"
        "__gpu-operator-607.txt",
        # a -q -x trimmed by its contributor (steps/checks/test_gpu_rules.py NO_VERSION)
        "nvidia-smi-q-x__geforce-gtx-1070-ti__1gpu__driver-unknown__trimmed.xml",
        "nvidia-smi-q__grid-p40-24q-vgpu__1gpu__driver535.161.08__cut-after-minor-number__ollama-6364.txt",
        "nvidia-smi__h100-80gb-hbm3__1gpu-cut__driver535.183.06__skypilot-line-prefix.txt",
        # laptop tables whose draw is many times their cap (steps/checks/test_impossible_readings_r36.py)
        *(p.name for p in REAL.glob("nvidia-smi__*-over-35W-cap__*.txt")),
        # a Windows table posted without its header rows (steps/checks/test_persistence_windows_r36.py)
        "nvidia-smi__geforce-rtx-5080__1gpu__driver595.97__windows-wddm__header-rows-dropped__gpu-diagnosis-report.txt",
        # a HAMi pod's capped 3090 (steps/checks/test_model_match_shared_cap.py)
        "nvidia-smi__geforce-rtx-3090__1gpu__driver550.54.14__hami-cap-20000mib__copied-command__hami-700.txt",
        # a CSV and a table a controller's klog record quoted in a CI log (api/test_offline_csv_among.py)
        "nvidia-smi__gha-stamped-klog-tail-csv-above-table-cut-after-banner__driver580.105.08__llm-d-fma-720.txt",
        # an 8 x V100 table and -q whose Host Max reads Unknown Error
        # (steps/checks/gpu_health/test_pcie_host_max.py), a -q -x pasted after a stray backtick
        # (api/test_paste_backticks.py)
        "nvidia-smi__tesla-v100-sxm2-16gb__8gpu__driver550.127.05.txt",
        # a container's tables under `docker run --gpus all` and `docker-compose run`, a prompt or
        # none (api/test_sessions_r36.py)
        "nvidia-smi__rtx3060-laptop-wsl__580.76.04-580.97__docker-run-gpus-all__copied-command"
        "__cut-after-gpu-row__dify-wsl-pt.txt",
        "nvidia-smi__v100-sxm2__418.40.04__docker-compose-run__copied-command__aws-compose-sample.txt",
        # `nvidia-smi -l 5` frames (facts/test_nvidia_smi_frames_r36.py) and `nvidia-smi | grep
        # Driver`'s banner line (steps/checks/test_driver_grep_banner_r36.py)
        "nvidia-smi__tesla-t4__2gpu__driver525.125.06__l5-frames-process-table-then-frame-cut-after-gpu-rows"
        "__copied-command__ucloud-rapids.txt",
        "nvidia-smi-grep-driver__driver430.26__copied-command__env-notes.txt",
        # a `-q` excerpt from a GPU's record on, flattened (facts/test_nvidia_smi_q_excerpt_r36.py)
        "nvidia-smi-q__b200__1gpu-excerpt__flattened-elided-module-id__ubicloud-blog.txt",
        # a table cut at GPU 5 with its `topo -m` right under it (api/test_table_then_topo_r36.py)
        "nvidia-smi__h100-80gb-hbm3__8gpu-cut-at-gpu5__driver580.126.20__head-cut__topo-m-below-cut-after-nic5"
        "__talos-dgx-report.txt",
        # a table whose Bus-Id its poster redacted (facts/test_nvidia_smi_table_bus_id.py)
        "nvidia-smi__gtx-1050-ti__1gpu__driver430.14-cuda-na__bus-id-redacted__cut-at-processes__telegraf-6258.txt",
        "nvidia-smi-q__tesla-v100-sxm2-16gb__8gpu__driver550.127.05__host-max-unknown-error.txt",
        "nvidia-smi-q-x__geforce-gt-730__1gpu__driver460.67__stray-leading-backtick__cut__sysmontask-60.xml",
        # round 40's: a MIG table cut in its second row and a table cut at its GPU's border
        # (api/test_parts_and_cuts_r40.py), a table under a sentence quoting its command, a
        # singularity table under a glued prompt (the sess and named fixers' r40 tests), a `-q`
        # cut before any sensor (sensor_faults, r40), two CSVs of one query (refused naming both)
        "nvidia-smi__h100-pcie-mig-ecc-cell-on__1gpu__driver570.124.06__prompt__cut-in-gpu0-second-row__sonar-247.txt",
        "nvidia-smi__geforce-rtx-4080__1gpu__driver551.61__windows-wddm__display-on-1620mib__fenced-cut-at-gpu-border"
        "__nerfstudio-2930.txt",
        "nvidia-smi__geforce-gt1030-525.85.12__prose-double-quoted-docker-exec-label-CUT-in-processes-header"
        "__frigate-5483.txt",
        "nvidia-smi__singularity-home-pwd-bind-cut-after-gpu2__gtx1080ti-396.26__singularity-1548.txt",
        "nvidia-smi-q__a10g-8-attached__gpu0-product-brand-unknown-error__driver535.161.08__cut-at-display"
        "__dcgm-exporter-319.txt",
        "nvidia-smi-query-gpu-csv-noheader__two-blocks-second-command-head-lost-na-vs-not-supported__2004mib"
        "__i3pystatus-776.txt",
        # a WSL2 table whose banner reads `CUDA Version: ERR!` (steps/checks/test_gpu_rules.py)
        "nvidia-smi__geforce-rtx-3060-name-cut__1gpu__driver546.80__wsl2__cuda-err__cut-in-gpu-row__wsl-11589.txt",
        # Windows' lost-GPU sentence (facts/test_nvidia_smi_failure.py) and a table cut in its
        # header below a CUDA image's banner (facts/test_container_banner.py)
        "nvidia-smi__windows-unable-to-detect-device-handle-unknown-error__a10-gpu-pv__easy-gpu-pv-276.txt",
        "nvidia-smi__docker-run-cuda-11.4-deprecated-image-banner__table-cut-in-header__nct-69.txt",
        # the compute mode's row (steps/checks/gpu_health/test_modes.py), a banner cut after its first
        # line beside a one-column CSV of a field no rule reads (api/test_offline_unjudged.py)
        "nvidia-smi__tesla-p40__2gpu__driver375.51__exclusive-process__sherlock.txt",
        "nvidia-smi__banner-cut-after-first-line__driver570.86.15__ollama-9031.txt",
        # vGPU guests' tables whose driver counts the vGPU's reserve as used
        # (steps/checks/test_gpu_health_usage_vgpu_reserve.py)
        "nvidia-smi__grid-v100d-32q-vgpu__1gpu__driver440.56__idle-reserve-counted-used__falconcv.txt",
        "nvidia-smi__grid-p100-16q-vgpu__1gpu__driver384.73__idle-reserve-counted-used__ukcloud.txt",
        "nvidia-smi__grid-v100-8c-vgpu__1gpu__driver470.63.01__half-v100-pcie-16gb__nrec.txt",
        "nvidia-smi__grid-a100x-2-10c-mig-backed-vgpu__1gpu__driver550.54.16__idle-1058mib__vgpu-user-guide.txt",
        # a vGPU host's `nvidia-smi vgpu` listing, refused: api/test_offline_vgpu_listing.py
        "nvidia-smi-vgpu__tesla-t4-vgpu-host__2gpu__driver470.63__gpu-operator-267.txt",
        # tables run in a pod (`k exec`, `oc exec`): api/test_offline_narrowed_kube_clis.py
        "nvidia-smi__a10g__1gpu__driver535.129.03__k-exec-pod__table-without-processes__bottlerocket-3718.txt",
        "nvidia-smi__a100-80gb-pcie-mig__1gpu__driver550.54.14__cuda-na__oc-exec-driver-daemonset__k8s-dra-driver.txt",
        # a pod's logged table and a node's banner alone (EKS notes): api/test_offline_narrowed_kube_clis.py
        "nvidia-smi__kubectl-logs-pod-stray-fence__a10g__driver550.144.03__eks-notes.txt",
        "nvidia-smi__banner-only-eks-node__a10g__driver550.144.03__eks-notes.txt",
        # a -q -x a mail reply escaped (`<timestamp&gt;`, `&nbsp;`): api/test_paste_transforms.py
        "nvidia-smi-q-x__html-gt-nbsp-escaped-cut-in-persistence-mode__rtx4090__1panel-11910.txt",
        # an nvidia-smi newer than its driver (Colab): facts/test_nvidia_smi_version_skew.py
        "nvidia-smi__newer-tool-450.36.06-than-driver-418.67-mig-err__tesla-k80__colab-pytorch-page.txt",
        "nvidia-smi__newer-tool-450.36.06-than-driver-418.67-mig-err__p100-pcie__colab-notebook.txt",
        # a failed nvidia-smi beside another output of the box (facts/test_gpu_failed.py), a cut -q
        # of a driver older than MIG (steps/checks/gpu_health/test_step_cut_parts.py), a -q whose
        # `Attached GPUs` is read above a cut (steps/checks/test_gpu_rules_cut.py)
        "nvidia-smi__geforce-gtx-690__1gpu__driver410.79__power-na__nvidia-docker-523.txt",
        "nvidia-smi__failed-couldnt-communicate-driver-not-loaded__wsl2__wsl-9134.txt",
        "nvidia-smi__geforce-gtx-1080-ti__2gpu__driver517.48__windows__cut-in-gpu1-row__wsl-9134.txt",
        "nvidia-smi-q__geforce-gtx-1050-ti__1gpu__driver440.36__no-mig-line__cut-in-gpu-operation-mode__nvidia-docker-1149.txt",
        # a -q of one GPU that lost its indentation (facts/test_text_q_flat_one_record.py)
        "nvidia-smi-q__geforce-gtx-1060-6gb__1gpu__indentation-lost__from-attached-gpus__cut-in-display-clock__nvidia-docker-1170.txt",
        "nvidia-smi-a__tesla-v100s-pcie-32gb__2gpu-attached__driver535.104.05__cut-in-gpu0-record__hami-446.txt",
        # every Orin module's name, 'Orin (nvgpu)': steps/checks/test_shared_names.py
        "nvidia-smi__jetson-agx-orin__1gpu__driver540.4.0__cuda12.6__copied-command__cut-at-processes.txt",
        # the H20-3e read before the cut, names cut before their model ('NVIDIA GeForce ...'):
        # steps/checks/test_model_match_cut_r31.py
        "nvidia-smi__h20-3e__2gpu__driver570.124.06__cut-in-gpu1-row__hami-1520.txt",
        "nvidia-smi__geforce-name-cut__1gpu-7979mib__driver470.57.02__cut-at-processes__bellperson-227.txt",
        # a Bus-Id cut to its domain (`00000000:`): facts/test_nvidia_smi_bus_cut_r31.py
        "nvidia-smi__a100-sxm4-80gb-mig__gpu3__driver535.104.05__bus-id-cut-to-domain__copied-command__cut-in-mig-head__dcgm-152.txt",
        # a failure's sentence with a typographic quote, said in a note: api/test_offline_typography_note.py
        "nvidia-smi__failed-couldnt-communicate-curly-quote__qixuema-envs-4.txt",
        # another tool's line quoting the failure above nvidia-smi's own: api/test_failure_record_r34.py
        "nvidia-smi__failed-unknown-error-gpu0__below-another-tools-line-quoting-it__rtx4080__warranty-report.txt",
        # a poster's arrow before the failure's line: api/test_failure_record_r34.py
        "nvidia-smi__failed-couldnt-communicate__arrow-before-output__copied-command__b300-vm__proxmox-forum-179366.txt",
        # a table cut after GPU 0's name cell: steps/checks/test_gpu_rules_cut.py
        "nvidia-smi__geforce-rtx-208x__1gpu__driver435.21__vm__copied-command__cut-after-gpu0-name-cell__gpu-passthrough-4.txt",
        # tables of the layout before R304 (`Nb.  Name`): facts/test_nvidia_smi_old_layout_r35.py
        "nvidia-smi__geforce-8500-gt__1gpu__driver290.10__old-layout-nb-name__markdown-escaped-index__archwiki-es.txt",
        "nvidia-smi__geforce-gtx-550-ti__1gpu__driver295.40__old-layout-nb-name__processes-not-supported__ubuntuforums.txt",
        # a table every line of which a `#` comments out: api/test_offline_commented_r35.py
        "nvidia-smi__geforce-name-cut__1gpu-1998mib__driver470.256.02__docker-run-cuda12.4__copied-command__hash-commented-no-space__cortex-notes.txt",
        "nvidia-smi__grid-k520__1gpu__driver384.130__indented-hash-commented-tabs__march-docs.txt",
        # a CSV among lines of prose, read as its block: api/test_offline_csv_prose_r37.py
        "nvidia-smi-query-gpu__h200__4gpu__among-readme-prose-cpu-ram-disk-lines__vllm-repro-readme.txt",
        "nvidia-smi-query-gpu__h200__2gpu__driver575.57.08__prose-lines-below__pbs-env-md.txt",
        # a CSV below a report's heading line, read from its header: api/test_offline_heading_above_r35.py
        "nvidia-smi-query-gpu__a800-sxm4-80gb__8gpu__driver580.95.05__heading-line-above-header__openpi-env-report.csv",
        # tables a page ran onto one line, spaces collapsed, read by value:
        # facts/test_nvidia_smi_table_joined_r35.py
        "nvidia-smi__a100-sxm4-40gb__1gpu__driver535.129.03__table-on-one-line__nshx-csdn.txt",
        "nvidia-smi__tesla-t4-cgpu-share-3231mib__1gpu__driver418.87.01__kubectl-exec-pod__copied-command__table-on-one-line__aliyun-ack-edge.txt",
        "nvidia-smi__tesla-t4__1gpu__driver418.87.01__python3-process__table-on-one-line__aliyun-ack-edge.txt",
        "nvidia-smi__tesla-v100-sxm2-16gb__1gpu__driver515.105.01__mig-column__table-on-one-line__aliyun-ack-edge.txt",
        "nvidia-smi__b200__1gpu__driver580.105.08__table-on-one-line__cut-in-processes-header__vllm-32373-wiki.txt",
        "nvidia-smi__rtx-a6000__1gpu__driver525.125.06__after-oom-message__table-on-one-line__cut-in-processes-rule__vllm-1201-wiki.txt",
        # a banner alone a page ran onto one line, judged by min_driver:
        # steps/checks/test_gpu_rules_cut.py
        "nvidia-smi__banner-only__driver470.82.01__on-one-line__mynw.txt",
        # a table and -q cut after whole GPU records, -q pastes from `Attached GPUs` cut in GPU 0:
        # steps/checks/test_gpu_rules_cut_r32.py
        "nvidia-smi__geforce-rtx-2080-ti__4gpu__driver418.87__cut-in-gpu3-first-row__learnable-triangulation-80.txt",
        "nvidia-smi__geforce-rtx-3050__1gpu__driver550.120__copied-command__gpu-table-closed__cut-in-processes-top-border__cosmos-47.txt",
        "nvidia-smi-q__geforce-gtx-1080-ti__8gpu-attached__driver390.48__cut-in-virtualization-mode__nvidia-docker-756.txt",
        "nvidia-smi-q__tesla-k80__4gpu-attached__no-header__from-attached-gpus__cut-in-gpu0-pci__nvidia-docker-617.txt",
        "nvidia-smi-q__tesla-v100-sxm2-16gb__8gpu-attached__no-header__from-attached-gpus__cut-in-gpu0-pci__nvidia-docker-868.txt",
        # a -q -x cut inside <driver_model>: steps/checks/gpu_health/test_persistence_cut_r31.py
        "nvidia-smi-q-x__geforce-rtx-4090__1gpu__driver535.86.05__cut-in-driver-model__netdata-15755.xml",
        # a -q -x pasted in a `<details>` section, a blank line above `<?xml`: api/test_paste_xml_lead.py
        "nvidia-smi-q-x__geforce-8800-gt__1gpu__driver340.102__details-blank-line-fence__cut__netdata-2759.xml",
        # data-centre totals against data/gpu_name_markers.yml `sold_memory` (an H800 named with an
        # H200's memory, an H100 NVL's 95830 MiB): steps/checks/test_sold_memory_datacenter.py
        "nvidia-smi__h800-named-143771mib__8gpu__driver560.35.03__nccl-2360.txt",
        "nvidia-smi__h100-nvl__2gpu__driver580.95.05__copied-command__cut-in-gpu1-row__gpu-burn-141.txt",
        # a table cut after GPU 0's whole first row, one whose rows were left out by hand, a whole
        # table of a pod's log: steps/checks/test_gpu_rules_cut_r33.py
        "nvidia-smi__quadro-p1000__1gpu__driver410.78__docker-run-prompts__cut-after-gpu0-first-line__tensorflow-28171.txt",
        "nvidia-smi__b200__1gpu__driver580.95.05__vm-passthrough__lines-left-out-by-hand__ubicloud-blog.txt",
        "nvidia-smi__gb200__1gpu__driver580.126.20__kubectl-logs-pod__whole-table__gang-scheduling-report.txt",
        # a collapsed table cut in GPU 6's first row, GPUs holding GiBs with their list cut away:
        # steps/checks/test_foreign_cut_r33.py
        "nvidia-smi__geforce-rtx-4090__collapsed-spaces__driver550.144.03__gpu3-fan-err__cut-in-gpu6-row__cnblogs-asandstar.txt",
        # an L40S at 100 % with 0 MiB, its draw and clock: steps/checks/test_foreign_utilisation_alone.py
        "nvidia-smi__l40s__1gpu__driver595.80__idle-section-100pct-0mib-242w-no-process.txt",
        "nvidia-smi-query-gpu__l40s__1gpu__driver595.80__idle-section-100pct-0mib-145w-gpu-idle-not-active.csv",
        # a -q cut after its one GPU's virtualization mode: gpu_health/test_virtualization_cut_r34.py
        "nvidia-smi-q__quadro-m1000m__1gpu__driver375.82__cut-after-virtualization-mode__nvidia-docker-688.txt",
        # a WDDM table cut in its compute mode: steps/checks/test_foreign_cut_r34.py
        "nvidia-smi__geforce-name-cut__1gpu-12288mib__driver526.47__windows-wddm__prompt-glyph__cut-in-gpu0-compute-mode__wsl-9099.txt",
        # a banner cut below under a stress tool's lines: steps/checks/test_driver_line_shape.py
        "nvidia-smi__b200__driver570.133.20__gpu-stress-test-lines-above__cut-below-banner__gpustresstest-13.txt",
        # a Slurm job's .out holding the table its script printed: api/test_job_log_view_r34.py
        "nvidia-smi__h200__1gpu__driver575.57.08__slurm-job-out-prolog-epilog-cuda-visible-devices__pace-ice.txt",
        # a DGX Station A100's table with its display card: steps/checks/test_display_adapters_r35.py
        "nvidia-smi__dgx-station-a100__4gpu-mig-plus-dgx-display__driver470.141.03__gpu-rows-only__kr-notes.txt",
        # AutoDL's renamed share `NVIDIA vGPU-48GB`: steps/checks/gpu_health/test_vgpu_named_r37.py
        "nvidia-smi__autodl-vgpu-48gb__1gpu__driver570.124.04__ecc-off__fan99__easyedit-env.txt",
        # `nvidia-smi | head -8` without its borders: steps/checks/test_min_driver_banner_no_border_r37.py
        "nvidia-smi__head-8-banner-only-no-borders__driver590.48.01-cuda13.1__blackwell-scout-worker-report.txt",
        # MIG-mode tables cut in or before `MIG devices:`: steps/checks/test_mig_devices_cut_r38.py
        "nvidia-smi__h100-80gb-hbm3-mig__1gpu__driver550.90.07__memory-na__cut-in-mig-devices-header__diffusers-torchao-41.txt",
        "nvidia-smi__a100-80g-mig__2gpu__driver510.108.03__cut-after-mig-devices-border__ollama-4814.txt",
        # a `-q -d PERFORMANCE` view, no GPU name: steps/checks/test_sections_view_name_r38.py
        "nvidia-smi-q-d-performance__geforce-rtx-3080__1gpu__driver495.44__copied-command-idle-active__mangohud-636.txt",
        # the 270 drivers' -q (`GPU 0:2:0`, no process list): facts/test_text_q_270_layout_r38.py
        "nvidia-smi-q__tesla-m2090__i0-1of2gpu__driver270.41.19__copied-command__gpu-0-2-0-head-no-processes__microway-blog.txt",
        # tables cut in a GPU's rows and a CSV loop without name or memory.used:
        # api/test_smi_tables_csvs_r39.py
        "nvidia-smi__geforce-rtx-3090__1gpu__driver580.159.04__cut-mid-memory-cell__club3090-222.txt",
        "nvidia-smi__grid-p40-24q-vgpu__driver535.261.03__prompt__cut-after-gpu0-name-no-persistence-cell"
        "__localai-6928.txt",
        "nvidia-smi__a800-sxm4-80gb-mig-enabled__1gpu__driver535.86.10__cut-after-gpu0-rows-before-mig-devices"
        "__nvidia-gpu-exporter-203.txt",
        "nvidia-smi-query-gpu-l__1gpu__13-samples__index-util-power-clocks-no-name-no-memory__ksysguard-gpu-27.txt",
    }
    # one-column CSVs of a field no rule reads, noted and not judged (api/test_offline_unjudged.py)
    unjudged = {
        "nvidia-smi-query-gpu__compute-cap-only__2gpu__ollama-9031.csv",
        "nvidia-smi-query-gpu__fan-speed-noheader-na__1gpu__nvsmi-2.csv",
    }
    # a headerless CSV among a miner's lines, refused saying so (api/test_offline_csv_among.py)
    refused = {"nvidia-smi-query-gpu__noheader-among-miner-lines__8x-rtx-a4000__rainbowminer-1796.txt"}
    outputs = {
        p.name
        for p in REAL.glob("nvidia-smi*")
        if not p.name.startswith(other_commands)
        and p.name != H200_SAMPLER
        and p.name not in elsewhere | unjudged | refused
    }
    from .audit_captures import covered as audit  # the truth audit's captures: tested there

    assert outputs == covered | {n for n in audit("nvidia-smi") if not n.startswith(other_commands)}
    # the prefixes leave out no GPU report: every real output read as one is covered
    reports = {p.name for p in REAL.glob("nvidia-smi*") if detect_kind(p.read_text()) == "nvidia_smi"}
    assert reports == outputs | elsewhere
    assert (REAL / H200_SAMPLER).is_file()


def test_partial_capture_warns_about_count() -> None:
    report = parse_xml(read(REAL / "nvidia-smi-q-x__a100-sxm4-80gb__1of4gpu__driver535.54.03.xml"))
    assert report.attached_gpus == 4
    assert len(report.gpus) == 1
    assert any("attached_gpus says 4" in w for w in report.warnings)


def test_xml_followed_by_the_fallback_calls_output_is_read() -> None:
    """`n -q -x || n -q || ... || n`: an XML call that printed the GPUs it could read, then exited
    non-zero (a GPU fallen off the bus), has the fallbacks' output after it: the XML is read."""
    xml = read(REAL / "nvidia-smi-q-x__a100-sxm4-80gb__1of4gpu__driver535.54.03.xml")
    table = read(REAL / "nvidia-smi__a100-sxm4-80gb__4gpu__driver555.42.02.txt")
    alone, glued = parse_any(xml), parse_any(xml + "Unable to determine the device handle for GPU1\n" + table)
    assert glued.source == "xml" and glued.gpus == alone.gpus and len(glued.gpus) == 1
    assert glued.warnings == alone.warnings


def test_xml_a100_80gb_details() -> None:
    gpu = parse_xml(read(REAL / "nvidia-smi-q-x__a100-sxm4-80gb__1of4gpu__driver535.54.03.xml")).gpus[0]
    assert gpu.uuid == "GPU-513536b6-7d19-9063-b049-1e69664bb298"
    assert gpu.serial == "1650522003820"
    assert gpu.pci_bus_id == "00000000:01:00.0"
    # the GPU-level fb_memory_usage, not a MIG instance's 19968 MiB
    assert (gpu.memory_total_mib, gpu.memory_used_mib) == (81920, 50)
    assert gpu.ecc_mode == "Enabled"
    assert gpu.persistence_mode == "Disabled"
    assert gpu.mig_mode == "Enabled"
    assert (gpu.pcie_gen_current, gpu.pcie_gen_max) == (4, 4)
    assert (gpu.pcie_width_current, gpu.pcie_width_max) == (16, 16)
    assert gpu.temperature_c == 27


def test_xml_na_values_become_none() -> None:
    gpu = parse_xml(read(REAL / "nvidia-smi-q-x__geforce-rtx-4090__1gpu__driver535.86.05.xml")).gpus[0]
    assert gpu.serial is None  # <serial>N/A</serial>
    assert gpu.mig_mode is None  # <current_mig>N/A</current_mig>
    assert gpu.ecc_mode == "Disabled"
    assert (gpu.pcie_gen_current, gpu.pcie_gen_max) == (1, 3)
    assert gpu.temperature_c == 40


def test_xml_v11_t4_link_width() -> None:
    gpu = parse_xml(read(REAL / "nvidia-smi-q-x__tesla-t4__1gpu__driver515.105.01.xml")).gpus[0]
    assert (gpu.pcie_width_current, gpu.pcie_width_max) == (8, 16)
    assert gpu.pci_bus_id == "00000000:00:1E.0"


def test_xml_v13_redacted_serial_kept_as_text() -> None:
    gpu = parse_xml(read(REAL / "nvidia-smi-q-x__rtx-4000-sff-ada__1gpu__driver595.84__dtd-v13.xml")).gpus[0]
    assert gpu.serial == "REDACTED"
    assert gpu.memory_used_mib == 3534


def test_derived_8gpu_identifiers_distinct() -> None:
    report = parse_xml(read(DERIVED / "nvidia-smi-q-x__a100-sxm4-80gb__8gpu__derived.xml"))
    assert report.warnings == ()
    assert len({g.uuid for g in report.gpus}) == 8
    assert len({g.serial for g in report.gpus}) == 8
    assert [g.pci_bus_id for g in report.gpus][:2] == ["00000000:01:00.0", "00000000:0F:00.0"]


def test_h200_580_every_format_agrees() -> None:
    # One GPU, four outputs of the same minute: every form names the same box.
    reports = {name: parse_any(read(FIXTURES / name)) for name in (H200_XML, H200_TEXT, H200_TABLE, H200_CSV)}
    for name, report in reports.items():
        assert report.warnings == (), name
        gpu = report.gpus[0]
        assert (gpu.name, gpu.memory_total_mib, gpu.pci_bus_id) == ("NVIDIA H200", 143771, "00000000:00:06.0")
        assert gpu.ecc_mode == "Enabled", name
    for name in (H200_XML, H200_TEXT, H200_TABLE):
        gpu = reports[name].gpus[0]
        assert (gpu.persistence_mode, gpu.mig_mode) == ("Enabled", "Disabled"), name
        assert gpu.memory_used_mib == 0 and gpu.processes == () and gpu.processes_known, name
    # -q -x and -q were taken in the same second (21:45:39): identical facts, field by field
    assert reports[H200_XML].gpus == reports[H200_TEXT].gpus
    xml = reports[H200_XML].gpus[0]
    assert xml.virtualization_mode == "Pass-Through"  # a Firecracker VM with the GPU passed through
    assert (xml.vbios, xml.product_architecture) == ("96.00.A5.00.1A", "Hopper")
    # the margins "GPU Slowdown T.Limit Temp : -2 C" are not read as absolute thresholds
    assert (xml.temperature_slowdown_c, xml.temperature_max_c) == (None, None)


def test_h200_580_text_utilization_label_is_upper_case() -> None:
    text = read(FIXTURES / H200_TEXT)
    assert "    Utilization\n        GPU                                            : 0 %" in text
    busy = text.replace(
        "        GPU                                            : 0 %",
        "        GPU                                            : 97 %",
    )
    assert parse_text_q(busy).gpus[0].utilization_gpu_pct == 97


def test_h200_580_csv_reports_the_event_name_for_the_throttle_field() -> None:
    # bench/device/run.sh asked for clocks_throttle_reasons.active (the R450-safe name, as in
    # QUERY_FIELDS); driver 580 accepted it and headed the column with the event name.
    text = read(FIXTURES / H200_CSV)
    assert text.splitlines()[0].endswith(", clocks_event_reasons.active")
    gpu = parse_query_csv(text, ()).gpus[0]
    assert gpu.clock_event_reasons == ("gpu_idle",) and gpu.clock_event_reasons_known
    assert parse_any(read(REAL / H200_SAMPLER)).source == "unknown"  # no header: not a report


def test_text_q_h100_details() -> None:
    report = parse_text_q(read(REAL / "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt"))
    assert report.warnings == ()
    first, last = report.gpus[0], report.gpus[-1]
    assert first.pci_bus_id == "00000000:19:00.0"
    assert last.pci_bus_id == "00000000:DB:00.0"
    assert first.serial == "1650124031592"
    assert first.uuid == "GPU-ee7954ec-da95-fd7a-ddfd-c6b32cc2f8aa"
    assert first.mig_mode == "Disabled"
    assert first.ecc_mode == "Enabled"
    assert (first.pcie_gen_current, first.pcie_width_max) == (5, 16)
    assert first.temperature_c == 29


def test_text_q_a10_details() -> None:
    gpu = parse_text_q(read(REAL / "nvidia-smi-q__a10__1gpu__driver535.129.03.txt")).gpus[0]
    assert gpu.pci_bus_id == "00000000:07:00.0"
    assert (gpu.memory_total_mib, gpu.memory_used_mib) == (23028, 4)
    assert gpu.persistence_mode == "Enabled"
    assert gpu.mig_mode is None
    assert gpu.temperature_c == 33


def test_table_columns() -> None:
    report = parse_table(read(REAL / "nvidia-smi__h200__8gpu__driver570.158.01.txt"))
    assert [g.pci_bus_id for g in report.gpus][-1] == "00000000:C2:00.0"
    assert {g.persistence_mode for g in report.gpus} == {"Disabled"}
    assert {g.mig_mode for g in report.gpus} == {"Disabled"}
    assert report.gpus[0].temperature_c == 31
    mig = parse_table(read(REAL / "nvidia-smi__h200-mig__1gpu__driver590.48.01__load.txt"))
    # the MIG devices table and process rows are not GPUs
    assert len(mig.gpus) == 1
    assert mig.gpus[0].mig_mode == "Enabled"
    assert mig.gpus[0].memory_used_mib == 16959
    rtx = parse_table(read(REAL / "nvidia-smi__geforce-rtx-3090__1gpu__driver535.161.07.txt"))
    assert rtx.gpus[0].ecc_mode is None  # "N/A"
    ada = parse_table(read(REAL / "nvidia-smi__rtx-6000-ada__4gpu__driver575.51.03.txt"))
    assert {g.ecc_mode for g in ada.gpus} == {"Disabled"}  # "Off"


_BORDER_LINE = re.compile(r"^\s*(?:\+-[-+]*\+|\|=+[=+|]*\|)\s*$")


@pytest.mark.parametrize("name", sorted(p.name for p in REAL.glob("nvidia-smi__*.txt")))
def test_table_with_its_border_lines_dropped_keeps_every_gpu(name: str) -> None:
    """A table pasted without its border lines (`+----+` and `|====|`: a `grep -v` of them, or a
    page that dropped them: a real 2x H200 NVL paste on driver 580.173.02, its header's third row,
    the `===` line and the `+---+` between GPUs gone, shows it) puts a GPU's first row right
    after the row before it. Each real table with every border line deleted here keeps every GPU
    and its values: before, a GPU row that came third after another GPU's was skipped as that
    GPU's MIG row (the H200 NVL paste read 1 GPU: gpu_count failed "1 of the 2 ordered GPUs
    missing")."""
    text = read(REAL / name)
    whole = parse_table(text)
    bare = parse_table("\n".join(line for line in text.split("\n") if not _BORDER_LINE.match(line)))
    assert [(g.index, g.name, g.pci_bus_id, g.memory_total_mib) for g in bare.gpus] == [
        (g.index, g.name, g.pci_bus_id, g.memory_total_mib) for g in whole.gpus
    ]


def test_csv_units_and_na() -> None:
    report = parse_query_csv(read(REAL / "nvidia-smi-query-gpu__h200__1gpu__driver590.48.01__load.csv"), ())
    gpu = report.gpus[0]
    assert gpu.pci_bus_id == "00000000:83:00.0"
    assert (gpu.memory_total_mib, gpu.memory_used_mib) == (143771, 32362)
    assert gpu.temperature_c == 52
    assert gpu.mig_mode == "Disabled"
    assert (gpu.pcie_gen_max, gpu.pcie_width_max) == (5, 16)
    p100 = parse_query_csv(
        read(REAL / "nvidia-smi-query-gpu-nounits__tesla-p100-pcie-16gb__1gpu.csv"), ()
    ).gpus[0]
    assert p100.memory_used_mib == 0
    assert p100.temperature_c == 37
    assert p100.uuid == "GPU-ef1b2c9b-38d8-2090-2bd1-f567a3eb42a6"


@pytest.mark.parametrize("units", [True, False])
@pytest.mark.parametrize("header", [True, False])
def test_csv_header_and_units_forms(header: bool, units: bool) -> None:
    fields = ("index", "name", "memory.total", "driver_version", "temperature.gpu")
    head = "index, name, memory.total [MiB], driver_version, temperature.gpu\n"
    memory = "81920 MiB" if units else "81920"
    rows = "".join(f"{i}, NVIDIA A100-SXM4-80GB, {memory}, 535.54.03, 3{i}\n" for i in range(2))
    report = parse_query_csv((head if header else "") + rows, fields)
    assert report.warnings == ()
    assert [g.memory_total_mib for g in report.gpus] == [81920, 81920]
    assert [g.temperature_c for g in report.gpus] == [30, 31]
    assert report.driver_version == "535.54.03"


def test_query_fields_cover_gpuinfo() -> None:
    for field in ("index", "name", "uuid", "memory.total", "driver_version", "pci.bus_id"):
        assert field in QUERY_FIELDS


def test_query_fields_are_names_a_590_driver_accepts() -> None:
    # The 590 captures asked for (nearly) every field; their headers name what exists.
    text = read(REAL / "nvidia-smi-query-gpu__h100-80gb-hbm3__1gpu__driver590.48.01__idle.csv")
    header = {cell.split(" [")[0].strip() for cell in text.splitlines()[0].split(",")}
    # the R450-safe throttle name is the deprecated alias of the event name in the capture
    renamed = {f.replace("clocks_throttle_reasons.", "clocks_event_reasons.") for f in QUERY_FIELDS}
    assert renamed <= header
    assert "clocks_throttle_reasons.active" in QUERY_FIELDS
    assert "clocks_event_reasons.active" not in QUERY_FIELDS  # R535+ only
    assert not [f for f in QUERY_FIELDS if f.startswith("remapped_rows.")]  # not in early R450
    assert len(set(QUERY_FIELDS)) == len(QUERY_FIELDS)


def test_query_fields_round_trip() -> None:
    # A no-header, no-units answer to exactly QUERY_FIELDS parses into every field it carries.
    values = {
        "index": "0", "name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-1", "serial": "1650522003820",
        "pci.bus_id": "00000000:01:00.0", "memory.total": "81920", "memory.used": "50",
        "driver_version": "470.82.01", "count": "1", "persistence_mode": "Enabled",
        "ecc.mode.current": "Enabled", "pcie.link.gen.current": "4", "pcie.link.gen.max": "4",
        "pcie.link.width.current": "16", "pcie.link.width.max": "16", "temperature.gpu": "27",
        "mig.mode.current": "Disabled", "vbios_version": "92.00.36.00.02", "pstate": "P0",
        "utilization.gpu": "3", "compute_mode": "Default",
        "clocks_throttle_reasons.active": "0x0000000000000044",
        "ecc.errors.corrected.volatile.total": "5", "ecc.errors.uncorrected.volatile.total": "1",
        "ecc.errors.corrected.aggregate.total": "7", "ecc.errors.uncorrected.aggregate.total": "2",
        "retired_pages.single_bit_ecc.count": "[N/A]", "retired_pages.double_bit.count": "[N/A]",
        "retired_pages.pending": "[N/A]", "power.draw": "67.03", "enforced.power.limit": "400.00",
        "power.default_limit": "500.00", "power.max_limit": "500.00",
    }  # fmt: skip
    assert set(values) == set(QUERY_FIELDS)
    row = ", ".join(values[f] for f in QUERY_FIELDS) + "\n"
    report = parse_query_csv(row, QUERY_FIELDS)
    assert report.warnings == ()
    assert report.driver_version == "470.82.01"
    gpu = report.gpus[0]
    assert gpu.vbios == "92.00.36.00.02"
    assert gpu.clock_event_reasons == ("sw_power_cap", "hw_thermal_slowdown")
    assert gpu.clock_event_reasons_known
    assert (gpu.ecc_volatile_correctable, gpu.ecc_volatile_uncorrectable) == (5, 1)
    assert (gpu.ecc_aggregate_correctable, gpu.ecc_aggregate_uncorrectable) == (7, 2)
    assert (gpu.retired_pages_sbe, gpu.retired_pages_dbe, gpu.retired_pages_pending) == (None, None, None)
    assert (gpu.power_draw_w, gpu.power_limit_w) == (67.03, 400.0)
    assert (gpu.default_power_limit_w, gpu.max_power_limit_w) == (500.0, 500.0)
    assert (gpu.performance_state, gpu.utilization_gpu_pct, gpu.compute_mode) == ("P0", 3, "Default")
    assert gpu.processes == () and not gpu.processes_known


GARBAGE = [
    "",
    "   \n",
    "hello world\nthis is not nvidia-smi\n",
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n",
    "bash: nvidia-smi: command not found\n",
    '<?xml version="1.0" ?>\n<nvidia_smi_log>\n<driver_version>535',
    "\x00\x01\x02binary",
]


@pytest.mark.parametrize("text", GARBAGE)
def test_garbage_warns_without_crash(text: str) -> None:
    report = parse_any(text)
    assert isinstance(report, GpuReport)
    assert report.gpus == ()
    assert report.warnings
    for parser in (parse_xml, parse_table, parse_text_q):
        result = parser(text)
        assert result.gpus == () and result.warnings
    csv_report = parse_query_csv(text, QUERY_FIELDS)
    assert csv_report.gpus == () and csv_report.warnings


def test_truncated_xml() -> None:
    text = read(REAL / "nvidia-smi-q-x__tesla-t4__1gpu__driver515.105.01.xml")
    report = parse_xml(text[: len(text) // 2])
    # cut inside its only <gpu>: the record is read up to the cut (its name and memory total
    # closed above it), marked cut, and the report says it is incomplete
    [gpu] = report.gpus
    assert gpu.record_cut and gpu.name == "Tesla T4" and gpu.memory_total_mib == 15360
    assert not gpu.processes_known and report.complete is False
    assert report.attached_gpus == 1
    assert "incomplete probe, rerun" in report.warnings[0]


def test_entity_declarations_refused() -> None:
    bomb = '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><nvidia_smi_log>&a;</nvidia_smi_log>'
    report = parse_xml(bomb)
    assert report.gpus == () and report.warnings


def test_table_with_failed_driver_line() -> None:
    report = parse_table("Driver Version: 535.1\n| nothing here |\n")
    assert report.driver_version == "535.1"
    assert report.gpus == ()
    assert report.warnings


# ---------------------------------------------------------------- health facts, every capture

A100_80 = (
    "92.00.36.00.02", "NVIDIA", "Ampere", (0, 0, 0, 0), (None, None, None), (None, None, None, None),
    (67.03, 500.0, 500.0, 500.0), (), True, "P0", None, (27, 89, 92), "None", "Default", True, 0,
)  # fmt: skip
H200_580 = (
    "96.00.A5.00.1A", "NVIDIA", "Hopper", (0, 0, 0, 0), (None, None, None), (0, 0, False, False),
    (77.66, 700.0, 700.0, 700.0), ("gpu_idle",), True, "P0", 0, (34, None, None), "Pass-Through",
    "Default", True, 0,
)  # fmt: skip
# Table rows: the table has no vbios/brand/ECC totals/retired/remapped/default power/reasons.
NO_DETAIL = (None, None, None)


def _table(ecc_vu: int | None, draw: float, cap: float, pstate: str, util: int | None, temp: int,
           known: bool = True, procs: int = 0) -> tuple[object, ...]:  # fmt: skip
    return (
        *NO_DETAIL, (None, ecc_vu, None, None), (None, None, None), (None, None, None, None),
        (draw, cap, None, None), (), False, pstate, util, (temp, None, None), None, "Default", known, procs,
    )  # fmt: skip


# GPU 0 of each capture: vbios, brand, architecture, ECC (vol corr, vol unc, agg corr, agg unc),
# retired pages (sbe, dbe, pending), remapped rows (corr, unc, pending, failure),
# power (draw, limit, default, max), active clock event reasons, reasons known, pstate,
# GPU util %, temperatures (current, slowdown, shutdown), virtualization mode, compute mode,
# processes known, number of processes.
HEALTH: dict[str, tuple[object, ...]] = {
    "real/nvidia-smi-q-x__a100-sxm4-40gb-mig__1gpu__driver510.47.03.xml": (
        "92.00.45.00.03", "NVIDIA", "Ampere", (None, None, 0, 0), (None, None, None),
        (None, None, None, None), (66.92, 400.0, 400.0, 400.0), (), True, "P0", None, (36, 89, 92),
        "Pass-Through", "Default", True, 0),
    "real/nvidia-smi-q-x__a100-sxm4-80gb__1of4gpu__driver535.54.03.xml": A100_80,
    "derived/nvidia-smi-q-x__a100-sxm4-80gb__8gpu__derived.xml": A100_80,
    "derived/nvidia-smi-q-x__a100-sxm4-80gb__4gpu__derived.xml": A100_80,
    "real/nvidia-smi-q-x__geforce-rtx-4090__1gpu__driver535.86.05.xml": (
        "95.02.18.80.5F", "GeForce", "Ada Lovelace", (None, None, None, None), (None, None, None),
        (0, 0, False, False), (26.84, 450.0, 450.0, 600.0), ("gpu_idle",), True, "P8", 0,
        (40, None, None), "None", "Default", True, 0),
    "real/nvidia-smi-q-x__rtx-4000-sff-ada__1gpu__driver595.84__dtd-v13.xml": (
        "95.04.53.00.01", "NVIDIA RTX", "Ada Lovelace", (None, None, None, None), (None, None, None),
        (0, 0, False, False), (8.81, 70.0, 70.0, 70.0), ("gpu_idle",), True, "P8", 0,
        (38, None, None), "None", "Default", True, 4),
    "real/nvidia-smi-q-x__tesla-t4__1gpu__driver515.105.01.xml": (
        "90.04.84.00.06", "NVIDIA", "Turing", (0, 0, 0, 0), (0, 0, False), (None, None, None, None),
        (26.78, 70.0, 70.0, 70.0), (), True, "P0", 0, (40, 93, 96), "Pass-Through", "Default", True, 2),
    # R418: "Ecc Mode" and "Virtualization mode" labels (read case-insensitively)
    "real/nvidia-smi-q__tesla-v100-sxm2-32gb__1of4gpu__driver418.67.txt": (
        "88.00.80.00.01", "Tesla", None, (0, 0, 0, 0), (0, 0, False), (None, None, None, None),
        (39.78, 300.0, 300.0, 300.0), ("gpu_idle",), True, "P0", 0, (38, 87, 90), "None", "Default",
        True, 0),
    "real/nvidia-smi-q__a10__1gpu__driver535.129.03.txt": (
        "94.02.5C.00.04", "NVIDIA", "Ampere", (0, 0, 0, 0), (None, None, None), (0, 4, True, False),
        (43.89, 150.0, 150.0, 150.0), ("gpu_idle",), True, "P8", 0, (33, 98, 101), "Pass-Through",
        "Default", True, 0),
    # 580: only the T.Limit margins are printed (-2 C / -8 C), no absolute slowdown/shutdown
    H200_XML: H200_580,
    H200_TEXT: H200_580,  # same second as the XML; the 580 text says "Utilization > GPU" (was "Gpu")
    H200_TABLE: _table(0, 77.0, 700.0, "P0", 0, 35),
    # asked for 7 fields only; the mask column came back headed clocks_event_reasons.active
    H200_CSV: (
        None, None, None, (None, None, None, None), (None, None, None), (None, None, None, None),
        (None, None, None, None), ("gpu_idle",), True, None, None, (None, None, None), None, None,
        False, 0),
    "real/nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt": (
        "96.00.74.00.0D", "NVIDIA", "Hopper", (0, 0, 0, 0), (None, None, None), (0, 0, False, False),
        (67.74, 700.0, 700.0, 700.0), ("hw_slowdown", "hw_power_brake_slowdown"), True, "P0", 0,
        (29, None, None), "None", "Default", True, 0),
    "real/nvidia-smi-query-gpu__h100-80gb-hbm3__1gpu__driver590.48.01__idle.csv": (
        "96.00.A5.00.01", None, None, (0, 0, 0, 0), (None, None, None), (0, 0, False, False),
        (69.85, 700.0, 700.0, 700.0), ("gpu_idle",), True, "P0", 0, (41, None, None), None, "Default",
        False, 0),
    # MIG mode Enabled: utilization [N/A], the remap fields [N/A] as the capture prints them
    "real/nvidia-smi-query-gpu__h100-80gb-hbm3-mig__1gpu__driver590.48.01__idle.csv": (
        "96.00.A5.00.01", None, None, (0, 0, 0, 0), (None, None, None), (None, None, None, None),
        (71.15, 700.0, 700.0, 700.0), ("gpu_idle",), True, "P0", None, (42, None, None), None, "Default",
        False, 0),
    "real/nvidia-smi-query-gpu__h200__1gpu__driver590.48.01__load.csv": (
        "96.00.A5.00.03", None, None, (0, 0, 0, 0), (None, None, None), (0, 0, False, False),
        (627.4, 700.0, 700.0, 700.0), (), True, "P0", 100, (52, None, None), None, "Default", False, 0),
    "real/nvidia-smi-query-gpu-nounits__tesla-p100-pcie-16gb__1gpu.csv": (
        None, None, None, (None, None, None, None), (None, None, None), (None, None, None, None),
        (28.16, None, None, None), (), False, "P0", 0, (37, None, None), None, None, False, 0),
    "real/nvidia-smi__a100-sxm4-40gb__1gpu__driver550.144.03.txt": _table(0, 52.0, 400.0, "P0", 0, 32),
    "real/nvidia-smi__a100-sxm4-80gb__4gpu__driver555.42.02.txt": _table(0, 59.0, 500.0, "P0", 0, 25),
    "real/nvidia-smi__a10__1gpu__driver550.90.12.txt": _table(0, 15.0, 150.0, "P8", 0, 33),
    # empty process table (no "No running processes found") while 404 MiB are in use
    "real/nvidia-smi__geforce-rtx-3090__1gpu__driver535.161.07.txt":
        _table(None, 30.0, 320.0, "P8", 0, 26, known=False),
    "real/nvidia-smi__geforce-rtx-4090__8gpu__driver550.127.05.txt": _table(None, 20.0, 450.0, "P8", 0, 28),
    "real/nvidia-smi__geforce-rtx-4090-48gb-modded__2gpu__driver580.105.08__vastai.txt":
        _table(None, 207.0, 450.0, "P0", 100, 61),
    "real/nvidia-smi__h100-80gb-hbm3__8gpu__driver550.90.07.txt": _table(0, 72.0, 700.0, "P0", 0, 27),
    # MIG on: the ECC cell says "On" and GPU-Util "N/A"
    "real/nvidia-smi__h200-mig__1gpu__driver590.48.01__load.txt":
        _table(None, 295.0, 700.0, "P0", None, 36, procs=3),
    "real/nvidia-smi__h200__8gpu__driver570.158.01.txt": _table(0, 120.0, 700.0, "P0", 0, 31),
    "real/nvidia-smi__l40s__1gpu__driver550.127.05.txt": _table(0, 33.0, 350.0, "P8", 0, 31),
    "real/nvidia-smi__rtx-6000-ada__4gpu__driver575.51.03.txt": _table(None, 5.0, 300.0, "P8", 0, 31),
    # the -l logs: GPU 0 as its newest row reads it
    "real/nvidia-smi-query-gpu-l3__tesla-v100-pcie-16gb__1gpu__driver565.57.01__4-samples.csv": (
        *NO_DETAIL, (None, None, None, None), (None, None, None), (None, None, None, None),
        (None, None, None, None), (), False, None, 99, (33, None, None), None, None, False, 0),
    "real/nvidia-smi-query-gpu-l1__gh200__1gpu__5-samples__elided.csv": (
        *NO_DETAIL, (None, None, None, None), (None, None, None), (None, None, None, None),
        (136.9, None, None, None), (), False, None, 0, (33, None, None), None, None, False, 0),
    "real/nvidia-smi-query-gpu-l1__1gpu__3-samples__index-power-clocks.csv": (
        *NO_DETAIL, (None, None, None, None), (None, None, None), (None, None, None, None),
        (205.51, None, None, None), (), False, None, None, (None, None, None), None, None, False, 0),
    "real/nvidia-smi-query-gpu-l1__1gpu-11gb__3-samples__no-index.csv": (
        *NO_DETAIL, (None, None, None, None), (None, None, None), (None, None, None, None),
        (None, None, None, None), (), False, "P2", 100, (85, None, None), None, None, False, 0),
    VGPU_UNLICENSED: VGPU_Q,
    VGPU_GRACE: VGPU_Q,
    # Jetson's integrated GPU: every health cell N/A; "No running processes found"
    JETSON_TABLE: (
        *NO_DETAIL, (None, None, None, None), (None, None, None), (None, None, None, None),
        (None, None, None, None), (), False, None, None, (None, None, None), None, None, True, 0),
}  # fmt: skip


def health(gpu: GpuInfo) -> tuple[object, ...]:
    return (
        gpu.vbios,
        gpu.product_brand,
        gpu.product_architecture,
        (
            gpu.ecc_volatile_correctable,
            gpu.ecc_volatile_uncorrectable,
            gpu.ecc_aggregate_correctable,
            gpu.ecc_aggregate_uncorrectable,
        ),
        (gpu.retired_pages_sbe, gpu.retired_pages_dbe, gpu.retired_pages_pending),
        (
            gpu.remapped_rows_correctable,
            gpu.remapped_rows_uncorrectable,
            gpu.remapped_rows_pending,
            gpu.remapped_rows_failure,
        ),
        (gpu.power_draw_w, gpu.power_limit_w, gpu.default_power_limit_w, gpu.max_power_limit_w),
        gpu.clock_event_reasons,
        gpu.clock_event_reasons_known,
        gpu.performance_state,
        gpu.utilization_gpu_pct,
        (gpu.temperature_c, gpu.temperature_slowdown_c, gpu.temperature_max_c),
        gpu.virtualization_mode,
        gpu.compute_mode,
        gpu.processes_known,
        len(gpu.processes),
    )


def test_health_table_covers_every_capture() -> None:
    assert set(HEALTH) == {name for name, *_ in CASES}


@pytest.mark.parametrize("name", sorted(HEALTH))
def test_health_facts(name: str) -> None:
    report = parse_any(read(FIXTURES / name))
    assert health(report.gpus[0]) == HEALTH[name]
    for gpu in report.gpus:
        assert set(gpu.clock_event_reasons) <= set(CLOCK_EVENT_REASONS)
        # those queries asked for neither temperature.gpu nor memory.used; Jetson prints N/A
        if name not in (
            H200_CSV,
            JETSON_TABLE,
            "real/nvidia-smi-query-gpu-l1__1gpu__3-samples__index-power-clocks.csv",
        ):
            assert gpu.memory_used_mib is not None
            # a vGPU guest cannot read the board's sensor: N/A
            assert (gpu.temperature_c is None) == (gpu.virtualization_mode == "VGPU")


@pytest.mark.parametrize(
    ("name", "serial", "uuid", "pcie"),
    [
        ("real/nvidia-smi-q-x__tesla-t4__1gpu__driver515.105.01.xml",
         "0000000000000", "GPU-d37e67a5-91dd-3774-a5cb-99096249601a", (3, 3, 8, 16)),
        ("real/nvidia-smi-q-x__geforce-rtx-4090__1gpu__driver535.86.05.xml",
         None, "GPU-71d1acc2-662d-2166-bf9f-65272d2fc437", (1, 3, 16, 16)),
        ("real/nvidia-smi-q-x__rtx-4000-sff-ada__1gpu__driver595.84__dtd-v13.xml",
         "REDACTED", "GPU-37037c3f-65c8-ec4d-24a9-420204ad8026", (1, 4, 16, 16)),
        ("real/nvidia-smi-q__a10__1gpu__driver535.129.03.txt",
         "1324521052681", "GPU-73d12ef7-f589-f867-4259-c7090ab44736", (4, 4, 16, 16)),
        # anonymised by the contributor: zero serial and UUID
        ("real/nvidia-smi-query-gpu__h100-80gb-hbm3__1gpu__driver590.48.01__idle.csv",
         "0000000000000", "GPU-00000000-0000-0000-0000-000000000000", (5, 5, 16, 16)),
        ("real/nvidia-smi-query-gpu__h200__1gpu__driver590.48.01__load.csv",
         "0000000000000", "GPU-00000000-0000-0000-0000-000000000000", (5, 5, 16, 16)),
        (H200_XML, "1653924042524", "GPU-e7c560dc-cf75-7469-658e-ed0adc9be226", (5, 5, 16, 16)),
        (H200_TEXT, "1653924042524", "GPU-e7c560dc-cf75-7469-658e-ed0adc9be226", (5, 5, 16, 16)),
        # the table has neither identifiers nor link state
        ("real/nvidia-smi__h200__8gpu__driver570.158.01.txt", None, None, (None, None, None, None)),
        (H200_TABLE, None, None, (None, None, None, None)),
    ],
)  # fmt: skip
def test_identity_and_link_every_format(
    name: str, serial: str | None, uuid: str | None, pcie: tuple[int | None, ...]
) -> None:
    gpu = parse_any(read(FIXTURES / name)).gpus[0]
    assert (gpu.serial, gpu.uuid) == (serial, uuid)
    assert (gpu.pcie_gen_current, gpu.pcie_gen_max, gpu.pcie_width_current, gpu.pcie_width_max) == pcie


def test_xml_processes_t4_and_v13() -> None:
    t4 = parse_xml(read(REAL / "nvidia-smi-q-x__tesla-t4__1gpu__driver515.105.01.xml")).gpus[0]
    assert t4.processes == (
        GpuProcess(675, "/usr/lib/xorg/Xorg", "G", 22),
        GpuProcess(5762, "python", "C", 1005),
    )
    ada = parse_xml(read(REAL / "nvidia-smi-q-x__rtx-4000-sff-ada__1gpu__driver595.84__dtd-v13.xml")).gpus[0]
    assert ada.processes == (
        GpuProcess(1842, "cosmic-comp", "G", 410),
        GpuProcess(3190, "/usr/bin/code", "G", 451),
        GpuProcess(4937, "python", "C", 160),
        GpuProcess(34626, "/usr/lib/chromium/chromium", "C+G", 183),
    )
    # <processes /> (self-closing) and an empty element both mean: known, none running
    a100 = parse_xml(read(REAL / "nvidia-smi-q-x__a100-sxm4-80gb__1of4gpu__driver535.54.03.xml")).gpus[0]
    assert a100.processes == () and a100.processes_known


def test_table_processes_mig() -> None:
    report = parse_table(read(REAL / "nvidia-smi__h200-mig__1gpu__driver590.48.01__load.txt"))
    assert report.gpus[0].processes == (
        GpuProcess(12249, "/root/tools/memhog", "C", 2194),
        GpuProcess(12250, "/root/tools/memhog", "C", 1170),
        GpuProcess(12267, "./gpu_burn", "C", 13526),
    )
    assert report.warnings == ()


def test_table_processes_old_layout_without_gi_ci() -> None:
    # Before R470 the process table had no GI/CI columns (row layout as drivers 396..460 print it).
    text = read(REAL / "nvidia-smi__a10__1gpu__driver550.90.12.txt")
    old = text.replace(
        "|  No running processes found                                                             |",
        "|    0       489      G   /usr/bin/X                                  1025MiB |\n"
        "|    0      6620    C+G   kwin_x11                                     313MiB |",
    )
    gpu = parse_table(old).gpus[0]
    assert gpu.processes == (
        GpuProcess(489, "/usr/bin/X", "G", 1025),
        GpuProcess(6620, "kwin_x11", "C+G", 313),
    )
    assert gpu.processes_known


def test_table_empty_process_table_is_unknown() -> None:
    report = parse_table(read(REAL / "nvidia-smi__geforce-rtx-3090__1gpu__driver535.161.07.txt"))
    assert not report.gpus[0].processes_known
    assert any("process table is empty" in w for w in report.warnings)


def test_text_q_processes() -> None:
    text = read(REAL / "nvidia-smi-q__a10__1gpu__driver535.129.03.txt")
    assert "    Processes                             : None" in text
    with_gi = text.replace(
        "    Processes                             : None",
        "    Processes\n"
        "        GPU instance ID                   : N/A\n"
        "        Compute instance ID               : N/A\n"
        "        Process ID                        : 5762\n"
        "            Type                          : C\n"
        "            Name                          : python train.py\n"
        "            Used GPU Memory               : 1005 MiB\n"
        "        GPU instance ID                   : N/A\n"
        "        Compute instance ID               : N/A\n"
        "        Process ID                        : 675\n"
        "            Type                          : G\n"
        "            Name                          : /usr/lib/xorg/Xorg\n"
        "            Used GPU Memory               : 22 MiB",
    )
    gpu = parse_text_q(with_gi).gpus[0]
    expected = (
        GpuProcess(5762, "python train.py", "C", 1005),
        GpuProcess(675, "/usr/lib/xorg/Xorg", "G", 22),
    )
    assert gpu.processes == expected
    assert gpu.processes_known
    without_gi = "\n".join(line for line in with_gi.splitlines() if "instance ID" not in line)
    assert parse_text_q(without_gi).gpus[0].processes == expected
    missing = "\n".join(line for line in text.splitlines() if "Processes" not in line)
    assert not parse_text_q(missing).gpus[0].processes_known


def test_text_q_h100_power_brake_on_every_gpu() -> None:
    report = parse_text_q(read(REAL / "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt"))
    assert {g.clock_event_reasons for g in report.gpus} == {("hw_slowdown", "hw_power_brake_slowdown")}
    assert [g.power_draw_w for g in report.gpus][:2] == [67.74, 69.52]


def test_xml_old_ecc_schema_and_throttle_reasons() -> None:
    # The pre-v11 layout: <single_bit>/<double_bit> with a <total>, <clocks_throttle_reasons>,
    # <power_readings> with <power_limit> and <enforced_power_limit> (values made up).
    text = """<?xml version="1.0" ?>
<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v10.dtd">
<nvidia_smi_log><driver_version>418.87.01</driver_version><attached_gpus>1</attached_gpus>
<gpu id="00000000:00:04.0"><product_name>Tesla V100-SXM2-16GB</product_name>
<ecc_errors><volatile>
  <single_bit><device_memory>3</device_memory><register_file>0</register_file><total>3</total></single_bit>
  <double_bit><device_memory>1</device_memory><register_file>N/A</register_file><total>1</total></double_bit>
</volatile><aggregate>
  <single_bit><total>12</total></single_bit><double_bit><total>2</total></double_bit>
</aggregate></ecc_errors>
<retired_pages>
  <multiple_single_bit_retirement><retired_count>2</retired_count></multiple_single_bit_retirement>
  <double_bit_retirement><retired_count>1</retired_count></double_bit_retirement>
  <pending_retirement>Yes</pending_retirement>
</retired_pages>
<clocks_throttle_reasons>
  <clocks_throttle_reason_gpu_idle>Not Active</clocks_throttle_reason_gpu_idle>
  <clocks_throttle_reason_sw_power_cap>Active</clocks_throttle_reason_sw_power_cap>
  <clocks_throttle_reason_hw_thermal_slowdown>Active</clocks_throttle_reason_hw_thermal_slowdown>
  <clocks_throttle_reason_display_clocks_setting>Active</clocks_throttle_reason_display_clocks_setting>
</clocks_throttle_reasons>
<power_readings><power_draw>250.5 W</power_draw><power_limit>300.00 W</power_limit>
  <default_power_limit>300.00 W</default_power_limit><enforced_power_limit>250.00 W</enforced_power_limit>
  <max_power_limit>300.00 W</max_power_limit></power_readings>
<gpu_virtualization_mode><virtualization_mode>VGPU</virtualization_mode></gpu_virtualization_mode>
</gpu></nvidia_smi_log>
"""
    report = parse_xml(text)
    assert report.warnings == ()
    gpu = report.gpus[0]
    assert (gpu.ecc_volatile_correctable, gpu.ecc_volatile_uncorrectable) == (3, 1)
    assert (gpu.ecc_aggregate_correctable, gpu.ecc_aggregate_uncorrectable) == (12, 2)
    assert (gpu.retired_pages_sbe, gpu.retired_pages_dbe, gpu.retired_pages_pending) == (2, 1, True)
    assert gpu.clock_event_reasons == ("sw_power_cap", "hw_thermal_slowdown", "display_clock_setting")
    assert (gpu.power_limit_w, gpu.default_power_limit_w) == (250.0, 300.0)  # enforced, not requested
    assert gpu.virtualization_mode == "VGPU"
    assert not gpu.processes_known  # no <processes> element


def test_xml_v13_sram_split_is_summed() -> None:
    text = read(REAL / "nvidia-smi-q-x__rtx-4000-sff-ada__1gpu__driver595.84__dtd-v13.xml")
    volatile = text.index("<volatile>")
    edited = text[:volatile] + (
        text[volatile:]
        .replace("<sram_correctable>N/A</sram_correctable>", "<sram_correctable>7</sram_correctable>", 1)
        .replace("<sram_uncorrectable_parity>N/A<", "<sram_uncorrectable_parity>1<", 1)
        .replace("<sram_uncorrectable_secded>N/A<", "<sram_uncorrectable_secded>2<", 1)
        .replace("<dram_uncorrectable>N/A<", "<dram_uncorrectable>4<", 1)
    )
    gpu = parse_xml(edited).gpus[0]
    assert (gpu.ecc_volatile_correctable, gpu.ecc_volatile_uncorrectable) == (7, 7)
    assert gpu.ecc_aggregate_uncorrectable is None


def test_text_q_h100_sram_split_fields_present() -> None:
    text = read(REAL / "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt")
    edited = text.replace("SRAM Uncorrectable SEC-DED    : 0", "SRAM Uncorrectable SEC-DED    : 3", 1)
    gpu = parse_text_q(edited).gpus[0]
    assert (gpu.ecc_volatile_uncorrectable, gpu.ecc_aggregate_uncorrectable) == (3, 0)


@pytest.mark.parametrize(
    ("mask", "reasons"),
    [
        ("0x0000000000000000", ()),
        ("0x0000000000000001", ("gpu_idle",)),
        ("0x0000000000000004", ("sw_power_cap",)),
        ("0x0000000000000088", ("hw_slowdown", "hw_power_brake_slowdown")),
        ("0x0000000000000060", ("sw_thermal_slowdown", "hw_thermal_slowdown")),
        ("0x0000000000000112", ("applications_clocks_setting", "sync_boost", "display_clock_setting")),
    ],
)
@pytest.mark.parametrize("field", ["clocks_throttle_reasons.active", "clocks_event_reasons.active"])
def test_csv_reason_mask(field: str, mask: str, reasons: tuple[str, ...]) -> None:
    report = parse_query_csv(f"index, name, {field}\n0, NVIDIA H100, {mask}\n", ())
    assert report.gpus[0].clock_event_reasons == reasons
    assert report.gpus[0].clock_event_reasons_known
    assert report.warnings == ()


def test_csv_reason_mask_reads_nvmls_unknown_reason_too() -> None:
    """A mask carries bit 63 (NVML's `unknown`) as it does the others: read there, Not Active
    unless set (it was left out of the reasons read, so a GPU read so looked as if it had not
    read that reason beside a GPU that had)."""
    gpu = parse_query_csv("index, clocks_event_reasons.active\n0, 0x0000000000000000\n", ()).gpus[0]
    assert "unknown" in gpu.clock_event_reasons_read and gpu.clock_event_reasons == ()


def test_csv_reason_mask_odd_values() -> None:
    report = parse_query_csv("index, clocks_throttle_reasons.active\n0, 0x0000000000000201\n", ())
    # (a bit this tool does not know is kept, never dropped: it is an active reason all the same)
    assert report.gpus[0].clock_event_reasons == ("gpu_idle", "unknown_bit_9")
    assert any("unknown clock event reason bits 0x200" in w for w in report.warnings)
    for value in ("[N/A]", "[Not Supported]", "zzz"):
        gpu = parse_query_csv(f"index, clocks_throttle_reasons.active\n0, {value}\n", ()).gpus[0]
        assert not gpu.clock_event_reasons_known


def test_csv_per_reason_columns_without_mask() -> None:
    text = (
        "index, clocks_event_reasons.gpu_idle, clocks_event_reasons.hw_thermal_slowdown\n"
        "0, Not Active, Active\n"
    )
    gpu = parse_query_csv(text, ()).gpus[0]
    assert gpu.clock_event_reasons == ("hw_thermal_slowdown",)
    assert gpu.clock_event_reasons_known


def test_csv_mask_agrees_with_per_reason_columns_in_capture() -> None:
    text = read(REAL / "nvidia-smi-query-gpu__h100-80gb-hbm3__1gpu__driver590.48.01__idle.csv")
    from_mask = parse_query_csv(text, ()).gpus[0].clock_event_reasons
    no_mask = text.replace("clocks_event_reasons.active,", "clocks_event_reasons.ignored,", 1)
    assert parse_query_csv(no_mask, ()).gpus[0].clock_event_reasons == from_mask == ("gpu_idle",)


def test_csv_retired_and_remapped_yes() -> None:
    text = (
        "index, retired_pages.single_bit_ecc.count, retired_pages.double_bit.count, "
        "retired_pages.pending, remapped_rows.correctable, remapped_rows.uncorrectable, "
        "remapped_rows.pending, remapped_rows.failure, virtualization_mode\n"
        "0, 4, 1, Yes, 2, 3, Yes, No, Pass-Through\n"
    )
    gpu = parse_query_csv(text, ()).gpus[0]
    assert (gpu.retired_pages_sbe, gpu.retired_pages_dbe, gpu.retired_pages_pending) == (4, 1, True)
    assert (gpu.remapped_rows_correctable, gpu.remapped_rows_uncorrectable) == (2, 3)
    assert (gpu.remapped_rows_pending, gpu.remapped_rows_failure) == (True, False)
    assert gpu.virtualization_mode == "Pass-Through"


def test_unknown_xml_reason_warns() -> None:
    text = read(REAL / "nvidia-smi-q-x__geforce-rtx-4090__1gpu__driver535.86.05.xml").replace(
        "<clocks_event_reason_sync_boost>Not Active</clocks_event_reason_sync_boost>",
        "<clocks_event_reason_future_thing>Active</clocks_event_reason_future_thing>",
    )
    report = parse_xml(text)
    # (active, so kept under its own name after the known ones, never dropped)
    assert report.gpus[0].clock_event_reasons == ("gpu_idle", "future_thing")
    assert any("future_thing" in w for w in report.warnings)


K20M_XML = "nvidia-smi-q-x__tesla-k20m__1gpu__driver340.24__dtd-v6__icsw.xml"


def test_an_active_unknown_throttle_reason_of_an_old_driver_is_kept() -> None:
    """The real driver-340 K20m `-q -x` with its <clocks_throttle_reason_unknown> edited in-test
    from Not Active to Active (NVML's nvmlClocksThrottleReasonUnknown: "some other unspecified
    factor is reducing the clocks"); the same reason as the CSV mask's bit 63."""
    text = read(REAL / K20M_XML)
    edited = text.replace(
        "<clocks_throttle_reason_unknown>Not Active<", "<clocks_throttle_reason_unknown>Active<"
    )
    assert edited != text
    whole = parse_xml(text)
    assert whole.gpus[0].clock_event_reasons == ("applications_clocks_setting",)
    assert not any("unknown" in w for w in whole.warnings)  # (NVML's own reason, Not Active)
    assert parse_xml(edited).gpus[0].clock_event_reasons == ("applications_clocks_setting", "unknown")
    mask = parse_query_csv("index, clocks_throttle_reasons.active\n0, 0x8000000000000001\n", ())
    assert mask.gpus[0].clock_event_reasons == ("gpu_idle", "unknown")


def test_the_old_user_defined_clocks_reason_is_the_applications_clocks_setting() -> None:
    """R2xx-R3xx's name of reason 0x2, `User Defined Clocks`: the K20m capture's
    applications_clocks_setting element renamed in-test to clocks_throttle_reason_user_defined_clocks."""
    text = read(REAL / K20M_XML).replace(
        "clocks_throttle_reason_applications_clocks_setting", "clocks_throttle_reason_user_defined_clocks"
    )
    report = parse_xml(text)
    assert report.gpus[0].clock_event_reasons == ("applications_clocks_setting",)
    assert not any("user_defined" in w for w in report.warnings)


NVIDIA_SMI_FILES = sorted(name for name, *_ in CASES)


@pytest.mark.parametrize("name", NVIDIA_SMI_FILES)
def test_truncated_captures_never_raise(name: str) -> None:
    text = read(FIXTURES / name)
    for cut in sorted({1, 7, len(text) // 3, len(text) // 2, len(text) - len(text) // 5, len(text) - 3}):
        part = text[:cut]
        for parser in (parse_any, parse_xml, parse_table, parse_text_q):
            assert isinstance(parser(part), GpuReport)
        assert isinstance(parse_query_csv(part, QUERY_FIELDS), GpuReport)
        assert isinstance(parse_query_csv(part, ()), GpuReport)


@pytest.mark.parametrize("name", NVIDIA_SMI_FILES)
def test_other_parsers_on_wrong_format_never_raise(name: str) -> None:
    text = read(FIXTURES / name)
    for parser in (parse_xml, parse_table, parse_text_q):
        assert isinstance(parser(text), GpuReport)
    assert isinstance(parse_query_csv(text, QUERY_FIELDS), GpuReport)


def _repair_state(gpu: GpuInfo) -> tuple[object, ...]:
    return (
        gpu.unrepairable_memory,
        gpu.channel_repair_pending,
        gpu.tpc_repair_pending,
        gpu.sram_threshold_exceeded,
        (gpu.remap_banks_max, gpu.remap_banks_high, gpu.remap_banks_partial),
        (gpu.remap_banks_low, gpu.remap_banks_none),
        (gpu.mig_mode, gpu.mig_mode_pending),
    )


def test_driver_580_memory_repair_fields_xml_and_text_agree() -> None:
    # the same H200 in the same second: "No" everywhere, 3072 banks with every spare row left
    expected = (False, False, False, False, (3072, 0, 0), (0, 0), ("Disabled", "Disabled"))
    assert _repair_state(parse_xml(read(FIXTURES / H200_XML)).gpus[0]) == expected
    assert _repair_state(parse_text_q(read(FIXTURES / H200_TEXT)).gpus[0]) == expected


def test_memory_repair_fields_na_or_absent_stay_unknown() -> None:
    # DTD v13 RTX 4000 Ada: unrepairable memory and SRAM threshold N/A, repairs "No"
    ada = parse_xml(read(REAL / "nvidia-smi-q-x__rtx-4000-sff-ada__1gpu__driver595.84__dtd-v13.xml"))
    assert _repair_state(ada.gpus[0]) == (None, False, False, None, (96, 0, 0), (0, 0), (None, None))
    # driver 535 (DTD v12): no repair flags at all; MIG pending as reported
    a100 = parse_xml(read(REAL / "nvidia-smi-q-x__a100-sxm4-80gb__1of4gpu__driver535.54.03.xml")).gpus[0]
    assert (a100.unrepairable_memory, a100.channel_repair_pending, a100.tpc_repair_pending) == (None,) * 3
    assert (a100.mig_mode, a100.mig_mode_pending) == ("Enabled", "Enabled")
    # driver 515 T4: page retirement, no row remapper, no histogram
    t4 = parse_xml(read(REAL / "nvidia-smi-q-x__tesla-t4__1gpu__driver515.105.01.xml")).gpus[0]
    assert _repair_state(t4) == (None, None, None, None, (None,) * 3, (None,) * 2, (None, None))


def test_memory_repair_yes_values_parse_true() -> None:
    # the real H200 capture with each repair flag flipped to "Yes" (one field each, by replace)
    text = read(FIXTURES / H200_XML)
    for tag in (
        "unrepairable_memory",
        "channel_repair_pending",
        "tpc_repair_pending",
        "sram_threshold_exceeded",
    ):
        assert text.count(f"<{tag}>No<") == 1
        text = text.replace(f"<{tag}>No<", f"<{tag}>Yes<")
    text = text.replace("<row_remapper_histogram_none>0 bank(s)<", "<row_remapper_histogram_none>1 bank(s)<")
    gpu = parse_xml(text).gpus[0]
    assert _repair_state(gpu)[:4] == (True, True, True, True)
    assert gpu.remap_banks_none == 1


def test_csv_mig_pending() -> None:
    gpu = parse_query_csv("index, mig.mode.current, mig.mode.pending\n0, Disabled, Enabled\n", ()).gpus[0]
    assert (gpu.mig_mode, gpu.mig_mode_pending) == ("Disabled", "Enabled")


def test_table_integrated_gpu_without_bus_id() -> None:
    """Jetson's table prints `N/A` where a discrete GPU's PCI address is: the GPU row is still a
    GPU (it was 'no GPU rows found', so acceptance failed the driver on a working board)."""
    report = parse_table(read(FIXTURES / JETSON_TABLE))
    gpu = report.gpus[0]
    assert (gpu.index, gpu.pci_bus_id, gpu.persistence_mode, gpu.ecc_mode) == (0, None, None, None)
    assert gpu.processes_known and gpu.processes == ()
    assert "no GPU rows found in nvidia-smi table" not in report.warnings


# Old `nvidia-smi -q` labels (drivers R418-R470): `Ecc Mode`, `Virtualization mode`.
#
# The -q text parser must read section and key names case-insensitively: a real R418 capture
# (Tesla V100-SXM2-32GB, driver 418.67; tests/fixtures/real/SOURCES.md) prints `Ecc Mode` and
# `Virtualization mode`, where newer drivers print `ECC Mode` and `Virtualization Mode`.

FIXTURE = (
    Path(__file__).resolve().parents[2]
    / "fixtures"
    / "real"
    / "nvidia-smi-q__tesla-v100-sxm2-32gb__1of4gpu__driver418.67.txt"
)


def test_r418_capture_prints_the_old_labels() -> None:
    text = FIXTURE.read_text(encoding="utf-8")
    assert "\n    Ecc Mode\n" in text and "ECC Mode" not in text
    assert "Virtualization mode         : None" in text


def test_r418_ecc_mode_is_read() -> None:
    gpu = parse_text_q(FIXTURE.read_text(encoding="utf-8")).gpus[0]
    assert gpu.name == "Tesla V100-SXM2-32GB"
    assert gpu.ecc_mode == "Enabled"  # "Ecc Mode / Current : Enabled"


def test_r418_virtualization_mode_is_read() -> None:
    gpu = parse_text_q(FIXTURE.read_text(encoding="utf-8")).gpus[0]
    assert gpu.virtualization_mode == "None"


def test_r418_other_fields_unchanged() -> None:
    gpu = parse_text_q(FIXTURE.read_text(encoding="utf-8")).gpus[0]
    assert gpu.pci_bus_id == "00000004:04:00.0"
    assert gpu.persistence_mode == "Enabled"
    assert gpu.memory_total_mib == 32480


def test_exact_case_wins_over_a_case_variant() -> None:
    """Where both spellings are present, the exact label is read (no guessing)."""
    text = (
        "GPU 00000000:07:00.0\n"
        "    Product Name                    : Tesla T4\n"
        "    ECC Mode\n"
        "        Current                     : Disabled\n"
        "    Ecc Mode\n"
        "        Current                     : Enabled\n"
    )
    assert parse_text_q(text).gpus[0].ecc_mode == "Disabled"


def test_r418_capture_is_one_of_four_and_says_so() -> None:
    """The author elided GPUs 1-3 (`...`): the report is incomplete, never a 1-GPU box."""
    report = parse_text_q(FIXTURE.read_text(encoding="utf-8"))
    assert (report.attached_gpus, len(report.gpus)) == (4, 1)
    assert "Attached GPUs says 4 but 1 GPU sections found" in report.warnings


# A fault marker belongs to its cell; PCIe replays, board part number, Fabric; ECC Disabled.
#
# Before: one `ERR!` (a fan sensor) made the whole GPU "unreadable" (faults), failing model,
# count and VRAM for a GPU whose name, memory and temperature read fine.

A40_ERR = FIXTURES / "public" / "nvidia-smi__a40__8gpu__driver525.60.13__gpu4-err.txt"
A100_CELL_ERR = (
    FIXTURES / "edited" / "nvidia-smi__a100-sxm4-80gb__4gpu__driver555.42.02__fan-mig-power-err__edited.txt"
)
H100_Q = REAL / "nvidia-smi-q__h100-80gb-hbm3__8gpu__driver535.161.08.txt"
H200_Q = REAL / "nvidia-smi-q__h200__1gpu__driver580.159.04.txt"
H200_X = REAL / "nvidia-smi-q-x__h200__1gpu__driver580.159.04.xml"
A100_X = REAL / "nvidia-smi-q-x__a100-sxm4-80gb__1of4gpu__driver535.54.03.xml"
RTX4090_X = REAL / "nvidia-smi-q-x__geforce-rtx-4090__1gpu__driver535.86.05.xml"
RTX4090_TABLE = REAL / "nvidia-smi__geforce-rtx-4090__8gpu__driver550.127.05.txt"


def test_one_err_cell_is_that_cells_fault_not_an_unreadable_gpu() -> None:
    gpus = parse_table(A100_CELL_ERR.read_text()).gpus
    assert [g.index for g in gpus] == [0, 1, 2, 3]
    assert not any(g.faults for g in gpus)
    fan = gpus[2]
    assert fan.cell_faults == ("fan sensor reads ERR!", "MIG mode reads ERR!")
    assert (fan.name, fan.memory_total_mib, fan.temperature_c) == ("NVIDIA A100-SXM4-80GB", 81920, 23)
    assert (fan.power_draw_w, fan.power_limit_w, fan.mig_mode) == (58.0, 500.0, None)
    power = gpus[3]
    assert power.cell_faults == ("power draw reads ERR!",)
    assert (power.power_draw_w, power.power_limit_w, power.temperature_c) == (None, 500.0, 23)
    assert gpus[0].cell_faults == () and gpus[0].mig_mode == "Disabled"


def test_a_row_of_err_is_still_an_unreadable_gpu() -> None:
    gpus = parse_table(A40_ERR.read_text()).gpus
    assert [g.index for g in gpus if g.faults] == [4]
    assert gpus[4].faults == ("ERR!",) and gpus[4].cell_faults == ()
    assert not any(g.cell_faults for g in gpus)


def test_err_in_one_q_field_is_that_fields_fault() -> None:
    text = H200_Q.read_text()
    line = "        GPU Current Temp                               : 34 C"
    assert line in text
    gpu = parse_text_q(text.replace(line, line.replace("34 C", "ERR!"))).gpus[0]
    assert gpu.faults == () and gpu.temperature_c is None
    assert gpu.cell_faults == ("temperature sensor reads ERR!",)
    assert (gpu.name, gpu.memory_total_mib) == ("NVIDIA H200", 143771)


def test_gpu_requires_reset_in_q_is_the_whole_gpu() -> None:
    text = H200_Q.read_text()
    line = "        GPU Current Temp                               : 34 C"
    gpu = parse_text_q(text.replace(line, line.replace("34 C", "[GPU requires reset]"))).gpus[0]
    assert gpu.faults == ("GPU requires reset",) and gpu.cell_faults == ()


def test_err_in_one_xml_field_is_that_fields_fault() -> None:
    text = H200_X.read_text()
    assert "<gpu_temp>34 C</gpu_temp>" in text
    gpu = parse_xml(text.replace("<gpu_temp>34 C</gpu_temp>", "<gpu_temp>ERR!</gpu_temp>")).gpus[0]
    assert gpu.faults == () and gpu.cell_faults == ("temperature sensor reads ERR!",)
    assert gpu.temperature_c is None and gpu.name == "NVIDIA H200"
    lost = parse_xml(
        text.replace("<product_name>NVIDIA H200</product_name>", "<product_name>ERR!</product_name>")
    )
    assert lost.gpus[0].faults == ("ERR!",)


def test_unknown_error_in_one_csv_field_is_that_fields_fault() -> None:
    path = REAL / "nvidia-smi-query-gpu__h100-80gb-hbm3__1gpu__driver590.48.01__idle.csv"
    header, row = path.read_text().splitlines()[:2]
    names = [h.split(" [")[0] for h in header.split(", ")]
    cells = row.split(", ")
    at = names.index("temperature.gpu")
    cells[at] = "[Unknown Error]"
    gpu = parse_query_csv(header + "\n" + ", ".join(cells) + "\n", ()).gpus[0]
    assert gpu.faults == () and gpu.temperature_c is None
    assert gpu.cell_faults == ("temperature.gpu reads [Unknown Error]",)


def test_pcie_replays_board_part_and_fabric_from_q_text() -> None:
    gpus = parse_text_q(H100_Q.read_text()).gpus
    assert (gpus[0].pcie_replays, gpus[0].pcie_replay_rollovers) == (67, 0)
    assert gpus[1].pcie_replays == 63
    assert gpus[0].board_part_number == "692-2G520-0200-000"
    assert all((g.fabric_state, g.fabric_status) == ("Completed", "Success") for g in gpus)
    h200 = parse_text_q(H200_Q.read_text()).gpus[0]
    assert (h200.pcie_replays, h200.pcie_replay_rollovers) == (1, 0)
    assert h200.board_part_number == "692-2G520-0282-000"
    assert (h200.fabric_state, h200.fabric_status) == (None, None)  # N/A in a VM


def test_pcie_replays_board_part_and_fabric_from_xml() -> None:
    h200 = parse_xml(H200_X.read_text()).gpus[0]
    assert (h200.pcie_replays, h200.pcie_replay_rollovers) == (1, 0)
    assert h200.board_part_number == "692-2G520-0282-000"
    assert (h200.fabric_state, h200.fabric_status) == (None, None)
    # -q -x and -q of the same minute agree field by field, the new fields too
    assert parse_xml(H200_X.read_text()).gpus == parse_text_q(H200_Q.read_text()).gpus
    a100 = parse_xml(A100_X.read_text()).gpus[0]
    assert (a100.board_part_number, a100.pcie_replays) == ("692-2G506-0212-002", 0)
    assert parse_xml(RTX4090_X.read_text()).gpus[0].board_part_number is None  # N/A


def test_ecc_disabled_is_not_unknown_in_any_form() -> None:
    # the table's ECC column: "Off" = ECC disabled on a capable card, "N/A" = not supported
    assert {g.ecc_mode for g in parse_table(RTX4090_TABLE.read_text()).gpus} == {"Disabled"}
    jetson = parse_any((REAL / "nvidia-smi__jetson-agx-orin__1gpu__driver540.4.0.txt").read_text())
    assert jetson.gpus[0].ecc_mode is None
    assert parse_xml(RTX4090_X.read_text()).gpus[0].ecc_mode == "Disabled"
    a10 = parse_text_q((REAL / "nvidia-smi-q__a10__1gpu__driver535.129.03.txt").read_text()).gpus[0]
    assert a10.ecc_mode in ("Enabled", "Disabled")
    text = H200_Q.read_text().replace(
        "    ECC Mode\n        Current                                        : Enabled",
        "    ECC Mode\n        Current                                        : Disabled",
    )
    assert parse_text_q(text).gpus[0].ecc_mode == "Disabled"
    csv = "name, ecc.mode.current\nNVIDIA GeForce RTX 4090, Disabled\nTesla T4, [N/A]\n"
    assert [g.ecc_mode for g in parse_query_csv(csv, ()).gpus] == ["Disabled", None]


# A cut-off nvidia-smi output is an incomplete probe (GpuReport.complete False), never missing
# hardware. The cut captures are real fixtures sliced here at several places.

H100_TABLE = REAL / "nvidia-smi__h100-80gb-hbm3__8gpu__driver550.90.07.txt"
A100_X_1OF4 = REAL / "nvidia-smi-q-x__a100-sxm4-80gb__1of4gpu__driver535.54.03.xml"
H100_CSV = REAL / "nvidia-smi-query-gpu__h100-80gb-hbm3__1gpu__driver590.48.01__idle.csv"


@pytest.mark.parametrize("fraction", [0.2, 0.5, 0.75, 0.99])
def test_cut_xml_is_incomplete(fraction: float) -> None:
    text = H200_X.read_text()
    report = parse_xml(text[: int(len(text) * fraction)])
    # the cut <gpu> is read up to the cut, marked cut (its name closed above each cut here)
    [gpu] = report.gpus
    assert report.complete is False and gpu.record_cut and gpu.name == "NVIDIA H200"
    assert report.attached_gpus == 1 and report.driver_version == "580.159.04"
    assert any("incomplete probe, rerun" in w for w in report.warnings)


def test_complete_partial_listing_stays_complete() -> None:
    report = parse_xml(A100_X_1OF4.read_text())  # 1 of 4 GPUs, but a whole document
    assert report.complete is True and report.attached_gpus == 4 and len(report.gpus) == 1


@pytest.mark.parametrize("marker", ["    Product Name", "    PCI\n", "    Temperature\n", "    Fabric\n"])
def test_q_cut_inside_the_last_record(marker: str) -> None:
    text = H100_Q.read_text()
    at = text.index("GPU 00000000:3B:00.0")  # the second record
    cut = text[: text.index(marker, at) + len(marker) + 3]
    report = parse_text_q(cut)
    assert report.complete is False and report.attached_gpus == 8
    assert "the nvidia-smi -q output ends mid-record: incomplete probe, rerun" in report.warnings
    assert report.gpus[0].name == "NVIDIA H100 80GB HBM3"


def test_q_cut_mid_name_does_not_claim_a_wrong_model() -> None:
    text = H200_Q.read_text()
    cut = text[: text.index("NVIDIA H200") + len("NVIDIA H")]
    report = parse_text_q(cut)
    assert report.complete is False
    assert report.gpus[0].name == ""  # the cut value "NVIDIA H" is not read as a model


def test_whole_q_captures_are_complete() -> None:
    assert parse_text_q(H100_Q.read_text()).complete and parse_text_q(H200_Q.read_text()).complete


@pytest.mark.parametrize("fraction", [0.3, 0.5, 0.7, 0.9, 0.97])
def test_cut_table_is_incomplete(fraction: float) -> None:
    """A table cut before its Processes header is incomplete; one cut inside its Processes
    table (0.9, 0.97 of the real H100 table) has every GPU row whole: complete in its GPU facts,
    each GPU's process list open (the part cut away may hold its rows) unless the table said
    "No running processes found" before the cut (of every GPU: 0.97)."""
    text = H100_TABLE.read_text()
    cut = text[: int(len(text) * fraction)]
    report = parse_table(cut)
    if "Processes:" not in cut:
        assert report.complete is False
        assert any("incomplete probe, rerun" in w for w in report.warnings)
        assert report.gpus[-1].record_cut
    else:
        assert report.complete is True
        assert not any(g.record_cut for g in report.gpus)
        assert all(g.processes_open != g.processes_known for g in report.gpus)
        assert any("every GPU row was read" in w for w in report.warnings)
    assert parse_table(text).complete is True


def test_table_cut_at_a_row_border_is_incomplete() -> None:
    text = H100_TABLE.read_text()
    lines = text.splitlines(keepends=True)
    border = [i for i, line in enumerate(lines) if line.startswith("+----")][4]
    report = parse_any("".join(lines[: border + 1]))
    assert report.source == "table" and report.complete is False


def test_csv_last_line_cut_is_incomplete() -> None:
    header, row = H100_CSV.read_text().splitlines()[:2]
    cut = header + "\n" + row[: len(row) // 2]
    report = parse_query_csv(cut, ())
    assert report.complete is False and report.gpus == ()
    assert parse_query_csv(H100_CSV.read_text(), ()).complete is True


def test_xml_power_limits_at_any_depth_and_versions_by_number() -> None:
    # R610's -q nests the limits under a ceiling block beside a "base power" one (audit F3); an
    # XML laid out alike is read the same way, the base-power block left out, and a version
    # element carrying a note (audit F2) is read by its number
    xml = read(REAL / "nvidia-smi-q-x__geforce-rtx-3080__1gpu__driver595.58.03__dtd-v13.xml")
    limits = (
        "\t\t\t<current_power_limit>320.00 W</current_power_limit>\n"
        "\t\t\t<requested_power_limit>320.00 W</requested_power_limit>\n"
        "\t\t\t<default_power_limit>320.00 W</default_power_limit>\n"
    )
    assert limits in xml
    nested = xml.replace(
        limits,
        "<gpu_base_power><current_power_limit>1.00 W</current_power_limit>"
        "<default_power_limit>2.00 W</default_power_limit></gpu_base_power>"
        "<gpu_ceiling_power_limit><current_power_limit>300.00 W</current_power_limit>"
        "<default_power_limit>310.00 W</default_power_limit></gpu_ceiling_power_limit>\n",
    ).replace(
        "<driver_version>595.58.03</driver_version>",
        "<driver_version>595.58.03 [Deprecated; use kmd_version]</driver_version>",
    )
    report = parse_xml(nested)
    g = report.gpus[0]
    assert (g.power_draw_w, g.power_limit_w, g.default_power_limit_w, g.max_power_limit_w) == (
        139.62,
        300.0,
        310.0,
        336.0,
    )
    assert report.driver_version == "595.58.03"
    assert any("Deprecated" in w for w in report.warnings)


def test_table_read_by_its_box_whatever_the_version_labels() -> None:
    # audit F1: the header's version pairs by alias; a table with none is still a table
    table = read(REAL / "nvidia-smi__geforce-rtx-2080-super__1gpu__driver610.57.04__kmd-version.txt")
    bare = table.replace("KMD Version: 610.57.04", "                     ").replace(
        "CUDA UMD Version: 13.3", "                      "
    )
    report = parse_any(bare)
    assert (report.source, report.driver_version, report.cuda_version, len(report.gpus)) == (
        "table",
        None,
        None,
        1,
    )
    both = table.replace("KMD Version: 610.57.04", "Driver Version: 610.57.04 KMD Version: 610.57.04")
    assert parse_any(both).driver_version == "610.57.04"


@pytest.mark.parametrize(
    ("name", "status", "product"),
    [
        (VGPU_UNLICENSED, "Unlicensed", "NVIDIA RTX Virtual Workstation"),
        (VGPU_GRACE, "Unlicensed (Unrestricted)", "NVIDIA RTX Virtual Workstation"),
        # R4xx's label for the same section (derived: the label alone changed)
        ("derived/nvidia-smi-q__rtxa6000-24q-vgpu__1gpu__grid-licensed-product-label__derived.txt",
         "Unlicensed", "NVIDIA RTX Virtual Workstation"),
        ("real/nvidia-smi-q-x__grid-p4-1q-vgpu__1gpu__driver513.46__windows-guest.xml",
         "Licensed (Expiry: 2022-9-22 6:57:30 GMT)", "NVIDIA RTX Virtual Workstation"),
        # bare metal and pass-through print no licence section
        (H200_TEXT, None, None),
        (H200_XML, None, None),
        ("real/nvidia-smi-q__a10__1gpu__driver535.129.03.txt", None, None),
    ],
)  # fmt: skip
def test_vgpu_licence_read_from_q_and_xml(name: str, status: str | None, product: str | None) -> None:
    gpu = parse_any(read(FIXTURES / name)).gpus[0]
    assert (gpu.license_status, gpu.licensed_product) == (status, product)
