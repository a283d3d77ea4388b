"""Secret masking: `Secret` wraps a value at construction so that it prints masked everywhere
(logs, reports, argv refuse it: see `shell.quote`), and `mask` / `mask_written` scrub every live
secret's value from text we log or write."""

from __future__ import annotations

import re
import weakref
from collections.abc import Iterable

from gpuonboard.once import lazy_re

MASK = "********"


class Secret:
    """A value that prints masked everywhere; call `reveal()` only where it is sent (stdin)."""

    __slots__ = ("_value", "__weakref__")

    def __init__(self, value: str) -> None:
        self._value = value
        _LIVE_SECRETS.add(self)

    def reveal(self) -> str:
        """The real value, for writing to a channel's stdin; never for logs or argv."""
        return self._value

    def __repr__(self) -> str:
        return f"Secret({MASK})"

    def __str__(self) -> str:
        return MASK

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


_LIVE_SECRETS: weakref.WeakSet[Secret] = weakref.WeakSet()


def mask(text: str, secrets: Iterable[Secret | str] | None = None) -> str:
    """Replace every secret's value in text with the mask (for logs and reports).

    Without an explicit list, every Secret alive in this process is masked.
    """
    for secret in list(_LIVE_SECRETS) if secrets is None else secrets:
        value = secret.reveal() if isinstance(secret, Secret) else secret
        if value:
            text = text.replace(value, MASK)
    return text


def any_live_secret() -> bool:
    """Whether mask_written may change a text: a secret with a value is alive in this process."""
    return any(secret.reveal() for secret in list(_LIVE_SECRETS))


def mask_written(text: str) -> str:
    """mask() for a file's text (summary.json, junit.xml, a report): every live secret in the
    forms JSON, XML and HTML writers escape it to (quotes, backslashes, line breaks, <, &) as
    well as the plain one."""
    import html
    import json

    for secret in list(_LIVE_SECRETS):
        value = secret.reveal()
        if not value:
            continue
        forms = {
            value,
            json.dumps(value)[1:-1],
            json.dumps(value, ensure_ascii=False)[1:-1],
            html.escape(value),
        }
        for form in sorted(forms, key=len, reverse=True):
            text = text.replace(form, MASK)
    return text


# A command the user gives us to run on a host (autostop's --before-shutdown, its shutdown
# command) may hold a token anywhere: `curl -H "Authorization: Bearer T"`, a webhook URL with
# its key, `--password P`, `-pP4ss`. Such a command is shown (status, logs, messages) by
# `command_shown`: a word is shown only when it is clearly not a secret (the program, a bare
# flag `-x`/`-xyz`/`--name`, `--name=plainvalue`, a lower-case name such as `stop`,
# `gpu-vm-01`, `train.service`, a number, a local path whose parts look like names), shell
# operators as they are, a quoted `sh -c` script word by word under the same rule; every other
# word is the mask, and a short digest of the whole command tells two commands apart.
# a name's part: lower-case letters, or a run of up to 3 letters and digits (`ec2`, `s3`, `v1`);
# letters and digits in one longer run (`hunter123`, `value42`) may be a password: masked. Digits
# are shown as a part of their own after `-` or `_` only (`gpu-vm-01`, `trainer_1`).
_NAME_PART = r"([a-z]{1,16}|[a-z][a-z0-9]{1,2})"
_NAME = lazy_re(rf"{_NAME_PART}([-_]({_NAME_PART}|[0-9]{{1,6}})|\.{_NAME_PART}){{0,5}}|\+?[0-9]{{1,8}}")
_VAR = lazy_re(r"\$\{?[A-Za-z_][A-Za-z0-9_]{0,40}\}?")
_PROGRAM = lazy_re(r"[A-Za-z0-9_./+-]{1,64}")
_PATH = lazy_re(r"(~|\$HOME)?/[A-Za-z0-9_./+-]{0,200}")
# a flag: `-x`, `-fsS` (up to 4 letters), `-xyzwv` in lower case, `-TERM` (a signal), `--name`,
# `--name=VALUE`, `--camelName` (mongo's `--authenticationDatabase`)
_FLAG = lazy_re(r"-[A-Za-z]{1,4}|-[a-z]{5,12}|-[A-Z]{3,4}[12]?|--[a-z][A-Za-z0-9-]{0,40}(=.*)?", re.S)
# an option whose value is a secret whatever it looks like (`--password hunter`, curl's `-H` and
# `-u`, redis-cli's `-a`, openssl's `-k`); its value attached (`-ahunter`) masks the whole word
_SECRET_FLAG = lazy_re(r"(?i:pass|pw|token|key|secret|auth|cred|cookie|header|bearer|sig)|^-[Hu]")
# `-p`/`-P` (mysql's and sshpass's password, zip's): a value attached (`-pS3cret`) masks the word;
# given apart, its value is masked unless it is a number (`ssh -p 2222`) or the program is a
# power command (`shutdown -P now`: poweroff). `-a`/`-k` given apart likewise show a path or
# number after them (`rsync -a ~/ckpt/ /backup/`), and mask any other word.
# a secret-named option whose name ends in a word for what is no secret: the database, source or
# mechanism it authenticates by (mongo's `--authenticationDatabase admin`, `--authSource`,
# `--auth-type basic`), where the secret is read from (`--password-stdin`, `--password-file
# PATH`): its value is shown as any other option's (no user name: `--proxy-user` holds a pair)
_NOT_SECRET_END = frozenset(
    ("database", "db", "source", "mechanism", "method", "type", "mode", "stdin", "file", "path", "dir")
    + ("url", "uri", "host", "port", "realm", "timeout", "format")
)


