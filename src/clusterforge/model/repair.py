"""Automatic repair: which nodes the repair loop on the controller returns to service after the health check drained
them for a hardware fault, how (a GPU reset, a reboot through Slurm, a power cycle through the node's BMC), how
often, and how many at once (repair/, its plan rendered by render/repair.py)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from .base import Entry
from .vault import secret_path


class Repair(Entry):
    """Automatic repair of a profile's nodes: a node the health check drained for a hardware fault is reset,
    rebooted or power cycled back to service by the repair loop on the controller, within budgets; a node whose
    attempts run out is quarantined (drained until an admin lifts it)."""

    mode: Literal["off", "observe", "on"] = Field(
        default="off", description="'observe': the loop logs, counts and alerts what it would do and does nothing; "
                                   "'on': it acts; 'off': these nodes are never repaired")
    classes: tuple[Literal["reset", "reboot"], ...] = Field(
        default=("reset", "reboot"), description="the fault classes repaired automatically: 'reset' (a GPU the "
                                                 "health check resets, then a reboot), 'reboot' (a reboot through "
                                                 "Slurm); a fault of a class not listed waits for an admin")
    power_cycle: bool | None = Field(
        default=None, description="a node not back within its bound is power cycled through its BMC; None: where "
                                  "the node has one (Nodes(bmc=...)); True: every node of the profile must have one")
    attempts: int = Field(default=2, description="repairs of one node for one fault class within window; past them "
                                                 "the node is quarantined")
    window: int = Field(default=86400, description="seconds over which attempts are counted; at least the longest "
                                                   "action's bound")
    reset_timeout: int = Field(default=900, description="seconds a GPU reset may take (the health check does it at "
                                                        "its next run) before the next step; at least 60")
    reboot_timeout: int | None = Field(
        default=None, description="seconds a reboot through Slurm may take before the next step; None: the "
                                  "health check's reboot_timeout (ResumeTimeout) and 300 more; at least 60")
    power_cycle_timeout: int = Field(default=1800, description="seconds a power cycle may take before the node is "
                                                               "quarantined; at least 60")


class Breaker(Entry):
    """The repair loop's circuit breaker: where too many nodes fault at once, the cause is rarely the nodes (a
    driver, a switch, the power), so the loop starts no new action, the repairs under way finish, and it stays open
    until an admin closes it (``clusterforge repair INVENTORY --close-breaker``)."""

    faults: int = Field(default=3, description="more nodes than this faulting within window opens the breaker: no "
                                               "new repair starts, and an alert says so")
    window: int = Field(default=3600, description="seconds over which the faulting nodes are counted; at least 60")


class Bmc(Entry):
    """The baseboard management controllers of a range of nodes, through which the repair loop power cycles a node
    that does not come back: ``Nodes("gpu-[001-032]", bmc=Bmc(address="10.2.0.[1-32]", protocol="redfish"))``
    (Redfish over HTTPS through sushy, IPMI over LAN through ipmitool)."""

    address: str = Field(description="an address or a hostlist of as many addresses as the nodes' names, the n-th "
                                     "the n-th node's BMC")
    protocol: Literal["redfish", "ipmi"] = Field(description="how the loop talks to the BMC: 'redfish' (HTTPS) or "
                                                             "'ipmi' (IPMI over LAN, ipmitool)")
    port: int | None = Field(default=None, description="the BMC's port; None: the protocol's own (443 for Redfish, "
                                                       "623 for IPMI)")
    system: str = Field(default="", description="Redfish: the system's id under /redfish/v1/Systems; '': the BMC's "
                                                "only system")
    verify_tls: bool = Field(default=True, description="Redfish: the BMC's TLS certificate is checked, against "
                             "ca_file or else the controller's trust store; False: not checked, and the password "
                             "crosses a connection anyone between the controller and the BMC can read (for "
                             "self-signed BMCs, give their certificates as ca_file instead)")
    ca_file: str = Field(default="", description="Redfish: a PEM file of CA certificates on the controller, root's, "
                         "that the BMCs' certificates are checked against (a site's BMC CA, or the BMCs' own "
                         "self-signed certificates); '': the controller's trust store")
    cipher_suite: int | None = Field(default=None, description="IPMI: the cipher suite ipmitool asks for (-C), "
                                     "e.g. 3 or 17; None: ipmitool asks the BMC (a BMC that does not answer "
                                     "costs about 10 s a command)")
    credentials: str = Field(default="slurm/{cluster}/bmc", description="the Vault secret, under the KV mount, "
                             "holding the fields username and password the loop logs in to these BMCs with; {cluster} "
                             "is the cluster's name")

    @field_validator("credentials")
    @classmethod
    def _credentials(cls, path: str) -> str:
        return secret_path(path)
