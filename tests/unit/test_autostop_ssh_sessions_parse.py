"""--ssh-sessions: the watcher's reading of `ps -eo user=,args=` (real sshd process titles of
OpenSSH 9.2 and 9.8+, run through the template's own awk with this machine's sh), and the
install's refusal where ps is missing (the box would then count busy for ever)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from gpuonboard.steps.autostop import _parse_probe, _Remote, install_problem, parse_settings

TEMPLATE = Path(__file__).resolve().parents[2] / "templates" / "remote" / "autostop.sh.j2"

# what `ps -eo user=,args=` shows on a box with sshd's listener, a login in progress, a shell
# with a terminal, a VS Code Remote session (no terminal) and a session under OpenSSH 9.8+
PS = """\
root     sshd: /usr/sbin/sshd -D [listener] 0 of 10-100 startups
root     sshd: alice [priv]
alice    sshd: alice@pts/0
alice    -bash
root     sshd: bob [priv]
bob      sshd: bob@notty
bob      sshd-session: bob@notty
carol    sshd-session: carol@pts/3
root     sshd: root [net]
dave     vim sshd: eve@notty
"""


def _users(ps: str) -> str:
    text = TEMPLATE.read_text()
    fn = re.search(r"^ssh_session_users\(\) \{.*?^\}\n", text, re.S | re.M)
    assert fn is not None
    out = subprocess.run(
        ["sh", "-c", fn.group(0) + "ssh_session_users"], input=ps, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_the_users_of_open_sessions_are_read_from_sshds_process_titles() -> None:
    assert _users(PS) == "alice bob carol"
    assert _users("root     sshd: /usr/sbin/sshd -D [listener] 0 of 10-100 startups\n") == ""


def test_ssh_sessions_without_ps_is_refused_at_install() -> None:
    r = _parse_probe("uid 0\nps no\n")
    assert r.ps is False
    r = _Remote(uid="0", user="root", dir="/var/lib/gpuonboard/autostop", mode="cron.d", ps=False)
    assert install_problem("gpu1", parse_settings({"ssh_sessions": "true"}), r) == (
        "host gpu1: --ssh-sessions needs ps, which this host lacks, so the watcher could never see an"
        " SSH session without a terminal (VS Code Remote, ssh -N tunnels) and would count the box busy"
        " for ever: install procps (apt-get install procps), or leave --ssh-sessions out"
    )
    assert install_problem("gpu1", parse_settings({}), r) is None
    r.ps = True
    assert install_problem("gpu1", parse_settings({"ssh_sessions": "true"}), r) is None
