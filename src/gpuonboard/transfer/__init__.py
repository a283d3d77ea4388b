"""Moving data to and from hosts: rsync over the host's own SSH settings and sha256 verification,
one code path for the dataset upload (push) and for teardown's pull.

- `source`: the local dataset, scanned and hashed (`Entry`, `SourceTree`, `scan_source`, the
  prescan that overlaps the login);
- `listing`: the upload's read-only listing probe of its target and what rsync would send;
- `verify`: the host-side sha256 of what arrived (push: the paths sent; pull: every file, in
  sha256sum's format), the local side's, and their comparison;
- `rsync`: the one rsync command-line builder (push and pull), running it, its exit's meaning and
  the temp files it leaves on the host;
- `master`: the run's shared OpenSSH master connection;
- `preflight`: the throughput probe, rates and ETAs, pipelined production and batch sizes;
- besides: shards and their stream (`shards`, `shardstream`), age encryption (`crypto`,
  `agescrypt`), the upload lease (`uploadlock`).

This package re-exports the names of the first six that the steps and the tests use.
"""

from __future__ import annotations

from gpuonboard.transfer.listing import (
    LISTING_PRUNE,
    RemoteState,
    listing_command,
    parse_listing,
    to_send,
)
from gpuonboard.transfer.master import (
    CONTROL_PREFIX,
    master_options,
    start_master,
    stop_master,
    sweep_control_dirs,
)
from gpuonboard.transfer.preflight import (
    DEFAULT_MBIT,
    PROBE_COMMAND,
    PROBE_FIRST_BYTES,
    PROBE_MAX_BYTES,
    PROBE_MAX_SECONDS,
    PROBE_ROUND_TIMEOUT,
    batch_sizes,
    eta_seconds,
    format_duration,
    format_eta,
    parse_rate_mbit,
    pipelined,
    probe_throughput,
)
from gpuonboard.transfer.rsync import (
    PARTIAL_DIR,
    PUSH_REPORTS,
    RECEIVE_SAFELY,
    RSYNC_EXIT,
    RSYNC_TIMEOUT_S,
    TEMPS_SCRIPT,
    Direction,
    ProgressUpdate,
    RsyncRun,
    RsyncStats,
    dies_with_us,
    disk_full_line,
    explain_rsync_failure,
    parse_progress,
    parse_stats,
    parse_temps,
    pull_argv,
    rsync_argv,
    rsync_command,
    rsync_conflict,
    rsync_temp_of,
    run_rsync,
    temps_command,
    upload_eta,
)
from gpuonboard.transfer.source import (
    Entry,
    SourceTree,
    hash_tree,
    link_hash,
    prescan,
    prescanned,
    scan_source,
    take_prescan,
)
from gpuonboard.transfer.verify import (
    HASH_SCRIPT,
    SHA256_FN,
    SUMS_SCRIPT,
    UNVERIFIED_SCRIPT,
    compare_manifests,
    differing,
    hash_command,
    hash_stdin,
    local_manifest,
    parse_hashes,
    parse_manifest,
    unverified_command,
)

__all__ = [
    "CONTROL_PREFIX",
    "DEFAULT_MBIT",
    "HASH_SCRIPT",
    "LISTING_PRUNE",
    "PARTIAL_DIR",
    "PROBE_COMMAND",
    "PROBE_FIRST_BYTES",
    "PROBE_MAX_BYTES",
    "PROBE_MAX_SECONDS",
    "PROBE_ROUND_TIMEOUT",
    "PUSH_REPORTS",
    "RECEIVE_SAFELY",
    "RSYNC_EXIT",
    "RSYNC_TIMEOUT_S",
    "SHA256_FN",
    "SUMS_SCRIPT",
    "TEMPS_SCRIPT",
    "UNVERIFIED_SCRIPT",
    "Direction",
    "Entry",
    "ProgressUpdate",
    "RemoteState",
    "RsyncRun",
    "RsyncStats",
    "SourceTree",
    "batch_sizes",
    "compare_manifests",
    "dies_with_us",
    "disk_full_line",
    "eta_seconds",
    "explain_rsync_failure",
    "format_duration",
    "format_eta",
    "hash_command",
    "hash_stdin",
    "hash_tree",
    "link_hash",
    "listing_command",
    "local_manifest",
    "master_options",
    "differing",
    "parse_hashes",
    "parse_listing",
    "parse_manifest",
    "parse_progress",
    "parse_rate_mbit",
    "parse_stats",
    "parse_temps",
    "pipelined",
    "prescan",
    "prescanned",
    "probe_throughput",
    "pull_argv",
    "rsync_argv",
    "rsync_command",
    "rsync_conflict",
    "rsync_temp_of",
    "run_rsync",
    "scan_source",
    "start_master",
    "stop_master",
    "sweep_control_dirs",
    "take_prescan",
    "temps_command",
    "to_send",
    "unverified_command",
    "upload_eta",
]
