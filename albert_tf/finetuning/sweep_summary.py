"""A fine-tuning sweep's summary (albert_tf/finetuning/sweep.py): per setting, each dev metric's median,
mean, standard deviation, min and max over its seeds, and its failed runs named; the setting with the
highest median of the first metric, and that setting's best run, which the sweep's folder stands for as a
model directory (model_files.resolve: export_saved_model, export_litert, from_model_dir, --model_dir).

A run's figures are its eval_results.json: the evaluation at its last step, whose weights its folder keeps
(a sweep's runs end with their last step's, not their best evaluation's: the best of several evaluations of
one run would flatter the settings that evaluate more often or train longer).

A run failed when
- it stopped (engine.DivergenceError: a loss that is not finite, collapses no rollback mended),
- its last evaluation is a collapse (the guard's, when the run did not roll back) or not a finite number,
- its first metric ended at or below the constant prediction: the best dev score any one answer given to
  every example gets (each label; a regression's mean score; for SQuAD, no answer), which sweep.json
  records.
A run with no usable score (stopped, or not finite) counts at the constant prediction in its setting's
figures, so that a setting cannot look better by losing its bad seeds. Nothing here needs TensorFlow (on a
local disk).
"""

import io
import json
import math
import statistics

from albert_tf import file_io, model_files

RUN_FILE = "run.json"  # in a run's folder once it has ended: its values, shared settings, why it stopped
EVAL_FILE = "eval_results.json"  # the run's last evaluation
PLOT_FILE = "sweep.png"
FIGURES = ("median", "mean", "std", "min", "max")


def read_plan(output_dir):
    """sweep.json of output_dir; ValueError naming it when it is not a sweep's plan."""
    path = file_io.join(output_dir, model_files.SWEEP_FILE)
    try:
        plan = json.loads(file_io.read_text(path))
        if not all(key in plan for key in ("command", "shared", "runs", "metrics", "baseline")):
            raise ValueError("keys missing")
    except FileNotFoundError:
        raise FileNotFoundError(f"{output_dir} holds no sweep ({model_files.SWEEP_FILE})") from None
    except ValueError as error:
        raise ValueError(f"{path}: not a sweep's plan ({error})") from None
    return plan


def gather(output_dir):
    """(the summary, []) once every run of the plan has ended, else (None, the folders of those that have
    not)."""
    plan = read_plan(output_dir)
    missing = [run["run"] for run in plan["runs"] if not _exists(output_dir, run["run"], RUN_FILE)]
    if missing:
        return None, missing
    return summarize(output_dir, plan), []


def summarize(output_dir, plan):
    """The summary of a sweep whose runs have all ended (see the module docstring), JSON-ready:
    {"command", "metric", "baseline", "settings": [per setting: its values, "runs" (seed, folder, metrics,
    "failed": why or null), "failed" (count), "figures" {metric: {median, mean, std, min, max}}],
    "chosen": {"setting", "run", "seed", metric, "why"} or None when every run failed}."""
    metric, baseline = plan["metrics"][0], plan["baseline"]
    settings = {}
    for run in plan["runs"]:
        entry = settings.setdefault(
            run["setting"],
            {
                "setting": run["setting"],
                **{name: run[name] for name in ("learning_rate", "train_batch_size", "train_step")},
                "runs": [],
            },
        )
        entry["runs"].append(_run_result(output_dir, plan, run, metric))
    for entry in settings.values():
        entry["failed"] = sum(run["failed"] is not None for run in entry["runs"])
        entry["figures"] = {name: _figures([run[name] for run in entry["runs"]]) for name in plan["metrics"]}
    return {
        "command": plan["command"],
        "metric": metric,
        "baseline": baseline,
        "settings": list(settings.values()),
        "chosen": _choose(list(settings.values()), metric),
    }


