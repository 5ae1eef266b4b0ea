"""The cluster runtime: roles from flags, TF_CONFIG or SLURM (`spec`), one runner per role
(`base_runner`, `runners`, `evaluator`), and a whole cluster on one machine (`local_cluster`)."""
