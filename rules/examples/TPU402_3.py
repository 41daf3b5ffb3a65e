import tensorflow as tf

try:
    from tensorflow.keras.mixed_precision import experimental as mixed_precision
except ImportError:
    from tensorflow.keras import mixed_precision
mixed_precision.set_policy("mixed_bfloat16")
