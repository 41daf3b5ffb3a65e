import tensorflow as tf

class PodStrategy(tf.distribute.experimental.TPUStrategy):
    def __init__(self, resolver, device_assignment=None):
        super(PodStrategy, self).__init__(resolver, device_assignment=device_assignment)

class PlainPod(tf.distribute.experimental.TPUStrategy):
    pass

strategy = PlainPod(resolver, device_assignment=assignment)
