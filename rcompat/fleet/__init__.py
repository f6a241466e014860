"""The doctor on every node of a cluster, and which nodes differ from the rest.

`runner` runs the doctor on each node through Slurm's srun and collects one report per node; `reader`
and `aggregate` read any set of reports (from Slurm, a Kubernetes DaemonSet, Ansible, a shared disk)
into a cross-node view in bounded memory; `view` turns that view into a Report of fleet findings;
`health` is the fast check Slurm runs as HealthCheckProgram; `hostlist` writes node sets as Slurm's
ranges (`n[1-16,18]`). See docs/fleet.md.
"""
