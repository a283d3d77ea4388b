"""What copying an output through a web page, a chat or a mail does to it, undone before its
kind is detected, and a file that holds more than one output refused.

A saved output is read as the tool printed it: non-breaking and other Unicode spaces (a web
page's `&nbsp;`, a wiki's code block) are spaces, nvidia-smi's table redrawn with box-drawing
characters by a page or a terminal font (`│`, `─`, `┼`, `═`) is ASCII again, a double-spaced
paste (a blank line after every line, as some editors and pages render a block) is
single-spaced again, an indent
every line shares (a Markdown code block pasted with its 4 spaces) is removed, and a terminal's
escape sequences (colours, a window title, bracketed paste) are dropped. Before, the
kernel log's "fallen off the bus" and a CSV's "[GPU requires reset]" were missed behind
non-breaking spaces (a false pass), and a double-spaced table read each GPU's second row from
the blank line below its first (MIG "Enabled" read as disabled), and a `dmesg` saved with its
colours (`ssh -t box sudo dmesg -T > log`, a `script` session: dmesg colours its time stamp and
the `NVRM: ` before each Xid) read no Xid line: `gpu_xid` passed a box whose log showed Xid 43.

One output per file: an output pasted twice, or two boxes' outputs pasted into one file, was
read as one box with twice the GPUs or cores, a CSV header read as a GPU named "name", a
second `free`'s Mem row taken for the box's RAM. `outputs_in` counts the marks a format prints
once per run; the caller refuses a file with more than one.
"""

from __future__ import annotations

import itertools
import re
import textwrap
import unicodedata
from collections.abc import Sequence

from gpuonboard.api import exit_labelled, paste_frames
from gpuonboard.api.paste_fences import FENCE, unfenced

# every Unicode space separator but the plain space, and the ideographic space
_SPACES = re.compile("[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]")
# characters a page or a chat adds that show nothing: zero-width space, non-joiner and joiner, the
# word joiner, a byte-order mark inside the text (zero-width no-break space), a soft hyphen, the
# Mongolian vowel separator; no tool read here prints one
_INVISIBLE = re.compile("[\u00ad\u180e\u200b-\u200d\u2060\ufeff]")


def _box_ascii() -> dict[int, str]:
    """Box-drawing characters (U+2500-U+257F) as the ASCII nvidia-smi draws its table with, one
    character for one, so every column stays where it was: lines across are `-` (double `=`),
    lines down `|`, every corner, tee and crossing `+`."""
    import unicodedata

    table = {}
    for code in range(0x2500, 0x2580):
        name = unicodedata.name(chr(code), "")
        if " AND " in name or not ("HORIZONTAL" in name or "VERTICAL" in name):
            table[code] = "+"  # a corner, a tee, a crossing
        elif "VERTICAL" in name:
            table[code] = "|"
        else:
            table[code] = "=" if name.startswith("BOX DRAWINGS DOUBLE") else "-"
    return table


_BOX = _box_ascii()
# what a chat's, a word processor's or a page's typography makes of ASCII (smart quotes, `...` as
# one character), as the tool printed it: the kernel's `AER: can't recover` with a curly
# apostrophe was no unrecovered GPU (gpu_xid passed), gVisor's `Starting gVisor…` no sandbox
_TYPOGRAPHY = {
    **dict.fromkeys(map(ord, "\u2018\u2019\u201a\u201b\u2032"), "'"),
    **dict.fromkeys(map(ord, "\u201c\u201d\u201e\u201f\u2033"), '"'),
    ord("\u2026"): "...",
}
# a JSON text (lsblk -J, lscpu -J): its first `{`, or `[` before a value, at a line's start (a
# dmesg line's `[  12.3]` is no such start); and each of its strings, or a run of anything else
_JSON_START = re.compile(r"^[^\S\n]*(?:\{|\[\s*(?:[{\[\"\]]|$))", re.MULTILINE)
_JSON_STRING_OR_NOT = re.compile(r'"(?:[^"\\\n]|\\.)*"|[^"]+|"')


def typography_note(text: str) -> str | None:
    """What a note says where `text` holds typographic quotes or an ellipsis that normalise reads
    as ASCII (`couldn‘t` read as `couldn't`): a line quoted from it shows the ASCII, not the
    characters as printed; None where it holds none."""
    if text.isascii():
        return None
    found = sorted({ch for ch in text if ord(ch) in _TYPOGRAPHY})
    if not found or _typography(text) == text:  # (in a JSON's strings: kept as printed)
        return None
    shown = ", ".join(f"`{ch}` as `{_TYPOGRAPHY[ord(ch)]}`" for ch in found)
    return f"its typographic quotes are read, and quoted, as ASCII ({shown})"


def _typography(text: str) -> str:
    """`text` with its typographic quotes and ellipsis as ASCII (_TYPOGRAPHY); in a JSON text
    only outside its strings: a `“` there is a chat's for the JSON's own `"`, one inside a string
    is the value's (lsblk -J's mount point `/mnt/My “backup”`: before, it ended the string and
    the file was refused as JSON cut short or damaged)."""
    if not _JSON_START.search(text):
        return text.translate(_TYPOGRAPHY)
    return _JSON_STRING_OR_NOT.sub(
        lambda m: m.group(0) if m.group(0).startswith('"') else m.group(0).translate(_TYPOGRAPHY), text
    )


