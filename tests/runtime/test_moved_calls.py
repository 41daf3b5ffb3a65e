"""The run-time record of moved APIs, without TensorFlow (docs/runtime.md, "Which moved APIs a run
called"): its catalogue is the codemod's, a gone name is matched at the failing line, only calls
count, and a file's owner is its tree, its folder or its installed distribution.  The runs on the
real interpreters are in test_moved_calls_runs.py."""

import importlib
import importlib.metadata
import os
import sys
import textwrap
import types

import pytest

from migrate_tpu.codemod.rules.catalogue import all_rules
from migrate_tpu.codemod.rules.tables.table_rule import TableRule
from migrate_tpu.runtime.program import call_sites, call_syntax
from migrate_tpu.runtime.surfaces import moved_calls, moves


def test_the_runtime_reads_the_codemods_catalogue_and_nothing_else():
    """One source: every entry of every rule table, with its rule, names and releases (the
    generated table is written by scripts/document-rules; a stale one fails here and there)."""
    catalogue = {(rule.id, entry.calls or rule.id, rule.kind, entry.old, entry.new or "", entry.since, entry.removed, entry.prefix,
                  tuple(rule.targets)) for rule in all_rules() if issubclass(rule, TableRule) for entry in rule.entries}
    assert {move[:9] for move in moves.MOVES} == catalogue
    assert set(moves.TITLES) == {rule.id for rule in all_rules()}


def test_a_target_picks_the_moves_fix_acts_on():
    default = {move.old for move in moved_calls.moves_for("2.4")}
    latest = {move.old for move in moved_calls.moves_for("latest")}
    assert "experimental_run_v2" in default and "tensorflow.distribute.experimental.TPUStrategy" in default
    assert "tensorflow.train.experimental.enable_mixed_precision_graph_rewrite" in latest - default  # TPU404: latest only
    assert default < latest


@pytest.fixture
def record(tmp_path):
    moved_calls.RECORD = moved_calls.Record("2.4", "2.4", str(tmp_path) + os.sep)
    yield moved_calls.RECORD
    moved_calls.RECORD = None


def _raise_from(tmp_path, name, source):
    """Run ``source`` as module ``name`` of ``tmp_path`` and return what it raises."""
    path = tmp_path / (name + ".py")
    path.write_text(textwrap.dedent(source))
    code = compile(path.read_text(), str(path), "exec")
    try:
        exec(code, {"__name__": name})
    except Exception as error:  # what the run would end with
        return error
    raise AssertionError("no exception")


def test_a_gone_method_is_named_at_the_line_that_called_it(tmp_path, record):
    error = _raise_from(tmp_path, "stepper", """
        class Strategy:
            pass
        strategy = Strategy()
        def step():
            return strategy.experimental_run_v2(print, args=(1,))
        step()
    """)
    assert [move.rule for move in moved_calls.note_failure(error)] == ["TPU101"]
    (site,) = record.sites.values()
    assert (site.file, site.line) == (str(tmp_path / "stepper.py"), 6)
    assert site.error == "AttributeError: 'Strategy' object has no attribute 'experimental_run_v2'"


@pytest.fixture(autouse=True)
def fake_tf(monkeypatch):
    """A module whose names are gone, raising as TensorFlow's lazy modules do, from code that is
    not the program's (a file name in angle brackets, as frozen modules have)."""
    module = types.ModuleType("fake_tf")
    exec(compile(textwrap.dedent("""\
        class Module:
            def __getattr__(self, name):
                raise AttributeError("module 'tf_keras.api._v2.keras.mixed_precision' has no attribute '{}'".format(name))
    """), "<tensorflow>", "exec"), module.__dict__)
    monkeypatch.setitem(sys.modules, "fake_tf", module)


@pytest.mark.parametrize("line, rules", [
    ("tf.keras.mixed_precision.experimental.Policy('mixed_bfloat16')", ["TPU402"]),
    ("mixed_precision.experimental.set_policy('mixed_bfloat16')", ["TPU402"]),
    ("mp.experimental.LossScaleOptimizer(opt, 'dynamic')", ["TPU403"]),  # a call of it is TPU403's (TPU406's entry)
    ("exp = tf.keras.mixed_precision.experimental", ["TPU402", "TPU403"]),  # the namespace: both rules
    ("options.experimental.deterministic = True", []),  # another `experimental`: no finding
    ("tf.keras.mixed_precision.experimental_policy", []),
])
def test_a_gone_module_name_is_matched_by_the_chain_around_it(tmp_path, record, line, rules):
    error = _raise_from(tmp_path, "helper", f"""
        from fake_tf import Module
        tf = type("tf", (), {{"keras": type("keras", (), {{"mixed_precision": Module()}})}})
        mixed_precision = mp = options = Module()
        opt = None
        {line}
    """)
    matched = moved_calls.note_failure(error) or []
    assert sorted(move.call_rule for move in matched) == rules


