"""The dataset scan's notes (steps/dataset/scan.py) on real trees made here."""

from __future__ import annotations

from pathlib import Path

from gpuonboard.steps.dataset.scan import links_absolute_in, links_out, local_notes
from gpuonboard.transfer import scan_source


def _hub_snapshot(root: Path) -> Path:
    """A model as Hugging Face's cache holds it (huggingface_hub's "Manage cache" guide,
    https://huggingface.co/docs/huggingface_hub/guides/manage-cache): each file of
    `snapshots/<revision>/` is a symlink to `../../blobs/<sha256>`, and an old `--local-dir`
    download linked its big files to the cache by absolute path."""
    repo = root / "models--org--tiny"
    (repo / "blobs").mkdir(parents=True)
    snap = repo / "snapshots" / "2d5f4a1c"
    (snap / "sub").mkdir(parents=True)
    (repo / "blobs" / "ab12").write_bytes(b"weights")
    (repo / "blobs" / "cd34").write_text("{}")
    (snap / "model.safetensors").symlink_to("../../blobs/ab12")
    (snap / "sub" / "config.json").symlink_to("../../../blobs/cd34")
    (snap / "tokenizer.json").symlink_to(repo / "blobs" / "cd34")
    (snap / "README.md").write_text("# tiny\n")
    (snap / "latest").symlink_to("sub/config.json")  # (inside the dataset: no note)
    (snap / "here").symlink_to("sub/../README.md")
    return snap


def test_symlinks_that_lead_out_of_the_dataset_are_said_in_every_mode_that_uploads_them(
    tmp_path: Path,
) -> None:
    """A Hugging Face snapshot uploaded as the dataset: plain mode (rsync -a) and shards carry
    each link, not the blob it points to, and the message said "sent 1 file and 5 symlinks ...
    verified by sha256" with no word that the model's weights never left this machine (on the
    host every link dangles). Each link out of the dataset (climbing above its top, or absolute)
    is now named in the note; links inside it are not, nor in plain encrypted mode (which
    uploads no symlink, and says so itself)."""
    snap = _hub_snapshot(tmp_path)
    tree = scan_source(snap, hashes=False)
    assert links_out(tree) == [
        ("model.safetensors", "../../blobs/ab12"),
        ("sub/config.json", "../../../blobs/cd34"),
        ("tokenizer.json", str(tmp_path / "models--org--tiny" / "blobs" / "cd34")),
    ]
    assert local_notes(tree) == (
        "; 3 symlinks of the dataset lead out of it (e.g. 'model.safetensors' -> '../../blobs/ab12'):"
        " they are uploaded as links, what they point to is not sent (on the host a link leads to"
        " whatever is at that path there, if anything); to send that, copy it into the dataset"
        " (cp -rL) and rerun"
    )
    assert local_notes(tree, links=False) == ""
    (snap / "model.safetensors").unlink()
    (snap / "sub" / "config.json").unlink()
    assert local_notes(scan_source(snap, hashes=False)).startswith(
        f"; 1 symlink of the dataset leads out of it (e.g. 'tokenizer.json' -> '{tmp_path}/"
    )
    (snap / "tokenizer.json").unlink()
    assert local_notes(scan_source(snap, hashes=False)) == ""


def test_a_relative_link_that_climbs_out_of_the_dataset_and_back_in_leads_out(tmp_path: Path) -> None:
    """A relative link that climbs above the dataset's top and comes back in by the names of
    this machine's dirs (`x -> ../ds/c/f`, `a/back -> ../../ds/c`, `deep -> ../../u/ds/c/f`)
    was counted as a link inside: on the host it climbs through the copy's own parents, named
    by --name and --dest (dangling, or into another copy). It leads out now, said as such; one
    that climbs only within the dataset (`a/in -> ../c/f`) stays inside."""
    ds = tmp_path / "u" / "ds"
    (ds / "c").mkdir(parents=True)
    (ds / "a").mkdir()
    (ds / "c" / "f").write_text("data\n")
    (ds / "x").symlink_to("../ds/c/f")
    (ds / "a" / "back").symlink_to("../../ds/c")
    (ds / "deep").symlink_to("../../u/ds/c/f")
    (ds / "a" / "in").symlink_to("../c/f")
    tree = scan_source(ds, hashes=False)
    assert links_out(tree) == [("a/back", "../../ds/c"), ("deep", "../../u/ds/c/f"), ("x", "../ds/c/f")]
    assert local_notes(tree).startswith(
        "; 3 symlinks of the dataset lead out of it (e.g. 'a/back' -> '../../ds/c'): they are"
        " uploaded as links, what they point to is not sent"
    )


def test_a_link_into_the_dataset_is_not_said_to_lead_out_of_it(tmp_path: Path) -> None:
    """An absolute link to a file of the dataset (`a/abs -> <dataset>/c/f`) was said to lead out
    of it, "what it points to is not sent ... cp -rL", though the file is sent: what is wrong is
    the link, which on the host names this machine's path; it is said so now ("make it
    relative")."""
    ds = tmp_path / "ds"
    (ds / "c").mkdir(parents=True)
    (ds / "a").mkdir()
    (ds / "c" / "f").write_text("data\n")
    (ds / "a" / "abs").symlink_to(ds / "c" / "f")
    (ds / "a" / "in").symlink_to("../c/./f")
    tree = scan_source(ds, hashes=False)
    assert links_out(tree) == []
    assert links_absolute_in(tree) == [("a/abs", f"{ds}/c/f")]
    assert local_notes(tree) == (
        f"; 1 symlink of the dataset is an absolute link into it (e.g. 'a/abs' -> '{ds}/c/f'):"
        " what it points to is sent, but on the host it leads to that path there, not into the copy"
        " (dangling, or to another file); make it relative (ln -sfr TARGET LINK) and rerun"
    )
    (ds / "out").symlink_to("../dsx/f")  # (a sibling whose name starts as the dataset's: out)
    (ds / "c" / "g").symlink_to(tmp_path / "elsewhere")
    tree = scan_source(ds, hashes=False)
    assert links_out(tree) == [("c/g", str(tmp_path / "elsewhere")), ("out", "../dsx/f")]
    assert local_notes(tree).startswith(
        f"; 2 symlinks of the dataset lead out of it (e.g. 'c/g' -> '{tmp_path}/elsewhere'): they are"
        " uploaded as links, what they point to is not sent"
    )
    assert "; 1 symlink of the dataset is an absolute link into it (e.g. 'a/abs'" in local_notes(tree)
