"""A saved `df` whose paste lost the newlines between its rows (a forum post, a blog excerpt:
`... 40% / udev 3.9G 4.0K 3.9G 1% /dev ...`, every row on one line) is read row by row, as
the same output with its newlines: each row ends where the next one's device, three sizes,
capacity and mount point start. Before, every row after the first was read as the first row's
mount point, and an ordered mount among them failed as "not a mount point" (round 23, H1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuonboard.facts import disks

from ..offline_judge import verdicts

REAL = Path(__file__).parents[2] / "fixtures" / "real"
FORUM = "df-h__ubuntu-12.04-forum__5-disks__rows-joined-on-one-line.txt"
BLOG = "df-h__nvme-root-home-efi__blog-rows-joined-on-one-line.txt"


def _rows_apart(text: str) -> str:
    """The same output with a newline before each row (before each device the real paste
    names: every one starts with `/dev/`, `udev`, `tmpfs` or `none`); like the paste, without a
    newline after its last row (whose mount point may then be cut short: df_open_row)."""
    for device in (" /dev/", " udev ", " tmpfs ", " none "):
        text = text.replace(device, "\n" + device.lstrip())
    return text


@pytest.mark.parametrize(
    ("name", "path", "mounts"),
    [(FORUM, "/media/sauvegarde", 10), (BLOG, "/home", 3), (FORUM, "/srv/data", 10), (BLOG, "/boot/efi", 3)],
)
def test_rows_joined_on_one_line_judge_as_the_rows_apart(
    tmp_path: Path, name: str, path: str, mounts: int
) -> None:
    joined = (REAL / name).read_text()
    apart = _rows_apart(joined)
    assert len(apart.splitlines()) == mounts + 1  # (the copy with its newlines: one row a line)
    assert disks.parse_df(joined) == disks.parse_df(apart)
    assert len(disks.parse_df(joined)) == mounts
    order = f"data_disk: {path}"
    assert verdicts(tmp_path, "df-h.txt", joined, order) == verdicts(tmp_path, "df-h.txt", apart, order)


def test_the_forum_paste_finds_its_data_disk(tmp_path: Path) -> None:
    text = (REAL / FORUM).read_text()
    verdict, actual = verdicts(tmp_path, "df-h.txt", text, "data_disk: /media/sauvegarde")["data_disk"]
    assert (verdict, actual) == ("pass", "/dev/sda1 at /media/sauvegarde, 2.1 TB"), actual


def test_the_blog_paste_says_home_shares_the_system_disk(tmp_path: Path) -> None:
    text = (REAL / BLOG).read_text()
    verdict, actual = verdicts(tmp_path, "df-h.txt", text, "data_disk: /home")["data_disk"]
    assert verdict == "fail" and "same disk as /" in actual, actual


def test_a_mount_point_with_blanks_stays_one_mount_point() -> None:
    row = "/dev/sdb1 1.9T 1.3T 575G 70% /media/My Disk 2 /dev/sdc1 597G 517G 80G 87% /media/Serie\n"
    mounts = disks.parse_df("Filesystem Size Used Avail Use% Mounted on\n" + row)
    assert [m.mountpoint for m in mounts] == ["/media/My Disk 2", "/media/Serie"]


def _spans(text: str) -> list[tuple[str, int, int]]:
    """(mount point, start, end) of each row in the one-line paste: its device to its mount point."""
    spans, at = [], 0
    for mount in disks.parse_df(text):
        start = text.index(mount.device, at)
        at = text.index(mount.mountpoint, start + len(mount.device)) + len(mount.mountpoint)
        spans.append((mount.mountpoint, start, at))
    return spans


@pytest.mark.parametrize("name", [FORUM, BLOG])
def test_every_cut_inside_a_joined_row_keeps_the_verdict_or_is_unverified(tmp_path: Path, name: str) -> None:
    """The paste cut inside each row that holds the ordered mount (its own row, /'s): the whole
    paste's verdict, or unverified; never another (`... 40% / udev` is no mount point `/ udev`).
    A cut with the order's row wholly cut off is the class test_host_cut_r9 leaves: df prints no
    trailer, so rows cut off after a whole row cannot be told from a paste that ends there."""
    text = (REAL / name).read_text()
    spans = _spans(text)
    for path, _, _ in spans[1:]:
        order = f"data_disk: {path}"
        whole = verdicts(tmp_path, "df-h.txt", text, order)["data_disk"][0]
        for _, start, end in [s for s in spans if s[0] in (path, "/")]:
            for k in range(start + 1, end + 1, 2):
                got = verdicts(tmp_path, "df-h.txt", text[:k], order)["data_disk"][0]
                assert got in (whole, "unverified"), (path, text[:k][-50:], got)


def test_a_last_mount_point_with_blanks_and_no_final_newline_may_be_cut(tmp_path: Path) -> None:
    """A df whose last row (one row a line) is mounted at a path with blanks and which ends
    without df's newline: the mount point may be cut short (`/media/My Disk 2` of `/media/My Disk
    2 Backup`), so an order for exactly that path is unverified. The round's own cut rule (rows
    run together) had made df_open_row skip it, and the order passed (review K of round 23).
    The real forum paste's rows put one a line (the test's edit), its last row's mount point
    given blanks."""
    text = (
        _rows_apart((REAL / FORUM).read_text())
        .rstrip("\n")
        .replace("/media/409423EB9423E260", "/media/Win Data")
    )
    assert text.endswith("/media/Win Data")
    order = "data_disk: {mount: /media/Win Data, min_size: 1G}"
    assert verdicts(tmp_path, "df-h.txt", text, order)["data_disk"][0] == "unverified"
    assert verdicts(tmp_path, "df-h.txt", text + "\n", order)["data_disk"][0] == "pass"


SESSIONS = REAL.parent / "sessions"
GLUED = SESSIONS / "transcript__df-h-GLUED-onto-prompt__aliyun-40g-vda1-docker-mamicode.txt"
GLUED_VM = SESSIONS / "transcript__df-h-GLUED-onto-prompt__16g-vm-sda1-32g-jindouyun.txt"
APART_VM = "df-h__16g-vm-sda1-32g__blanks-collapsed__jishuzhan.txt"


@pytest.mark.parametrize("path", ["/data", "/boot/efi", "/var/lib/docker"])
def test_an_output_glued_onto_its_prompt_line_is_read_below_it(tmp_path: Path, path: str) -> None:
    """Two real pages that lost a post's line ends: `xxx:~$ df -h Filesystem Size ... /run/user/1000`
    and `[root@iz2ze5xd9ppdog0cch5vs0z ~]# df -h Filesystem ...`, prompt, command and output on
    one line. The whole line was dropped as the copied prompt and the file refused as "an empty
    file" (exit 2). df's header after the command starts the output; the first post's other copy,
    its lines kept (its prompt line left out of the capture), judges the same."""
    glued = GLUED_VM.read_text()
    apart = (REAL / APART_VM).read_text()
    order = f"data_disk: {path} 20G"
    assert verdicts(tmp_path, "df.txt", glued, order) == verdicts(tmp_path, "df.txt", apart, order)
    verdict, actual = verdicts(tmp_path, "df.txt", GLUED.read_text(), order)["data_disk"]
    if path == "/data":  # (no mount at /data on either box: it lives on /)
        assert (verdict, actual) == ("fail", "/data is not a mount point; it lives on the system disk /")
    assert verdict != "unverified" or path == "/var/lib/docker", actual


def test_a_command_line_without_a_glued_header_is_left_alone() -> None:
    """Only a tool's header after the command's own word splits the prompt line: `$ df -h
    /data` above its output, and `$ free -m` whose argument is no header, are prompt lines as
    before."""
    from gpuonboard.api.saved_text import unglued

    for text in ("$ df -h /data\nFilesystem Size\n", "$ free -m\n", "me@box:~$ grep total log\n"):
        assert unglued(text) == text


def test_a_command_line_holding_its_rows_is_refused_as_such(tmp_path: Path) -> None:
    """The real page's `# df -h | grep tmpfs` with grep's rows on the command's line: no header
    starts its output, so it is no output below a command; it was refused as "an empty file",
    which it is not. Its sibling `# df -h /mnt/tmpfs Filesystem ...` is read, narrowed to its
    path by its copied command."""
    from gpuonboard.api import offline
    from gpuonboard.errors import UsageError

    grep = SESSIONS / "transcript__df-h-grep-tmpfs-GLUED-onto-prompt__1.8g-vm-thegeekdiary.txt"
    with pytest.raises(UsageError) as refusal:
        offline.load_outputs([str(grep)])
    assert str(refusal.value) == (
        f"{grep}: a copied command line (`df -h | grep tmpfs devtmpfs 901M 0 901M 0% /dev tmpfs"
        " 915...`) with no output below it (a command that printed nothing, as `nvidia-smi nvlink -s`"
        " of GPUs without NVLink, or a page that lost the line ends and put the output on the"
        " command's line): leave it out, or save the output under its command."
    )
    path = SESSIONS / "transcript__df-h-mnt-tmpfs-GLUED-onto-prompt__1.8g-vm-thegeekdiary.txt"
    verdict, actual = verdicts(tmp_path, "df.txt", path.read_text(), "data_disk: /mnt/tmpfs 1G")["data_disk"]
    assert verdict == "fail" and "memory or overlay filesystem, not a disk" in actual, actual
