"""The hardware side: chips, topologies, hosts, multi-process start-up, caches, fit and
performance."""
