"""The prefilter is the union of the evidence the enabled rules declare."""

import re
import zipfile
from pathlib import Path

import pytest

from migrate_tpu.codemod.migration.api import Options, migrate
from migrate_tpu.codemod.migration.migrator import TPUMigrator
from migrate_tpu.codemod.stages.prefilter import Evidence, Prefilter
from migrate_tpu.codemod.rules.catalogue import all_rules


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.id)
def test_each_evidence_literal_is_part_of_every_match(rule):
    """The substring test before the regex must never hide a match."""
    for evidence in rule.evidence:
        assert evidence.literal
        pattern = re.compile(evidence.regex())
        samples = [e.before for e in rule.examples]
        for sample in samples:
            for match in pattern.finditer(sample):
                assert evidence.literal in match.group(0)


def test_code_without_tensorflow_or_strategies_is_skipped():
    plain = b"import os\n\ndef run(path):\n    return os.path.join(path, 'x')\n\nresult = runner.run(3)\n"
    assert not TPUMigrator().needs_work(plain)


def test_a_strategy_from_elsewhere_is_let_through_without_tensorflow():
    assert TPUMigrator().needs_work(b"def step(strategy, fn):\n    return strategy.experimental_run_v2(fn)\n")
    assert TPUMigrator().needs_work(b"def step(strategy, fn):\n    return strategy.run(fn)\n")
    assert TPUMigrator().needs_work(b"ds = s.experimental_make_numpy_dataset(x)\n")


def test_selection_narrows_the_prefilter():
    source = b"import tensorflow as tf\n\ns = tf.distribute.experimental.TPUStrategy(r)\n"
    assert TPUMigrator(Options(select=("TPU103",))).needs_work(source)
    assert not TPUMigrator(Options(select=("TPU101",))).needs_work(source)
    assert not TPUMigrator(Options(ignore=("TPU1",))).needs_work(b"import tensorflow as tf\nx = tf.distribute.experimental.TPUStrategy\n")


def test_target_latest_only_rules_join_with_that_target():
    source = b"import tensorflow as tf\n\ntf.train.experimental.enable_mixed_precision_graph_rewrite(opt)\n"
    assert not TPUMigrator(Options(target="2.4")).needs_work(source)
    assert TPUMigrator(Options(target="latest")).needs_work(source)


def test_word_evidence_matches_whole_words_only():
    prefilter = Prefilter([Evidence("auto_shard")])
    assert prefilter(b"import tensorflow\no.experimental_distribute.auto_shard = False\n")
    assert not prefilter(b"import tensorflow\no.experimental_distribute.auto_shard_policy = OFF\n")


def _corpus():
    """Every Python file of the fixture trees and of this project (TensorFlow-heavy text)."""
    root = Path(__file__).resolve().parent.parent
    paths = sorted((root / "tests" / "fixtures").rglob("*.py")) + sorted((root / "migrate_tpu").rglob("*.py"))
    wheel = Path.home() / ".cache" / "migrate-tpu" / "bench" / "tf_models_official-2.2.2-py2.py3-none-any.whl"
    texts = [(str(p.relative_to(root)), p.read_bytes()) for p in paths]
    if wheel.exists():  # a 2020 TensorFlow repository, where the benchmarks have it
        with zipfile.ZipFile(wheel) as archive:
            texts += [(name, archive.read(name)) for name in archive.namelist() if name.endswith(".py")]
    return texts


def test_findings_are_the_same_with_and_without_the_prefilter():
    """A file the prefilter skips must have nothing to report (``latest`` enables every rule)."""
    migrator = TPUMigrator(Options(target="latest"))
    skipped = 0
    for name, data in _corpus():
        if migrator.needs_work(data):
            continue
        skipped += 1
        assert migrate(data.decode("utf-8"), Options(target="latest")).reports == [], name
    assert skipped


@pytest.mark.slow
def test_findings_are_the_same_with_and_without_the_second_stage(monkeypatch):
    """A file the second stage (``syntax_stage.py``) rules out after the textual prefilter let
    it through must have nothing to report, nor change, when LibCST parses it anyway. On the
    2020 models tree where the benchmarks have it, and on this repository's own sources."""
    from migrate_tpu.codemod.stages import syntax_stage
    from migrate_tpu.codemod.rules.catalogue import select_rules

    options = Options(target="latest")
    migrator = TPUMigrator(options)
    rules = select_rules((), (), "latest")
    ruled_out = []
    for name, data in _corpus():
        if not migrator.needs_work(data):
            continue
        try:
            source = data.decode("utf-8")
        except UnicodeDecodeError:
            continue  # the engine reports such a file before any stage
        if not syntax_stage.may_fire(source, rules)[0]:
            ruled_out.append((name, source))
    assert ruled_out
    monkeypatch.setattr(syntax_stage, "may_fire", lambda *args, **kwargs: (True, None))
    for name, source in ruled_out:
        outcome = migrate(source, options)
        assert outcome.reports == [] and outcome.code == source, name


def test_evidence_of_one_target_counts_only_for_it():
    """TPU405 reports ``decay=`` only for ``--target latest``: for 2.4 that text is no lead,
    and a file whose only lead it is (an EMA's, a TF1 layer's ``decay=``) is never read."""
    from migrate_tpu.codemod.stages import syntax_stage
    from migrate_tpu.codemod.rules.catalogue import select_rules

    source = "import tensorflow as tf\nopt = tf.keras.optimizers.RMSprop(decay=0.9)\n"
    assert not TPUMigrator(Options(target="2.4")).needs_work(source.encode())
    assert TPUMigrator(Options(target="latest")).needs_work(source.encode())
    assert not syntax_stage.may_fire(source, select_rules((), (), "2.4"), target="2.4")[0]
    assert syntax_stage.may_fire(source, select_rules((), (), "latest"), target="latest")[0]
    assert [r.rule for r in migrate(source, Options(target="latest")).reports] == ["TPU405"]
    assert migrate(source, Options(target="2.4")).reports == []
    # With ``lr=`` as a lead too (a parameter's default), the ast stage counts ``decay=`` by the same rule.
    both = source + "def schedule(lr=0.1):\n    return lr\n"
    assert not syntax_stage.may_fire(both, select_rules((), (), "2.4"), target="2.4")[0]
    assert syntax_stage.may_fire(both, select_rules((), (), "latest"), target="latest")[0]
