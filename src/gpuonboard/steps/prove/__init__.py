"""Steps that prove the box trains: `smoke_train`, `allreduce`, `disk_speed` (issue 7), and
`gpu_benchmark`, `network`.

Each is read-only for the host's state: the scripts arrive over the SSH channel's stdin, go
into a private temp directory (`shell.temp_script`) that is removed on every exit, stop with
the SSH session that started them (`shell.until_session_ends`), and their figures come back as ONE
`GPUONBOARD_RESULT {json}` line. The rules are pure functions over
that JSON (tested on recorded result files). In check mode nothing runs (they load the box).

Modules: `rules` (the sentences and summary the rules share), `launch` (running a bundled
script: settings, the remote command, the training image, the result line), `references` (the
all-reduce reference table), `smoke` (SmokeTrainStep), `dcgm_diag` (dcgmi diag in allreduce),
`multinode` (a group's hosts in one all-reduce), `allreduce` (AllreduceStep), `disk`
(DiskSpeedStep), `gpu_benchmark`, `network`, and the sizing `planner`. This module re-exports
the names callers import from `gpuonboard.steps.prove`.
"""

from __future__ import annotations

from gpuonboard.steps.prove.allreduce import (
    AllreduceStep,
    GiB,
    allreduce_checks,
    correct_check,
    multinode_checks,
    parse_acs,
    peak_busbw,
)
from gpuonboard.steps.prove.dcgm_diag import (
    DCGM_PROBE,
    DCGM_TIMEOUTS,
    dcgm_checks,
    dcgm_failure_note,
    dcgm_level,
    run_dcgm,
)
from gpuonboard.steps.prove.disk import (
    BYTES_PER_PARAM_FULL,
    BYTES_PER_PARAM_WEIGHTS,
    CACHED_READ_SHARE,
    DISK_FILE,
    RAM_FILESYSTEMS,
    DiskSpeedStep,
    MiB,
    disk_checks,
    disk_command,
    disk_failure,
    disk_file_blocks,
    disk_fs_check,
    disk_script,
    parse_disk,
)
from gpuonboard.steps.prove.launch import (
    _LAUNCH_ARGS,
    MARK,
    Launch,
    _float_arg,
    _get,
    _int_arg,
    build_command,
    container_image,
    container_name,
    host_bound,
    image_local_names,
    launch_settings,
    launcher_argv,
    parse_result,
    run_script,
    script_bytes,
    torch_where,
)
from gpuonboard.steps.prove.multinode import (
    NodePlan,
    group_members,
    meet_group,
    multinode_selection_problem,
    node_plan,
    torchrun_args,
)
from gpuonboard.steps.prove.references import (
    REFERENCE_FILE,
    load_references,
    match_reference,
    name_has,
    row_matches_name,
)
from gpuonboard.steps.prove.rules import (
    _gpu_count,
    _pct,
    _summary,
    broken_driver_sentence,
    hidden_gpus_sentence,
    no_cuda_sentence,
    nvidia_smi_failure,
)
from gpuonboard.steps.prove.smoke import (
    SMOKE_DEFAULTS,
    SmokeTrainStep,
    loss_check,
    loss_problem,
    smoke_checks,
)

__all__ = [
    "BYTES_PER_PARAM_FULL",
    "BYTES_PER_PARAM_WEIGHTS",
    "CACHED_READ_SHARE",
    "DCGM_PROBE",
    "DCGM_TIMEOUTS",
    "DISK_FILE",
    "MARK",
    "RAM_FILESYSTEMS",
    "REFERENCE_FILE",
    "SMOKE_DEFAULTS",
    "_LAUNCH_ARGS",
    "AllreduceStep",
    "DiskSpeedStep",
    "GiB",
    "Launch",
    "MiB",
    "NodePlan",
    "SmokeTrainStep",
    "_float_arg",
    "_get",
    "_gpu_count",
    "_int_arg",
    "_pct",
    "_summary",
    "allreduce_checks",
    "broken_driver_sentence",
    "build_command",
    "container_image",
    "container_name",
    "correct_check",
    "dcgm_checks",
    "dcgm_failure_note",
    "dcgm_level",
    "disk_checks",
    "disk_command",
    "disk_failure",
    "disk_file_blocks",
    "disk_fs_check",
    "disk_script",
    "group_members",
    "hidden_gpus_sentence",
    "host_bound",
    "image_local_names",
    "launch_settings",
    "launcher_argv",
    "load_references",
    "loss_check",
    "loss_problem",
    "match_reference",
    "meet_group",
    "multinode_checks",
    "multinode_selection_problem",
    "name_has",
    "no_cuda_sentence",
    "node_plan",
    "nvidia_smi_failure",
    "parse_acs",
    "parse_disk",
    "parse_result",
    "peak_busbw",
    "row_matches_name",
    "run_dcgm",
    "run_script",
    "script_bytes",
    "smoke_checks",
    "torch_where",
    "torchrun_args",
]
