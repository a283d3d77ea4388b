"""`free` and `df` run under a translated locale (real zh_CN captures): the labels are read back
as the C locale's through one table per tool (memory.free_labels(), disks.df_labels()), by detection
and parsing alike; a df without a size column (`df -i`) lists no mount."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from gpuonboard.facts import disks, memory

REAL = Path(__file__).parents[2] / "fixtures" / "real"
GIB = 2**30


def read(name: str) -> str:
    return (REAL / name).read_text()


def test_zh_cn_free_h_reads_3_8_gib() -> None:
    text = read("free-h__zh-cn__3.8gi.txt")
    assert memory.looks_like_free(text)
    info = memory.parse_free(text)
    assert info.warnings == ()
    assert info.total_bytes == round(3.8 * GIB) and info.available_bytes == round(2.7 * GIB)
    assert info.swap_total_bytes == 0


def test_zh_cn_free_g_is_converted_by_its_file_name() -> None:
    """`free -g` (named so): `内存： 3` is 3 GiB; the full-width colon does not hide the row."""
    name = "free-g__zh-cn__3gib.txt"
    info = memory.parse_free(memory.free_as_kib(name, read(name)))
    assert (info.total_bytes, info.available_bytes, info.swap_total_bytes) == (3 * GIB, 2 * GIB, GIB)


def test_english_free_is_unchanged() -> None:
    text = read("free-h__ubuntu-18.04-vm.txt")
    assert memory.english_free(text) == text


def test_translated_free_of_other_locales_reads_as_english() -> None:
    """Header and row labels of procps-ng's de, pl (`w cache`: two words) and ko (`스  왑:`)
    catalogues, as free prints them."""
    de = (
        "              gesamt       benutzt     frei      gemns.  Puffer/Cache verfügbar\n"
        "Speicher:    16318852     1170368    13427608       12360     1720876    14828484\n"
        "Swap:         2097148           0     2097148\n"
    )
    pl = (
        "               razem       użyte       wolne    dzielone      bufory     w cache    dostępne\n"
        "Pamięć:      2017300      145316     1592464         884       51256      228264     1585920\n"
    )
    ko = (
        "               총계         사용        여분      공유    버퍼/캐시    가용\n"
        "메모리:      2017300      145316     1592464         884      279520     1585920\n"
        "스  왑:      2097148           0     2097148\n"
    )
    for text, total, available in ((de, 16318852, 14828484), (pl, 2017300, 1585920), (ko, 2017300, 1585920)):
        assert memory.looks_like_free(text)
        info = memory.parse_free(text)
        assert (info.total_bytes, info.available_bytes) == (total * 1024, available * 1024), text


def test_each_translated_label_means_one_thing() -> None:
    """A label of the table stands for one English label; a row label keeps its colon, a column
    label has none (so `总计` is `total` and `总计：` is `Total:`)."""
    for table in (memory.free_labels(), disks.df_labels()):
        meaning: dict[str, set[str]] = defaultdict(set)
        for _lang, label, english in table:
            meaning[label].add(english)
            assert label != english
        assert {k: v for k, v in meaning.items() if len(v) > 1} == {}
    for _lang, label, english in memory.free_labels():
        assert label.rstrip().endswith((":", "：")) == english.endswith(":"), label


def test_zh_cn_df_h_reads_the_500g_data_disk() -> None:
    text = read("df-h__zh-cn__vda1-80g-root_vdb1-500g-data.txt")
    assert disks.df_header(text) == ["Filesystem", "Size", "Used", "Avail", "Use%", "Mounted", "on"]
    mounts = disks.parse_df(text)
    data = disks.mount_for(mounts, "/data")
    assert data is not None and (data.device, data.size_bytes) == ("/dev/vdb1", 500 * GIB)
    root = disks.mount_for(mounts, "/")
    assert root is not None and (root.device, root.size_bytes) == ("/dev/vda1", 80 * GIB)


@pytest.mark.parametrize(
    ("header", "words"),
    [
        # pasted `df -T` / `df` of zh_CN and de boxes: the type column and the translated "blocks"
        ("文件系统                 类型         1K-块    已用      可用 已用% 挂载点", ["Type", "1K-blocks"]),
        (
            "Dateisystem      Typ      1K-Blöcke    Benutzt Verfügbar Verw% Eingehängt auf",
            ["Type", "1K-blocks"],
        ),
        ("Dateisystem    Größe Benutzt Verf. Verw% Eingehängt auf", ["Size", "Used"]),
    ],
)
def test_translated_df_headers(header: str, words: list[str]) -> None:
    english = disks.df_header(header + "\n/dev/sda1 ext4 1024 1 1023 1% /\n")
    assert english is not None and english[0] == "Filesystem" and english[1:3] == words
    assert english[-2:] == ["Mounted", "on"]


def test_df_i_lists_no_sizes() -> None:
    """`df -i` has df's header but inode counts where the sizes are: not a size listing."""
    text = read("df-i__sda2-xfs-root_sdb1-ext4-mydata.txt")
    assert disks.df_header(text) is not None
    assert not disks.df_lists_sizes(text)
    assert disks.parse_df(text) == ()
    same_box = read("df-hT__sda2-xfs-root_sdb1-ext4-mydata.txt")
    assert disks.df_lists_sizes(same_box) and disks.mount_for(disks.parse_df(same_box), "/mydata/data")


