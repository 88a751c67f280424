"""Fine-tuning: task data, the shared loop, one run per task model, and the metrics.

Data: glue (GLUE TSV, CSV/JSONL text classification), squad (SQuAD JSON → windowed features, answer
text), race (RACE JSON). span_decoding: start and end logits → the best span (also used by serving's span
export). The loop (loop.py) is shared by
classifier.py (`run_classifier`), span.py (`run_squad`) and multiple_choice.py (`run_race`), named like
the models they train and the export's --task; command_line.py holds their common flags; metrics.py the
GLUE and SQuAD metrics.

May import: text, training, models, layers and the top-level modules.
"""