# a terminal's escape sequences, as a program that writes to a terminal prints them and a saved
# session (`script`, `ssh -t ... > file`, `tmux capture-pane -e`) keeps them: CSI (colours
# `ESC[32m`, `ESC[0m`, grep's `ESC[K`, bash's bracketed paste `ESC[?2004h`), OSC (a prompt's
# window title `ESC]0;user@host: ~BEL`), and the two-byte ones (`tput sgr0`'s `ESC(B`). No tool
# read here prints an ESC as text.
# (and the strings a terminal does not show: APC, DCS, PM, SOS; Buildkite's `ESC_bk;t=1714564800000BEL`
# time stamp before each line of a job's log)
_ESCAPES = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|[\]_^PX][^\x07\x1b\n]*(?:\x07|\x1b\\)?|[ -/]*[0-~])")
# the same colours copied where the ESC byte did not survive: dropped (a web terminal, a console
# that does not render it: `[32m[  12.3] [0m[33mNVRM: [0mXid ...`, systemd's `[[0;32m  OK  [0m]`)
# or shown as text (`less` without -R: `ESC[32m`; `cat -v`: `^[[32m`). Only a colour (SGR) with
# a number (`[0m`, `[1;31m`), grep's `[m[K`, or a sequence shown with its mark, is residue, and
# only in a text that holds a reset of one (every colouring tool resets): so `[mem 0x...]`, a
# dmesg stamp or any text without such a reset is never eaten.
_MARK = r"(?:ESC|\^\[)"
_RESIDUE = re.compile(
    rf"{_MARK}?\[\d{{1,3}}(?:;\d{{1,3}})*m(?:{_MARK}?\[K)?|{_MARK}?\[m{_MARK}?\[K|{_MARK}\[[0-?]*[ -/]*[@-~]"
)
_RESET_RESIDUE = re.compile(rf"{_MARK}?\[0m|{_MARK}?\[m{_MARK}?\[K|{_MARK}\[m")


# UTF-8 read as Windows-1252 (a mail client's, an editor's or a web form's wrong guess): each
# character of two to four bytes as that many Latin letters and signs (`│` as `â”‚`, `─` as `â”€`,
# a non-breaking space as `Â` and one, `’` as `â€™`): a lead byte's letter, then continuation
# bytes' (0x80-0xBF as Windows-1252 shows them)
_CP1252_CONTINUATION = "\u20ac\u201a\u0192\u201e\u2026\u2020\u2021\u02c6\u2030\u0160\u2039\u0152\u017d" + (
    "\u2018\u2019\u201c\u201d\u2022\u2013\u2014\u02dc\u2122\u0161\u203a\u0153\u017e\u0178\u00a0-\u00bf"
    "\u0081\u008d\u008f\u0090\u009d"  # (the bytes Windows-1252 leaves undefined, as a browser shows them)
)
_MOJIBAKE = re.compile(f"[\u00c2-\u00f4][{_CP1252_CONTINUATION}]{{1,3}}")


def _unmojibaked(text: str) -> str:
    """`text` with each run of UTF-8 read as Windows-1252 (_MOJIBAKE) that is one character's
    bytes read back as that character; any other run kept. Before, a table drawn with
    box-drawing characters and saved so (`â”‚`) was refused as no output read here, and a
    kernel log's line behind a page's non-breaking spaces so (`Â `) read no SXid: nvswitch_sxid
    passed."""
    if not _MOJIBAKE.search(text):
        return text

    def back(m: re.Match[str]) -> str:
        try:
            return bytes(_cp1252_byte(c) for c in m.group()).decode("utf-8")
        except UnicodeError:
            return m.group()

    return _MOJIBAKE.sub(back, text)


# UTF-8 shown in a Windows console's code page 437 (`─` as `ΓöÇ`, `│` as `Γöé`): a lead byte's
# character (0xC2-0xF4 as cp437 shows them), then one to three continuation bytes' (0x80-0xBF)
_CP437 = {bytes([b]).decode("cp437"): b for b in range(0x80, 0x100)}
_CP437_MOJIBAKE = re.compile(
    "[{}][{}]{{1,3}}".format(
        "".join(bytes([b]).decode("cp437") for b in range(0xC2, 0xF5)),
        "".join(bytes([b]).decode("cp437") for b in range(0x80, 0xC0)),
    )
)


def _uncp437(text: str) -> str:
    """`text` with each run of UTF-8 shown as code page 437 (_CP437_MOJIBAKE) that is one
    character's bytes read back as that character (one that is no letter: a box-drawing line, a
    space, a quote); any other run kept. Before, a table or a log drawn so (`E5ΓöÇ2673`) read its
    values with the mojibake in them."""

    def back(m: re.Match[str]) -> str:
        try:
            char = bytes(_CP437[c] for c in m.group()).decode("utf-8")
        except UnicodeError:
            return m.group()
        # (a console prints lines, spaces, quotes, dashes, signs: a modifier or an unassigned
        # character is the box's own `═╡` read as UTF-8's bytes, U+0375: no mojibake)
        return char if unicodedata.category(char) in _CONSOLE_CATEGORIES else m.group()

    return _CP437_MOJIBAKE.sub(back, text) if _CP437_MOJIBAKE.search(text) else text


