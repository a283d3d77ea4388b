"""Teardown steps: pull results back (rsync, sha256-verified), then remove what provisioning placed.

`teardown_pull` (`pull`) runs `rsync` on this machine over the host's own SSH settings (key,
port, our known_hosts with StrictHostKeyChecking=yes, ProxyJump through the jump chain; stopped
with us on a signal), then compares a sha256 manifest computed on the host (one remote
command: listing, name and symlink checks, the sha256 of every file) with the local files; the
rsync command line and the sha256 code are the transfer package's, shared with the upload.
When files are missing or corrupt, or a symlink points out of the results, the step fails,
so the runner skips every later step that changes the host: nothing is deleted while a copy
is incomplete (unless `force`); an unverified copy keeps no symlink pointing out of itself.
rsync receives without device nodes, fifos, sockets, owners, groups, setuid/setgid/sticky bits
or group/other write (transfer.RECEIVE_SAFELY). A verified pull leaves a record (host, dir,
listing, sha256) in the copy, written atomically (`records`); until then the record's place
holds the mark of the pull (host, dir), and a local dir holding anything else (the user's files,
another host's or dir's copy) is never pulled into: rsync would replace its files of the same
names (`localcopy`). `teardown_containers` (`containers`) and `teardown_files` (`files`) remove
containers, the image and directories; every path is checked (never `/`, a home dir, a system
dir: `common`) both here and again on the host after resolving symlinks, and the results dir only
goes when the host's listing still equals the record's (`checks`), checked in the removing
command, and the local copy still holds every recorded file; what gpuonboard's uploads left is
told apart from the user's files in `uploads`; gpuonboard's own cache dir on the host
(`own_cache`) goes too. `teardown_cost` (`cost`) prints what the rental cost, rounded up by the
vendor's billing unit.

This package re-exports the names the registry, `api.teardown` and the tests use.
"""

from __future__ import annotations

from gpuonboard.steps.teardown.checks import (
    LISTING_FORMAT,
    TreeChecks,
    listing_changes,
    listing_digest,
    manifest_command,
    parse_pull_output,
    pull_probe_command,
    records,
)
from gpuonboard.steps.teardown.common import (
    SHOWN,
    copy_dir,
    copy_path,
    describe_problems,
    path_problem,
)
from gpuonboard.steps.teardown.common import holds as _holds
from gpuonboard.steps.teardown.containers import TeardownContainersStep, _image_refs
from gpuonboard.steps.teardown.cost import (
    SINCE_RANGE,
    UNIT_SECONDS,
    Cost,
    TeardownCostStep,
    journal_start,
    parse_since,
    rental_cost,
    run_id_time,
)
from gpuonboard.steps.teardown.files import (
    CACHE_DIR,
    CHANGED_EXIT,
    OwnCache,
    TeardownFilesStep,
    own_cache,
    shared_cache_note,
)
from gpuonboard.steps.teardown.localcopy import (
    copy_unverified,
    drop_links_out,
    exposed_dest,
    foreign_dest,
    free_bytes,
    held_bytes,
    links_out_of,
    mark_stale,
    room_problem,
)
from gpuonboard.steps.teardown.pull import PullOutcome, TeardownPullStep
from gpuonboard.steps.teardown.records import (
    PULLING_TAG,
    RECORD,
    RECORD_TAG,
    Owner,
    Record,
    host_key,
    mark_pulling,
    read_owner,
    read_record,
    write_record,
)
from gpuonboard.steps.teardown.uploads import (
    COPY_MARK,
    FS_ENTRIES,
    LEASE_IN_COPY,
    LEASE_SUFFIX,
    STORE_SUFFIXES,
    UNPACK_INFIX,
    Uploads,
    classify_uploads,
    parse_recorded,
    plaintext_note,
    recorded_probe_command,
    uploads_probe_command,
)

# the transfer's, shared with the upload (the pull's rsync command line, sha256 manifests)
from gpuonboard.transfer import PARTIAL_DIR, RECEIVE_SAFELY, compare_manifests, local_manifest, parse_manifest
from gpuonboard.transfer import pull_argv as rsync_argv

__all__ = [
    "CACHE_DIR",
    "CHANGED_EXIT",
    "COPY_MARK",
    "FS_ENTRIES",
    "LEASE_IN_COPY",
    "LEASE_SUFFIX",
    "LISTING_FORMAT",
    "PARTIAL_DIR",
    "PULLING_TAG",
    "RECEIVE_SAFELY",
    "RECORD",
    "RECORD_TAG",
    "SHOWN",
    "SINCE_RANGE",
    "STORE_SUFFIXES",
    "UNIT_SECONDS",
    "UNPACK_INFIX",
    "Cost",
    "OwnCache",
    "Owner",
    "PullOutcome",
    "Record",
    "TeardownContainersStep",
    "TeardownCostStep",
    "TeardownFilesStep",
    "TeardownPullStep",
    "TreeChecks",
    "Uploads",
    "_holds",
    "_image_refs",
    "classify_uploads",
    "compare_manifests",
    "copy_dir",
    "copy_path",
    "copy_unverified",
    "describe_problems",
    "drop_links_out",
    "exposed_dest",
    "foreign_dest",
    "free_bytes",
    "held_bytes",
    "host_key",
    "journal_start",
    "links_out_of",
    "listing_changes",
    "listing_digest",
    "local_manifest",
    "manifest_command",
    "mark_pulling",
    "mark_stale",
    "own_cache",
    "parse_manifest",
    "parse_pull_output",
    "parse_recorded",
    "parse_since",
    "path_problem",
    "plaintext_note",
    "pull_probe_command",
    "read_owner",
    "read_record",
    "recorded_probe_command",
    "records",
    "rental_cost",
    "rsync_argv",
    "room_problem",
    "run_id_time",
    "shared_cache_note",
    "uploads_probe_command",
    "write_record",
]