def _run_result(output_dir, plan, run, metric):
    """A run's seed, folder, dev metrics (the constant prediction's where it has none) and why it failed
    (None: it did not)."""
    names, baseline = plan["metrics"], plan["baseline"]
    folder = file_io.join(output_dir, run["run"])
    ended = json.loads(file_io.read_text(file_io.join(folder, RUN_FILE)))
    if ended.get("shared") != plan["shared"]:
        raise ValueError(
            f"{folder}: trained with other shared settings than {model_files.SWEEP_FILE}'s (another process "
            "started with other flags?): its results do not compare; delete the folder to run it again"
        )
    result = {"seed": run["seed"], "run": run["run"]}
    if ended.get("stopped"):
        return {**result, **baseline, "failed": f"stopped: {ended['stopped']}"}
    path = file_io.join(folder, EVAL_FILE)
    try:
        results = json.loads(file_io.read_text(path))
        values = {name: float(results[name]) for name in names}
    except (FileNotFoundError, ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{path}: the run ended without its dev results ({error!r})") from None
    if not all(math.isfinite(value) for value in values.values()):
        return {**result, **baseline, "failed": f"its dev results are not numbers: {values}"}
    failed = None
    if results.get("collapse"):
        failed = f"its last evaluation collapsed: {results['collapse']}"
    elif values[metric] <= baseline[metric]:
        failed = (
            f"{metric} {values[metric]:.4f} is not above the constant prediction's {baseline[metric]:.4f}"
        )
    return {**result, **values, "failed": failed}


def _figures(values):
    return {
        "median": statistics.median(values),
        "mean": statistics.fmean(values),
        "std": statistics.stdev(values) if len(values) > 1 else 0.0,  # the sample's (n - 1)
        "min": min(values),
        "max": max(values),
    }


def _choose(settings, metric):
    """Among the settings with a run that did not fail: the one of the highest median (then mean, then
    fewest failed, then the first in plan order), and its best such run; None when every run failed."""

    def rank(indexed):
        index, entry = indexed
        figures = entry["figures"][metric]
        return (figures["median"], figures["mean"], -entry["failed"], -index)

    candidates = [
        (index, entry) for index, entry in enumerate(settings) if entry["failed"] < len(entry["runs"])
    ]
    if not candidates:
        return None
    _, best = max(candidates, key=rank)
    run = max((run for run in best["runs"] if run["failed"] is None), key=lambda run: run[metric])
    median, seeds = best["figures"][metric]["median"], len(best["runs"])
    why = (
        f"the setting of the highest median {metric} ({best['setting']}: {median:.4f} over {seeds} seeds, "
        f"{best['failed']} failed); seed {run['seed']} is its best run ({metric} {run[metric]:.4f})"
    )
    return {
        "setting": best["setting"],
        "run": run["run"],
        "seed": run["seed"],
        metric: run[metric],
        "why": why,
    }


def table(summary):
    """The summary as the log shows it: a line per setting, its figures of the first metric, its failed
    runs named below it."""
    metric, chosen = summary["metric"], summary["chosen"]
    width = max(len("setting"), *(len(entry["setting"]) for entry in summary["settings"]))
    lines = [
        f"{'setting':<{width}}  seeds  failed  "
        + "  ".join(f"{name:>7}" for name in FIGURES)
        + f"   ({metric}; constant prediction {summary['baseline'][metric]:.4f})"
    ]
    for entry in summary["settings"]:
        figures = entry["figures"][metric]
        mark = "  <- chosen" if chosen and chosen["setting"] == entry["setting"] else ""
        lines.append(
            f"{entry['setting']:<{width}}  {len(entry['runs']):>5}  {entry['failed']:>6}  "
            + "  ".join(f"{figures[name]:>7.4f}" for name in FIGURES)
            + mark
        )
        lines += [f"    failed: {run['run']}: {run['failed']}" for run in entry["runs"] if run["failed"]]
    if chosen:
        lines.append(f"chosen: {chosen['run']}: {chosen['why']}")
    else:
        lines.append("chosen: none: every run failed")
    return lines


def write(output_dir, summary):
    """Writes summary.json and the plot (sweep.png, when matplotlib is installed) into output_dir, whole or
    not at all; returns the lines that say what the sweep found and where it went."""
    path = file_io.join(output_dir, model_files.SUMMARY_FILE)
    file_io.write_atomically(path, (json.dumps(summary, indent=2) + "\n").encode())
    lines = [*table(summary), f"summary: {path}"]
    try:
        image = plot(summary)
    except ImportError:
        lines.append(f'no {PLOT_FILE}: matplotlib is not installed (pip install "albert_tf[plot]")')
    else:
        plot_path = file_io.join(output_dir, PLOT_FILE)
        file_io.write_atomically(plot_path, image)
        lines.append(f"plot: {plot_path}")
    return lines


def plot(summary):
    """PNG bytes: the first metric of each run by setting, a colour per seed, failed runs as crosses, each
    setting's median as a bar and the constant-prediction baseline as a dashed line. ImportError without
    matplotlib."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    metric, settings = summary["metric"], summary["settings"]
    seeds = sorted({run["seed"] for entry in settings for run in entry["runs"]})
    figure, axis = pyplot.subplots(figsize=(max(5.5, 1.1 * len(settings) + 3.5), 3.8))
    for x, entry in enumerate(settings):
        for run in entry["runs"]:
            at = seeds.index(run["seed"])
            offset = 0.25 * (at - (len(seeds) - 1) / 2) / max(len(seeds) - 1, 1)
            marker = "x" if run["failed"] else "o"
            axis.plot(x + offset, run[metric], marker, color=f"C{at % 10}", markersize=6)
        axis.hlines(entry["figures"][metric]["median"], x - 0.3, x + 0.3, color="black", linewidth=1.5)
    for at, seed in enumerate(seeds):  # the legend's entries, drawn empty
        axis.plot([], [], "o", color=f"C{at % 10}", label=f"seed {seed}")
    axis.plot([], [], "x", color="grey", label="failed")
    axis.plot([], [], "_", color="black", markersize=12, label="median")
    axis.axhline(
        summary["baseline"][metric], color="grey", linestyle="--", linewidth=0.8, label="constant prediction"
    )
    chosen = summary["chosen"]["setting"] if summary["chosen"] else None
    names = [entry["setting"] + (" (chosen)" if entry["setting"] == chosen else "") for entry in settings]
    axis.set_xticks(range(len(settings)), names, rotation=20, ha="right", fontsize=8)
    axis.set_xlim(-0.6, len(settings) - 0.4)
    axis.set_ylabel(f"dev {metric}")
    axis.set_title(f"{summary['command']}: dev {metric} by setting and seed", fontsize=10)
    axis.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    pyplot.close(figure)
    return buffer.getvalue()


def _exists(output_dir, folder, name):
    return file_io.exists(file_io.join(output_dir, folder, name))


def remove_summary(output_dir):
    """Removes the summary and plot of an earlier plan, so that nothing reads them as this one's."""
    for name in (model_files.SUMMARY_FILE, PLOT_FILE):
        file_io.remove(file_io.join(output_dir, name))
