"""A password typed on a pasted session's command line is masked wherever the command is quoted
(the offline notes' "line 3 (`mysql -u root -p********`)", a narrowed view's "`sshpass -p ********
ssh box nvidia-smi` ..."): the short-option password family is one table, an option per program
(masking.PASSWORD_OPTIONS: ldapsearch's `-w`, mysql's `-p`, sshpass's `-p`, curl's `-u` pair...),
read by the notes' quoting (masking.command_said) and by command_shown alike, with a
secret-named variable (`PGPASSWORD=...`) and option (`--password ...`). Before, the notes quoted
all five commands below as typed, and command_shown showed `ldapsearch -w hunter`'s password.

The session is constructed (a user's session with these commands is the case; the output lines
are a test input), with the real nvidia-smi -L of akash-provider-configs#12 at its end."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.api import offline
from gpuonboard.masking import MASK, command_said, command_shown

REAL = Path(__file__).parents[2] / "fixtures" / "real"
# (command, its password)
FAMILY = [
    ("ldapsearch -x -w Hunter2ldap -D cn=admin,dc=example,dc=com -b dc=example", "Hunter2ldap"),
    ("ldapsearch -x -whunterldap -b dc=example", "hunterldap"),
    ('mysql -u root -phuntermysql -e "select 1"', "huntermysql"),
    ("sshpass -p huntersshpass ssh gpu02 uptime", "huntersshpass"),
    ("curl -u admin:huntercurl https://api.example.com/v1", "huntercurl"),
    ('PGPASSWORD=hunterpg psql -h db -U postgres -c "select 1"', "hunterpg"),
    ("redis-cli -a hunterredis ping", "hunterredis"),
    ("smbclient -U bob%huntersmb //srv/share", "huntersmb"),
    ("docker login --password hunterdocker registry.example.com", "hunterdocker"),
]


@pytest.mark.parametrize(("command", "password"), FAMILY)
def test_each_password_is_masked_where_the_command_is_quoted(command: str, password: str) -> None:
    said = command_said(command)
    assert password not in said and MASK in said, said
    assert password not in command_shown(command)
    # (the rest of the command as typed: what ran stays readable)
    assert said.replace(MASK, password) == command


@pytest.mark.parametrize("command", ["ssh -p 2222 gpu01 nvidia-smi", "nvidia-smi -L", "df -h /data"])
def test_a_command_without_a_password_is_quoted_as_typed(command: str) -> None:
    assert command_said(command) == command


def test_the_session_notes_quote_no_password(tmp_path: Path) -> None:
    listing = (REAL / "nvidia-smi-L__quadro-rtx-4000__2gpu__akash-provider-configs-12.txt").read_text()
    lines = []
    for command, _ in FAMILY:
        lines += [f"user@gpu01:~$ {command}", "ok"]
    text = "\n".join(lines) + "\nuser@gpu01:~$ nvidia-smi -L\n" + listing
    path = tmp_path / "session.txt"
    path.write_text(text)
    notes: list[str] = []
    offline.load_outputs([str(path)], notes)
    said = "\n".join(notes)
    assert "line 1 (`ldapsearch -x -w ******** -D" in said, said
    for _, password in FAMILY:
        assert password not in said, (password, said)
