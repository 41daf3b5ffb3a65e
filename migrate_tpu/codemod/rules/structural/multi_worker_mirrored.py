"""TPU106: the stable MultiWorkerMirroredStrategy swapped and renamed its parameters."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

import libcst as cst

from migrate_tpu.codemod.analysis.walk import Analysis
from migrate_tpu.codemod.framework.fixes import RewriteRule, as_keyword, head_name, keyword
from migrate_tpu.codemod.foundation.helpers import fix_commas, has_star_arguments
from migrate_tpu.codemod.framework.rule import CallRule, Finding, Safety, register, tf_example
from migrate_tpu.codemod.stages.prefilter import Evidence

if TYPE_CHECKING:  # pragma: no cover
    from migrate_tpu.codemod.stages.source_index import SourceIndex

OLD = "tensorflow.distribute.experimental.MultiWorkerMirroredStrategy"
NEW = "tensorflow.distribute.MultiWorkerMirroredStrategy"
OPTIONS = "tensorflow.distribute.experimental.CommunicationOptions"
# an example's first line (kept out of column 0 of this module: the codemod imports no TensorFlow)
COLLECTIVE_IMPORT = "from tensorflow.distribute.experimental import CollectiveCommunication\n"
OLD_PARAMETERS = ("communication", "cluster_resolver")


@register
class MultiWorkerMirrored(RewriteRule, CallRule):
    id = "TPU106"
    name = "experimental-multi-worker-mirrored"
    title = "`tf.distribute.experimental.MultiWorkerMirroredStrategy` became `tf.distribute.MultiWorkerMirroredStrategy`"
    safety = Safety.SAFE
    callees = frozenset({OLD})
    since = "2.4"
    source = "TF 2.4.0 release notes; v2.4.1 collective_all_reduce_strategy.py; tensorflow/tensorflow#46367"
    evidence = (Evidence("MultiWorkerMirroredStrategy"),)
    what = """
Rewrites the experimental constructor
`MultiWorkerMirroredStrategy(communication=C, cluster_resolver=R)` to the stable
`tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=R,
communication_options=tf.distribute.experimental.CommunicationOptions(implementation=C))`,
mapping positional arguments by the old order. Where the call grows longer than the
file's lines, its arguments go one to a line.
"""
    why = """
The stable class (TF 2.4) puts `cluster_resolver` first and takes the
communication choice through `CommunicationOptions`; passing the old
positional arguments to it would bind them to the wrong parameters.
"""
    fix_safety = "Safe when every argument can be mapped by name; calls with `*args`/`**kwargs` are reported."
    examples = (
        tf_example(
            before="""\
strategy = tf.distribute.experimental.MultiWorkerMirroredStrategy(
    tf.distribute.experimental.CollectiveCommunication.RING, resolver)
""",
            # Longer than the file's lines: one argument to a line, in the call's hanging indent,
            # and the options' call wrapped in turn.
            after="""\
strategy = tf.distribute.MultiWorkerMirroredStrategy(
    cluster_resolver=resolver,
    communication_options=tf.distribute.experimental.CommunicationOptions(
        implementation=tf.distribute.experimental.CollectiveCommunication.RING))
""",
        ),
        # On one line in a file that aligns its arguments: aligned under the ``(``, the
        # arguments would still run past the file's longest line, so they hang (issue 31).
        tf_example(
            before=COLLECTIVE_IMPORT + """\


def make_strategy(resolver):
    return tf.distribute.experimental.MultiWorkerMirroredStrategy(CollectiveCommunication.RING,
                                                                  resolver)
""",
            after=COLLECTIVE_IMPORT + """\


def make_strategy(resolver):
    return tf.distribute.MultiWorkerMirroredStrategy(
        cluster_resolver=resolver,
        communication_options=tf.distribute.experimental.CommunicationOptions(
            implementation=CollectiveCommunication.RING))
""",
        ),
        # Imported under another name: the call does not spell the class's name.
        tf_example(
            before=(
                "from tensorflow.distribute.experimental import MultiWorkerMirroredStrategy as MWMS\n"
                "\n"
                "strategy = MWMS(cluster_resolver=resolver)\n"
            ),
            after="""\
strategy = tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=resolver)
""",
        ),
    )

    @classmethod
    def may_fire(cls, index: SourceIndex) -> bool:
        """A call that may be of the old class: every finding is one (``syntax_stage.py``)."""
        return index.may_name(cls.callees)

    def finish(self, analysis: Analysis) -> Iterable[Finding]:
        for call, scope in self.calls():
            if has_star_arguments(call) or len(call.args) > 2:
                self.report(call, "the stable `MultiWorkerMirroredStrategy` takes `(cluster_resolver, communication_options)`; map these arguments by hand",
                            analysis=analysis)
                continue
            self.propose(
                call,
                "`tf.distribute.experimental.MultiWorkerMirroredStrategy` is now `tf.distribute.MultiWorkerMirroredStrategy`, "
                "with `cluster_resolver` first and the communication given as `CommunicationOptions`",
                analysis=analysis,
                scope=scope,
                uses=[NEW, OPTIONS],
                manual="use `tf.distribute.MultiWorkerMirroredStrategy`",
                rewrite=_stable_call,
                fix_title="Use the stable class",
                # The old name's import goes when nothing else uses it (as in TPU403).
                releases=[head_name(call.func)],
                wrap=True,
            )
        return self.findings


def _stable_call(call: cst.Call, new_class: cst.BaseExpression, options_class: cst.BaseExpression) -> cst.Call:
    args = []
    current = {}
    for index, arg in enumerate(call.args):
        key = arg.keyword.value if arg.keyword is not None else OLD_PARAMETERS[index]
        current[key] = arg
    if "cluster_resolver" in current:
        args.append(as_keyword(current["cluster_resolver"], "cluster_resolver"))
    if "communication" in current:
        arg = current["communication"]
        options = cst.Call(func=options_class, args=[keyword("implementation", arg.value)])
        args.append(as_keyword(arg.with_changes(value=options), "communication_options"))
    return call.with_changes(func=new_class, args=fix_commas(args, call.args))