# the kinds of character a UTF-8 console output holds that code page 437 shows as mojibake
_CONSOLE_CATEGORIES = frozenset({"Zs", "Pd", "Pi", "Pf", "Po", "Ps", "Pe", "So", "Sm", "Sc", "No"})


def _cp1252_byte(char: str) -> int:
    """The byte Windows-1252 shows as `char` (a C1 control for one it leaves undefined)."""
    return ord(char) if ord(char) < 0xA0 and ord(char) not in _CP1252_SHOWN else char.encode("cp1252")[0]


_CP1252_SHOWN = frozenset(range(0x80, 0xA0)) - {0x81, 0x8D, 0x8F, 0x90, 0x9D}


_TRAILING_SPACES = re.compile(r" +$", re.MULTILINE)


def _unpadded(text: str) -> str:
    """A terminal's capture that pads every line with spaces to the window's width (`screen`'s
    hardcopy, `tmux capture-pane -N`, a console's copy: every line as long as the others, at
    least 3, some ending in a space) without those spaces; any other text as it is (a space at
    a line's end may tell where a narrow column wrapped a line: kept). Before, a padded
    `nvidia-smi -q -d ECC` read no ECC count (its `Volatile` heads were not found)."""
    lines = text.split("\n")
    body = lines[:-1] if lines[-1] == "" else lines
    if (
        len(body) < 3
        or len({len(line) for line in body}) != 1
        or not any(line.endswith(" ") for line in body)
    ):
        return text
    return _TRAILING_SPACES.sub("", text)


# the character references a web page writes for what a command printed (named ones by name,
# numbered ones by number), semicolon and all; never a bare `&copy` or the like (a word of a value)
_ENTITY = re.compile(r"&(?:(lt|gt|amp|quot|apos|nbsp)|#(\d{1,7})|#[xX]([0-9a-fA-F]{1,6}));")
_NAMED = {"lt": "<", "gt": ">", "amp": "&", "quot": '"', "apos": "'", "nbsp": "\u00a0"}
# a raw tag (`<gpu>`, `</gpu>`, `<?xml`, `<!DOCTYPE`: never dmesg -r's `<6>`), one escaped, and
# a raw one closed by an escaped `>` (`<timestamp&gt;`: no XML has `&` in a tag)
_RAW_TAG = re.compile(r"<[A-Za-z_?!/]")
_ESCAPED_TAG = re.compile(r"&lt;[A-Za-z_?!/]")
_HALF_ESCAPED_TAG = re.compile(r"<[A-Za-z_?!/][^<>\n]*&gt;")
# what no tool read here prints: a page's non-breaking space written as a reference
_PAGE_ONLY = re.compile(r"&(?:nbsp|#160|#[xX][aA]0);")


def _entity(m: re.Match[str], keep: frozenset[str] = frozenset()) -> str:
    """The character `m` (an _ENTITY) stands for; the reference itself where its name is in
    `keep` or its number is no character."""
    if m.group(1):
        return m.group(0) if m.group(1) in keep else _NAMED[m.group(1)]
    number = int(m.group(2)) if m.group(2) else int(m.group(3), 16)
    return chr(number) if 0 < number <= 0x10FFFF and not 0xD800 <= number <= 0xDFFF else m.group(0)


def _unescaped(text: str) -> str:
    """A paste whose web page escaped its markup, read as the output: an XML whose every tag is
    escaped (`&lt;gpu&gt;`, no raw `<` tag) or a text output holding references (`&gt;`, `&amp;`,
    `&nbsp;`), each reference decoded once; an XML with raw tags that a page half escaped (its
    `>` as `&gt;`: `<timestamp&gt;`, or `&nbsp;` in its indent) with only those decoded, its own
    `&amp;` and `&lt;` kept (a real -q -x writes them in its strings); any other text as it is.
    Before, 1Panel-dev/1Panel#11910's `-q -x` (`<timestamp&gt;`, `&nbsp;` indents) was refused
    as "ends before </nvidia_smi_log>"."""
    if "&" not in text or not _ENTITY.search(text):
        return text
    if not _RAW_TAG.search(text):
        return _ENTITY.sub(_entity, text)
    if _HALF_ESCAPED_TAG.search(text) or _PAGE_ONLY.search(text):
        return _ENTITY.sub(lambda m: _entity(m, frozenset({"amp", "lt"})), text)
    return text


# a web page's formatting tags around a pasted output (a terminal's HTML export: `<pre><font
# color="#EF2929">╰─</font> nvidia-smi -L`); one of the first group says the text is HTML (no
# output read here prints one: nvidia-smi's XML has other tags)
_HTML_SAYS = re.compile(r"<(?:pre|code|font|span|br|div|tt|kbd|samp)(?:\s[^<>\n]*)?/?>", re.IGNORECASE)
_HTML_TAG = re.compile(
    r"</?(?:pre|code|font|span|br|div|tt|kbd|samp|b|i|u|strong|em|p|a)(?:\s[^<>\n]*)?/?>", re.IGNORECASE
)
_BREAK_TAG = re.compile(r"<br\s*/?>\n?", re.IGNORECASE)
# a whole document's body (aha's default export: `<?xml ...?>`, DOCTYPE, `<head>` above it)
_BODY = re.compile(r"<body(?:\s[^<>]*)?>\n?", re.IGNORECASE)
_BODY_END = re.compile(r"</body\s*>", re.IGNORECASE)