def names_secret(name: str) -> bool:
    """Whether an option's or a field's name (`--password`, `-H`, `token`) names a secret whose
    value it is; not one that ends in a word for what is no secret (_NOT_SECRET_END)."""
    if not _SECRET_FLAG.search(name):
        return False
    parts = re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", name)
    return not (len(parts) > 1 and parts[-1].lower() in _NOT_SECRET_END)


_ATTACHED_SECRET = lazy_re(r"-[Pp].+", re.S)
_SOFT_SECRET_FLAG = lazy_re(r"-[PpakK]")
_POWER = ("shutdown", "poweroff", "halt", "reboot", "systemctl")
_SHOWN_FIRST = ("sudo", "env", "timeout", "nice", "nohup", "exec")
_SHELLS = ("sh", "bash", "dash", "ash", "zsh", "ksh")
_OPERATOR = lazy_re(r"[;&|<>()]+")
# programs whose words are data that may go on to another's stdin (`echo PW | docker login
# --password-stdin`, `yes PW | passwd`): masked where their output is piped or redirected;
# printf's always (its format puts them in text: `printf 'Authorization: Bearer %s' PW`)
_DATA_PROGRAMS = ("echo", "printf", "yes")
# a bare word that names a secret: the next word (not a flag) is its value
_SECRET_NAME = re.compile(r"(?i)pass(word|wd|phrase)?|pwd|token|secret|auth|api[-_]?key|key|login")
# a bare word that names a login or a key: the next word may as well be a subcommand or a host
# (`docker login registry.example.com`, `gcloud auth login`): masked, but kept out of the scrub
# list (command_secrets) unless it looks like a secret itself (review revF)
_LOOSE_NAME = re.compile(r"(?i)login|key")
# a program whose words may be a password: the real ones by name (before, any name holding
# `pass` or `pwd`: keepass-sync, compass-agent, bypass-proxy had every word masked and scrubbed)
_PASSWORD_PROGRAM = re.compile(
    r"(?i)sshpass|htpasswd|htdigest|mkpasswd|chpasswd|chgpasswd|smbpasswd|passwd|gpasswd|kpasswd"
    r"|yppasswd|ldappasswd|vncpasswd|x11vnc-passwd|grub-mkpasswd-pbkdf2|pwconv"
)


def command_shown(command: str) -> str:
    """`command` with every word that may be a secret masked (see above), plus its digest where
    a word was masked; a command of safe words only (`shutdown -h now`) is shown as it is."""
    import hashlib

    shown, masked, _ = _command_words(command)
    text = " ".join(shown)
    if masked or MASK in command:
        digest = hashlib.sha256(command.encode("utf-8", "surrogateescape")).hexdigest()[:8]
        text += f" [sha256:{digest}]"
    return text


