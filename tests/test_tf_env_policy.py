"""A missing TensorFlow interpreter skips a round trip locally and fails it on CI."""

import pytest

from tests.conftest import missing_tf_env


@pytest.mark.parametrize(
    "env, fails",
    [
        ({"CI": "true"}, True),
        ({"CI": "true", "MIGRATE_TPU_REQUIRE_TF_ENVS": "0"}, False),
        ({"MIGRATE_TPU_REQUIRE_TF_ENVS": "1"}, True),
        ({}, False),
        ({"CI": "false"}, False),
    ],
)
def test_missing_env_skips_or_fails(monkeypatch, env, fails):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("MIGRATE_TPU_REQUIRE_TF_ENVS", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    expected = pytest.fail.Exception if fails else pytest.skip.Exception
    with pytest.raises(expected) as raised:
        missing_tf_env("no tf2.1 interpreter")
    assert "no tf2.1 interpreter" in str(raised.value)
