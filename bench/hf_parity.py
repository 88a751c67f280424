r"""A model directory written for Hugging Face (`convert_checkpoint --target=hf`) and loaded by transformers:
does it compute what our model computes?

    pip install torch transformers        # not in the test extra: CI does not need them
    python -m albert_tf.run_pretraining --flagfile=tiny   # or any model directory
    python bench/hf_parity.py --model_dir=runs/tiny

Converts --model_dir with `albert_tf.checkpoints.convert.to_hf` into a temporary directory, loads it with
`transformers.AlbertForPreTraining.from_pretrained`, and runs both models in float32 on the same batch:
sentence pairs of the sample corpus, tokenized by our tokenizer, packed to --seq_length, with masked-LM
positions. Prints the versions and the largest absolute difference of each output (sequence, pooled,
masked-LM logits at the positions, sentence-order logits); exits 1 when one exceeds --atol.

It also tokenizes the same lines with transformers' `AlbertTokenizer` on the directory's spiece.model and
prints how many differ from ours (transformers 5 drops the original's digit-comma rule: "1,000").
"""

import argparse
import os
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE_CORPUS = os.path.join(ROOT, "data", "sample", "sample_corpus.txt")


def sample_lines(count):
    with open(SAMPLE_CORPUS, encoding="utf-8") as file:
        lines = [line.strip() for line in file if line.strip()]
    return lines[: 2 * count]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--model_dir", default=os.path.join(ROOT, "runs", "tiny"))
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--seq_length", type=int, default=64)
    parser.add_argument("--predictions", type=int, default=5)
    parser.add_argument("--tokenizer_lines", type=int, default=2000)
    parser.add_argument("--atol", type=float, default=1e-5)
    args = parser.parse_args()

    import torch
    import transformers

    from albert_tf import model_files
    from albert_tf.checkpoints import convert
    from albert_tf.models import model_dir
    from albert_tf.text.tokenizer import AlbertTokenizer

    ours = model_dir.load_pretrainer(args.model_dir)
    tokenizer = AlbertTokenizer(model_files.spm_model_file(args.model_dir))
    lines = sample_lines(args.batch_size)
    packed = [
        tokenizer.pack(a, b, seq_length=args.seq_length)
        for a, b in zip(lines[0::2], lines[1::2], strict=True)
    ]
    inputs = {
        name: np.array([getattr(p, name) for p in packed], np.int32)
        for name in ("input_word_ids", "input_mask", "input_type_ids")
    }
    rng = np.random.default_rng(0)
    lengths = inputs["input_mask"].sum(1)
    positions = np.stack([np.sort(rng.choice(n, args.predictions, replace=False)) for n in lengths])
    inputs["masked_lm_positions"] = positions.astype(np.int32)

    with tempfile.TemporaryDirectory() as folder:
        hf_dir = os.path.join(folder, "hf")
        convert.to_hf(args.model_dir, hf_dir)
        theirs = transformers.AlbertForPreTraining.from_pretrained(hf_dir).eval()
        hf_tokenizer = transformers.AlbertTokenizer.from_pretrained(hf_dir)

    ours_out = ours(inputs, training=False)
    encoded = ours.encoder(
        {name: inputs[name] for name in ("input_word_ids", "input_mask", "input_type_ids")}, training=False
    )
    torch_inputs = dict(
        input_ids=torch.tensor(inputs["input_word_ids"], dtype=torch.long),
        attention_mask=torch.tensor(inputs["input_mask"], dtype=torch.long),
        token_type_ids=torch.tensor(inputs["input_type_ids"], dtype=torch.long),
    )
    with torch.no_grad():
        backbone = theirs.albert(**torch_inputs)
        heads = theirs(**torch_inputs)
    rows = np.arange(len(positions))[:, None]
    pairs = {
        "sequence_output": (encoded["sequence_output"], backbone.last_hidden_state.numpy()),
        "pooled_output": (encoded["pooled_output"], backbone.pooler_output.numpy()),
        "mlm_logits": (ours_out["mlm_logits"], heads.prediction_logits.numpy()[rows, positions]),
        "sop_logits": (ours_out["sop_logits"], heads.sop_logits.numpy()),
    }
    print(
        f"transformers {transformers.__version__}, torch {torch.__version__}; {args.model_dir}: "
        f"batch {len(packed)} x seq {args.seq_length}, float32"
    )
    worst = 0.0
    for name, (a, b) in pairs.items():
        difference = float(np.max(np.abs(np.asarray(a, np.float64) - b)))
        worst = max(worst, difference)
        print(f"  {name:16s} max |ours - transformers| = {difference:.2e}")

    texts = sample_lines(args.tokenizer_lines // 2 + 1)[: args.tokenizer_lines]
    differing = [t for t in texts if hf_tokenizer.encode(t, add_special_tokens=False) != tokenizer.encode(t)]
    print(f"tokenizers: {len(differing)} of {len(texts)} sample lines get other ids from transformers'")
    for text in differing[:3]:
        print(f"  {text[:90]!r}")
    example = "In 1990, 1,000 people"
    print(f"  {example!r}: ours {tokenizer.tokenize(example)}, transformers {hf_tokenizer.tokenize(example)}")
    sys.exit(0 if worst <= args.atol else 1)


if __name__ == "__main__":
    main()
