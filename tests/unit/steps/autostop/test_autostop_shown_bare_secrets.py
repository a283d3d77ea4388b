"""masking.command_shown / command_secrets on the family of real command shapes that carry a
LOWER-CASE password given bare (review safety32): the rule shows a lower-case word as a name
(`stop`, `trainer_1`), so a password of plain letters passed where no secret flag names it
(`echo PW | docker login --password-stdin`, `htpasswd -b FILE USER PW`, `mysqladmin password PW`,
`redis-cli auth PW`, `vault login PW`, a here-string) was shown in clear; and the scrub list
(MASK_WORDS: what `--status` removes from a command's own output and older log lines) held only
the whole masked word (`Authorization: Bearer PW`, `--password=PW`, `-pPW`, `admin:PW`,
`token=PW`), never the password alone, so an output repeating it kept it."""

from __future__ import annotations

import pytest

from gpuonboard.masking import MASK, command_secrets, command_shown
from gpuonboard.steps.autostop import install

PW = "hunterpw"  # lower case, letters only: what the rule shows as a name

FAMILY = [
    f"curl -u admin:{PW} https://hooks.example.com/ckpt",
    f"curl --user admin:{PW} https://hooks.example.com/ckpt",
    f"curl -uadmin:{PW} https://hooks.example.com/ckpt",
    f"curl -H 'Authorization: Bearer {PW}' https://hooks.example.com/ckpt",
    f"curl -H 'Authorization:Bearer {PW}' https://hooks.example.com/ckpt",
    f"curl -H 'X-Api-Key: {PW}' https://hooks.example.com/ckpt",
    f"curl -H 'PRIVATE-TOKEN: {PW}' https://gitlab.example.com/api",
    f"curl -d token={PW} https://hooks.example.com/ckpt",
    f"curl --data-urlencode password={PW} https://hooks.example.com/ckpt",
    f"curl https://admin:{PW}@hooks.example.com/ckpt",
    f"git push https://oauth2:{PW}@gitlab.example.com/team/ckpt.git",
    f"mongodump --uri mongodb://admin:{PW}@db/train",
    f"mysql -p{PW} -e 'flush tables'",
    f"mysql -uroot -p{PW} train",
    f"mysqldump --password={PW} train > /backup/db.sql",
    f"mysql --user=root --password {PW} train",
    f"mysqladmin -uroot password {PW}",
    f"sshpass -p {PW} ssh ops@backup rsync",
    f"sshpass -p{PW} ssh ops@backup",
    f"wget --password={PW} https://hooks.example.com/ckpt",
    f"wget --http-password {PW} https://hooks.example.com/ckpt",
    f"redis-cli -a {PW} save",
    f"redis-cli auth {PW}",
    f"docker login -u admin -p {PW} registry.example.com",
    f"echo {PW} | docker login -u admin --password-stdin registry.example.com",
    f"printf '%s\\n' {PW} | sudo -S shutdown -h now",
    f"yes {PW} | passwd",
    f"docker login -u admin --password-stdin <<< {PW}",
    f"htpasswd -b /etc/nginx/htpasswd admin {PW}",
    f"smbclient -U admin%{PW} //nas/ckpt",
    f"lftp -u admin,{PW} backup",
    f"openssl enc -aes-256-cbc -pass pass:{PW} -in ckpt",
    f"gpg --batch --passphrase {PW} -c ckpt",
    f"TOKEN={PW} /opt/bin/notify",
    f"API_TOKEN={PW} curl https://hooks.example.com/ckpt",
    f"env TOKEN={PW} /opt/bin/notify",
    f"export TOKEN={PW}; /opt/bin/notify",
    f"PGPASSWORD={PW} pg_dump train > /backup/db.sql",
    f"MYSQL_PWD={PW} mysqldump train",
    f"sh -c 'curl -u admin:{PW} https://hooks.example.com/ckpt'",
    f"bash -lc 'TOKEN={PW} /opt/bin/notify'",
]


@pytest.mark.parametrize("command", FAMILY)
def test_a_bare_lower_case_password_is_never_shown(command: str) -> None:
    shown = command_shown(command)
    assert PW not in shown, shown
    assert MASK in shown and "[sha256:" in shown, shown


@pytest.mark.parametrize("command", FAMILY)
def test_the_scrub_list_holds_the_password_itself(command: str) -> None:
    """What a command's own output repeats is the password alone (`curl -v`'s `Authorization:
    Bearer PW` line is one, a server's `"token": "PW"` echo, an error naming it): the scrub list
    holds it, not only the word that carried it."""
    assert PW in command_secrets(command), command_secrets(command)


@pytest.mark.parametrize(
    "command",
    [
        "az login --identity && az vm deallocate -g my-rg -n gpu-vm-01",
        "echo before-ran-ok; sudo -n shutdown -h now",
        "echo done && systemctl stop train.service",
    ],
)
def test_the_plain_words_around_them_stay_shown(command: str) -> None:
    """echo's words are masked only where its output goes on (a pipe, a file, a here-string),
    `login` masks the word after it only when it is not a flag or an operator."""
    assert command_shown(command) == command
    assert command_secrets(command) == []


def test_a_user_name_alone_is_not_scrubbed() -> None:
    # (`-uroot`: the scrub would remove `root` from every path the output names)
    assert "root" not in command_secrets(f"mysql -uroot -p{PW} train")


@pytest.mark.parametrize(
    "command",
    [
        f"sudo -n /opt/vendor/stop-vm login {PW}",
        f"sudo -n redis-cli auth {PW} shutdown",
        f"sudo -n htpasswd -b /etc/nginx/htpasswd admin {PW}",
    ],
)
def test_the_sudo_check_never_puts_a_bare_password_on_the_hosts_command_line(command: str) -> None:
    """The install's `sudo -n -l CMD` check stands on a command line that `ps` shows every user of
    the host: a command whose words the rule masks is not named there (`sudo -n true`)."""
    check = install.sudo_check(command)
    assert check is not None and PW not in " ".join(check), check
