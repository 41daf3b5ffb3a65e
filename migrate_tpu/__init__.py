"""migrate-tpu: move TensorFlow 2.1 TPU code to TensorFlow 2.4 form.

This module stays importable on Python 3.7 with nothing but the standard
library: the runtime (``migrate_tpu.runtime``) is loaded from it inside old
TensorFlow interpreters that have neither LibCST nor click.
"""

__version__ = "0.1.0"