def command_secrets(command: str) -> list[str]:
    """The words of `command` that command_shown masks (4 characters or more), and those of their
    parts of 8 or more between blanks, `:`, `=`, `/`, `?`, `&` or `@` that the rule would mask too
    (the token of `Authorization: Bearer TOKEN`, a URL's key; never a plain word such as
    `shutdown`), a URL's userinfo and password and each query value whatever they look like,
    longest first: what a text that may repeat them (the command's own output, an older log
    line that showed it) is scrubbed of, wherever they stand."""
    _, masked, loose = _command_words(command)
    found: set[str] = set()
    for word in masked:
        if word in loose and _safe_word(word):
            continue  # (`login NAME`'s plain word: a name more often than a password)
        found.add(word)
        found.update(p for p in re.split(r"[\s:=/?&@]+", word) if len(p) >= 8 and not _safe_word(p))
        # a URL's userinfo (`user:PASS@`) and a query's values (`?key=VALUE&`), whatever they
        # look like: a password of plain words (`correcthorse`) is one all the same
        for userinfo in re.findall(r"//([^/@\s]+)@", word):
            found.update({userinfo, userinfo.partition(":")[2]})
        found.update(re.findall(r"[?&;][^=&#\s]*=([^&#\s\"']+)", word))
        found.update(_secret_values(word))
    return sorted((w for w in found if len(w) >= 4 and w.strip("*")), key=lambda w: (-len(w), w))


# `NAME=VALUE`, `NAME: VALUE`, `NAME:VALUE` inside a word (an env assignment, a form field, a
# header): VALUE is the secret where NAME names one, whatever VALUE looks like
_NAMED_VALUE = re.compile(r"([A-Za-z][A-Za-z0-9_.-]{0,60})(?:=|:[ \t]*)([^&;,\s\"'][^&;,\"']*)")
# `user:pass`, `user%pass` (smbclient), `user,pass` (lftp): a credential pair, no URL
_PAIR = re.compile(r"[^:%,/@\s]{1,64}[:%,]([^\s/@]+)")


def _secret_values(word: str) -> set[str]:
    """The secret values inside a masked word, whatever they look like (a lower-case `hunter` is
    one all the same): a secret-named field's value and its last word (`Authorization: Bearer
    hunter` -> `Bearer hunter`, `hunter`; `--password=hunter`, `token=hunter`, `TOKEN=hunter`), a
    value attached to a secret flag (`-phunter`, `-uadmin:hunter` -> `admin:hunter`, `hunter`),
    a credential pair's second half (`admin:hunter`)."""
    out: set[str] = set()
    flag = re.fullmatch(r"-([A-Za-z])(.+)", word, re.S)
    if flag and (_SECRET_FLAG.match(word) or _SOFT_SECRET_FLAG.match(word)):
        word = flag.group(2)
        if flag.group(1) not in "Hu":  # (`-uroot`: a user name; `-uadmin:pw`: its pair below)
            out.add(word)
    for name, value in _NAMED_VALUE.findall(word.lstrip("-")):
        if names_secret(name):
            value = value.strip()
            out.update({value, value.split()[-1]} if value.split() else set())
    pair = _PAIR.fullmatch(word)
    if pair:
        out.add(pair.group(1))
    return out


def _split(command: str) -> list[str]:
    """The shell's words of `command`, an operator (`&&`, `;`, `>`) a word of its own."""
    import shlex

    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    return list(lexer)


