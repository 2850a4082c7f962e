"""Command-line options that several subcommands share."""

from __future__ import annotations

# The names of keras_bert.text.rules.RULES (not imported here: `--help` stays import-free;
# tests/test_cli_text.py checks that they agree).
RULES_NAMES = ("google", "huggingface")


def add_rules_argument(p, default_source: str = "the model's own") -> None:
    """`--rules google|huggingface`: the tokenizer rules (`keras_bert.text.rules`)."""
    p.add_argument("--rules", choices=RULES_NAMES, default=None,
                   help="tokenizer rules: google (Google's tokenization.py: drops control "
                        "and format characters, [UNK] over 200 characters) or huggingface "
                        "(Hugging Face's tokenizers: also drops private-use characters, "
                        f"[UNK] over 100); default: {default_source}")


def add_checkpoint_arguments(p) -> None:
    """`--checkpoint-steps` / `--checkpoint-minutes`: how often a training job saves the
    state it resumes from when the same command is run again after a kill."""
    p.add_argument("--checkpoint-steps", type=int,
                   help="also checkpoint every N steps (default: only by time and at epoch "
                        "ends)")
    p.add_argument("--checkpoint-minutes", type=float, default=10.0,
                   help="checkpoint after the first step that ends this many minutes after "
                        "the last checkpoint (default 10); a killed run started again with "
                        "the same command resumes from its last checkpoint")
