"""What the autostop step puts on a host: the files' names and places (the autostop dir, the
cron entry), the watcher script rendered from templates/remote/autostop.sh.j2 (the header; its
body is the parts under templates/remote/autostop/, one a concern, joined by `{% include %}`)
for one host and directory, and the cron.d file or crontab lines that run it every minute.
"""

from __future__ import annotations

import hashlib
import posixpath
from typing import Any

from gpuonboard import shell, termtext

SCRIPT = "autostop.sh"
CONF = "autostop.conf"
CRON_NAME = "gpuonboard-autostop"
CRON_MARKER = "# gpuonboard-autostop (managed by gpuonboard; remove with: invoke autostop --cancel)"
# Everything the watcher or this step may create inside the autostop dir (--cancel removes these).
OWNED_FILES = (
    SCRIPT,
    CONF,
    "state",
    "state.tmp",
    "hard_warned",
    "hard_warned.tmp",
    "installed_at.tmp",
    "write_test",
    "lease",
    "lease_up",
    "installed_at",
    "max_since",
    "autostop.log",
    "autostop.log.1",
)
DEFAULT_ROOT_DIR = "/var/lib/gpuonboard/autostop"
DEFAULT_USER_DIR = "$HOME/.local/state/gpuonboard/autostop"  # expanded by the remote shell
DEFAULT_CRON_DIR = "/etc/cron.d"
# The dirs the watcher adds after cron's PATH (/usr/bin:/bin): the system's, then NixOS's setuid
# wrappers (its `sudo`) and system profile (its `shutdown`, in no /sbin); the install looks the
# shutdown command's programs (sudo too) up on the same PATH (sh/autostop_state.sh), so that
# what it accepts the watcher finds
WATCHER_PATH = ":".join(
    ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
    + ("/run/wrappers/bin", "/run/current-system/sw/bin")
)


def comment_label(text: str) -> str:
    """`text` as one shell word that stays on its line: every character that is not printable
    (a newline, a carriage return, U+2028, an escape) written as its Python escape (`\\n`).
    A host name in the script's comment line must never start a line of its own (cron runs
    the script as root every minute); the inventory refuses such names, this is the second wall."""
    return shell.quote(termtext.for_terminal(text, keep=""))


def render_script(project: Any, host: str, directory: str) -> str:
    """The watcher script for one host and install directory (`host_label`: the host name for
    the comment line, see comment_label; `dir_q`: the directory as one shell word)."""
    from gpuonboard.templating import render_file

    return render_file(
        project,
        "remote/autostop.sh.j2",
        host=host,
        host_label=comment_label(host),
        dir_q=shell.quote(directory),
        watcher_path=WATCHER_PATH,
    )


def cron_file_text(directory: str) -> str:
    """/etc/cron.d format: minute hour dom month dow USER command."""
    return f"{CRON_MARKER}\n* * * * * root {_cron_command(directory)}\n"


def _cron_command(directory: str) -> str:
    script = shell.quote(posixpath.join(directory, SCRIPT))
    log = shell.quote(posixpath.join(directory, "autostop.log"))
    return f"/bin/sh {script} tick >>{log} 2>&1"


def crontab_lines(directory: str) -> list[str]:
    """The marker and entry in a user's crontab (no user field)."""
    return [CRON_MARKER, f"* * * * * {_cron_command(directory)}"]


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
