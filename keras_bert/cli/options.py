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
