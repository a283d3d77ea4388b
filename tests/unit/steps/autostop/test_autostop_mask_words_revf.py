"""The scrub list (masking.command_secrets: MASK_WORDS, what the watcher's log and `--status`
are scrubbed of wherever it stands) holds no plain word that only its place made a secret (the
rule of sh/autostop_status.sh): a program whose name only holds `pass` or `pwd` (keepass-sync,
compass-agent, bypass-proxy) is no password program, and the word after `login` or `key` (a
subcommand, a registry) is scrubbed only where it looks like a secret itself; both stay masked
where the command is shown. Before (review revF), `compass-agent flush --reason idle shutdown`
put `idle` and `shutdown` into the list, and `--status` showed `******** for 25m`."""

from __future__ import annotations

import pytest

from gpuonboard.masking import MASK, command_secrets, command_shown

PW = "hunterpw"


@pytest.mark.parametrize(
    "command",
    [
        "compass-agent flush --reason idle shutdown",
        "keepass-sync push vault && sudo -n shutdown -h now",
        "bypass-proxy stop; shutdown -h now",
        "/opt/pwdsafe/bin/sync now",
    ],
)
def test_a_program_named_with_pass_in_it_is_no_password_program(command: str) -> None:
    assert command_shown(command) == command
    assert command_secrets(command) == []


@pytest.mark.parametrize(
    ("command", "secrets"),
    [
        (f"sshpass -p {PW} ssh backup rsync", [PW]),  # (its password is -p's: the rest a command)
        (f"htpasswd -b /etc/nginx/htpasswd admin {PW}", [PW, "admin"]),
        (f"chpasswd <<< admin:{PW}", ["admin:" + PW, PW]),
        (f"yes {PW} | passwd", [PW]),
    ],
)
def test_a_real_password_programs_words(command: str, secrets: list[str]) -> None:
    assert PW not in command_shown(command)
    assert command_secrets(command) == secrets


@pytest.mark.parametrize(
    ("command", "secrets"),
    [
        ("docker login registry.example.com", []),
        (f"vault login {PW}", []),  # (a plain word: as often a name; shown masked all the same)
        ("vault login s.Xy12AbCdEf34GhIj", ["s.Xy12AbCdEf34GhIj"]),
        (f"redis-cli auth {PW}", [PW]),  # (`auth`, `password`, `token`: a secret's name)
    ],
)
def test_the_word_after_login_is_scrubbed_where_it_looks_like_a_secret(
    command: str, secrets: list[str]
) -> None:
    assert command_shown(command).split()[2] == MASK
    assert command_secrets(command) == secrets
