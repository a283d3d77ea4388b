"""`crontab_keep` (sh/autostop_crontab.sh): what the install and the removal give back to
`crontab -` of the login's crontab, run on a `crontab -l` that prints a given crontab."""

from __future__ import annotations

import subprocess

from gpuonboard import shell
from gpuonboard.steps.autostop.install import CRONTAB_FN
from gpuonboard.steps.autostop.render import CRON_MARKER, crontab_lines


def _keep(lines: list[str]) -> list[str]:
    listing = shell.join(["printf", "%s\\n", *lines])
    script = f"crontab() {{ {listing}; }}\n{CRONTAB_FN}\ncrontab_keep\n"
    r = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=10, check=True)
    return r.stdout.splitlines()


USER = ["MAILTO=me@example.com", "0 3 * * * /home/u/backup-checkpoints.sh", "*/5 * * * * /home/u/sync.sh"]


def test_our_marker_and_entry_are_dropped_and_the_users_lines_kept() -> None:
    for directory in ("/home/u/.local/state/gpuonboard/autostop", "/data/my autostop"):
        assert _keep([USER[0], *crontab_lines(directory), *USER[1:]]) == USER


def test_a_users_line_after_a_marker_left_alone_is_kept() -> None:
    # the user deleted our entry by hand and left the marker: before, their backup line that
    # came after it was dropped from their crontab by the next install or --cancel
    assert _keep([USER[0], CRON_MARKER, *USER[1:]]) == USER
