"""Readers of published weights (torchvision, TF frozen graphs, TF-slim) into Flax trees."""