def _command_words(command: str) -> tuple[list[str], list[str], set[str]]:
    """The command's words as shown (each that may be a secret masked), the masked ones, and
    those masked only as the word after a login's or a key's name (_LOOSE_NAME)."""
    try:
        words = _split(command)
    except ValueError:  # an unclosed quote: the program, the rest masked
        split = command.split()
        return split[:1] + [MASK] * bool(split[1:]), split[1:], set()
    shown: list[str] = []
    masked: list[str] = []
    loose: set[str] = set()
    program_next, value_next, script_next, program, soft = True, False, False, "", False
    data: list[int] = []  # where echo/printf/yes's words stand in shown (masked once piped or redirected)
    named, loosely, heredoc = (
        False,
        False,
        False,
    )  # after `password`/`token`...; in or after a here-doc or here-string
    redirect = False
    for word in words:
        after_soft, soft = soft, False
        redirected, redirect = redirect, bool(_OPERATOR.fullmatch(word)) and any(c in word for c in "<>")
        after_named = named and not _OPERATOR.fullmatch(word) and not word.startswith("-")
        named = named and not after_named and not _OPERATOR.fullmatch(word)
        if _OPERATOR.fullmatch(word):
            _mask_data(word, data, shown, masked)
        if word.startswith("<<"):  # a here-doc's or here-string's text follows
            shown.append(word)
            heredoc = True
            continue
        # a here-doc's or here-string's text (`<<< hunter`, `<<EOF`); the word after one that
        # names a secret (`mysqladmin password hunter`, `redis-cli auth hunter`, `vault login
        # hunter`); a password program's words (`htpasswd -b f admin hunter`, `sshpass word`)
        by_program = not program_next and bool(_PASSWORD_PROGRAM.fullmatch(program))
        hidden = (heredoc or after_named or by_program) and not (
            _OPERATOR.fullmatch(word) or word.startswith("-") or _soft_value_shown(word, "")
        )
        heredoc = heredoc and not (_OPERATOR.fullmatch(word) and word not in ("<", ">"))
        if hidden and not value_next and not after_soft and not script_next:
            shown.append(MASK)
            if not heredoc and (program == "sshpass" or after_named and loosely and not by_program):
                loose.add(word)  # (sshpass's password is its -p's: its other words, a command)
        elif after_soft and not _OPERATOR.fullmatch(word) and not _soft_value_shown(word, program):
            shown.append(MASK)  # `redis-cli -a PASS`, `zip -P PASS`, `openssl -k PASS`
        elif value_next:  # the value of a secret's option
            shown.append(MASK)
            value_next = False
        elif _OPERATOR.fullmatch(word):  # `&&`, `;`, `|` start a command, `>` names a file
            if word == ";" and shown:
                shown[-1] += word  # (`sync; shutdown`, as written)
            else:
                shown.append(word)
            program_next = program_next or not any(c in word for c in "<>")
            continue
        elif script_next:  # `sh -c 'SCRIPT'`: the script's words under the same rule
            inner, inner_masked, inner_loose = _command_words(word)
            loose |= inner_loose
            shown.append("'" + " ".join(inner) + "'")
            masked += inner_masked
            script_next = False
            continue
        elif program_next and (assign := _ASSIGN.fullmatch(word)):  # `LANG=C cmd`, `KEY=T cmd`
            name, value = assign.group(1), assign.group(2)
            safe = not _SECRET_FLAG.search(name) and bool(_VALUE.fullmatch(value) or _VAR.fullmatch(value))
            safe = safe or (
                not _SECRET_FLAG.search(name) and bool(_PATH.fullmatch(value)) and not _looks_random(value)
            )
            shown.append(word if safe else f"{name}={MASK}")
            word = word if safe else value
        elif program_next and shown and shown[-1] != MASK and _FLAG.fullmatch(word):  # `sudo -n CMD`
            shown.append(word if _flag_safe(word) else MASK)
        elif program_next:
            shown.append(word if _PROGRAM.fullmatch(word) and not _looks_random(word) else MASK)
            program = word.rsplit("/", 1)[-1]
            program_next = program in _SHOWN_FIRST
        elif (option := password_option(program, word)) is not None:  # (`ldapsearch -w PW`)
            shown.append(MASK if option[1] else word)
            value_next = _value_apart(program, option)  # (`mysql -p gpu`: a prompt, a database)
        elif _FLAG.fullmatch(word) and _flag_safe(word):
            shown.append(word)
            value_next = names_secret(word.split("=", 1)[0])
            soft = bool(_SOFT_SECRET_FLAG.fullmatch(word))
            script_next = program in _SHELLS and word.startswith("-") and word.endswith("c")
        else:
            shown.append(word if _safe_word(word) else MASK)
            named = bool(_SECRET_NAME.fullmatch(word))
            loosely = bool(_LOOSE_NAME.fullmatch(word))
            program = with_subcommand(program, word) or program  # (`docker login`: its own row)
            if program == "printf" and shown[-1] != MASK and not redirected and not _VAR.fullmatch(word):
                # (its format puts them in text; a `$VAR` it expands is no secret itself)
                shown[-1] = MASK
            elif program in _DATA_PROGRAMS and program != "printf" and not redirected:
                data.append(len(shown) - 1)
        if shown[-1] != word:
            masked.append(word)
    _mask_data("|" if heredoc else "", data, shown, masked)
    return shown, masked, loose


