"""TPU301: a plain Python function passed to an eager TPU ``run``, in parts a reader finds by name.

- ``rule.py``: the rule itself: what it declares, what the walk keeps, what ``finish``
  decides for each ``run`` (nothing, a note, or which fix);
- ``callables.py``: which callable a ``run`` is given (a def, a method, a lambda, what a
  factory returns, a ``tf.function`` already, or something not in view, and why);
- ``traced.py``: which code already runs under ``tf.function``, and the ``try`` that
  catches the error eager TPU ``run`` raises;
- ``safety.py``: why a fix is unsafe (side effects, variables, a body not in view, a
  ``tf.function`` made again on every call);
- ``fixes.py``: the fixes where the callable stands (decorate its ``def``, wrap the argument);
- ``hoisting.py``: where to make the ``tf.function`` once (before the loop, out of the function);
- ``may_fire.py``: the rule's question before LibCST, on the ``ast`` tree;
- ``examples.py``: the rule's examples.

Importing the package registers the rule (``catalogue.load`` imports every rule module).
"""

from migrate_tpu.codemod.rules.structural.eager_run.rule import EagerPlainFunctionRun

__all__ = ["EagerPlainFunctionRun"]
