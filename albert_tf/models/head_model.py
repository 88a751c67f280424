"""`HeadModel`: the base of models that put heads on an encoder (serialization with the encoder)."""

import keras


class HeadModel(keras.Model):
    """A functional model over `self.encoder`; subclasses list their own arguments in `_head_config`."""

    def _head_config(self):
        return {}

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "encoder": keras.saving.serialize_keras_object(self.encoder),
            "dtype": self.dtype_policy.name,
            **self._head_config(),
        }

    @classmethod
    def from_config(cls, config):
        """Rebuilt under the dtype policy it was saved with (its head layers take the global policy as they
        are made, so it is set while they are)."""
        config = dict(config)
        policy, previous = config.pop("dtype", None), keras.config.dtype_policy()
        if policy is not None:
            keras.config.set_dtype_policy(policy)
        try:
            config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
            return cls(**config)
        finally:
            keras.config.set_dtype_policy(previous)
