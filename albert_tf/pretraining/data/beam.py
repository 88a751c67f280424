"""The pretraining-data build as an Apache Beam pipeline (`create_pretraining_data --runner=beam`): Dataflow,
Flink, Spark, or local processes; the bytes of the local runner (local.py), whatever the runner.

    input files → tasks (blocks) → instances keyed by hash(seed, unit, index), by shard (key range)
      → GroupByKey(shard) → sort by key, write the shard to a temporary name (shard_sorting.write_shard)
      → records and lowest and highest key per shard, and the summed statistics, to a temporary JSON file
    then, in this process: check (no shard empty: units.check_shards), rename the shards, write the manifest
    (units.publish).

Beam's own WriteToTFRecord is not used: it writes different bytes on every run (a random first shard, uuid
temporary names). Shards are written the way TensorFlow Datasets' BeamWriter does it instead: each group of a
key range sorted by key, written by one worker. A shard larger than sort_memory_bytes is sorted in runs on
the worker's disk and merged, so workers need no more memory than that.

Workers import this package, sentencepiece and google-crc32c, never TensorFlow. Every path (inputs, outputs,
the SentencePiece model) may be on any file system Beam knows (gs:// on Dataflow).
"""

import collections
import contextlib
import json
import logging
import os
import tempfile
import time
import uuid

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from albert_tf.file_systems import BeamFiles
from albert_tf.pretraining.data import shard_sorting, units
from albert_tf.pretraining.data.manifest import default_manifest_path
from albert_tf.pretraining.data.units import BuildError, BuildSummary

_STATS = "statistics"


def pipeline_arguments(spec, num_workers=2):
    """Beam arguments from TFDS-style `--beam_pipeline_options` ("runner=DataflowRunner,project=p,...").

    Without a runner: Beam's FnApiRunner, in this process for one worker, else in num_workers local
    processes. Named directly: Beam 2.77's DirectRunner, even in multi_processing mode, first tries its Prism
    runner, which downloads a binary from GitHub at run time (and logs the failure where it cannot).
    """
    arguments = [f"--{item.strip()}" for item in spec.split(",") if item.strip()] if spec else []
    if not any(argument.startswith("--runner=") for argument in arguments):
        arguments.append("--runner=FnApiRunner")
        if num_workers > 1:
            arguments += [
                "--direct_running_mode=multi_processing",
                f"--direct_num_workers={num_workers}",
            ]
    return arguments


def _task_instances(task, settings, num_shards):
    """(shard, (key, record)) for each instance of a task, then its statistics on the _STATS output."""
    stats = collections.Counter()
    for shard, key, record in units.task_instances(settings, task, num_shards, stats, BeamFiles()):
        yield shard, (key, record)
    yield beam.pvalue.TaggedOutput(_STATS, dict(stats))


def _write_shard(shard_entries, temporaries, gzip_compressed, memory_bytes):
    """Sorts one shard's (key, record) entries and writes them to its temporary name: (shard, records, lowest
    key head, highest key head) (units.check_shards)."""
    shard, entries = shard_entries
    keys = units.KeyRange()
    records = shard_sorting.write_shard(
        keys.watch(entries),
        temporaries[shard],
        gzip_compressed=gzip_compressed,
        memory_bytes=memory_bytes,
        files=BeamFiles(),
    )
    return shard, records, keys.low, keys.high


def _write_results(_, path, shard_records, statistics):
    """What the launcher needs to publish the build, as JSON at path."""
    with BeamFiles().open_write(path) as handle:
        content = {"shard_records": sorted(shard_records), "statistics": statistics}
        handle.write(json.dumps(content).encode("utf-8"))


def _run_pipeline(options, inputs, settings, temporaries, results_path, sort_memory_bytes):
    """Runs the pipeline (module docstring) to its end. Its errors come back as the runner raises them:
    in-process as they were raised (with a note on the step), from worker processes as a RuntimeError
    holding the remote traceback; the error's own last line is what names the file or flag."""
    try:
        with beam.Pipeline(options=options) as pipeline:
            tagged = (
                pipeline
                | "Inputs" >> beam.Create(inputs)
                # Tasks are listed on the workers (a graph holding every block would not fit Dataflow's
                # job size limit) and spread over them.
                | "Tasks" >> beam.FlatMapTuple(units.file_tasks)
                | "Spread" >> beam.Reshuffle()
                | "Instances"
                >> beam.FlatMap(_task_instances, settings, len(temporaries))
                .with_output_types(beam.typehints.Tuple[int, beam.typehints.Any])
                .with_outputs(_STATS, main="instances")
            )
            statistics = tagged[_STATS] | "Statistics" >> beam.CombineGlobally(units.add_counters)
            written = (
                tagged.instances
                | "GroupByShard" >> beam.GroupByKey()
                | "WriteShards" >> beam.Map(_write_shard, temporaries, settings.gzip, sort_memory_bytes)
            )
            _ = (
                pipeline
                | "Once" >> beam.Create([None])
                | "Results"
                >> beam.Map(
                    _write_results,
                    results_path,
                    shard_records=beam.pvalue.AsList(written),
                    statistics=beam.pvalue.AsSingleton(statistics),
                )
            )
    except ValueError:
        raise
    except Exception as error:  # noqa: BLE001 (any runner's wrapping of a worker's error)
        lines = [line.strip() for line in str(error).splitlines() if "Error: " in line]
        raise BuildError(f"the Beam pipeline failed: {lines[-1] if lines else error}") from error


