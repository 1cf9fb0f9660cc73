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
    group_wait: int = Field(default=30, description="seconds Alertmanager waits before it first posts a group of "
                                                    "alerts (one alert name on one node or partition), gathering "
                                                    "what fires with it; 0 to 3600")
    group_interval: int = Field(default=300, description="seconds between two posts of one group once it changes "
                                                         "again (a new alert in it, one resolved); 1 to 86400")
    repeat_hours: int = Field(default=4, description="hours before a group still firing is posted again; 1 to 168")
