"""The deploy's engine: a host's state read once (state), each operation decided once into a Change (change, ops),
rehearsed and turned into pyinfra operations (converge), written down for `clusterforge plan` (planning), timed
(profile). The steps in clusterforge.roles reach hosts only through it."""
