"""float16 loss scaling: the update rule by hand, and an overflow skipped alike on one device, two devices and
two workers."""

import dataclasses

import numpy as np
import pytest
import tensorflow as tf

from albert_tf.pretraining.run import run
from albert_tf.training.loss_scale import DynamicLossScale
from tests.helpers import run_on_two_devices, run_on_two_workers, tiny_config
from tests.pretraining.test_run import (
    flags_of,
    settings,
    weights,
    write_records,
)


def test_scale_halves_on_overflow_and_doubles_after_growth_steps():
    scale = DynamicLossScale(initial_scale=8.0, growth_steps=3)
    seen = []
    for finite in (True, True, False, True, True, True, True):
        scale.update(tf.constant(finite))
        seen.append((float(scale.scale.numpy()), int(scale.finite_steps.numpy())))
    # 2 finite steps, an overflow (halve, count from 0), 3 finite steps (double, count from 0), 1 more.
    assert seen == [(8.0, 1), (8.0, 2), (4.0, 0), (4.0, 1), (4.0, 2), (8.0, 0), (8.0, 1)]


def overflow_data(folder):
    """One training file whose 11th record has an infinite masked-LM weight: the step holding it has a NaN
    loss and non-finite gradients on whichever replica reads it, a float16 overflow for the loss scaling."""
    path = str(folder / "train.tfrecord")
    write_records(path, 48, seed=4)
    records = [record.numpy() for record in tf.data.TFRecordDataset(path)]
    example = tf.train.Example.FromString(records[10])
    example.features.feature["masked_lm_weights"].float_list.value[0] = float("inf")
    records[10] = example.SerializeToString()
    with tf.io.TFRecordWriter(path) as writer:
        for record in records:
            writer.write(record)
    tiny_config().to_json_file(folder / "albert_config.json")
    return {"config": str(folder / "albert_config.json"), "train": path, "eval": None}


@pytest.mark.slow
def test_an_overflow_is_skipped_alike_on_one_device_two_devices_and_two_workers(tmp_path, capsys):
    data = overflow_data(tmp_path)
    # One file read in order (no shuffling): step 2 (records 8-15) holds the bad record in every layout.
    base = settings(
        data, tmp_path / "one", mixed_precision="float16", optimizer="adamw", shuffle_buffer_size=1,
        eval_input_file=None, log_every_steps=6, steps_per_loop=6, save_checkpoints_steps=6,
    )  # fmt: skip
    run(base)  # one device: in this process
    one = capsys.readouterr().err
    assert "step 6/6 |" in one and "1 float16 overflow steps skipped" in one, one[-2000:]
    two = flags_of(dataclasses.replace(base, output_dir=str(tmp_path / "two"), strategy="mirrored"))
    mirrored = run_on_two_devices("albert_tf.run_pretraining", two)
    assert "1 float16 overflow steps skipped" in mirrored.stderr, mirrored.stderr[-2000:]
    args = flags_of(
        dataclasses.replace(base, output_dir=str(tmp_path / "workers"), strategy="multi_worker_mirrored")
    )
    run_on_two_workers("albert_tf.run_pretraining", [args, args])
    # In every layout: 7 global batches read, 6 updates applied (the step and the schedule follow applied
    # updates), one halving.
    for folder in ("one", "two", "workers"):
        reader = tf.train.load_checkpoint(str(tmp_path / folder / "checkpoints" / "ckpt-6"))
        assert reader.get_tensor("batches/.ATTRIBUTES/VARIABLE_VALUE") == 7, folder
        assert reader.get_tensor("loss_scale/scale/.ATTRIBUTES/VARIABLE_VALUE") == 2.0**14, folder
    # Same decisions, same records: the weights agree to float16 rounding. Each replica computes its gradient
    # in float16 (relative rounding 2^-11, and CPU float16 kernels do not sum in a fixed order), which Adam's
    # normalization carries into ~1e-3 of an update of at most lr = 0.01, more where a gradient element
    # nearly cancels: medians of 1e-5 and maxima of 1e-4 to 1.1e-3 were seen, run to run. Applying the
    # overflow step would give NaN; skipping another step, or other records in a step, would move most
    # weights by ~1e-2.
    one = weights(tmp_path / "one")
    assert all(np.isfinite(value).all() for value in one.values())
    for folder in ("two", "workers"):
        other = weights(tmp_path / folder)
        differences = np.concatenate([np.abs(one[name] - other[name]).ravel() for name in one])
        assert differences.max() < 5e-3 and np.median(differences) < 1e-4, (folder, differences.max())