def test_an_import_of_a_gone_module_names_the_rules_of_its_names(tmp_path, record, monkeypatch):
    for name in ("tensorflow", "tensorflow.keras", "tensorflow.keras.mixed_precision"):  # a TensorFlow without it
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    error = _raise_from(tmp_path, "imports", """
        import os
        from tensorflow.keras.mixed_precision import experimental as mixed_precision
    """)
    assert "cannot import name 'experimental'" in str(error)
    assert sorted(move.call_rule for move in moved_calls.note_failure(error)) == ["TPU402", "TPU403"]
    assert {site.line for site in record.sites.values()} == {3}
    for name in ("tensorflow", "tensorflow.keras", "tensorflow.keras.mixed_precision"):
        monkeypatch.delitem(sys.modules, name)
    no_tensorflow = _raise_from(tmp_path, "missing", "from tensorflow.keras.mixed_precision import experimental\n")
    assert moved_calls.note_failure(no_tensorflow) is None  # a missing TensorFlow is no moved API


def test_an_error_that_is_no_moved_api_is_left_alone(tmp_path, record):
    error = _raise_from(tmp_path, "other", """
        class Config:
            pass
        Config().learning_rate
    """)
    assert moved_calls.note_failure(error) is None and not record.sites
    assert moved_calls.note_failure(ValueError("has no attribute 'experimental_run_v2'")) is None


def test_a_call_counts_a_lookup_does_not(tmp_path):
    path = tmp_path / "calls.py"
    path.write_text(textwrap.dedent("""\
        strategy.experimental_run_v2(step, args=(x,))
        hasattr(strategy, "experimental_run_v2")
        step_fn = strategy.experimental_run_v2
        getattr(strategy, "experimental_run_v2")(step)
        result = strategy.experimental_run_v2(
            step, args=(x,))
    """))
    calls = [call_syntax.calls((str(path), line), "experimental_run_v2") for line in range(1, 7)]
    assert calls == [True, False, False, True, True, False]


def _dist_info(folder, name, version, top, files):
    info = folder / "{}-{}.dist-info".format(name.replace("-", "_"), version)
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: {}\nVersion: {}\n".format(name, version))
    (info / "top_level.txt").write_text(top + "\n")
    (info / "RECORD").write_text("".join("{},,\n".format(f) for f in files + [info.name + "/RECORD"]))
    for file in files:
        (folder / file).parent.mkdir(parents=True, exist_ok=True)
        (folder / file).write_text("")


def test_a_files_owner_is_its_tree_its_folder_or_its_distribution(tmp_path, monkeypatch):
    tree, site, loose = tmp_path / "project", tmp_path / "site", tmp_path / "vendored"
    _dist_info(site, "old-tpu-helpers", "0.3.1", "oldtpu", ["oldtpu/__init__.py", "oldtpu/steps.py"])
    _dist_info(site, "google-thing", "1.0", "google", ["google/thing/__init__.py"])
    _dist_info(site, "google-other", "2.0", "google", ["google/other/__init__.py"])
    (loose / "helpers").mkdir(parents=True)
    (tree / "lib").mkdir(parents=True)
    monkeypatch.setattr(sys, "path", [str(tree), str(site), str(loose)] + sys.path)
    call_sites._DISTRIBUTIONS.clear()
    tree_root = str(tree) + os.sep
    assert call_sites.owner(str(tree / "lib" / "x.py"), tree_root)["kind"] == "tree"
    assert call_sites.owner(str(tree / "nb.ipynb:cell3"), tree_root)["kind"] == "tree"
    assert call_sites.owner(str(loose / "helpers" / "h.py"), tree_root) == {"kind": "folder", "folder": str(loose)}
    found = call_sites.owner(str(site / "oldtpu" / "steps.py"), tree_root)
    assert (found["kind"], found["name"], found["version"]) == ("distribution", "old-tpu-helpers", "0.3.1")
    assert found["version"] == importlib.metadata.distribution("old-tpu-helpers").version  # as Python's own reader says
    assert call_sites.owner(str(site / "google" / "other" / "__init__.py"), tree_root)["name"] == "google-other"  # by RECORD


