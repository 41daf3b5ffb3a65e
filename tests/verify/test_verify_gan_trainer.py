"""A version-guarded GAN trainer of 2020 (train-step mixins, two Keras models and two Adam
optimizers, a trainer held in a reference cycle and dropped when its function returns) verifies
`same`, on one interpreter and across releases, with its optimizers' slots compared: verify
records every variable the program created under a strategy, not what Python's cyclic collector
happened to have left when the program ended (a false alarm, `variable Adam/dense/bias/m:0
exists in the migrated program only`, where the collector ran at another moment in one run)."""

import json

import pytest

from tests.verify.test_verify import PROGRAMS, require, verify

#: The layers' 8 variables, the two Adam optimizers' slots (m and v of each) and iterations, and
#: the two models' Keras counters: what the program created under the strategy.
CREATED = 40


@pytest.mark.parametrize("pythons", [("tf2.4",), ("tf2.1", "tf2.4"), ("tf2.21",)], ids=["tf2.4", "tf2.1-tf2.4", "tf2.21"])
def test_a_gan_trainer_dropped_before_the_end_verifies_same_with_its_optimizers(tmp_path, pythons):
    *before, after = [require(name) for name in pythons]
    args = (("--before-python", before[0]) if before else ()) + ("--python", after, str(PROGRAMS / "gan_trainer.py"))
    status, report, stderr = verify(tmp_path, *args)
    assert (status, report["verdict"]) == (0, "same"), json.dumps(report, indent=1) + stderr
    assert report["variables_compared"] >= CREATED - 6, json.dumps(report, indent=1)
