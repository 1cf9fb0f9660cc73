"""The deploy as it ships in the package: `order.py` the steps in order and the run's checks before them,
`cluster.py` the file pyinfra runs (`clusterforge apply` and `plan` give it to pyinfra by its path)."""
