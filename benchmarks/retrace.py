"""Why TPU301 never decorates a step made on every call: the cost of a tf.function made anew.

Runs one small step 20 times on a real TensorFlow (CPU, ``MirroredStrategy`` over one device,
where eager ``run`` of a plain function is legal) in three forms, each in a fresh process:

* ``eager``: the issue's method, a nested def run eagerly (what the program did);
* ``decorated per call``: the same nested def under ``@tf.function`` (TPU301's old safe fix):
  a new tf.function, traced again, on every call;
* ``made once``: the def at module level under ``@tf.function`` (what TPU301 now does when the
  def reads only module-level names; a method the base class traces needs nothing).

Prints wall seconds for the 20 calls (after one warm-up call of each form) and how often the
step's Python body ran (a counter in it): on every call when eager, on every trace in a
tf.function.

    python benchmarks/retrace.py [--python ~/.cache/migrate-tpu/envs/tf2.4/bin/python]
"""

import argparse
import json
import os
import subprocess
import sys

PROGRAM = r'''
import json, os, sys, time
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf

FORM = sys.argv[1]
strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
with strategy.scope():
    total = tf.Variable(0.0)
traces = [0]


@tf.function
def made_once(inputs):
    traces[0] += 1
    total.assign_add(tf.reduce_sum(tf.matmul(inputs, inputs)))


def train_step(x):
    if FORM == "made once":
        return strategy.run(made_once, args=(x,))

    def step_fn(inputs):
        traces[0] += 1
        total.assign_add(tf.reduce_sum(tf.matmul(inputs, inputs)))

    if FORM == "decorated per call":
        step_fn = tf.function(step_fn)
    return strategy.run(step_fn, args=(x,))


x = tf.ones((64, 64))
train_step(x)  # warm-up: the first trace of the forms that trace
traces[0] = 0
start = time.perf_counter()
for _ in range(20):
    train_step(x)
print(json.dumps({"form": FORM, "seconds": time.perf_counter() - start, "traces": traces[0]}))
'''


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = os.path.expanduser("~/.cache/migrate-tpu/envs/tf2.4/bin/python")
    parser.add_argument("--python", default=default, help="interpreter with TensorFlow (default: the tf2.4 env)")
    options = parser.parse_args()
    for form in ("eager", "decorated per call", "made once"):
        done = subprocess.run([options.python, "-c", PROGRAM, form], capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            sys.exit(done.stderr[-2000:])
        result = json.loads(done.stdout.strip().splitlines()[-1])
        print("{form:>20}: 20 calls {seconds:7.3f} s, Python body ran {traces:3d} times".format(**result))


if __name__ == "__main__":
    main()