def _untagged(text: str) -> str | None:
    """A text that is clearly HTML (a tag of _HTML_SAYS, no nvidia-smi XML root) without its
    formatting tags (`<br>` a line end), a whole document (aha's default export, which starts
    with an XML declaration) without what is outside its `<body>`, and with its character
    references decoded once (`&lt;`, `&gt;`, `&amp;`, `&nbsp;`); None for any other text.
    Before, a terminal session exported as HTML was read as one output: its prompts hidden among
    `<font>` tags split nothing, and its nvidia-smi -L and nvcc sections were lost; an aha export
    (its `<?xml` first) was read as a broken nvidia-smi XML."""
    if "<" not in text or not _HTML_SAYS.search(text) or "<nvidia_smi_log" in text:
        return None
    if (body := _BODY.search(text)) is not None:  # (a whole document: aha's, its `<?xml` first)
        text = text[body.end() :]
        text = text[: end.start()] if (end := _BODY_END.search(text)) else text
    text = _HTML_TAG.sub("", _BREAK_TAG.sub("\n", text))
    return _ENTITY.sub(_entity, text)


def normalise(text: str) -> str:
    """The text as the tool printed it: a web page's escaping of it undone (_unescaped), or a
    page's HTML tags around it dropped (_untagged), UTF-8 read as Windows-1252 or shown as code
    page 437 read back (_unmojibaked, _uncp437), a
    log collector's stamps and a unit's journal line heads dropped (_unstamped), a screen's
    padding spaces dropped, Unicode spaces as spaces, characters that show nothing
    (a zero-width space) dropped, typographic quotes and ellipsis as ASCII (in a JSON, outside its
    strings: _typography), a table drawn with box-drawing characters in ASCII, a line-number
    gutter dropped, lines ending in a backslash without it, a double-spaced paste single-spaced,
    an indent every line shares removed, a Markdown code fence around it dropped, a terminal's
    escape sequences (colours) dropped, and what is left of them where the ESC byte was lost or
    shown as text (_RESIDUE), nvidia-smi's own messages wrapped by a narrow column joined again
    (_messages_joined), a stray Markdown backtick at either end dropped (_unticked), a tab in a
    kernel log's stamped line a space (_untabbed), a GitHub `<details>` section's tags dropped,
    an RFC 5424 syslog header a classic one and a klog record's multi-line value as the lines it
    quotes (paste_frames), a command's output recorded beside its exit code on one line
    (`rc=255   Failed to ...`, `nvidia-smi returncode=15; stdout=...`) as that output
    (exit_labelled)."""
    text = _unbroken(_untabbed(_framed(text)))
    text = paste_frames.klog_unquoted(text)  # (its value's lines whole first)
    return _messages_joined(textwrap.dedent(exit_labelled.unlabelled(_single_spaced(text))))


def klog_quoter(text: str) -> str:
    """paste_frames.klog_quoter of the text as normalise reads it (a CI log's stamps dropped)."""
    return paste_frames.klog_quoter(_unbroken(_untabbed(_framed(text)))) if "=<" in text else ""


def _framed(text: str) -> str:
    """normalise's steps before a klog record's value is unquoted."""
    html = _untagged(text)
    text = _uncp437(_unmojibaked(_unescaped(text) if html is None else html))
    text = paste_frames.rfc5424_unframed(text)
    text = _ESCAPES.sub("", text) if "\x1b" in text else text
    text = _RESIDUE.sub("", text) if _RESET_RESIDUE.search(text) else text
    text = _unguttered(_typography(_SPACES.sub(" ", _INVISIBLE.sub("", text)).translate(_BOX)))
    return _unticked(_unprefixed(_unstamped(unfenced(paste_frames.undetailed(_unpadded(text))))))


# a Markdown backtick or three left on the first line's start or the last line's end (inline
# code's, or a fence's that lost its newline: "`<?xml version=...", "...</nvidia_smi_log>```")
_HEAD_TICKS = re.compile(r"\A(\s*)`{1,3}(?=[^`\n])")
# (after the last line's own trailing blanks too: `...zhaoxin   Shanghai ````, round 40)
_TAIL_TICKS = re.compile(r"(?<=[^`\s])([ \t]*)`{1,3}(\s*)\Z")


def _unticked(text: str) -> str:
    """The text without a paste's stray Markdown backticks before its first line or after its
    last, where what is left is an output read here (no tool read here prints one there), or a
    session whose first line is a prompt (round 40: `` `(env) user@host:~$ ray attach ... ``)."""
    from gpuonboard.api.saved_kinds import detect_kind
    from gpuonboard.api.transcript import is_prompt

    bare = _TAIL_TICKS.sub(r"\1\2", _HEAD_TICKS.sub(r"\1", text, count=1), count=1)
    if bare == text:
        return text
    first = next((line for line in bare.splitlines() if line.strip()), "")
    if detect_kind(exit_labelled.unlabelled(bare)) is None and not is_prompt(first):
        return text  # (an output recorded beside its exit code is one read here)
    return bare


