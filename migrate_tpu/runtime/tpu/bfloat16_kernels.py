"""bfloat16 ops a TPU computed and the release's CPU cannot: computed here in float32, rounded back.

bfloat16 is the TPU's own type: the mixed-precision guide names the ``mixed_bfloat16`` policy for
TPUs, and a TPU's matrix unit multiplies bfloat16 values, sums the products in float32 and rounds
the result to bfloat16.  TensorFlow 2.4.1's CPU wheel has no bfloat16 kernel for the ops of
:data:`NO_CPU_KERNEL` (TF 2.1.0, 2.2.3, 2.3.4 and 2.21 have one for each), so a ``mixed_bfloat16``
convolution that trained on a TPU would stop here with ``No OpKernel was registered to support Op
'Conv2D' ... T=DT_BFLOAT16``.  Under the emulation these ops take their bfloat16 inputs as
float32 (exact: a bfloat16 value is a float32 value) and round their bfloat16 outputs back, which
is how the TPU computes a convolution or a matrix product.

Measured on each interpreter by calling every op with bfloat16 tensors eagerly on the CPU
(tensorflow-cpu 2.1.0, 2.2.3, 2.3.4, 2.4.1, 2.21.0); only 2.4.1 lacks them.

Python 3.7 syntax: TensorFlow 2.1.0 runs it.
"""

from __future__ import absolute_import, division, print_function

import functools
from typing import Any, Dict, Tuple

#: (module under tensorflow.python.ops, Python op function) -> the outputs of the input's type
#: (None: every output), for the releases whose CPU lacks the bfloat16 kernel.
NO_CPU_KERNEL = {
    (2, 4): {
        ("gen_nn_ops", "conv2d"): None,
        ("gen_nn_ops", "conv2d_backprop_input"): None,
        ("gen_nn_ops", "conv2d_backprop_filter"): None,
        ("gen_nn_ops", "depthwise_conv2d_native"): None,
        ("gen_nn_ops", "depthwise_conv2d_native_backprop_input"): None,
        ("gen_nn_ops", "depthwise_conv2d_native_backprop_filter"): None,
        ("gen_nn_ops", "conv3d"): None,
        ("gen_nn_ops", "avg_pool"): None,
        ("gen_nn_ops", "avg_pool_grad"): None,
        ("gen_nn_ops", "fused_batch_norm_v3"): (0,),  # y is the input's type; the statistics float32
        ("gen_nn_ops", "sparse_softmax_cross_entropy_with_logits"): None,
        ("gen_nn_ops", "l2_loss"): None,
        ("gen_math_ops", "batch_mat_mul_v2"): None,
        ("gen_math_ops", "rsqrt"): None,
        ("gen_math_ops", "erf"): None,
        ("gen_math_ops", "round"): None,
    },
}


def _in_float32(original, outputs):
    import tensorflow as tf

    def read(value):
        # a variable reads as the op reads it (Keras's AutoCastVariable as bfloat16 under its policy)
        return tf.convert_to_tensor(value) if isinstance(value, tf.Variable) else value

    def narrow(value):
        return isinstance(value, tf.Tensor) and value.dtype == tf.bfloat16

    def widened(value):
        return tf.cast(value, tf.float32) if narrow(value) else value

    @functools.wraps(original)
    def op(*given, **keywords):
        args = [read(a) for a in given]
        kwargs = {k: read(v) for k, v in keywords.items()}
        if not any(narrow(v) for v in args + list(kwargs.values())):
            return original(*args, **kwargs)
        result = original(*[widened(a) for a in args], **{k: widened(v) for k, v in kwargs.items()})
        return _rounded(result, outputs)
    return op


def _rounded(result, outputs):
    import tensorflow as tf

    def back(value):
        return tf.cast(value, tf.bfloat16) if isinstance(value, tf.Tensor) and value.dtype == tf.float32 else value
    if isinstance(result, tf.Tensor):
        return back(result)
    if isinstance(result, (list, tuple)):
        items = [back(v) if outputs is None or i in outputs else v for i, v in enumerate(result)]
        return type(result)(*items) if hasattr(result, "_fields") else type(result)(items)
    return result


def replacements(tf_version) -> Dict[int, Tuple[Any, Any]]:
    """``id(original) -> (original, wrapper)`` for this interpreter's ops without a CPU bfloat16
    kernel (none on most releases)."""
    import importlib
    table = NO_CPU_KERNEL.get(tuple(tf_version[:2]), {})
    found: Dict[int, Tuple[Any, Any]] = {}
    for (module_name, name), outputs in table.items():
        module = importlib.import_module("tensorflow.python.ops." + module_name)
        original = getattr(module, name, None)
        if original is not None:
            found[id(original)] = (original, _in_float32(original, outputs))
    return found
