"""Measuring programs: tower and input throughput, traffic, memory, the cluster paper model.

Nothing in the library (`towers`, `model_fn`, `input_fn`) imports from here."""