_ADDRESS = r"[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f]"
# nvidia-smi's own message lines (beside any of its formats, or in place of its output), each
# whole, as the readers match them (faults.INFOROM_LINE, gpu_unopened._NO_HANDLE,
# nvidia_smi_failure._CAUSES): a line longer than a chat's or a mail's narrow column
_MESSAGES = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        rf"WARNING: infoROM is corrupted at gpu {_ADDRESS}",
        rf"Unable to determine the device handle for gpu\s?(?:\d+: )?{_ADDRESS}: (?:Unknown Error"
        r"|GPU is lost\. Reboot the system to recover this GPU|Insufficient Permissions|Not Found"
        r"|GPU requires reset|Timeout|Unknown Error\. Reboot the system to recover this GPU)\.?",
        r"No devices were found",
        r"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver\. Make sure"
        r" that the latest NVIDIA driver is installed and running\.",
        r"Failed to initialize NVML: (?:Driver/library version mismatch|Unknown Error|Driver Not Loaded"
        r"|Insufficient Permissions|GPU access blocked by the operating system)",
    )
)
# the start of each message: a line that is (the start of) one may be its first piece
_MESSAGE_HEADS = (
    "WARNING: infoROM is corrupted at gpu",
    "Unable to determine the device handle for",
    "No devices were found",
    "NVIDIA-SMI has failed because",
    "Failed to initialize NVML:",
)


def _message_start(line: str) -> bool:
    """Whether `line` may be the first piece of one of nvidia-smi's messages: it starts with a
    message's first words, or is (at least 8 characters of) their start."""
    head = line.strip()
    return len(head) >= 8 and any(h.startswith(head) or head.startswith(h) for h in _MESSAGE_HEADS)


def _message_whole(pieces: list[str]) -> str | None:
    """The message `pieces` are of, whole, when some way of joining them is one of _MESSAGES; else
    None. A break next to a blank (a wrap at a column, at a space) kept its space; any other is
    a space a word wrap dropped or a cut inside a word (spaces tried first)."""
    indent = pieces[0][: len(pieces[0]) - len(pieces[0].lstrip())]
    bare = [p.strip() for p in pieces]
    spaced = [a[-1:].isspace() or b[:1].isspace() for a, b in itertools.pairwise(pieces)]
    for glues in itertools.product((" ", ""), repeat=len(pieces) - 1):
        glued = [" " if kept else glue for kept, glue in zip(spaced, glues, strict=True)]
        joined = bare[0] + "".join(g + p for g, p in zip(glued, bare[1:], strict=True))
        if any(m.fullmatch(joined) for m in _MESSAGES):
            return indent + joined
    return None


def _messages_joined(text: str) -> str:
    """`text` with each of nvidia-smi's own messages (an infoROM warning, a GPU it could not open,
    its failure) that a narrow column wrapped over up to 8 lines joined again. Before, a
    `WARNING: infoROM is corrupted at gpu ...` wrapped at 40 columns below a table was no
    warning (sensor_faults left GPU 7 out), and `Unable to determine the device handle for GPU1:
    ...` above one no GPU fallen off the bus (gpu_count unverified, not failed)."""
    lines = text.split("\n")
    if not any(_message_start(line) for line in lines):
        return text
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        whole = None
        if _message_start(line) and not any(m.fullmatch(line.strip()) for m in _MESSAGES):
            for more in range(1, 8):
                pieces = lines[i : i + more + 1]
                if len(pieces) <= more or not all(p.strip() and p.strip()[0] not in "|+<" for p in pieces):
                    break
                if (whole := _message_whole(pieces)) is not None:
                    i += more
                    break
        out.append(whole if whole is not None else line)
        i += 1
    return "\n".join(out)


# a line-number gutter (`cat -n`'s `     1\t`, `nl`'s, an editor's or a pastebin's `  1 | `,
# `1: `, vim's `  1 `): the number and its separator
_GUTTER = re.compile(r"^ *(\d+)(?:\t| ?[|:] ?| )")
_CAT_N = re.compile(r"^(?=[ \d]{6}\t) *\d+\t")


def _unguttered(text: str) -> str:
    """A paste whose every line (at least 3) starts with its line number, one more each line (a
    listing copied from a pager, an editor or a pastebin with its gutter), as the lines without
    it. No output read here numbers its lines so (a `--query-gpu` CSV's index is followed by a
    comma, a list of indexes alone by nothing). Before, such a paste was refused as no output
    this tool reads, or a kernel log's continuation lines lost their indent behind the gutter
    and were read as messages of their own (`RmInitAdapter failed` -> replace, not the driver
    the GPU requires)."""
    lines = text.split("\n")
    end = len(lines) - 1 if lines[-1] == "" else len(lines)
    found = [_GUTTER.match(line) for line in lines[:end]]
    # (`nl` numbers no blank line; `cat -n`'s own gutter, a 6-wide number and a tab, is one on
    # a paste of 1 or 2 lines too: a --query-gpu CSV's header and row, an `nvidia-smi -L` line)
    if not all(m or not line.strip() for m, line in zip(found, lines, strict=False)):
        return text
    numbers = [int(m.group(1)) for m in found if m]
    if not numbers or numbers != list(range(numbers[0], numbers[0] + len(numbers))):
        return text
    if len(numbers) < 3 and not all(_CAT_N.match(line) for line in lines[:end] if line.strip()):
        return text
    return "\n".join(
        [line[m.end() :] if m else line for line, m in zip(lines, found, strict=False)] + lines[end:]
    )


