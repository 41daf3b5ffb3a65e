import tensorflow as tf


def configure(use_bf16):
    if use_bf16:
        # half precision on the TPU
        tf.keras.mixed_precision.set_global_policy(tf.keras.mixed_precision.Policy("mixed_bfloat16"))
