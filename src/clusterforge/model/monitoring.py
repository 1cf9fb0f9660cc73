"""Monitoring: Prometheus and Alertmanager on one host, node exporter on every host, a Slurm exporter on the
controller, and alert rules whose expectations come from the inventory (the GPUs of each profile, the nodes of
each partition)."""

from __future__ import annotations

from pydantic import Field

from .base import Entry
from .hosts import Host


class Monitoring(Entry):
    """Where the cluster's metrics are kept and its alerts sent from. Off unless the inventory has one."""

    host: Host = Field(description="runs Prometheus and Alertmanager: its own host, or a service host of the "
                                   "cluster named as it is there (the database host, say)")
    scrape_interval: int = Field(default=30, description="seconds between two scrapes of every target; 5 to 300")
    retention_days: int = Field(default=30, description="days Prometheus keeps its samples; at least 1")
    webhook: str | None = Field(default=None, description="where Alertmanager posts every alert (its webhook "
                                                          "receiver: an http:// or https:// URL); None: alerts are "
                                                          "only shown by Prometheus and Alertmanager")
    pending_minutes: int = Field(default=30, description="minutes jobs may wait for resources while GPUs of their "
                                                         "partition sit idle before that is an alert; at least 1")
