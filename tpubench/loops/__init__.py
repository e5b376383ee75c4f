"""Running a workload: the run lifecycle, the supervised and self-play loops, steps and engines."""
