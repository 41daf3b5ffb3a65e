import tensorflow as tf


def configure(use_bf16):
    if use_bf16:
        # half precision on the TPU
        from tensorflow.keras.mixed_precision import experimental as prec
        prec.set_policy(prec.Policy("mixed_bfloat16"))
