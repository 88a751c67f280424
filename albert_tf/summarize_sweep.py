"""Gathers a fine-tuning sweep's summary once every run has ended, or says which runs have not.

    python -m albert_tf.summarize_sweep --output_dir=runs/sweep

A sweep's processes (run_classifier, run_race or run_squad given several values of --seed or the grid's
flags, split by --sweep_task_index) write the summary themselves when the last run ends; this writes it when
they are gone (one was stopped, or its storage was not shared in time). It prints the table the sweep
prints (per setting: the median, mean, standard deviation, min and max of the first dev metric over the
seeds, and the failed runs named) and writes summary.json and sweep.png into --output_dir; with runs that
have not ended it names them, writes nothing and exits with 1. See albert_tf/finetuning/sweep_summary.py.
"""

import sys

from absl import app, flags

from albert_tf import file_io, tf_startup
from albert_tf.finetuning import sweep_summary

FLAGS = flags.FLAGS
flags.DEFINE_string("output_dir", None, "The sweep's --output_dir (it holds sweep.json).")
flags.mark_flag_as_required("output_dir")


def main(argv):
    del argv
    tf_startup.import_tensorflow_quietly_for([FLAGS.output_dir])
    try:
        summary, missing = sweep_summary.gather(FLAGS.output_dir)
        if summary is None:
            shown = "".join(f"\n    {folder}" for folder in missing[:20])
            more = f"\n    ... ({len(missing) - 20} more)" if len(missing) > 20 else ""
            total = len(sweep_summary.read_plan(FLAGS.output_dir)["runs"])
            print(f"summarize_sweep: {len(missing)} of {total} runs have not ended:{shown}{more}\n"
                  "start the sweep's command again (each process with its --sweep_task_index) to run them",
                  file=sys.stderr)  # fmt: skip
            return 1
        lines = sweep_summary.write(FLAGS.output_dir, summary)
    except (ValueError, FileNotFoundError, file_io.DiskFullError) as error:
        print(f"summarize_sweep: error: {error}", file=sys.stderr)
        return 1
    for line in lines:
        print(f"summarize_sweep: {line}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    app.run(main)
