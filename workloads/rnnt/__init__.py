"""RNN-T speech recognition (MLPerf Inference v0.7 `rnnt`), with a trainable mini."""
