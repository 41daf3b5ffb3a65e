"""The project lookup (``codemod/project.py``) skips the LibCST parse of a module that cannot
answer (issue 21) and still follows a version read through a chain of modules."""

from __future__ import annotations

from pathlib import Path

from migrate_tpu.codemod.project import ProjectLookup
from migrate_tpu.compose import ProjectFiles


def _tree(tmp_path: Path) -> ProjectLookup:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "compat.py").write_text("import tensorflow as tf\n\nIS_TF_21 = tf.__version__.startswith('2.1')\n")
    # Names no version itself: it re-exports the one of compat.py under another name.
    (package / "flags.py").write_text("from pkg.compat import IS_TF_21\n\nUSE_OLD_API = IS_TF_21\n")
    # Imports from compat.py, but none of its version names.
    (package / "layers.py").write_text("import tensorflow as tf\nfrom pkg import compat\n\n\ndef dense(x):\n    return tf.keras.layers.Dense(4)(x)\n")
    (package / "train.py").write_text("from pkg.flags import USE_OLD_API\nfrom pkg.layers import dense\n")
    project = ProjectFiles((str(tmp_path),))
    return ProjectLookup(project.resolve_module, project.read_text, project.tree_files)


def test_a_version_read_through_a_module_that_does_not_name_it_is_followed(tmp_path):
    lookup = _tree(tmp_path)
    train = str(tmp_path / "pkg" / "train.py")
    values = lookup.version_values("pkg.flags.USE_OLD_API", train)
    assert values is not None and values["2.1.0"] is True and values["2.4.1"] is False


def test_a_module_that_cannot_read_the_version_is_not_parsed_for_it(tmp_path):
    lookup = _tree(tmp_path)
    train = str(tmp_path / "pkg" / "train.py")
    assert lookup.version_values("pkg.layers.dense", train) is None
    assert lookup.version_values("pkg.flags.missing", train) is None  # a name the module does not hold
    assert not any(path.endswith(("layers.py", "flags.py")) for path in lookup._summaries)
    # Asked what it offers otherwise (a class's traced methods), the module is summarised.
    assert lookup.class_tracing("pkg.layers.dense", train) is None
    assert any(path.endswith("layers.py") for path in lookup._summaries)