# the prefix Ray puts on each line a remote process printed, and so each launcher built on it
# (SkyPilot's `sky launch` / `sky exec`: `(sky-cmd, pid=13008) `; Ray's `(pid=4321) `,
# `(MyActor pid=4321) `, `(pid=4321, ip=10.0.0.2) `)
_LAUNCHER_PREFIX = re.compile(r"\((?:[\w.-]+,? )?pid=\d+(?:, ip=[\d.]+)?\) ?")


def _unprefixed(text: str) -> str:
    """A paste from a launcher's log whose every line carries one prefix naming the remote
    process that printed it (SkyPilot's `(sky-cmd, pid=13008) `, before each line of an
    `nvidia-smi` run through `sky launch`), as the lines without it: no output read here starts
    its lines so; lines above the first that carries it (a prompt) are kept, and so are the lines
    without it below (a wrap's pieces). Before, such a table
    was read as nvidia-smi that answered and listed no GPU."""
    lines = text.split("\n")
    # (from the first line that carries it: a prompt line copied above, `$ sky launch ...`, has none)
    start = next((i for i, line in enumerate(lines) if _LAUNCHER_PREFIX.match(line)), None)
    first = _LAUNCHER_PREFIX.match(lines[start]) if start is not None else None
    said = [line for line in lines[start or 0 :] if line.strip()]
    # (one process's lines, at least 3 or all: those without it are a wrap's pieces of the line
    # before, joined later; another process's prefix is another output interleaved)
    carried = [m.group().rstrip() for line in said if (m := _LAUNCHER_PREFIX.match(line))]
    if first is None or len(set(carried)) > 1 or len(carried) < min(3, len(said)):
        return text
    # (a line that held only spaces after it may have lost them and its prefix's own: dropped too)
    bare = first.group().rstrip()
    return "\n".join(
        lines[:start] + ["" if line == bare else line.removeprefix(first.group()) for line in lines[start:]]
    )


# the stamp a log collector puts before each line a program printed: GitHub Actions'
# (`2024-05-01T12:00:00.1234567Z `), `docker logs -t`'s and `kubectl logs --timestamps`' (RFC 3339
# with a fraction: `2024-05-01T12:00:00.123456789Z `; a viewer's copy may put a tab after it),
# GitLab runner's (the same, then the stream:
# `00O `, `01E+ `), Jenkins Timestamper's (`[2024-05-01T12:00:00.123Z] `). A kernel log's own ISO
# stamp has a comma (`dmesg --time-format iso`) or no fraction (`journalctl -o short-iso`), and a
# journal's line a host and a program after it (_JOURNAL: not taken for a collector's)
_STAMP = re.compile(
    r"(?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{1,9}(?:Z|[+-]\d\d:?\d\d)(?: \d\d[OE]\+?)?"
    r"|\[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?\])(?:[ \t]|$)"
)
# a journal's (or a syslog's) line of a program: its time, host and program (`May 01 12:00:00
# gpu01 nvidia-smi[1234]: `; short-iso's and short-precise's times too)
_JOURNAL = re.compile(
    r"(?:\w{3} [ \d]\d \d\d:\d\d:\d\d(?:\.\d+)?|\d{4}-\d\d-\d\dT[\d:.,+\-Z]+)"
    r" ([^\s:]+) ([^\s:\[]+)(?:\[\d+\])?:(?: |$)"
)
# a log's own lines around the output: Jenkins Pipeline's step lines (`[Pipeline] sh`), GitHub
# Actions' group markers (`##[group]Run nvidia-smi`, `##[endgroup]`), GitLab runner's section
# markers (`section_start:1714564800:step_script`, its ESC[0K gone) and its last lines; no tool
# read here prints one
_LOG_OWN = re.compile(
    r"\[Pipeline\] .*|##\[(?:group|endgroup)\].*|section_(?:start|end):\d+:\S+"
    r"|Cleaning up project directory and file based variables|Job succeeded|ERROR: Job failed: .*"
)


def _carried(lines: Sequence[str], prefix: re.Pattern[str]) -> int | None:
    """The index of the first line that starts with `prefix` when every non-empty line from
    there on does (at least 2 of them, or every non-empty line of the text); else None."""
    start = next((i for i, line in enumerate(lines) if prefix.match(line)), None)
    if start is None:
        return None
    said = [line for line in lines[start:] if line.strip()]
    if len(said) < 2 and len(said) < sum(1 for line in lines if line.strip()):
        return None
    return start if all(prefix.match(line) for line in said) else None


