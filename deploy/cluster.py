"""The deploy from a clone:  pyinfra inventories/prod.py deploy/cluster.py

The same deploy as the installed package's (`clusterforge apply INVENTORY`): the steps and their order are in
src/clusterforge/deploy/order.py. pyinfra orders operations by the lines they are called from: every operation is
called through the one line below, then through order.py's lines, one step a line, so the order is order.py's.
"""

from clusterforge.deploy.order import deploy

deploy()
