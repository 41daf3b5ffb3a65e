"""Imports a fix leaves unused go, at any depth, and only those.

Each case states the output it expects from ``fix`` with TPU402 rewriting the
uses of ``prec`` (``from tensorflow.keras.mixed_precision import experimental as prec``).
"""

import ast

import pytest

from migrate_tpu.codemod.migration.api import Options, migrate

IMPORT = "from tensorflow.keras.mixed_precision import experimental as prec"
USE = "prec.set_policy('mixed_bfloat16')"
NEW = "tf.keras.mixed_precision.set_global_policy('mixed_bfloat16')"


def _fix(source):
    outcome = migrate(source, Options(mode="fix"))
    ast.parse(outcome.code)
    return outcome.code


@pytest.mark.parametrize(
    "block",
    [
        "if a:\n    pass\nelif b:\n    {imp}\n    {use}\n",
        "if a:\n    pass\nelse:\n    {imp}\n    {use}\n",
        "try:\n    pass\nfinally:\n    {imp}\n    {use}\n",
        "try:\n    pass\nexcept ValueError:\n    {imp}\n    {use}\nelse:\n    pass\n",
        "while a:\n    {imp}\n    {use}\n",
        "with a:\n    {imp}\n    {use}\n",
        "class C:\n    def m(self):\n        if a:\n            {imp}\n            {use}\n",
        "match a:\n    case 1:\n        {imp}\n        {use}\n",
    ],
    ids=["elif", "else", "finally", "except", "while", "with", "method", "match"],
)
def test_a_nested_import_goes_with_its_last_use(block):
    source = "import tensorflow as tf\n\n" + block.format(imp=IMPORT, use=USE)
    code = _fix(source)
    assert IMPORT not in code and "experimental" not in code
    assert NEW in code


def test_a_block_left_empty_gets_pass_and_keeps_its_comment():
    source = "import tensorflow as tf\n\nif a:\n    # half precision\n    " + IMPORT + "\n" + USE + "\n"
    assert _fix(source) == "import tensorflow as tf\n\nif a:\n    # half precision\n    pass\n" + NEW + "\n"


def test_two_released_names_of_one_nested_import_both_go():
    source = (
        "import tensorflow as tf\n\ndef f():\n"
        "    from tensorflow.keras.mixed_precision.experimental import set_policy, global_policy\n"
        "    set_policy('mixed_bfloat16')\n    return global_policy()\n"
    )
    code = _fix(source)
    assert "experimental" not in code, code
    assert "set_global_policy('mixed_bfloat16')" in code and "global_policy()" in code


def test_an_import_still_used_elsewhere_stays_everywhere():
    source = "import tensorflow as tf\n\ndef f():\n    " + IMPORT + "\n    " + USE + "\n\ndef g():\n    " + IMPORT + "\n    return prec\n"
    code = _fix(source)
    assert code.count(IMPORT) == 2


def test_an_import_the_user_left_unused_stays():
    source = "import tensorflow as tf\n\ndef f():\n    import os\n    " + USE.replace("prec", "tf.keras.mixed_precision.experimental") + "\n"
    assert "    import os\n" in _fix(source)
