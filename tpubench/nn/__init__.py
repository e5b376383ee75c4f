"""The model library any workload may use: layers chosen by config, convolutions, shared blocks."""
