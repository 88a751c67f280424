"""Fine-tuning: task data, one task per task model (what the training engine trains), and the metrics.

Data: glue (GLUE TSV, CSV/JSONL text classification), squad (SQuAD JSON → windowed features, answer
text), race (RACE JSON), read without TensorFlow (the functions that make batches, SQuAD windows and
answers import it); answers decode with text.span_decoding, as the span export's do. settings.py holds the
commands' settings; task_data.py what a run reads and checks before TensorFlow starts (the model
directory's tokenizer and config, the splits); task.py what every task shares (the engine's side, `run`);
classifier.py (`run_classifier`), span.py (`run_squad`) and multiple_choice.py (`run_race`) are the tasks,
named like the models they train and the export's --task; command_line.py holds their common flags;
metrics.py the GLUE and SQuAD metrics.

May import: text, training, models, layers and the top-level modules.
"""