def _mask_data(operator: str, data: list[int], shown: list[str], masked: list[str]) -> None:
    """At an operator: echo/printf/yes's words (`data`, indexes in shown) are masked where their
    output goes on (`| docker login --password-stdin`, `> ~/.pgpass`): then they may be a
    secret, else (to the log, `; ` or `&&`) they are shown as the rule says. `data` is emptied."""
    if _passes_data(operator):
        for i in data:
            if shown[i] != MASK and not _VAR.fullmatch(shown[i]):  # (`echo $HF_TOKEN |`: a name)
                masked.append(shown[i])
                shown[i] = MASK
    if operator:
        data.clear()


def _passes_data(operator: str) -> bool:
    """Whether echo/printf/yes's output goes on to another program or a file at `operator` (a
    pipe, `>`), where their words may be a secret (`echo PW | docker login --password-stdin`);
    not to the log (`;`, `&&`, `||`, `&`) nor at an input redirection (`<`)."""
    return bool(operator) and operator not in ("&&", "||", ";", "&", ";;") and not operator.startswith("<")


# a published port (`docker run -p 8080:80`, `-p 127.0.0.1:8080:80/tcp`): no password
_PORT_MAP = lazy_re(r"(?:[0-9.]{1,39}:){1,2}[0-9]{1,5}(?:-[0-9]{1,5})?(?:/(?:tcp|udp|sctp))?")


def _soft_value_shown(word: str, program: str) -> bool:
    """The word after `-a`/`-k`/`-p`/`-P` given apart, shown only where it cannot be their secret
    value: a flag, a number, a local path of plain parts, any word after a power command's -P/-p."""
    return (
        program in _POWER
        or word.startswith("-")
        or bool(re.fullmatch(r"\+?[0-9]{1,8}", word))
        or bool(_PORT_MAP.fullmatch(word))
        or (bool(_PATH.fullmatch(word)) and not _looks_random(word))
    )


def _flag_safe(word: str) -> bool:
    """A flag shown as it is: no value attached to a secret flag (`-pS3cret`, `-psecret`,
    `--password=x`), and a `--name=VALUE` whose value is a plain word."""
    name, eq, value = word.partition("=")
    if eq:
        return not names_secret(name) and _safe_word(value)
    attached = len(word) > 2 and not word.startswith("--")
    return not (attached and (_SECRET_FLAG.match(word) or _SOFT_SECRET_FLAG.match(word)))


def _looks_random(word: str) -> bool:
    """A run of letters and digits that may be a token: digits with upper-case letters
    (`T0123ABC`, `S3cret`), 12 or more characters with digits (`a3f9c2e1d4b5`), mixed case with
    more than one capital inside (`XyZsecretToken`), or over 32 characters."""
    for run in re.findall(r"[A-Za-z0-9]+", word):
        digit = any(c.isdigit() for c in run)
        upper = sum(c.isupper() for c in run[1:])
        if (digit and any(c.isupper() for c in run)) or (digit and len(run) >= 12 and not run.isdigit()):
            return True
        if upper >= 2 and any(c.islower() for c in run) or len(run) > 32:
            return True
    return False


_ASSIGN = lazy_re(r"([A-Za-z_][A-Za-z0-9_]{0,40})=(.*)", re.S)
# a value that cannot be a secret: a locale (`LANG=C.UTF-8`), a number, a `$VAR`
_VALUE = lazy_re(r"(C|POSIX|[a-z]{2,3}_[A-Z]{2})(\.[A-Za-z0-9-]{1,16})?|[0-9]{1,6}")


def _safe_word(word: str) -> bool:
    """A word that cannot be a secret: a lower-case name, a number, a `$VAR`, a local path whose
    parts do not look random."""
    return bool(_NAME.fullmatch(word) or _VAR.fullmatch(word)) or (
        bool(_PATH.fullmatch(word)) and not _looks_random(word)
    )


