"""TPU201: TPU topologies are 4-D since TF 2.3, so 3-element shapes fail."""

from __future__ import annotations

from typing import Iterable, List, Optional, Tuple, Union, cast

import libcst as cst

from migrate_tpu.codemod.analysis.walk import Analysis, Scope
from migrate_tpu.codemod.foundation.helpers import argument
from migrate_tpu.codemod.analysis.names import qualified_name
from migrate_tpu.codemod.framework.rule import Change, Finding, Rule, Safety, register, tf_example
from migrate_tpu.codemod.stages.prefilter import Evidence

BUILD = (
    "tensorflow.tpu.experimental.DeviceAssignment.build",
    "tensorflow.compat.v1.tpu.experimental.DeviceAssignment.build",
    "tensorflow.python.tpu.device_assignment.DeviceAssignment.build",
    "tensorflow.python.tpu.device_assignment.device_assignment",
)
# (position, keyword) of the shape arguments of build(topology, computation_shape, computation_stride, num_replicas).
SHAPES = ((1, "computation_shape"), (2, "computation_stride"))
ARRAYS = ("numpy.array", "numpy.asarray")


@register
class DeviceAssignmentShape(Rule):
    id = "TPU201"
    name = "device-assignment-3d-shape"
    title = "`DeviceAssignment.build` needs 4-element shapes since TF 2.3"
    safety = Safety.SAFE
    since = "2.3"
    source = "v2.1.0 vs v2.3.0 tpu/topology.py (mesh rank 3 -> 4); TF 2.3.0 release notes (3D mesh support)"
    evidence = (Evidence("DeviceAssignment"),)
    what = """
Inserts `1` (the z extent) at index 2 of literal 3-element `computation_shape`
and `computation_stride` arguments of `DeviceAssignment.build`:
`[x, y, cores]` becomes `[x, y, 1, cores]`. Computed shapes are reported.
"""
    why = """
Since TF 2.3 a TPU topology is 4-D (`x, y, z, core`); a 3-element shape raises
`ValueError` when the device assignment is built. Cloud TPU v2/v3 slices have
z = 1, so inserting 1 keeps the same assignment.
"""
    use_instead = "Newer TPU generations with z > 1 need the real z extent: check the result on your topology."
    fix_safety = "Safe for literal shapes on v2/v3 slices (z = 1); computed shapes need manual work."
    examples = (
        tf_example(
            before="""\
assignment = tf.tpu.experimental.DeviceAssignment.build(topology, computation_shape=[1, 1, 2], num_replicas=4)
""",
            after="""\
assignment = tf.tpu.experimental.DeviceAssignment.build(topology, computation_shape=[1, 1, 1, 2], num_replicas=4)
""",
        ),
        tf_example(
            before="""\
assignment = tf.tpu.experimental.DeviceAssignment.build(topology, computation_shape=[1, 1, 1, 2])
""",
        ),
    )

    def __init__(self) -> None:
        super().__init__()
        self._calls: List[Tuple[cst.Call, Scope]] = []

    def visit_Call(self, node: cst.Call, analysis: Analysis) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("build", "device_assignment"):
            analysis.remember(node)
            self._calls.append((node, analysis.scope))

    def finish(self, analysis: Analysis) -> Iterable[Finding]:
        for call, scope in self._calls:
            if qualified_name(call.func, scope) not in BUILD:
                continue
            for position, keyword in SHAPES:
                arg = argument(call, position, keyword)
                if arg is None:
                    continue
                self._check(call, arg, keyword, scope, analysis)
        return self.findings

    def _sequence(self, value: cst.BaseExpression, scope: Scope) -> Tuple[Optional[Union[cst.List, cst.Tuple]], Optional[cst.Call]]:
        """The literal list/tuple inside ``value`` (also inside ``np.array(...)``)."""
        if isinstance(value, (cst.List, cst.Tuple)):
            return value, None
        if isinstance(value, cst.Call) and qualified_name(value.func, scope) in ARRAYS and value.args:
            inner = value.args[0].value
            if isinstance(inner, (cst.List, cst.Tuple)):
                return inner, value
        return None, None

    def _check(self, call: cst.Call, arg: cst.Arg, keyword: str, scope: Scope, analysis: Analysis) -> None:
        sequence, wrapper = self._sequence(arg.value, scope)
        if sequence is None:
            if isinstance(arg.value, cst.Name) and arg.value.value == "None":
                return
            self.report(
                arg.value,
                f"`{keyword}` must have 4 elements (x, y, z, core) since TF 2.3; check this computed shape",
                analysis=analysis,
            )
            return
        if len(sequence.elements) != 3 or any(isinstance(e, cst.StarredElement) for e in sequence.elements):
            return
        index = next(i for i, a in enumerate(call.args) if a is arg)

        def insert_z(updated: cst.Call, index: int = index, wrapped: bool = wrapper is not None) -> cst.Call:
            args = list(updated.args)
            value = args[index].value
            # The shape's list or tuple (``_sequence``), inside ``np.array(...)`` when wrapped.
            inner = cast(Union[cst.List, cst.Tuple], cast(cst.Call, value).args[0].value if wrapped else value)
            elements = list(inner.elements)
            comma = elements[1].comma
            if comma is cst.MaybeSentinel.DEFAULT:
                comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
            elements.insert(2, cst.Element(cst.Integer("1"), comma=comma))
            elements[1] = elements[1].with_changes(comma=comma)
            new_inner = inner.with_changes(elements=elements)
            new_value: cst.BaseExpression
            if wrapped:
                array = cast(cst.Call, value)
                inner_arg = array.args[0].with_changes(value=new_inner)
                new_value = array.with_changes(args=[inner_arg] + list(array.args[1:]))
            else:
                new_value = new_inner
            args[index] = args[index].with_changes(value=new_value)
            return updated.with_changes(args=args)

        self.report(
            call,
            f"`{keyword}` has 3 elements; TPU topologies are 4-D (x, y, z, core) since TF 2.3",
            analysis=analysis,
            changes=[Change(call, insert_z, key=("z", id(call), index))],
            fix_title="Insert z = 1 at index 2",
        )
