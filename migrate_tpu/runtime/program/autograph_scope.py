"""What AutoGraph converts in a run: the user's functions, as TensorFlow converts them, and
never the runtime's own, as it never converts TensorFlow's.

AutoGraph rewrites every function that converted code calls, unless the function's module is
on its list of modules to leave alone (``tensorflow``, ``numpy``, ...).  The runtime's
functions stand in for TensorFlow's (``Strategy.run``, ``experimental_run_v2``, the recorder's
wrappers), so a user's ``tf.function`` calling them had them rewritten: on a small training
loop five of the six functions converted were the runtime's, about 40 % of a warm run's CPU
time on TF 2.1 and 2.4 (0.4-0.7 s; benchmarks/run_cpu.py), and code a real TPU never ran under
AutoGraph ran under it.

Where the runtime wraps a user's function before TensorFlow converts it, the wrapper is the
runtime's and is left alone, so it converts the user's function itself
(:func:`converted_as_run_converts`), as TensorFlow's ``run`` does.

Runs in the TensorFlow interpreter (2.1 to 2.21); Python 3.7 syntax.
"""

#: The package whose functions AutoGraph leaves alone (a module name prefix, as AutoGraph's own
#: rules name ``tensorflow``).
RUNTIME_PACKAGE = __name__.split(".")[0]


def leave_the_runtime_unconverted():
    """Add the runtime's package to AutoGraph's modules to leave alone (first, so no rule of
    AutoGraph's converts it).  Idempotent; nothing where AutoGraph has no such list."""
    try:
        from tensorflow.python.autograph.core import config
    except ImportError:  # pragma: no cover - TF 2.1 to 2.21 all have it
        return
    rules = tuple(getattr(config, "CONVERSION_RULES", ()))
    if not any(isinstance(rule, config.DoNotConvert) and rule.matches(RUNTIME_PACKAGE) for rule in rules):
        config.CONVERSION_RULES = (config.DoNotConvert(RUNTIME_PACKAGE),) + rules


def converted_as_run_converts(fn):
    """``fn`` converted by AutoGraph as a TPU's ``run`` converts its replica function (in the
    calling context's conversion status, converting by default: TPUStrategy's ``run`` in
    v2.1.0 and v2.4.1)."""
    try:
        from tensorflow.python.autograph.core import ag_ctx
        from tensorflow.python.autograph.impl import api as autograph
    except ImportError:  # pragma: no cover - every release 2.1 - 2.21 has both
        return fn
    return autograph.tf_convert(fn, ag_ctx.control_status_ctx())
