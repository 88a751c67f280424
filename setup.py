"""Install albert_tf: `pip install -e .` (`[test]`: the test suite, `[beam]`: create_pretraining_data on
Apache Beam, `[litert]`: LiteRT (TFLite) export and its Python loader, `[bench]`: benchmarks, `[mutation]`:
mutation testing)."""

import pathlib

from setuptools import find_packages, setup

setup(
    name="albert_tf",
    version="0.1.0",
    description="ALBERT (A Lite BERT) for TensorFlow 2 / Keras 3: pretrain, fine-tune, serve.",
    long_description=pathlib.Path(__file__).with_name("README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    python_requires=">=3.11",
    packages=find_packages(include=["albert_tf", "albert_tf.*"]),
    # The model configs, run recipes and the sample's records and tokenizer (albert_tf/shipped.py names
    # them), so that the quick start runs from any directory after `pip install`.
    package_data={
        "albert_tf": [
            "configs/*.json",
            "configs/*/*.flags",
            "sample/spm_8k.model",
            "sample/records/*",
            "sample/LICENSE.rst",  # the sample is the Python documentation's prose: its licence goes with it
        ]
    },
    install_requires=[
        "tensorflow==2.21.*",
        "tensorflow-text==2.21.*",
        # Exactly 0.2.1: it gives tensorflow-text 2.21's in-graph ids (bench/tokenizer_parity.py,
        # bench/README.md); 0.2.2 and 0.2.3 break exact score ties the other way ("1,114,111" in the sample
        # corpus: "11" + "1" in the graph, "1" + "11" in Python), and 0.1.99 crashes after TensorFlow loads.
        "sentencepiece==0.2.1",
        "absl-py",
        # TensorBoard summaries of training runs (TensorFlow 2.21 no longer brings it).
        "tensorboard",
        # TFRecord checksums for the pretraining-data builder, which runs without TensorFlow.
        "google-crc32c",
        # Hugging Face weights (model.safetensors) for checkpoint conversion, read and written without torch.
        "safetensors",
        # PredictionLog protos for the TF Serving warm-up requests the exporter writes.
        "tensorflow-serving-api==2.21.*",
    ],
    extras_require={
        # Ranges the suite is known to pass with (each upper bound is the next minor or major release, so a
        # new release cannot break `pip install -e ".[test,beam]" && python -m pytest` unnoticed; pytest 9.2
        # changed pytest.approx over mappings). nbclient/nbformat/ipykernel: the tests execute notebooks/.
        # ai-edge-litert: the LiteRT export's tests run its files (the same pin as the litert extra's);
        # matplotlib: a sweep's plot is drawn in its tests (the plot extra's pin).
        "test": [
            "ai-edge-litert>=2.3,<2.4",
            "matplotlib>=3.10,<3.11",
            "pytest>=9.0,<9.3",
            "pytest-xdist>=3.8,<3.9",
            "hypothesis>=6.155,<6.156",
            "ruff>=0.17,<0.18",
            "nbclient>=0.11,<0.12",
            "nbformat>=5.11,<5.12",
            "ipykernel>=7.4,<7.5",
        ],
        # keras-hub is the peer the benchmarks measure against; never a dependency of the library. matplotlib
        # draws the pretraining study's plots.
        "bench": ["keras-hub", "matplotlib"],
        # Mutation testing (bench/mutation.py, docs/contributing.md): a measurement run by hand, never in CI.
        # 3.8 has the fork server the runs need (TensorFlow's threads do not survive a plain fork).
        "mutation": ["mutmut>=3.8.1,<3.9"],
        # create_pretraining_data --runner=beam (Dataflow, Flink, Spark). 2.77 installs beside tensorflow 2.21
        # (protobuf resolves to 6.33).
        "beam": ["apache-beam==2.77.*"],
        # LiteRT's interpreter: export_litert runs each file in it before writing it, and
        # albert_tf.serving.litert.load runs files with it (tensorflow-text has the custom ops' registrars).
        "litert": ["ai-edge-litert>=2.3,<2.4"],
        # A fine-tuning sweep's plot (sweep.png: albert_tf/finetuning/sweep_summary.py); without it the
        # sweep writes its summary and table only.
        "plot": ["matplotlib>=3.10,<3.11"],
    },
)