# The short options whose value is the program's own password, by program: one table for the
# family (`ldapsearch -w PW`, `mysql -pPW`, `sshpass -p PW`, `redis-cli -a PW`, `zip -P PW`),
# read by command_shown and command_said alike. Its value given apart or attached is the
# password whatever it looks like (`-w hunter`); curl's, lftp's and smbclient's give a credential
# pair (`-u user:PW`, `-u user,PW`, `-U user%PW`): its second half is the password.
PASSWORD_OPTIONS: dict[str, str] = {
    **dict.fromkeys(
        ("ldapsearch", "ldapadd", "ldapmodify", "ldapdelete", "ldapmodrdn", "ldapcompare", "ldapwhoami"),
        "w",
    ),
    "ldappasswd": "wsa",  # (-w the bind's, -s the new, -a the old password)
    **dict.fromkeys(
        (
            "mysql",
            "mysqldump",
            "mysqladmin",
            "mysqlimport",
            "mysqlshow",
            "mysqlcheck",
            "mariadb",
            "mariadb-dump",
        ),
        "p",
    ),
    **dict.fromkeys(("mongo", "mongosh", "mongodump", "mongorestore", "mongoexport", "mongoimport"), "p"),
    "sshpass": "p",
    "redis-cli": "a",
    "zip": "P",
    "unzip": "P",
    "7z": "p",
    "openssl": "k",
    "sqlcmd": "P",
    "ipmitool": "P",
    "mosquitto_pub": "P",
    "mosquitto_sub": "P",
    "curl": "u",
    "lftp": "u",
    "smbclient": "U",
    # a registry login's `-p PW` (docker-login(1), podman-login(1), buildah-login(1),
    # skopeo-login(1), nerdctl's and oras's `login`): the subcommand's own table row, so that
    # `docker run -p 8080:80` (a port) and `journalctl -p err` (a priority) stay as typed
    **dict.fromkeys(
        (f"{cli} login" for cli in ("docker", "podman", "buildah", "skopeo", "nerdctl", "oras")), "p"
    ),
}
# the programs whose subcommand is a row of PASSWORD_OPTIONS of its own (`docker login`)
_SUBCOMMANDED = frozenset(p.split()[0] for p in PASSWORD_OPTIONS if " " in p)
# the programs above whose option's value is a credential pair: the separator before the password
_PAIRED = {"curl": ":", "lftp": ",", "smbclient": "%"}
# words before the program that are no program (`sudo`, `env`, `timeout 5`)
_BEFORE_PROGRAM = ("sudo", "env", "timeout", "nice", "nohup", "exec", "command", "time")


def with_subcommand(program: str, word: str) -> str | None:
    """`docker login` where `program` is `docker` and `word` its first plain word (its subcommand:
    `docker run`, `podman login`); None where `program` has no subcommand row or one is read."""
    if program not in _SUBCOMMANDED or not re.fullmatch(r"[a-z][a-z-]{0,30}", word):
        return None  # (an option, a global option's path or URL value: `docker --config /x login`)
    return f"{program} {word}"


def password_option(program: str, word: str) -> tuple[str, str] | None:
    """(the option, its attached value or "") where `word` is `program`'s password option
    (PASSWORD_OPTIONS: `-w`, `-pPW`); None for any other word."""
    options = PASSWORD_OPTIONS.get(program.rsplit("/", 1)[-1], "")
    if len(word) < 2 or word[0] != "-" or word[1] not in options or word.startswith("--"):
        return None
    return word[:2], word[2:]


def _password_of(program: str, value: str) -> str:
    """The password in a password option's value: the second half of a credential pair."""
    sep = _PAIRED.get(program.rsplit("/", 1)[-1])
    return value.partition(sep)[2] if sep and sep in value else ("" if sep else value)


# mysql's, mariadb's and 7z's `-p` takes its password attached only (`-pPW`): a bare `-p` prompts
# for it, and the next word is a database or an archive (`mysql -u root -p gpu`, `7z a -p x.7z`)
_PROMPTED = frozenset(
    (*(p for p, o in PASSWORD_OPTIONS.items() if p.startswith(("mysql", "mariadb")) and o == "p"), "7z")
)


def _value_apart(program: str, option: tuple[str, str]) -> bool:
    """Whether a password option (password_option) takes the next word as its value."""
    return not option[1] and not (option[0] == "-p" and program.rsplit("/", 1)[-1] in _PROMPTED)


