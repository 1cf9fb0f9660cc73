"""Grafana's dashboard model, the few parts of it clusterforge writes: panels (time series, stats, a table, rows)
reading a Prometheus data source, their place on Grafana's grid, and the dashboard around them. Pure: what each
panel shows is decided in dashboards.py; this module only spells it the way Grafana reads it.

Everything here is plain data (dicts and lists) that json.dumps writes with sorted keys, as Grafana's own export
does, so the same inventory gives the same file byte for byte: no timestamps, no generated ids.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

# The dashboard schema of Grafana 13 (DASHBOARD_SCHEMA_VERSION). A Grafana that knows a newer one migrates the
# file on import; nothing here uses what migrations 42 and 43 change (overrides hiding a field, formatTime).
SCHEMA_VERSION = 42
# The data source every panel reads is a variable the importer picks, not a uid of one Grafana: the file imports
# anywhere, whatever the Prometheus data source there is called.
DATASOURCE_VARIABLE = "datasource"
DATASOURCE = {"type": "prometheus", "uid": f"${{{DATASOURCE_VARIABLE}}}"}
COLUMNS = 24  # Grafana's grid is 24 columns wide
ROW_HEIGHT = 1
# Grafana's own refresh choices; a refresh outside the picker's list is shown as none chosen.
REFRESH_CHOICES = (("5s", 5), ("10s", 10), ("30s", 30), ("1m", 60), ("5m", 300), ("15m", 900), ("30m", 1800),
                   ("1h", 3600))
# A constant line (the inventory's count) drawn dashed and red beside the measured series.
DECLARED_STYLE = [{"id": "custom.lineStyle", "value": {"dash": [10, 10], "fill": "dash"}},
                  {"id": "color", "value": {"fixedColor": "red", "mode": "fixed"}}]
Json = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Query:
    """One PromQL expression of a panel; ``legend``: Grafana's legend template ({{node}}), "" for the series name."""

    expr: str
    legend: str = ""


@dataclass(frozen=True, slots=True)
class Panel:
    """A panel before it is placed: its JSON less ``id`` and ``gridPos``, and its size on the grid."""

    body: Json
    width: int
    height: int


@dataclass(frozen=True, slots=True)
class Section:
    """A row of the dashboard: its title and its panels, laid out left to right and wrapped at the grid's edge."""

    title: str
    panels: tuple[Panel, ...] = field(default=())


def targets(queries: tuple[Query, ...], instant: bool = False, table: bool = False) -> list[Json]:
    """Grafana's targets, refIds A, B, ... in the order given."""
    found = []
    for index, query in enumerate(queries):
        target: Json = {"datasource": DATASOURCE, "expr": query.expr, "refId": chr(ord("A") + index),
                        "instant": instant, "range": not instant}
        if table:
            target["format"] = "table"
        if query.legend:
            target["legendFormat"] = query.legend
        found.append(target)
    return found


def thresholds(good_from: float | None = None, bad_from: float | None = None) -> Json:
    """Red below ``good_from`` and green from it on, or green below ``bad_from`` and red from it on; neither: green."""
    if good_from is not None:
        steps = [{"color": "red", "value": None}, {"color": "green", "value": good_from}]
    elif bad_from is not None:
        steps = [{"color": "green", "value": None}, {"color": "red", "value": bad_from}]
    else:
        steps = [{"color": "green", "value": None}]
    return {"mode": "absolute", "steps": steps}


