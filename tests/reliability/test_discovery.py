"""Walking trees with links, duplicates and nested ignore files."""

from __future__ import annotations

import os

from migrate_tpu.engine.discover import discover
from tests.reliability.conftest import GOOD, MIGRATED, assert_clean_run, migrate_tpu, write


def found(paths, **options):
    files, notes, errors = [], {}, {}
    for item in discover([str(p) for p in paths], **options):
        if item.problem is None:
            files.append(item.path.as_posix())
        elif item.is_error:
            errors[item.path.name] = item.problem
        else:
            notes[item.path.name] = item.problem
    return files, notes, errors


def test_a_file_named_twice_is_processed_once(tmp_path):
    write(tmp_path / "a.py", GOOD)
    outcome = migrate_tpu("fix", "a.py", ".", "./a.py", cwd=tmp_path)
    assert outcome.returncode == 0, outcome.stderr
    assert (tmp_path / "a.py").read_text() == MIGRATED
    assert outcome.stderr.count("Fixed") == 1
    assert_clean_run(outcome, tmp_path)


def test_following_links_walks_each_folder_once(tmp_path):
    root = tmp_path / "tree"
    write(root / "src" / "model.py", GOOD)
    write(tmp_path / "shared" / "util.py", GOOD)
    os.symlink(tmp_path / "shared", root / "shared")
    os.symlink("..", root / "src" / "up")
    os.symlink("model.py", root / "src" / "alias.py")
    os.symlink("missing.py", root / "src" / "broken.py")
    files, notes, errors = found([root], follow_symlinks=True)
    # model.py and its link alias.py are one file: it is processed once.
    assert len(files) == 2 and (root / "shared" / "util.py").as_posix() in files
    assert {os.path.realpath(f) for f in files} == {os.path.realpath(tmp_path / "shared" / "util.py"), os.path.realpath(root / "src" / "model.py")}
    assert "up" in notes and "already walked" in notes["up"]
    assert "broken.py" in errors and "dangling" in errors["broken.py"]


def test_not_following_links_names_each_one(tmp_path):
    root = tmp_path / "tree"
    write(root / "src" / "model.py", GOOD)
    os.symlink(tmp_path, root / "outside")
    os.symlink("model.py", root / "src" / "alias.py")
    os.symlink("alias2.py", root / "src" / "alias1.py")
    os.symlink("alias1.py", root / "src" / "alias2.py")
    os.symlink("data.csv", root / "src" / "data_link")  # not source, not a folder: not worth a word
    files, notes, errors = found([root])
    assert files == [(root / "src" / "model.py").as_posix()]
    assert errors == {}
    assert "outside the tree" in notes["outside"]
    assert "name it to process it" in notes["alias.py"]
    assert "loop" in notes["alias1.py"] and "loop" in notes["alias2.py"]
    assert "data_link" not in notes


def test_gitignore_at_the_root_applies_in_subfolders(tmp_path):
    root = tmp_path / "tree"
    write(root / ".gitignore", "generated/\n*_pb2.py\n")
    write(root / "a" / "b" / "generated" / "x.py", GOOD)
    write(root / "a" / "b" / "service_pb2.py", GOOD)
    write(root / "a" / "b" / "keep.py", GOOD)
    files, _, _ = found([root])
    assert files == [(root / "a" / "b" / "keep.py").as_posix()]
