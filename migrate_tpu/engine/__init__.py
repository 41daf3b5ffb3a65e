"""Files, processes, reports. Knows nothing of TensorFlow."""
