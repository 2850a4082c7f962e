"""`BertTokenizer`: raw text -> WordPiece ids, exactly as Google's or Hugging Face's tokenizer.

Same ids as `tokenization.FullTokenizer` of google-research/bert (`rules="google"`, the
default) or as Hugging Face's `tokenizers` BERT pipeline (`rules="huggingface"`): cleaning,
CJK isolation, optional lower-casing + accent stripping, punctuation splitting, greedy
longest-match-first WordPiece with `##`, `[UNK]` for a word with an unknown piece or over
200 (Google) / 100 (Hugging Face) characters; `keras_bert.text.rules` lists how the two
differ. TensorFlow ops only: it runs in `tf.data`, `tf.function` and SavedModels for TF
Serving.
The vocabulary is embedded in the graph (constants), never read from a file at run time.

Pipeline (see `normalize.py` for the character classes, generated from Python's
`unicodedata`, and the exact `str.lower()`):

1. Rows that are not well-formed UTF-8 go through `UnicodeTranscode` (errors="ignore"):
   the bad bytes are dropped, like the original's `bytes.decode("utf-8", "ignore")`.
   Invalid input never raises.
2. `StaticRegexReplace`: drop NUL, U+FFFD and the rules' control categories.
3. Uncased only: `str.lower()`, `NormalizeUTF8` (NFD), drop category Mn (in the rules' order).
   Steps 1-3 run only on rows that need them: a row of printable ASCII and characters
   that normalisation leaves unchanged is only ASCII-lower-cased (`BertNormalizer`).
4. Split on whitespace (removed) and around every punctuation character and CJK ideograph
   (kept as one-character words). `tokenize` pads non-ASCII punctuation / CJK with
   spaces and turns non-ASCII whitespace into spaces (`StaticRegexReplace`), then lets
   FastWordpiece split on ASCII whitespace and punctuation itself (end-to-end mode);
   `tokenize_with_offsets` splits with `RegexSplitWithOffsets`.
5. Words over 200 / 100 characters become `[UNK]` (`tokenize`: replaced by a control character
   no vocabulary entry equals); `FastWordpieceTokenizeWithOffsets` tokenizes the rest
   against a flatbuffer model built from the vocabulary at construction time (a graph
   constant). Its greedy longest-match-first result is the original's.

Offsets are byte offsets into the ORIGINAL input string (`source_offsets.py`).

Every op in the graphs (all modes, `tokenize`, `tokenize_with_offsets`, `detokenize`):
core TensorFlow -- StaticRegexReplace, StaticRegexFullMatch, StringLower, StringLength,
UnicodeTranscode, UnicodeDecode, UnicodeDecodeWithOffsets, UnicodeEncode,
UnsortedSegmentJoin, LookupTableFindV2 (tables: HashTableV2 + LookupTableImportV2 in the
initializer), LowerBound, UpperBound, DynamicStitch, TensorScatterUpdate, ScatterNd,
Cumsum, Where, SelectV2, GatherV2, StatelessIf (a batch holding code points Python's
Unicode database leaves unassigned splits words with our tables instead of FastWordpiece's)
and shape / arithmetic / logical ops; TF Text --
NormalizeUTF8, RegexSplitWithOffsets (TF Text >= 2.0) and FastWordpieceTokenizeWithOffsets
(TF Text >= 2.9; TF Serving's model server has built it in since it bundled TF Text 2.12).
No `py_function`, no file read at run time.
"""

from __future__ import annotations

import os

import tensorflow as tf
import tensorflow_text as tf_text

from keras_bert.text.normalize import BertNormalizer, regex_split, word_split_patterns
from keras_bert.text.rules import DEFAULT_RULES, tokenizer_rules
from keras_bert.text.source_offsets import source_offsets, value_rowids

# Plain Python with no tensor-dependent control flow: skip AutoGraph (seconds of tracing).
_no_autograph = tf.autograph.experimental.do_not_convert

SPECIAL_TOKENS = {
    "cls": "[CLS]",
    "sep": "[SEP]",
    "pad": "[PAD]",
    "mask": "[MASK]",
    "unk": "[UNK]",
}


