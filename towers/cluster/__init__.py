"""The cluster runtime: roles from flags or TF_CONFIG (`spec`), one runner per role
(`base_runner`, `runners`, `evaluator`), the GPUs each role sees (`gpus`), a worker's wait
for the chief (`model_ready`), reading variables off the ps tasks (`ps_variables`), how the
tasks end together (`shutdown`, `time_limit`, `watchdog`), the supervisor policy
(`supervision`), one Slurm node's processes (`node`), and a whole cluster on one machine
(`local_cluster`)."""
