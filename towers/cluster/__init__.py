"""The cluster runtime: roles from flags, TF_CONFIG or SLURM (`spec`), one task's server and
training (`runner`), and a whole cluster on one machine (`local_cluster`)."""
