"""What verify says of the moved APIs its migrated run still called (no TensorFlow): each place
as the user names it, and what covers it: ``--entry`` for a file of the folder that a verify of
one script did not migrate, ``check`` for one the migration left, the runtime's word for other
folders and installed distributions."""

from pathlib import Path

from migrate_tpu.verify.judge.advice import moved_api_calls, moved_api_line
from migrate_tpu.verify.runs.plan import Copy
from migrate_tpu.verify.command.report import report
from migrate_tpu.verify.values.verdict import DIVERGED, Verdict


def _call(file, line, rule="TPU101", old="experimental_run_v2", new="run", owner=None, failed=False, to_do=None):
    return {"file": str(file), "line": line, "count": 1, "failed": failed, "error": "AttributeError: gone" if failed else None,
            "rule": rule, "old": old, "new": new, "title": "", "kind": "method", "owner": owner or {"kind": "tree"}, "to_do": to_do}


def test_each_place_gets_what_covers_it(tmp_path):
    root = tmp_path / "after" / "project"
    copy = Copy(root, "project", root / "train.py", root, "project/train.py")
    installed = {"kind": "distribution", "name": "old-tpu-steps", "version": "0.3.1", "site_packages": True}
    record = {"moved_apis": {"calls": [
        _call(root / "helpers" / "stepper.py", 7, failed=True),
        _call(root / "train.py", 12, rule="TPU402", old="tensorflow.keras.mixed_precision.experimental.Policy",
              new="tensorflow.keras.mixed_precision.Policy"),
        _call(root / "nb.ipynb:cell3", 2),
        _call("/elsewhere/lib/steps.py", 5, owner={"kind": "folder", "folder": "/elsewhere/lib"},
              to_do="migrate-tpu fix /elsewhere/lib/steps.py"),
        _call("/site/oldsteps/__init__.py", 5, owner=installed,
              to_do="upgrade it to a release written for TF 2.4 or later; what in it needs migrating: "
                    "migrate-tpu check --installed old-tpu-steps"),
    ]}}
    one_script = moved_api_calls(record, copy, whole_folder=False)
    assert [call["where"] for call in one_script] == ["project/helpers/stepper.py:7", "project/train.py:12", "project/nb.ipynb cell 3:2",
                                                      "/elsewhere/lib/steps.py:5", "/site/oldsteps/__init__.py:5"]
    assert [call["covered"] for call in one_script] == [False, True, False, False, False]
    assert one_script[0]["to_do"] == "verify migrated project/train.py alone: `--entry train.py project` migrates the folder"
    assert one_script[1]["to_do"] == "the migration left it (`migrate-tpu check project/train.py` says why)"
    assert one_script[3]["to_do"] == "migrate-tpu fix /elsewhere/lib/steps.py"
    assert (one_script[4]["distribution"], one_script[4]["version"]) == ("old-tpu-steps", "0.3.1")
    assert "check --installed old-tpu-steps" in one_script[4]["to_do"]
    whole = moved_api_calls(record, copy, whole_folder=True)
    assert [call["covered"] for call in whole] == [True, True, True, False, False]
    assert moved_api_line(one_script[1]) == ("project/train.py:12: TPU402 `tf.keras.mixed_precision.experimental.Policy` -> "
                                             "`tf.keras.mixed_precision.Policy` (1 call); the migration left it "
                                             "(`migrate-tpu check project/train.py` says why)")
    assert moved_api_calls({"moved_apis": None}, copy, False) == [] == moved_api_calls(None, copy, False)


def test_the_report_lists_them_and_names_the_migrations_surface(tmp_path):
    root = tmp_path / "project"
    copy = Copy(root, ".", root / "train.py", root, "train.py")
    calls = moved_api_calls({"moved_apis": {"calls": [_call(root / "helpers" / "stepper.py", 7, failed=True)]}}, copy, False)
    verdict = Verdict(DIVERGED, first_divergence={"step": 1, "kind": "exception", "before": None, "after": "AttributeError: gone"},
                      moved_apis=calls, after_api="native", replicas={"before": [8], "after": [8]})
    text = report(verdict, "text", "train.py")
    assert "  moved APIs the migrated run still called (1):\n    helpers/stepper.py:7: TPU101 `experimental_run_v2` -> `run` " \
           "(failed: AttributeError: gone); verify migrated train.py alone: `--entry train.py .` migrates the folder" in text
    assert "the migration under the interpreter's own API" in text
    assert '"after_api": "native"' in report(verdict, "json", "train.py")
    assert Path(calls[0]["where"]).name == "stepper.py:7"
