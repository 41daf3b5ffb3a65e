"""TPU106: the stable MultiWorkerMirroredStrategy swapped and renamed its parameters."""

from __future__ import annotations

import libcst as cst

from migrate_tpu.codemod.analysis import Analysis
from migrate_tpu.codemod.helpers import fix_commas, has_star_arguments
from migrate_tpu.codemod.names import expression_for
from migrate_tpu.codemod.rule import CallRule, Change, Safety, register, tf_example

OLD = "tensorflow.distribute.experimental.MultiWorkerMirroredStrategy"
NEW = "tensorflow.distribute.MultiWorkerMirroredStrategy"
OPTIONS = "tensorflow.distribute.experimental.CommunicationOptions"
OLD_PARAMETERS = ("communication", "cluster_resolver")


@register
class MultiWorkerMirrored(CallRule):
    id = "TPU106"
    name = "experimental-multi-worker-mirrored"
    title = "`tf.distribute.experimental.MultiWorkerMirroredStrategy` became `tf.distribute.MultiWorkerMirroredStrategy`"
    safety = Safety.SAFE
    callees = frozenset({OLD})
    since = "2.4"
    source = "TF 2.4.0 release notes; v2.4.1 collective_all_reduce_strategy.py; tensorflow/tensorflow#46367"
    triggers = ("MultiWorkerMirroredStrategy",)
    what = """
Rewrites the experimental constructor
`MultiWorkerMirroredStrategy(communication=C, cluster_resolver=R)` to the stable
`tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=R,
communication_options=tf.distribute.experimental.CommunicationOptions(implementation=C))`,
mapping positional arguments by the old order.
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
            after="""\
strategy = tf.distribute.MultiWorkerMirroredStrategy(
    cluster_resolver=resolver, communication_options=tf.distribute.experimental.CommunicationOptions(implementation=tf.distribute.experimental.CollectiveCommunication.RING))
""",
        ),
    )

    def finish(self, analysis: Analysis):
        for call, scope in self.calls():
            if has_star_arguments(call) or len(call.args) > 2:
                self.report(call, "the stable `MultiWorkerMirroredStrategy` takes `(cluster_resolver, communication_options)`; map these arguments by hand", analysis=analysis)
                continue
            values = {}
            for index, arg in enumerate(call.args):
                key = arg.keyword.value if arg.keyword is not None else OLD_PARAMETERS[index]
                values[key] = arg
            try:
                new_text, needed_new = expression_for(NEW, scope)
                options_text, needed_options = expression_for(OPTIONS, scope)
            except LookupError:
                self.report(call, "use `tf.distribute.MultiWorkerMirroredStrategy`", analysis=analysis)
                continue
            new_func = cst.parse_expression(new_text)

            def rewrite(updated, new_func=new_func, options_text=options_text):
                args = []
                current = {}
                for index, arg in enumerate(updated.args):
                    key = arg.keyword.value if arg.keyword is not None else OLD_PARAMETERS[index]
                    current[key] = arg
                if "cluster_resolver" in current:
                    arg = current["cluster_resolver"]
                    args.append(arg.with_changes(keyword=cst.Name("cluster_resolver"), equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))))
                if "communication" in current:
                    arg = current["communication"]
                    options = cst.Call(
                        func=cst.parse_expression(options_text),
                        args=[cst.Arg(arg.value, keyword=cst.Name("implementation"), equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))],
                    )
                    args.append(arg.with_changes(value=options, keyword=cst.Name("communication_options"), equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))))
                return updated.with_changes(func=new_func, args=fix_commas(args, updated.args))

            imports = [n for n in (needed_new, needed_options) if n]
            self.report(
                call,
                "`tf.distribute.experimental.MultiWorkerMirroredStrategy` is now `tf.distribute.MultiWorkerMirroredStrategy`, "
                "with `cluster_resolver` first and the communication given as `CommunicationOptions`",
                analysis=analysis,
                changes=[Change(call, rewrite)],
                imports=imports[:1],
                fix_title="Use the stable class",
            )
        return self.findings
