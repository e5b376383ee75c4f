"""Task-level pieces two workloads share: a translation task's prepared data and BLEU."""