def _spans(command: str) -> list[tuple[int, int]]:
    """Where each of the shell's words of `command` stands in it (start, end), quotes included,
    a run of operator characters (`&&`, `|`, `>`) a word of its own, as `_split` cuts them."""
    spans: list[tuple[int, int]] = []
    at, end = 0, len(command)
    while at < end:
        if command[at].isspace():
            at += 1
            continue
        start, quote = at, ""
        if command[at] in ";&|<>()":
            while at < end and command[at] in ";&|<>()":
                at += 1
            spans.append((start, at))
            continue
        while at < end:
            char = command[at]
            if quote:
                quote = "" if char == quote else quote
                at += 1 if char == "\\" and quote == '"' else 0
            elif char in "'\"":
                quote = char
            elif char == "\\":
                at += 1
            elif char.isspace() or char in ";&|<>()":
                break
            at += 1
        spans.append((start, min(at, end)))
    return spans


def _unquoted(raw: str) -> str:
    """The word the shell makes of `raw` (its quotes removed); `raw` itself where a quote is open."""
    try:
        return "".join(_split(raw)) if raw.strip(";&|<>()") else raw
    except ValueError:
        return raw


# a value of an option given apart that is a secret (`--password PW`, `-H "Authorization: ..."`,
# `-u user:PW`, `-p PW`): what of it is masked
_APART_ALL, _APART_PAIR, _APART_FIELD = "all", "pair", "field"


def _said_secrets(words: list[str]) -> list[set[str]]:
    """The secrets of each of a typed command line's words, by the rules command_shown masks by:
    a program's password option's value (PASSWORD_OPTIONS, a credential pair's second half; a
    bare `-p` of _PROMPTED prompts), a secret-named option's value given apart or attached
    (`--password PW`, `--token=T`, `-H "Authorization: Bearer T"`), `-p`/`-P`'s value given apart
    (_soft_value_shown: not a number or a path), a secret-named `NAME=VALUE` (`PGPASSWORD=PW psql`,
    `docker exec -e HF_TOKEN=T`), the word after a bare secret name (`redis-cli auth PW`), a URL's
    userinfo password and its secret-named query values. A value is never a word that starts
    with `-` (the next option). A program of PASSWORD_OPTIONS is read as the program wherever
    it stands (`sudo -u alice mysql -pPW`, `docker exec app mysql -pPW`)."""
    out: list[set[str]] = [set() for _ in words]
    program, apart = "", ""
    data: list[int] = []  # (echo's, yes's words: secrets where their output goes on, _passes_data)
    heredoc = False  # (after `<<<`, `<<`: a here-string's or here-doc's text, as command_shown)
    for at, word in enumerate(words):
        found = out[at]
        if heredoc and not _OPERATOR.fullmatch(word):
            # (a here-doc's delimiter, `<<EOF`'s `EOF`, is shown: its text is on the lines below)
            delimiter = words[at - 1] == "<<"
            found.update(() if delimiter or word.startswith("-") or _soft_value_shown(word, "") else {word})
            continue
        heredoc = word.startswith("<<") or heredoc and word in ("<", ">")
        if apart and not word.startswith("-") and not _OPERATOR.fullmatch(word):
            found |= _apart_value(apart, program, word)
            apart = ""
            continue
        apart = ""
        if _OPERATOR.fullmatch(word):
            for i in data if _passes_data(word) else ():
                out[i].update(() if _VAR.fullmatch(words[i]) else {words[i]})  # (as _mask_data)
            data = []
            program = ""
            continue
        found |= _named_secrets(word)
        if not program or word.rsplit("/", 1)[-1] in PASSWORD_OPTIONS:  # (`docker exec app mysql`)
            if not _ASSIGN.fullmatch(word) and word.rsplit("/", 1)[-1] not in _BEFORE_PROGRAM:
                program = word.rsplit("/", 1)[-1]
            continue
        if program in _DATA_PROGRAMS and not word.startswith("-"):
            # (printf's always: its format puts them in text; a `$VAR` it expands is none)
            found.update({word} if program == "printf" and not _VAR.fullmatch(word) else ())
            data.append(at)
            continue
        if subcommand := with_subcommand(program, word):  # (`docker login`: its own row)
            program = subcommand
            continue
        name, eq, value = word.partition("=")
        if (option := password_option(program, word)) is not None:
            found.update({_password_of(program, option[1])} if option[1] else set())
            apart = program if _value_apart(program, option) else ""
        elif word.startswith("--") and names_secret(name):
            kind = _APART_FIELD if "header" in name.lower() else _APART_ALL
            found.update(_apart_value(kind, program, value) if eq else set())
            apart = "" if eq else kind
        elif re.fullmatch(r"-[Hu]", word):  # (curl's, wget's header; a user or a credential pair)
            apart = _APART_FIELD if word == "-H" else _APART_PAIR
        elif re.fullmatch(r"-[Pp]", word):
            apart = "soft"
        elif not word.startswith("-") and _SECRET_NAME.fullmatch(word) and not _LOOSE_NAME.fullmatch(word):
            apart = "named"  # (`mysqladmin password PW`, `redis-cli auth PW`: a path or number shown)
    return out


