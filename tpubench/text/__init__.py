"""Text shared by workloads: vocabularies and tokenizers, their ids, BLEU on prepared data."""
