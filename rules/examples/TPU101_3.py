import tensorflow as tf
class SingleDeviceStrategy(object):
  def experimental_run_v2(self, fn, args, kwargs): return fn(*args, **kwargs)
def get_strategy(tpu):
  if tpu:
    return tf.distribute.experimental.TPUStrategy(tf.distribute.cluster_resolver.TPUClusterResolver(tpu))
  return SingleDeviceStrategy()
strategy = get_strategy("my-tpu")
@tf.function
def step(x): return strategy.experimental_run_v2(tf.square, args=(x,), kwargs={})
