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
            **self._head_config(),
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
        return cls(**config)