def _apart_value(kind: str, program: str, word: str) -> set[str]:
    """The secret of `word`, the value given apart of an option of `kind` (_said_secrets)."""
    if kind == "named":
        return set() if _soft_value_shown(word, program) else {word}
    if kind == "soft":  # (`journalctl -p err`, `srun -p gpu`: a plain name is an option's word)
        return set() if _soft_value_shown(word, program) or _safe_word(word) else {word}
    if kind == _APART_FIELD:  # (`Authorization: Bearer T`: the field's value; a header named
        # otherwise, all of it)
        named = _named_secrets(word)
        return named or ({word} if ":" not in word else set())
    if kind == _APART_PAIR:
        pair = _PAIR.fullmatch(word)
        return {pair.group(1)} if pair else set()
    if kind == _APART_ALL:
        return {word}
    return {_password_of(kind, word)}


# a part of a field's name that is a secret's word whole (`X-Api-Key`'s `key`, `token`)
_SECRET_PART = lazy_re(
    r"pass(word|wd|phrase)?|pwd?|token|secret|key|apikey|auth(orization)?|cred(ential)?s?|cookie|bearer|sig(nature)?"
)


def _names_field(word: str, hit: re.Match[str]) -> bool:
    """Whether _NAMED_VALUE's `hit` in `word` is a field's name and value: not a variable's
    expansion (`--home $PWD:/srv`), and `NAME:VALUE` in one word, an image's tag, a host's port
    or a bind's two paths (`authelia:latest`) more often than a field, only where a part of
    NAME is a secret's word itself (`token:T`, `X-Api-Key:K`)."""
    if word[: hit.start()].endswith(("$", "${")):
        return False
    if word[hit.end(1)] == ":" and not word[hit.end(1) + 1 :].startswith((" ", "\t")):
        return any(_SECRET_PART.fullmatch(part) for part in re.split(r"[-_.]", hit.group(1).lower()))
    return True


def _named_secrets(word: str) -> set[str]:
    """A secret-named `NAME=VALUE` or `NAME: VALUE`'s value inside `word` (its last word: `Bearer
    T`'s `T`), a URL's userinfo password and its secret-named query values."""
    found: set[str] = set()
    bare = word.lstrip("-")
    for hit in _NAMED_VALUE.finditer(bare):
        name, value = hit.group(1), hit.group(2)
        if not _names_field(bare, hit):
            continue
        if names_secret(name) and "//" not in value and value.strip():
            found.add(value.split()[-1])  # (`Bearer T`'s token)
    for userinfo in re.findall(r"//([^/@\s]+)@", word):
        found.add(userinfo.partition(":")[2])
    for name, value in re.findall(r"[?&;]([^=&#\s]*)=([^&#\s\"']+)", word):
        if names_secret(name):
            found.add(value)
    return {f for f in found if f and f != MASK}


def command_said(command: str) -> str:
    """A typed command line as a note or a report quotes it (a pasted session's prompt line):
    as typed, each secret value it holds (_said_secrets) masked where it stands, in its own word
    only (the same letters elsewhere, `sshpass -p a ssh box`'s `a` in `box`, are left as typed)."""
    spans = _spans(command)
    secrets = _said_secrets([_unquoted(command[start:end]) for start, end in spans])
    parts, done = [], 0
    for (start, end), found in zip(spans, secrets, strict=True):
        raw = command[start:end]
        done_secrets: list[str] = []
        for secret in sorted(found, key=len, reverse=True):  # (a value ends its word: its last)
            if any(secret in longer for longer in done_secrets):
                continue
            done_secrets.append(secret)
            before, hit, after = raw.rpartition(secret)
            raw = before + MASK + after if hit else MASK  # (a value the quotes split: the word)
        parts.append(command[done:start] + raw)
        done = end
    return "".join(parts) + command[done:]
