"""What the api's commands take, as given on the command line: plain dataclasses, one field
per flag (its type and default) with its help text in the field's metadata, from which cli
builds each command's own flags (flags.taking). Light to import: the CLI reads them at
start-up, before it knows which command runs (the api modules that use them are imported
only by the command that runs). No Invoke imports here.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class AutostopOptions:
    """The command line of `invoke autostop` (durations as texts, validated by
    autostop.build_spec; --billing-aware and --no-billing-aware: neither is "auto")."""

    idle: str = field(
        default="30m", metadata={"help": "act after the box has been idle this long (default 30m)"}
    )
    job: str = field(
        default="",
        metadata={
            "help": "busy while a command line contains NAME (literally) or a tmux/screen session NAME exists"
        },
    )
    pid: str = field(default="", metadata={"help": "busy while process N is alive"})
    container: str = field(default="", metadata={"help": "busy while docker container NAME is running"})
    grace: str = field(
        default="5m", metadata={"help": "warn (wall + log), then wait this long before acting (default 5m)"}
    )
    max_hours: str = field(
        default="",
        metadata={
            "help": "hard deadline: shut down H hours (0.25..8760) after this value was set, busy or not"
        },
    )
    heartbeat: str = field(
        default="",
        metadata={"help": "dead-man switch: shut down once no `invoke autostop` renewed it this long (5m+)"},
    )
    before_shutdown: str = field(
        default="",
        metadata={"help": "command run before shutting down; if it fails, no shutdown (unless --force)"},
    )
    before_timeout: str = field(
        default="10m", metadata={"help": "time limit for --before-shutdown (default 10m)"}
    )
    force: bool = field(
        default=False, metadata={"help": "shut down even when --before-shutdown fails or times out"}
    )
    billing_aware: bool = field(
        default=False,
        metadata={
            "help": "wait for the end of the paid hour before acting (default: on when billed per hour)"
        },
    )
    no_billing_aware: bool = field(
        default=False,
        metadata={"help": "act as soon as idle + grace have passed, whatever the billing unit"},
    )
    margin: str = field(
        default="5m",
        metadata={"help": "billing-aware: act within this much of the end of a paid hour (default 5m)"},
    )
    gpu_threshold: str = field(
        default="", metadata={"help": "a GPU above this utilisation (percent) counts as busy (default 5)"}
    )
    ssh_sessions: bool = field(
        default=False,
        metadata={
            "help": "also count logged-in users and open SSH sessions (VS Code Remote, ssh -N) as busy"
        },
    )
    gpu_processes: bool = field(
        default=False,
        metadata={"help": "also busy while any process holds a GPU (memory), even at 0% utilisation"},
    )
    shutdown_command: str = field(
        default="", metadata={"help": "override the vendor profile's shutdown_command"}
    )
    status: bool = field(
        default=False,
        metadata={
            "help": "show what is installed, what it watches, idle-since, when it would act, last log lines"
        },
    )
    cancel: bool = field(
        default=False,
        metadata={"help": "remove everything autostop installed (script, config, state, log, cron entry)"},
    )
    check: bool = field(default=False, metadata={"help": "dry run: report what would change, change nothing"})


@dataclass
class SyncOptions:
    """The command line of `invoke sync`."""

    dataset: str = field(
        default="", metadata={"help": "local dataset path (default: the host's vars.dataset)"}
    )
    dest: str = field(default="", metadata={"help": "remote data directory (default: the host's data_dir)"})
    name: str = field(
        default="",
        metadata={"help": "the copy's directory name under the data dir (default: the dataset's own name)"},
    )
    encrypt: bool = field(
        default=False,
        metadata={"help": "upload age ciphertexts (vars.age_recipients, or vars.age_passphrase_env)"},
    )
    decrypt_on_host: bool = field(
        default=False,
        metadata={"help": "decrypt on the host (identity from vars.age_identity_file/_env, sent over stdin)"},
    )
    bwlimit: str = field(default="", metadata={"help": "bandwidth limit passed to rsync, e.g. 5m"})
    check: bool = field(default=False, metadata={"help": "dry run: say what would be sent, send nothing"})
    shards: bool = field(
        default=False,
        metadata={"help": "pack into tar shards (default above vars.shard_threshold files, 10000)"},
    )
    unpack: bool = field(
        default=False, metadata={"help": "shard mode: unpack the shards into the data dir on the host"}
    )
    verify: bool = field(
        default=False,
        metadata={
            "help": "re-hash the host's copy (sha256) and send again what differs, which rsync's"
            " size-and-mtime check misses (a decrypted plaintext, kept shards, an unpacked tree too)"
        },
    )
    keep_shards: bool = field(
        default=False,
        metadata={"help": "with --unpack: keep the shards on the host too (default: removed once verified)"},
    )
    decrypt_to: str = field(
        default="",
        metadata={
            "help": "with --decrypt-on-host: decrypt into this host dir instead (e.g. /dev/shm: tmpfs)"
        },
    )


@dataclass
class TeardownOptions:
    """The command line of `invoke teardown`."""

    results: str = field(
        default="",
        metadata={"help": "remote results/checkpoint dir to pull back first (default vars.results_dir)"},
    )
    dest: str = field(
        default="",
        metadata={"help": "local dir for the pulled results (default results/<host>/; '{host}' is replaced)"},
    )
    keep_image: bool = field(default=False, metadata={"help": "keep the training image on the host"})
    force: bool = field(
        default=False,
        metadata={"help": "delete even when the pull is incomplete or unverified (missing/corrupt files)"},
    )
    check: bool = field(
        default=False, metadata={"help": "dry run: report what would be pulled and deleted, change nothing"}
    )


@dataclass
class MonitorCommand:
    """The command line of `invoke monitor`."""

    interval: str = field(default="2s", metadata={"help": "sampling interval, e.g. 2s or 500ms (default 2s)"})
    once: bool = field(default=False, metadata={"help": "one sample per GPU, then exit"})
    json: bool = field(
        default=False,
        metadata={"help": "JSON instead of the live table (--once: one document; else JSON lines)"},
    )
    log: str = field(default="", metadata={"help": "append every sample as a JSON line to FILE"})
    duration: str = field(
        default="", metadata={"help": "stop after this long (e.g. 30s, 10m); default: until Ctrl-C"}
    )


@dataclass
class PlanArgs:
    """The flags of `invoke plan`, as given (validated by planner.make_plan); `inventory`, with
    no help text, is the shared --inventory (the command fills it in)."""

    params: str = field(default="", metadata={"help": "model size in parameters: 7B, 13B, 70B, 350M"})
    precision: str = field(default="bf16", metadata={"help": "bf16 (default), fp16 or fp32"})
    optimizer: str = field(default="adamw", metadata={"help": "adamw (default), sgd or adafactor"})
    mode: str = field(default="full", metadata={"help": "full (default), lora or qlora"})
    seq: str = field(default="2048", metadata={"help": "sequence length in tokens (default 2048)"})
    batch: str = field(default="1", metadata={"help": "micro-batch size (default 1)"})
    checkpointing: bool = field(
        default=False, metadata={"help": "assume activation checkpointing (stores only each layer's input)"}
    )
    dataset_size: str = field(
        default="", metadata={"help": "dataset size for the upload ETA and disk advice, e.g. 120GB"}
    )
    bandwidth: str = field(default="", metadata={"help": "upload bandwidth, e.g. 100Mbit, 1Gbit or 50MB/s"})
    hours: str = field(
        default="", metadata={"help": "rental hours to price for each vendor profile in the inventory"}
    )
    inventory: str = "inventory"
    json: bool = field(default=False, metadata={"help": "print the plan as JSON"})
