"""pyinfra's config file for the runs of pyinfra that clusterforge's commands start (`--config`, which replaces a
config.py in the working directory): it only attaches the events those commands read (events.py). pyinfra runs it
with its State made, before the inventory is loaded."""

from pyinfra.context import ctx_state

from clusterforge.engine.events import attach

attach(ctx_state.get())
