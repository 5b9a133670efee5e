"""Inputs are never written; outputs never land on an input; outputs are written atomically."""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import stat
from pathlib import Path

import pytest
from conftest import fixture

from pista.cli import common, main
from pista.cli.common import write_output
from pista.errors import PistaError

TRACE = "seed_mm64_cold"
OTHER = "seed_mm64_warm"


def fingerprint(path: Path) -> tuple[str, int, int, int]:
    st = path.stat()
    return hashlib.sha256(path.read_bytes()).hexdigest(), st.st_mtime_ns, st.st_size, stat.S_IMODE(st.st_mode)


@pytest.fixture
def inputs(tmp_path):
    """Writable copies of two real traces, one gzipped and one plain: nothing stops a write but pista."""
    folder = tmp_path / "in"
    folder.mkdir()
    gz = folder / "a.json.gz"
    shutil.copyfile(fixture(TRACE), gz)
    plain = folder / "b.json"
    plain.write_bytes(gzip.decompress(fixture(OTHER).read_bytes()))
    for path in (gz, plain):
        path.chmod(0o644)
    return gz, plain


def verb_commands(a: Path, b: Path, out: Path) -> dict[str, list[str]]:
    return {
        "table": ["table", str(a)],
        "table json": ["table", str(b), "--format", "json"],
        "analyze": ["analyze", str(a)],
        "analyze json": ["analyze", str(b), "--format", "json"],
        "report": ["report", str(a), "-o", str(out / "r.html")],
        "annotate": ["annotate", str(b), "-o", str(out / "b.pista.json")],
        "annotate gz": ["annotate", str(a), "-o", str(out / "a.pista.json.gz")],
        "diff": ["diff", str(a), str(b)],
        "diff html": ["diff", str(a), str(b), "--format", "html", "-o", str(out / "d.html")],
    }


def test_no_verb_writes_its_inputs(inputs, tmp_path, capsys):
    a, b = inputs
    out = tmp_path / "out"
    before = {p: fingerprint(p) for p in inputs}
    listing = sorted(os.listdir(a.parent))
    ran = 0
    for label, argv in verb_commands(a, b, out).items():
        try:
            rc = main(argv)
        except SystemExit as exit_:  # a verb this checkout does not have yet: argparse refuses it
            assert exit_.code == 2, label
            continue
        capsys.readouterr()
        assert rc == 0, label
        ran += 1
        assert {p: fingerprint(p) for p in inputs} == before, label
        assert sorted(os.listdir(a.parent)) == listing, f"{label} wrote next to the input"
    assert ran >= 5


@pytest.mark.parametrize("verb", ["report", "annotate", "diff"])
@pytest.mark.parametrize("how", ["same path", "symlink", "hard link"])
def test_an_output_onto_an_input_is_refused(inputs, tmp_path, capsys, verb, how):
    a, b = inputs
    target = {"same path": a, "symlink": tmp_path / "link.json.gz", "hard link": tmp_path / "hard.json.gz"}[how]
    if how == "symlink":
        target.symlink_to(a)
    elif how == "hard link":
        os.link(a, target)
    before = fingerprint(a)
    argv = {"report": ["report", str(a)], "annotate": ["annotate", str(a)],
            "diff": ["diff", str(a), str(b), "--format", "html"]}[verb] + ["-o", str(target)]
    try:
        rc = main(argv)
    except SystemExit:
        pytest.skip(f"no `pista {verb}` in this checkout")
    err = capsys.readouterr().err
    assert rc == 2 and "refusing to overwrite the input" in err and err.count("\n") == 1
    assert fingerprint(a) == before
    assert target.exists() and (how != "symlink" or target.is_symlink())


def test_write_output_replaces_atomically(tmp_path, monkeypatch):
    target = tmp_path / "report.html"
    target.write_text("old")
    seen = {}
    real_replace = os.replace

    def replace(src, dst):
        # at the moment of the rename the old file is whole and the temp file holds all the new bytes
        seen["target"] = Path(dst).read_text()
        seen["temp"] = Path(src).read_text()
        seen["temp name"] = Path(src).name
        real_replace(src, dst)

    monkeypatch.setattr(common.os, "replace", replace)
    write_output(target, "new " * 1000)
    assert seen["target"] == "old" and seen["temp"] == "new " * 1000
    assert seen["temp name"].startswith(".report.html.") and Path(tmp_path, seen["temp name"]).parent == tmp_path
    assert target.read_text() == "new " * 1000
    assert os.listdir(tmp_path) == ["report.html"]


@pytest.mark.parametrize("failure", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_a_failure_mid_write_leaves_the_old_file_and_no_temp(tmp_path, monkeypatch, failure):
    target = tmp_path / "out.json"
    target.write_text("old")

    def fail(fd):
        raise failure

    monkeypatch.setattr(common.os, "fsync", fail)
    with pytest.raises(PistaError if isinstance(failure, OSError) else KeyboardInterrupt) as caught:
        write_output(target, "new")
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["out.json"]
    if isinstance(failure, OSError):
        assert str(caught.value) == f"{target}: cannot write: No space left on device"


def test_write_output_permissions(tmp_path):
    old_umask = os.umask(0o022)
    try:
        fresh = write_output(tmp_path / "sub" / "new.html", "x")  # the folder is made too
        assert stat.S_IMODE(fresh.stat().st_mode) == 0o644  # like open(): 0o666 less the umask, not 0o600
        kept = tmp_path / "kept.html"
        kept.write_text("old")
        kept.chmod(0o640)
        write_output(kept, "new")
        assert stat.S_IMODE(kept.stat().st_mode) == 0o640 and kept.read_text() == "new"
    finally:
        os.umask(old_umask)


def test_write_output_refuses_a_directory_and_an_input(tmp_path):
    folder = tmp_path / "dir"
    folder.mkdir()
    with pytest.raises(PistaError, match="is a directory"):
        write_output(folder, "x")
    source = tmp_path / "t.json"
    source.write_text("{}")
    with pytest.raises(PistaError, match="refusing to overwrite the input"):
        write_output(tmp_path / "." / "t.json", "x", inputs=(str(source),))
    assert source.read_text() == "{}"
    assert sorted(os.listdir(tmp_path)) == ["dir", "t.json"]


def test_an_unwritable_output_is_one_line(inputs, tmp_path, capsys):
    a, _ = inputs
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):
            pytest.skip("running as a user who can write anywhere (root)")
        rc = main(["report", str(a), "-o", str(locked / "r.html")])
    finally:
        locked.chmod(0o700)
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "cannot write" in err


def test_an_output_under_a_file_is_one_line(inputs, tmp_path, capsys):
    """Works as root too: the output's folder is a file, so it cannot be made."""
    a, _ = inputs
    blocker = tmp_path / "not_a_folder"
    blocker.write_text("x")
    rc = main(["report", str(a), "-o", str(blocker / "r.html")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and f"{blocker}: cannot create the output folder" in err
    assert blocker.read_text() == "x"