def test_without_importlib_metadata_the_dist_info_folders_say_the_same(tmp_path, monkeypatch):
    """Python 3.7 (TF 2.1's interpreter) has no importlib.metadata: the .dist-info folders are read."""
    _dist_info(tmp_path, "old-tpu-helpers", "0.3.1", "oldtpu", ["oldtpu/__init__.py"])
    with_metadata = [entry[:3] for entry in call_sites._read_distributions(str(tmp_path))]
    monkeypatch.setitem(sys.modules, "importlib.metadata", None)
    monkeypatch.delattr(importlib, "metadata")
    without = [entry[:3] for entry in call_sites._read_distributions(str(tmp_path))]
    assert with_metadata == without == [("old-tpu-helpers", "0.3.1", frozenset(["oldtpu"]))]


def test_the_summary_names_each_place_its_rule_and_what_covers_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    record = moved_calls.Record("2.4", "2.4", str(tmp_path) + os.sep)
    run_v2 = next(move for move in moved_calls.MOVES if move.old == "experimental_run_v2")
    policy = next(move for move in moved_calls.MOVES if move.old.endswith("experimental.Policy"))
    for _ in range(3):
        record.note(run_v2, (str(tmp_path / "helpers" / "stepper.py"), 7))
    record.note(policy, (str(tmp_path / "nb.ipynb:cell4"), 2), error="AttributeError: no experimental")
    data = moved_calls.as_json(record)
    assert [call["count"] for call in data["calls"]] == [1, 3]  # a failure first
    lines = moved_calls.summary(data)
    assert lines[0].startswith("migrate-tpu run: 2 places called an API that moved")
    assert "nb.ipynb cell 4:2: TPU402 `tf.keras.mixed_precision.experimental.Policy` -> `tf.keras.mixed_precision.Policy`, " \
           "failed: AttributeError: no experimental (your tree): migrate-tpu fix nb.ipynb" in lines[1]
    assert lines[2].endswith("helpers/stepper.py:7: TPU101 `experimental_run_v2` -> `run`, 3 calls (your tree): "
                             "migrate-tpu fix helpers/stepper.py")
    assert moved_calls.summary({"calls": []}) == []


def test_a_compat_v1_strategys_experimental_make_numpy_dataset_is_no_moved_api(tmp_path, record):
    """Pins ``_KEPT_BY_COMPAT_V1``: TF keeps ``experimental_make_numpy_dataset`` on the
    ``tf.compat.v1`` strategies (TF 2.4 removed it from the TF 2 ones alone, and TPU105 leaves
    compat.v1's calls alone), so only a TF 2 strategy's call is recorded as a moved API; a
    compat.v1 one recorded would tell the user to migrate a call that needs nothing.  A stand-in
    for TensorFlow shaped as TF 2.1's (the method on the base both strategies share)."""
    class StrategyBase:
        def experimental_make_numpy_dataset(self, numpy_input):
            return numpy_input

    class Strategy(StrategyBase):
        pass

    class StrategyV1(StrategyBase):
        pass

    class MirroredStrategy(Strategy):
        pass

    class MirroredStrategyV1(StrategyV1):
        pass

    tf = types.SimpleNamespace(distribute=types.SimpleNamespace(Strategy=Strategy),
                               compat=types.SimpleNamespace(v1=types.SimpleNamespace(distribute=types.SimpleNamespace(Strategy=StrategyV1))))
    path = tmp_path / "train.py"
    path.write_text("v1 = MirroredStrategyV1().experimental_make_numpy_dataset(1)\n"
                    "v2 = MirroredStrategy().experimental_make_numpy_dataset(2)\n")
    try:
        for move in moved_calls.moves_for("2.4"):
            if move.kind == "method":
                moved_calls._watch_method(tf, move)
        namespace = {"MirroredStrategy": MirroredStrategy, "MirroredStrategyV1": MirroredStrategyV1}
        exec(compile(path.read_text(), str(path), "exec"), namespace)
    finally:
        moved_calls.uninstall()
    assert (namespace["v1"], namespace["v2"]) == (1, 2)
    assert [(site.line, site.move.old) for site in record.sites.values()] == [(2, "experimental_make_numpy_dataset")]