def timeseries(title: str, description: str, queries: tuple[Query, ...], *, interval: str, unit: str = "short",
               stacked: bool = False, declared: str | None = None, bars: bool = False, width: int = 12,
               height: int = 8) -> Panel:
    """A graph over time. ``interval``: the least step Grafana asks Prometheus for (its ``Min interval``), which
    also sets $__rate_interval; ``declared``: the legend of a query that is a constant from the inventory, drawn
    dashed."""
    custom: Json = {"drawStyle": "bars" if bars else "line", "fillOpacity": 30 if stacked or bars else 0,
                    "stacking": {"group": "A", "mode": "normal" if stacked else "none"}}
    overrides = [{"matcher": {"id": "byName", "options": declared}, "properties": DECLARED_STYLE}] if declared else []
    body = {
        "datasource": DATASOURCE,
        "description": description,
        "fieldConfig": {"defaults": {"custom": custom, "min": 0, "unit": unit}, "overrides": overrides},
        "interval": interval,
        "options": {"legend": {"calcs": [], "displayMode": "list", "placement": "bottom", "showLegend": True},
                    "tooltip": {"mode": "multi", "sort": "desc"}},
        "targets": targets(queries),
        "title": title,
        "type": "timeseries",
    }
    return Panel(body, width, height)


def stat(title: str, description: str, query: Query, *, good_from: float | None = None,
         bad_from: float | None = None, mappings: list[Json] | None = None, width: int = 4, height: int = 8) -> Panel:
    """One current value, its background red or green by ``thresholds``; ``mappings`` name values (1: up)."""
    body = {
        "datasource": DATASOURCE,
        "description": description,
        "fieldConfig": {"defaults": {"mappings": mappings or [], "thresholds": thresholds(good_from, bad_from),
                                     "unit": "short"}, "overrides": []},
        "options": {"colorMode": "background", "graphMode": "none", "justifyMode": "auto", "orientation": "auto",
                    "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                    "textMode": "auto"},
        "targets": targets((query,), instant=True),
        "title": title,
        "type": "stat",
    }
    return Panel(body, width, height)


def up_down() -> list[Json]:
    """A daemon's 1 or 0 shown as the word, green or red."""
    return [{"options": {"0": {"color": "red", "index": 0, "text": "down"},
                         "1": {"color": "green", "index": 1, "text": "up"}}, "type": "value"}]


def table(title: str, description: str, query: Query, columns: tuple[str, ...], *, width: int = COLUMNS,
          height: int = 8) -> Panel:
    """The series of an instant query, one a line, showing only ``columns`` (labels), in that order."""
    hidden = {name: True for name in ("Time", "Value", "__name__", "instance", "job")}
    body = {
        "datasource": DATASOURCE,
        "description": description,
        "fieldConfig": {"defaults": {}, "overrides": []},
        "options": {"showHeader": True},
        "targets": targets((query,), instant=True, table=True),
        "title": title,
        "transformations": [{"id": "organize", "options": {
            "excludeByName": hidden, "indexByName": {name: i for i, name in enumerate(columns)},
            "renameByName": {}}}],
        "type": "table",
    }
    return Panel(body, width, height)


def layout(sections: tuple[Section, ...]) -> list[Json]:
    """Every panel placed: each section a row header across the grid, its panels after it left to right, a new
    line where the next would cross the grid's edge. Ids count up from 1 in that order."""
    placed: list[Json] = []
    y = 0
    for section in sections:
        placed.append({"collapsed": False, "gridPos": {"h": ROW_HEIGHT, "w": COLUMNS, "x": 0, "y": y},
                       "id": len(placed) + 1, "panels": [], "title": section.title, "type": "row"})
        y += ROW_HEIGHT
        x = line_height = 0
        for panel in section.panels:
            if x + panel.width > COLUMNS:
                y, x, line_height = y + line_height, 0, 0
            placed.append({**panel.body, "gridPos": {"h": panel.height, "w": panel.width, "x": x, "y": y},
                           "id": len(placed) + 1})
            x += panel.width
            line_height = max(line_height, panel.height)
        y += line_height
    return placed


def refresh(scrape_seconds: int) -> str:
    """The dashboard's refresh: Grafana's first choice that is not shorter than a scrape (sooner redraws the same
    samples), the longest where every choice is."""
    return next((name for name, seconds in REFRESH_CHOICES if seconds >= scrape_seconds), REFRESH_CHOICES[-1][0])


def text(dashboard: Json) -> str:
    """The file: keys sorted, two-space indent, one newline at the end."""
    return json.dumps(dashboard, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
