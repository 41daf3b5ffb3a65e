"""A migrated training script whose helper module was not: what it calls of the moved APIs is
recorded at the helper's lines (tests/runtime/test_moved_calls_runs.py)."""
import tensorflow as tf

from helpers import old_calls

strategy = old_calls.make_strategy()
print("policy", old_calls.policy().name)
print("guard", hasattr(strategy, "experimental_run_v2") or hasattr(tf.distribute.Strategy, "experimental_run_v2"))
step = old_calls.make_step(strategy)
for index, batch in enumerate(old_calls.dataset(strategy)):
    print("step", index, strategy.reduce("SUM", step(batch), axis=None).numpy().tolist()[0])
    if index == 2:
        break
print("done")
