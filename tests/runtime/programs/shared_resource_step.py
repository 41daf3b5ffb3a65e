"""A step that writes, after an all-reduce, a variable made outside the strategy's scope: one
resource every core's call touches.  Read back in the same function after ``run`` and after an
eager ``run`` of a ``tf.function``.  (The emulation once chained the cores' calls by that resource
and the first core waited in its all-reduce for a core that waited for it: the run hung.)"""
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.experimental.TPUStrategy(resolver)
run = getattr(strategy, "run", None) or strategy.experimental_run_v2
shared = tf.Variable(0.0)  # outside the scope


def replica_step():
    before = shared.read_value()
    total = tf.distribute.get_replica_context().all_reduce("SUM", tf.constant(1.0))
    shared.assign_add(total)
    return before


@tf.function
def step():
    before = strategy.experimental_local_results(run(replica_step))[0]
    return before, shared.read_value()


for _ in range(2):
    before, after = step()
    print("in a function", before.numpy(), after.numpy())
eager_step = tf.function(replica_step)
for _ in range(2):
    before = strategy.experimental_local_results(run(eager_step))[0]
    print("eager run", before.numpy(), shared.numpy())
