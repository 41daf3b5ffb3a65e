"""What a pod's one client sees (TF 2.4 form), run with ``--hosts 2 --replicas 4``: the
dataset function once per host, host k feeding its own cores, the cross-host all-reduce and
all-gather of one step, the resolver's cluster, and a variable printed once."""
import json
import tensorflow as tf
resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
tf.config.experimental_connect_to_cluster(resolver)
topology = tf.tpu.experimental.initialize_tpu_system(resolver)
strategy = tf.distribute.TPUStrategy(resolver)
with strategy.scope():
    acc = tf.Variable(0.0)
contexts = []
def dataset_fn(ctx):
    contexts.append((ctx.num_input_pipelines, ctx.input_pipeline_id))
    return tf.data.Dataset.from_tensors([float(ctx.input_pipeline_id)]).repeat().batch(ctx.get_per_replica_batch_size(8))
ds = strategy.experimental_distribute_datasets_from_function(dataset_fn)
batch = next(iter(ds))
fed = [float(t.numpy()[0][0]) for t in strategy.experimental_local_results(batch)]
@tf.function
def step(v):  # one core per host at --replicas 2: the all-reduce spans the hosts
    def fn(v):
        acc.assign_add(tf.reduce_sum(v))
        ctx = tf.distribute.get_replica_context()
        return ctx.all_reduce("SUM", tf.constant(1.0)), ctx.all_gather(tf.reshape(tf.cast(ctx.replica_id_in_sync_group, tf.float32), [1]), 0)
    return strategy.run(fn, args=(v,))
s, g = step(batch)
@tf.function
def who(v):  # each replica: its id, and the pipeline its batch came from
    def fn(v):
        return tf.stack([tf.cast(tf.distribute.get_replica_context().replica_id_in_sync_group, tf.float32), v[0][0]])
    return strategy.run(fn, args=(v,))
who_fed = [t.numpy().tolist() + [strategy.extended.worker_devices[int(t.numpy()[0])]] for t in strategy.experimental_local_results(who(batch))]
d = strategy.experimental_distribute_dataset(tf.data.Dataset.range(16).batch(8))
shards = [t.numpy().tolist() for t in strategy.experimental_local_results(next(iter(d)))]
print("acc", float(acc.numpy()))  # a pod prints one number, once
print("RESULT " + json.dumps({"contexts": contexts, "fed": fed, "all_reduce": [float(x) for x in strategy.experimental_local_results(s)],
  "gather": strategy.experimental_local_results(g)[0].numpy().tolist(), "shards": shards, "who_fed": who_fed,
  "cluster": resolver.cluster_spec().as_dict(), "task": [resolver.task_type, resolver.task_id],
  "acc": resolver.num_accelerators(), "tasks": topology.num_tasks,
  "tpus": [d.name for d in tf.config.list_logical_devices("TPU")],
  "workers": len(strategy.extended.worker_devices), "hosts": strategy.extended.num_hosts}))
