import tensorflow as tf

class PodStrategy(tf.distribute.TPUStrategy):
    def __init__(self, resolver, device_assignment=None):
        super(PodStrategy, self).__init__(resolver, experimental_device_assignment=device_assignment)

class PlainPod(tf.distribute.TPUStrategy):
    pass

strategy = PlainPod(resolver, experimental_device_assignment=assignment)
