"""Leftovers no fix reaches are reported, not passed over in silence.

- A name bound by two imports (``try: from a import m`` / ``except ImportError:
  from b import m``) has no single meaning, so it gets no fix; when one of the
  modules is a moved API, its uses get a note that says "may be".
- The ``tf.keras.mixed_precision.experimental`` namespace left after TPU402,
  TPU403 and TPU406 (an alias, an import kept by a fallback, a member no rule
  moves) is TPU409's, at its line in the fixed file.
"""

from migrate_tpu.codemod.migration.api import Options, migrate

SHIM = """\
import tensorflow as tf

try:
    from tensorflow.keras.mixed_precision import experimental as mixed_precision
except ImportError:
    from tensorflow.keras import mixed_precision
mixed_precision.set_policy("mixed_bfloat16")
"""


def _found(source, **options):
    outcome = migrate(source, Options(**options))
    return outcome, [(r.rule, r.line, r.message) for r in outcome.reports if not r.applied]


def test_a_use_through_a_two_import_shim_gets_a_may_be_note_and_no_fix():
    for mode in ("check", "fix"):
        outcome, found = _found(SHIM, mode=mode, target="latest")
        assert outcome.code == SHIM
        assert [(rule, line) for rule, line, _ in found] == [("TPU402", 7)]
        assert "may be `tf.keras.mixed_precision.experimental.set_policy`" in found[0][2]
        assert "gone from TF 2.9" in found[0][2]


def test_a_shim_of_two_stable_modules_is_left_alone():
    # (TF 2.4's name: the stable module has no ``set_policy`` in any release, which TPU402
    # reports through the shim too: tests/test_half_migrated_mixed_precision.py.)
    source = SHIM.replace("tensorflow.keras.mixed_precision import experimental", "keras import mixed_precision")
    source = source.replace("set_policy", "set_global_policy")
    assert _found(source, mode="check")[1] == []


def test_the_namespace_left_after_the_fixes_is_reported_at_its_new_line():
    source = (
        "import tensorflow as tf\n"
        "if tf.__version__ < '2.4':\n    pass\nelse:\n    pass\n"  # collapses: lines move up
        "try:\n"
        "    from tensorflow.keras.mixed_precision import experimental as prec\n"
        "except ImportError:\n"
        "    prec = None\n"
        "prec.set_policy('mixed_bfloat16')\n"
        "alias = tf.keras.mixed_precision.experimental\n"
    )
    outcome, found = _found(source, mode="fix")
    lines = outcome.code.splitlines()
    assert "set_global_policy" in outcome.code
    assert sorted((rule, lines[line - 1].strip()) for rule, line, _ in found) == [
        ("TPU409", "alias = tf.keras.mixed_precision.experimental"),
        ("TPU409", "from tensorflow.keras.mixed_precision import experimental as prec"),
    ]


def test_uses_the_other_rules_rewrite_take_the_import_with_them():
    source = (
        "import tensorflow as tf\n"
        "from tensorflow.keras.mixed_precision import experimental as prec\n"
        "prec.set_policy(prec.Policy('mixed_bfloat16'))\n"
        "opt = prec.LossScaleOptimizer(opt, 'dynamic')\n"
    )
    outcome, found = _found(source, mode="fix")
    assert found == []
    assert "experimental" not in outcome.code


def test_an_import_kept_by_a_use_another_rule_leaves_for_a_person_is_reported_at_its_line():
    # TPU402 fixes the first use but leaves `loss_scale=` to a person; TPU406 leaves an
    # alias; TPU403 leaves a loss scale known only at run time (`my_scale`). The import stays for each, and breaks
    # from TF 2.9 (ImportError): before, only the use had a finding.
    header = "import tensorflow as tf\nfrom tensorflow.keras.mixed_precision import experimental as prec\n"
    for use, rule in (
        ("prec.set_policy(prec.Policy('mixed_float16'))\np = prec.Policy('mixed_float16', loss_scale=1024)\n", "TPU402"),
        ("Scaled = prec.LossScaleOptimizer\n", "TPU406"),
        ("opt = prec.LossScaleOptimizer(opt, loss_scale=my_scale)\n", "TPU403"),
    ):
        for target in ("2.4", "latest"):
            outcome, found = _found(header + use, mode="fix", target=target)
            lines = outcome.code.splitlines()
            assert sorted((r, lines[line - 1]) for r, line, _ in found) == sorted(
                [("TPU409", "from tensorflow.keras.mixed_precision import experimental as prec"), (rule, lines[-1])]
            ), (use, found)
            assert "left for a person" in [m for r, _, m in found if r == "TPU409"][0]
            assert migrate(outcome.code, Options(mode="fix", target=target)).code == outcome.code


def test_an_alias_named_mixed_precision_is_not_confused_with_the_attribute_of_that_name():
    # `tf.keras.mixed_precision` spells the alias's name but does not use it: TPU402/TPU403 fix
    # every use and the import goes, so nothing is left (fix said "2 findings remaining" and exited 1).
    source = (
        "import tensorflow as tf\n"
        "from tensorflow.keras.mixed_precision import experimental as mixed_precision\n"
        "\n"
        "mixed_precision.set_policy(mixed_precision.Policy('mixed_bfloat16'))\n"
        "opt = tf.keras.mixed_precision.experimental.LossScaleOptimizer(opt, 'dynamic')\n"
    )
    for mode in ("check", "fix"):
        outcome, found = _found(source, mode=mode)
        assert found == [], found
    assert "import experimental" not in outcome.code
    assert migrate(outcome.code, Options(mode="check")).reports == []


def test_the_names_a_reference_may_stand_for_are_worked_out_once_per_scope(monkeypatch):
    """Every reference asks what its head name may be; a name bound once per block (a
    notebook exported to one file imports ``tf`` in each cell) must not make each question
    read every binding again: twice the blocks, about twice the steps, not four times."""
    from migrate_tpu.codemod.analysis import names

    block = "import tensorflow as tf\nstrategy = tf.distribute.experimental.TPUStrategy(resolver)\n" + SHIM.split("\n", 1)[1]
    steps = []
    real = names.canonical
    monkeypatch.setattr(names, "canonical", lambda name: steps.append(name) or real(name))

    def steps_for(blocks):
        steps.clear()
        outcome = migrate(block * blocks, Options(mode="check"))
        assert sum(r.rule == "TPU409" or "may be" in r.message for r in outcome.reports) >= blocks
        return len(steps)

    small, large = steps_for(40), steps_for(80)
    assert large < 2.5 * small, (small, large)
