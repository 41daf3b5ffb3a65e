"""A TF1 session to the TPU's address (TPUEstimator makes one): on a TPU it ran; the emulation has no
gRPC server there, so the run must fail at once with what is not emulated, never wait for ever on
the address (a corpus run of TensorFlow's TPUEstimator guide hung until its timeout)."""
import tensorflow as tf

resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="")
with tf.Graph().as_default():
    with tf.compat.v1.Session(resolver.master()) as session:
        print(session.run(tf.constant(1)))