def load_vocab(vocab) -> list[str]:
    """The vocabulary as a list indexed by id, read like the original `load_vocab`.

    Args:
      vocab: path of a `vocab.txt` (one token per line, id = line number) or a sequence
        of tokens. Surrounding whitespace of every token is stripped.
    """
    if isinstance(vocab, (str, os.PathLike)):
        with open(vocab, encoding="utf-8") as f:
            lines = f.read().split("\n")
        if lines and lines[-1] == "":
            lines.pop()
    else:
        lines = list(vocab)
    return [str(t).strip() for t in lines]


class BertTokenizer(tf.Module):
    """Graph-safe BERT WordPiece tokenizer with the ids of the original Google tokenizer.

    Args:
      vocab: path of a `vocab.txt`, or a list of tokens (id = position). Read once, in
        Python, when the tokenizer is built; the graph holds it as constants.
      lower_case: `True` for uncased checkpoints (lower-case + strip accents), `False` for
        cased ones (neither).
      rules: `"google"` (Google's `tokenization.py`, what every Google checkpoint was
        pretrained with) or `"huggingface"` (Hugging Face's `tokenizers`); see
        `keras_bert.text.rules`.
      preserve_special_tokens: when `True`, the literal strings `[CLS]`, `[SEP]`, `[PAD]`,
        `[MASK]`, `[UNK]` written in the input are kept as their single special token
        (case-sensitive, matched in the raw input) instead of being split like text
        ("[MASK]" -> "[", "mask", "]") as the original tokenizer does.

    Raises:
      ValueError: the vocabulary is empty or lacks one of the special tokens, or `rules`
        is not one of the two rule sets.

    Token ids are `int32` (what the model's `input_word_ids` takes); offsets are `int64`
    byte offsets into the input strings.
    """

    # The vocabulary as Python containers: nothing for tf.Module's walks (`variables`,
    # `submodules`, and an export's search for resources) to find in them, and ~0.4 s per
    # walk through a 30,522-token vocabulary, element by element.
    _TF_MODULE_IGNORED_PROPERTIES = tf.Module._TF_MODULE_IGNORED_PROPERTIES | frozenset(
        ("_tokens", "_index", "_special_ids"))

    def __init__(self, vocab, lower_case: bool = True, preserve_special_tokens: bool = False,
                 rules: str = DEFAULT_RULES, name: str | None = None):
        super().__init__(name=name)
        self._rules = tokenizer_rules(rules)
        tokens = load_vocab(vocab)
        if not tokens:
            raise ValueError("The vocabulary is empty.")
        index = {}
        for i, token in enumerate(tokens):
            index[token] = i  # like the original, a repeated token keeps its last id
        missing = [t for t in SPECIAL_TOKENS.values() if t not in index]
        if missing:
            raise ValueError(
                f"The vocabulary lacks the special token(s) {', '.join(missing)}; a BERT "
                "vocabulary needs [CLS], [SEP], [PAD], [MASK] and [UNK].")
        self.lower_case = bool(lower_case)
        self.preserve_special_tokens = bool(preserve_special_tokens)
        # Set past tf.Module's `__setattr__`, which would wrap the list and the dict in
        # trackable containers element by element (1.2 s of a 1.6 s build for 30,522 tokens).
        object.__setattr__(self, "_tokens", tokens)
        object.__setattr__(self, "_index", index)
        object.__setattr__(self, "_special_ids",
                           {k: index[v] for k, v in SPECIAL_TOKENS.items()})
        self.normalizer = BertNormalizer(self.lower_case, self._rules.name)
        patterns = word_split_patterns(self._rules.name)
        self._split_pattern = patterns["split"]
        self._keep_pattern = patterns["keep"]
        # Without offsets, words are split by FastWordpiece itself (end-to-end mode), after
        # padding non-ASCII punctuation / CJK with spaces and turning non-ASCII whitespace
        # into spaces, so that only ASCII rules are left to its own character tables.
        self._pad_nonascii = patterns["pad_nonascii"]
        self._any_unassigned = f"(?s).*{patterns['unassigned']}.*"
        self._special_pattern = "|".join(
            t.replace("[", "\\[").replace("]", "\\]") for t in SPECIAL_TOKENS.values())
        # Earlier copies of a repeated token (and empty lines) must never match: replace
        # them by a string that cannot occur in a cleaned word (it holds a C0 control).
        unique = [t if index[t] == i and t else f"\x01{i}" for i, t in enumerate(tokens)]
        max_chars = self._rules.max_chars_per_word
        self._wordpiece = _fast_wordpiece(unique, True, max_chars)
        self._wordpiece_e2e = _fast_wordpiece(unique, False, max_chars)
        # A word of more than max_chars_per_word characters (a run of characters that are
        # not ASCII whitespace or punctuation, once the rest is padded) is replaced by a
        # control character before end-to-end WordPiece: a one-character word that no
        # vocabulary entry matches, hence one [UNK], as the original gives.
        self._long_word = f"{patterns['word_char_padded']}{{{max_chars + 1},}}"
        stand_ins = [chr(c) for c in range(1, 9) if chr(c) not in index]
        if not stand_ins:
            raise ValueError("The vocabulary holds each of the control characters U+0001 to "
                             "U+0008 as a token; BertTokenizer needs one that is not a token.")
        self._long_word_stand_in = stand_ins[0]
        self._vocab_strings = tf.constant(tokens, tf.string)
        self._token_table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(list(index.keys()), tf.string),
                tf.constant(list(index.values()), tf.int32)),
            default_value=-1)

    # ------------------------------------------------------------------ properties
    @property
    def rules(self) -> str:
        """The name of the rule set: `google` or `huggingface`."""
        return self._rules.name

    @property
    def vocab_size(self) -> int:
        """Number of ids (lines of the vocabulary); the embedding table's row count."""
        return len(self._tokens)

    @property
    def vocab(self) -> list[str]:
        """The vocabulary, indexed by id (a copy)."""
        return list(self._tokens)

    @property
    def special_token_ids(self) -> dict[str, int]:
        """Ids of the special tokens: keys `cls`, `sep`, `pad`, `mask`, `unk`."""
        return dict(self._special_ids)

    @property
    def cls_id(self) -> int:
        """Id of `[CLS]`."""
        return self._special_ids["cls"]

    @property
    def sep_id(self) -> int:
        """Id of `[SEP]`."""
        return self._special_ids["sep"]

    @property
    def pad_id(self) -> int:
        """Id of `[PAD]`."""
        return self._special_ids["pad"]

    @property
    def mask_id(self) -> int:
        """Id of `[MASK]`."""
        return self._special_ids["mask"]

    @property
    def unk_id(self) -> int:
        """Id of `[UNK]`."""
        return self._special_ids["unk"]

    # ------------------------------------------------------------------ tokenizing
    @_no_autograph
    def tokenize(self, strings) -> tf.RaggedTensor:
        """WordPiece ids of UTF-8 strings.

        Args:
          strings: a string tensor (or anything convertible) of any rank, typically a
            batch `[batch]`.

        Returns:
          `int32` ids shaped like `strings` plus one ragged dimension: a `RaggedTensor`
          `[batch, (tokens)]` for a batch; a 1-D `Tensor` for a scalar string.
        """
        strings = tf.convert_to_tensor(strings, tf.string)
        ids, splits, _, _ = self._tokenize_flat(tf.reshape(strings, [-1]), with_offsets=False)
        return _restore_shape(ids, splits, strings)

    @_no_autograph
    def tokenize_with_offsets(self, strings):
        """WordPiece ids with the byte span of each piece in the ORIGINAL strings.

        Args:
          strings: a string tensor of any rank, as for `tokenize`.

        Returns:
          `(ids, starts, ends)`: `int32` ids and `int64` byte offsets, each shaped like
          `tokenize`'s result; `strings[i][starts[i][j]:ends[i][j]]` is the input text that
          produced wordpiece `j` (for a `##` piece, without the `##`; for `[UNK]`, the
          whole word; for a piece that begins or ends inside what one input character
          became after normalisation, that whole character).
        """
        strings = tf.convert_to_tensor(strings, tf.string)
        ids, splits, starts, ends = self._tokenize_flat(
            tf.reshape(strings, [-1]), with_offsets=True)
        return tuple(_restore_shape(v, splits, strings) for v in (ids, starts, ends))

    @_no_autograph
    def __call__(self, strings) -> tf.RaggedTensor:
        """Same as `tokenize`."""
        return self.tokenize(strings)

    @_no_autograph
    def id_to_token(self, ids):
        """Token strings of `ids` (a `Tensor` or `RaggedTensor` of ints)."""
        if isinstance(ids, tf.RaggedTensor):
            return tf.ragged.map_flat_values(self.id_to_token, ids)
        return tf.gather(self._vocab_strings, tf.cast(ids, tf.int32))

    @_no_autograph
    def token_to_id(self, tokens):
        """Ids of whole vocabulary entries (`[UNK]`'s id for strings not in it)."""
        if isinstance(tokens, tf.RaggedTensor):
            return tf.ragged.map_flat_values(self.token_to_id, tokens)
        found = self._token_table.lookup(tf.convert_to_tensor(tokens, tf.string))
        return tf.where(found >= 0, found, self.unk_id)

    @_no_autograph
    def detokenize(self, ids) -> tf.Tensor:
        """Readable text of ids `[batch, (tokens)]`: pieces joined, `##` continuations glued.

        This is the usual BERT decoding (lower-cased, accents and spacing around
        punctuation not restored), not an inverse of `tokenize`.
        """
        tokens = self.id_to_token(ids)
        text = tf.strings.reduce_join(tokens, axis=-1, separator=" ")
        return tf.strings.regex_replace(text, " ##", "")

    # ------------------------------------------------------------------ internals
    # Internally a ragged result is kept as flat `values` plus int64 `row_splits`, which
    # keeps the graph small (no ragged validation or ragged concat machinery).
    def _tokenize_flat(self, strings, with_offsets: bool):
        """Tokenizes a 1-D string tensor: `(ids, row_splits, starts, ends)`, flat."""
        if not self.preserve_special_tokens:
            return self._tokenize_segments(strings, with_offsets)
        # Cut the literal special tokens out of the raw input; every other segment goes
        # through the normal pipeline, every special one becomes its id.
        # (RegexSplitWithOffsets ends a string at NUL: put U+0001, also dropped, instead.)
        flat, seg_base, _, seg_splits = regex_split(
            tf.strings.regex_replace(strings, "\\x00", "\x01"), self._special_pattern,
            self._special_pattern)
        is_special = tf.strings.regex_full_match(flat, self._special_pattern)
        text = tf.where(is_special, "", flat)
        ids, splits, starts, ends = self._tokenize_segments(text, with_offsets)
        special_rows = tf.where(is_special)[:, 0]
        # Row lengths with one token added to each special segment (which had none).
        lengths = splits[1:] - splits[:-1] + tf.cast(is_special, tf.int64)
        new_splits = tf.concat([tf.zeros([1], tf.int64), tf.cumsum(lengths)], 0)
        n_values = tf.size(ids, out_type=tf.int64)
        value_rows = value_rowids(splits, n_values)
        dest = (tf.gather(new_splits, value_rows) + tf.range(n_values)
                - tf.gather(splits, value_rows))
        special_dest = tf.gather(new_splits, special_rows)
        indices = [tf.cast(dest, tf.int32), tf.cast(special_dest, tf.int32)]

        def stitch(values, special_values):
            return tf.dynamic_stitch(indices, [values, special_values])

        special_ids = tf.gather(self._token_table.lookup(flat), special_rows)
        out_ids = stitch(ids, special_ids)
        out_splits = tf.gather(new_splits, seg_splits)
        if not with_offsets:
            return out_ids, out_splits, None, None
        starts = starts + tf.gather(seg_base, value_rows)
        ends = ends + tf.gather(seg_base, value_rows)
        special_start = tf.gather(seg_base, special_rows)
        special_end = special_start + tf.gather(
            tf.cast(tf.strings.length(flat), tf.int64), special_rows)
        return out_ids, out_splits, stitch(starts, special_start), stitch(ends, special_end)

    def _tokenize_segments(self, strings, with_offsets: bool):
        """The original pipeline on a 1-D string tensor (no special-token handling)."""
        normalized = self.normalizer(strings)
        if not with_offsets:
            # FastWordpiece splits words with ICU's punctuation table, which may know
            # characters that this Python's Unicode database calls unassigned (both rule
            # sets keep those): a batch holding any splits words with our own tables.
            has_unassigned = tf.reduce_any(
                tf.strings.regex_full_match(normalized, self._any_unassigned))
            return (*tf.cond(has_unassigned,
                             lambda: self._split_then_wordpiece(normalized)[:2],
                             lambda: self._end_to_end_wordpiece(normalized)), None, None)
        ids, splits, words, word_starts, too_long, piece_starts, piece_ends = (
            self._split_then_wordpiece(normalized))
        # Normalised byte offsets of each piece within its row.
        word_of_piece = value_rowids(piece_starts.row_splits, tf.size(ids, out_type=tf.int64))
        long_piece = tf.gather(too_long, word_of_piece)
        orig_word_len = tf.cast(tf.strings.length(words), tf.int64)
        piece_ends = tf.where(long_piece, tf.gather(orig_word_len, word_of_piece),
                              piece_ends.values)
        base = tf.gather(word_starts, word_of_piece)
        norm_starts = base + piece_starts.values
        norm_ends = base + piece_ends
        row_of_piece = value_rowids(splits, tf.size(ids, out_type=tf.int64))
        starts, ends = source_offsets(self.normalizer, strings, row_of_piece, norm_starts,
                                      norm_ends)
        return ids, splits, starts, ends

    def _end_to_end_wordpiece(self, normalized):
        """`(ids, row_splits)`: FastWordpiece splits the padded text into words itself."""
        padded = tf.strings.regex_replace(normalized, self._pad_nonascii, r" \1 ")
        padded = tf.strings.regex_replace(padded, self._long_word, self._long_word_stand_in)
        pieces = self._wordpiece_e2e.tokenize(padded)
        return pieces.values, tf.cast(pieces.row_splits, tf.int64)

    def _split_then_wordpiece(self, normalized):
        """Words split by `RegexSplitWithOffsets` (our tables), then WordPiece: `(ids,
        row_splits, words, word_starts, too_long, piece_starts, piece_ends)`."""
        words, word_starts, _, word_splits = regex_split(
            normalized, self._split_pattern, self._keep_pattern)
        too_long = tf.strings.length(words, unit="UTF8_CHAR") > self._rules.max_chars_per_word
        pieces, piece_starts, piece_ends = self._wordpiece.tokenize_with_offsets(
            tf.where(too_long, SPECIAL_TOKENS["unk"], words))
        splits = tf.gather(tf.cast(pieces.row_splits, tf.int64), word_splits)
        return pieces.values, splits, words, word_starts, too_long, piece_starts, piece_ends


def _fast_wordpiece(vocab: list[str], no_pretokenization: bool, max_chars: int):
    """TF Text's FastWordpieceTokenizer over `vocab` with BERT's settings: `##` suffixes,
    `[UNK]` for a word it cannot split, int32 ids. With `no_pretokenization=False` it also
    splits words on whitespace and punctuation (BERT's rules, in its own character tables)."""
    return tf_text.FastWordpieceTokenizer(
        vocab=vocab, suffix_indicator="##", max_bytes_per_word=4 * max_chars,
        token_out_type=tf.int32, unknown_token=SPECIAL_TOKENS["unk"],
        no_pretokenization=no_pretokenization, support_detokenization=False)


def _restore_shape(values, row_splits, strings):
    """Builds `[n, (t)]` from flat results and nests it like `strings` (+ a ragged axis)."""
    if values is None:
        return None
    rt = tf.RaggedTensor.from_row_splits(values, row_splits, validate=False)
    if strings.shape.rank == 0:
        return values
    if strings.shape.rank == 1:
        return rt
    for dim in reversed(tf.unstack(tf.shape(strings, out_type=tf.int64)[1:])):
        rt = tf.RaggedTensor.from_uniform_row_length(rt, dim, validate=False)
    return rt
