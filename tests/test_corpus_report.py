"""The real-code report (benchmarks/corpus/report.py) classifies sites as documented:
its silent-site detector on snippets, and one run of the real CLI on a three-file corpus."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

CORPUS_TOOLS = Path(__file__).resolve().parent.parent / "benchmarks" / "corpus"
sys.path.insert(0, str(CORPUS_TOOLS))
import report  # noqa: E402


def sites(source, compat_v1=False):
    source = textwrap.dedent(source)
    imports = report.imported_modules([source])
    return sorted((line, marker) for line, marker, _ in
                  report.marker_sites(source, imports, compat_v1))


def test_a_moved_name_in_code_is_a_site_but_not_in_a_comment_or_a_plain_string():
    assert sites("""
        import tensorflow as tf
        strategy.experimental_run_v2(step)  # experimental_run_v2
        print("experimental_run_v2 is gone")
    """) == [(3, "experimental_run_v2")]


def test_a_doctest_line_is_a_site():
    assert sites('''
        def replicate(strategy):
            """Runs it.

            >>> strategy.experimental_run_v2(step)
            """
    ''') == [(5, "experimental_run_v2")]


def test_names_that_did_not_move_are_not_sites():
    # The TF1 class under compat.v1, a type check naming both classes, a stand-in's def.
    assert sites("""
        import tensorflow.compat.v1 as tf
        s = tf.distribute.experimental.TPUStrategy(resolver)
    """, compat_v1=True) == []
    assert sites("""
        import tensorflow as tf
        ok = isinstance(s, (tf.distribute.experimental.TPUStrategy,
                            tf.distribute.TPUStrategy))
        class Stand:
            def experimental_run_v2(self, fn):
                return fn()
    """) == []


def test_lr_counts_on_tensorflow_optimizers_only():
    assert sites("""
        import tensorflow as tf
        import torch
        from keras_adamw import AdamW
        a = tf.keras.optimizers.Adam(lr=0.1)
        b = torch.optim.Adam(params, lr=0.1)
        c = AdamW(lr=0.1)
        d = train(lr=0.1)
    """) == [(5, "lr=")]


@pytest.fixture
def small_corpus(tmp_path):
    files = {
        # one safe fix
        "someone__fixable/train.py": """
            import tensorflow as tf
            strategy = tf.distribute.experimental.TPUStrategy(resolver)
        """,
        # one manual finding (TPU202)
        "someone__manual/tpu.py": """
            import tensorflow as tf
            resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu='')
        """,
        # lr= on an internal-path Keras optimizer, which main's TPU405 does not see
        "someone__silent/opt.py": """
            import tensorflow as tf
            from tensorflow.python.keras.optimizers import Adam
            optimizer = Adam(lr=1e-3)
        """,
    }
    for path, text in files.items():
        target = tmp_path / "corpus" / path
        target.parent.mkdir(parents=True)
        target.write_text(textwrap.dedent(text).lstrip())
    return tmp_path / "corpus"


@pytest.mark.slow
def test_the_report_runs_the_cli_and_counts_each_class(small_corpus, tmp_path):
    out = tmp_path / "report.json"
    subprocess.run([sys.executable, str(CORPUS_TOOLS / "report.py"), "--corpus",
                    str(small_corpus), "--json", str(out)], check=True, capture_output=True)
    counts = json.loads(out.read_text())["counts"]
    assert counts["someone/fixable"]["safe"] == 1
    assert counts["someone/manual"]["left"] == 1
    assert counts["someone/manual"].get("safe", 0) == 0
    silent = counts["someone/silent"].get("silent", 0)
    found = counts["someone/silent"].get("safe", 0) + counts["someone/silent"].get("left", 0)
    # Whatever the rules do with it, the site is counted exactly once.
    assert silent + found == 1
    # The corpus itself is never changed: the report works on a copy.
    assert "experimental.TPUStrategy" in (small_corpus / "someone__fixable/train.py").read_text()
