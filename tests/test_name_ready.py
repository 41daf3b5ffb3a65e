"""A fix never writes a name where it is not bound yet.

The file's own ``tf`` alias is reused where a fix writes new code, but a use that runs
as the module is imported, above the only ``import tensorflow as tf``, would raise
``NameError`` (seen in a notebook whose first cell imports mixed precision and a later
one TensorFlow). There the fix names TensorFlow through an import of its own.
"""

import ast

from migrate_tpu.codemod.migration.api import Options, migrate

IMPORT = "from tensorflow.keras.mixed_precision import experimental as mp\n"
USE = 'mp.set_policy("mixed_bfloat16")\n'
LATE_TF = "import tensorflow as tf\nstrategy = tf.distribute.experimental.TPUStrategy(resolver)\n"


def _fix(source: str) -> str:
    code = migrate(source, Options(mode="fix")).code
    ast.parse(code)
    assert migrate(code, Options(mode="fix")).code == code  # a second fix changes nothing
    return code


def _bound_before_use(code: str, name: str) -> bool:
    """Every top-level statement that reads ``name`` comes after one that binds it."""
    bound = False
    for statement in ast.parse(code).body:
        reads = any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) for n in ast.walk(statement))
        if reads and not bound and not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return False
        if any(alias.asname == name or alias.name == name for s in [statement] if isinstance(s, (ast.Import, ast.ImportFrom)) for alias in s.names):
            bound = True
    return True


def test_a_use_above_the_alias_import_imports_tensorflow_itself():
    code = _fix(IMPORT + USE + LATE_TF)
    assert code == (
        "import tensorflow\n"
        'tensorflow.keras.mixed_precision.set_global_policy("mixed_bfloat16")\n'
        "import tensorflow as tf\nstrategy = tf.distribute.TPUStrategy(resolver)\n"
    )
    assert _bound_before_use(code, "tf") and _bound_before_use(code, "tensorflow")


def test_a_use_below_the_alias_import_reuses_it():
    code = _fix(IMPORT + LATE_TF + USE)
    assert 'tf.keras.mixed_precision.set_global_policy("mixed_bfloat16")' in code
    assert "import tensorflow\n" not in code


def test_a_use_in_a_function_runs_later_and_reuses_the_alias():
    code = _fix(IMPORT + "def setup():\n    " + USE + LATE_TF)
    assert '    tf.keras.mixed_precision.set_global_policy("mixed_bfloat16")' in code
    assert "import tensorflow\n" not in code


def test_a_class_body_runs_at_import_too():
    code = _fix(IMPORT + "class Config:\n    " + USE + LATE_TF)
    assert '    tensorflow.keras.mixed_precision.set_global_policy("mixed_bfloat16")' in code
    assert _bound_before_use(code, "tensorflow")