# after an ISO time, a journal's or a syslog's program, its host before it where one is written
# (`journalctl -o short-iso-precise`: `gpu01 kernel: `, `gpu01 nvidia-persistenced[1234]: `; with
# --no-hostname `kernel: `; rsyslog's RFC 3339 lines `gpu01 sudo: `): the journal's own time, not a
# collector's
_JOURNAL_HEAD = re.compile(r"(?:[^\s:]+ )?(?:kernel|[^\s:\[]+\[\d+\]): ")
_KERNEL_HEAD = re.compile(r"(?:[^\s:]+ )?kernel: ")


_GITLAB_MARK = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{1,9}Z \d\d[OE]\+? ")


def _journal_iso(lines: Sequence[str]) -> bool:
    """Whether the stamped lines are a journal's or a syslog's: any of them is the kernel's (its
    program after the time), or most are a program's with its pid. Before, a syslog whose
    pid-less lines (sudo's, audit's) or a `--no-hostname` journal whose other programs' lines
    outnumbered the kernel's had its times dropped as a collector's: the log was refused, its
    Xid 79 unread."""
    # (GitLab runner's stream mark after the time, `00O`, is the runner's: no journal prints one)
    if any(_GITLAB_MARK.match(line) for line in lines):
        return False
    said = [_STAMP.sub("", line, count=1) for line in lines if line.strip()]
    if any(_KERNEL_HEAD.match(line) for line in said):
        return True
    return sum(1 for line in said if _JOURNAL_HEAD.match(line)) * 2 > len(said)


def _unstamped(text: str) -> str:
    """A program's output as a log collector saved it, each line behind the collector's stamp
    (_STAMP: a CI job's log, `docker logs -t`, `kubectl logs --timestamps`) or behind a journal's
    time, host and program (_JOURNAL: a unit's output in `journalctl -u`; one host and one
    program, not the kernel, whose log is read as such), as the lines the program printed; a
    log's own step lines (`[Pipeline] sh`) dropped; lines above the first that carries it (a
    prompt) kept. Before, a stamped table or CSV was taken for a kernel log (by its ISO stamps)
    with no Xid in it: gpu_xid passed, and no GPU was read."""
    lines = [line for line in text.split("\n") if not _LOG_OWN.fullmatch(line.strip())]
    if (start := _carried(lines, _STAMP)) is not None and not _journal_iso(lines[start:]):
        lines = [*lines[:start], *(_STAMP.sub("", line, count=1) for line in lines[start:])]
        lines = [line for line in lines if not _LOG_OWN.fullmatch(line.strip())]  # (stamped too)
    if (start := _carried(lines, _JOURNAL)) is not None:
        said = {m.group(1, 2) for line in lines[start:] if (m := _JOURNAL.match(line))}
        left = [_JOURNAL.sub("", line, count=1) for line in lines[start:]]
        if len(said) == 1 and next(iter(said))[1] != "kernel" and not _kernel_said(left):
            lines = [*lines[:start], *left]
    return "\n".join(lines)


def _kernel_said(lines: Sequence[str]) -> bool:
    """Whether any of a program's lines, its journal head dropped, would be read as the kernel's
    (an NVRM, Xid or SXid line, a dmesg stamp): such a program's log (`grep NVRM /var/log/syslog`
    that found only sudo's line of the command, a unit forwarding dmesg) is that program's, never
    the kernel log, so its heads are kept."""
    from gpuonboard.api.saved_kinds import kernel_shaped

    return any(kernel_shaped(line) for line in lines)


# a Windows path running to a line's end, cut there by a wrap at a column (after a backslash or
# inside a name): from its drive (`C:\\Program Files\\NVIDIA Corporation\\`), or the whole line
# where it goes on a path cut so above (a path over 3+ lines: `...\\WinGet` / `\\Packages\\...\\bin\\`
# / `ffmpeg.exe`); none of the characters Windows forbids in a path (a table's `|`) after it
_PATH_CUT = re.compile(r"\b[A-Za-z]:\\[^|<>\"*?\t]*\S$")
_PATH_GOES_ON = re.compile(r"^[^\s|<>\"*?][^|<>\"*?\t]*$")
# the next line of a command a shell continued: bash's `> ` (PS2) or an indented option
_CONTINUATION = re.compile(r"^\s*>\s|^\s*-")


def _unbroken(text: str) -> str:
    """A paste whose lines end in a backslash (Markdown's hard line break, on every line of a
    paragraph but its last; a shell's line continuation: `| ... 98218MiB | \\`) as the lines
    without it (one line of a paste, too); no tool read here ends its lines with one. A Windows
    path cut after one of its backslashes by a wrap at a column keeps it (_PATH_CUT: the line
    ends in a drive's path, or goes on with one cut so above, and the next line goes on with no
    blank before it), and so does a session's command line its next line continues. Before,
    each such `Name : C:\\Program Files\\NVIDIA Corporation\\` lost it and every value of an
    `nvidia-smi -q` wrapped at 80 columns was left unread; and then Markdown's breaks right
    after a word were kept: gVisor's `Starting gVisor...\\` was no sandbox's banner (gpu_xid
    passed), the -q's recovery action `None\\` failed gpu_recovery. (String methods find the
    backslash: a pattern's blanks before it took time as the square of a run of blanks.)"""
    lines = text.split("\n")
    if not any(line.rstrip(" \t").endswith("\\") for line in lines):
        return text
    from gpuonboard.api.transcript import _prompt

    out: list[str] = []
    path_cut = continued = False
    for line, after in zip(lines, [*lines[1:], ""], strict=True):
        path = _PATH_CUT.search(line) or (path_cut and _PATH_GOES_ON.match(line))
        path_cut = bool(path) and after[:1].strip() != ""
        # (a command a session's prompt line continues on its next line: `> --format=csv`, an
        # indented `--format=csv`, which the session's reader joins)
        continued = _CONTINUATION.match(after) is not None and (continued or _prompt(line) is not None)
        cut = line.rstrip(" \t")
        out.append(line if path_cut or continued or not cut.endswith("\\") else cut[:-1].rstrip(" \t"))
    return "\n".join(out)


