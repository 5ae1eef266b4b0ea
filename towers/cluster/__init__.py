"""The cluster runtime: roles from flags, TF_CONFIG or SLURM (`spec`), one runner per role
(`base_runner`, `runners`, `evaluator`), the GPUs each role sees (`gpus`), a worker's wait
for the chief (`model_ready`), reading variables off the ps tasks (`ps_variables`), how the
tasks end together (`shutdown`, `time_limit`, `watchdog`), and a whole cluster on one machine
(`local_cluster`)."""