@pytest.mark.parametrize(
    ("header", "words"),
    [
        # real captures' headers (tests/fixtures/real/SOURCES.md, round 24): "blocks of 1K" in
        # es, fr and pt_BR, `1K-` and a translated "blocks" in pt_BR and ru, pt_BR's `df -hT`
        ("S.ficheros     bloques de 1K    Usados Disponibles Uso% Montado en", ["1K-blocks", "Used"]),
        ("Sys. de fichiers blocs de 1K   Utilisé Disponible Uti% Monté sur", ["1K-blocks", "Used"]),
        ("Sist. Arq.     Blocos de 1M  Usado Disponível Uso% Montado em", ["1M-blocks", "Used"]),
        ("Sist. Arq.           1K-blocos      Usad Dispon.   Uso% Montado em", ["1K-blocks", "Usad"]),
        ("Sist. Arq.     Tipo      Tam. Usado Disp. Uso% Montado em", ["Type", "Size"]),
        (
            "Файл.система   1K-блоков Использовано  Доступно Использовано% Cмонтировано в",
            ["1K-blocks", "Used"],
        ),
    ],
)
def test_more_translated_df_headers(header: str, words: list[str]) -> None:
    """Spanish, French, Brazilian Portuguese and Russian df headers were not read: a saved df
    of such a box was refused, its disks unjudged."""
    english = disks.df_header(header + "\n/dev/sda1 ext4 1024 1 1023 1% /\n")
    assert english is not None and english[0] == "Filesystem" and english[1:3] == words
    assert english[-2:] == ["Mounted", "on"]


@pytest.mark.parametrize(
    ("name", "path", "device", "size"),
    [
        ("df-h__es-es__rocky-9.1-kvm__lvm-root-home.txt", "/home", "/dev/mapper/rl-home", 222 * GIB),
        ("df-fr-h__ubuntu-lvm__rst-indented.txt", "/", "/dev/mapper/ubuntu--vg-root", 453 * GIB),
        ("df-h__ru-ru__ubuntu-laptop__sda2-root.txt", "/", "/dev/sda2", 468 * GIB),
        ("df-h-path__pt-br__lvm-opt-10g.txt", "/opt", "/dev/mapper/VG_PRINCIPAL-LV_OPT", 10 * GIB),
    ],
)
def test_real_translated_df_h_reads_its_mounts(name: str, path: str, device: str, size: int) -> None:
    """Real `df -h` of es, fr, ru and pt_BR boxes (decimal commas: `1,6G`): each mount and its
    size, as the C locale's df -h gives them."""
    mount = disks.mount_for(disks.parse_df(read(name)), path)
    assert mount is not None and (mount.device, mount.size_bytes) == (device, size)
