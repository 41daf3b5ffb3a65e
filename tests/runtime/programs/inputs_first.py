"""A step whose replica function draws random numbers that read none of its inputs: traced for the
emulated TPU, every such op waits for the core's inputs (a TPU's computation starts once all of
them are there), so a step whose input ends the data draws nothing on any core.  Prints how many
RandomUniform ops the trace has and whether each waits for the inputs.  Run by
tests/runtime/test_tpu_replicate.py under `migrate-tpu run`."""

import tensorflow as tf

from migrate_tpu.runtime.tpu import tpu_replicate

traced = []
real_trace = tpu_replicate._trace


def capture(*args, **kwargs):
    concrete = real_trace(*args, **kwargs)
    traced.append(concrete)
    return concrete


tpu_replicate._trace = capture

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)


def replica_fn(x):
    noise = tf.random.uniform([4], seed=1)  # reads no input
    return tf.reduce_sum(x) + tf.reduce_sum(noise)


@tf.function
def step(x):
    run = getattr(strategy, "run", None) or strategy.experimental_run_v2  # TF 2.1: experimental_run_v2
    return run(replica_fn, args=(x,))


step(tf.ones([8, 2]))
graph = traced[0].graph
inputs = {op.name for op in graph.get_operations() if op.type == "Placeholder"}
random = [op for op in graph.get_operations() if op.type == "RandomUniform"]


def ancestors(op, seen=None):
    seen = set() if seen is None else seen
    for parent in list(op.control_inputs) + [tensor.op for tensor in op.inputs]:
        if parent.name not in seen:
            seen.add(parent.name)
            ancestors(parent, seen)
    return seen


waits = [bool(ancestors(op) & inputs) for op in random]
for op in random:
    print("CONTROL", op.name, [c.name for c in op.control_inputs], [i.op.name for i in op.inputs])
print("RANDOM", len(random), "WAITS", all(waits))
