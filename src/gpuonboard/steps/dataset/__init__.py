"""Step `dataset`: upload a local dataset to the host's data dir with rsync, resumable, verified.

Plan (pure, from ONE read-only probe in the batched fact probe plus the local scan): is rsync
on the host, free space under the data dir, and which files differ by size/mtime from the
source (rsync's quick check). Apply: rsync over the host's own SSH settings (our known_hosts,
strict), `--partial-dir` inside the destination so half files never look complete, live
progress; then the host computes the sha256 of what arrived (one command), mismatches are
re-sent once. With `encrypt`, files go as cached age ciphertexts (see transfer/crypto.py), and
with `decrypt_on_host` the host decrypts them with the identity streamed over the channel's stdin.

This package module only re-exports; the modules own, from the bottom up:
`common` (the names on the host, shared sentences and path helpers), `work` (what a plan hands
its apply), `options` (the step's arguments, checked, and the paths they name), `scan` (the
local scan and the hash cache), `leftovers` (what interrupted uploads left on the host),
`preflight` (room on the host's disks, the ETA and its throughput probe, progress lines),
`hostdirs` (the read-only probes and whether this copy may write where it would),
`lease` (the host's upload lease), `session` (the OpenSSH master connections, the first
stream and the local upload lock one step holds), `verify` (sha256 on the host, temp files
of other writers), `encryption` (age keys, plain encrypted mode's batches), `decrypt`
(--decrypt-on-host), `shardstore` (shard names, cached ciphertexts, the manifest),
`plain` (plain and encrypted mode: plan and rsync), `sharded` (shard mode's plan),
`shardsend` (shard mode's streams and closing command), `step` (DatasetStep, which ties them).
"""

from __future__ import annotations

from gpuonboard.steps.dataset.common import (
    ENCRYPTED_SUFFIX,
    SHARDS_SUFFIX,
    LocalWriteError,
    local_write_failure,
    transfer_size,
    unreadable_source,
)
from gpuonboard.steps.dataset.decrypt import DECRYPT_SCRIPT
from gpuonboard.steps.dataset.leftovers import interrupted as _interrupted
from gpuonboard.steps.dataset.leftovers import kept_on_host as _kept_on_host
from gpuonboard.steps.dataset.options import DatasetOptions, parse_options
from gpuonboard.steps.dataset.preflight import room as _room
from gpuonboard.steps.dataset.scan import changed_since_scan as _changed_since_scan
from gpuonboard.steps.dataset.scan import dir_members as _dir_members
from gpuonboard.steps.dataset.step import DatasetStep
from gpuonboard.steps.dataset.work import Work

__all__ = [
    "DECRYPT_SCRIPT",
    "ENCRYPTED_SUFFIX",
    "SHARDS_SUFFIX",
    "DatasetOptions",
    "DatasetStep",
    "LocalWriteError",
    "Work",
    "_changed_since_scan",
    "_dir_members",
    "_interrupted",
    "_kept_on_host",
    "_room",
    "local_write_failure",
    "parse_options",
    "transfer_size",
    "unreadable_source",
]
