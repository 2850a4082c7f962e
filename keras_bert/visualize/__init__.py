"""Pictures of a model: attention heat maps (`keras_bert.visualize.attention_maps`)."""

from keras_bert.visualize.attention_maps import plot_attention, text_attention

__all__ = ["plot_attention", "text_attention"]
