"""`autostop` (install or remove the idle-shutdown watcher) and `autostop_status`.

The watcher is a POSIX sh script (templates/remote/autostop.sh.j2, which includes its parts
from templates/remote/autostop/) that cron runs every minute; ALL decision logic lives in that
script (tested directly with a controllable clock).
This step only renders the script, a shell-sourceable config and the cron entry, compares
their sha256 with what the ONE batched fact probe found, and writes the difference in one
remote command (temp file + rename each; the cron entry last, so cron never runs a
half-installed watcher). Paths come from args (host vars in the CLI) so tests on loopback
hosts write into temp dirs.

This package module only re-exports what the rest of gpuonboard and its tests use; the
modules own: `settings` (the arguments and host vars validated, the config file), `render`
(the files' names and places, the watcher script, the cron entry), `probe` (the state probe
and its parser), `install` (what stands in the way of a working watcher, the max-hours
deadline, the install and removal scripts) and `step` (the two Step classes). The shell they
run on hosts is in sh/autostop_*.sh.
"""

from __future__ import annotations

from gpuonboard.steps.autostop.install import (
    CRONTAB_FN,
    POWER_COMMANDS,
    install_problem,
    install_script,
    max_hours_anchor,
    max_hours_sentence,
    remove_script,
    with_tools,
)
from gpuonboard.steps.autostop.probe import (
    CRON_DAEMON_FN,
    NO_CRON_DAEMON,
    UNSAFE_DIR_FN,
    WATCHED_TOOLS,
    _parse_probe,
    _Remote,
    _state_probe_command,
    state_probe_command,
)
from gpuonboard.steps.autostop.render import (
    CONF,
    CRON_MARKER,
    CRON_NAME,
    DEFAULT_CRON_DIR,
    DEFAULT_ROOT_DIR,
    DEFAULT_USER_DIR,
    OWNED_FILES,
    SCRIPT,
    comment_label,
    cron_file_text,
    crontab_lines,
    render_script,
)
from gpuonboard.steps.autostop.settings import (
    BILLING_UNITS,
    CRON_MODES,
    DURATION_ARGS,
    TEXT_VARS,
    AutostopSettings,
    billing_mode,
    check_vars,
    parse_settings,
)
from gpuonboard.steps.autostop.step import AutostopStatusStep, AutostopStep, status_command

__all__ = [
    "BILLING_UNITS",
    "CONF",
    "CRON_DAEMON_FN",
    "CRON_MARKER",
    "CRON_MODES",
    "CRON_NAME",
    "CRONTAB_FN",
    "DEFAULT_CRON_DIR",
    "DEFAULT_ROOT_DIR",
    "DEFAULT_USER_DIR",
    "DURATION_ARGS",
    "NO_CRON_DAEMON",
    "OWNED_FILES",
    "POWER_COMMANDS",
    "SCRIPT",
    "TEXT_VARS",
    "UNSAFE_DIR_FN",
    "WATCHED_TOOLS",
    "AutostopSettings",
    "AutostopStatusStep",
    "AutostopStep",
    "_Remote",
    "_parse_probe",
    "_state_probe_command",
    "billing_mode",
    "check_vars",
    "comment_label",
    "cron_file_text",
    "crontab_lines",
    "install_problem",
    "install_script",
    "max_hours_anchor",
    "max_hours_sentence",
    "parse_settings",
    "remove_script",
    "render_script",
    "state_probe_command",
    "status_command",
    "with_tools",
]
