"""The fabric from the fabric: read `ibnetdiscover` output and make the inventory's ``Fabric`` from it.

Pure, no pyinfra: ``parse`` reads the dump, ``hosts`` names each HCA's host, ``apart`` tells the hosts that are no
compute node, ``tiers`` finds the compute fabric and its leaf/spine/core tiers from the graph, ``rails`` its rails,
``build`` turns that into a ``Fabric`` and ``compare`` holds it against an inventory's, ``write`` prints it as
Python and ``report`` says what was found. The CLI (``clusterforge fabric import``) only strings them together.
"""

from .build import Imported, import_fabric
from .hosts import read_guid_file
from .parse import DumpError, parse_dump
from .write import fabric_expression, fabric_module

__all__ = ["DumpError", "Imported", "fabric_expression", "fabric_module", "import_fabric", "parse_dump",
           "read_guid_file"]