# a kernel log line's stamp: dmesg's (`[  12.345678]`, -H's `[  +0.000123]` and `[Jan 2 18:37]`,
# -T's `[Mon Jan  2 18:37:03 2025]`, an elision in its place: `[    ....    ]`), an ISO time's
# (`2025-01-02T18:37:03,123456+00:00`), a syslog's or journal's time, host and program
# (`Jan  2 18:37:03 gpu01 kernel: `, in any language's month: `1月 02 ...`), with --decode's
# facility and level before it (`kern  :warn  : `)
PASTED_STAMP = (
    r"(?:[a-z]+ *:[a-z]+ *: )?(?:\[ *(?:\+?\d+\.\d+|\.{3,}) *\]|\[[A-Z][a-z]{2} +\d+ \d\d:\d\d\]"
    r"|\[[A-Z][a-z]{2} [A-Z][a-z]{2} +\d+ \d\d:\d\d:\d\d \d{4}\]"
    r"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[,.]\d+[+-]\d\d:?\d\d(?= )"
    r"|\S{1,5} +\d+ \d\d:\d\d:\d\d [^\s\[\]]+ [^\s:\[\]]+(?:\[\d+\])?: )"
)
_STAMP_AT = re.compile(rf"(?:^|(?<=\s)){PASTED_STAMP}")


def _untabbed(text: str) -> str:
    """A kernel log whose runs of spaces a copy made tabs (a spreadsheet's, an editor's: `[\t+0.000898]
    pcieport 0000:00:03.0:\tdevice [8086:6f08]`) with each tab of a stamped line a space. Before,
    the PCIe port's `device` line so was not read as its own: host_hw_errors failed on the GPU's
    port, which the log itself names the GPU's (gpu_xid), and a general protection fault's
    trace went unread: gpu_xid passed."""
    if "\t" not in text:
        return text
    lines = text.split("\n")
    spaced = [line.replace("\t", " ") for line in lines]
    stamped = [i for i, line in enumerate(spaced) if "\t" in lines[i] and _STAMP_AT.match(line)]
    if not stamped:
        return text
    for i in stamped:
        lines[i] = spaced[i]
    return "\n".join(lines)


def _single_spaced(text: str) -> str:
    """A paste with a blank line after each of its (at least 3) lines, as the lines without
    those blanks (an output's own blank line became two and is kept as one); else unchanged."""
    lines = text.split("\n")
    filled = [i for i, line in enumerate(lines) if line.strip()]
    if len(filled) < 3:
        return text
    body = lines[filled[0] : filled[-1] + 1]
    if any(line.strip() for line in body[1::2]):
        return text
    return "\n".join([*lines[: filled[0]], *body[0::2], *lines[filled[-1] + 1 :]])


def quoted(lines: Sequence[str]) -> bool:
    """Whether `lines` are a quote: every non-empty line starts with `>`, or the first does and
    most do and every other is no longer than the longest that does: a piece a wrap moved off a
    quoted line (a mail client that re-wrapped the quoted lines at its width left those pieces
    without the marker; before, such a quoted `journalctl -k` read none of its driver messages,
    and gpu_xid passed), or the sender's short note below the quote. A line longer than every
    quoted one was never cut by the wrap that cut them: the sender's own output below a quote of
    the vendor's (before, a quoted vendor table above the user's own `dmesg` was unquoted with
    it and read as the box's GPUs: gpu_count passed). A line of its own between blank lines
    below the quote is the sender's note, whatever its length, and counts for neither (before,
    a quoted table above a one-line note longer than its lines was not unquoted: no GPU read)."""
    rows = [line.rstrip() for line in lines]
    # (a Markdown fence around the quote is the page's, no line of it: measure38d 05's quoted
    # `srun ... lscpu` session in a ```console block)
    filled = [i for i, line in enumerate(rows) if line and not FENCE.match(line)]
    marked = {i: rows[i].lstrip().startswith(">") for i in filled}
    if not filled or all(marked.values()):
        return bool(filled)
    counted = [i for i in filled if marked[i] or not _note(rows, i)]
    if not marked[filled[0]] or sum(marked[i] for i in counted) * 2 <= len(counted):
        return False
    width = max(len(rows[i]) for i in counted if marked[i])
    return all(marked[i] or len(rows[i]) <= width for i in counted)


def _note(rows: Sequence[str], i: int) -> bool:
    """Whether line `i` (stripped at its end) stands alone between blank lines (or the end)."""
    return i > 0 and not rows[i - 1] and (i + 1 == len(rows) or not rows[i + 1])