@contextlib.contextmanager
def _quiet_local_workers():
    """Warnings and errors only from Beam's local runner. Its worker processes log their start-up and shutdown
    at INFO, each line twice: on their stderr, and echoed by the job service in this process. The FnApiRunner
    hands its workers no log level; they read one from the options file named by PIPELINE_OPTIONS_FILE in
    their environment (Beam's SDK-harness contract), and get no other options from it either way."""
    echo = logging.getLogger("apache_beam.runners.portability.local_job_service")
    levels = {logger: logger.level for logger in (logging.getLogger("apache_beam"), echo)}
    logging.getLogger("apache_beam").setLevel(logging.WARNING)
    echo.setLevel(logging.ERROR)  # the workers' own stderr already shows their warnings
    saved = os.environ.get("PIPELINE_OPTIONS_FILE")
    with tempfile.TemporaryDirectory() as folder:
        options_file = os.path.join(folder, "worker_options.json")
        with open(options_file, "w", encoding="utf-8") as handle:
            json.dump({"default_sdk_harness_log_level": "WARNING"}, handle)
        os.environ["PIPELINE_OPTIONS_FILE"] = options_file
        try:
            yield
        finally:
            for logger, level in levels.items():
                logger.setLevel(level)
            if saved is None:
                del os.environ["PIPELINE_OPTIONS_FILE"]
            else:
                os.environ["PIPELINE_OPTIONS_FILE"] = saved


def build(
    input_files,
    output_files,
    settings,
    *,
    pipeline_options="",
    num_workers=2,
    manifest_file=None,
    sort_memory_bytes=shard_sorting.SORT_MEMORY_BYTES,
):
    """Runs the build as a Beam pipeline; arguments and result as local.build.

    Args:
      pipeline_options: comma-separated Beam options, as `--beam_pipeline_options` (pipeline_arguments).
      num_workers: local processes when pipeline_options names no runner.
    """
    manifest_file = manifest_file or default_manifest_path(output_files)
    with units.output_folders(output_files, manifest_file):
        return _build(
            input_files,
            output_files,
            settings,
            pipeline_options,
            num_workers,
            manifest_file,
            sort_memory_bytes,
        )


def _build(
    input_files, output_files, settings, pipeline_options, num_workers, manifest_file, sort_memory_bytes
):
    """build, once the outputs' local folders exist."""
    start = time.monotonic()
    files = BeamFiles()
    settings = units.pin_model(settings, files)  # the model's bytes now; fails early, naming it
    removed = units.earlier_shards(manifest_file, output_files, files)  # once this build is published
    inputs = units.input_sizes(input_files, files)
    token = uuid.uuid4().hex[:12]
    temporaries = [f"{path}.tmp-{token}" for path in output_files]
    results_path = f"{manifest_file}.tmp-{token}-results.json"
    arguments = pipeline_arguments(pipeline_options, num_workers)
    local = "--runner=FnApiRunner" in arguments
    try:
        with _quiet_local_workers() if local else contextlib.nullcontext():
            _run_pipeline(
                PipelineOptions(arguments), inputs, settings, temporaries, results_path, sort_memory_bytes
            )
        with files.open_read(results_path) as handle:
            results = json.loads(handle.read())
        manifest = units.publish(
            settings,
            input_files,
            output_files,
            temporaries,
            {shard: records for shard, records, *_ in results["shard_records"]},
            results["statistics"],
            manifest_file,
            files,
            removed,
            key_ranges={shard: (low, high) for shard, _, low, high in results["shard_records"]},
        )
    finally:
        for path in [*temporaries, results_path]:
            files.remove(path)
    return BuildSummary(manifest=manifest, seconds=time.monotonic() - start, removed=removed)
