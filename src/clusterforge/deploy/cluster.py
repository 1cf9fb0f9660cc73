"""The deploy file pyinfra runs:  clusterforge apply INVENTORY  (or  pyinfra INVENTORY <this file>).

pyinfra runs this file once per host and orders operations by the lines they are called from: every operation is
called through the one line below, then through order.py's lines, one step a line, so the order is order.py's.
"""

from clusterforge.deploy.order import deploy

deploy()
