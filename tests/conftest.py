"""Shared fixtures: every test starts from the float32 policy and a fixed seed."""

import keras
import pytest


@pytest.fixture(autouse=True)
def _deterministic_float32():
    keras.config.set_dtype_policy("float32")
    keras.utils.set_random_seed(1234)
    yield
    keras.config.set_dtype_policy("float32")
